//! `ioscale sweep`, `report` and `compare` end to end on real file systems:
//! point counts and the JSON record on tmpfs and loop-mounted ext4, an
//! interrupted sweep (SIGINT in a child process) resumed without re-running
//! its finished points, refusals, and the known answer of the latency
//! injecting FUSE file system (ioscale-testfs).

mod common;

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// Runs a 2-point, 2-rep sweep on `dir` and checks its record.
fn small_sweep(dir: &Path, out: &Path) -> Value {
    let json = out.join("s.json");
    let csv = out.join("s.csv");
    let r = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--reps",
        "2",
        "--json",
        s(&json),
        "--csv",
        s(&csv),
        "--",
        "run",
        "--op",
        "write,read",
        "--size",
        "1m",
        "--xfer",
        "64k",
        s(dir),
    ]);
    assert_code(&r, 0);
    let text = stdout(&r);
    assert!(
        text.contains(
            "Operation  Threads  File count  Directory per file  Duration (s)  Throughput (MiB/s)"
        ),
        "{text}"
    );
    assert!(text.contains("Analysis"), "{text}");
    let v = common::json(&json);
    assert_eq!(v["kind"], "sweep");
    assert_eq!(v["schema"], 1);
    assert_eq!(v["points_total"], 2);
    assert_eq!(v["interrupted"], false);
    assert_eq!(v["config"]["threads"], serde_json::json!([1, 2]));
    assert_eq!(v["config"]["reps"], 2);
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for (i, p) in points.iter().enumerate() {
        let n = i as u64 + 1;
        assert_eq!(p["index"], i as u64);
        assert_eq!(p["threads"], n);
        assert_eq!(p["file_count"], n, "per-thread layout");
        let ops = p["ops"].as_array().unwrap();
        assert_eq!(ops.len(), 2);
        for (o, name) in ops.iter().zip(["write", "read"]) {
            assert_eq!(o["op"], name);
            assert_eq!(o["reps"], 2);
            for k in ["min", "max", "mean", "median", "stddev"] {
                assert!(o["bw_mib_s"][k].as_f64().unwrap() > 0.0, "{k}: {o}");
            }
            assert!(o["little_latency_s"].as_f64().unwrap() > 0.0);
            assert!(o["outlier_reps"].is_array());
        }
        assert!(p["geomean_bw_mib_s"].as_f64().unwrap() > 0.0);
        let phases = phases(&p["result"]);
        assert_eq!(phases.len(), 4, "2 ops × 2 reps");
        for ph in phases {
            check_phase(ph, ph["op"].as_str().unwrap(), n, n << 20, 64 << 10);
        }
    }
    let curves = v["analysis"]["curves"].as_array().unwrap();
    assert_eq!(curves.len(), 2, "write and read");
    for c in curves {
        assert!(c["peak_threads"].as_u64().unwrap() >= 1);
        assert!(!c["sentences"].as_array().unwrap().is_empty());
    }
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().count(), 1 + 4, "{csv}");
    v
}

#[test]
fn sweep_on_tmpfs_and_ext4() {
    let out = scratch();
    let mut ran = 0;
    if let Some(m) = tmpfs("size=64m") {
        let v = small_sweep(m.path(), out.path());
        assert_eq!(v["host"]["fs_type"], "tmpfs");
        assert_empty(m.path());
        ran += 1;
    }
    if let Some(m) = loop_ext4("64M") {
        let v = small_sweep(m.path(), out.path());
        assert_eq!(v["host"]["fs_type"], "ext4");
        ran += 1;
    }
    if ran == 0 {
        let dir = scratch();
        small_sweep(dir.path(), out.path());
    }
}

/// The sweep of the interrupt test: 12 points of about 0.3 s each.
fn slow_sweep_args(json: &Path, dir: &Path) -> Vec<String> {
    [
        "sweep",
        "--threads",
        "1..12",
        "--json",
        s(json),
        "--",
        "run",
        "--op",
        "write",
        "--xfer",
        "4k",
        "--size",
        "256m",
        "--sync",
        "each",
        "--time",
        "300ms",
        s(dir),
    ]
    .iter()
    .map(|a| a.to_string())
    .collect()
}

#[test]
fn interrupted_sweep_keeps_points_and_resumes() {
    let dir = scratch();
    let out = scratch();
    let json = out.path().join("r.json");
    let args = slow_sweep_args(&json, dir.path());
    let mut child = Command::new(ioscale_path())
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for two finished points, then interrupt mid-sweep.
    let t0 = Instant::now();
    loop {
        let n = std::fs::read(&json)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map(|v| v["points"].as_array().map(Vec::len).unwrap_or(0))
            .unwrap_or(0);
        if n >= 2 {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sweep ended before it could be interrupted"
        );
        assert!(t0.elapsed() < Duration::from_secs(60), "no point in 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let outp = child.wait_with_output().unwrap();
    assert_code(&outp, 130);
    assert!(
        stderr(&outp).contains("--resume continues"),
        "{}",
        stderr(&outp)
    );
    let v = common::json(&json);
    assert_eq!(v["interrupted"], true);
    let kept = v["points"].as_array().unwrap().clone();
    assert!(
        kept.len() >= 2 && kept.len() < 12,
        "{} points kept",
        kept.len()
    );
    assert_eq!(v["points_total"], 12);
    assert_empty(dir.path());

    // Different arguments are refused.
    let mut other = args.clone();
    other[2] = "1..13".into();
    other.insert(5, "--resume".into());
    let r = run(&other.iter().map(String::as_str).collect::<Vec<_>>());
    assert_code(&r, 2);
    assert!(
        stderr(&r).contains("different arguments") && stderr(&r).contains("--threads"),
        "{}",
        stderr(&r)
    );

    // The same arguments with --resume finish it without re-running.
    let mut again = args.clone();
    again.insert(5, "--resume".into());
    let r = run(&again.iter().map(String::as_str).collect::<Vec<_>>());
    assert_code(&r, 0);
    assert!(
        stderr(&r).contains(&format!("{} of 12 points already done", kept.len())),
        "{}",
        stderr(&r)
    );
    let v = common::json(&json);
    assert_eq!(v["interrupted"], false);
    let all = v["points"].as_array().unwrap();
    assert_eq!(all.len(), 12);
    for (i, p) in all.iter().enumerate() {
        assert_eq!(p["index"], i as u64);
        assert_eq!(p["threads"], i as u64 + 1);
    }
    for k in &kept {
        let i = k["index"].as_u64().unwrap() as usize;
        assert_eq!(&all[i], k, "point {i} was run again");
    }
}

#[test]
fn bad_sweeps_are_refused_with_exit_2() {
    let dir = scratch();
    let d = s(dir.path());
    for (args, want) in [
        (
            vec!["sweep", "--threads", "1,3", "--", "run", "--total", "4m", d],
            "does not split evenly",
        ),
        (vec!["sweep", "--threads", "x", "--", "run", d], "--threads"),
        (
            vec!["sweep", "--threads", "1", "--", "clean", d],
            "sweep runs `run` or `meta`",
        ),
        (
            vec!["sweep", "--threads", "1", "--", "run", "--bogus", d],
            "the command after --",
        ),
        (
            vec!["sweep", "--threads", "1", "--layout", "x", "--", "run", d],
            "unknown layout",
        ),
        // A misspelt flag keeps clap's did-you-mean tip (issue 26).
        (
            vec!["sweep", "--threads", "1", "--", "run", "--sizee", "1m", d],
            "tip: a similar argument exists: '--size'",
        ),
        // An inner --threads 0 is refused, not silently replaced.
        (
            vec![
                "sweep",
                "--threads",
                "1",
                "--",
                "run",
                "--size",
                "1m",
                "--threads",
                "0",
                d,
            ],
            "--threads 0: not a thread count",
        ),
        (
            vec!["sweep", "--threads", "1", "--", "meta", "--threads", "0", d],
            "--threads 0: not a thread count",
        ),
    ] {
        let r = run(&args);
        assert_code(&r, 2);
        assert!(stderr(&r).contains(want), "{args:?}: {}", stderr(&r));
    }
    // Another inner --threads is said not to count: the points set theirs.
    let r = run(&[
        "sweep",
        "--threads",
        "1",
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "64k",
        "--xfer",
        "64k",
        "--threads",
        "3",
        d,
    ]);
    assert_code(&r, 0);
    assert!(
        stderr(&r).contains("--threads 3 is not used: the sweep's --threads LIST sets"),
        "{}",
        stderr(&r)
    );
    assert!(stdout(&r).contains("write x 1 worker(s)"), "{}", stdout(&r));
    let r = run(&["sweep", "--threads", "1", "--resume", "--", "run", d]);
    assert_code(&r, 2);
    assert!(stderr(&r).contains("--json"), "{}", stderr(&r));
    let missing = dir.path().join("none.json");
    let r = run(&[
        "sweep",
        "--threads",
        "1",
        "--resume",
        "--json",
        s(&missing),
        "--",
        "run",
        d,
    ]);
    assert_code(&r, 2);
    assert!(stderr(&r).contains("cannot read"), "{}", stderr(&r));
}

/// `--nodes … --resume` on the record of a sweep without `--nodes` (or of
/// other node counts) is refused before anything is launched: the merged
/// record would lose the points it holds.
#[test]
fn a_node_sweep_does_not_resume_a_record_of_other_points() {
    let dir = scratch();
    let json = dir.path().join("plain.json");
    let inner = ["--", "run", "--size", "64k", "--xfer", "64k", s(dir.path())];
    let mut plain = vec!["sweep", "--threads", "1", "--json", s(&json)];
    plain.extend(inner);
    assert_code(&run(&plain), 0);
    let before = std::fs::read(&json).unwrap();
    let mut nodes = vec!["sweep", "--nodes", "1", "--threads", "1"];
    nodes.extend(["--sim-nodes", "/bin/true", "--json", s(&json), "--resume"]);
    nodes.extend(inner);
    let r = run(&nodes);
    assert_code(&r, 2);
    let err = stderr(&r);
    assert!(
        err.contains("--resume") && err.contains("no node count"),
        "{err}"
    );
    assert_eq!(std::fs::read(&json).unwrap(), before, "the record is kept");
}

#[test]
fn sweep_of_meta_counts_files() {
    let dir = scratch();
    let out = scratch();
    let json = out.path().join("m.json");
    let r = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--layout",
        "same-dir,per-thread-dir",
        "--scale",
        "total",
        "--json",
        s(&json),
        "--",
        "meta",
        "--op",
        "create,delete",
        "--files",
        "64",
        "--file-size",
        "4k",
        s(dir.path()),
    ]);
    assert_code(&r, 0);
    let v = common::json(&json);
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 4);
    for p in pts {
        assert_eq!(p["file_count"], 64, "total kept at 64 files");
    }
    assert_eq!(pts[0]["layout"], "same-dir");
    assert_eq!(pts[0]["dir_per_file"], false);
    assert_eq!(pts[2]["dir_per_file"], true);
}

#[test]
fn report_and_compare_render_saved_records() {
    let dir = scratch();
    let out = scratch();
    let a = out.path().join("a.json");
    let b = out.path().join("b.json");
    for f in [&a, &b] {
        let r = run(&[
            "sweep",
            "--threads",
            "1,2",
            "--json",
            s(f),
            "-q",
            "--",
            "run",
            "--op",
            "write",
            "--size",
            "1m",
            "--xfer",
            "64k",
            s(dir.path()),
        ]);
        assert_code(&r, 0);
        assert!(stdout(&r).is_empty());
    }
    let csv = out.path().join("again.csv");
    let r = run(&["report", s(&a), "--csv", s(&csv)]);
    assert_code(&r, 0);
    assert!(stdout(&r).contains("Throughput (MiB/s)"));
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 3);
    // One unit system per report: --units si turns every figure to MB/s.
    let r = run(&["report", s(&a), "--units", "si"]);
    assert_code(&r, 0);
    let si = stdout(&r);
    assert!(si.contains("Throughput (MB/s)"), "{si}");
    assert!(!si.contains("MiB/s"), "{si}");
    let r = run(&["report", s(&a), "--units", "bytes"]);
    assert_code(&r, 2);
    assert!(stderr(&r).contains("--units"), "{}", stderr(&r));

    let r = run(&["compare", s(&a), s(&b)]);
    assert_code(&r, 0);
    let text = stdout(&r);
    assert!(text.contains("×2"), "{text}");
    assert!(text.contains("b ÷ a: geometric mean"), "{text}");
    let r = run(&["compare", s(&a), s(&b), "--format", "json"]);
    let v: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), 2);

    // A plain run record renders too.
    let runj = out.path().join("run.json");
    let r = run(&[
        "run",
        "--op",
        "write",
        "--size",
        "1m",
        "--json",
        s(&runj),
        "-q",
        s(dir.path()),
    ]);
    assert_code(&r, 0);
    let html = out.path().join("run.html");
    let r = run(&["report", s(&runj), "--html", s(&html)]);
    assert_code(&r, 0);
    assert!(stdout(&r).contains("workload:"), "the run's own table");
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));
    let r = run(&["compare", s(&runj), s(&a)]);
    assert_code(&r, 0);

    let r = run(&["report", s(&out.path().join("nope.json"))]);
    assert_code(&r, 2);
}

/// The test FUSE file system's binary, built beside ioscale by
/// `cargo test --workspace` (scripts/test).
fn testfs_bin() -> PathBuf {
    ioscale_path().with_file_name("ioscale-testfs")
}

fn mounted(mp: &Path) -> bool {
    let want = mp.canonicalize().unwrap();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(want.to_str().unwrap()))
}

/// Known answer: with 2 ms per request, Little's law must find a latency
/// near 2 ms, and throughput must rise with threads (the EFS shape).
#[test]
fn latency_of_the_fuse_test_fs_is_recovered() {
    if !Path::new("/dev/fuse").exists() || unsafe { libc::geteuid() } != 0 {
        eprintln!("note: skipping: needs /dev/fuse and root");
        return;
    }
    let bin = testfs_bin();
    assert!(
        bin.exists(),
        "{} is missing: build the workspace (`cargo test --workspace`, as scripts/test does)",
        bin.display()
    );
    let src = scratch();
    let mp = tempfile::tempdir().unwrap();
    let mut fs = Command::new(&bin)
        .args(["--delay", "2ms"])
        .arg(src.path())
        .arg(mp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !mounted(mp.path()) {
        assert!(fs.try_wait().unwrap().is_none(), "ioscale-testfs exited");
        assert!(t0.elapsed() < Duration::from_secs(20), "no mount in 20 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = scratch();
    let json = out.path().join("f.json");
    let r = run(&[
        "sweep",
        "--threads",
        "1,2,4,8",
        "--scale",
        "total",
        "--json",
        s(&json),
        "--",
        "run",
        "--op",
        "write",
        "--xfer",
        "64k",
        "--total",
        "32m",
        "--direct",
        s(mp.path()),
    ]);
    let _ = Command::new("kill")
        .args(["-TERM", &fs.id().to_string()])
        .status();
    let _ = fs.wait();
    assert_code(&r, 0);
    let v = common::json(&json);
    let c = &v["analysis"]["curves"][0];
    let lat = c["little"][0]["latency_s"].as_f64().unwrap();
    // The 2 ms delay is a floor; how far above it depends on the load.
    assert!(
        (0.0015..0.05).contains(&lat),
        "Little's-law latency {lat} s, want at least the 2 ms delay"
    );
    let bw: Vec<f64> = c["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["value"].as_f64().unwrap())
        .collect();
    assert!(
        bw[3] > 2.5 * bw[0],
        "throughput must rise with threads: {bw:?}"
    );
    assert!(
        stdout(&r).contains("Per-operation latency ≈"),
        "{}",
        stdout(&r)
    );
    assert_eq!(v["host"]["fs_type"], "fuse.ioscale-testfs");
}

/// The points compared with each other (two targets at one thread count)
/// take turns repetition by repetition, as the plain progress lines show
/// (rep 1 of a, rep 1 of b, rep 2 of b, rep 2 of a, rep 3 of a, …),
/// thread count by thread count;
/// the record keeps the plan's point order and every repetition of each
/// point under its own number.
#[test]
fn compared_points_take_turns_repetition_by_repetition() {
    let d = scratch();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let jf = d.path().join("s.json");
    let targets = format!("{},{}", s(&a), s(&b));
    let r = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--reps",
        "3",
        "--target",
        &targets,
        "--progress",
        "plain",
        "--quiet",
        "--json",
        s(&jf),
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "256k",
        "--xfer",
        "64k",
    ]);
    assert_code(&r, 0);
    let err = stderr(&r);
    // "[point k/4] threads=N target=TARGET xfer=64 KiB write rep r/3: …"
    let ran: Vec<String> = err
        .lines()
        .filter(|l| l.contains(" write rep "))
        .map(|l| {
            let point = l
                .split(']')
                .next()
                .unwrap()
                .trim_start_matches("ioscale: [");
            let who = if l.contains(&format!(" target={} ", s(&a))) {
                "a"
            } else {
                "b"
            };
            let threads = l
                .split("threads=")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap();
            let rep = l.split(" rep ").nth(1).unwrap().split(':').next().unwrap();
            format!("{point} {who}{threads} {rep}")
        })
        .collect();
    let want = [
        "point 1/4 a1 1/3",
        "point 2/4 b1 1/3",
        "point 2/4 b1 2/3",
        "point 1/4 a1 2/3",
        "point 1/4 a1 3/3",
        "point 2/4 b1 3/3",
        "point 3/4 a2 1/3",
        "point 4/4 b2 1/3",
        "point 4/4 b2 2/3",
        "point 3/4 a2 2/3",
        "point 3/4 a2 3/3",
        "point 4/4 b2 3/3",
    ];
    assert_eq!(ran, want, "{err}");
    // Each point is done after its last repetition, in that order.
    let done: Vec<&str> = err
        .lines()
        .filter(|l| l.contains(" done in "))
        .map(|l| l.split(']').next().unwrap())
        .collect();
    assert_eq!(
        done,
        [
            "ioscale: [point 1/4",
            "ioscale: [point 2/4",
            "ioscale: [point 3/4",
            "ioscale: [point 4/4"
        ],
        "{err}"
    );
    // The record is in the plan's order (target, then threads), each point
    // with its three repetitions numbered 0, 1, 2 and its job's 3 reps.
    let v = json(&jf);
    let pts = v["points"].as_array().unwrap();
    let order: Vec<(String, u64)> = pts
        .iter()
        .map(|p| {
            (
                p["target"].as_str().unwrap().to_string(),
                p["threads"].as_u64().unwrap(),
            )
        })
        .collect();
    let (sa, sb) = (s(&a).to_string(), s(&b).to_string());
    assert_eq!(order, [(sa.clone(), 1), (sa, 2), (sb.clone(), 1), (sb, 2)]);
    for p in pts {
        let reps: Vec<u64> = p["result"]["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|ph| ph["rep"].as_u64().unwrap())
            .collect();
        assert_eq!(reps, [0, 1, 2], "{p:#}");
        assert_eq!(p["result"]["spec"]["reps"].as_u64(), Some(3), "{p:#}");
        assert_eq!(p["ops"][0]["reps"].as_u64(), Some(3));
        assert_eq!(p["probes"].as_array().unwrap().len(), 3);
    }
    assert_empty(&a);
    assert_empty(&b);
}

/// A `meta` sweep's layouts take turns in the same way, each repetition
/// on a fresh tree that is removed after it; the record numbers them.
#[test]
fn meta_layouts_take_turns_too() {
    let d = scratch();
    let jf = d.path().join("m.json");
    let t = d.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let r = run(&[
        "sweep",
        "--threads",
        "2",
        "--reps",
        "2",
        "--layout",
        "same-dir,per-thread-dir",
        "--progress",
        "plain",
        "--quiet",
        "--json",
        s(&jf),
        "--",
        "meta",
        "--op",
        "create,delete",
        "--files",
        "20",
        s(&t),
    ]);
    assert_code(&r, 0);
    let err = stderr(&r);
    let ran: Vec<String> = err
        .lines()
        .filter(|l| l.contains(" create rep "))
        .map(|l| {
            let layout = if l.contains(" layout=same-dir ") {
                "same"
            } else {
                "per"
            };
            let rep = l.split(" rep ").nth(1).unwrap().split(':').next().unwrap();
            format!("{layout} {rep}")
        })
        .collect();
    assert_eq!(ran, ["same 1/2", "per 1/2", "per 2/2", "same 2/2"], "{err}");
    let v = json(&jf);
    for p in v["points"].as_array().unwrap() {
        let reps: Vec<(String, u64)> = p["result"]["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|ph| {
                (
                    ph["op"].as_str().unwrap().to_string(),
                    ph["rep"].as_u64().unwrap(),
                )
            })
            .collect();
        let want = [("create", 0), ("delete", 0), ("create", 1), ("delete", 1)]
            .map(|(o, r)| (o.to_string(), r));
        assert_eq!(reps, want, "{p:#}");
        assert_eq!(p["ops"][0]["reps"].as_u64(), Some(2));
    }
    assert_empty(&t);
}

/// Interrupted while the points of a thread count take turns: the points
/// finished before are kept whole, the unfinished points' repetitions are
/// lost, and --resume measures those points again, from their first
/// repetition.
#[test]
fn interrupted_interleaved_sweep_resumes_whole_points() {
    let d = scratch();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let out = scratch();
    let jf = out.path().join("r.json");
    let targets = format!("{},{}", s(&a), s(&b));
    let args: Vec<String> = [
        "sweep",
        "--threads",
        "1,2,3",
        "--target",
        &targets,
        "--reps",
        "2",
        "--json",
        s(&jf),
        "--",
        "run",
        "--op",
        "write",
        "--xfer",
        "4k",
        "--size",
        "256m",
        "--sync",
        "each",
        "--time",
        "200ms",
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    let mut child = Command::new(ioscale_path())
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first thread count's two points, then interrupt.
    let t0 = Instant::now();
    loop {
        let n = std::fs::read(&jf)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map(|v| v["points"].as_array().map(Vec::len).unwrap_or(0))
            .unwrap_or(0);
        if n >= 2 {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "ended too soon");
        assert!(t0.elapsed() < Duration::from_secs(60), "no point in 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let outp = child.wait_with_output().unwrap();
    assert_code(&outp, 130);
    let v = json(&jf);
    let kept = v["points"].as_array().unwrap().clone();
    assert!((2..6).contains(&kept.len()), "{} points kept", kept.len());
    // A kept point has all its repetitions: none is saved half-measured.
    for k in &kept {
        assert_eq!(k["ops"][0]["reps"].as_u64(), Some(2), "{k:#}");
    }
    assert_empty(&a);
    assert_empty(&b);

    let mut again = args.clone();
    again.push("--resume".into());
    let r = run(&again.iter().map(String::as_str).collect::<Vec<_>>());
    assert_code(&r, 0);
    assert!(
        stderr(&r).contains(&format!("{} of 6 points already done", kept.len())),
        "{}",
        stderr(&r)
    );
    let v = json(&jf);
    let all = v["points"].as_array().unwrap();
    assert_eq!(all.len(), 6);
    for (i, p) in all.iter().enumerate() {
        assert_eq!(p["index"], i as u64);
        let reps: Vec<u64> = p["result"]["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|ph| ph["rep"].as_u64().unwrap())
            .collect();
        assert_eq!(reps, [0, 1], "point {i}");
    }
    for k in &kept {
        let i = k["index"].as_u64().unwrap() as usize;
        assert_eq!(&all[i], k, "point {i} was run again");
    }
}

/// A stand-in for `scripts/mpi-nodes` (`--sim-nodes`): for `run N PER …
/// -- EXE ARGS…` it makes `DIR/launched-N`, runs `EXE ARGS…` as one
/// process (the sweep of that node count, without MPI), then makes
/// `DIR/done-N` and exits with its code.
fn fake_launcher(dir: &Path) -> PathBuf {
    let script = dir.join("fake-nodes");
    let text = format!(
        "#!/bin/sh\nn=$2\ntouch '{d}'/launched-$n\nwhile [ \"$1\" != -- ]; do shift; done\nshift\n\"$@\"\ncode=$?\ntouch '{d}'/done-$n\nexit $code\n",
        d = dir.display()
    );
    std::fs::write(&script, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// `--nodes` lists that cannot run are refused before anything is
/// launched (exit 2 naming the flag): a repeated node count (before, it
/// ran twice and its points were in the record twice), a rank count past
/// what the nodes can hold (before, `65536 × 65536` panicked on the
/// overflow, exit 101) and more simulated nodes than one machine runs
/// (before, `--nodes 4294967295` was handed to the launcher).
#[test]
fn node_counts_at_the_edges_are_refused_before_any_launch() {
    let dir = scratch();
    let fake = fake_launcher(dir.path());
    let data = scratch();
    let cases: &[(&[&str], &str)] = &[
        (&["--nodes", "1,2,1"], "--nodes: 1 is given twice"),
        (&["--nodes", "4294967295"], "--nodes"),
        (
            &["--nodes", "65536", "--ranks-per-node", "65536"],
            "--ranks-per-node",
        ),
        (
            &["--nodes", "2", "--ranks-per-node", "2147483648"],
            "--ranks-per-node",
        ),
        (
            &[
                "--nodes",
                "2",
                "--ranks-per-node",
                "2147483647",
                "--hosts",
                "a,b",
            ],
            "--ranks-per-node",
        ),
    ];
    for (flags, names) in cases {
        let mut args = vec!["sweep", "--threads", "1", "--sim-nodes", s(&fake)];
        args.extend(flags.iter());
        args.extend([
            "--",
            "run",
            "--size",
            "64k",
            "--xfer",
            "64k",
            s(data.path()),
        ]);
        let r = run(&args);
        assert_no_panic(&r);
        let err = stderr(&r);
        assert_eq!(r.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.contains(names), "{flags:?}: should name {names}: {err}");
        let launched: Vec<String> = names_of(dir.path())
            .into_iter()
            .filter(|n| n.starts_with("launched-"))
            .collect();
        assert!(launched.is_empty(), "{flags:?}: launched {launched:?}");
    }
    assert_empty(data.path());
}

fn names_of(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Ctrl-C between two node counts (after the first launch ended, while
/// its points are merged and written) stops the sweep there: the next
/// node count is not launched, exit 130, and the record holds the first.
/// `--json` is a FIFO so that the sweep is held in that window, with no
/// timing: it waits for a reader until the test has sent the signal.
/// Before, only a signal during a launch stopped it, and the second node
/// count ran in full.
#[test]
fn an_interrupt_between_node_counts_launches_no_more() {
    let dir = scratch();
    let fake = fake_launcher(dir.path());
    let data = scratch();
    let fifo = dir.path().join("record.fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path of our scratch directory.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut child = Command::new(ioscale_path())
        .args(["sweep", "--nodes", "1,2", "--threads", "1"])
        .args(["--sim-nodes", s(&fake), "--json", s(&fifo), "--"])
        .args(["run", "--size", "64k", "--xfer", "64k", s(data.path())])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !dir.path().join("done-1").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "node count 1 never ended"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The sweep is now between the two launches: merging node count 1, or
    // waiting for a reader of the FIFO to write it.
    // SAFETY: kill(2) on our own child, not yet reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    // Read every record written to the FIFO until the sweep ends.
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let mut got = Vec::new();
    let status = loop {
        use std::io::Read;
        let mut buf = [0u8; 65536];
        match (&reader).read(&mut buf) {
            Ok(0) => {}
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("reading the FIFO: {e}"),
        }
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            start.elapsed() < Duration::from_secs(240),
            "the sweep did not end"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    // Drain what the last writer left.
    loop {
        let mut buf = [0u8; 65536];
        match (&reader).read(&mut buf) {
            Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    assert!(
        !dir.path().join("launched-2").exists(),
        "node count 2 was launched after the interrupt:\n{err}"
    );
    assert_eq!(status.code(), Some(130), "{err}");
    // Each write of the record, one after another: the last is the whole.
    let v: Value = serde_json::Deserializer::from_slice(&got)
        .into_iter::<Value>()
        .map(|v| v.expect("records come whole through the FIFO"))
        .last()
        .expect("a record came through the FIFO");
    assert_eq!(v["interrupted"], true, "{err}");
    assert_eq!(v["stop_reason"], "interrupted by SIGINT", "{err}");
    let series: Vec<&str> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["series"].as_str().unwrap())
        .collect();
    assert_eq!(series, ["1 node"], "{err}");
    assert_empty(data.path());
}
