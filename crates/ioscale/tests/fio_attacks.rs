//! `ioscale fio` against hostile names and failures: what a shared job
//! directory can hold under a job's file name (a device node, a link to a
//! loop device, a dangling link, a FIFO, a hard link), outputs that never
//! take the results (a FIFO nobody reads, `/dev/full`), a file system that
//! fills up or fails while the files are laid out, a directory swapped
//! between two jobs, and numbers at the edges of 64 bits. Every device,
//! foreign file and link is read back afterwards; every case must end with
//! its exit code (2 before anything is written, 1 with the results so far,
//! 130 after one signal) and never hang.

mod common;
#[path = "support/rel.rs"]
mod rel;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::fuse::TestFs;
use common::*;
use rel::*;

/// `ioscale fio ARGS` in `dir`, killed (and the test failed) after 120 s:
/// a case that would hang fails instead.
fn fio(args: &[&str], dir: &Path) -> Output {
    let mut child = Command::new(ioscale_path())
        .arg("fio")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("ioscale fio {args:?} still running after 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_no_panic(&out);
    out
}

/// `ioscale fio ARGS` in `dir`, both outputs captured, for a test that
/// signals it.
fn spawn_fio(args: &[&str], dir: &Path) -> std::process::Child {
    Command::new(ioscale_path())
        .arg("fio")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The names in `dir`, sorted, without reading any entry (a FIFO or a
/// device among them must not be opened).
fn ls(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(s(p)).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Whether the process waits in a sleep with no other thread: after its
/// runs, in the output routine's wait for a FIFO's reader (or in a
/// `startdelay`).
fn sleeping_alone(pid: u32) -> bool {
    let w = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
    tasks == 1 && ["hrtimer_nanosleep", "do_nanosleep"].contains(&w.as_str())
}

/// A loop device over an image of known bytes, detached on drop.
struct LoopDev {
    dev: PathBuf,
    _img: tempfile::TempDir,
}

impl LoopDev {
    const BYTES: usize = 1 << 20;

    fn new() -> Option<LoopDev> {
        let img = scratch();
        let f = img.path().join("dev.img");
        std::fs::write(&f, vec![0x3cu8; Self::BYTES]).unwrap();
        let out = Command::new("losetup")
            .args(["--find", "--show", s(&f)])
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!("note: no loop device here ({}); skipping", stderr(&out));
            return None;
        }
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        Some(LoopDev { dev, _img: img })
    }

    /// The device's bytes, read through the device itself.
    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.dev).unwrap()
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

#[test]
fn a_device_or_a_link_to_a_loop_device_at_a_jobs_file_is_never_written() {
    // Before, a read job laid out its file through the planted name with
    // open(O_WRONLY|O_CREAT) and wrote SIZE bytes of 0xa5 into the device,
    // then refused it as "not a regular file".
    let Some(lo) = LoopDev::new() else { return };
    let before = lo.bytes();
    assert!(before.iter().all(|&b| b == 0x3c));
    let (maj, min) = {
        let r = std::fs::metadata(&lo.dev).unwrap().rdev();
        (libc::major(r), libc::minor(r))
    };
    let t = scratch();
    let d = t.path();
    for (case, rw, plant) in [
        ("link, read job", "read", "link"),
        ("link, write job", "write", "link"),
        ("link, mixed job", "randrw", "link"),
        ("device node, read job", "read", "node"),
        ("device node, write job", "write", "node"),
    ] {
        let f = d.join("j.0.0");
        if plant == "link" {
            std::os::unix::fs::symlink(&lo.dev, &f).unwrap();
        } else {
            let st = Command::new("mknod")
                .args([s(&f), "b", &maj.to_string(), &min.to_string()])
                .status()
                .unwrap();
            assert!(st.success(), "mknod");
        }
        let rw = format!("--rw={rw}");
        let dir = format!("--directory={}", s(d));
        let out = fio(&["--name=j", &rw, "--bs=4k", "--size=64k", &dir], d);
        assert_code(&out, 2);
        let err = stderr(&out);
        let kind = if plant == "link" {
            "symbolic link"
        } else {
            "block device"
        };
        assert!(
            err.contains("job 'j'") && err.contains(s(&f)) && err.contains(kind),
            "{case}: {err}"
        );
        assert!(stdout(&out).is_empty(), "{case}: a report was printed");
        assert!(lo.bytes() == before, "{case}: the device was written");
        assert_eq!(ls(d), ["j.0.0"], "{case}");
        std::fs::remove_file(&f).unwrap();
    }
    // filename= naming a link to the device, in the job's directory.
    let link = d.join("data");
    std::os::unix::fs::symlink(&lo.dev, &link).unwrap();
    let dir = format!("--directory={}", s(d));
    let out = fio(
        &[
            "--name=j",
            "--rw=read",
            "--size=64k",
            "--filename=data",
            &dir,
        ],
        d,
    );
    assert_code(&out, 2);
    assert!(lo.bytes() == before, "filename=: the device was written");
}

#[test]
fn a_dangling_link_with_unlink_creates_nothing_outside_the_directory() {
    // Before, a write through the link made a 64 KiB file outside the
    // directory, and unlink=1 then removed the user's link; exit 0.
    let t = scratch();
    let jobs = t.path().join("jobs");
    let outside = t.path().join("outside");
    std::fs::create_dir_all(&jobs).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let target = outside.join("victim");
    let link = jobs.join("w.0.0");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for rw in ["write", "read", "randwrite"] {
        let rw = format!("--rw={rw}");
        let dir = format!("--directory={}", s(&jobs));
        let out = fio(
            &["--name=w", &rw, "--bs=4k", "--size=64k", "--unlink=1", &dir],
            t.path(),
        );
        assert_code(&out, 2);
        assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
        assert!(ls(&outside).is_empty(), "{rw}: made {:?}", ls(&outside));
        assert_eq!(std::fs::read_link(&link).unwrap(), target, "{rw}");
        assert_eq!(ls(&jobs), ["w.0.0"]);
    }
}

#[test]
fn a_fifo_a_hard_link_or_a_name_outside_the_directory_is_refused_at_once() {
    // Before, a FIFO at the job's file name blocked in open through
    // SIGTERM.
    let t = scratch();
    let d = t.path();
    let dir = format!("--directory={}", s(d));
    mkfifo(&d.join("r.0.0"));
    for rw in ["read", "write"] {
        let rw = format!("--rw={rw}");
        let out = fio(&["--name=r", &rw, "--size=64k", &dir], d);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(err.contains("FIFO") && err.contains("job 'r'"), "{err}");
    }
    // A hard link to a file elsewhere: writing it writes that file.
    let mine = d.join("mine");
    std::fs::write(&mine, vec![1u8; 64 << 10]).unwrap();
    std::fs::hard_link(&mine, d.join("h.0.0")).unwrap();
    let out = fio(&["--name=h", "--rw=write", "--size=64k", &dir], d);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("hard links"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&mine).unwrap(), vec![1u8; 64 << 10]);
    // Names that leave directory=.
    for (arg, what) in [
        ("--filename=../out", "filename=../out"),
        ("--filename=sub/x", "filename=sub/x"),
    ] {
        let out = fio(&["--name=n", "--rw=write", "--size=64k", arg, &dir], d);
        assert_code(&out, 2);
        assert!(stderr(&out).contains(what), "{}", stderr(&out));
    }
    let out = fio(&["--name=../n", "--rw=write", "--size=64k", &dir], d);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("'../n'"), "{}", stderr(&out));
    assert_eq!(ls(d), ["h.0.0", "mine", "r.0.0"]);
    assert!(!t.path().parent().unwrap().join("out").exists());
}

#[test]
fn a_fifo_at_a_log_name_or_at_output_ends_at_one_signal() {
    // Before, a FIFO at a log name ignored the first signal, and --output
    // to a FIFO exited 2 on SIGINT (others exit 130).
    let t = scratch();
    let d = t.path();
    let dir = format!("--directory={}", s(d));
    let log = d.join("lg_bw.1.log");
    mkfifo(&log);
    let lg = format!("--write_bw_log={}", s(&d.join("lg")));
    let mut child = spawn_fio(
        &[
            "--name=j",
            "--rw=write",
            "--bs=4k",
            "--size=64k",
            "--log_avg_msec=100",
            &lg,
            &dir,
        ],
        d,
    );
    let pid = child.id();
    let data = d.join("j.0.0");
    wait_until(&mut child, "the wait for the log's reader", || {
        data.exists() && sleeping_alone(pid)
    });
    signal(&child, libc::SIGINT);
    let out = finish(child, Duration::from_secs(60));
    assert_code(&out, 130);
    let err = stderr(&out);
    assert!(
        err.contains("write_bw_log") && err.contains(s(&log)),
        "{err}"
    );
    assert!(
        stdout(&out).contains("Run status group 0"),
        "{}",
        stdout(&out)
    );
    // --output to a FIFO: the report goes to standard output instead.
    let fifo = d.join("out.fifo");
    mkfifo(&fifo);
    let o = format!("--output={}", s(&fifo));
    let mut child = spawn_fio(
        &[
            "--name=k",
            "--rw=write",
            "--bs=4k",
            "--size=64k",
            "--unlink=1",
            &o,
            &dir,
        ],
        d,
    );
    let pid = child.id();
    let data = d.join("k.0.0");
    wait_until(&mut child, "the wait for the output's reader", || {
        !data.exists() && sleeping_alone(pid)
    });
    signal(&child, libc::SIGTERM);
    let out = finish(child, Duration::from_secs(60));
    assert_code(&out, 130);
    assert!(stderr(&out).contains("--output"), "{}", stderr(&out));
    assert!(stdout(&out).contains("k: (groupid=0"), "{}", stdout(&out));
}

#[test]
fn an_output_that_cannot_be_written_exits_1_with_the_report_kept() {
    // Before, --output=/dev/full exited 2 (other commands exit 1).
    let t = scratch();
    let d = t.path();
    let dir = format!("--directory={}", s(d));
    let base = [
        "--name=j",
        "--rw=write",
        "--bs=4k",
        "--size=64k",
        "--unlink=1",
    ];
    let mut args = base.to_vec();
    args.extend(["--output=/dev/full", dir.as_str()]);
    let out = fio(&args, d);
    assert_code(&out, 1);
    assert!(
        stderr(&out).contains("--output /dev/full"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("j: (groupid=0"), "{}", stdout(&out));
    let mut args = base.to_vec();
    args.extend(["--ioscale-json=/dev/full", dir.as_str()]);
    let out = fio(&args, d);
    assert_code(&out, 1);
    assert!(
        stderr(&out).contains("--ioscale-json /dev/full"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("j: (groupid=0"));
    // A log on a full file system: the other outputs are still written.
    let Some(full) = tmpfs("size=64k") else {
        return;
    };
    let filler = std::fs::File::create(full.path().join("filler")).unwrap();
    let chunk = vec![7u8; 4096];
    while std::io::Write::write_all(&mut &filler, &chunk).is_ok() {}
    let mut args = base.to_vec();
    let json = d.join("r.json");
    let j = format!("--ioscale-json={}", s(&json));
    let lg = format!("--write_iops_log={}", s(&full.path().join("lg")));
    args.extend([lg.as_str(), j.as_str(), dir.as_str()]);
    let out = fio(&args, d);
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("write_iops_log") && err.contains("lg_iops.1.log"),
        "{err}"
    );
    assert!(json.exists(), "{err}");
    assert_eq!(ls(d), ["r.json"]);
    assert_eq!(ls(full.path()), ["filler"]);
}

#[test]
fn enospc_while_laying_out_exits_1_with_the_results_so_far_and_unlinks() {
    // Before: exit 2, no results, and the files stayed (the file system
    // left full) despite unlink=1.
    let Some(m) = tmpfs("size=1m") else { return };
    let d = m.path();
    let text = format!(
        "[global]\ndirectory={}\nbs=4k\nunlink=1\n[a]\nrw=write\nsize=256k\n\
         [b]\nstonewall\nrw=read\nsize=4m\n",
        s(d)
    );
    let jobs = scratch();
    let job = jobs.path().join("enospc.fio");
    std::fs::write(&job, text).unwrap();
    let out = fio(&[s(&job)], jobs.path());
    assert_code(&out, 1);
    let (o, e) = (stdout(&out), stderr(&out));
    assert!(o.contains("a: (groupid=0") && o.contains("WRITE:"), "{o}");
    assert!(e.contains("job 'b'") && e.contains("No space left"), "{e}");
    assert!(ls(d).is_empty(), "left {:?}", ls(d));
    // Without unlink=1 a's file stays, and the part of b's laid out is
    // removed (this run made it, and it holds nothing).
    let text = std::fs::read_to_string(&job)
        .unwrap()
        .replace("unlink=1\n", "");
    std::fs::write(&job, text).unwrap();
    let out = fio(&["--output-format=json", s(&job)], jobs.path());
    assert_code(&out, 1);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["jobs"][0]["jobname"], "a");
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 256 << 10);
    assert_eq!(ls(d), ["a.0.0"]);
}

#[test]
fn eio_while_laying_out_exits_1_with_the_results_so_far_and_unlinks() {
    let Some(fs) = TestFs::mount(&["--eio-after-bytes", "128k", "--faults-path-substr", "rd."])
    else {
        return;
    };
    let dir = format!("--directory={}", s(fs.path()));
    let out = fio(
        &[
            "--name=w",
            "--rw=write",
            "--bs=4k",
            "--size=64k",
            "--unlink=1",
            &dir,
            "--name=rd",
            "--stonewall",
            "--rw=read",
            "--bs=4k",
            "--size=1m",
            "--unlink=1",
            &dir,
        ],
        fs.path(),
    );
    assert_code(&out, 1);
    let (o, e) = (stdout(&out), stderr(&out));
    assert!(o.contains("w: (groupid=0") && o.contains("WRITE:"), "{o}");
    assert!(
        e.contains("job 'rd'") && e.contains("Input/output error"),
        "{e}"
    );
    assert!(ls(fs.source()).is_empty(), "left {:?}", ls(fs.source()));
}

#[test]
fn a_directory_swapped_between_jobs_stops_with_results_and_touches_nothing_foreign() {
    // Before: exit 2 and no results printed.
    let t = scratch();
    let base = t.path().join("base");
    let jobs = base.join("jobs");
    let victim = t.path().join("victim");
    std::fs::create_dir_all(&jobs).unwrap();
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("two.0.0"), b"a victim's file").unwrap();
    std::fs::write(victim.join("other"), b"another").unwrap();
    let vbefore = snapshot(&victim);
    let dir = format!("--directory={}", s(&jobs));
    let mut child = spawn_fio(
        &[
            "--name=one",
            "--rw=write",
            "--bs=4k",
            "--size=64k",
            &dir,
            "--name=two",
            "--stonewall",
            "--startdelay=3",
            "--rw=randrw",
            "--bs=4k",
            "--size=64k",
            "--unlink=1",
            &dir,
        ],
        t.path(),
    );
    let pid = child.id();
    // Job one has run (its file laid out, no worker left) and two waits.
    wait_until(&mut child, "job two's start delay", || {
        jobs.join("one.0.0").exists() && sleeping_alone(pid) && {
            std::thread::sleep(Duration::from_millis(200));
            sleeping_alone(pid)
        }
    });
    std::fs::rename(&jobs, base.join("jobs.old")).unwrap();
    std::os::unix::fs::symlink(&victim, &jobs).unwrap();
    let out = finish(child, Duration::from_secs(120));
    assert_code(&out, 1);
    let (o, e) = (stdout(&out), stderr(&out));
    assert!(o.contains("one: (groupid=0") && o.contains("WRITE:"), "{o}");
    assert!(e.contains("replaced") && e.contains(s(&jobs)), "{e}");
    assert_intact(&victim, &vbefore, "swapped directory");
    assert_eq!(ls(&base.join("jobs.old")), ["one.0.0"]);
}

#[test]
fn offsets_and_sizes_at_the_edges_are_refused_naming_the_option() {
    // Before, offset near 2^64 overflowed: a panic in a debug build (this
    // test's), a wrapped offset in a release build.
    let t = scratch();
    let d = t.path();
    let dir = format!("--directory={}", s(d));
    let max = u64::MAX.to_string();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![format!("--offset={max}")], "offset="),
        (vec!["--offset=18446744073709551000".into()], "offset="),
        (vec![format!("--offset={}", i64::MAX)], "offset="),
        (
            vec![format!("--offset_increment={max}"), "--numjobs=2".into()],
            "offset_increment=",
        ),
        (vec![format!("--size={max}")], "size="),
        (vec![format!("--filesize={max}")], "filesize="),
        (vec!["--size=0".into()], "size="),
        (vec!["--bs=0".into()], "bs=0"),
        (vec![format!("--bs={max}")], "bs="),
    ];
    for (extra, names_it) in cases {
        let mut args = vec!["--name=e", "--rw=read", "--bs=4k", "--size=64k"];
        args.extend(extra.iter().map(String::as_str));
        args.push(&dir);
        let out = fio(&args, d);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(err.contains(names_it), "{extra:?}: {err}");
        assert!(ls(d).is_empty(), "{extra:?}: made {:?}", ls(d));
    }
}

#[test]
fn direct_io_probes_without_a_name_in_the_jobs_directory() {
    // Before, a 256 KiB `.ioscale-probe-PID` was written into the job's
    // directory. On a FUSE file system (no O_TMPFILE) the probe reads the
    // job's own file: the daemon sees one create, the job file's.
    let Some(fs) = TestFs::mount(&[]) else { return };
    let dir = format!("--directory={}", s(fs.path()));
    let out = fio(
        &[
            "--name=dr",
            "--rw=read",
            "--bs=64k",
            "--size=256k",
            "--direct=1",
            "--unlink=1",
            &dir,
        ],
        fs.path(),
    );
    assert_code(&out, 0);
    let (_, log) = fs.stop();
    let creates = log
        .split("FUSE_CREATE ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse::<u32>().ok());
    assert_eq!(creates, Some(1), "{log}");
}

#[test]
fn a_signal_while_laying_out_ends_with_130_and_unlinks() {
    // Before, the layout wrote on through SIGINT (no check between its
    // writes) and unlink=1 never ran.
    let Some(fs) = TestFs::mount(&["--bw", "8m"]) else {
        return;
    };
    let dir = format!("--directory={}", s(fs.path()));
    let mut child = spawn_fio(
        &[
            "--name=big",
            "--rw=read",
            "--bs=64k",
            "--size=1g",
            "--unlink=1",
            &dir,
        ],
        fs.path(),
    );
    let data = fs.source().join("big.0.0");
    wait_until(&mut child, "the layout", || {
        std::fs::metadata(&data)
            .map(|m| m.blocks() * 512 >= 2 << 20)
            .unwrap_or(false)
    });
    signal(&child, libc::SIGINT);
    let out = finish(child, Duration::from_secs(60));
    assert_code(&out, 130);
    assert!(ls(fs.source()).is_empty(), "left {:?}", ls(fs.source()));
}

/// A symbolic link planted at a log's (predictable) name, to a foreign
/// file or dangling, is refused before the run (exit 2, nothing laid out)
/// and never written through: before, the foreign file was replaced with
/// the log.
#[test]
fn a_link_at_a_log_name_is_refused_before_the_run_and_never_followed() {
    for (log, name) in [
        ("--write_bw_log=lg", "lg_bw.1.log"),
        ("--write_iops_log=lg", "lg_iops.1.log"),
        ("--write_lat_log=lg", "lg_clat.1.log"),
    ] {
        for dangling in [false, true] {
            let t = scratch();
            let d = t.path();
            let foreign = d.join("foreign");
            if !dangling {
                std::fs::write(&foreign, b"theirs").unwrap();
            }
            std::os::unix::fs::symlink(&foreign, d.join(name)).unwrap();
            let dir = format!("--directory={}", s(d));
            let out = fio(
                &[
                    "--name=j",
                    "--rw=write",
                    "--bs=4k",
                    "--size=64k",
                    &dir,
                    log,
                    "--log_avg_msec=100",
                ],
                d,
            );
            assert_code(&out, 2);
            let err = stderr(&out);
            assert!(err.contains("symbolic link") && err.contains(name), "{err}");
            if dangling {
                assert!(std::fs::symlink_metadata(&foreign).is_err());
            } else {
                assert_eq!(std::fs::read(&foreign).unwrap(), b"theirs");
            }
            assert!(!d.join("j.0.0").exists(), "nothing laid out");
            assert!(std::fs::symlink_metadata(d.join(name))
                .unwrap()
                .file_type()
                .is_symlink());
        }
    }
}
