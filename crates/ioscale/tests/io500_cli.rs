//! `ioscale io500` end to end: short runs (`--stonewall 2s`, small sizes)
//! on tmpfs and on a loop-mounted ext4, each phase's files checked against
//! what io500's phase definitions make (names, sizes, counts per
//! directory), the score recomputed from the phase figures, the results
//! directory, the refusals, and what an interrupted run keeps.

mod common;

use std::path::Path;

use common::io500::*;
use common::*;

fn short_run(target: &Path, tasks: usize) {
    let work = scratch();
    let data = target.join("io500-data");
    let res = work.path().join("results");
    std::fs::create_dir(&data).unwrap();
    plant_foreign(&data);
    let before = snapshot(&data);
    let cfg = ini(
        work.path(),
        &data,
        &res,
        "\n[mdtest-easy-delete]\nrun = FALSE\n[mdtest-hard-delete]\nrun = FALSE\n",
    );
    let json_path = work.path().join("io500.json");
    let t = tasks.to_string();
    let out = run(&[
        "io500",
        "--tasks",
        &t,
        "--stonewall",
        "2s",
        "--keep",
        "--json",
        s(&json_path),
        s(&cfg),
    ]);
    assert_code(&out, 0);
    let mut order: Vec<&str> = ORDER.to_vec();
    order.retain(|n| !n.ends_with("-delete"));
    check_lines(&out, &order);
    let v = json(&json_path);
    check_score(&v);
    check_layout(&data, &v, tasks);
    // The timestamp phase's time is the driver library's measurement of
    // making the file, never a constant.
    let ts = phase(&v, "timestamp")["elapsed_s"].as_f64().unwrap();
    assert!(ts > 0.0 && ts.is_finite(), "timestamp elapsed_s {ts}");
    // The results directory: the summary as printed, result.txt, each
    // phase's files as io500 names them.
    let summary = std::fs::read_to_string(res.join("result_summary.txt")).unwrap();
    assert_eq!(summary, stdout(&out));
    check_resultdir(&res, &order, &cfg);

    // A full run (deletes on, no --keep) in the same place is refused:
    // the kept phase directories are an earlier run's, which `ioscale
    // clean` recognises by their markers and removes, the user's files
    // untouched.
    let out = run(&[
        "io500",
        "--tasks",
        &t,
        "--stonewall",
        "2s",
        s(&ini(work.path(), &data, &res, "")),
    ]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("ioscale clean"), "{}", stderr(&out));
    let out = run(&["clean", s(&data)]);
    assert_code(&out, 0);
    assert_eq!(snapshot(&data), before);
    let json2 = work.path().join("full.json");
    let out = run(&[
        "io500",
        "--tasks",
        &t,
        "--stonewall",
        "2s",
        "--json",
        s(&json2),
        s(&ini(work.path(), &data, &res, "")),
    ]);
    assert_code(&out, 0);
    check_lines(&out, &ORDER);
    let v = json(&json2);
    check_score(&v);
    let e = items(&v, "mdtest-easy-write", tasks);
    assert_eq!(phase(&v, "mdtest-easy-delete")["ops"], e * tasks as u64);
    let m = items(&v, "mdtest-hard-write", tasks);
    assert_eq!(phase(&v, "mdtest-hard-delete")["ops"], m * tasks as u64);
    assert_eq!(
        snapshot(&data),
        before,
        "only the run's own files are removed"
    );
}

/// The result directory as io500 isc26_v2 leaves it: its files and none
/// else (no `*.stonewall`), result.txt's keys, config.ini io500's
/// expansion of `cfg` (and config-orig.ini the file as given), the CSVs in
/// IOR's, mdtest's and pfind's layouts.
fn check_resultdir(res: &Path, order: &[&str], cfg: &Path) {
    let mut want = vec![
        "config-orig.ini".to_string(),
        "config.ini".into(),
        "result.txt".into(),
        "result_summary.txt".into(),
        "timestampfile".into(),
    ];
    for n in order.iter().filter(|n| **n != "timestamp") {
        want.push(format!("{n}.csv"));
        if !n.starts_with("find") {
            want.push(format!("{n}.txt"));
        }
    }
    want.sort();
    assert_eq!(names(res), want);
    let result = std::fs::read_to_string(res.join("result.txt")).unwrap();
    for key in ["procs ", "version ", "config-hash ", "result-dir ", "mode "] {
        assert!(result.contains(&format!("\n{key}")), "{key}: {result}");
    }
    assert!(result.starts_with("[run]\nprocs           = "), "{result}");
    assert!(result.contains("\n[SCORE]\nMD              = "), "{result}");
    assert!(result.contains("\nhash            = "), "{result}");
    // io500's time stamps: `t_start         = 2026-11-27 20:43:51`.
    let ts = result.lines().find(|l| l.starts_with("t_start")).unwrap();
    assert_eq!(
        ts.len(),
        "t_start         = 2026-11-27 20:43:51".len(),
        "{ts}"
    );
    for n in order.iter().filter(|n| **n != "timestamp") {
        assert!(result.contains(&format!("\n[{n}]\n")), "{n}");
    }
    // The exe lines carry the values, not placeholders.
    assert!(!result.contains('<'), "{result}");
    assert!(
        result.contains(" -D 2 -O stoneWallingWearOut=1"),
        "{result}"
    );
    assert_eq!(
        std::fs::read_to_string(res.join("config-orig.ini")).unwrap(),
        std::fs::read_to_string(cfg).unwrap()
    );
    let expanded = std::fs::read_to_string(res.join("config.ini")).unwrap();
    assert!(expanded.starts_with("[global]\ndatadir = "), "{expanded}");
    assert!(
        expanded.contains("\n[debug]\nstonewall-time = 2\npause-dir = \n"),
        "{expanded}"
    );
    let head = |n: &str| {
        let t = std::fs::read_to_string(res.join(n)).unwrap();
        t.lines().next().unwrap_or_default().to_string()
    };
    assert_eq!(
        head("ior-easy-write.csv"),
        "access,rank,runtime-with-openclose,runtime,throughput-withopenclose,throughput"
    );
    assert!(head("mdtest-easy-write.csv").starts_with("rank,items,rate-Directory creation,"));
    assert!(head("find.csv").starts_with("runtime: "));
}

#[test]
fn short_run_on_tmpfs() {
    match tmpfs("size=256m") {
        Some(m) => short_run(m.path(), 3),
        None => short_run(scratch().path(), 3),
    }
}

#[test]
fn short_run_on_loop_ext4() {
    if let Some(m) = loop_ext4("256M") {
        short_run(m.path(), 2);
    }
}

#[test]
fn refusals_name_the_option() {
    let work = scratch();
    let data = work.path().join("d");
    let res = work.path().join("r");
    let cfg = ini(work.path(), &data, &res, "[ior-easy]\nfooBar = 3\n");
    let out = run(&["io500", s(&cfg)]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("[ior-easy] fooBar"),
        "{}",
        stderr(&out)
    );
    let cfg = ini(work.path(), &data, &res, "[global]\napi = MPIIO\n");
    let out = run(&["io500", s(&cfg)]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("api"), "{}", stderr(&out));
    let cfg = ini(work.path(), &data, &res, "");
    let out = run(&["io500", "--stonewall", "0", s(&cfg)]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("--stonewall"), "{}", stderr(&out));
    let out = run(&["io500", "--bogus", s(&cfg)]);
    assert_code(&out, 2);
    assert!(!data.exists(), "nothing made on a refusal");
    // A transfer past the 2 GiB a request `run` and `ior` take: before,
    // each task asked for a 1 TiB buffer and the run aborted (exit 134),
    // leaving its phase directories in the datadir.
    let cfg = ini(
        work.path(),
        &data,
        &res,
        "[ior-easy]\ntransferSize = 1t\nblockSize = 1t\n",
    );
    let out = run(&["io500", s(&cfg)]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("[ior-easy] transferSize"),
        "{}",
        stderr(&out)
    );
    assert!(!data.exists(), "nothing made on a refusal");
    // More tasks than threads a process may start: before, 100000 tasks
    // panicked spawning them (exit 134) with the phase directories made.
    let cfg = ini(work.path(), &data, &res, "");
    for t in ["4097", "100000"] {
        let out = run(&["io500", "--tasks", t, s(&cfg)]);
        assert_code(&out, 2);
        assert!(stderr(&out).contains("--tasks"), "{}", stderr(&out));
        assert!(!data.exists(), "nothing made on a refusal");
    }
    let out = run(&["io500", "--help"]);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("--stonewall"));
}

#[test]
fn an_interrupted_run_keeps_the_phases_done() {
    stopped_run_keeps_the_phases_done(libc::SIGINT, 130);
}

/// SIGHUP (a closed terminal, a dropped ssh session) stops io500 as
/// SIGTERM does, with exit 129: the phases done are printed and written
/// to the result directory, the score INVALID, the run's files removed.
/// (Before SIGHUP was handled, it killed the process where it stood:
/// nothing written, the data left.)
#[test]
fn a_hung_up_run_keeps_the_phases_done() {
    stopped_run_keeps_the_phases_done(libc::SIGHUP, 129);
}

fn stopped_run_keeps_the_phases_done(sig: i32, code: i32) {
    let work = scratch();
    let data = work.path().join("d");
    let res = work.path().join("r");
    // Phases that would run for 30 s each; interrupted after the first ones.
    let cfg = ini(work.path(), &data, &res, "[mdtest-easy]\nn = 100000000\n");
    let cfg_text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("n = 300\n", "");
    std::fs::write(&cfg, cfg_text).unwrap();
    let child = std::process::Command::new(ioscale_path())
        .args(["io500", "--stonewall", "30s", "--tasks", "2", s(&cfg)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until mdtest-easy-write is creating files, then interrupt.
    let tree = data.join("mdtest-easy/test-dir.0-0/mdtest_tree.0.0");
    for _ in 0..600 {
        if std::fs::read_dir(&tree)
            .map(|d| d.count() > 10)
            .unwrap_or(false)
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: kill with a valid pid of our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
    let out = child.wait_with_output().unwrap();
    assert_code(&out, code);
    let text = stdout(&out);
    assert!(text.contains("[RESULT]       ior-easy-write"), "{text}");
    assert!(text.contains("mdtest-easy-write"), "{text}");
    assert!(!text.contains("ior-hard-write"), "{text}");
    let score = text.lines().find(|l| l.starts_with("[SCORE ]")).unwrap();
    assert!(score.ends_with("[INVALID]"), "{score}");
    assert!(res.join("ior-easy-write.txt").is_file());
    let summary = std::fs::read_to_string(res.join("result_summary.txt")).unwrap();
    assert!(summary.contains("ior-easy-write"), "{summary}");
    assert!(summary.contains("[INVALID]"), "{summary}");
    let result = std::fs::read_to_string(res.join("result.txt")).unwrap();
    assert!(result.contains("ior-easy-write"), "{result}");
    assert!(
        !data.exists(),
        "the run's own files and directories are removed"
    );
}

/// Writes that the stonewall ends: every task is worn out to the busiest
/// task's count, the files hold exactly that, and the later phases handle
/// all of it.
#[test]
fn the_stonewall_ends_the_writes_and_the_wear_out_evens_the_tasks() {
    let mnt = tmpfs("size=1g");
    let fallback = scratch();
    let target = mnt.as_ref().map_or(fallback.path(), |m| m.path());
    let work = scratch();
    let data = target.join("d");
    let res = work.path().join("r");
    let cfg = ini(
        work.path(),
        &data,
        &res,
        "[mdtest-easy-delete]\nrun = FALSE\n[mdtest-hard-delete]\nrun = FALSE\n",
    );
    // Limits far beyond what 1 s allows on a test machine: the stonewall ends the writes.
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace(
            "transferSize = 64k\nblockSize = 2m",
            "transferSize = 4k\nblockSize = 64m",
        )
        .replace("n = 300", "n = 100000000");
    std::fs::write(&cfg, text).unwrap();
    let j = work.path().join("w.json");
    let out = run(&[
        "io500",
        "--tasks",
        "3",
        "--stonewall",
        "1s",
        "--keep",
        "--json",
        s(&j),
        s(&cfg),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    for (name, limit) in [
        ("ior-easy-write", 16384u64),
        ("mdtest-easy-write", 100_000_000),
    ] {
        let p = phase(&v, name);
        let n = items(&v, name, 3);
        // 10^8 creates in a second is out of reach: mdtest-easy always
        // meets the stonewall; ior-easy may finish 64 MiB first on a fast machine.
        assert!(name.starts_with("ior") || n < limit, "{name}: {n}");
        if n < limit {
            // Stopped by the stonewall, not by its size: it ran until the
            // stonewall at least (asserted below: the phase's time is
            // counted from its first task's start, which a loaded machine
            // delays after the barrier the stonewall counts from, so the
            // phase may show a little under 1 s), and the tasks did at
            // most all their items by then.
            // (The stonewall counts from the phase's start barrier, the
            // phase's time from its first task's start, a little later.)
            let sw = &p["stonewall"];
            let s = sw["s"].as_f64().unwrap();
            assert!(s > 0.5 && s <= p["elapsed_s"].as_f64().unwrap(), "{p}");
            let at = sw["items"].as_u64().unwrap();
            assert!(
                at > 0 && at <= 3 * n,
                "{name}: {at} by the stonewall, {n} each after"
            );
        }
    }
    let n = items(&v, "ior-easy-write", 3);
    for w in 0..3 {
        let f = data.join(format!("ior-easy/ior_file_easy.{w:08}"));
        assert_eq!(std::fs::metadata(f).unwrap().len(), n * 4096);
    }
    assert_eq!(phase(&v, "ior-easy-read")["bytes"], 3 * n * 4096);
    let e = items(&v, "mdtest-easy-write", 3);
    for w in 0..3 {
        let dir = data.join(format!("mdtest-easy/test-dir.0-0/mdtest_tree.{w}.0"));
        assert_eq!(std::fs::read_dir(dir).unwrap().count() as u64, e);
    }
    assert_eq!(phase(&v, "mdtest-easy-stat")["ops"], 3 * e);
    std::fs::remove_dir_all(&data).unwrap();
}

/// `ioscale sweep --threads 1,2 -- io500 …`: one whole io500 run per task
/// count, each with its own results directory, the scores per point in
/// the text, the JSON and the CSV, and nothing of its own left behind.
#[test]
fn a_sweep_runs_io500_once_per_task_count() {
    let mnt = tmpfs("size=1g");
    let fallback = scratch();
    let target = mnt.as_ref().map_or(fallback.path(), |m| m.path());
    let work = scratch();
    let data = target.join("d");
    std::fs::create_dir(&data).unwrap();
    plant_foreign(&data);
    let before = snapshot(&data);
    let res = work.path().join("r");
    let cfg = ini(work.path(), &data, &res, "");
    let j = work.path().join("sw.json");
    let c = work.path().join("sw.csv");
    // The points' scratch records go under TMPDIR, and nothing is left
    // there after the sweep.
    let tmp = scratch();
    let out = run_tmp(
        tmp.path(),
        &[
            "sweep",
            "--tasks",
            "1,2",
            "--json",
            s(&j),
            "--csv",
            s(&c),
            "--",
            "io500",
            "--stonewall",
            "1s",
            s(&cfg),
        ],
    );
    assert_code(&out, 0);
    assert_empty(tmp.path());
    let v = json(&j);
    assert_eq!(v["kind"], "io500-sweep");
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2);
    let text = stdout(&out);
    for (p, tasks) in pts.iter().zip([1u64, 2]) {
        assert_eq!(p["tasks_per_rank"], tasks);
        assert_eq!(p["exit_code"], 0);
        let rec = &p["io500"];
        assert_eq!(rec["tasks"], tasks);
        check_score(rec);
        // Each point's own results directory, with its own summary.
        let dir = res.join(format!("tasks-{tasks}"));
        assert!(dir.join("result.txt").is_file(), "{dir:?}");
        // The table row shows the recorded total score.
        let total = rec["score"]["total"].as_f64().unwrap();
        let row = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&tasks.to_string()))
            .unwrap_or_else(|| panic!("no row for {tasks} in {text}"));
        assert!(row.contains(&format!("{total:.6}")), "{row}");
        // The CSV has every phase of the point and its score lines.
        let csv = std::fs::read_to_string(&c).unwrap();
        let rows = csv
            .lines()
            .filter(|l| l.starts_with(&format!("{tasks},{tasks},")))
            .count();
        let phases = rec["phases"].as_array().unwrap().len();
        assert_eq!(rows, phases + 3, "{csv}");
    }
    assert!(
        text.contains("cannot tell these ratios from run-to-run noise"),
        "{text}"
    );
    assert_eq!(snapshot(&data), before, "only foreign files stay");
}

#[test]
fn an_io500_sweep_refuses_what_it_cannot_vary() {
    let work = scratch();
    let data = work.path().join("d");
    let res = work.path().join("r");
    let cfg = ini(work.path(), &data, &res, "");
    for (args, flag) in [
        (
            vec![
                "sweep",
                "--threads",
                "1,2",
                "--xfer",
                "1m",
                "--",
                "io500",
                s(&cfg),
            ],
            "--xfer",
        ),
        (
            vec![
                "sweep",
                "--threads",
                "1,2",
                "--html",
                "x.html",
                "--",
                "io500",
                s(&cfg),
            ],
            "--html",
        ),
        (
            vec![
                "sweep",
                "--threads",
                "1,2",
                "--",
                "io500",
                "--tasks",
                "2",
                s(&cfg),
            ],
            "--tasks",
        ),
        (
            vec!["sweep", "--threads", "1,2", "--", "io500", "-t2", s(&cfg)],
            "-t2",
        ),
        (
            vec![
                "sweep",
                "--threads",
                "1,2",
                "--",
                "io500",
                "--json",
                "x",
                s(&cfg),
            ],
            "--json",
        ),
        (
            vec!["sweep", "--threads", "0,2", "--", "io500", s(&cfg)],
            "--threads",
        ),
    ] {
        let out = run(&args);
        assert_code(&out, 2);
        assert!(stderr(&out).contains(flag), "{args:?}: {}", stderr(&out));
        assert!(!data.exists() && !res.exists(), "{args:?} made something");
    }
}

#[test]
fn an_interrupted_io500_sweep_keeps_the_points_done() {
    let work = scratch();
    let data = work.path().join("d");
    let res = work.path().join("r");
    let cfg = ini(work.path(), &data, &res, "");
    let j = work.path().join("sw.json");
    let child = std::process::Command::new(ioscale_path())
        .args([
            "sweep",
            "--threads",
            "1,2,3",
            "--json",
            s(&j),
            "--",
            "io500",
        ])
        .args(["--stonewall", "2s", s(&cfg)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first point's record, then interrupt the second.
    for _ in 0..1200 {
        if std::fs::read(&j).is_ok_and(|b| !b.is_empty()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: kill with a valid pid of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_code(&out, 130);
    let v = json(&j);
    let pts = v["points"].as_array().unwrap();
    assert!(!pts.is_empty() && pts.len() < 3, "{pts:?}");
    assert_eq!(v["interrupted"], true);
    assert_eq!(pts[0]["exit_code"], 0);
    check_score(&pts[0]["io500"]);
    assert!(!data.exists(), "the runs' own files are removed");
}

/// `io500 --html`: the score before the first chart, a bar with its exact
/// value per scored phase, every phase's figures, and per phase what its
/// measurements (rank 0's probe, in the record) say limited it; `report`
/// of the record writes the same page and refuses what it cannot write.
#[test]
fn the_html_report_puts_the_score_first_and_names_each_limit() {
    let mnt = tmpfs("size=1g");
    let fallback = scratch();
    let target = mnt.as_ref().map_or(fallback.path(), |m| m.path());
    let work = scratch();
    let data = target.join("d");
    let res = work.path().join("r");
    // mdtest-easy-write runs into the 1 s stonewall: long enough to judge.
    let cfg = ini(work.path(), &data, &res, "");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("n = 300\n", "n = 100000000\n");
    std::fs::write(&cfg, text).unwrap();
    let j = work.path().join("r.json");
    let h = work.path().join("r.html");
    let out = run(&[
        "io500",
        "--stonewall",
        "1s",
        "--json",
        s(&j),
        "--html",
        s(&h),
        s(&cfg),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    let page = std::fs::read_to_string(&h).unwrap();
    let score = page.find("Score ").expect("a headline score");
    let chart = page.find("<svg").expect("a chart");
    assert!(score < chart, "the score comes before the first chart");
    let total = v["score"]["total"].as_f64().unwrap();
    assert!(page.contains(&format!("Score {total:.6}")), "{page}");
    for ph in v["phases"].as_array().unwrap() {
        let name = ph["name"].as_str().unwrap();
        assert!(
            page.contains(&format!("<td>{name}</td>")),
            "{name} has no row"
        );
        if ph["group"] != "none" {
            let bar = format!("<title>{name}: {:.6}", ph["score"].as_f64().unwrap());
            assert!(page.contains(&bar), "no bar {bar}");
        }
        if name == "timestamp" {
            continue;
        }
        // Rank 0 measured the phase: CPUs, and the file system under it.
        let r = &ph["resources"];
        assert!(r["cpus"].as_u64().unwrap() > 0, "{name}: {r}");
        assert!(r["elapsed_s"].as_f64().unwrap() > 0.0, "{name}: {r}");
        let line = page
            .lines()
            .find(|l| l.starts_with(&format!("<li><b>{name}</b>")))
            .unwrap_or_else(|| panic!("{name}: no limit line"));
        let judged = line.contains("Limited by ");
        assert!(judged || line.contains("too short to tell"), "{line}");
        if name == "mdtest-easy-write" {
            assert!(judged, "a 1 s phase is judged: {line}");
        }
    }
    // The timestamp phase measures no latency or CPU time: its row says
    // so rather than showing 0.
    let row = page
        .lines()
        .find(|l| l.starts_with("<tr><td>timestamp</td>"))
        .unwrap();
    assert!(row.contains("<td>not measured</td>"), "{row}");
    assert!(!row.contains("<td>0.0</td>"), "{row}");
    // `report` of the record: the same page, and the summary on stdout.
    let h2 = work.path().join("again.html");
    let out = run(&["report", s(&j), "--html", s(&h2)]);
    assert_code(&out, 0);
    assert_eq!(std::fs::read_to_string(&h2).unwrap(), page);
    assert!(
        stdout(&out).contains(&format!("score {total:.6}")),
        "{}",
        stdout(&out)
    );
    let out = run(&["report", s(&j), "--csv", s(&work.path().join("x.csv"))]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("--csv"), "{}", stderr(&out));
}

/// A phase directory swapped while io500 runs (after ior-easy wrote,
/// before it reads back), for a link to the user's directory or for
/// another directory holding the user's files: the read and the cleanup
/// refuse it instead of following it, and the user's files with the very
/// names io500 uses stay as they were.
#[test]
fn a_phase_directory_swapped_for_a_link_is_refused_not_followed() {
    swap_ior_easy(true, "it is a symbolic link");
}

#[test]
fn a_phase_directory_swapped_for_another_directory_is_refused() {
    swap_ior_easy(false, "no longer the directory this run made");
}

fn swap_ior_easy(link: bool, says: &str) {
    let work = scratch();
    let data = work.path().join("d");
    let res = work.path().join("r");
    let victim = work.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    plant_foreign(&victim);
    for n in ["ior_file_easy", "ior_file_easy.00000000"] {
        std::fs::write(victim.join(n), vec![7u8; 200_000]).unwrap();
    }
    // mdtest-easy-write runs into the 1 s stonewall: time for the swap.
    let cfg = ini(work.path(), &data, &res, "");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("n = 300\n", "n = 100000000\n");
    std::fs::write(&cfg, text).unwrap();
    let child = std::process::Command::new(ioscale_path())
        .args(["io500", "--stonewall", "1s", s(&cfg)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let easy = data.join("ior-easy");
    // ior-easy-write is done once mdtest-easy-write creates files.
    let tree = data.join("mdtest-easy/test-dir.0-0/mdtest_tree.0.0");
    let written = || std::fs::read_dir(&tree).is_ok_and(|mut d| d.next().is_some());
    for _ in 0..6000 {
        if written() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(written(), "ior-easy never wrote");
    std::fs::rename(&easy, data.join("moved")).unwrap();
    let victim = if link {
        std::os::unix::fs::symlink(&victim, &easy).unwrap();
        victim
    } else {
        std::fs::rename(&victim, &easy).unwrap();
        easy
    };
    let before = snapshot(&victim);
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(
        snapshot(&victim),
        before,
        "the user's files are untouched\n{err}"
    );
    assert_code(&out, 1);
    assert!(err.contains(says), "{err}");
}

/// `report` of an io500 record edited or damaged after the run: a task's
/// item count of 2^64-1 no longer panics (the per-rank sum saturates), and
/// a negative or non-finite figure — a score, a phase's duration, a
/// measured resource — is refused naming the field (exit 2); before, the
/// sum panicked (exit 101) and a score of -5 was printed as measured.
#[test]
fn report_refuses_impossible_figures_in_an_io500_record() {
    let work = scratch();
    let data = work.path().join("d");
    let res = work.path().join("r");
    let cfg = ini(work.path(), &data, &res, "");
    let j = work.path().join("r.json");
    let out = run(&["io500", "--stonewall", "1s", "--json", s(&j), s(&cfg)]);
    assert_code(&out, 0);
    let v = json(&j);
    let mut big = v.clone();
    big["phases"][0]["tasks"][0]["items"] = serde_json::json!(u64::MAX);
    let p = work.path().join("big.json");
    std::fs::write(&p, serde_json::to_vec(&big).unwrap()).unwrap();
    let out = run(&["report", s(&p)]);
    assert_no_panic(&out);
    assert_code(&out, 0);
    for (pointer, value, names) in [
        ("/score/total", serde_json::json!(-5.0), "score.total"),
        (
            "/phases/1/elapsed_s",
            serde_json::json!(-1.0),
            "phases[1].elapsed_s",
        ),
        (
            "/phases/0/resources/self_cores",
            serde_json::json!(-2.0),
            "phases[0].resources.self_cores",
        ),
    ] {
        let mut bad = v.clone();
        *bad.pointer_mut(pointer).unwrap() = value;
        let p = work.path().join("bad.json");
        std::fs::write(&p, serde_json::to_vec(&bad).unwrap()).unwrap();
        let h = work.path().join("bad.html");
        let out = run(&["report", s(&p), "--html", s(&h)]);
        assert_no_panic(&out);
        assert_code(&out, 2);
        assert!(stderr(&out).contains(names), "{pointer}: {}", stderr(&out));
        assert!(!h.exists(), "{pointer}: a page was written");
    }
}

/// A link planted in the result directory at a name the run writes:
/// refused before the run (exit 2), nothing made, the file it names
/// unchanged. Before, `timestampfile` → a foreign file truncated it to 0
/// bytes, and `result.txt` → a foreign 0600 file replaced it.
fn planted_link_is_refused_before_the_run(name: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let work = scratch();
    let data = work.path().join("d");
    let res = work.path().join("r");
    std::fs::create_dir(&res).unwrap();
    let foreign = work.path().join("foreign");
    std::fs::write(&foreign, b"the user's own words\n").unwrap();
    std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(mode)).unwrap();
    std::os::unix::fs::symlink(&foreign, res.join(name)).unwrap();
    let cfg = ini(work.path(), &data, &res, "");
    let out = run(&["io500", "--stonewall", "1s", s(&cfg)]);
    assert_code(&out, 2);
    let err = stderr(&out);
    assert!(err.contains(name) && err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read(&foreign).unwrap(), b"the user's own words\n");
    let m = std::fs::metadata(&foreign).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, mode);
    assert!(!data.exists(), "nothing made before the refusal");
    assert_eq!(names(&res), [name], "nothing written beside the link");
    assert!(stdout(&out).is_empty(), "no phase ran: {}", stdout(&out));
}

#[test]
fn a_timestampfile_linked_to_a_foreign_file_is_refused_and_the_file_kept() {
    planted_link_is_refused_before_the_run("timestampfile", 0o644);
}

#[test]
fn a_result_txt_linked_to_a_foreign_0600_file_is_refused_and_the_file_kept() {
    planted_link_is_refused_before_the_run("result.txt", 0o600);
}

#[test]
fn a_result_summary_linked_to_a_foreign_file_is_refused_and_the_file_kept() {
    planted_link_is_refused_before_the_run("result_summary.txt", 0o640);
}

/// A result file that is a link to a block device (a loop device here):
/// refused with exit 2 before the run starts, the device's bytes
/// unchanged. Before, it was refused only after the whole run (exit 1).
#[test]
fn a_result_file_linked_to_a_block_device_is_refused_before_the_run() {
    let work = scratch();
    let img = work.path().join("dev.img");
    std::fs::write(&img, vec![0x5au8; 1 << 20]).unwrap();
    let Some(dev) = LoopDev::attach(&img) else {
        return;
    };
    let data = work.path().join("d");
    let res = work.path().join("r");
    std::fs::create_dir(&res).unwrap();
    std::os::unix::fs::symlink(&dev.0, res.join("mdtest-hard-read.csv")).unwrap();
    let cfg = ini(work.path(), &data, &res, "");
    let out = run(&["io500", "--stonewall", "1s", s(&cfg)]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("mdtest-hard-read.csv"),
        "{}",
        stderr(&out)
    );
    assert!(!data.exists(), "refused before the run");
    assert!(stdout(&out).is_empty(), "no phase ran: {}", stdout(&out));
    drop(dev);
    assert_eq!(std::fs::read(&img).unwrap(), vec![0x5au8; 1 << 20]);
}

/// A loop device on an image, detached on drop (`None` without losetup
/// or root).
struct LoopDev(std::path::PathBuf);

impl LoopDev {
    fn attach(img: &Path) -> Option<LoopDev> {
        let out = std::process::Command::new("losetup")
            .args(["-f", "--show", s(img)])
            .output()
            .ok()
            .filter(|o| o.status.success());
        match out {
            Some(o) => Some(LoopDev(String::from_utf8_lossy(&o.stdout).trim().into())),
            None => {
                eprintln!("note: cannot attach a loop device (needs root); skipping");
                None
            }
        }
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup")
            .args(["-d", s(&self.0)])
            .status();
    }
}

/// A link planted at a result file's name after the check, while the run
/// goes on: the file is written as a name in the held result directory,
/// never through the link; the file it names stays as it was.
#[test]
fn a_link_planted_during_the_run_is_never_written_through() {
    let work = scratch();
    let data = work.path().join("d");
    let res = work.path().join("r");
    let foreign = work.path().join("foreign");
    std::fs::write(&foreign, b"mine").unwrap();
    let cfg = ini(work.path(), &data, &res, "[mdtest-easy]\nn = 100000000\n");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("n = 300\n", "");
    std::fs::write(&cfg, text).unwrap();
    let child = std::process::Command::new(ioscale_path())
        .args(["io500", "--stonewall", "1s", s(&cfg)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The run has started (the config copies are written first).
    for _ in 0..2000 {
        if res.join("config.ini").exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::os::unix::fs::symlink(&foreign, res.join("result.txt")).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(std::fs::read(&foreign).unwrap(), b"mine");
    // Either written over the link's name (a regular file now) or
    // refused there (exit 1, the results not written): never through it.
    let meta = std::fs::symlink_metadata(res.join("result.txt")).unwrap();
    if meta.file_type().is_symlink() {
        assert_code(&out, 1);
        assert!(stderr(&out).contains("result.txt"), "{}", stderr(&out));
    } else {
        assert_code(&out, 0);
    }
    assert!(!data.exists());
}

/// What a stopped run leaves — by a second Ctrl-C (which exits at once,
/// without the cleanup), or by SIGHUP (now a stop as SIGTERM's: it
/// cleans up, and leaves nothing) — carries ioscale's markers, so
/// `ioscale clean DATADIR` removes all of it and only it. Before, io500's
/// files had no marker and `clean` said "nothing to clean".
fn stopped_run_leaves_what_clean_removes(signals: &[i32]) {
    let work = scratch();
    let data = work.path().join("d");
    std::fs::create_dir(&data).unwrap();
    plant_foreign(&data);
    let before = snapshot(&data);
    let res = work.path().join("r");
    // More creates than the run gets to before the signal; a stopped
    // create's marker covers every index it may have made (n a task),
    // which `clean` then tries.
    let cfg = ini(work.path(), &data, &res, "[mdtest-easy]\nn = 50000\n");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("n = 300\n", "");
    std::fs::write(&cfg, text).unwrap();
    let child = std::process::Command::new(ioscale_path())
        .args(["io500", "--stonewall", "30s", "--tasks", "2", s(&cfg)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let tree = data.join("mdtest-easy/test-dir.0-0/mdtest_tree.0.0");
    for _ in 0..6000 {
        if std::fs::read_dir(&tree).is_ok_and(|d| d.count() > 2000) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    for &sig in signals {
        // SAFETY: kill with a valid pid of our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        // A second signal of the same kind sent at once would merge with
        // the first: it follows once the first was taken.
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    // Whatever is left is ioscale's and marked: clean takes it all (or
    // there was nothing left to take), and the user's files stay.
    let out = run(&["clean", s(&data)]);
    assert_no_panic(&out);
    assert_eq!(snapshot(&data), before, "{}", stderr(&out));
}

#[test]
fn leftovers_after_sighup_are_marked_and_clean_removes_them() {
    stopped_run_leaves_what_clean_removes(&[libc::SIGHUP]);
}

#[test]
fn leftovers_after_a_second_ctrl_c_are_marked_and_clean_removes_them() {
    stopped_run_leaves_what_clean_removes(&[libc::SIGINT, libc::SIGINT]);
}

/// A data write that fails with EIO (ioscale-testfs): the phase fails
/// (exit 1), the results so far are written, and every file of the run is
/// removed, the one that hit EIO too (before, it was left behind).
#[test]
fn the_file_that_hit_eio_is_removed_with_the_rest() {
    let Some(fs) = common::fuse::TestFs::mount(&[
        "--eio-after-bytes",
        "64k",
        "--faults-path-substr",
        "file.mdtest",
    ]) else {
        return;
    };
    let work = scratch();
    let data = fs.path().join("d");
    let res = work.path().join("r");
    let cfg = ini(work.path(), &data, &res, "");
    let out = run(&["io500", "--stonewall", "1s", s(&cfg)]);
    assert_code(&out, 1);
    let text = stdout(&out);
    assert!(text.contains("mdtest-hard-write"), "{text}");
    assert!(
        stderr(&out).contains("Input/output error"),
        "{}",
        stderr(&out)
    );
    assert!(res.join("result.txt").is_file());
    assert!(!data.exists(), "{:?}", names(fs.path()));
    assert_empty(fs.source());
}

/// `run` with the temporary directory `tmp` (TMPDIR).
fn run_tmp(tmp: &Path, args: &[&str]) -> std::process::Output {
    ioscale().args(args).env("TMPDIR", tmp).output().unwrap()
}

/// A config file that is a FIFO (nobody writing) or a device is refused
/// with exit 2 and one line, nothing made: before, a FIFO hung the run in
/// `read` and `/dev/zero` was read until memory ran out. A stuck run is
/// killed after two minutes (the failure this test exists for).
#[test]
fn a_config_that_is_a_fifo_or_a_device_is_refused_at_once() {
    let work = scratch();
    let fifo = work.path().join("fifo.ini");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let zero = work.path().join("zero.ini");
    assert!(std::process::Command::new("mknod")
        .args([s(&zero), "c", "1", "5"])
        .status()
        .unwrap()
        .success());
    let data = work.path().join("d");
    for (cfg, kind) in [(&fifo, "FIFO"), (&zero, "character device")] {
        let mut child = std::process::Command::new(ioscale_path())
            .args(["io500", s(cfg), s(&data)])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut waited = 0;
        while child.try_wait().unwrap().is_none() && waited < 1200 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            waited += 1;
        }
        if child.try_wait().unwrap().is_none() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{}: io500 still reading its config", cfg.display());
        }
        let out = child.wait_with_output().unwrap();
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(err.contains(kind), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!data.exists(), "nothing made on a refusal");
    }
}
