//! Interruption, for every command: SIGINT and SIGTERM stop the I/O, keep
//! the results so far (marked interrupted), clean up ioscale's own files
//! and exit 130; a second signal exits at once, still touching nothing
//! that is not ioscale's, and what it leaves is removed later by marker
//! (`ioscale clean`, `meta --ops cleanup`). Each target holds unrelated
//! files and look-alikes that must stay byte-for-byte intact throughout.
//! (faults.rs has the SIGINT of a plain `run`, sweep_cli.rs the SIGINT and
//! resume of a sweep.)

mod common;
#[path = "support/rel.rs"]
mod rel;

use std::path::Path;
use std::time::Duration;

use common::*;
use rel::*;

/// A run that would write 2 GiB with O_SYNC: long enough to interrupt.
fn long_run(json: &Path, target: &Path) -> std::process::Child {
    spawn(&[
        "run",
        "--op",
        "write,read",
        "--threads",
        "2",
        "--size",
        "1g",
        "--xfer",
        "64k",
        "--sync",
        "each",
        "--json",
        s(json),
        "-q",
        s(target),
    ])
}

/// A meta run that would create 10 million empty files.
fn long_meta(json: &Path, target: &Path) -> std::process::Child {
    spawn(&[
        "meta",
        "--ops",
        "create,stat,delete",
        "--threads",
        "2",
        "--files",
        "5000000",
        "--file-size",
        "0",
        "--json",
        s(json),
        "-q",
        s(target),
    ])
}

fn meta_files(target: &Path) -> usize {
    count_entries(&target.join("ioscale-meta.d"))
}

#[test]
fn run_stops_on_sigterm_and_sigint() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let t = scratch();
        let tp = t.path();
        plant_lookalikes(tp);
        let before = snapshot(tp);
        let o = scratch();
        let j = o.path().join("r.json");
        let mut child = long_run(&j, tp);
        let data = tp.join("ioscale.d/file.00000001");
        wait_until(&mut child, "data was written", || len(&data) >= M);
        signal(&child, sig);
        let out = finish(child, Duration::from_secs(30));
        assert_code(&out, 130);
        let v = json(&j);
        assert_eq!(v["interrupted"], true, "signal {sig}");
        let ph = phases(&v);
        assert_eq!(ph.len(), 1, "the read phase never started");
        assert_eq!(ph[0]["interrupted"], true);
        let bytes = ph[0]["bytes"].as_u64().unwrap();
        assert!((M..2 << 30).contains(&bytes), "bytes {bytes}");
        assert!(
            v["errors"].as_array().unwrap().is_empty(),
            "{}",
            v["errors"]
        );
        assert_intact(tp, &before, &format!("signal {sig}"));
    }
}

#[test]
fn meta_stops_on_sigterm_and_sigint() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let t = scratch();
        let tp = t.path();
        plant_lookalikes(tp);
        let before = snapshot(tp);
        let o = scratch();
        let j = o.path().join("m.json");
        let mut child = long_meta(&j, tp);
        wait_until(&mut child, "files were created", || meta_files(tp) > 2000);
        signal(&child, sig);
        let out = finish(child, Duration::from_secs(60));
        assert_code(&out, 130);
        let v = json(&j);
        assert_eq!(v["interrupted"], true, "signal {sig}");
        let ph = phases(&v);
        assert_eq!(ph.len(), 1, "stat never started");
        assert_eq!(ph[0]["op"], "create");
        assert_eq!(ph[0]["interrupted"], true);
        // The 2000 entries counted held the tree's own directories, its
        // marker and its lock beside the files: a few fewer creates.
        let made = ph[0]["ops"].as_u64().unwrap();
        assert!((1900..10_000_000).contains(&made), "{made}");
        assert_intact(tp, &before, &format!("signal {sig}"));
    }
}

#[test]
fn sweep_of_a_long_point_stops_on_sigint_and_sigterm() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let t = scratch();
        let tp = t.path();
        plant_lookalikes(tp);
        let before = snapshot(tp);
        let o = scratch();
        let j = o.path().join("s.json");
        let mut child = spawn(&[
            "sweep",
            "--threads",
            "2,4",
            "--json",
            s(&j),
            "--",
            "meta",
            "--ops",
            "create,delete",
            "--files",
            "5000000",
            "--file-size",
            "0",
            s(tp),
        ]);
        wait_until(&mut child, "files were created", || meta_files(tp) > 2000);
        signal(&child, sig);
        let out = finish(child, Duration::from_secs(60));
        assert_code(&out, 130);
        let v = json(&j);
        assert_eq!(v["interrupted"], true);
        assert_eq!(v["points"].as_array().unwrap().len(), 0);
        assert_intact(tp, &before, &format!("signal {sig}"));
    }
}

#[test]
fn a_second_ctrl_c_exits_at_once_and_deletes_nothing_foreign() {
    // run: the second SIGINT lands while the first one's stop is under way.
    let t = scratch();
    let tp = t.path();
    plant_lookalikes(tp);
    let before = snapshot(tp);
    let o = scratch();
    let j = o.path().join("r.json");
    let mut child = long_run(&j, tp);
    let data = tp.join("ioscale.d/file.00000000");
    wait_until(&mut child, "data was written", || len(&data) >= M);
    signal(&child, libc::SIGINT);
    signal(&child, libc::SIGINT);
    let out = finish(child, Duration::from_secs(30));
    assert_code(&out, 130);
    let now = snapshot(tp);
    for (k, v) in &before {
        assert!(now.get(k) == Some(v), "{k} was changed or removed");
    }
    for k in now.keys().filter(|k| !before.contains_key(*k)) {
        assert!(k.starts_with("ioscale.d"), "left {k}, not ioscale's");
    }
    if tp.join("ioscale.d").exists() {
        assert_code(&run(&["clean", s(tp)]), 0);
    }
    assert_intact(tp, &before, "after ioscale clean");

    // meta: the second SIGINT interrupts the cleanup of many files (a
    // tree of 2 × 100,000 names, which `meta --ops cleanup` walks later).
    let mut child = spawn(&[
        "meta",
        "--ops",
        "create,delete",
        "--threads",
        "2",
        "--files",
        "100000",
        "--file-size",
        "0",
        "--json",
        s(&j),
        "-q",
        s(tp),
    ]);
    let _ = std::fs::remove_file(&j);
    wait_until(&mut child, "files were created", || meta_files(tp) > 20_000);
    signal(&child, libc::SIGINT);
    // The second SIGINT goes only once the first was taken (the record,
    // saved before the cleanup starts, is there): two sent at once may
    // reach a busy process as one, and then the cleanup runs to its end.
    let t0 = std::time::Instant::now();
    while !j.exists() && child.try_wait().unwrap().is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no record after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let second = child.try_wait().unwrap().is_none();
    if second {
        signal(&child, libc::SIGINT);
    }
    let out = finish(child, Duration::from_secs(30));
    assert_code(&out, 130);
    if second {
        // The cleanup stopped and left the tree (over 20,000 names), for
        // `ioscale clean` or a cleanup run, as it said it would.
        assert!(tp.join("ioscale-meta.d").exists(), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("a second Ctrl-C stops that and leaves the tree"),
            "{}",
            stderr(&out)
        );
    }
    let now = snapshot(tp);
    for (k, v) in &before {
        assert!(now.get(k) == Some(v), "{k} was changed or removed");
    }
    for k in now.keys().filter(|k| !before.contains_key(*k)) {
        assert!(k.starts_with("ioscale-meta.d"), "left {k}, not ioscale's");
    }
    if tp.join("ioscale-meta.d").exists() {
        let out = run(&[
            "meta",
            "--ops",
            "cleanup",
            "--threads",
            "2",
            "--files",
            "100000",
            "-q",
            s(tp),
        ]);
        assert_code(&out, 0);
    }
    assert_intact(tp, &before, "after meta --ops cleanup");
}

#[test]
fn ior_and_dd_stop_on_sigint() {
    let t = scratch();
    let tp = t.path();
    plant_lookalikes(tp);
    let before = snapshot(tp);
    let o = tp.join("ior.bin");
    let mut child = spawn(&[
        "ior",
        "-w",
        "-F",
        "-N",
        "1",
        "-Y",
        "-b",
        "1g",
        "-t",
        "64k",
        "-o",
        s(&o),
    ]);
    let data = tp.join("ior.bin.00000000");
    wait_until(&mut child, "data was written", || len(&data) >= M);
    signal(&child, libc::SIGINT);
    let out = finish(child, Duration::from_secs(30));
    assert_code(&out, 130);
    assert_intact(tp, &before, "ior");

    let of = format!("of={}/dd-{{}}", s(tp));
    let mut child = spawn(&[
        "dd",
        "--jobs",
        "2",
        "--rm",
        "if=/dev/zero",
        &of,
        "bs=64k",
        "count=16384",
        "oflag=sync",
    ]);
    let data = tp.join("dd-1");
    wait_until(&mut child, "data was written", || len(&data) >= M);
    signal(&child, libc::SIGTERM);
    let out = finish(child, Duration::from_secs(30));
    assert_code(&out, 130);
    assert!(stderr(&out).contains("records out"), "{}", stderr(&out));
    assert_intact(tp, &before, "dd");
}

/// The kernel's name for where the process's main thread waits.
fn wchan(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default()
}

#[test]
fn a_json_fifo_without_a_reader_ends_at_one_signal() {
    // `--json FIFO` that nobody reads: once the run is over, ioscale waits
    // for a reader; one SIGTERM (as `timeout` sends) ends the wait with
    // 130 and a line naming the FIFO. Before, the open blocked, restarted
    // after the handler, and only SIGKILL or a second signal ended it.
    let t = scratch();
    let tp = t.path();
    plant_lookalikes(tp);
    let before = snapshot(tp);
    let o = scratch();
    let fifo = o.path().join("r.json");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut child = spawn(&[
        "run",
        "--size",
        "64k",
        "--xfer",
        "4k",
        "--json",
        s(&fifo),
        "-q",
        s(tp),
    ]);
    let pid = child.id();
    let data = tp.join("ioscale.d");
    wait_until(&mut child, "the wait for a reader", || {
        let w = wchan(pid);
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count());
        !data.exists()
            && tasks == 1
            && ["wait_for_partner", "hrtimer_nanosleep", "do_nanosleep"].contains(&w.as_str())
    });
    signal(&child, libc::SIGTERM);
    let out = finish(child, Duration::from_secs(30));
    assert_code(&out, 130);
    let err = stderr(&out);
    assert!(err.contains(s(&fifo)) && err.contains("FIFO"), "{err}");
    assert_intact(tp, &before, "run --json FIFO");
}
