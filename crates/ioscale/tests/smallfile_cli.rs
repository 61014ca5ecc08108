//! `ioscale smallfile`: smallfile_cli.py's options, result lines, kept
//! trees and refusals, and every command line of seed 003 scaled down
//! (1024 files in all → 64; `--dirs-per-dir`/`--files-per-dir` 1024 → 64),
//! each on a fresh `--top` as the seed's `uuidgen` job directories are.
//! `UPDATE_GOLDEN=1` rewrites the golden files.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn sf(args: &[&str]) -> std::process::Output {
    let mut a = vec!["smallfile"];
    a.extend_from_slice(args);
    run(&a)
}

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn check_golden(name: &str, got: &str) {
    let path = golden_path(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with UPDATE_GOLDEN=1", path.display()));
    assert!(
        want == got,
        "{} differs (UPDATE_GOLDEN=1 rewrites it)\n--- want\n{want}\n--- got\n{got}",
        path.display()
    );
}

/// Numbers become N, the host and the directory placeholders; the
/// rate lines are left out.
fn normalise(text: &str, dir: &Path) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host = host
        .trim()
        .split('.')
        .next()
        .unwrap_or_default()
        .to_string();
    let mut out = String::new();
    for line in text.lines() {
        // The rate lines give way to a warning when a run is shorter than
        // a millisecond (smallfile's rule); the other tests check them.
        if ["files/sec ", "IOPS ", "MiB/sec ", "WARNING: test must run"]
            .iter()
            .any(|p| line.starts_with(p))
        {
            continue;
        }
        let mut l = line.replace(dir.to_str().unwrap(), "<DIR>");
        if !host.is_empty() {
            l = l.replace(&format!("host = {host},"), "host = <HOST>,");
        }
        let mut norm = String::new();
        let mut in_num = false;
        for ch in l.chars() {
            if ch.is_ascii_digit() || (in_num && ch == '.') {
                if !in_num {
                    norm.push('N');
                    in_num = true;
                }
            } else {
                in_num = false;
                if ch == ' ' && norm.ends_with(' ') {
                    continue;
                }
                norm.push(ch);
            }
        }
        out.push_str(&norm);
        out.push('\n');
    }
    out
}

/// Seed 003: threads 1..32, 64/T files each, same dir Y and N, hashed tree.
fn seed003(top: &dyn Fn(usize) -> String) -> Vec<Vec<String>> {
    let mut cmds = Vec::new();
    let mut k = 0;
    for same in ["Y", "N"] {
        for t in [1u64, 2, 4, 8, 16, 32] {
            k += 1;
            let line = format!(
                "--operation create --threads {t} --file-size 4 --files {} --same-dir {same} \
                 --hash-into-dirs Y --prefix a1b2c{k} --dirs-per-dir 64 --files-per-dir 64 --top {}",
                64 / t,
                top(k)
            );
            cmds.push(line.split_whitespace().map(String::from).collect());
        }
    }
    cmds
}

fn regular_files(dir: &Path) -> usize {
    snapshot(dir)
        .into_iter()
        .filter(|(k, v)| v.is_some() && !k.ends_with(".ioscale-meta-marker"))
        .count()
}

#[test]
fn seed003_specs_match_golden() {
    let mut all = Vec::new();
    for c in seed003(&|k| format!("/efs/smallfile/job{k}")) {
        let mut a: Vec<&str> = c.iter().map(String::as_str).collect();
        a.push("--print-spec");
        let out = sf(&a);
        assert_code(&out, 0);
        let spec: serde_json::Value = serde_json::from_slice(&out.stdout).expect("spec JSON");
        assert_eq!(
            spec["files"].as_u64().unwrap() * spec["threads"].as_u64().unwrap(),
            64
        );
        all.push(serde_json::json!({ "args": c.join(" "), "spec": spec }));
    }
    check_golden(
        "seed003_smallfile_specs.json",
        &(serde_json::to_string_pretty(&all).unwrap() + "\n"),
    );
}

#[test]
fn seed003_runs_make_exactly_the_files_and_cleanup_removes_only_them() {
    let dir = scratch();
    plant_foreign(dir.path());
    let before = snapshot(dir.path());
    let top = |k: usize| s(&dir.path().join(format!("job{k}"))).to_string();
    let cmds = seed003(&top);
    for (k, c) in cmds.iter().enumerate() {
        let t: u64 = c[3].parse().unwrap();
        let job = dir.path().join(format!("job{}", k + 1));
        std::fs::create_dir(&job).unwrap();
        std::fs::write(job.join("keep-me.txt"), b"foreign").unwrap();
        let a: Vec<&str> = c.iter().map(String::as_str).collect();
        let out = sf(&a);
        assert_code(&out, 0);
        let text = stdout(&out);
        if k == 0 {
            check_golden("seed003_smallfile_text.txt", &normalise(&text, dir.path()));
        }
        assert_eq!(text.matches(",status = ok").count() as u64, t, "{text}");
        assert!(text.contains(&format!("total threads = {t}\n")), "{text}");
        // smallfile's count: the files each thread had done when it saw
        // the first thread finish, summed (64 when none was cut).
        let files = counted_files(&text);
        assert!(files <= 64, "{text}");
        assert!(text.contains(&format!("total files = {files}\n")), "{text}");
        assert!(
            text.contains(&format!(
                "{:6.2}% of requested files processed, warning threshold is  70.00%\n",
                files as f64 * 100.0 / 64.0
            )),
            "{text}"
        );
        for l in [
            "total IOPS = ",
            "total data =     0.000 GiB",
            "elapsed time = ",
        ] {
            assert!(text.contains(l), "{l}: {text}");
        }
        // Rates, unless the run was too short for them (smallfile's rule).
        assert!(
            text.contains("WARNING: test must run longer than a millisecond")
                || ["files/sec = ", "\nIOPS = ", "MiB/sec = "]
                    .iter()
                    .all(|l| text.contains(l)),
            "{text}"
        );
        // smallfile keeps what it created: 64 files of 4 KiB, plus the user's.
        assert_eq!(regular_files(&job), 64 + 1, "{:?}", names(&job));
        let sizes: Vec<usize> = snapshot(&job)
            .into_iter()
            .filter(|(k, _)| k.contains("/a1b2c"))
            .map(|(_, v)| v.unwrap().len())
            .collect();
        assert_eq!(sizes.len(), 64);
        assert!(sizes.iter().all(|&z| z == 4096));
        // The cleanup with the same options removes them and nothing else.
        let mut cl = c.clone();
        cl[1] = "cleanup".into();
        let a: Vec<&str> = cl.iter().map(String::as_str).collect();
        let out = sf(&a);
        assert_code(&out, 0);
        assert_eq!(names(&job), vec!["keep-me.txt".to_string()]);
        std::fs::remove_file(job.join("keep-me.txt")).unwrap();
        std::fs::remove_dir(&job).unwrap();
    }
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn operations_follow_each_other_on_the_kept_tree() {
    let dir = scratch();
    let top = s(dir.path());
    let base = [
        "--threads",
        "2",
        "--files",
        "30",
        "--file-size",
        "8",
        "--record-size",
        "4",
        "--files-per-dir",
        "10",
        "--dirs-per-dir",
        "3",
        "--top",
        top,
    ];
    let with = |op: &str| {
        let mut a = vec!["--operation", op];
        a.extend_from_slice(&base);
        a.iter().map(|x| x.to_string()).collect::<Vec<_>>()
    };
    let go = |op: &str| {
        let a = with(op);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = sf(&a);
        assert_code(&out, 0);
        stdout(&out)
    };
    let text = go("create");
    // 8 KiB in 4 KiB records: 2 records per file.
    assert!(text.contains("records = 60,status = ok"), "{text}");
    assert_eq!(regular_files(dir.path()), 60);
    let text = go("read");
    let files = counted_files(&text);
    assert!(text.contains(&format!("total files = {files}\n")), "{text}");
    assert!(text.contains("records = 60,"), "{text}");
    let text = go("stat");
    assert!(text.contains("records = 0,"), "{text}");
    assert!(!text.contains("total IOPS"), "{text}");
    // A second create on the same tree is refused, pointing at cleanup.
    let a = with("create");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let out = sf(&a);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("--operation cleanup"),
        "{}",
        stderr(&out)
    );
    assert_eq!(regular_files(dir.path()), 60);
    go("delete");
    assert_empty(dir.path());
}

#[test]
fn output_json_and_response_times() {
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let j = dir.path().join("sf.json");
    let out = sf(&[
        "--operation=create",
        "--threads=3",
        "--files=20",
        "--file-size=4",
        "--response-times=Y",
        "--fsync=Y",
        "--output-json",
        s(&j),
        "--top",
        s(&data),
    ]);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("response times (usec): p50 "));
    let v = json(&j);
    // smallfile 1.1's keys and spelling.
    let r = &v["results"];
    assert_eq!(r["totalhreads"], 3, "{r}");
    assert_eq!(r["status"], "Success", "{r}");
    assert!(r["startTime"].as_f64().unwrap() > 1.6e9, "{r}");
    assert!(r["date"].as_str().unwrap().ends_with(".000Z"), "{r}");
    assert_eq!(v["params"]["operation"], "create");
    assert_eq!(v["params"]["stonewall"], "Y");
    assert_eq!(regular_files(&data), 60);
    // smallfile's counts: per thread, the files done when it saw the
    // first thread finish; the totals and rates are their sums.
    let th = r["thread"].as_object().unwrap();
    assert_eq!(th.len(), 3, "{r}");
    let files: u64 = th.values().map(|t| t["files"].as_u64().unwrap()).sum();
    let rate: f64 = th
        .values()
        .map(|t| t["filesPerSec"].as_f64().unwrap())
        .sum();
    assert_eq!(r["files"], files, "{r}");
    assert!(files <= 60 && th.values().any(|t| t["files"] == 20), "{r}");
    assert!(
        (r["filesPerSec"].as_f64().unwrap() - rate).abs() <= 1e-9 * rate,
        "{r}"
    );
    let pct = r["pctFilesDone"].as_f64().unwrap();
    assert!((pct - files as f64 * 100.0 / 60.0).abs() < 1e-9, "{r}");
    // The honest aggregate, under names smallfile does not use: every
    // file ÷ (first start to last finish).
    assert_eq!(r["files-wall-clock"], 60, "{r}");
    let wall = r["wall-clock-elapsed"].as_f64().unwrap();
    let honest = r["files-per-sec-wall-clock"].as_f64().unwrap();
    assert!(wall > 0.0, "{r}");
    assert!((honest - 60.0 / wall).abs() <= 1e-6 * honest, "{r}");
    assert!(
        r["MiBps-wall-clock"].is_number() && r["IOPS-wall-clock"].is_number(),
        "{r}"
    );
    // The text: the honest headline on the line before smallfile's own.
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("files/sec (all threads, wall clock) = "))
        .unwrap_or_else(|| panic!("no wall-clock headline: {text}"));
    assert!(
        lines[at + 1].starts_with("files/sec = ")
            && lines[at + 1].contains("(smallfile's definition: the sum of each thread's own rate"),
        "{text}"
    );
    let shown: f64 = lines[at].rsplit(' ').next().unwrap().parse().unwrap();
    assert!(
        (shown - honest).abs() <= 1e-3 * honest.max(1.0),
        "{shown} vs {honest}"
    );
}

#[test]
fn unsupported_options_name_the_option_and_the_native_one() {
    let dir = scratch();
    let top = s(dir.path());
    for (args, opt, native) in [
        (vec!["--host-set", "a,b"], "--host-set", "docs/cluster.md"),
        (
            vec!["--remote-pgm-dir", "/x"],
            "--remote-pgm-dir",
            "docs/cluster.md",
        ),
        (vec!["--pause", "100"], "--pause", "--threads"),
        (
            vec!["--file-size-distribution", "exponential"],
            "--file-size-distribution",
            "--file-size MIN..MAX",
        ),
        // --finish N and --verify-read Y are supported (tests/meta_verify.rs).
        (vec!["--finish", "maybe"], "--finish maybe", "Y or N"),
        (
            vec!["--operation", "setxattr", "--xattr-size", "100"],
            "--xattr-size",
            "--ops setxattr",
        ),
        (
            vec!["--operation", "swift-put"],
            "swift-put",
            "--operation create",
        ),
        (vec!["--suffix", "x"], "--suffix", "--prefix"),
        (vec!["--bogus", "1"], "--bogus", "docs/compat.md"),
    ] {
        let mut a = args.clone();
        a.extend_from_slice(&["--top", top]);
        let out = sf(&a);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(err.contains(opt), "{args:?}: {err}");
        assert!(err.contains(native), "{args:?}: {err}");
    }
    let out = sf(&["--operation", "create"]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("--top"));
    assert_empty(dir.path());
}

#[test]
fn the_binary_called_smallfile_cli_py_is_the_front_end() {
    let dir = scratch();
    let link = dir.path().join("smallfile_cli.py");
    std::os::unix::fs::symlink(ioscale_path(), &link).unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let out = std::process::Command::new(&link)
        .args([
            "--operation",
            "create",
            "--threads",
            "2",
            "--files",
            "10",
            "--file-size",
            "0",
            "--top",
            s(&data),
        ])
        .output()
        .unwrap();
    assert_no_panic(&out);
    assert_code(&out, 0);
    let files = counted_files(&stdout(&out));
    assert!(stdout(&out).contains(&format!("total files = {files}\n")));
    assert_eq!(regular_files(&data), 20);
    let help = sf(&["--help"]);
    assert_code(&help, 0);
    assert!(stdout(&help).contains("Examples"));
}

/// The sum of the `files = N` of smallfile's thread lines.
fn counted_files(text: &str) -> u64 {
    text.lines()
        .filter(|l| l.starts_with("host = "))
        .filter_map(|l| {
            l.split(",files = ")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

#[test]
fn files_are_counted_when_the_first_thread_finishes_as_smallfile_counts_them() {
    // smallfile 1.1 with its stonewall (the default): each thread's line,
    // `total files`, the percentage and files/sec count the files done
    // when it saw the first thread finish; the record keeps every file.
    // 8 threads of 300 files on 2 CPUs: some thread sees another finish.
    let dir = scratch();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let rec = dir.path().join("r.json");
    let j = dir.path().join("sf.json");
    let base = [
        "--operation",
        "create",
        "--threads",
        "8",
        "--files",
        "300",
        "--file-size",
        "0",
    ];
    let mut a = base.to_vec();
    a.extend_from_slice(&[
        "--record",
        s(&rec),
        "--output-json",
        s(&j),
        "--top",
        s(&data),
    ]);
    let out = sf(&a);
    assert_code(&out, 0);
    let text = stdout(&out);
    let v = json(&rec);
    let threads = v["phases"][0]["files"]["threads"]
        .as_array()
        .unwrap()
        .clone();
    let mut want = 0;
    for t in &threads {
        let (sw, all) = (
            t["stonewall_files"].as_u64().unwrap(),
            t["files"].as_u64().unwrap(),
        );
        assert_eq!(all, 300, "{t}");
        assert!(sw <= all, "{t}");
        let shown = text
            .lines()
            .find(|l| l.contains(&format!(",thr = {:02},", t["thread"].as_u64().unwrap())))
            .unwrap();
        assert!(shown.contains(&format!(",files = {sw},")), "{shown} {t}");
        want += sw;
    }
    assert_eq!(counted_files(&text), want);
    assert!(text.contains(&format!("total files = {want}\n")), "{text}");
    assert_eq!(json(&j)["results"]["files"], want);
    assert_eq!(json(&j)["results"]["files-wall-clock"], 2400);
    std::fs::remove_dir_all(&data).unwrap();
    std::fs::create_dir(&data).unwrap();
    // Without the stonewall smallfile counts every file.
    let mut a = base.to_vec();
    a.extend_from_slice(&["--stonewall", "N", "--top", s(&data)]);
    let out = sf(&a);
    assert_code(&out, 0);
    assert_eq!(counted_files(&stdout(&out)), 2400, "{}", stdout(&out));
}
