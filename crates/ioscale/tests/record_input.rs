//! Issue 13, item 8: `report`, `compare` and `sweep --resume` read a record
//! only from a regular file of at most 1 GiB (exit 2 otherwise, before any
//! read: `/dev/zero` and a FIFO are refused at once instead of read
//! forever or waited on), and parse it as a stream, so a large valid
//! record needs memory of the order of the record, not many times it.

mod common;
#[path = "support/rel.rs"]
mod rel;

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use rel::*;

/// Runs `ioscale args` to the end and returns its exit code and peak
/// resident set size in bytes (wait4's rusage of that child alone).
// wait4 below reaps the child (Child::wait would lose its rusage).
#[allow(clippy::zombie_processes)]
fn peak_rss(args: &[&str]) -> (i32, u64) {
    let child = Command::new(ioscale_path())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, which nothing else reaps.
    let rc = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut ru) };
    assert_eq!(rc, child.id() as libc::pid_t, "wait4");
    let st = std::process::ExitStatus::from_raw(status);
    // ru_maxrss is in KiB on Linux.
    (st.code().unwrap_or(-1), ru.ru_maxrss as u64 * 1024)
}

/// A valid run record of about `mib` MiB: a real run's record with its
/// write phase given many workers (as a run of that many workers has).
fn large_record(dir: &Path, mib: usize) -> std::path::PathBuf {
    let j = dir.join("small.json");
    let data = dir.join("data");
    std::fs::create_dir(&data).unwrap();
    let out = run(&[
        "run",
        "--op",
        "write",
        "--xfer",
        "4k",
        "--size",
        "64k",
        "--json",
        s(&j),
        "-q",
        s(&data),
    ]);
    assert_code(&out, 0);
    let mut v = json(&j);
    let w = v["phases"][0]["workers"][0].clone();
    // Written piece by piece: this process stays small, since a child's
    // peak RSS starts from its parent's at the fork.
    v["phases"][0]["workers"] = serde_json::json!(["@workers@"]);
    let text = serde_json::to_string(&v).unwrap();
    let (head, tail) = text.split_once("\"@workers@\"").unwrap();
    let big = dir.join("big.json");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
    f.write_all(head.as_bytes()).unwrap();
    let mut written = 0;
    let mut i = 0u64;
    while written < mib << 20 {
        let mut x = w.clone();
        x["worker"] = serde_json::json!(i);
        let one = serde_json::to_vec(&x).unwrap();
        if i > 0 {
            f.write_all(b",").unwrap();
        }
        f.write_all(&one).unwrap();
        written += one.len() + 1;
        i += 1;
    }
    f.write_all(tail.as_bytes()).unwrap();
    f.flush().unwrap();
    big
}

#[test]
fn a_large_record_is_read_in_memory_of_its_order() {
    let t = scratch();
    let big = large_record(t.path(), 20);
    let size = std::fs::metadata(&big).unwrap().len();
    for args in [
        vec!["report", s(&big)],
        vec!["report", "--format", "csv", s(&big)],
        vec!["compare", s(&big), s(&big)],
    ] {
        let (code, rss) = peak_rss(&args);
        assert_eq!(code, 0, "{args:?}");
        eprintln!("{args:?}: peak RSS {rss} bytes, record {size} bytes");
        // The parsed record plus the program itself: at most three times
        // the record and 40 MiB. Parsing into a tree of JSON values first
        // took seven times the record.
        let bound = 3 * size + (40 << 20);
        assert!(
            rss < bound,
            "{args:?}: peak RSS {rss} bytes for a record of {size} bytes (bound {bound})"
        );
    }
}

/// Runs `args` and requires exit 2 with `want` on stderr; a read that
/// never ends (the old `/dev/zero`, a FIFO without a writer) fails the
/// test after 60 s instead of hanging it.
fn refused(args: &[&str], want: &str) {
    let child = spawn(args);
    let out = finish(child, Duration::from_secs(60));
    assert_code(&out, 2);
    assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
}

#[test]
fn non_regular_and_oversized_records_are_refused() {
    let t = scratch();
    let d = t.path();
    let fifo = d.join("fifo");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let chr = "is a character device";
    refused(&["report", "/dev/zero"], chr);
    refused(&["report", s(&fifo)], "is a FIFO");
    refused(&["report", s(d)], "is a directory");
    refused(&["compare", "/dev/zero", "/dev/zero"], chr);
    refused(&["compare", s(&fifo), s(&fifo)], "is a FIFO");
    let target = d.join("t");
    std::fs::create_dir(&target).unwrap();
    for j in ["/dev/zero", s(&fifo)] {
        refused(
            &[
                "sweep",
                "--resume",
                "--json",
                j,
                "--threads",
                "1,2",
                "--",
                "run",
                "--op",
                "write",
                "--xfer",
                "4k",
                "--size",
                "64k",
                s(&target),
            ],
            "--json",
        );
    }
    assert_empty(&target);
    // One byte over the documented limit (a sparse file: no disk used).
    let huge = d.join("huge.json");
    let f = std::fs::File::create(&huge).unwrap();
    f.set_len((1 << 30) + 1).unwrap();
    refused(&["report", s(&huge)], "1073741824 bytes");
    refused(&["compare", s(&huge), s(&huge)], "1073741824 bytes");
}

#[test]
fn impossible_figures_in_a_record_are_refused_naming_the_field() {
    // A record edited or damaged after the run: a negative or zero-free
    // duration, a rate the bytes and seconds cannot give, a worker count of
    // 0. Before, `report` printed it and `compare` called a bandwidth of
    // 1e308 "a geometric mean 2.3e155× … no clear difference", exit 0.
    let t = scratch();
    let d = t.path();
    let data = d.join("data");
    std::fs::create_dir(&data).unwrap();
    let good = d.join("good.json");
    let out = run(&[
        "run",
        "--xfer",
        "4k",
        "--size",
        "64k",
        "--reps",
        "2",
        "--json",
        s(&good),
        "-q",
        s(&data),
    ]);
    assert_code(&out, 0);
    let rec = json(&good);
    let cases: &[(&str, serde_json::Value, &str)] = &[
        ("elapsed_s", serde_json::json!(-1.0), "phases[1].elapsed_s"),
        ("bw_mib_s", serde_json::json!(1e308), "phases[1].bw_mib_s"),
        ("iops", serde_json::json!(-5.0), "phases[1].iops"),
        ("threads", serde_json::json!(0), "phases[1].threads"),
        ("cpu_sys_s", serde_json::json!(-0.5), "phases[1].cpu_sys_s"),
    ];
    for (field, value, names) in cases {
        let mut bad = rec.clone();
        bad["phases"][1][*field] = value.clone();
        let p = d.join(format!("bad-{field}.json"));
        std::fs::write(&p, serde_json::to_vec(&bad).unwrap()).unwrap();
        for args in [vec!["report", s(&p)], vec!["compare", s(&good), s(&p)]] {
            let out = run(&args);
            assert_code(&out, 2);
            let err = stderr(&out);
            assert!(
                err.contains(names) && err.contains(s(&p)),
                "{args:?}: {err}"
            );
        }
    }
    // The latency summary too.
    let mut bad = rec.clone();
    bad["phases"][0]["lat_us"]["p99"] = serde_json::json!(-3.0);
    let p = d.join("bad-lat.json");
    std::fs::write(&p, serde_json::to_vec(&bad).unwrap()).unwrap();
    let out = run(&["report", s(&p)]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("phases[0].lat_us.p99"),
        "{}",
        stderr(&out)
    );
    // The summary is the phases' own, never the record's word for it: a
    // record without phases has no summary rows.
    let mut bare = rec.clone();
    bare["phases"] = serde_json::json!([]);
    let p = d.join("bare.json");
    std::fs::write(&p, serde_json::to_vec(&bare).unwrap()).unwrap();
    let out = run(&["report", s(&p)]);
    assert_code(&out, 0);
    let text = stdout(&out);
    assert!(!text.lines().any(|l| l.starts_with("write ")), "{text}");
    // A sweep record: each point's run record is checked the same way.
    let sw = d.join("sweep.json");
    let out = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--json",
        s(&sw),
        "-q",
        "--",
        "run",
        "--op",
        "write",
        "--xfer",
        "4k",
        "--size",
        "64k",
        s(&data),
    ]);
    assert_code(&out, 0);
    let mut bad = json(&sw);
    bad["points"][1]["result"]["phases"][0]["elapsed_s"] = serde_json::json!(-2.0);
    let p = d.join("bad-sweep.json");
    std::fs::write(&p, serde_json::to_vec(&bad).unwrap()).unwrap();
    for args in [vec!["report", s(&p)], vec!["compare", s(&sw), s(&p)]] {
        let out = run(&args);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains("points[1].result.phases[0].elapsed_s"),
            "{err}"
        );
    }
    let mut bad = json(&sw);
    bad["points"][0]["ops"][0]["bw_mib_s"]["mean"] = serde_json::json!(1e9);
    std::fs::write(&p, serde_json::to_vec(&bad).unwrap()).unwrap();
    let out = run(&["report", s(&p)]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("points[0].ops[0].bw_mib_s.mean"),
        "{}",
        stderr(&out)
    );
    let out = run(&["report", s(&sw)]);
    assert_code(&out, 0);
}

/// Traced FUSE requests for a metadata phase of `files` files: 2 requests
/// a file, each answered in 1 ms.
fn traced(files: u64) -> serde_json::Value {
    serde_json::json!({
        "connection": 40,
        "waiting_avg": null,
        "waiting_max": null,
        "max_background": null,
        "max_read": null,
        "requests": {
            "write": {"count": 0, "bytes": 0, "mean_bytes": 0.0, "max_bytes": 0},
            "read": {"count": 0, "bytes": 0, "mean_bytes": 0.0, "max_bytes": 0},
            "other": {"FUSE_CREATE": files, "FUSE_LOOKUP": files},
            "other_replies": {
                "FUSE_CREATE": {"answered": files, "errors": 0, "time_s": files as f64 * 1e-3},
                "FUSE_LOOKUP": {"answered": files, "errors": 0, "time_s": files as f64 * 1e-3}
            },
            "lost_events": 0
        }
    })
}

#[test]
fn impossible_measured_resources_in_a_record_are_refused_naming_the_field() {
    // What a phase used (`probes[].resources`, io500's
    // `phases[].resources`) is checked as the phases' figures are: before,
    // a request count of 2^64-1 panicked `report` (exit 101) and a
    // negative or 1e30 s send-to-reply time was printed as measured; an
    // operation's own `ops[].resources` was taken at its word.
    let t = scratch();
    let d = t.path();
    let data = d.join("data");
    std::fs::create_dir(&data).unwrap();
    let sw = d.join("m.json");
    let out = run(&[
        "sweep",
        "--threads",
        "1",
        "-q",
        "--json",
        s(&sw),
        "--",
        "meta",
        "--ops",
        "create",
        "--files",
        "20",
        s(&data),
    ]);
    assert_code(&out, 0);
    let mut rec = json(&sw);
    // As if the phase had run on a traced FUSE mount.
    rec["host"]["fs_type"] = "fuse.ioscale-testfs".into();
    rec["points"][0]["result"]["host"]["fs_type"] = "fuse.ioscale-testfs".into();
    rec["points"][0]["probes"][0]["resources"]["fuse"] = traced(20);
    rec["points"][0]["ops"][0]["resources"]["fuse"] = traced(20);
    let good = d.join("good.json");
    std::fs::write(&good, serde_json::to_vec(&rec).unwrap()).unwrap();
    let out = run(&["report", s(&good)]);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("as 2.0 requests"), "{}", stdout(&out));
    let at = "points[0].probes[0].resources.fuse.requests";
    let cases: &[(&str, serde_json::Value, String)] = &[
        (
            "/other/FUSE_CREATE",
            serde_json::json!(u64::MAX),
            format!("{at}.other.FUSE_CREATE"),
        ),
        (
            "/other_replies/FUSE_CREATE/time_s",
            serde_json::json!(-5.0),
            format!("{at}.other_replies.FUSE_CREATE.time_s"),
        ),
        (
            "/other_replies/FUSE_CREATE/time_s",
            serde_json::json!(1e30),
            format!("{at}.other_replies.FUSE_CREATE.time_s"),
        ),
        (
            "/other_replies/FUSE_LOOKUP/answered",
            serde_json::json!(21),
            format!("{at}.other_replies.FUSE_LOOKUP.answered"),
        ),
    ];
    for (path, value, names) in cases {
        let mut bad = rec.clone();
        *bad["points"][0]["probes"][0]["resources"]["fuse"]["requests"]
            .pointer_mut(path)
            .unwrap() = value.clone();
        let p = d.join("bad.json");
        std::fs::write(&p, serde_json::to_vec(&bad).unwrap()).unwrap();
        let out = run(&["report", s(&p)]);
        assert_no_panic(&out);
        assert_code(&out, 2);
        assert!(
            stderr(&out).contains(names.as_str()),
            "{path}: {}",
            stderr(&out)
        );
    }
    // An operation's resources are its probes': a tampered copy is not read.
    let mut bad = rec.clone();
    bad["points"][0]["ops"][0]["resources"]["fuse"]["requests"]["other"]["FUSE_CREATE"] =
        serde_json::json!(u64::MAX);
    let p = d.join("ops.json");
    std::fs::write(&p, serde_json::to_vec(&bad).unwrap()).unwrap();
    let out = run(&["report", s(&p)]);
    assert_no_panic(&out);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("as 2.0 requests"), "{}", stdout(&out));
}

/// A run record (`run`, 2 repetitions) and a sweep record (threads 1,2,4)
/// of a small write-and-read workload in `d`.
fn small_records(d: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let data = d.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let rec = d.join("run.json");
    let out = run(&[
        "run",
        "--xfer",
        "4k",
        "--size",
        "64k",
        "--reps",
        "2",
        "--json",
        s(&rec),
        "-q",
        s(&data),
    ]);
    assert_code(&out, 0);
    let sw = d.join("sweep.json");
    let out = run(&sweep_args(&sw, &data, false));
    assert_code(&out, 0);
    (rec, sw)
}

/// The record of `meta --files 20 --threads 2` on `d/tree`, saved in
/// `d/meta.json`.
fn meta_record(d: &Path) -> std::path::PathBuf {
    let tree = d.join("tree");
    std::fs::create_dir(&tree).unwrap();
    let meta = d.join("meta.json");
    let out = run(&[
        "meta",
        "--files",
        "20",
        "--threads",
        "2",
        "--json",
        s(&meta),
        "-q",
        s(&tree),
    ]);
    assert_code(&out, 0);
    meta
}

/// `sweep --threads 1,2,4` of a small write into `data`, saved in `sw`.
fn sweep_args<'a>(sw: &'a Path, data: &'a Path, resume: bool) -> Vec<&'a str> {
    let mut a = vec!["sweep", "--threads", "1,2,4", "--json", s(sw), "-q"];
    if resume {
        a.push("--resume");
    }
    a.extend(["--", "run", "--xfer", "4k", "--size", "64k", s(data)]);
    a
}

/// Writes `v` to `d/name` and requires `report` and `compare` (against
/// `good`) to refuse it: exit 2, naming the file and `field`.
fn refused_edit(d: &Path, good: &Path, name: &str, v: &serde_json::Value, field: &str) {
    let p = d.join(name);
    std::fs::write(&p, serde_json::to_vec(v).unwrap()).unwrap();
    let html = d.join(format!("{name}.html"));
    for args in [
        vec!["report", s(&p)],
        vec!["report", "-q", s(&p), "--html", s(&html)],
        vec!["compare", s(good), s(&p)],
    ] {
        let out = run(&args);
        assert_no_panic(&out);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains(field) && err.contains(s(&p)),
            "{args:?}: {err}"
        );
    }
    assert!(!html.exists(), "{name}: an HTML page was written");
}

#[test]
fn a_repetition_number_no_run_has_is_refused_not_a_panic() {
    // `rep` 4294967295 would be the 2^32-th repetition: repetitions count
    // in 32 bits, so no run writes it. Before: every reader panicked
    // (`attempt to add with overflow`, exit 101) counting repetitions.
    let t = scratch();
    let d = t.path();
    let (rec, sw) = small_records(d);
    let mut bad = json(&rec);
    bad["phases"][3]["rep"] = serde_json::json!(u32::MAX);
    refused_edit(d, &rec, "rep.json", &bad, "phases[3].rep");
    let mut bad = json(&sw);
    bad["points"][1]["result"]["phases"][0]["rep"] = serde_json::json!(u32::MAX);
    refused_edit(
        d,
        &sw,
        "sweep-rep.json",
        &bad,
        "points[1].result.phases[0].rep",
    );
}

#[test]
fn latency_percentiles_out_of_order_are_refused() {
    // Every percentile of a phase comes from one histogram, clamped into
    // the exact [min, max]: min <= p50 <= p99 <= p99.9 <= max. Before, a
    // p50 of 1 s above a p99 of 0.1 ms was printed, and the analysis said
    // "the measured median is 500 ms".
    let t = scratch();
    let d = t.path();
    let (rec, _) = small_records(d);
    for (field, v) in [("p50", 1e6), ("min", 1e7), ("p999", 0.0), ("max", 0.0)] {
        let mut bad = json(&rec);
        bad["phases"][0]["lat_us"][field] = serde_json::json!(v);
        refused_edit(
            d,
            &rec,
            &format!("lat-{field}.json"),
            &bad,
            "phases[0].lat_us",
        );
    }
}

#[test]
fn a_record_with_no_workers_in_its_spec_is_refused() {
    // `spec.threads` 0: the HTML and the analysis said "3399 MiB/s at 0
    // workers", "Per-operation latency ≈ 0 ns", "one worker cannot exceed
    // inf operations/s".
    let t = scratch();
    let d = t.path();
    let (rec, _) = small_records(d);
    let mut bad = json(&rec);
    bad["spec"]["threads"] = serde_json::json!(0);
    refused_edit(d, &rec, "spec-threads.json", &bad, "spec.threads");
}

#[test]
fn impossible_failed_phases_and_file_counts_are_refused() {
    // A failed phase's partial figures were printed as they stood
    // ("after 1 bytes … in -3.000 s"), and a metadata phase's share of
    // requested files was printed whatever its counts said ("100.00% …
    // (100 of 18446744073709551615)", or a percentage of 1e308).
    let t = scratch();
    let d = t.path();
    let (rec, _) = small_records(d);
    let failed = |elapsed: f64, threads: u32| {
        serde_json::json!([{"op": "write", "rep": 0, "threads": threads, "partial_bytes": 1,
            "partial_ops": 1, "partial_elapsed_s": elapsed, "errors": 1}])
    };
    let mut bad = json(&rec);
    bad["failed_phases"] = failed(-3.0, 1);
    refused_edit(
        d,
        &rec,
        "failed-neg.json",
        &bad,
        "failed_phases[0].partial_elapsed_s",
    );
    let mut bad = json(&rec);
    bad["failed_phases"] = failed(0.5, 0);
    refused_edit(
        d,
        &rec,
        "failed-threads.json",
        &bad,
        "failed_phases[0].threads",
    );

    let meta = meta_record(d);
    let cases = [
        ("requested", serde_json::json!(u64::MAX)),
        ("processed_pct", serde_json::json!(1e308)),
        ("stonewall_files_s", serde_json::json!(-1.0)),
    ];
    for (field, v) in cases {
        let mut bad = json(&meta);
        bad["phases"][0]["files"][field] = v;
        refused_edit(
            d,
            &meta,
            &format!("files-{field}.json"),
            &bad,
            "phases[0].files.",
        );
    }
    let mut bad = json(&meta);
    bad["phases"][0]["files"]["threads"][1]["elapsed_s"] = serde_json::json!(-2.0);
    refused_edit(
        d,
        &meta,
        "files-thread.json",
        &bad,
        "phases[0].files.threads[1].elapsed_s",
    );
}

#[test]
fn a_sweep_record_with_repeated_or_extra_points_is_refused() {
    // A point copied twice, or more points than the sweep has. Before:
    // `report` printed "3 of 2 points" with the repeated rows, and `sweep
    // --resume` kept both copies ("3 of 3 points already done"), ran the
    // point missing and saved a record of 4 points for a 3-point sweep.
    let t = scratch();
    let d = t.path();
    let (_, sw) = small_records(d);
    let good = json(&sw);
    let mut dup = good.clone();
    let first = dup["points"][0].clone();
    dup["points"][1] = first;
    refused_edit(d, &sw, "dup.json", &dup, "points[1].index");
    let mut over = good.clone();
    over["points_total"] = serde_json::json!(2);
    refused_edit(d, &sw, "over.json", &over, "points[2].index");
    // --resume refuses it too, and leaves the record as it was.
    let data = d.join("data");
    let p = d.join("dup.json");
    let before = std::fs::read(&p).unwrap();
    let out = run(&sweep_args(&p, &data, true));
    assert_code(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("points[1].index") && err.contains("--resume"),
        "{err}"
    );
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

#[test]
fn report_never_writes_over_the_record_it_reads() {
    // `report REC --html REC`: the HTML page replaced the record, exit 0,
    // and the record was gone (`report` of it then: "not an ioscale
    // results record"). Likewise `--csv`, and through another spelling or
    // a symbolic link.
    let t = scratch();
    let d = t.path();
    let (rec, sw) = small_records(d);
    let link = d.join("link.json");
    std::os::unix::fs::symlink(&sw, &link).unwrap();
    let dotted = format!("{}/./run.json", s(d));
    for (input, flag, out) in [
        (s(&rec), "--html", s(&rec).to_string()),
        (s(&rec), "--csv", dotted.clone()),
        (s(&sw), "--csv", s(&sw).to_string()),
        (s(&sw), "--html", s(&link).to_string()),
        (s(&link), "--html", s(&sw).to_string()),
    ] {
        let before = std::fs::read(&rec).unwrap();
        let before_sw = std::fs::read(&sw).unwrap();
        let o = run(&["report", "-q", input, flag, &out]);
        assert_code(&o, 2);
        let err = stderr(&o);
        assert!(err.contains(flag) && err.contains("record"), "{err}");
        assert_eq!(std::fs::read(&rec).unwrap(), before, "{input} {flag} {out}");
        assert_eq!(
            std::fs::read(&sw).unwrap(),
            before_sw,
            "{input} {flag} {out}"
        );
    }
    // A --png directory that is a file is refused before any output is
    // written (before: the HTML was written, then "File exists", exit 1).
    let html = d.join("page.html");
    let o = run(&["report", "-q", s(&sw), "--html", s(&html), "--png", s(&rec)]);
    assert_code(&o, 2);
    assert!(stderr(&o).contains("--png"), "{}", stderr(&o));
    assert!(!html.exists());
}

/// Starts the sweep of [`sweep_args`] held after its first point (the
/// `IOSCALE_TEST_SWEEP_HOLD` hook) and waits until it is held there.
fn held_sweep(d: &Path, sw: &Path) -> (std::process::Child, std::path::PathBuf) {
    let data = d.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let hold = d.join("hold");
    std::fs::write(&hold, b"").unwrap();
    let mut held = hold.clone().into_os_string();
    held.push(".held");
    let held = std::path::PathBuf::from(held);
    let mut child = spawn_env(
        &sweep_args(sw, &data, false),
        &[("IOSCALE_TEST_SWEEP_HOLD", s(&hold))],
    );
    wait_until(&mut child, "the first point", || held.exists());
    (child, hold)
}

#[test]
fn a_sweep_record_swapped_for_a_link_mid_sweep_is_not_followed() {
    // Between two points the record is moved away and a link to another
    // file put in its place. Before: the next rewrite of the record
    // followed the link and replaced the other file with the sweep's
    // record, exit 0. Now the record's place is the one found at the
    // start; the link is refused (exit 1, naming --json), never followed.
    let t = scratch();
    let d = t.path();
    let sw = d.join("sweep.json");
    let victim = d.join("victim.txt");
    std::fs::write(&victim, b"precious\n").unwrap();
    let (child, hold) = held_sweep(d, &sw);
    std::fs::rename(&sw, d.join("moved.json")).unwrap();
    std::os::unix::fs::symlink(&victim, &sw).unwrap();
    std::fs::remove_file(&hold).unwrap();
    let out = finish(child, Duration::from_secs(120));
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("--json") && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious\n");
    assert!(std::fs::symlink_metadata(&sw)
        .unwrap()
        .file_type()
        .is_symlink());
    // The lock beside the record is gone with the sweep.
    assert!(!d.join("sweep.json.lock").exists());
}

#[test]
fn a_second_sweep_on_a_record_being_written_is_refused() {
    // Two sweeps with one --json at once (the same line run twice, or a
    // --resume while the first still runs). Before: both ran and each
    // rewrote the record with its own points, so whichever wrote last
    // dropped the other's. Now the second is refused at its start (exit 2,
    // naming the holder), and the first finishes with every point.
    let t = scratch();
    let d = t.path();
    let sw = d.join("sweep.json");
    let (child, hold) = held_sweep(d, &sw);
    let data = d.join("data");
    for resume in [false, true] {
        let before = std::fs::read(&sw).unwrap();
        let out = run(&sweep_args(&sw, &data, resume));
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains("--json") && err.contains("another command is writing"),
            "{err}"
        );
        assert!(err.contains(&format!("pid {}", child.id())), "{err}");
        assert_eq!(std::fs::read(&sw).unwrap(), before);
    }
    std::fs::remove_file(&hold).unwrap();
    let out = finish(child, Duration::from_secs(120));
    assert_code(&out, 0);
    let rec = json(&sw);
    assert_eq!(rec["points"].as_array().unwrap().len(), 3);
    assert!(!d.join("sweep.json.lock").exists());
    // A lock left by a sweep killed outright is stale: the next one runs.
    let (mut child, hold) = held_sweep(d, &sw);
    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::remove_file(&hold).unwrap();
    let out = run(&sweep_args(&sw, &data, true));
    assert_code(&out, 0);
    assert_eq!(json(&sw)["points"].as_array().unwrap().len(), 3);
}

#[test]
fn a_signal_while_resume_reads_the_record_removes_the_lock() {
    // SIGTERM (or a Ctrl-C) after the sweep took its lock, while --resume
    // still read a large record. Before: the signal handlers went in only
    // after that read, so the signal killed the sweep outright: no exit
    // 130, no message, and sweep.json.lock left beside the record. Now the
    // handlers are in before the lock: the sweep stops before its next
    // point, keeps the saved one, removes the lock and exits 130.
    let t = scratch();
    let d = t.path();
    let sw = d.join("sweep.json");
    let data = d.join("data");
    std::fs::create_dir(&data).unwrap();
    assert_code(&run(&sweep_args(&sw, &data, false)), 0);
    // One point kept, and a command line long enough (30 MB) that reading
    // the record back takes a while.
    // Written piece by piece, as `large_record` does: a child's peak RSS
    // starts from its parent's at the spawn, and a 30 MB string held here
    // pushed the memory test of this file over its bound.
    let mut rec = json(&sw);
    rec["points"].as_array_mut().unwrap().truncate(1);
    rec["command"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::Value::String("@long@".into()));
    let text = serde_json::to_string(&rec).unwrap();
    drop(rec);
    let (head, tail) = text.split_once("@long@").unwrap();
    let mut f = std::io::BufWriter::new(std::fs::File::create(&sw).unwrap());
    f.write_all(head.as_bytes()).unwrap();
    let mib = vec![b'x'; 1 << 20];
    for _ in 0..30 {
        f.write_all(&mib).unwrap();
    }
    f.write_all(tail.as_bytes()).unwrap();
    f.flush().unwrap();
    drop(f);
    let lock = d.join("sweep.json.lock");
    let mut child = spawn(&sweep_args(&sw, &data, true));
    wait_until(&mut child, "the lock", || lock.exists());
    signal(&child, libc::SIGTERM);
    let out = finish(child, Duration::from_secs(600));
    assert_code(&out, 130);
    assert!(!lock.exists(), "the lock was left behind");
    // Read without holding the long command line (serde skips it).
    #[derive(serde::Deserialize)]
    struct Kept {
        points: Vec<serde::de::IgnoredAny>,
        stop_reason: Option<String>,
    }
    let f = std::io::BufReader::new(std::fs::File::open(&sw).unwrap());
    let rec: Kept = serde_json::from_reader(f).unwrap();
    assert!(!rec.points.is_empty());
    assert_eq!(rec.stop_reason.as_deref(), Some("interrupted by SIGTERM"));
}

#[test]
fn a_sweep_point_latency_its_phases_do_not_give_is_refused() {
    // A point's lat_p50_us / lat_p99_us (what the p99 rule, Little's law
    // and the table quote) were taken on the record's word: a median
    // edited to 1e308 us was quoted by report as "the measured median is
    // 99999...s", and a negative one read without a word (exit 0). They
    // must be what the point's phases give (exit 2, naming the field); a
    // record without them (older, or null) still reads.
    let t = scratch();
    let d = t.path();
    let sw = d.join("sweep.json");
    let data = d.join("data");
    std::fs::create_dir(&data).unwrap();
    assert_code(&run(&sweep_args(&sw, &data, false)), 0);
    let good = json(&sw);
    for (field, v) in [
        ("lat_p50_us", serde_json::json!(1e308)),
        ("lat_p50_us", serde_json::json!(-1.0)),
        ("lat_p99_us", serde_json::json!(1.7976931348623157e308)),
    ] {
        let mut bad = good.clone();
        bad["points"][0]["ops"][0][field] = v;
        refused_edit(
            d,
            &sw,
            "edited.json",
            &bad,
            &format!("points[0].ops[0].{field}"),
        );
    }
    let mut old = good.clone();
    for p in old["points"].as_array_mut().unwrap() {
        for o in p["ops"].as_array_mut().unwrap() {
            o.as_object_mut().unwrap().remove("lat_p99_us");
            o["lat_p50_us"] = serde_json::Value::Null;
        }
    }
    let p = d.join("old.json");
    std::fs::write(&p, serde_json::to_vec(&old).unwrap()).unwrap();
    assert_code(&run(&["report", s(&p)]), 0);
}

#[test]
fn a_planted_sweep_lock_is_named_in_the_refusal() {
    // Something other than ioscale's lock file at sweep.json.lock (a link,
    // a FIFO, a directory, a hard link to another file). The sweep was
    // refused (exit 2), but the error read "--json sweep.json: it is a
    // symbolic link", sending the user to a record that was a regular
    // file. It now names the lock; nothing planted is touched.
    let t = scratch();
    let d = t.path();
    let sw = d.join("sweep.json");
    let data = d.join("data");
    std::fs::create_dir(&data).unwrap();
    assert_code(&run(&sweep_args(&sw, &data, false)), 0);
    let record = std::fs::read(&sw).unwrap();
    let victim = d.join("victim.txt");
    std::fs::write(&victim, b"victim").unwrap();
    let lock = d.join("sweep.json.lock");
    for kind in ["symlink", "fifo", "dir", "hardlink"] {
        match kind {
            "symlink" => std::os::unix::fs::symlink(&victim, &lock).unwrap(),
            "fifo" => {
                let c = std::ffi::CString::new(s(&lock)).unwrap();
                // SAFETY: mkfifo(3) on a NUL-terminated path we own.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
            }
            "dir" => std::fs::create_dir(&lock).unwrap(),
            _ => std::fs::hard_link(&victim, &lock).unwrap(),
        }
        let out = run(&sweep_args(&sw, &data, true));
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains("--json") && err.contains("sweep.json.lock"),
            "{kind}: {err}"
        );
        assert_eq!(std::fs::read(&victim).unwrap(), b"victim", "{kind}");
        assert_eq!(std::fs::read(&sw).unwrap(), record, "{kind}");
        if kind == "dir" {
            std::fs::remove_dir(&lock).unwrap();
        } else {
            std::fs::remove_file(&lock).unwrap();
        }
    }
}

#[test]
fn compare_of_a_data_and_a_metadata_record_names_the_difference() {
    // `compare run.json meta.json` warned "meta and run ran different
    // workloads: 0 B per worker × 1 rep vs buffered, sync none": unlike
    // facts side by side, and "0 B per worker" for a metadata run whose
    // files held data. It now names the two kinds of workload.
    let t = scratch();
    let d = t.path();
    let (rec, _) = small_records(d);
    let meta = meta_record(d);
    for (a, b) in [(&rec, &meta), (&meta, &rec)] {
        let out = run(&["compare", s(a), s(b)]);
        assert_code(&out, 0);
        let text = format!("{}{}", stdout(&out), stderr(&out));
        assert!(
            text.contains("a metadata workload (meta)") && text.contains("a data workload (run)"),
            "{text}"
        );
        assert!(!text.contains("0 B per worker"), "{text}");
    }
}

#[test]
fn a_sweep_record_whose_repetitions_are_not_its_configs_is_refused() {
    // `config.reps` 0 (or below a point's repetitions): the header said
    // "0 rep(s) per point" above points of 1 and more, exit 0.
    let t = scratch();
    let d = t.path();
    let (_, sw) = small_records(d);
    let mut bad = json(&sw);
    bad["config"]["reps"] = serde_json::json!(0);
    refused_edit(d, &sw, "reps0.json", &bad, "config.reps");
    let mut bad = json(&sw);
    bad["points"][2]["result"]["phases"][0]["rep"] = serde_json::json!(1);
    refused_edit(d, &sw, "rep1.json", &bad, "points[2].result.phases[0].rep");
}

#[test]
fn a_stonewall_rate_its_bytes_and_seconds_do_not_give_is_refused() {
    // "stonewall: 4.06 MiB in 0.001499 s = 1000000000.0 MiB/s" was
    // printed as it stood; and a phase of 2^64-1 bytes in 1e-300 s (an
    // infinite rate) passed with any finite bw_mib_s, since the check
    // compared against infinity.
    let t = scratch();
    let d = t.path();
    let (rec, _) = small_records(d);
    let mut bad = json(&rec);
    bad["phases"][0]["stonewall"]["bw_mib_s"] = serde_json::json!(1e9);
    refused_edit(d, &rec, "sw-bw.json", &bad, "phases[0].stonewall.bw_mib_s");
    let mut bad = json(&rec);
    let p = &mut bad["phases"][0];
    p["bytes"] = serde_json::json!(u64::MAX);
    p["elapsed_s"] = serde_json::json!(1e-300);
    for f in ["bw_mib_s", "bw_mb_s", "iops"] {
        p[f] = serde_json::json!(1e308);
    }
    refused_edit(d, &rec, "inf-rate.json", &bad, "phases[0].bw_mib_s");
}

#[test]
fn unknown_operations_and_a_sweep_point_of_no_workers_are_refused() {
    // Issue 27. An operation no run has was accepted as a row of its own;
    // a sweep point of 0 workers was reported with exit 0 as "0 workers"
    // at "inf operations/s".
    let t = scratch();
    let d = t.path();
    let (rec, sw) = small_records(d);
    let mut bad = json(&rec);
    bad["phases"][1]["op"] = serde_json::json!("scribble");
    refused_edit(d, &rec, "op.json", &bad, "phases[1].op");
    let mut bad = json(&rec);
    bad["failed_phases"] = serde_json::json!([{"op": "erase", "rep": 0, "threads": 1,
        "partial_bytes": 1, "partial_ops": 1, "partial_elapsed_s": 0.5, "errors": 1}]);
    refused_edit(d, &rec, "failed-op.json", &bad, "failed_phases[0].op");
    // A metadata operation in a data run's record, and the other way.
    let mut bad = json(&rec);
    bad["phases"][0]["op"] = serde_json::json!("create");
    refused_edit(d, &rec, "meta-op.json", &bad, "phases[0].op");
    let meta = meta_record(d);
    let mut bad = json(&meta);
    bad["phases"][0]["op"] = serde_json::json!("randwrite");
    refused_edit(d, &meta, "data-op.json", &bad, "phases[0].op");
    let mut bad = json(&sw);
    bad["points"][1]["result"]["phases"][0]["op"] = serde_json::json!("scribble");
    refused_edit(
        d,
        &sw,
        "sweep-op.json",
        &bad,
        "points[1].result.phases[0].op",
    );
    let mut bad = json(&sw);
    bad["points"][0]["threads"] = serde_json::json!(0);
    refused_edit(d, &sw, "sweep-threads.json", &bad, "points[0].threads");
}

#[test]
fn a_record_with_a_huge_operation_name_stays_within_the_memory_bound() {
    // Before: `report` of a 100 MB name took 2.35 GB and aborted under a 2
    // GB address-space limit, copying the name into every row (24 MiB
    // here, to keep the test short: 359 MB before, against a bound of 112
    // MB). The documented bound is three times the record and 40 MiB.
    let t = scratch();
    let d = t.path();
    let (rec, _) = small_records(d);
    let mut v = json(&rec);
    v["phases"][0]["op"] = serde_json::json!("@op@");
    let text = serde_json::to_string(&v).unwrap();
    let (head, tail) = text.split_once("\"@op@\"").unwrap();
    // Written piece by piece: a child's peak RSS starts from this
    // process's at the spawn.
    let big = d.join("big-op.json");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
    f.write_all(head.as_bytes()).unwrap();
    f.write_all(b"\"").unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..24 {
        f.write_all(&chunk).unwrap();
    }
    f.write_all(b"\"").unwrap();
    f.write_all(tail.as_bytes()).unwrap();
    f.flush().unwrap();
    drop(f);
    let size = std::fs::metadata(&big).unwrap().len();
    for args in [vec!["report", s(&big)], vec!["compare", s(&rec), s(&big)]] {
        let (code, rss) = peak_rss(&args);
        assert_eq!(code, 2, "{args:?}");
        let bound = 3 * size + (40 << 20);
        eprintln!("{args:?}: peak RSS {rss} bytes, record {size} bytes");
        assert!(
            rss < bound,
            "{args:?}: peak RSS {rss} bytes for a record of {size} bytes (bound {bound})"
        );
    }
}
