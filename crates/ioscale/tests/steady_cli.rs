//! `--steady` (issue 28), known answers from the test FUSE file system:
//! a burst-credit volume is steady only once its credit is spent, at its
//! baseline; a steady target is steady in its first windows; a phase that
//! ends first says it was not steady; the flag is refused where it cannot
//! work. The levels and the time the credit ran out come from what
//! `ioscale-testfs` was told and what it logged, never from ioscale.
//!
//! The tests take turns (a lock), so they do not load the CPUs under one
//! another.

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

/// A write of 2 workers on `mnt` bounded by `time`, with `--steady
/// rule`; returns the record's phase and the text report.
fn steady_write(mnt: &Path, time: &str, rule: &str) -> (Value, String) {
    let o = scratch();
    let j = o.path().join("r.json");
    let out = run(&[
        "run",
        "--op",
        "write",
        "--threads",
        "2",
        "--size",
        "1g",
        "--xfer",
        "64k",
        "--time",
        time,
        "--steady",
        rule,
        "--json",
        s(&j),
        "-q",
        s(mnt),
    ]);
    assert_code(&out, 0);
    let rep = run(&["report", s(&j)]);
    assert_code(&rep, 0);
    (phases(&json(&j))[0].clone(), stdout(&rep))
}

/// The number after `key` in `text`.
fn number_after(text: &str, key: &str) -> f64 {
    let at = text
        .find(key)
        .unwrap_or_else(|| panic!("no {key:?} in:\n{text}"))
        + key.len();
    let n: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    n.parse()
        .unwrap_or_else(|_| panic!("no number after {key:?} in:\n{text}"))
}

/// The window's figures are its own: bytes ÷ seconds, and the whole
/// phase's totals beside them, larger.
fn check_window(p: &Value) {
    let st = &p["steady"];
    let (bytes, el) = (
        p["bytes"].as_f64().unwrap(),
        p["elapsed_s"].as_f64().unwrap(),
    );
    assert!(
        (p["bw_mib_s"].as_f64().unwrap() - bytes / el / 1048576.0).abs() < 1e-6,
        "{p}"
    );
    assert!(el <= st["window_s"].as_f64().unwrap() + 1e-6, "{st}");
    let whole = &st["whole"];
    assert!(whole["bytes"].as_f64().unwrap() >= bytes, "{st}");
    assert!(whole["elapsed_s"].as_f64().unwrap() >= el, "{st}");
}

#[test]
fn a_burst_credit_volume_is_steady_only_at_its_baseline() {
    let _t = turn();
    // 40 MiB/s while 60 MiB of credit last, refilled at 10 MiB/s: the
    // credit runs out about 2 s in.
    let Some(fs) = TestFs::mount(&["--bw", "40m", "--burst-credit", "60m", "--baseline", "10m"])
    else {
        return;
    };
    let (p, text) = steady_write(fs.path(), "120s", "bw:10%:3s");
    assert_empty(fs.source());
    let (_, log) = fs.stop();
    let spent = number_after(&log, "burst credit spent ");
    let st = &p["steady"];
    eprintln!("credit spent at {spent} s; {st}");
    assert_eq!(st["reached"], true, "{st}");
    assert_eq!(st["criterion"], "bw");
    // Cut by the steady rule, long before the time limit.
    assert_eq!(p["time_limited"], true);
    let at = st["at_s"].as_f64().unwrap();
    // The steady window starts after the credit ran out (the file
    // system's clock starts at its first request, after the phase's), to
    // within the one-second sample that holds both levels.
    assert!(
        at - 3.0 >= spent - 1.0,
        "steady at {at} s, credit spent at {spent} s"
    );
    // The point's figure is the window's: the baseline, not the burst.
    let bw = p["bw_mib_s"].as_f64().unwrap();
    assert!((bw - 10.0).abs() <= 1.0, "window {bw} MiB/s, baseline 10");
    check_window(&p);
    let whole = &st["whole"];
    let whole_bw =
        whole["bytes"].as_f64().unwrap() / whole["elapsed_s"].as_f64().unwrap() / 1048576.0;
    assert!(
        whole_bw > 1.2 * bw,
        "the warm-up at 40 MiB/s is not counted: {whole_bw}"
    );
    assert!(text.contains("write rep 1: steady after "), "{text}");
    assert!(text.contains("is in the series, not counted"), "{text}");
}

#[test]
fn a_steady_target_is_steady_in_its_first_windows() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&["--bw", "20m"]) else {
        return;
    };
    let (p, _) = steady_write(fs.path(), "120s", "bw:10%:3s");
    assert_empty(fs.source());
    let st = &p["steady"];
    assert_eq!(st["reached"], true, "{st}");
    // The first window ends in the 4th second (one sample a second); the
    // bound is half the time limit, so a loaded machine's stray samples
    // cannot break it, while a phase cut only by its limit would.
    let at = st["at_s"].as_f64().unwrap();
    assert!(at < 60.0, "steady only at {at} s of a steady target: {st}");
    assert!((p["bw_mib_s"].as_f64().unwrap() - 20.0).abs() <= 2.0, "{p}");
    check_window(&p);
}

#[test]
fn a_phase_that_ends_first_is_not_steady_and_keeps_its_figures() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&["--bw", "20m"]) else {
        return;
    };
    // A 5 s window cannot fit in a 3 s phase.
    let (p, text) = steady_write(fs.path(), "3s", "bw:50%:5s");
    assert_empty(fs.source());
    let st = &p["steady"];
    assert_eq!(st["reached"], false, "{st}");
    assert!(
        st.get("at_s").is_none() && st.get("whole").is_none(),
        "{st}"
    );
    assert!(p["elapsed_s"].as_f64().unwrap() >= 2.9, "{p}");
    assert!(
        text.contains("not steady (bw within 50% over 5.000 s) when the phase ended"),
        "{text}"
    );
    assert!(text.contains("figures cover the whole phase"), "{text}");
}

#[test]
fn steady_is_refused_where_it_cannot_work() {
    let d = scratch();
    let data = d.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let j = d.path().join("r.json");
    for bad in [
        // No time bound: nothing would stop a phase that is never steady.
        vec!["--steady", "iops:5%:30s"],
        vec!["--time", "10s", "--steady", "iops:5%"],
        vec!["--time", "10s", "--steady", "lat:5%:30s"],
        vec!["--time", "10s", "--steady", "iops:5%:1s"],
        vec!["--time", "10s", "--steady", "iops:-5:3s"],
        vec![
            "--time",
            "10s",
            "--steady",
            "iops:5%:3s",
            "--interval",
            "off",
        ],
    ] {
        let mut args = vec!["run", "--op", "write", "--size", "1m", "--json", s(&j)];
        args.extend(bad.iter().copied());
        args.push(s(&data));
        let out = run(&args);
        assert_code(&out, 2);
        assert!(
            stderr(&out).contains("--steady"),
            "{bad:?}: {}",
            stderr(&out)
        );
        assert!(!j.exists(), "{bad:?}");
    }
    // The same for meta and for a sweep's inner command.
    let out = run(&[
        "meta",
        "--ops",
        "create",
        "--steady",
        "iops:5%:3s",
        s(&data),
    ]);
    assert_code(&out, 2);
    let out = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "1m",
        "--steady",
        "bw:5%:3s",
        s(&data),
    ]);
    assert_code(&out, 2);
    // fio's steady-state options are refused where the executor cannot
    // judge them, each naming what is missing.
    let dir = format!("--directory={}", s(&data));
    for (opts, why) in [
        (&["--ss=iops:5%", "--runtime=5"][..], "steadystate_duration"),
        (
            &["--ss=iops:5%", "--ss_dur=1", "--runtime=5"][..],
            "at least 2",
        ),
        (
            &["--ss=iops:5%", "--ss_dur=1500ms", "--runtime=5"][..],
            "whole seconds",
        ),
        (&["--ss=iops:5%", "--ss_dur=3"][..], "runtime="),
        (
            &["--ss=lat:5%", "--ss_dur=3", "--runtime=5"][..],
            "not a criterion",
        ),
        (
            &["--ss=iops", "--ss_dur=3", "--runtime=5"][..],
            "CRITERION:LIMIT",
        ),
        (&["--ss=bw:-1", "--ss_dur=3", "--runtime=5"][..], "number"),
        (
            &["--ss=iops:nan%", "--ss_dur=3", "--runtime=5"][..],
            "number",
        ),
    ] {
        let mut args = vec!["fio", "--name=j", "--rw=write", "--size=1m", dir.as_str()];
        args.extend_from_slice(opts);
        let out = run(&args);
        assert_code(&out, 2);
        assert!(stderr(&out).contains(why), "{opts:?}: {}", stderr(&out));
    }
    assert!(names(&data).is_empty(), "{:?}", names(&data));
}

#[test]
fn a_sweep_point_reports_its_steady_window() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&["--bw", "20m"]) else {
        return;
    };
    let o = scratch();
    let j = o.path().join("s.json");
    let out = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--json",
        s(&j),
        "-q",
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "1g",
        "--xfer",
        "64k",
        "--time",
        "120s",
        "--steady",
        "bw:10%:3s",
        s(fs.path()),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    for pt in v["points"].as_array().unwrap() {
        let p = &pt["result"]["phases"][0];
        assert_eq!(p["steady"]["reached"], true, "{p}");
        check_window(p);
    }
    assert_empty(fs.source());
}

/// fio's `ss=`, `ss_dur=` and `ss_ramp=` end a time-based job once its
/// bandwidth is steady, and fio's JSON `steadystate` object holds the
/// window's one-second samples; the job's figures cover the whole job
/// (warm-up included), as fio's do.
#[test]
fn fio_steadystate_ends_a_job_once_steady_and_reports_fio_s_object() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&["--bw", "20m"]) else {
        return;
    };
    let o = scratch();
    let (out_json, rec) = (o.path().join("f.json"), o.path().join("r.json"));
    let dir = format!("--directory={}", s(fs.path()));
    let output = format!("--output={}", s(&out_json));
    let record = format!("--ioscale-json={}", s(&rec));
    let out = run(&[
        "fio",
        "--name=j",
        "--rw=write",
        "--bs=64k",
        "--size=1g",
        "--time_based",
        "--runtime=60",
        "--ss=bw:10%",
        "--ss_dur=3",
        "--ss_ramp=1",
        "--output-format=json",
        &dir,
        &output,
        &record,
    ]);
    assert_code(&out, 0);
    let f = json(&out_json);
    let job = &f["jobs"][0];
    let ss = &job["steadystate"];
    assert_eq!(ss["ss"], "bw:10.000000%", "{ss}");
    assert_eq!(
        (ss["duration"].as_u64(), ss["attained"].as_u64()),
        (Some(3), Some(1)),
        "{ss}"
    );
    let crit: f64 = ss["criterion"]
        .as_str()
        .unwrap()
        .trim_end_matches('%')
        .parse()
        .unwrap();
    assert!(crit < 10.0, "{ss}");
    assert_eq!(ss["slope"], 0.0);
    let bw = ss["data"]["bw"].as_array().unwrap();
    let iops = ss["data"]["iops"].as_array().unwrap();
    assert_eq!((bw.len(), iops.len()), (3, 3), "{ss}");
    // The samples are capped by the file system's 20 MiB/s (a loaded
    // machine gives less: 9.4 MiB/s under four busy loops), and are of
    // 64 KiB requests.
    let mean = ss["data"]["bw_mean"].as_f64().unwrap() / 1_048_576.0;
    assert!(mean > 0.0 && mean < 1.15 * 20.0, "{ss}");
    for (b, i) in bw.iter().zip(iops) {
        assert_eq!(b.as_u64().unwrap(), i.as_u64().unwrap() * 65536, "{ss}");
    }
    let dev = ss["max_deviation"].as_f64().unwrap();
    assert!((100.0 * dev / ss["data"]["bw_mean"].as_f64().unwrap() - crit).abs() < 1e-3);
    // Ended at steady state, well before runtime=60.
    let rv = json(&rec);
    let p = &phases(&rv)[0];
    assert_eq!(p["steady"]["reached"], true, "{p}");
    let at = p["steady"]["at_s"].as_f64().unwrap();
    assert!((4.0..30.0).contains(&at), "{p}");
    // fio's figures cover the whole job, warm-up included.
    assert!(p["steady"].get("whole").is_none(), "{p}");
    assert_eq!(
        job["write"]["io_bytes"].as_u64(),
        p["bytes"].as_u64(),
        "{job}"
    );
    let window: u64 = bw.iter().map(|b| b.as_u64().unwrap()).sum();
    assert!(p["bytes"].as_u64().unwrap() > window, "{p}");
}

/// The words and separators of a `steadystate  :` line, its numbers and
/// their unit prefixes masked (`attained=<>, bw=N<B>/s (N<B>/s), …`).
fn ss_shape(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|c| c.is_ascii_digit() || *c == '.')
            {
                chars.next();
            }
            // A unit prefix after the number: k, M, G, Ki, Mi, Gi.
            if chars.peek().is_some_and(|c| "kKMGT".contains(*c)) {
                chars.next();
                if chars.peek() == Some(&'i') {
                    chars.next();
                }
            }
            out.push('N');
        } else if c == '-' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            // A sign is part of the number: a measured slope falls as
            // often as it rises (fio prints it signed too).
        } else {
            out.push(c);
        }
    }
    out.replace("attained=yes", "attained=<>")
        .replace("attained=no", "attained=<>")
}

/// A number with fio's unit prefix (`867MiB`, `888MB`, `222k`, `8004`)
/// times its prefix's base, and the prefix's multiplier.
fn fio_number(text: &str) -> (f64, f64) {
    let n: String = text
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let rest = &text[n.len()..];
    let bin = rest.get(1..2) == Some("i");
    let base = if bin { 1024f64 } else { 1000f64 };
    let pow = match rest.chars().next() {
        Some('k' | 'K') => 1,
        Some('M') => 2,
        Some('G') => 3,
        Some('T') => 4,
        _ => 0,
    };
    let m = base.powi(pow);
    (n.parse::<f64>().unwrap() * m, m)
}

/// The value of `key=` in `line`, up to the next `, ` or space.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let at = line
        .find(key)
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        + key.len();
    line[at..].split([',', ' ']).next().unwrap()
}

/// fio's normal output prints the `steadystate  :` line of a job with
/// `ss=`: the same fields in the same order as fio 3.33's own lines (kept
/// from real fio in `golden/fio-3.33-steadystate.txt`), and the values
/// those of the judged window's one-second samples in the run's record.
#[test]
fn fio_normal_output_prints_fio_s_steadystate_line() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&["--bw", "20m"]) else {
        return;
    };
    let golden = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/fio-3.33-steadystate.txt"),
    )
    .unwrap();
    let fio_lines: Vec<&str> = golden.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(fio_lines.len(), 3, "{golden}");
    let dir = format!("--directory={}", s(fs.path()));
    // iops:10% is attained on the steady file system; bw_slope:1000 (in
    // bytes/s a second) runs to runtime=4 without.
    for (ss, dur, runtime, like) in [
        ("--ss=iops:10%", "--ss_dur=3", "--runtime=60", fio_lines[0]),
        (
            "--ss=bw_slope:1000",
            "--ss_dur=2",
            "--runtime=4",
            fio_lines[1],
        ),
    ] {
        let o = scratch();
        let (text_out, rec) = (o.path().join("f.txt"), o.path().join("r.json"));
        let output = format!("--output={}", s(&text_out));
        let record = format!("--ioscale-json={}", s(&rec));
        let out = run(&[
            "fio",
            "--name=j",
            "--rw=write",
            "--bs=64k",
            "--size=1g",
            "--time_based",
            ss,
            dur,
            runtime,
            &dir,
            &output,
            &record,
        ]);
        assert_code(&out, 0);
        let text = std::fs::read_to_string(&text_out).unwrap();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("  steadystate  :"))
            .collect();
        assert_eq!(lines.len(), 1, "{text}");
        let line = lines[0];
        assert_eq!(ss_shape(line), ss_shape(like), "{line}\nfio: {like}");
        // Right after the latency line, before the blank line, as fio.
        assert!(text.contains(&format!("depth=1\n{line}\n\n")), "{text}");
        // The values are the window's, from the record's samples.
        let rv = json(&rec);
        let st = &phases(&rv)[0]["steady"];
        let ops: Vec<f64> = st["sample_ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let bytes: Vec<f64> = st["sample_bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert!(!ops.is_empty(), "{st}");
        let mean = |v: &[f64]| (v.iter().sum::<f64>() / v.len() as f64).floor();
        let (iops, bw) = (mean(&ops), mean(&bytes));
        let attained = if st["reached"] == true { "yes" } else { "no" };
        assert_eq!(field(line, "attained="), attained, "{line}");
        // Four significant digits at most, so within 0.5% (or one unit).
        let close = |(got, unit): (f64, f64), want: f64| {
            assert!(
                (got - want).abs() <= (0.005 * want).max(unit),
                "{got} against {want}: {line}"
            );
        };
        let kib = (bw / 1024.0).floor();
        close(fio_number(field(line, "bw=")), kib * 1024.0);
        // fio's parenthesised figure is the KiB count read as kB.
        let alt = line.split('(').nth(1).unwrap();
        close(fio_number(alt), kib * 1000.0);
        close(fio_number(field(line, "iops=")), iops);
        let crit_text = line.rsplit('=').next().unwrap();
        let crit: f64 = crit_text.trim_end_matches('%').parse().unwrap();
        if ss.contains("slope") {
            // Least-squares slope of the seconds' bytes, no percentage.
            let n = bytes.len() as f64;
            let mx = (n - 1.0) / 2.0;
            let my = bytes.iter().sum::<f64>() / n;
            let (num, den) = bytes.iter().enumerate().fold((0.0, 0.0), |(a, b), (i, y)| {
                (a + (i as f64 - mx) * (y - my), b + (i as f64 - mx).powi(2))
            });
            assert!((crit - num / den).abs() <= 0.001, "{line} {st}");
            assert!(!crit_text.ends_with('%'));
        } else {
            let my = ops.iter().sum::<f64>() / ops.len() as f64;
            let dev = ops.iter().map(|v| (v - my).abs()).fold(0.0, f64::max);
            assert!((crit - 100.0 * dev / my).abs() <= 0.001, "{line} {st}");
            assert_eq!(attained, "yes", "{line}");
        }
    }
}

/// A time-based job whose size= is done in less than the window runs its
/// file again and again; fio judges steadiness across the loop, and so
/// does ioscale: the job is found steady and ends long before runtime=,
/// where a judgement restarted on every pass could never fill a window.
#[test]
fn fio_steadystate_is_judged_across_a_time_based_job_s_passes() {
    let _t = turn();
    // 20 MiB/s: 8 MiB is one pass of 0.4 s, a window of 3 s takes 7.
    let Some(fs) = TestFs::mount(&["--bw", "20m"]) else {
        return;
    };
    let o = scratch();
    let (out_json, rec) = (o.path().join("f.json"), o.path().join("r.json"));
    let dir = format!("--directory={}", s(fs.path()));
    let output = format!("--output={}", s(&out_json));
    let record = format!("--ioscale-json={}", s(&rec));
    let out = run(&[
        "fio",
        "--name=j",
        "--rw=write",
        "--bs=64k",
        "--size=8m",
        "--time_based",
        "--runtime=60",
        "--ss=bw:20%",
        "--ss_dur=3",
        "--output-format=json",
        &dir,
        &output,
        &record,
    ]);
    assert_code(&out, 0);
    let job = &json(&out_json)["jobs"][0];
    let ss = &job["steadystate"];
    assert_eq!(ss["attained"].as_u64(), Some(1), "{ss}");
    let bw = ss["data"]["bw"].as_array().unwrap();
    assert_eq!(bw.len(), 3, "{ss}");
    // Each second of the window moved more than one pass's 8 MiB would
    // leave for it if the seconds were counted per pass: the seconds
    // span passes.
    let window: u64 = bw.iter().map(|b| b.as_u64().unwrap()).sum();
    assert!(window > 8 << 20, "{ss}");
    // Many passes ran, and the job ended at steady state, well before
    // its runtime.
    let written = job["write"]["io_bytes"].as_u64().unwrap();
    assert!(written >= 3 * (8 << 20), "{written}");
    let runtime_ms = job["job_runtime"].as_u64().unwrap();
    assert!(runtime_ms < 40_000, "ran {runtime_ms} ms: never steady");
    // The record holds one result a pass: the last pass's watch is the
    // one carried through all of them.
    let rv = json(&rec);
    let passes = rv.as_array().unwrap();
    assert!(passes.len() >= 3, "{} passes", passes.len());
    let last = phases(passes.last().unwrap()).last().unwrap().clone();
    assert_eq!(last["steady"]["reached"], true, "{last}");
}
