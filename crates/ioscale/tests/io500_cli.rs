//! `ioscale io500` end to end: short runs (`--stonewall 2s`, small sizes)
//! on tmpfs and on a loop-mounted ext4, each phase's files checked against
//! what io500's phase definitions make (names, sizes, counts per
//! directory), the score recomputed from the phase figures, the results
//! directory, the refusals, and what an interrupted run keeps.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use common::*;
use serde_json::Value;

/// A config with io500's layout and tiny sizes, in `dir`.
fn ini(dir: &Path, data: &Path, res: &Path, extra: &str) -> std::path::PathBuf {
    let p = dir.join("trial.ini");
    std::fs::write(
        &p,
        format!(
            "# a trial config\n[global]\ndatadir = {}\nresultdir = {}\ntimestamp-datadir = FALSE\n\
             timestamp-resultdir = FALSE\n\n[ior-easy]\nAPI = POSIX\ntransferSize = 64k\nblockSize = 2m\n\n\
             [ior-hard]\nsegmentCount = 40\n\n[mdtest-easy]\nn = 300\n\n[mdtest-hard]\nn = 200\n{extra}",
            data.display(),
            res.display()
        ),
    )
    .unwrap();
    p
}

const ORDER: [&str; 14] = [
    "ior-easy-write",
    "mdtest-easy-write",
    "timestamp",
    "ior-hard-write",
    "mdtest-hard-write",
    "find",
    "ior-easy-read",
    "mdtest-easy-stat",
    "ior-hard-read",
    "mdtest-hard-stat",
    "mdtest-easy-delete",
    "mdtest-hard-read",
    "mdtest-hard-delete",
    "ior-rnd4K-easy-read",
];

fn phase<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no phase {name} in {v}"))
}

/// Items each task did in a phase; the wear-out makes them all equal.
fn items(v: &Value, name: &str, tasks: usize) -> u64 {
    let t: Vec<u64> = phase(v, name)["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["items"].as_u64().unwrap())
        .collect();
    assert_eq!(t.len(), tasks, "{name}: {t:?}");
    assert!(t.iter().all(|&x| x == t[0] && x > 0), "{name}: {t:?}");
    t[0]
}

fn entries(dir: &Path) -> BTreeMap<String, u64> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect()
}

fn count_all(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            1 + if e.file_type().unwrap().is_dir() {
                count_all(&e.path())
            } else {
                0
            }
        })
        .sum()
}

/// The [RESULT] lines in io500's order and layout, and the score line.
fn check_lines(out: &Output, order: &[&str]) {
    let text = stdout(out);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("[RESULT]") || l.starts_with("[      ]"))
        .collect();
    let names: Vec<&str> = lines.iter().map(|l| l[9..29].trim_start()).collect();
    assert_eq!(names, order, "{text}");
    for l in &lines {
        // "[RESULT]       ior-easy-write        1.355157 GiB/s : time 1.089 seconds"
        let rest = &l[30..];
        let (score, tail) = rest.split_at(15);
        score.trim().parse::<f64>().unwrap();
        assert!(
            tail.starts_with(" GiB/s : time ") || tail.starts_with(" kIOPS : time "),
            "{l}"
        );
        assert!(tail.contains(" seconds"), "{l}");
    }
    assert!(
        text.contains("ERROR INVALID stonewall-time 2s != 300s"),
        "{text}"
    );
    let score = text.lines().find(|l| l.starts_with("[SCORE ]")).unwrap();
    assert!(score.starts_with("[SCORE ] Bandwidth "), "{score}");
    assert!(
        score.contains(" GiB/s : IOPS ") && score.contains(" kiops : TOTAL "),
        "{score}"
    );
    assert!(
        score.ends_with(" [INVALID]"),
        "a 2 s stonewall is invalid: {score}"
    );
}

/// The score printed equals the geometric means of the phase figures.
fn check_score(v: &Value) {
    let geo = |group: &str| {
        let xs: Vec<f64> = v["phases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["group"] == group)
            .map(|p| p["score"].as_f64().unwrap())
            .filter(|x| *x > 0.0)
            .collect();
        xs.iter().product::<f64>().powf(1.0 / xs.len() as f64)
    };
    let (bw, md) = (geo("BW"), geo("MD"));
    let s = &v["score"];
    assert!((s["bw_gib_s"].as_f64().unwrap() / bw - 1.0).abs() < 1e-9);
    assert!((s["md_kiops"].as_f64().unwrap() / md - 1.0).abs() < 1e-9);
    assert!((s["total"].as_f64().unwrap() / (bw * md).sqrt() - 1.0).abs() < 1e-9);
    assert_eq!(s["valid"], false);
    // Each phase's figure is its work over its time.
    for p in v["phases"].as_array().unwrap() {
        let t = p["elapsed_s"].as_f64().unwrap();
        let want = match p["unit"].as_str().unwrap() {
            "GiB/s" => p["bytes"].as_f64().unwrap() / t / (1u64 << 30) as f64,
            _ if p["name"] == "timestamp" => 0.0,
            _ => p["ops"].as_f64().unwrap() / t / 1000.0,
        };
        let got = p["score"].as_f64().unwrap();
        assert!((got - want).abs() <= want * 1e-9, "{p}");
    }
}

/// Files of every family as io500's phase definitions name and size them,
/// for `tasks` tasks; the data directory as the run left it (--keep,
/// deletes off). Returns the entries in the data directory.
fn check_layout(d: &Path, v: &Value, tasks: usize) {
    // ior-easy: -F, one file per task, transferSize 64k, all tasks worn out
    // to the same count.
    let n = items(v, "ior-easy-write", tasks);
    assert!(
        n <= 32,
        "blockSize 2m / transferSize 64k is 32 transfers: {n}"
    );
    let want: BTreeMap<String, u64> = (0..tasks)
        .map(|w| (format!("ior_file_easy.{w:08}"), n * 65536))
        .collect();
    assert_eq!(entries(&d.join("ior-easy")), want);
    assert_eq!(
        items(v, "ior-easy-read", tasks),
        n,
        "the read reads all written"
    );
    assert_eq!(phase(v, "ior-easy-read")["bytes"], n * 65536 * tasks as u64);
    // ior-hard: one shared file, 47008-byte transfers interleaved by task.
    let h = items(v, "ior-hard-write", tasks);
    assert!(h <= 40, "segmentCount 40: {h}");
    let want = BTreeMap::from([("file".to_string(), h * tasks as u64 * 47008)]);
    assert_eq!(entries(&d.join("ior-hard")), want);
    assert_eq!(phase(v, "ior-hard-read")["bytes"], h * tasks as u64 * 47008);
    // mdtest-easy: -u, a directory per task, empty files.
    let e = items(v, "mdtest-easy-write", tasks);
    let top = d.join("mdtest-easy/test-dir.0-0");
    let trees: Vec<String> = entries(&top).into_keys().collect();
    let mut want_trees: Vec<String> = (0..tasks).map(|w| format!("mdtest_tree.{w}.0")).collect();
    want_trees.sort();
    assert_eq!(trees, want_trees);
    for w in 0..tasks {
        let got = entries(&top.join(format!("mdtest_tree.{w}.0")));
        let want: BTreeMap<String, u64> = (0..e)
            .map(|i| (format!("file.mdtest.{w}.{i}"), 0))
            .collect();
        assert_eq!(got, want, "task {w}");
    }
    assert_eq!(phase(v, "mdtest-easy-stat")["ops"], e * tasks as u64);
    // mdtest-hard: all tasks in one directory, 3901 bytes each.
    let m = items(v, "mdtest-hard-write", tasks);
    let dir = d.join("mdtest-hard/test-dir.0-0");
    assert_eq!(
        entries(&dir).into_keys().collect::<Vec<_>>(),
        ["mdtest_tree.0"]
    );
    let got = entries(&dir.join("mdtest_tree.0"));
    let want: BTreeMap<String, u64> = (0..tasks)
        .flat_map(|w| (0..m).map(move |i| (format!("file.mdtest.{w}.{i}"), 3901)))
        .collect();
    assert_eq!(got, want);
    assert_eq!(
        phase(v, "mdtest-hard-read")["bytes"],
        m * tasks as u64 * 3901
    );
    assert_eq!(phase(v, "mdtest-hard-read")["bad_bytes"], 0);
    // find: every entry of the data directory examined once; matches are
    // the mdtest-hard files with "01" in their name.
    let found = want.keys().filter(|k| k.contains("01")).count() as u64;
    assert!(found > 0);
    assert_eq!(phase(v, "find")["found"], found);
    assert_eq!(phase(v, "find")["ops"], count_all(d));
}

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
