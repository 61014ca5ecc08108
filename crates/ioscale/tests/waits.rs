//! Issue 13, item 6: every pause ioscale takes on the user's behalf —
//! smallfile's `--cleanup-delay-usec-per-file`, fio's `startdelay`, IOR's
//! `-d` — ends at SIGINT or SIGTERM with exit 130, whatever its length
//! (2^64-1 included). Each test starts the pause, waits until ioscale is
//! inside it (the work before it is done), signals, and requires 130.

mod common;
#[path = "support/rel.rs"]
mod rel;

use std::path::Path;
use std::time::Duration;

use common::*;
use rel::*;

/// Whether process `pid` catches SIGINT and SIGTERM (its handlers are
/// installed), from `SigCgt` in /proc/PID/status.
fn catches_int_and_term(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let mask = status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .unwrap_or(0);
    let bit = |sig: i32| 1u64 << (sig - 1);
    mask & bit(libc::SIGINT) != 0 && mask & bit(libc::SIGTERM) != 0
}

/// A kept smallfile tree of four files under `top`.
fn smallfile_tree(top: &Path) {
    let out = run(&[
        "smallfile",
        "--operation",
        "create",
        "--threads",
        "1",
        "--files",
        "4",
        "--file-size",
        "4",
        "--top",
        s(top),
    ]);
    assert_code(&out, 0);
    assert!(top.join("ioscale-meta.d").exists());
}

#[test]
fn smallfile_cleanup_delay_ends_at_a_signal() {
    for (delay, sig) in [
        ("3000000", libc::SIGINT),
        ("18446744073709551615", libc::SIGTERM),
        ("18446744073709551615", libc::SIGINT),
    ] {
        let t = scratch();
        let top = t.path();
        smallfile_tree(top);
        let mut child = spawn(&[
            "smallfile",
            "--operation",
            "cleanup",
            "--threads",
            "1",
            "--files",
            "4",
            "--file-size",
            "4",
            "--cleanup-delay-usec-per-file",
            delay,
            "--top",
            s(top),
        ]);
        // The delay follows the cleanup: once the tree is gone, ioscale is
        // in the pause (4 files x 3 s at least).
        let tree = top.join("ioscale-meta.d");
        wait_until(&mut child, "the end of the cleanup", || !tree.exists());
        signal(&child, sig);
        let out = finish(child, Duration::from_secs(30));
        assert_code(&out, 130);
        assert!(
            stderr(&out).contains("--cleanup-delay-usec-per-file"),
            "{delay}: {}",
            stderr(&out)
        );
        assert_empty(top);
    }
}

#[test]
fn fio_startdelay_ends_at_a_signal() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let t = scratch();
        let d = t.path();
        let dir = format!("--directory={}", s(d));
        let mut child = spawn(&[
            "fio",
            "--name=j",
            &dir,
            "--rw=write",
            "--size=64k",
            "--startdelay=18446744073709551",
        ]);
        // The job's file is laid out before the delay, as fio lays out
        // every job's files before any starts (`create_serialize`); the
        // delay follows the signal handlers' installation and the 64 KiB
        // layout at once: a signal after that lands in (or just before)
        // the delay.
        let pid = child.id();
        wait_until(&mut child, "the signal handlers", || {
            catches_int_and_term(pid)
        });
        signal(&child, sig);
        let out = finish(child, Duration::from_secs(30));
        assert_code(&out, 130);
        // At most the laid-out file (fio leaves it too), nothing else.
        let left = names(d);
        assert!(left.is_empty() || left == ["j.0.0"], "{left:?}");
    }
}

#[test]
fn ior_delay_between_repetitions_ends_at_sigterm() {
    let t = scratch();
    let f = t.path().join("f");
    let marker = t.path().join(".f.ioscale-marker");
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
        s(&f),
    ]);
    wait_until(&mut child, "the first repetition", || marker.exists());
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGTERM);
    let out = finish(child, Duration::from_secs(30));
    assert_code(&out, 130);
}

/// io500's stonewall at 2^64-1 seconds is no stonewall: the phases run to
/// their item counts (a trial, so INVALID) instead of panicking on an
/// `Instant` overflow in every task thread and hanging.
#[test]
fn io500_stonewall_at_the_u64_edge_runs() {
    let t = scratch();
    let data = t.path().join("data");
    let res = t.path().join("res");
    let ini = t.path().join("c.ini");
    std::fs::write(
        &ini,
        format!(
            "[global]\ndatadir = {}\nresultdir = {}\ntimestamp-datadir = FALSE\n\
             timestamp-resultdir = FALSE\n[ior-easy]\nAPI = POSIX\ntransferSize = 64k\n\
             blockSize = 256k\n[ior-hard]\nsegmentCount = 4\n[mdtest-easy]\nn = 20\n\
             [mdtest-hard]\nn = 20\n",
            s(&data),
            s(&res)
        ),
    )
    .unwrap();
    let child = spawn(&["io500", "--stonewall", "18446744073709551615", s(&ini)]);
    let out = finish(child, Duration::from_secs(300));
    assert_code(&out, 0);
}

/// A stonewall at 2^64-1 seconds (mdtest `-W`, IOR `-D`) is no limit, and
/// the run it leaves unbounded still ends at a signal: 130, files removed.
#[test]
fn stonewalls_at_the_u64_edge_end_at_a_signal() {
    let t = scratch();
    let m = t.path().join("m");
    let marker = m.join("ioscale-meta.d").join(".ioscale-meta-marker");
    let mut child = spawn(&[
        "mdtest",
        "-n",
        "10000000",
        "-W",
        "18446744073709551615",
        "-d",
        s(&m),
    ]);
    wait_until(&mut child, "the creates", || marker.exists());
    signal(&child, libc::SIGINT);
    let out = finish(child, Duration::from_secs(60));
    assert_code(&out, 130);
    assert!(!m.join("ioscale-meta.d").exists());

    let f = t.path().join("f");
    let marker = t.path().join(".f.ioscale-marker");
    let mut child = spawn(&[
        "ior",
        "-w",
        "-t",
        "4k",
        "-b",
        "16g",
        "-D",
        "18446744073709551615",
        "-o",
        s(&f),
    ]);
    wait_until(&mut child, "the write", || marker.exists() && len(&f) > 0);
    signal(&child, libc::SIGTERM);
    let out = finish(child, Duration::from_secs(60));
    assert_code(&out, 130);
    assert_empty(t.path());
}
