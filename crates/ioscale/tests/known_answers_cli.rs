//! The known-answer matrix of issue 12 end to end: `ioscale sweep … --json`
//! on `ioscale-testfs` mounts (and tmpfs) whose right answer is known by
//! construction, asserting the verdict the binary stored in the record
//! (`analysis.curves[].verdict.kind` and `verdict.limiter.limit`). Each
//! case prints its verdict. The crate-level version with plain threads is
//! crates/testfs/tests/known_answers.rs; this one proves the wiring: the
//! driver's probes reach the analysis, failed repetitions are kept and
//! left out, workers are counted.
//!
//! A case whose figures show a measurably overloaded machine (ioscale's
//! threads waiting for a CPU more than 0.3 s per second, or other work
//! keeping more than half of the CPUs busy) is measured again, up to three
//! times, and otherwise reported as inconclusive with those figures. A
//! wrong verdict on an undisturbed machine fails. Cases 3 (one server
//! thread) and 4 (tmpfs) have no such escape: their answer holds on a busy
//! machine too, and a wrong verdict fails whatever the load (case 3 may
//! say "cannot tell" only when its repetitions are noisier than ±15 %).

mod common;

use std::path::Path;
use std::sync::Mutex;

use common::fuse::{tracefs, TestFs};
use common::*;
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `ioscale sweep` with `sweep` flags and the inner `run` words on
/// `dir`, returns the record; exit code `code` expected.
fn sweep(sweep: &[&str], inner: &[&str], dir: &Path, code: i32) -> Value {
    let o = scratch();
    let j = o.path().join("s.json");
    let mut args: Vec<&str> = vec!["sweep"];
    args.extend_from_slice(sweep);
    args.extend_from_slice(&["--quiet", "--json", s(&j), "--", "run"]);
    args.extend_from_slice(inner);
    args.push(s(dir));
    let out = run(&args);
    assert_code(&out, code);
    json(&j)
}

/// The one curve of a record.
fn curve(v: &Value) -> &Value {
    let c = v["analysis"]["curves"].as_array().unwrap();
    assert_eq!(c.len(), 1, "{:#}", v["analysis"]);
    &c[0]
}

fn kind(c: &Value) -> &str {
    c["verdict"]["kind"].as_str().unwrap_or("")
}

fn limit(c: &Value) -> &str {
    c["verdict"]["limiter"]["limit"].as_str().unwrap_or("")
}

/// Prints a record's analysis, and fails on a sentence that is not plain
/// (a clause said twice, parentheses inside parentheses: the rule of
/// `analysis::verdict::style_faults`).
fn show(case: &str, v: &Value) {
    for w in warnings(v) {
        println!("[{case}] warning: {w}");
    }
    for n in v["analysis"]["notes"].as_array().unwrap() {
        println!("[{case}] note: {}", n.as_str().unwrap());
    }
    for t in v["analysis"]
        .as_object()
        .into_iter()
        .flat_map(|a| a.values())
        .flat_map(texts)
    {
        let f = analysis::verdict::style_faults(&t);
        assert!(f.is_empty(), "[{case}] {f:?} in: {t}");
    }
    for c in v["analysis"]["curves"].as_array().unwrap() {
        println!(
            "[{case}] verdict ({}, limit {}): {}",
            kind(c),
            limit(c),
            c["verdict"]["text"].as_str().unwrap()
        );
        for p in c["points"].as_array().unwrap() {
            let f = |k: &str| p[k].as_f64().unwrap_or(0.0);
            let ci = |k: &str| p["ci"][k].as_f64().unwrap_or(0.0);
            println!(
                "[{case}]   {} workers: {:.1} (95% CI {:.1}–{:.1}, {} reps), p50 {:.0} µs, p99 {:.0} µs",
                p["threads"],
                f("value"),
                ci("lo"),
                ci("hi"),
                p["reps"],
                f("lat_p50_us"),
                f("lat_p99_us")
            );
        }
    }
    for c in v["analysis"]["comparisons"]
        .as_array()
        .into_iter()
        .flatten()
    {
        println!(
            "[{case}] compared (differ: {}): {}",
            c["differ"],
            c["sentence"].as_str().unwrap_or("")
        );
    }
}

/// Every sentence under a JSON value: its strings of more than one word.
fn texts(v: &Value) -> Vec<String> {
    match v {
        Value::String(t) if t.contains(' ') => vec![t.clone()],
        Value::Array(a) => a.iter().flat_map(texts).collect(),
        Value::Object(o) => o.values().flat_map(texts).collect(),
        _ => Vec::new(),
    }
}

/// Every warning of a sweep record, over its points.
fn warnings(v: &Value) -> Vec<String> {
    v["points"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| {
            p["result"]["warnings"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|w| w.as_str().unwrap().to_string())
        .collect()
}

/// Why the machine was too busy for a known answer, from the resources
/// the driver measured at each point.
fn disturbed(v: &Value) -> Option<String> {
    for p in v["points"].as_array().unwrap() {
        for o in p["ops"].as_array().unwrap() {
            let r = &o["resources"];
            if r.is_null() {
                continue;
            }
            let f = |k: &str| r[k].as_f64().unwrap_or(0.0);
            let daemon = r["fuse"]["daemon"]["cores"].as_f64().unwrap_or(0.0);
            let wait = f("self_cpu_wait");
            let other = f("machine_busy_cores") - f("self_cores") - daemon;
            if wait > 0.3 || other > 0.5 * f("cpus") {
                return Some(format!(
                    "at {} threads ioscale's threads waited for a CPU {wait:.2} s/s and other \
                     work used {other:.2} cores",
                    p["threads"]
                ));
            }
        }
    }
    None
}

/// Measures until the machine was not disturbed (3 attempts); `None` when
/// every attempt was: the case is inconclusive, and says why.
fn undisturbed(case: &str, mut measure: impl FnMut() -> Value) -> Option<Value> {
    for attempt in 1..=3 {
        let v = measure();
        match disturbed(&v) {
            None => return Some(v),
            Some(why) => {
                show(case, &v);
                println!("[{case}] attempt {attempt} disturbed: {why}");
            }
        }
    }
    println!("[{case}] note: inconclusive, the machine was busy with other work in all 3 attempts");
    None
}

/// Every point of a record carries what its phases used.
fn assert_probed(v: &Value) {
    for p in v["points"].as_array().unwrap() {
        for o in p["ops"].as_array().unwrap() {
            if o["reps"].as_u64().unwrap() > 0 {
                assert!(
                    o["resources"]["elapsed_s"].as_f64().unwrap() > 0.0,
                    "point {} has no resource measurement: {o:#}",
                    p["threads"]
                );
            }
        }
        assert!(!p["probes"].as_array().unwrap().is_empty());
    }
}

#[test]
fn case1_delay_is_latency_bound() {
    let _t = turn();
    // 10 ms: the client's own share of a request (the FUSE round trip and
    // ioscale, 0.4–0.9 ms here) stays well inside the 20 % Little's law
    // must land in, on a quiet machine and a busy one.
    let Some(fs) = TestFs::mount(&["--delay", "10ms"]) else {
        return;
    };
    let Some(v) = undisturbed("1 delay", || {
        sweep(
            &["--threads", "1,2,4,8", "--reps", "5", "--trim", "1"],
            &["--op", "write", "--size", "2560k", "--xfer", "64k"],
            fs.path(),
            0,
        )
    }) else {
        return;
    };
    show("1 delay", &v);
    assert_probed(&v);
    let c = curve(&v);
    assert_eq!(kind(c), "latency-bound", "{:#}", c["verdict"]);
    // One 64 KiB write is one FUSE request: Little's law recovers 10 ms.
    let w = c["little"][0]["latency_s"].as_f64().unwrap();
    assert!((w - 0.010).abs() <= 0.2 * 0.010, "Little's law {w} s");
}

#[test]
fn case2_bandwidth_cap_is_the_server() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&["--delay", "2ms", "--bw", "60m"]) else {
        return;
    };
    let Some(v) = undisturbed("2 bw cap", || {
        sweep(
            // Up to 32 workers: the cap must be seen flat past the count
            // that first reaches it (16 on a quiet machine, where 8 made
            // 52.5 MiB/s and 16 made 59.8), or "still rising" is the
            // honest answer.
            &["--threads", "1,2,4,8,16,32", "--reps", "3"],
            &["--op", "write", "--size", "1280k", "--xfer", "64k"],
            fs.path(),
            0,
        )
    }) else {
        return;
    };
    show("2 bw cap", &v);
    assert_probed(&v);
    let c = curve(&v);
    assert_eq!(kind(c), "saturated", "{:#}", c["verdict"]);
    assert_eq!(limit(c), "server", "{:#}", c["verdict"]);
    let peak = c["peak"].as_f64().unwrap();
    assert!((peak - 60.0).abs() <= 6.0, "peak {peak} MiB/s vs cap 60");
}

/// A server taking one request at a time is serialised on a quiet machine
/// and on a busy one alike (other work only enlarges the clients' share of
/// each request, which more workers overlap): no "inconclusive" escape;
/// only repetitions noisier than ±15 % may say "cannot tell".
#[test]
fn case3_one_service_thread_is_serialised() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&["--delay", "2ms", "--threads", "1"]) else {
        return;
    };
    let v = sweep(
        &["--threads", "1,2,4,8", "--reps", "5", "--trim", "1"],
        &["--op", "write", "--size", "960k", "--xfer", "64k"],
        fs.path(),
        0,
    );
    show("3 one server thread", &v);
    if let Some(why) = disturbed(&v) {
        println!("[3 one server thread] note: measured on a busy machine: {why}");
    }
    assert_probed(&v);
    let c = curve(&v);
    // Issue 12 allows "no clear difference … run more --reps" only where
    // the repetitions are too noisy to tell (here: some point's interval
    // wider than ±15 %, seen at a load average of 16 on 2 CPUs); a
    // measurement within that is serialised, and no other verdict ever is
    // right.
    let noise = c["noise"].as_f64().unwrap();
    if kind(c) == "uncertain" && noise > 0.15 {
        println!(
            "[3 one server thread] note: cannot tell within noise (±{:.0}%), as issue 12 allows",
            noise * 100.0
        );
        return;
    }
    assert_eq!(kind(c), "serialised", "{:#}", c["verdict"]);
    assert!(c["verdict"]["text"]
        .as_str()
        .unwrap()
        .contains("serialised at the server"));
}

/// tmpfs writes never wait for storage: at twice as many workers as CPUs
/// the threads want every CPU, on a quiet machine and on a busy one.
#[test]
fn case4_tmpfs_names_the_cpus() {
    let _t = turn();
    let Some(m) = tmpfs("size=512m") else {
        return;
    };
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let counts = format!("1,{cpus},{}", 2 * cpus);
    let v = sweep(
        &["--threads", &counts, "--reps", "3"],
        &["--op", "write", "--size", "64m", "--xfer", "64k"],
        m.path(),
        0,
    );
    show("4 tmpfs", &v);
    if let Some(why) = disturbed(&v) {
        println!("[4 tmpfs] note: measured on a busy machine: {why}");
    }
    assert_probed(&v);
    let c = curve(&v);
    assert_eq!(kind(c), "cpu-bound", "{:#}", c["verdict"]);
    assert_eq!(limit(c), "cpu", "{:#}", c["verdict"]);
    assert_eq!(
        c["verdict"]["limiter"]["workers"].as_u64(),
        Some(2 * cpus as u64),
        "read at the most workers"
    );
    let fig = c["verdict"]["limiter"]["figure"].as_str().unwrap();
    assert!(fig.starts_with("the CPUs: "), "{fig}");
    assert!(fig.contains("% busy, ioscale "), "{fig}");
}

#[test]
fn case5_identical_targets_are_no_different() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&["--delay", "1ms"]) else {
        return;
    };
    let (a, b) = (fs.path().join("a"), fs.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let targets = format!("{},{}", s(&a), s(&b));
    let Some(v) = undisturbed("5 identical", || {
        let o = scratch();
        let j = o.path().join("s.json");
        let out = run(&[
            "sweep",
            "--threads",
            "1,2,4",
            "--reps",
            "8",
            "--target",
            &targets,
            "--quiet",
            "--json",
            s(&j),
            "--",
            "run",
            "--op",
            "write",
            "--size",
            "5120k",
            "--xfer",
            "64k",
        ]);
        assert_code(&out, 0);
        json(&j)
    }) else {
        return;
    };
    show("5 identical", &v);
    let cmp = v["analysis"]["comparisons"].as_array().unwrap();
    assert_eq!(cmp.len(), 1, "{:#}", v["analysis"]);
    let sentence = cmp[0]["sentence"].as_str().unwrap();
    // At every worker count: the sweep measures the two targets' points
    // at one worker count together, their repetitions taking turns, so a
    // drift of the machine moves both alike (run back to back, a shift
    // between the two blocks once made 211 against 184–199 MiB/s).
    assert_eq!(cmp[0]["differ"], false, "{:#}", cmp[0]);
    assert!(
        sentence.starts_with("No clear difference between ")
            && sentence.contains(" at any worker count tested (1–4;"),
        "{sentence}"
    );
}

#[test]
fn case6_failing_repetitions_are_kept_left_out_and_reported() {
    let _t = turn();
    // The data file serves the first 16 requests (one repetition of
    // 1 MiB in 64 KiB), then fails every request with EIO: repetition 0
    // is good, 1 and 2 fail, and the sweep goes on through all three.
    let Some(fs) = TestFs::mount(&[
        "--delay",
        "1ms",
        "--eio-after-ops",
        "16",
        "--faults-path-substr",
        "file.",
    ]) else {
        return;
    };
    let v = sweep(
        &["--threads", "1", "--reps", "3"],
        &["--op", "write", "--size", "1m", "--xfer", "64k"],
        fs.path(),
        1,
    );
    show("6 failing reps", &v);
    let p = &v["points"][0];
    let reps = |key: &str| -> Vec<u64> {
        p["result"][key]
            .as_array()
            .unwrap()
            .iter()
            .map(|ph| ph["rep"].as_u64().unwrap())
            .collect()
    };
    // Every repetition ran and is recorded: the good one as a result, the
    // failed ones under failed_phases (no result, partial counts).
    assert_eq!(reps("phases"), [0], "the good repetition is the result");
    assert_eq!(reps("failed_phases"), [1, 2], "the failed ones are kept");
    let o = &p["ops"][0];
    assert_eq!(
        (o["reps"].as_u64(), o["failed"].as_u64()),
        (Some(1), Some(2))
    );
    assert!(
        o["bw_mib_s"]["min"].as_f64().unwrap() > 0.0,
        "no 0 averaged in"
    );
    let note = v["analysis"]["notes"][0].as_str().unwrap();
    assert!(
        note.starts_with("2 of 3 repetitions failed and are left out of every figure: "),
        "{note}"
    );
    assert!(note.contains("Input/output error"), "{note}");
    let first = curve(&v)["sentences"][0].as_str().unwrap();
    assert!(
        first.starts_with("2 of 3 repetitions failed at 1 worker and are left out"),
        "{first}"
    );
}

#[test]
fn case7_noisy_server_carries_its_uncertainty() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&["--delay", "2ms", "--delay-jitter", "1800us", "--seed", "3"])
    else {
        return;
    };
    let Some(v) = undisturbed("7 noisy", || {
        sweep(
            &["--threads", "1,2,4,8", "--reps", "3"],
            &["--op", "write", "--size", "768k", "--xfer", "64k"],
            fs.path(),
            0,
        )
    }) else {
        return;
    };
    show("7 noisy", &v);
    let c = curve(&v);
    assert!(
        !matches!(kind(c), "falls" | "saturated"),
        "no false 'falls' or 'enough': {:#}",
        c["verdict"]
    );
    for p in c["points"].as_array().unwrap() {
        assert_eq!(p["ci"]["n"].as_u64(), Some(3), "{p:#}");
    }
}

#[test]
fn a_worker_count_whose_every_repetition_failed_stays_on_its_line() {
    let _t = turn();
    // Only the fourth worker's file fails: 1 and 2 workers are good, every
    // repetition at 4 workers fails. Before, the failed point (no bytes,
    // so "ops/s") became a second `write` line of its own, and the first
    // line, of 1 and 2 workers, could say "help up to at least 2 (the
    // most tested); try more" of a sweep that tested 4.
    let Some(fs) = TestFs::mount(&[
        "--delay",
        "1ms",
        "--eio-after-ops",
        "0",
        "--faults-path-substr",
        "file.00000003",
    ]) else {
        return;
    };
    let v = sweep(
        &["--threads", "1,2,4", "--reps", "2"],
        &["--op", "write", "--size", "1m", "--xfer", "64k"],
        fs.path(),
        1,
    );
    show("failed point", &v);
    let c = curve(&v);
    assert_eq!(c["unit"], "MiB/s", "{:#}", c);
    let pts = c["points"].as_array().unwrap();
    let at = |k: &str| -> Vec<u64> { pts.iter().map(|p| p[k].as_u64().unwrap()).collect() };
    assert_eq!(at("threads"), [1, 2, 4]);
    assert_eq!(at("reps"), [2, 2, 0]);
    assert_eq!(at("failed"), [0, 0, 2]);
    let text = c["verdict"]["text"].as_str().unwrap();
    assert!(!text.contains("the most tested"), "{text}");
    assert!(!text.contains("Try more workers"), "{text}");
    let first = c["sentences"][0].as_str().unwrap();
    assert!(
        first.starts_with("2 of 2 repetitions failed at 4 workers"),
        "{first}"
    );
}

#[test]
fn a_swept_value_given_twice_is_refused_before_any_point_runs() {
    // `--threads 2,2` measured one point twice as two, and the analysis
    // said "no clear difference between 2 workers (2619 MiB/s) and 2
    // workers (2497)" while its USL sentence counted one worker count.
    let d = scratch();
    for (flag, list, inner) in [
        ("--threads", "2,2", &["run", "--size", "1m"][..]),
        ("--threads", "1,2,4,2", &["run", "--size", "1m"][..]),
        ("--xfer", "1m,1024k", &["run", "--size", "1m"][..]),
        ("--layout", "shared,shared", &["run", "--size", "1m"][..]),
        (
            "--layout",
            "same-dir,same-dir",
            &["meta", "--files", "2"][..],
        ),
    ] {
        let threads = if flag == "--threads" { list } else { "1" };
        let mut args = vec!["sweep", "--threads", threads];
        if flag != "--threads" {
            args.extend_from_slice(&[flag, list]);
        }
        args.push("--");
        args.extend_from_slice(inner);
        args.push(s(d.path()));
        let out = run(&args);
        assert_code(&out, 2);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(flag) && err.contains("is given twice"),
            "{args:?}: {err}"
        );
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "{args:?}");
    }
}

#[test]
fn a_point_that_failed_everywhere_shows_no_rate() {
    let _t = turn();
    // Every data request fails: the progress line of each point said
    // "write 0 files/s", a rate of 0 in a metadata unit for writes that
    // moved nothing; the analysis line was in ops/s.
    let Some(fs) = TestFs::mount(&["--eio-after-ops", "0", "--faults-path-substr", "file."]) else {
        return;
    };
    let o = scratch();
    let j = o.path().join("s.json");
    let out = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--reps",
        "2",
        "--progress",
        "plain",
        "--json",
        s(&j),
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "256k",
        "--xfer",
        "64k",
        s(fs.path()),
    ]);
    assert_code(&out, 1);
    let err = String::from_utf8_lossy(&out.stderr);
    let done: Vec<&str> = err.lines().filter(|l| l.contains(" done in ")).collect();
    assert_eq!(done.len(), 2, "{err}");
    for l in done {
        assert!(l.contains("write every repetition failed"), "{l}");
        assert!(!l.contains("/s"), "{l}");
    }
    let v = json(&j);
    let c = curve(&v);
    assert_eq!(kind(c), "all-failed");
    assert_eq!(c["unit"], "MiB/s", "a write line is a data line: {c:#}");
}

#[test]
fn a_metadata_line_that_writes_its_files_is_counted_in_files() {
    // `meta` create writes each file's bytes (4 KiB here): its line read
    // "593 MiB/s" on tmpfs, and its progress "create 593.5 MiB/s", where
    // docs/analysis.md promises files/s for metadata. The interval, taken
    // over the bandwidth, must then be the rate's too.
    let d = scratch();
    let o = scratch();
    let j = o.path().join("m.json");
    let out = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--reps",
        "3",
        "--progress",
        "plain",
        "--json",
        s(&j),
        "--",
        "meta",
        "-n",
        "200",
        "--file-size",
        "4k",
        "--ops",
        "create,read,delete",
        s(d.path()),
    ]);
    assert_code(&out, 0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("MiB/s"), "{err}");
    let v = json(&j);
    for c in v["analysis"]["curves"].as_array().unwrap() {
        assert_eq!(c["unit"], "files/s", "{}: {:#}", c["op"], c["verdict"]);
        for t in c["sentences"].as_array().unwrap() {
            let t = t.as_str().unwrap();
            assert!(!t.contains("MiB/s"), "{t}");
        }
        for p in c["points"].as_array().unwrap() {
            let f = |k: &str| p["ci"][k].as_f64().unwrap();
            let value = p["value"].as_f64().unwrap();
            assert!(
                f("lo") <= value * 1.000001 && value <= f("hi") * 1.000001,
                "{}: {value} outside its interval {:#}",
                c["op"],
                p["ci"]
            );
        }
    }
}

/// Words that judge a gap against the noise of repetitions.
const NOISE_WORDS: [&str; 5] = [
    "beyond noise",
    "clearly",
    "within noise",
    "no clear difference",
    "±0%",
];

fn assert_no_noise_words(what: &str, text: &str) {
    let low = text.to_lowercase();
    for w in NOISE_WORDS {
        assert!(
            !low.contains(w),
            "{what} says {w:?} with one repetition:\n{text}"
        );
    }
}

#[test]
fn one_repetition_never_judges_a_gap_against_noise() {
    let _t = turn();
    // `--reps 1` on tmpfs, 2675, 6241 and 4445 MiB/s at 1, 2 and 4
    // writers: "then falls beyond noise to 4445 at 4 workers"; and a
    // comparison of two targets, `compare` of the record with itself ("no
    // clear difference" at each row) and the HTML's "within noise" under
    // each comparison, where one repetition measured no noise at all.
    // Whatever the figures, no sentence may judge them against a noise.
    let Some(m) = tmpfs("size=256m") else {
        return;
    };
    let (a, b) = (m.path().join("a"), m.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let targets = format!("{},{}", s(&a), s(&b));
    let o = scratch();
    let j = o.path().join("s.json");
    let out = run(&[
        "sweep",
        "--threads",
        "1,2,4",
        "--reps",
        "1",
        "--target",
        &targets,
        "--json",
        s(&j),
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "4m",
        "--xfer",
        "64k",
    ]);
    assert_code(&out, 0);
    assert_no_noise_words("the sweep's text", &stdout(&out));
    assert_no_noise_words("the sweep's progress", &stderr(&out));
    let v = json(&j);
    assert_no_noise_words("the record's analysis", &v["analysis"].to_string());
    let html = o.path().join("s.html");
    let out = run(&["report", s(&j), "--html", s(&html)]);
    assert_code(&out, 0);
    assert_no_noise_words("report", &stdout(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Based on: "), "the page shows no comparison");
    // Each verdict's evidence links name their worker count in words.
    assert!(page.contains("(1 worker): "), "no 1-worker evidence");
    assert!(!page.contains("(1 workers)"), "\"(1 workers)\" on the page");
    assert_no_noise_words("the HTML report", &page);
    let out = run(&["compare", s(&j), s(&j)]);
    assert_code(&out, 0);
    assert_no_noise_words("compare", &stdout(&out));
}

/// The figures of an operation that only a good repetition measures.
const MEASURED_ONLY: [&str; 5] = [
    "lat_p50_us",
    "lat_p99_us",
    "cpu_busy",
    "cpu_s_per_op",
    "little_latency_s",
];

#[test]
fn a_point_whose_every_repetition_failed_records_no_latency() {
    let _t = turn();
    // Every write fails (testfs EIO): the record held `"lat_p50_us": -0.0`
    // (and p99, CPU) for each point, the sum over no good repetition, a
    // figure nobody measured, and the CSV "-0.000". They are now null (the
    // field kept), and an older record's -0.0 is read as null too.
    let Some(fs) = TestFs::mount(&["--eio-after-ops", "0", "--faults-path-substr", "file."]) else {
        return;
    };
    let o = scratch();
    let j = o.path().join("s.json");
    let out = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--reps",
        "2",
        "--quiet",
        "--json",
        s(&j),
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "256k",
        "--xfer",
        "64k",
        s(fs.path()),
    ]);
    assert_code(&out, 1);
    let text = std::fs::read_to_string(&j).unwrap();
    assert!(!text.contains("-0.0"), "a negative zero in the record");
    let mut v: Value = serde_json::from_str(&text).unwrap();
    for p in v["points"].as_array_mut().unwrap() {
        for op in p["ops"].as_array_mut().unwrap() {
            assert_eq!(op["reps"], 0, "{op:#}");
            for k in MEASURED_ONLY {
                let f = op.as_object_mut().unwrap();
                assert!(f.contains_key(k) && f[k].is_null(), "{k}: {op:#}");
                // As a record written before null held it.
                f.insert(k.to_string(), serde_json::json!(-0.0));
            }
        }
    }
    let old = o.path().join("old.json");
    std::fs::write(&old, serde_json::to_string(&v).unwrap()).unwrap();
    assert!(std::fs::read_to_string(&old).unwrap().contains("-0.0"));
    for rec in [&j, &old] {
        let csv = o.path().join("s.csv");
        let out = run(&["report", s(rec), "--csv", s(&csv)]);
        assert_code(&out, 0);
        let csv = std::fs::read_to_string(&csv).unwrap();
        assert!(!csv.contains("-0.0"), "{csv}");
        assert!(!stdout(&out).contains("-0.0"), "{}", stdout(&out));
    }
}

#[test]
fn littles_law_counts_every_request_in_flight_at_depth() {
    let _t = turn();
    // io_uring --iodepth 8 on tmpfs: "Per-operation latency ≈ 10.5 µs at 1
    // worker (Little's law: workers ÷ operations per second; the measured
    // median is 69.1 µs)": each worker keeps 8 requests in flight, so N is
    // 8 per worker and each took 8 × 10.5 = 84 µs, as measured.
    let d = scratch();
    let o = scratch();
    let j = o.path().join("u.json");
    let out = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--reps",
        "2",
        "--quiet",
        "--json",
        s(&j),
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "2m",
        "--xfer",
        "4k",
        "--engine",
        "io_uring",
        "--iodepth",
        "8",
        s(d.path()),
    ]);
    if !out.status.success() && stderr(&out).contains("io_uring") {
        eprintln!("note: io_uring unavailable here: {}", stderr(&out));
        return;
    }
    assert_code(&out, 0);
    let v = json(&j);
    for p in v["points"].as_array().unwrap() {
        let workers = p["threads"].as_f64().unwrap();
        let o = &p["ops"][0];
        let little = o["little_latency_s"].as_f64().unwrap();
        let iops = o["iops"]["mean"].as_f64().unwrap();
        let n = little * iops;
        assert!(
            (n - 8.0 * workers).abs() < 1e-6 * n,
            "{n} in flight at {workers} workers"
        );
    }
    let c = curve(&v);
    for l in c["little"].as_array().unwrap() {
        let n = l["latency_s"].as_f64().unwrap() * l["iops"].as_f64().unwrap();
        let w = l["threads"].as_f64().unwrap();
        assert!((n - 8.0 * w).abs() < 1e-6 * n, "{l}");
    }
    let text = c["sentences"].to_string();
    assert!(
        text.contains("requests in flight, 1 worker × 8 deep = 8"),
        "{text}"
    );
}

/// The page-cache warnings follow the FUSE requests the probe traced: a
/// daemon that returned every byte read (direct_io, as testfs mounts by
/// default) served the reads, and no warning may say the page cache did
/// (issue 26: 768 FUSE_READ per point, 3.1 GB served, and still "likely
/// page cache"); with the kernel keeping the pages (`--direct-io off
/// --keep-cache`) the reads after the write never reach the daemon, and
/// the warning says so with the traced figure.
#[test]
fn case8_page_cache_warnings_follow_the_traced_requests() {
    let _t = turn();
    if tracefs().is_none() {
        return;
    }
    let Some(fs) = TestFs::mount(&[]) else {
        return;
    };
    let inner = ["--op", "write,read", "--size", "1m", "--xfer", "64k"];
    let v = sweep(&["--threads", "1,2", "--reps", "2"], &inner, fs.path(), 0);
    show("8 daemon", &v);
    // The premise: the daemon returned every byte of every read phase.
    for p in v["points"].as_array().unwrap() {
        let read: u64 = p["result"]["phases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|ph| ph["op"] == "read")
            .map(|ph| ph["read_bytes"].as_u64().unwrap())
            .sum();
        let served: u64 = p["probes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|pr| pr["op"] == "read")
            .map(|pr| {
                pr["resources"]["fuse"]["requests"]["read"]["bytes"]
                    .as_u64()
                    .unwrap()
            })
            .sum();
        assert!(
            read > 0 && served >= read,
            "read {read}, the daemon returned {served}"
        );
    }
    let w = warnings(&v);
    assert!(!w.iter().any(|w| w.contains("page cache")), "{w:#?}");
    drop(fs);
    let Some(fs) = TestFs::mount(&["--direct-io", "off", "--keep-cache"]) else {
        return;
    };
    let v = sweep(&["--threads", "1,2", "--reps", "2"], &inner, fs.path(), 0);
    show("8 kept pages", &v);
    let w = warnings(&v);
    assert!(
        w.iter().any(|w| w.starts_with(
            "the read phases were served from the page cache, not the storage: of the "
        ) && w
            .contains(" they read, the FUSE daemon returned 0 B (traced FUSE_READ requests)")),
        "{w:#?}"
    );
    // Written through (no writeback cache): the writes reached the daemon.
    assert!(!w.iter().any(|w| w.contains("write phases")), "{w:#?}");
    assert!(!w.iter().any(|w| w.contains("likely page cache")), "{w:#?}");
}

/// Sixteen workers on 2 CPUs that sleep waiting for a server's replies do
/// not "take turns": the CPU figures show the CPUs free, so no warning
/// says they did; and the speedup, far beyond what 2 CPUs could give by
/// computing, is explained by those waits. On tmpfs the same workers keep
/// the CPUs full, and the warning is there (on a busy machine too: the
/// threads' wait for a CPU counts).
#[test]
fn case9_workers_waiting_for_replies_do_not_take_turns() {
    let _t = turn();
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let many = (8 * cpus).to_string();
    let Some(fs) = TestFs::mount(&["--delay", "10ms", "--threads", "64"]) else {
        return;
    };
    // The speedup sentence holds on a busy machine too (the CPU time per
    // operation at 1 worker is ioscale's own); the absence of the warning
    // needs CPUs that other work left free, so it is measured again when
    // they were not (the wait then counts: workers did wait for CPUs).
    for attempt in 1..=3 {
        let v = sweep(
            &["--threads", &format!("1,{many}"), "--reps", "3"],
            &["--op", "write", "--size", "640k", "--xfer", "64k"],
            fs.path(),
            0,
        );
        show("9 waiting", &v);
        let c = curve(&v);
        let said = c["sentences"].to_string();
        // When other work held the 1-worker point back, the speedup
        // exceeds the worker ratio itself (19.6× for 16× under four busy
        // loops): the analysis then says the points were not measured
        // alike, which is the truer sentence, in place of the CPUs' one.
        let unalike = said.contains(
            " the workers: more than the workers alone can give, so the points were not measured alike",
        );
        assert!(
            unalike || said.contains(&format!(" on {cpus} CPUs: more than the CPUs could give if the workers were computing. They were mostly waiting for replies: at 1 worker ioscale used ")),
            "{said}"
        );
        match disturbed(&v) {
            None => {
                let w = warnings(&v);
                assert!(!w.iter().any(|w| w.contains("took turns")), "{w:#?}");
                break;
            }
            Some(why) if attempt < 3 => println!("[9 waiting] attempt {attempt} disturbed: {why}"),
            Some(why) => println!("[9 waiting] note: the warning's absence is inconclusive, the machine was busy in all 3 attempts: {why}"),
        }
    }
    drop(fs);
    let Some(m) = tmpfs("size=600m") else {
        return;
    };
    let v = sweep(
        &["--threads", &many, "--reps", "1"],
        &["--op", "write", "--size", "32m", "--xfer", "64k"],
        m.path(),
        0,
    );
    show("9 tmpfs", &v);
    let w = warnings(&v);
    assert!(
        w.iter().any(|w| w.starts_with(&format!("{many} workers on {cpus} CPUs took turns: in the write phase ioscale's threads were running"))),
        "{w:#?}"
    );
}

/// A device kept busy by other work is not the limit of a stat the inode
/// cache served: on an ext4 image whose loop device four `dd
/// oflag=direct,dsync` writers keep busy, the stat phases after the create
/// moved no data and the device only wrote, so the limit read at each stat
/// point never names it (it said "device vda 90% busy" of a phase ioscale
/// itself called cached).
#[test]
fn case10_a_device_busy_with_other_work_is_not_a_cached_phases_limit() {
    let _t = turn();
    let Some(m) = loop_ext4("1G") else {
        return;
    };
    let t = m.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let mut writers: Vec<std::process::Child> = (0..4)
        .map(|i| {
            std::process::Command::new("dd")
                .arg("if=/dev/zero")
                .arg(format!("of={}/bg{i}", m.path().display()))
                .args(["bs=64k", "count=3000", "oflag=direct,dsync", "status=none"])
                .spawn()
                .expect("dd")
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let o = scratch();
    let j = o.path().join("s.json");
    let out = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--reps",
        "3",
        "--quiet",
        "--json",
        s(&j),
        "--",
        "meta",
        "-n",
        "500",
        "--file-size",
        "0",
        "--ops",
        "create,stat,delete",
        s(&t),
    ]);
    for w in &mut writers {
        let _ = w.kill();
        let _ = w.wait();
    }
    assert_code(&out, 0);
    let rec = match analysis::load(&std::fs::read(&j).unwrap()).unwrap() {
        analysis::Loaded::Sweep(r) => r,
        _ => panic!("not a sweep record"),
    };
    show("10 busy device", &json(&j));
    let ctx = analysis::findings::Context {
        cpus: rec.host.cpus,
        fs_type: rec.host.fs_type.clone(),
    };
    let mut busy = 0;
    for p in &rec.points {
        let o = p.ops.iter().find(|o| o.op == "stat").unwrap();
        let cp = analysis::findings::curve_point(p, o, analysis::Units::Iec);
        let Some(d) = cp.resources.as_ref().and_then(|r| r.device.clone()) else {
            panic!("no device measured under {}", t.display());
        };
        let l = analysis::findings::limiter(std::slice::from_ref(&cp), &ctx);
        println!(
            "[10 busy device] {} workers: device {} {:.0}% busy, limit: {}",
            cp.threads,
            d.name,
            d.util * 100.0,
            l.figure
        );
        assert_ne!(l.limit, analysis::Limit::Device, "{}", l.figure);
        // With the CPUs saturated too (other work on a loaded machine) the
        // CPUs are the limit named, which is true and not the device.
        if d.util >= analysis::findings::DEVICE_SATURATED && l.limit != analysis::Limit::Cpu {
            busy += 1;
            assert!(
                l.figure.contains("not with this phase's I/O"),
                "{}",
                l.figure
            );
        }
    }
    if busy == 0 {
        println!("[10 busy device] note: inconclusive, the writers did not keep the device 85% busy during the stat phases");
    }
}
