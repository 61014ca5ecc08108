//! io500 helpers shared by tests/io500_cli.rs and the MPI test in
//! tests/mpi_cli.rs: a tiny config, and checks of the printed lines, the
//! score and each phase's files against io500's phase definitions.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use super::stdout;

/// A config with io500's layout and tiny sizes, in `dir`.
pub fn ini(dir: &Path, data: &Path, res: &Path, extra: &str) -> std::path::PathBuf {
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

pub const ORDER: [&str; 14] = [
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

pub fn phase<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no phase {name} in {v}"))
}

/// Items each task did in a phase; the wear-out makes them all equal.
pub fn items(v: &Value, name: &str, tasks: usize) -> u64 {
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

/// Whether `name` is one of ioscale's own files beside a set (its
/// marker, the lock while a run holds it).
pub fn is_ioscale_own(name: &str) -> bool {
    name.starts_with('.') && name.contains("ioscale")
}

/// The entries of `dir` and their sizes, ioscale's markers left out.
pub fn entries(dir: &Path) -> BTreeMap<String, u64> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .filter(|(n, _)| !is_ioscale_own(n))
        .collect()
}

/// Files (not directories) under `dir`, ioscale's markers left out: the
/// data pfind counts as scanned.
pub fn count_files(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                count_files(&e.path())
            } else {
                u64::from(!is_ioscale_own(&e.file_name().to_string_lossy()))
            }
        })
        .sum()
}

/// The [RESULT] lines in io500's order and layout, and the score line.
pub fn check_lines(out: &Output, order: &[&str]) {
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
pub fn check_score(v: &Value) {
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
    // Each phase's figure is its work over its time; the timestamp has
    // none, and its latencies and CPU time are not measured (null, not 0).
    for p in v["phases"].as_array().unwrap() {
        if p["name"] == "timestamp" {
            for k in ["score", "lat_us", "cpu_user_s", "bytes", "ops", "iops"] {
                assert!(p[k].is_null(), "{k}: {p}");
            }
            continue;
        }
        let t = p["elapsed_s"].as_f64().unwrap();
        let want = match p["unit"].as_str().unwrap() {
            "GiB/s" => p["bytes"].as_f64().unwrap() / t / (1u64 << 30) as f64,
            _ => p["ops"].as_f64().unwrap() / t / 1000.0,
        };
        let got = p["score"].as_f64().unwrap();
        assert!((got - want).abs() <= want * 1e-9, "{p}");
    }
}

/// Files of every family as io500's phase definitions name and size them,
/// for `tasks` tasks; the data directory as the run left it (--keep,
/// deletes off). Returns the entries in the data directory.
pub fn check_layout(d: &Path, v: &Value, tasks: usize) {
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
    // find: every file of the data directory examined once; matches are
    // the mdtest-hard files with "01" in their name. Beside the data, the
    // walk examines ioscale's markers (a few: the sets', the scaffold's and
    // its lock), as pfind examines every file there.
    let found = want.keys().filter(|k| k.contains("01")).count() as u64;
    assert!(found > 0);
    let f = phase(v, "find");
    assert_eq!(f["found"], found);
    let (ops, data) = (f["ops"].as_u64().unwrap(), count_files(d));
    assert!(
        (data..=data + 8).contains(&ops),
        "{ops} examined, {data} data files"
    );
    // Each task's share: its rows add up to the phase's counts.
    let tasks = f["tasks"].as_array().unwrap();
    let sum = |k: &str| tasks.iter().map(|t| t[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!((sum("items"), sum("found")), (ops, found));
}
