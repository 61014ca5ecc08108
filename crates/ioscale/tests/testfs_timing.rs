//! Known answers from the test FUSE file system: an injected delay must
//! show up as the reported latency, a file system that serves requests
//! concurrently must let more workers go faster, and a bandwidth cap must
//! hold. These bound what the test file system injects, loosely enough for
//! a noisy 2-core VM; they are not claims about ioscale's own speed.
//!
//! The tests in this file take turns (a lock), so they do not load the
//! CPUs under one another.

mod common;

use std::path::Path;
use std::sync::Mutex;

use common::fuse::TestFs;
use common::*;
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs one write phase and returns its record.
fn write_phase(mnt: &Path, threads: u32, size: &str, xfer: &str) -> Value {
    let o = scratch();
    let j = o.path().join("r.json");
    let t = threads.to_string();
    let out = run(&[
        "run",
        "--op",
        "write",
        "--threads",
        &t,
        "--size",
        size,
        "--xfer",
        xfer,
        "--json",
        s(&j),
        s(mnt),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    phases(&v)[0].clone()
}

#[test]
fn injected_delay_is_the_reported_latency() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&["--delay", "5ms"]) else {
        return;
    };
    // 16 requests of 64 KiB, one at a time.
    let p = write_phase(fs.path(), 1, "1m", "64k");
    check_phase(&p, "write", 1, M, 64 * K);
    let p50 = p["lat_us"]["p50"].as_f64().unwrap();
    assert!(p50 >= 5000.0, "p50 {p50} µs is below the injected 5 ms");
    assert!(
        p50 < 50_000.0,
        "p50 {p50} µs is far above the injected 5 ms"
    );
    assert_empty(fs.source());
}

#[test]
fn requests_are_served_concurrently() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&["--delay", "5ms"]) else {
        return;
    };
    // The same work per worker: 32 requests of 64 KiB at 5 ms or more each.
    // One worker needs at least 160 ms; eight take about as long if the
    // file system serves them at once (the known answer is about 8x).
    let one = write_phase(fs.path(), 1, "2m", "64k");
    let eight = write_phase(fs.path(), 8, "2m", "64k");
    let b1 = one["bw_mib_s"].as_f64().unwrap();
    let b8 = eight["bw_mib_s"].as_f64().unwrap();
    eprintln!(
        "1 worker {b1:.1} MiB/s, 8 workers {b8:.1} MiB/s ({:.1}x)",
        b8 / b1
    );
    assert!(
        b8 >= 3.0 * b1,
        "8 workers reached {b8:.1} MiB/s, not 3x the {b1:.1} MiB/s of one: \
         the test file system is not serving requests concurrently"
    );
    assert_empty(fs.source());
}

#[test]
fn bandwidth_cap_holds() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&["--bw", "20m"]) else {
        return;
    };
    // 32 MiB in all through a 20 MiB/s link: about 1.6 s.
    let p = write_phase(fs.path(), 8, "4m", "256k");
    check_phase(&p, "write", 8, 32 * M, 256 * K);
    let bw = p["bw_mib_s"].as_f64().unwrap();
    eprintln!("8 workers through a 20 MiB/s cap: {bw:.1} MiB/s");
    assert!(bw <= 25.0, "{bw:.1} MiB/s through a 20 MiB/s cap");
    assert!(bw > 0.0);
    assert_empty(fs.source());
}

#[test]
fn the_meta_stonewall_counts_what_was_done_when_the_first_thread_finished() {
    let _t = turn();
    // Thread 3's directory is slow: every lookup and create there takes
    // 20 ms or more, so by the time a fast thread has made its 30 files,
    // thread 3 has made at most (time so far ÷ 40 ms) + 1.
    let Some(fs) = TestFs::mount(&[
        "--meta-delay",
        "20ms",
        "--meta-delay-path-substr",
        "thr.003",
    ]) else {
        return;
    };
    let o = scratch();
    let j = o.path().join("m.json");
    let out = run(&[
        "meta",
        "--ops",
        "create",
        "--threads",
        "4",
        "--files",
        "30",
        "--json",
        s(&j),
        s(fs.path()),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    let p = &phases(&v)[0];
    let f = &p["files"];
    assert_eq!(f["processed"], 120, "{f}");
    let sw_files = f["stonewall_files"].as_u64().unwrap();
    let sw_s = p["stonewall"]["s"].as_f64().unwrap();
    let elapsed = p["elapsed_s"].as_f64().unwrap();
    let slow_most = (sw_s / 0.040).floor() as u64 + 1;
    eprintln!("stonewall {sw_files} files in {sw_s:.3} s of {elapsed:.3} s");
    assert!(sw_s < elapsed, "{sw_s} {elapsed}");
    // The first to finish made all 30; the slow thread at most slow_most.
    assert!(sw_files >= 30, "{f}");
    assert!(
        sw_files <= 90 + slow_most,
        "{sw_files} > 90 + {slow_most}: {f}"
    );
    let rate = f["stonewall_files_s"].as_f64().unwrap();
    assert!(
        (rate * sw_s - sw_files as f64).abs() < 1.0,
        "{rate} × {sw_s}"
    );
    // The slow thread really was slow: 30 files at 40 ms or more each.
    let slow = f["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["thread"] == 3)
        .unwrap();
    assert!(slow["elapsed_s"].as_f64().unwrap() >= 1.2, "{slow}");
    assert_empty(fs.source());
}
