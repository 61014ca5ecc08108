//! The binary itself: its command line refuses bad input by naming the
//! flag, and a real mount passes ordinary file operations through to
//! SOURCE and goes away on SIGTERM and on `fusermount3 -u`. (ioscale's own
//! tests in crates/ioscale/tests/testfs_*.rs drive it with workloads.)

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ioscale-testfs");

fn mounted(mp: &Path) -> bool {
    let want = mp.canonicalize().unwrap();
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap();
    info.lines()
        .any(|l| l.split(' ').nth(4) == Some(want.to_str().unwrap()))
}

fn usable() -> bool {
    // SAFETY: geteuid has no failure mode.
    let ok = Path::new("/dev/fuse").exists() && unsafe { libc::geteuid() } == 0;
    if !ok {
        eprintln!("note: skipping: needs /dev/fuse and root");
    }
    ok
}

fn start(src: &Path, mp: &Path, extra: &[&str]) -> Child {
    let mut c = Command::new(BIN)
        .args(extra)
        .arg(src)
        .arg(mp)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !mounted(mp) {
        if let Some(st) = c.try_wait().unwrap() {
            let out = c.wait_with_output().unwrap();
            panic!(
                "exited {st} before mounting: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "no mount in 20 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    c
}

fn wait_exit(mut c: Child) -> (bool, String) {
    let t0 = Instant::now();
    while c.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(10) {
            let _ = c.kill();
            panic!("did not exit within 10 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = c.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn help_lists_every_flag_with_examples() {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert!(out.status.success());
    let h = String::from_utf8_lossy(&out.stdout);
    for f in [
        "--delay",
        "--delay-jitter",
        "--seed",
        "--meta-delay",
        "--fsync-delay",
        "--bw",
        "--eio-after-bytes",
        "--eio-after-ops",
        "--enospc-after-bytes",
        "--short-writes",
        "--short-reads",
        "--fsync-fail",
        "--faults-path-substr",
        "--threads",
        "--direct-io",
        "--burst-credit",
        "--baseline",
        "--step-at",
        "--step-delay",
        "--slots",
        "--service",
        "--interval-log",
        "Examples:",
    ] {
        assert!(h.contains(f), "--help lacks {f}");
    }
}

#[test]
fn bad_flags_name_the_flag() {
    for (args, flag) in [
        (&["--delay", "5", "a", "b"][..], "--delay"),
        (&["--delay-jitter", "x", "a", "b"][..], "--delay-jitter"),
        (&["--bw", "0", "a", "b"][..], "--bw"),
        (&["--threads", "0", "a", "b"][..], "--threads"),
        (&["--burst-credit", "1m", "a", "b"][..], "--baseline"),
        (&["--baseline", "1m", "a", "b"][..], "--burst-credit"),
        (&["--step-at", "1s", "a", "b"][..], "--step-delay"),
        (&["--slots", "4", "a", "b"][..], "--service"),
        (
            &["--slots", "0", "--service", "1ms", "a", "b"][..],
            "--slots",
        ),
        (
            &["--slots", "32", "--service", "1ms", "a", "b"][..],
            "--threads",
        ),
        (
            &["--slots", "2", "--service", "0", "a", "b"][..],
            "--service",
        ),
        (&["--interval-log", "0", "a", "b"][..], "--interval-log"),
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(flag), "{args:?}: {e}");
    }
    let d = tempfile::tempdir().unwrap();
    let inner = d.path().join("m");
    fs::create_dir(&inner).unwrap();
    let out = Command::new(BIN)
        .arg(d.path())
        .arg(&inner)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("inside SOURCE"));
}

#[test]
fn passes_operations_through_and_stops_on_sigterm() {
    if !usable() {
        return;
    }
    let src = tempfile::tempdir().unwrap();
    let mp = tempfile::tempdir().unwrap();
    let c = start(src.path(), mp.path(), &["--meta-delay", "1ms"]);
    let m = mp.path();
    fs::write(m.join("a"), b"hello").unwrap();
    assert_eq!(fs::read(src.path().join("a")).unwrap(), b"hello");
    fs::create_dir(m.join("d")).unwrap();
    fs::rename(m.join("a"), m.join("d/b")).unwrap();
    assert_eq!(fs::read(m.join("d/b")).unwrap(), b"hello");
    assert!(src.path().join("d/b").is_file());
    std::os::unix::fs::symlink("d/b", m.join("l")).unwrap();
    assert_eq!(fs::read_link(m.join("l")).unwrap(), Path::new("d/b"));
    assert_eq!(fs::read(m.join("l")).unwrap(), b"hello");
    fs::set_permissions(m.join("d/b"), fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(
        fs::metadata(src.path().join("d/b"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    let f = fs::OpenOptions::new()
        .write(true)
        .open(m.join("d/b"))
        .unwrap();
    f.set_len(2).unwrap();
    f.sync_all().unwrap();
    drop(f);
    assert_eq!(fs::read(m.join("d/b")).unwrap(), b"he");
    let mut names: Vec<_> = fs::read_dir(m)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["d", "l"]);
    fs::remove_file(m.join("l")).unwrap();
    fs::remove_file(m.join("d/b")).unwrap();
    fs::remove_dir(m.join("d")).unwrap();
    assert_eq!(fs::read_dir(src.path()).unwrap().count(), 0);

    // SAFETY: signalling our own child.
    unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
    let (ok, log) = wait_exit(c);
    assert!(ok, "{log}");
    assert!(log.contains("unmounted"), "{log}");
    assert!(!mounted(mp.path()));
}

#[test]
fn fusermount3_unmount_ends_the_daemon() {
    if !usable() || !Path::new("/usr/bin/fusermount3").exists() {
        eprintln!("note: skipping: needs fusermount3 (apt-get install fuse3)");
        return;
    }
    let src = tempfile::tempdir().unwrap();
    let mp = tempfile::tempdir().unwrap();
    let c = start(src.path(), mp.path(), &[]);
    let st = Command::new("fusermount3")
        .arg("-u")
        .arg(mp.path())
        .status()
        .unwrap();
    assert!(st.success());
    let (ok, log) = wait_exit(c);
    assert!(ok, "{log}");
    assert!(!mounted(mp.path()));
}

fn c_path(p: &Path) -> std::ffi::CString {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap()
}

fn errno_of(r: libc::c_int) -> Option<i32> {
    (r != 0).then(|| std::io::Error::last_os_error().raw_os_error().unwrap())
}

/// mknod, extended attributes and the errors of mkdir, unlink and rmdir
/// reach SOURCE and come back as the kernel's.
#[test]
fn mknod_xattrs_and_errors_pass_through() {
    if !usable() {
        return;
    }
    let src = tempfile::tempdir().unwrap();
    let mp = tempfile::tempdir().unwrap();
    let c = start(src.path(), mp.path(), &[]);
    let m = mp.path();
    let fifo = c_path(&m.join("p"));
    // SAFETY: valid NUL-terminated path.
    let r = unsafe { libc::mknod(fifo.as_ptr(), libc::S_IFIFO | 0o640, 0) };
    assert_eq!(errno_of(r), None);
    let meta = fs::symlink_metadata(src.path().join("p")).unwrap();
    assert_eq!(meta.mode() & libc::S_IFMT, libc::S_IFIFO);
    assert_eq!(meta.mode() & 0o777, 0o640 & !umask());
    // SAFETY: as above.
    let r = unsafe { libc::mknod(fifo.as_ptr(), libc::S_IFIFO | 0o600, 0) };
    assert_eq!(errno_of(r), Some(libc::EEXIST));

    fs::create_dir(m.join("d")).unwrap();
    let e = fs::create_dir(m.join("d")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EEXIST));
    fs::write(m.join("d/f"), b"x").unwrap();
    let e = fs::remove_dir(m.join("d")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOTEMPTY));
    let e = fs::remove_file(m.join("d/missing")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT));

    let f = c_path(&m.join("d/f"));
    let name = c"user.ioscale";
    // SAFETY: valid NUL-terminated path and name; the value is 3 bytes.
    let r = unsafe { libc::setxattr(f.as_ptr(), name.as_ptr(), b"abc".as_ptr().cast(), 3, 0) };
    match errno_of(r) {
        // SOURCE's file system keeps no user attributes: nothing to compare.
        Some(libc::ENOTSUP) => eprintln!("note: SOURCE has no user xattrs"),
        e => {
            assert_eq!(e, None);
            let mut buf = [0u8; 8];
            // SAFETY: `buf` has 8 writable bytes.
            let n =
                unsafe { libc::getxattr(f.as_ptr(), name.as_ptr(), buf.as_mut_ptr().cast(), 8) };
            assert_eq!(&buf[..n as usize], b"abc");
            // SAFETY: valid path and name.
            let r = unsafe { libc::removexattr(f.as_ptr(), name.as_ptr()) };
            assert_eq!(errno_of(r), None);
            // SAFETY: as above.
            let r = unsafe { libc::removexattr(f.as_ptr(), name.as_ptr()) };
            assert_eq!(errno_of(r), Some(libc::ENODATA));
        }
    }

    // SAFETY: signalling our own child.
    unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
    let (ok, log) = wait_exit(c);
    assert!(ok, "{log}");
}

fn umask() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line["Umask:".len()..].trim(), 8).unwrap()
}
