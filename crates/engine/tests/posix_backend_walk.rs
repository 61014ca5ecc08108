//! The POSIX backend on the paths of kernels before 5.6 (no `openat2`,
//! `fchmodat2` or `setxattrat`; or a seccomp filter refusing them), forced
//! with `IOSCALE_NO_OPENAT2=1` (read once per process: hence a test binary
//! of its own): the directory walk refuses a link at any component, a
//! file, a FIFO or `..`, and nothing is made through a link; the xattr
//! calls reach the entry through the held directory, never through a
//! directory swapped above it.

use std::fs;

use engine::backend::posix::Posix;
use engine::backend::{Backend, Kind};

#[test]
fn the_walk_refuses_links_and_dotdot_at_every_component() {
    std::env::set_var("IOSCALE_NO_OPENAT2", "1");
    let tmp = tempfile::Builder::new()
        .prefix("ioscale-posix-walk-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let (held, victim) = (tmp.path().join("held"), tmp.path().join("victim"));
    fs::create_dir_all(held.join("thr.000/h0")).unwrap();
    fs::create_dir(&victim).unwrap();
    fs::write(victim.join("keep"), b"foreign").unwrap();
    std::os::unix::fs::symlink(&victim, held.join("thr.001")).unwrap();
    std::os::unix::fs::symlink(&victim, held.join("thr.000/h1")).unwrap();
    fs::write(held.join("thr.002"), b"x").unwrap();
    let at = Posix::at_path(&held).unwrap();
    for rel in [
        &b"thr.001\0"[..],
        b"thr.001/h0\0",
        b"thr.000/h1\0",
        b"thr.000/h1/h0\0",
        b"thr.002\0",
        b"..\0",
        b"thr.000/..\0",
        b"thr.000/../../victim\0",
    ] {
        assert!(
            Posix::open_beneath(&at, rel).is_err(),
            "{}: opened",
            String::from_utf8_lossy(rel)
        );
    }
    for rel in [
        &b"thr.001/new\0"[..],
        b"thr.000/h1/new\0",
        b"../victim/new\0",
    ] {
        assert!(Posix::mkdir_beneath(&at, rel, 0o755).is_err());
    }
    let names: Vec<_> = fs::read_dir(&victim).unwrap().collect();
    assert_eq!(names.len(), 1, "something was made in the victim");
    Posix::open_beneath(&at, b"thr.000/h0\0").unwrap();
    Posix::mkdir_beneath(&at, b"thr.000/h0/h2\0", 0o755).unwrap();
    assert!(held.join("thr.000/h0/h2").is_dir());
}

#[test]
fn the_old_xattr_calls_go_through_the_held_directory() {
    std::env::set_var("IOSCALE_NO_OPENAT2", "1");
    let tmp = tempfile::Builder::new()
        .prefix("ioscale-posix-old-xattr-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let (held, victim) = (tmp.path().join("held"), tmp.path().join("victim"));
    fs::create_dir_all(held.join("thr.000")).unwrap();
    fs::create_dir(&victim).unwrap();
    fs::write(held.join("thr.000/f0.0"), b"ours").unwrap();
    fs::write(victim.join("f0.0"), b"foreign").unwrap();
    let at = Posix::at_path(&held).unwrap();
    let thr = Posix::open_beneath(&at, b"thr.000\0").unwrap();
    // The thread directory is swapped for a link to the victim's after it
    // was opened: the held descriptor still names ioscale's own.
    fs::rename(held.join("thr.000"), held.join("moved")).unwrap();
    std::os::unix::fs::symlink(&victim, held.join("thr.000")).unwrap();
    let key = c"user.ioscale";
    match Posix::set_xattr(&thr, b"f0.0\0", key, &[9u8; 32]) {
        Ok(()) => {
            let mut out = [0u8; 64];
            assert_eq!(
                Posix::get_xattr(&thr, b"f0.0\0", key, &mut out).unwrap(),
                32
            );
            let theirs = Posix::at_path(&victim).unwrap();
            assert!(Posix::get_xattr(&theirs, b"f0.0\0", key, &mut out).is_err());
        }
        Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP)),
    }
    // chmod by fchmodat (which follows a link at the name: the kernel has
    // no other way) still acts in the held directory.
    Posix::chmod(&thr, b"f0.0\0", 0o600).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&held.join("moved/f0.0")), 0o600);
    assert_ne!(mode(&victim.join("f0.0")), 0o600);
    assert_eq!(Posix::lstat(&at, b"thr.000\0").unwrap(), Kind::Symlink);
}
