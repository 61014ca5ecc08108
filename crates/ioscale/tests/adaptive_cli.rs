//! Issue 29's known answers end to end: `ioscale sweep --threads auto`
//! and `--reps auto` on `ioscale-testfs` servers whose answer is known by
//! construction (K slots of a fixed service time; one slot; a jittered
//! delay), and on tmpfs, whose rate falls once the workers outnumber the
//! CPUs. Each case prints what the search said.
//!
//! A case whose answer is off while the driver measured an overloaded
//! machine (ioscale's threads waiting for a CPU more than 0.3 s per
//! second, or other work keeping more than half of the CPUs busy) is
//! measured again, up to three times, and otherwise reported as
//! inconclusive with those figures; off on an undisturbed machine fails.
//! The bounds on the counts a search takes hold on a busy machine too.

mod common;
#[path = "support/rel.rs"]
mod rel;

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use common::fuse::TestFs;
use common::*;
use rel::*;
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// `ioscale sweep FLAGS --json J -- run INNER DIR`: the record and the
/// text output; exit `code` expected.
fn sweep(flags: &[&str], inner: &[&str], dir: &Path, code: i32) -> (Value, String) {
    let o = scratch();
    let j = o.path().join("s.json");
    let mut args: Vec<&str> = vec!["sweep"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--progress", "none", "--json", s(&j), "--", "run"]);
    args.extend_from_slice(inner);
    args.push(s(dir));
    let out = run(&args);
    assert_code(&out, code);
    (json(&j), stdout(&out))
}

/// The counts the search measured, in order.
fn path(v: &Value) -> Vec<u64> {
    v["search"]["path"]
        .as_array()
        .unwrap_or_else(|| panic!("no search in the record: {v:#}"))
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect()
}

/// The search of the record's one line.
fn line(v: &Value) -> &Value {
    let l = v["search"]["lines"].as_array().unwrap();
    assert_eq!(l.len(), 1, "{:#}", v["search"]);
    &l[0]
}

fn optimum(v: &Value) -> u64 {
    line(v)["optimum"]["count"].as_u64().unwrap()
}

/// Prints what the search said, and fails on a sentence that is not plain.
fn show(case: &str, v: &Value) {
    for s in v["search"]["sentences"].as_array().into_iter().flatten() {
        let s = s.as_str().unwrap();
        let f = analysis::verdict::style_faults(s);
        assert!(f.is_empty(), "[{case}] {f:?} in: {s}");
        println!("[{case}] {s}");
    }
    for p in v["points"].as_array().unwrap() {
        if let Some(r) = p.get("reps_auto") {
            println!(
                "[{case}]   {} workers: {} reps, noise {}, reached {}",
                p["threads"], r["ran"], r["noise"], r["reached"]
            );
        }
    }
}

/// Why the machine was too busy for a known answer, from what the
/// driver measured at each point.
fn disturbed(v: &Value) -> Option<String> {
    for p in v["points"].as_array().unwrap() {
        for o in p["ops"].as_array().unwrap() {
            let r = &o["resources"];
            if r.is_null() {
                continue;
            }
            let f = |k: &str| r[k].as_f64().unwrap_or(0.0);
            let daemon = r["fuse"]["daemon"]["cores"].as_f64().unwrap_or(0.0);
            let other = f("machine_busy_cores") - f("self_cores") - daemon;
            if f("self_cpu_wait") > 0.3 || other > 0.5 * f("cpus") {
                return Some(format!(
                    "at {} threads other work used {other:.2} cores",
                    p["threads"]
                ));
            }
        }
    }
    None
}

/// Measures up to three times while `right` fails on a disturbed
/// machine; fails on an undisturbed one. The last record, or `None` when
/// every attempt was disturbed (inconclusive).
fn known(
    case: &str,
    mut measure: impl FnMut() -> Value,
    right: impl Fn(&Value) -> bool,
) -> Option<Value> {
    for attempt in 1..=3 {
        let v = measure();
        show(case, &v);
        if right(&v) {
            return Some(v);
        }
        match disturbed(&v) {
            Some(why) => println!("[{case}] attempt {attempt} off on a busy machine: {why}"),
            None => panic!(
                "[{case}] wrong answer on an undisturbed machine: {:#}",
                v["search"]
            ),
        }
    }
    println!("[{case}] note: inconclusive, the machine was busy in all 3 attempts");
    None
}

const INNER: [&str; 6] = ["--op", "write", "--size", "640k", "--xfer", "64k"];

#[test]
fn k_slots_give_an_optimum_within_one_of_k_after_at_most_8_counts() {
    let _t = turn();
    for k in [2u64, 4, 8] {
        let ks = k.to_string();
        // 50 ms a request: the client's own share of one (the FUSE round
        // trip, 1–4 ms here) leaves K workers within a few percent of the
        // server's K ÷ 50 ms.
        let Some(fs) = TestFs::mount(&["--slots", &ks, "--service", "50ms"]) else {
            return;
        };
        let case = format!("K={k}");
        let html = scratch();
        let page = html.path().join("r.html");
        let v = known(
            &case,
            || {
                let (v, text) = sweep(
                    &["--threads", "auto", "--reps", "3", "--html", s(&page)],
                    &INNER,
                    fs.path(),
                    0,
                );
                let p = path(&v);
                assert!(p.starts_with(&[1, 2]), "the doubling starts at 1: {p:?}");
                assert_eq!(v["search"]["done"], true);
                assert!(text.contains("Search (--threads auto)"), "{text}");
                assert!(text.contains("Search path: 1, 2"), "{text}");
                v
            },
            // The optimum within one of K after at most 8 counts in all:
            // on a busy machine the noise may carry the doubling past the
            // knee (1, …, 32 then 11, 13, 12 was seen), which is retried as
            // a disturbed attempt, never passed.
            // A search that stopped at 2 with a verdict (the CPUs busy)
            // has not doubled past the knee: retried the same way.
            |v| {
                (k - 1..=k + 1).contains(&optimum(v))
                    && path(v).len() <= 8
                    && path(v).starts_with(&[1, 2, 4])
            },
        );
        if let Some(v) = v {
            let o = line(&v)["optimum"]["text"].as_str().unwrap().to_string();
            assert!(o.contains("of the peak") || o.contains("the peak,"), "{o}");
            let page = std::fs::read_to_string(&page).unwrap();
            assert!(
                page.contains("<section id=\"search\">"),
                "no search section"
            );
            assert!(
                page.contains(&escape(&o)),
                "the optimum is not in the page: {o}"
            );
        }
    }
}

/// The text as the HTML report writes it.
fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[test]
fn a_serialised_server_stops_within_4_counts_saying_so() {
    let _t = turn();
    // 50 ms a request, as for K = 2, 4, 8: at 20 ms the clients' own time
    // per request on a machine at a load of 15 let 2 workers overlap it
    // with the server's and run clearly faster than 1 (seen once).
    let Some(fs) = TestFs::mount(&["--slots", "1", "--service", "50ms"]) else {
        return;
    };
    let mut text = String::new();
    let v = known(
        "K=1",
        || {
            let (v, t) = sweep(
                &["--threads", "auto", "--reps", "5", "--trim", "1"],
                &INNER,
                fs.path(),
                0,
            );
            text = t;
            v
        },
        |v| {
            let c = &v["analysis"]["curves"][0];
            // As case 3 of known_answers_cli: "cannot tell" only when the
            // repetitions are noisier than ±15 % (a load average of 16 on
            // 2 CPUs) — retried like a wrong answer, never passed.
            path(v).len() <= 4
                && c["verdict"]["kind"] == "serialised"
                && line(v)["stop"]["verdict"] == "serialised"
        },
    );
    let Some(v) = v else { return };
    // The verdict that stopped the search is the one printed.
    assert_eq!(line(&v)["stop"]["kind"], "verdict");
    assert!(optimum(&v) <= 2);
    assert!(text.contains("the line's verdict, serialised"), "{text}");
}

#[test]
fn a_line_falling_past_the_cpus_has_its_optimum_at_or_before_the_fall() {
    let _t = turn();
    let Some(m) = tmpfs("size=1200m") else {
        return;
    };
    // 32 workers × 32 MiB fit the tmpfs. The ceiling is 32, not the
    // CPUs: on a machine other work keeps busy, each added worker takes
    // a larger share of the CPUs from that work, so the peak may lie past
    // the CPU count (CI's busy loops put it at 4 with 2 CPUs) — the search
    // must still stop on its own before the ceiling.
    let (v, _) = sweep(
        &["--threads", "auto:32", "--reps", "3"],
        &["--op", "write", "--size", "32m", "--xfer", "64k"],
        m.path(),
        0,
    );
    show("tmpfs", &v);
    let c = &v["analysis"]["curves"][0];
    let peak = c["peak_threads"].as_u64().unwrap();
    let o = optimum(&v);
    assert!(o <= peak, "optimum {o} past the peak at {peak}");
    let stop = &line(&v)["stop"];
    let kind = stop["kind"].as_str().unwrap();
    assert!(
        ["verdict", "no-rise", "noise"].contains(&kind),
        "{:#}",
        v["search"]
    );
    if kind == "verdict" {
        // tmpfs computes: the verdict that stops it is the CPUs.
        assert_eq!(stop["verdict"], "cpu-bound", "{:#}", v["search"]);
    }
    let p = path(&v);
    assert!(*p.iter().max().unwrap() < 32, "{p:?}");
}

/// The repetitions each point of a record took.
fn reps_taken(v: &Value) -> Vec<u64> {
    v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["reps_auto"]["ran"].as_u64().expect("reps_auto.ran"))
        .collect()
}

#[test]
fn reps_auto_takes_more_repetitions_on_a_jittered_server_and_says_when_it_cannot() {
    let _t = turn();
    let Some(steady) = TestFs::mount(&["--delay", "20ms"]) else {
        return;
    };
    let jitter = ["--delay", "20ms", "--delay-jitter", "18ms", "--seed", "3"];
    let Some(jittered) = TestFs::mount(&jitter) else {
        return;
    };
    let flags = ["--threads", "1,2", "--reps", "auto", "--max-reps", "12"];
    // 8 requests a repetition: each repetition's mean delay spreads by
    // about ±18% on the jittered server (the target needs some 20
    // repetitions), the FUSE round trip's noise by a few percent on the
    // steady one (20 ms a request).
    let inner = ["--op", "write", "--size", "512k", "--xfer", "64k"];
    for attempt in 1..=3 {
        let (a, text) = sweep(&flags, &inner, steady.path(), 0);
        let (b, _) = sweep(&flags, &inner, jittered.path(), 0);
        show("steady", &a);
        show("jittered", &b);
        assert!(text.contains("Repetitions (--reps auto)"), "{text}");
        for v in [&a, &b] {
            check_reps(v, 12);
        }
        let (sa, sb): (u64, u64) = (reps_taken(&a).iter().sum(), reps_taken(&b).iter().sum());
        if sb > sa {
            break;
        }
        match disturbed(&a).or(disturbed(&b)) {
            Some(why) if attempt < 3 => {
                println!("[reps] attempt {attempt}: {sb} vs {sa} on a busy machine: {why}")
            }
            Some(why) => println!("[reps] note: inconclusive, busy in all 3 attempts: {why}"),
            None => panic!("jittered {sb} repetitions, steady {sa}, on an undisturbed machine"),
        }
    }
    // An impossible target stops at --max-reps and says so.
    let (v, text) = sweep(
        &["--threads", "1", "--reps", "auto:0.1%", "--max-reps", "4"],
        &inner,
        jittered.path(),
        0,
    );
    let r = &v["points"][0]["reps_auto"];
    assert_eq!(
        (r["ran"].as_u64(), &r["reached"]),
        (Some(4), &Value::Bool(false)),
        "{r:#}"
    );
    assert!(
        text.contains("4 repetitions, the --max-reps: target ±0.1% not reached"),
        "{text}"
    );
}

/// Each point of `v` took 3 to `max` repetitions, the table counts as
/// many, and one that reached the target is within it.
fn check_reps(v: &Value, max: u64) {
    for (p, n) in v["points"].as_array().unwrap().iter().zip(reps_taken(v)) {
        assert!((3..=max).contains(&n), "{n} repetitions");
        let o = &p["ops"][0];
        assert_eq!(
            o["reps"].as_u64().unwrap() + o["failed"].as_u64().unwrap(),
            n
        );
        let r = &p["reps_auto"];
        if r["reached"] == true {
            assert!(r["noise"].as_f64().unwrap() <= 0.05, "{r:#}");
        } else {
            assert_eq!(n, max, "{r:#}");
        }
    }
}

#[test]
fn an_interrupted_search_resumes_its_search() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&["--slots", "4", "--service", "20ms"]) else {
        return;
    };
    let t = scratch();
    let d = t.path();
    let j = d.join("s.json");
    let hold = d.join("hold");
    std::fs::write(&hold, b"").unwrap();
    let held = d.join("hold.held");
    let mut args = vec![
        "sweep",
        "--threads",
        "auto",
        "--reps",
        "3",
        "-q",
        "--progress",
        "none",
    ];
    args.extend_from_slice(&["--json", s(&j), "--", "run"]);
    args.extend_from_slice(&INNER);
    args.push(s(fs.path()));
    let mut child = spawn_env(&args, &[("IOSCALE_TEST_SWEEP_HOLD", s(&hold))]);
    wait_until(&mut child, "the first point", || held.exists());
    signal(&child, libc::SIGINT);
    let out = finish(child, Duration::from_secs(120));
    assert_code(&out, 130);
    let v = json(&j);
    assert_eq!(path(&v), [1]);
    assert_eq!(v["search"]["done"], false);
    let o = run(&["report", s(&j)]);
    assert!(
        stdout(&o).contains("unfinished: the search stopped after 1 points"),
        "{}",
        stdout(&o)
    );
    // The same command with --resume goes on with the search.
    args.push("--resume");
    let out = run(&args);
    assert_code(&out, 0);
    let v = json(&j);
    show("resumed", &v);
    // It goes on from the saved count: the doubling's next is 2. Where it
    // stops depends on the machine's noise (under four busy loops the 2
    // was within ±29% of the 1 and the search stopped there), so only
    // the start of the path is asserted, and that nothing is measured
    // twice.
    let p = path(&v);
    assert!(p.len() >= 2 && p[..2] == [1, 2], "{p:?}");
    let mut once = p.clone();
    once.sort();
    once.dedup();
    assert_eq!(once.len(), p.len(), "a count measured twice: {p:?}");
    assert_eq!(v["search"]["done"], true);
    assert_eq!(v["points"].as_array().unwrap().len(), p.len());
}

#[test]
fn adaptive_flags_are_checked_before_anything_runs() {
    let t = scratch();
    let d = s(t.path());
    for (flags, says) in [
        (vec!["--threads", "auto:0"], "MAX"),
        (vec!["--threads", "auto:5000"], "at most 4096"),
        (vec!["--threads", "autox"], "auto:MAX"),
        (
            vec!["--threads", "1,2", "--max-reps", "5"],
            "--max-reps goes with --reps auto",
        ),
        (
            vec!["--threads", "1,2", "--reps", "auto", "--max-reps", "2"],
            "at least 3",
        ),
        (
            vec!["--threads", "1,2", "--reps", "auto:0%"],
            "between 0% and 100%",
        ),
        (
            vec!["--threads", "1,2", "--reps", "auto", "--trim", "2"],
            "--trim 2",
        ),
        (
            vec!["--threads", "auto", "--xfer", "auto"],
            "one axis at a time",
        ),
        (
            vec!["--threads", "1", "--xfer", "auto:1m-4k"],
            "MAX is below MIN",
        ),
        (vec!["--threads", "1", "--xfer", "auto:4k"], "auto:MIN-MAX"),
        (
            vec!["--threads", "1", "--xfer", "auto:0-4k"],
            "not a transfer size",
        ),
        (vec!["--threads", "1", "--xfer", "auto:1-1t"], "× MIN"),
    ] {
        let mut args = vec!["sweep"];
        args.extend_from_slice(&flags);
        args.extend_from_slice(&["--", "run", "--op", "write", "--size", "64k", d]);
        let o = run(&args);
        assert_code(&o, 2);
        assert!(stderr(&o).contains(says), "{flags:?}: {}", stderr(&o));
        assert_empty(t.path());
    }
}

/// Issue 29's `--xfer auto`: a server that takes 20 ms a request and at
/// most 4 MiB/s (`--delay 20ms --bw 4m`): a size of s takes max(20 ms,
/// s ÷ 4 MiB/s), so bigger transfers pay until 80 KiB, where the cap is
/// reached. The search doubles from 32 KiB, refines between the last size
/// clearly below the peak and the first within noise of it, and names the
/// smallest size within noise of the peak: at or above the knee (the
/// first size tried past it, 96 KiB of 3 MiB's divisors, on a quiet
/// machine), and its rate near the cap. The sizes that do not divide the
/// data (40, 56, 80, 112 KiB, …) are left out and the record says so.
/// Bounds are ratios with wide margins: a busy machine adds its own time
/// to each request, which moves the optimum up (towards the cap), never
/// below the knee.
#[test]
fn xfer_auto_finds_the_size_where_a_bandwidth_cap_is_reached() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&["--delay", "20ms", "--bw", "4m"]) else {
        return;
    };
    let (v, text) = sweep(
        &["--xfer", "auto:32k-1m", "--threads", "1", "--reps", "3"],
        &["--op", "write", "--size", "3m"],
        fs.path(),
        0,
    );
    show("xfer", &v);
    let p = path(&v);
    let k = 1024;
    assert_eq!(
        p[..3],
        [8, 16, 32],
        "the doubling from 32 KiB in 4 KiB units"
    );
    assert_eq!(v["search"]["done"], true);
    assert_eq!(v["search"]["axis"]["axis"], "xfer");
    assert!(text.contains("Search (--xfer auto)"), "{text}");
    assert!(
        text.contains("Search path (transfer size): 32 KiB, 64 KiB"),
        "{text}"
    );
    // Every measured size is one the data divides into.
    for c in &p {
        assert_eq!((3 << 20) % (c * 4 * k), 0, "{p:?}");
    }
    let left: Vec<u64> = v["search"]["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert!(left.contains(&20) && left.contains(&28), "{left:?}");
    assert!(
        text.contains("Left out of the search, not measured: 40 KiB"),
        "{text}"
    );
    let best = optimum(&v) * 4 * k;
    assert!(
        (80 * k..=512 * k).contains(&best),
        "optimum {best}: the cap is reached at 80 KiB"
    );
    // The optimum's rate near the cap, and the sizes below the knee
    // clearly slower: 32 KiB moves at most 40% of it (1.6 of 4 MiB/s).
    let rate = |x: u64| -> f64 {
        let pt = v["points"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["xfer"] == x)
            .unwrap_or_else(|| panic!("no point at {x}"));
        pt["ops"][0]["bw_mib_s_trimmed"]
            .as_f64()
            .unwrap_or_else(|| panic!("{pt:#}"))
    };
    let (at_best, at_32k) = (rate(best), rate(32 * k));
    assert!(
        at_best > 0.75 * 4.0 && at_best < 1.1 * 4.0,
        "{at_best} MiB/s"
    );
    assert!(at_32k < 0.6 * at_best, "{at_32k} against {at_best}");
}

/// Under `--scale total` the counts the total does not split evenly
/// across (64 KiB of 4 KiB requests: 3, 5, 6 and 7 workers) are left out
/// of the search, and the record and the report say which and why, not
/// only by their absence from `config.threads`.
#[test]
fn a_total_that_does_not_split_says_which_counts_the_search_left_out() {
    let t = scratch();
    let (v, text) = sweep(
        &["--threads", "auto:8", "--reps", "1", "--scale", "total"],
        &["--op", "write", "--size", "64k", "--xfer", "4k"],
        t.path(),
        0,
    );
    show("total", &v);
    assert_eq!(v["config"]["threads"], serde_json::json!([1, 2, 4, 8]));
    assert_eq!(v["search"]["left_out"], serde_json::json!([3, 5, 6, 7]));
    assert!(
        text.contains(
            "Left out of the search, not measured: 3, 5, 6, 7 (--scale total: the first point's total does not split evenly across them)."
        ),
        "{text}"
    );
    for c in path(&v) {
        assert!([1, 2, 4, 8].contains(&c), "{c} measured");
    }
    // `report` says the same from the record.
    let j = scratch();
    let f = j.path().join("s.json");
    std::fs::write(&f, serde_json::to_vec(&v).unwrap()).unwrap();
    let o = run(&["report", s(&f)]);
    assert_code(&o, 0);
    assert!(stdout(&o).contains("Left out of the search, not measured: 3, 5, 6, 7"));
}
