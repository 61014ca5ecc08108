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
    // The results directory: the summary as printed, result.txt, each
    // phase's own output, the stonewall counts.
    let summary = std::fs::read_to_string(res.join("result_summary.txt")).unwrap();
    assert_eq!(summary, stdout(&out));
    let result = std::fs::read_to_string(res.join("result.txt")).unwrap();
    assert!(
        result.contains("[SCORE]") && result.contains("SCORE = "),
        "{result}"
    );
    for n in &order {
        assert!(result.contains(&format!("[{n}]")), "{n}");
        assert!(res.join(format!("{n}.txt")).is_file(), "{n}.txt");
    }
    let sw = std::fs::read_to_string(res.join("ior-easy.stonewall")).unwrap();
    assert_eq!(sw.trim(), items(&v, "ior-easy-write", tasks).to_string());
    assert!(res.join("timestampfile").is_file());

    // A full run (deletes on, no --keep) in the same place: its files and
    // directories go, the user's stay untouched.
    let out = run(&[
        "io500",
        "--tasks",
        &t,
        "--stonewall",
        "2s",
        s(&ini(work.path(), &data, &res, "")),
    ]);
    assert_code(&out, 2); // the kept phase directories are not this run's
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    for sub in ["ior-easy", "ior-hard", "mdtest-easy", "mdtest-hard"] {
        std::fs::remove_dir_all(data.join(sub)).unwrap();
    }
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
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_code(&out, 130);
    let text = stdout(&out);
    assert!(text.contains("[RESULT]       ior-easy-write"), "{text}");
    assert!(text.contains("mdtest-easy-write"), "{text}");
    assert!(!text.contains("ior-hard-write"), "{text}");
    let score = text.lines().find(|l| l.starts_with("[SCORE ]")).unwrap();
    assert!(score.ends_with("[INVALID]"), "{score}");
    assert!(res.join("ior-easy-write.txt").is_file());
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
            // Stopped by the stonewall, not by its size: it ran at least that long.
            assert!(p["elapsed_s"].as_f64().unwrap() >= 1.0, "{p}");
            let at: Vec<u64> = p["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["items_at_stonewall"].as_u64().unwrap())
                .collect();
            assert!(
                at.iter().all(|&x| x <= n) && at.contains(&n),
                "{name}: {at:?} -> {n}"
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
    let out = run(&[
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
    ]);
    assert_code(&out, 0);
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
    let written = || {
        std::fs::read_dir(&easy).is_ok_and(|mut d| d.next().is_some())
            && data.join("mdtest-easy").exists()
    };
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
