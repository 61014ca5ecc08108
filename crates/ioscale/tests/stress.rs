//! Scale and stress — sizes, not speed: 256 workers on a 2-core machine
//! count every transfer exactly; `meta` makes and removes 1,000,000 files;
//! a run that would take minutes is cut short by its time limit and says
//! so; and the peak RSS of the process (from wait4's rusage, as
//! scripts/bench reports it) stays under a fixed bound whatever the size or
//! file count. No assertion on how fast anything is.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::*;

/// Runs ioscale with `args`; returns (exit code, stderr, peak RSS in KiB)
/// — the RSS of that one child, from wait4.
// The child is reaped by wait4 itself, which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn run_measured(args: &[&str]) -> (i32, String, u64) {
    let errdir = scratch();
    let errf = errdir.path().join("stderr");
    let child = Command::new(ioscale_path())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&errf).unwrap())
        .spawn()
        .expect("starting ioscale");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own unreaped child with valid pointers; the
    // Child handle is not waited on again afterwards.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut ru) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4");
    let err = std::fs::read_to_string(&errf).unwrap_or_default();
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        libc::WIFEXITED(status),
        "ioscale died: status {status}\n{err}"
    );
    (libc::WEXITSTATUS(status), err, ru.ru_maxrss as u64)
}

/// The peak RSS bound of every run here, whatever its size: 128 MiB.
const RSS_BOUND_KIB: u64 = 128 * 1024;

#[test]
fn two_hundred_fifty_six_threads_count_exactly() {
    let t = scratch();
    let o = scratch();
    let j = o.path().join("r.json");
    let (code, err, rss) = run_measured(&[
        "run",
        "--op",
        "write,read",
        "--verify",
        "--threads",
        "256",
        "--layout",
        "per-thread",
        "--size",
        "16k",
        "--xfer",
        "4k",
        "--json",
        s(&j),
        "-q",
        s(t.path()),
    ]);
    assert_eq!(code, 0, "{err}");
    let v = json(&j);
    let ph = phases(&v);
    assert_eq!(ph.len(), 2);
    check_phase(&ph[0], "write", 256, 256 * 16 * K, 4 * K);
    check_phase(&ph[1], "read", 256, 256 * 16 * K, 4 * K);
    check_verified(&ph[1], 256 * 16 * K);
    assert!(rss < RSS_BOUND_KIB, "peak RSS {rss} KiB");
    assert_empty(t.path());

    // The same with a shared file and io_uring: every offset once.
    let (code, err, _) = run_measured(&[
        "run",
        "--op",
        "randwrite,read",
        "--verify",
        "--engine",
        "io_uring",
        "--iodepth",
        "2",
        "--threads",
        "256",
        "--layout",
        "shared",
        "--size",
        "8k",
        "--xfer",
        "4k",
        "--json",
        s(&j),
        "-q",
        s(t.path()),
    ]);
    assert_eq!(code, 0, "{err}");
    let v = json(&j);
    let ph = phases(&v);
    check_phase(&ph[0], "randwrite", 256, 256 * 8 * K, 4 * K);
    check_phase(&ph[1], "read", 256, 256 * 8 * K, 4 * K);
    check_verified(&ph[1], 256 * 8 * K);
    assert_empty(t.path());
}

/// `meta` with `files` per thread × 2 threads of empty files: every one is
/// created and deleted, the peak RSS stays under the bound, the target is
/// left empty.
fn meta_many_files(target: &Path, files: u64) -> u64 {
    let o = scratch();
    let j = o.path().join("m.json");
    let n = files.to_string();
    let (code, err, rss) = run_measured(&[
        "meta",
        "--ops",
        "create,delete",
        "--threads",
        "2",
        "--files",
        &n,
        "--file-size",
        "0",
        "--files-per-dir",
        "10000",
        "--json",
        s(&j),
        "-q",
        s(target),
    ]);
    assert_eq!(code, 0, "{err}");
    let v = json(&j);
    for p in phases(&v) {
        assert_eq!(p["ops"].as_u64(), Some(2 * files), "{}", p["op"]);
        assert_eq!(p["errors"].as_u64(), Some(0));
        let own = p["files"]["peak_rss_bytes"].as_u64().unwrap();
        assert!(own > 0 && own < RSS_BOUND_KIB * 1024, "{own}");
    }
    assert!(rss < RSS_BOUND_KIB, "peak RSS {rss} KiB with {files} files");
    assert_empty(target);
    rss
}

#[test]
fn meta_one_million_files() {
    // On a tmpfs with inodes to spare (the repository's ext4 otherwise).
    let m = tmpfs("size=1g,nr_inodes=1200000");
    let d = scratch();
    let target = m
        .as_ref()
        .map(|m| m.path().to_path_buf())
        .unwrap_or_else(|| d.path().to_path_buf());
    let small = meta_many_files(&target, 5_000);
    let big = meta_many_files(&target, 500_000);
    // Memory does not grow with the file count (a little slack for the
    // allocator and the kernel's accounting).
    assert!(big < small + 16 * 1024, "{small} KiB vs {big} KiB");
}

#[test]
fn a_long_run_cut_short_by_its_time_limit() {
    let t = scratch();
    let o = scratch();
    let j = o.path().join("r.json");
    // 64 GiB with O_SYNC would take many minutes here; 2 s are allowed.
    let (code, err, rss) = run_measured(&[
        "run",
        "--op",
        "write",
        "--threads",
        "2",
        "--size",
        "32g",
        "--xfer",
        "64k",
        "--sync",
        "each",
        "--time",
        "2s",
        "--json",
        s(&j),
        "-q",
        s(t.path()),
    ]);
    assert_eq!(code, 0, "{err}");
    let v = json(&j);
    let p = &phases(&v)[0];
    assert_eq!(p["time_limited"], true, "{p}");
    assert_eq!(v["interrupted"], false);
    let bytes = p["bytes"].as_u64().unwrap();
    assert!(bytes > 0 && bytes < 64 << 30, "{bytes}");
    assert_eq!(bytes % (64 * K), 0, "whole transfers only: {bytes}");
    let el = p["elapsed_s"].as_f64().unwrap();
    assert!(el >= 1.9, "stopped at {el} s, before its limit");
    assert!(rss < RSS_BOUND_KIB, "peak RSS {rss} KiB");
    assert_empty(t.path());

    // Its peak RSS is that of a tiny run: memory is independent of size.
    let (code, err, small) = run_measured(&[
        "run",
        "--op",
        "write",
        "--threads",
        "2",
        "--size",
        "64k",
        "--xfer",
        "64k",
        "-q",
        s(t.path()),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(rss < small + 16 * 1024, "{small} KiB vs {rss} KiB");
}
