//! Issue 13 wired in: cleanup and `clean` never follow a swapped path, a
//! live data set is locked against `clean` and a second run, and output
//! flags never replace a device or FIFO. Each test runs the binary on a
//! real file system (the repository's, or tmpfs) and checks foreign files
//! by content afterwards.

mod common;
#[path = "support/rel.rs"]
mod rel;

use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::time::Duration;

use common::*;
use rel::*;

/// Plants the names a native set uses, plus a marker look-alike, in
/// `victim`, each with its own content.
fn plant_victim(victim: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    std::fs::create_dir_all(victim).unwrap();
    let mut out = Vec::new();
    for name in [
        "file.00000000",
        "file.00000001",
        ".ioscale-marker",
        "dir.00000000",
    ] {
        let p = victim.join(name);
        if name.starts_with("dir.") {
            std::fs::create_dir_all(&p).unwrap();
            let f = p.join("file.00000000");
            let body = format!("foreign {}", f.display()).into_bytes();
            std::fs::write(&f, &body).unwrap();
            out.push((f, body));
        } else {
            let body = format!("foreign {}", p.display()).into_bytes();
            std::fs::write(&p, &body).unwrap();
            out.push((p, body));
        }
    }
    out
}

fn assert_intact(planted: &[(std::path::PathBuf, Vec<u8>)]) {
    for (p, body) in planted {
        let got = std::fs::read(p).unwrap_or_else(|e| panic!("{} is gone: {e}", p.display()));
        assert!(
            got == *body,
            "{} was changed ({} bytes, was {})",
            p.display(),
            got.len(),
            body.len()
        );
    }
}

#[test]
fn clean_refuses_an_ioscale_d_symlink() {
    let t = scratch();
    let victim = t.path().join("victim");
    let planted = plant_victim(&victim);
    // A real marker in the victim, so only the link stands between clean
    // and the victim's files.
    let kept = scratch();
    let out = run(&[
        "run",
        "--op",
        "write",
        "--xfer",
        "4k",
        "--size",
        "64k",
        "--threads",
        "2",
        "--keep",
        "-q",
        s(kept.path()),
    ]);
    assert_code(&out, 0);
    std::fs::copy(
        kept.path().join("ioscale.d/.ioscale-marker"),
        victim.join(".ioscale-marker"),
    )
    .unwrap();
    let planted: Vec<_> = planted
        .into_iter()
        .map(|(p, b)| {
            let b = std::fs::read(&p).unwrap_or(b);
            (p, b)
        })
        .collect();
    let target = t.path().join("target");
    std::fs::create_dir(&target).unwrap();
    std::os::unix::fs::symlink(&victim, target.join("ioscale.d")).unwrap();
    let out = run(&["clean", s(&target)]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    assert_intact(&planted);
}

/// Swaps `T/ioscale.d` for a link to a victim directory while a run is in
/// its timed phase: the run's cleanup must leave the victim alone.
///
/// The swap waits until every worker has opened its file: a worker that
/// opens after the swap still follows the link (the engine opens by path;
/// see docs/reliability.md, "Not yet guaranteed").
fn swap_during_run(layout: &str, made: &[&str]) {
    let t = scratch();
    let target = t.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let victim = t.path().join("victim");
    let planted = plant_victim(&victim);
    let mut child = spawn(&[
        "run",
        "--op",
        "write",
        "--threads",
        "2",
        "--layout",
        layout,
        "--xfer",
        "4k",
        "--size",
        "1g",
        "--time",
        "3s",
        "-q",
        s(&target),
    ]);
    let root = target.join("ioscale.d");
    wait_until(&mut child, "the data files", || {
        made.iter()
            .all(|m| root.join(m).metadata().is_ok_and(|md| md.len() > 0))
    });
    std::fs::rename(target.join("ioscale.d"), t.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(&victim, target.join("ioscale.d")).unwrap();
    let out = finish(child, Duration::from_secs(60));
    assert_intact(&planted);
    // What ioscale made is gone from where it really was.
    let moved = t.path().join("moved");
    for n in ["file.00000000", "file.00000001", "dir.00000000"] {
        assert!(
            !moved.join(n).exists(),
            "{n} left in the moved set: {}",
            stderr(&out)
        );
    }
}

#[test]
fn symlink_swap_during_a_run_leaves_the_victim_alone() {
    swap_during_run("per-thread", &["file.00000000", "file.00000001"]);
}

#[test]
fn symlink_swap_during_a_per_thread_dir_run_leaves_the_victim_alone() {
    swap_during_run(
        "per-thread-dir",
        &["dir.00000000/file.00000000", "dir.00000001/file.00000001"],
    );
}

#[test]
fn a_live_set_is_locked_against_clean_and_a_second_run() {
    let t = scratch();
    let mut child = spawn(&[
        "run",
        "--op",
        "write",
        "--threads",
        "1",
        "--xfer",
        "4k",
        "--size",
        "1g",
        "--time",
        "3s",
        "-q",
        s(t.path()),
    ]);
    let f = t.path().join("ioscale.d/file.00000000");
    wait_until(&mut child, "the data file", || f.exists());
    let out = run(&["clean", s(t.path())]);
    assert_code(&out, 2);
    let err = stderr(&out);
    assert!(err.contains(&format!("pid {}", child.id())), "{err}");
    assert!(f.exists(), "clean removed a live run's file");
    let out = run(&[
        "run",
        "--op",
        "write",
        "--xfer",
        "4k",
        "--size",
        "64k",
        "-q",
        s(t.path()),
    ]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains(&format!("pid {}", child.id())),
        "{}",
        stderr(&out)
    );
    let out = finish(child, Duration::from_secs(60));
    assert_code(&out, 0);
    assert!(!t.path().join("ioscale.d").exists(), "{}", stderr(&out));
}

#[test]
fn a_stale_set_is_cleanable() {
    let t = scratch();
    let mut child = spawn(&[
        "run",
        "--op",
        "write",
        "--threads",
        "1",
        "--xfer",
        "4k",
        "--size",
        "1g",
        "--time",
        "30s",
        "-q",
        s(t.path()),
    ]);
    let f = t.path().join("ioscale.d/file.00000000");
    wait_until(&mut child, "the data file", || f.exists());
    signal(&child, libc::SIGKILL);
    let _ = child.wait();
    let out = run(&["clean", s(t.path())]);
    assert_code(&out, 0);
    assert!(!t.path().join("ioscale.d").exists(), "{}", stderr(&out));
}

#[test]
fn a_device_or_fifo_output_is_written_into_never_replaced() {
    let t = scratch();
    let out = run(&[
        "run",
        "--op",
        "write",
        "--xfer",
        "4k",
        "--size",
        "64k",
        "--json",
        "/dev/null",
        "--csv",
        "/dev/null",
        "-q",
        s(t.path()),
    ]);
    assert_code(&out, 0);
    let m = std::fs::symlink_metadata("/dev/null").unwrap();
    assert!(
        m.file_type().is_char_device(),
        "/dev/null is no longer a device"
    );
    // A FIFO gets the bytes, and stays a FIFO.
    let fifo = t.path().join("out.fifo");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let out = run(&[
        "run",
        "--op",
        "write",
        "--xfer",
        "4k",
        "--size",
        "64k",
        "--json",
        s(&fifo),
        "-q",
        s(t.path()),
    ]);
    assert_code(&out, 0);
    let got = reader.join().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&got).expect("JSON through the FIFO");
    assert!(v["phases"].is_array(), "{v}");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    // A directory is refused up front, naming the flag.
    let out = run(&[
        "run",
        "--op",
        "write",
        "--xfer",
        "4k",
        "--size",
        "64k",
        "--json",
        s(t.path()),
        "-q",
        s(t.path()),
    ]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("--json"), "{}", stderr(&out));
}

#[test]
fn u64_edge_values_are_no_panic() {
    let t = scratch();
    let d = t.path();
    let of = format!("of={}", s(&d.join("dd.out")));
    let out = run(&["dd", "--jobs", "0", "if=/dev/zero", &of, "bs=4k", "count=4"]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("--jobs"), "{}", stderr(&out));
    // A time limit past the end of time is no limit.
    let f = d.join("f");
    let out = run(&[
        "ior",
        "-w",
        "-t",
        "4k",
        "-b",
        "16k",
        "-D",
        "18446744073709551615",
        "-o",
        s(&f),
    ]);
    assert_code(&out, 0);
    let m = d.join("m");
    let out = run(&[
        "mdtest",
        "-n",
        "4",
        "-W",
        "18446744073709551615",
        "-d",
        s(&m),
    ]);
    assert_no_panic(&out);
    assert_ne!(out.status.code(), Some(101));
    // A pause past the end of time lasts until a signal, then exit 130.
    let g = d.join("g");
    let marker = d.join(".g.ioscale-marker");
    let mut child = spawn(&[
        "ior",
        "-w",
        "-t",
        "4k",
        "-b",
        "16k",
        "-d",
        "18446744073709551615",
        "-i",
        "2",
        "-o",
        s(&g),
    ]);
    wait_until(&mut child, "the first repetition", || marker.exists());
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGINT);
    let out = finish(child, Duration::from_secs(30));
    assert_code(&out, 130);
}

/// Sets every `time_limit` in `v` to `x`.
fn set_time_limit(v: &mut serde_json::Value, x: f64) -> usize {
    let mut n = 0;
    match v {
        serde_json::Value::Object(m) => {
            for (k, val) in m.iter_mut() {
                if k == "time_limit" {
                    *val = serde_json::json!(x);
                    n += 1;
                } else {
                    n += set_time_limit(val, x);
                }
            }
        }
        serde_json::Value::Array(a) => {
            for val in a {
                n += set_time_limit(val, x);
            }
        }
        _ => {}
    }
    n
}

#[test]
fn a_record_with_a_huge_time_limit_reads_without_panic() {
    let t = scratch();
    let j = t.path().join("r.json");
    let data = t.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let out = run(&[
        "run",
        "--op",
        "write",
        "--xfer",
        "4k",
        "--size",
        "64k",
        "--time",
        "10s",
        "--json",
        s(&j),
        "-q",
        s(&data),
    ]);
    assert_code(&out, 0);
    let mut v = json(&j);
    assert!(set_time_limit(&mut v, 1e20) > 0, "no time_limit in {v}");
    std::fs::write(&j, serde_json::to_vec(&v).unwrap()).unwrap();
    let out = run(&["report", s(&j)]);
    assert_no_panic(&out);
    assert_code(&out, 0);
}

#[test]
fn a_full_tmpfs_leaves_no_unmarked_directory() {
    let Some(m) = tmpfs("size=1m") else {
        return;
    };
    // Fill it: the marker cannot be written.
    let fill = m.path().join("fill");
    let _ = std::fs::write(&fill, vec![7u8; 2 << 20]);
    let out = run(&[
        "run",
        "--op",
        "write",
        "--xfer",
        "4k",
        "--size",
        "64k",
        "-q",
        s(m.path()),
    ]);
    assert_no_panic(&out);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut left: Vec<_> = std::fs::read_dir(m.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["fill"], "{}", stderr(&out));
    // The target is usable again once there is room.
    std::fs::remove_file(&fill).unwrap();
    let out = run(&[
        "run",
        "--op",
        "write",
        "--xfer",
        "4k",
        "--size",
        "64k",
        "-q",
        s(m.path()),
    ]);
    assert_code(&out, 0);
}

#[test]
fn clean_removes_ioscale_temp_names_and_the_lock() {
    let t = scratch();
    let out = run(&[
        "run",
        "--op",
        "write",
        "--xfer",
        "4k",
        "--size",
        "64k",
        "--keep",
        "-q",
        s(t.path()),
    ]);
    assert_code(&out, 0);
    let root = t.path().join("ioscale.d");
    // What an interrupted marker write of an older and of this version
    // leave, and a stale lock file.
    std::fs::write(root.join(".ioscale-marker.tmp"), b"x").unwrap();
    let tmp = safefs_temp_name();
    std::fs::write(root.join(&tmp), b"x").unwrap();
    std::fs::write(root.join(".ioscale-marker.lock"), b"").unwrap();
    let out = run(&["clean", s(t.path())]);
    assert_code(&out, 0);
    assert!(!root.exists(), "{}", stderr(&out));
}

/// A temporary name safefs::replace_at uses for the marker.
fn safefs_temp_name() -> String {
    format!("..ioscale-marker.ioscale-tmp.{}.0", std::process::id())
}

#[test]
fn a_second_ctrl_c_during_meta_cleanup_keeps_the_record() {
    let t = scratch();
    let target = t.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let j = t.path().join("m.json");
    let c = t.path().join("m.csv");
    let mut child = spawn(&[
        "meta",
        "--ops",
        "create,stat,delete",
        "--files",
        "150000",
        "--threads",
        "2",
        "--json",
        s(&j),
        "--csv",
        s(&c),
        "-q",
        s(&target),
    ]);
    let probe = target.join("ioscale-meta.d/thr.000");
    wait_until(&mut child, "the first files", || {
        count_entries(&probe) > 2000
    });
    signal(&child, libc::SIGINT);
    // The second Ctrl-C lands once the cleanup has begun removing files
    // (the count falls), whatever the build does with the record.
    let mut peak = count_entries(&probe);
    let t0 = std::time::Instant::now();
    loop {
        let n = count_entries(&probe);
        if n < peak || child.try_wait().unwrap().is_some() || t0.elapsed() > Duration::from_secs(60)
        {
            break;
        }
        peak = peak.max(n);
        std::thread::sleep(Duration::from_millis(2));
    }
    if child.try_wait().unwrap().is_none() {
        signal(&child, libc::SIGINT);
    }
    let out = finish(child, Duration::from_secs(60));
    assert_code(&out, 130);
    let v = json(&j);
    assert_eq!(v["interrupted"], true, "{v}");
    assert!(std::fs::metadata(&c).unwrap().len() > 0);
}

#[test]
fn fio_outputs_go_into_a_fifo_and_never_replace_it() {
    let t = scratch();
    let dir = t.path().join("data");
    std::fs::create_dir(&dir).unwrap();
    for flag in ["--output", "--ioscale-json"] {
        let fifo = t.path().join(format!("{}.fifo", &flag[2..]));
        let c = std::ffi::CString::new(s(&fifo)).unwrap();
        // SAFETY: mkfifo(3) on a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        let out = run(&[
            "fio",
            "--name=j",
            "--rw=write",
            "--bs=4k",
            "--size=64k",
            &format!("--directory={}", s(&dir)),
            "--output-format=json",
            &format!("{flag}={}", s(&fifo)),
        ]);
        assert_code(&out, 0);
        let got = reader.join().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&got)
            .unwrap_or_else(|e| panic!("{flag}: JSON through the FIFO: {e}"));
        assert!(v.is_object() || v.is_array(), "{flag}: {v}");
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo(),
            "{flag}: the FIFO was replaced"
        );
    }
}

/// `run`, as `meta`: an interrupted run's record is written before its
/// files are removed, so a second Ctrl-C during a slow cleanup (a file
/// system taking 50 ms per metadata request) keeps the record.
#[test]
fn a_second_ctrl_c_during_run_cleanup_keeps_the_record() {
    let Some(fs) = common::fuse::TestFs::mount(&["--meta-delay", "50ms", "--bw", "20m"]) else {
        return;
    };
    let t = scratch();
    let j = t.path().join("r.json");
    let c = t.path().join("r.csv");
    let mut child = spawn(&[
        "run",
        "--op",
        "write",
        "--threads",
        "48",
        "--layout",
        "per-thread",
        "--size",
        "1g",
        "--xfer",
        "64k",
        "--time",
        "60s",
        "--json",
        s(&j),
        "--csv",
        s(&c),
        "-q",
        s(fs.path()),
    ]);
    let set = fs.path().join("ioscale.d");
    wait_until(&mut child, "every thread's file", || {
        count_entries(&set) >= 48
    });
    signal(&child, libc::SIGINT);
    // The second Ctrl-C lands once the cleanup has begun removing files.
    let t0 = std::time::Instant::now();
    while count_entries(&set) >= 48
        && child.try_wait().unwrap().is_none()
        && t0.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the cleanup ended before the second Ctrl-C"
    );
    signal(&child, libc::SIGINT);
    let out = finish(child, Duration::from_secs(60));
    assert_code(&out, 130);
    assert!(
        stderr(&out).contains("the record is saved"),
        "{}",
        stderr(&out)
    );
    let v = json(&j);
    assert_eq!(v["interrupted"], true, "{v}");
    assert!(std::fs::metadata(&c).unwrap().len() > 0);
    drop(fs);
}

/// Two outputs of one command naming the same file (directly, as
/// `./NAME`, or one through a link to the other) are refused before
/// anything runs, naming both flags: before, the second replaced the
/// first (`run --json o --csv o` left only the CSV, exit 0; a sweep's
/// `--json` could then not be resumed). A FIFO, a character device and
/// `-` take both, one after the other, as before.
#[test]
fn two_outputs_naming_one_file_are_refused_first() {
    let t = scratch();
    let o = scratch();
    let out = |n: &str| o.path().join(n);
    std::os::unix::fs::symlink(out("a"), out("link-a")).unwrap();
    std::fs::write(out("a"), b"the user's").unwrap();
    let (same, a, link) = (out("same"), out("a"), out("link-a"));
    let (same, a, link) = (s(&same), s(&a), s(&link));
    let dot = format!("{}/./same", s(o.path()));
    let tp = s(t.path());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "--size", "1m", "--json", same, "--csv", same, tp],
            "--csv",
        ),
        (
            vec!["run", "--size", "1m", "--json", same, "--csv", &dot, tp],
            "--csv",
        ),
        (
            vec!["run", "--size", "1m", "--json", a, "--csv", link, tp],
            "--csv",
        ),
        (
            vec!["meta", "--files", "4", "--json", same, "--csv", same, tp],
            "--csv",
        ),
        (
            vec![
                "sweep",
                "--threads",
                "1",
                "--json",
                same,
                "--html",
                same,
                "--",
                "run",
                "--size",
                "1m",
                tp,
            ],
            "--html",
        ),
        (
            vec![
                "smallfile",
                "--top",
                tp,
                "--files",
                "4",
                "--threads",
                "1",
                "--output-json",
                same,
                "--record",
                same,
            ],
            "--record",
        ),
    ];
    for (args, second) in cases {
        let r = run(&args);
        assert_no_panic(&r);
        let err = stderr(&r);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(second) && err.contains("the same file as"),
            "{args:?}: should name {second}: {err}"
        );
        assert!(!out("same").exists(), "{args:?}: wrote");
        assert_eq!(std::fs::read(out("a")).unwrap(), b"the user's");
        assert!(names(t.path()).is_empty(), "{args:?}: ran");
    }
    // Streams take both.
    let r = run(&[
        "run",
        "--size",
        "1m",
        "--json",
        "/dev/null",
        "--csv",
        "/dev/null",
        tp,
    ]);
    assert_code(&r, 0);
    let r = run(&[
        "run", "--size", "1m", "--json", "-", "--csv", "-", "--quiet", tp,
    ]);
    assert_code(&r, 0);
}
