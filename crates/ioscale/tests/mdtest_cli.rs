//! `ioscale mdtest`: mdtest's options, phases, tree, SUMMARY tables, kept
//! trees and refusals, on the repository's real file system.
//! `UPDATE_GOLDEN=1` rewrites the golden file.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn md(args: &[&str]) -> std::process::Output {
    let mut a = vec!["mdtest"];
    a.extend_from_slice(args);
    run(&a)
}

fn regular_files(dir: &Path) -> Vec<String> {
    snapshot(dir)
        .into_iter()
        .filter(|(k, v)| v.is_some() && !k.ends_with(".ioscale-meta-marker"))
        .map(|(k, _)| k)
        .collect()
}

/// Numbers and dates become N, the directory a placeholder.
fn normalise(text: &str, dir: &Path) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut l = line.replace(dir.to_str().unwrap(), "<DIR>");
        if l.starts_with("FS ") {
            l = "FS                  : <FS>".into();
        }
        let mut norm = String::new();
        let mut in_num = false;
        for ch in l.chars() {
            if ch.is_ascii_digit() || (in_num && (ch == '.' || ch == ':' || ch == '/')) {
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

fn check_golden(name: &str, got: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with UPDATE_GOLDEN=1", path.display()));
    assert!(
        want == got,
        "{} differs\n--- want\n{want}\n--- got\n{got}",
        path.display()
    );
}

#[test]
fn default_run_prints_the_summary_table_and_removes_everything() {
    let dir = scratch();
    plant_foreign(dir.path());
    let before = snapshot(dir.path());
    let out_dir = dir.path().join("out");
    let out = md(&["--tasks", "2", "-n", "20", "-i", "2", "-d", s(&out_dir)]);
    assert_code(&out, 0);
    let text = stdout(&out);
    check_golden("mdtest_default_text.txt", &normalise(&text, dir.path()));
    assert!(text.contains("SUMMARY rate: (of 2 iterations)"), "{text}");
    assert!(text.contains("2 tasks, 40 files/directories"), "{text}");
    // mdtest 4.0's rows, in its order; values start in column 27.
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("   ") && l.len() > 26 && !l.contains("---"))
        .filter(|l| !l.trim_start().starts_with("Operation"))
        .collect();
    let labels: Vec<&str> = rows.iter().map(|l| l[3..26].trim_end()).collect();
    assert_eq!(
        labels,
        [
            "Directory creation",
            "Directory stat",
            "Directory rename",
            "Directory removal",
            "File creation",
            "File stat",
            "File read",
            "File removal",
            "Tree creation",
            "Tree removal",
        ],
        "{text}"
    );
    for (label, line) in labels.iter().zip(&rows) {
        let max = line[26..].split_whitespace().next().unwrap();
        match *label {
            // The tree's own rows are not measured by ioscale: NA. The
            // directory rename runs by default, as in mdtest 4.0.
            "Tree creation" | "Tree removal" => assert_eq!(max, "NA", "{line}"),
            _ => assert!(max.parse::<f64>().unwrap() > 0.0, "{line}"),
        }
    }
    assert!(!text.contains("SUMMARY time"));
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn create_only_keeps_exactly_the_items_then_remove_only_removes_them() {
    let dir = scratch();
    let d = dir.path().join("md");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("notes.txt"), b"keep").unwrap();
    let shape = [
        "--tasks",
        "3",
        "-I",
        "4",
        "-z",
        "2",
        "-b",
        "2",
        "-F",
        "-u",
        "-d",
        s(&d),
    ];
    let mut a = shape.to_vec();
    a.extend_from_slice(&["-C", "-w", "100", "-y"]);
    let out = md(&a);
    assert_code(&out, 0);
    assert!(
        stdout(&out).contains("3 tasks, 84 files"),
        "{}",
        stdout(&out)
    );
    // 3 tasks x 4 items in each of the 7 directories of the tree.
    let files = regular_files(&d);
    assert_eq!(files.len(), 84 + 1, "{files:?}");
    assert!(
        names(&d).iter().any(|n| n.ends_with("/h1/h0")),
        "{:?}",
        names(&d)
    );
    let mut a = shape.to_vec();
    a.extend_from_slice(&["-T", "-E", "-r", "-e", "100", "-P"]);
    let out = md(&a);
    assert_code(&out, 0);
    let text = stdout(&out);
    assert!(
        text.contains("SUMMARY rate") && text.contains("SUMMARY time"),
        "{text}"
    );
    let creation = text.lines().find(|l| l.contains("File creation")).unwrap();
    assert!(
        creation.ends_with("0.000          0.000          0.000          0.000"),
        "{creation}"
    );
    assert_eq!(names(&d), vec!["notes.txt".to_string()]);
}

#[test]
fn directories_only_and_time_only() {
    let dir = scratch();
    let d = dir.path().join("md");
    let out = md(&["-n", "30", "-D", "-Z", "-d", s(&d)]);
    assert_code(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("SUMMARY time: (of 1 iterations)"), "{text}");
    assert!(!text.contains("SUMMARY rate"), "{text}");
    assert!(text.contains("1 tasks, 30 directories"), "{text}");
    assert!(text.contains("Directory stat"), "{text}");
    assert!(!text.contains("File creation"), "{text}");
    assert_empty(dir.path());
}

#[test]
fn print_spec_shows_the_tree() {
    let out = md(&[
        "-n",
        "100",
        "-z",
        "1",
        "-b",
        "4",
        "-u",
        "-F",
        "--tasks",
        "2",
        "-d",
        "/x/md",
        "--print-spec",
    ]);
    assert_code(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files"], 100);
    assert_eq!(v["files_per_dir"], 20);
    assert_eq!(v["dirs_per_dir"], 4);
    assert_eq!(v["threads"], 2);
    assert_eq!(v["same_dir"], false);
    assert_eq!(
        v["ops"],
        serde_json::json!(["create", "stat", "read", "delete"])
    );
}

#[test]
fn unsupported_options_name_the_option_and_the_native_one() {
    let dir = scratch();
    for (args, opt, native) in [
        // -N, -Y, -X and -L are supported (tests/mdtest_more.rs); what
        // they cannot do is still refused.
        (
            vec!["-n", "2", "-z", "2", "-b", "2", "-L"],
            "-n 2",
            "leaf directories",
        ),
        (vec!["-n", "5", "-k"], "-k", "--ops create"),
        (vec!["-n", "5", "-B"], "-B", "barrier"),
        (vec!["-n", "5", "-a", "MPIIO"], "-a MPIIO", "-a POSIX"),
        (vec!["-n", "5", "-f", "1", "-l", "4"], "-f", "ioscale sweep"),
        (vec!["-n", "5", "-S"], "-S", "--layout shared"),
        (vec!["-n", "5", "--bogus"], "--bogus", "docs/compat.md"),
        (vec!["-F"], "-n N", "-I N"),
    ] {
        let mut a = args.clone();
        let d = dir.path().join("md");
        a.extend_from_slice(&["-d", s(&d)]);
        let out = md(&a);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(err.contains(opt), "{args:?}: {err}");
        assert!(err.contains(native), "{args:?}: {err}");
    }
    assert_empty(dir.path());
}

/// What mdtest 4.0 refuses, ioscale refuses too.
#[test]
fn options_mdtest_4_refuses_are_refused() {
    let dir = scratch();
    let d = dir.path().join("md");
    for args in [
        vec!["-n", "5", "-F", "-X"],
        vec!["-n", "5", "-F", "--verify-read", "-e", "0"],
    ] {
        let mut a = args.clone();
        a.extend_from_slice(&["-d", s(&d)]);
        let out = md(&a);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains("-X") && err.contains("-e N"),
            "{args:?}: {err}"
        );
    }
    assert_empty(dir.path());
}

/// mdtest 4.0's whole option list (src/mdtest.c and the POSIX backend):
/// each is accepted, or refused with exit 2 naming it and the nearest
/// native option (or saying there is none and why).
#[test]
fn every_mdtest_4_option_is_accepted_or_refused_with_the_nearest_one() {
    let dir = scratch();
    let d = dir.path().join("md");
    let opts: &[&[&str]] = &[
        &["-a", "POSIX"],
        &["-b", "2"],
        &["-d", "x"],
        &["-B", "1"],
        &["-C"],
        &["-T"],
        &["-E"],
        &["-r"],
        &["-D"],
        &["-e", "4096"],
        &["-f", "1"],
        &["-F"],
        &["-g"],
        &["-G", "3"],
        &["-i", "1"],
        &["-I", "4"],
        &["-k"],
        &["-l", "2"],
        &["-L"],
        &["-n", "4"],
        &["-N", "1"],
        &["-p", "1"],
        &["-P"],
        &["--print-all-procs"],
        &["-R"],
        &["--random-seed=4"],
        &["-s", "1"],
        &["-S"],
        &["-c"],
        &["-t"],
        &["-u"],
        &["-v"],
        &["-V", "1"],
        &["-w", "4096"],
        &["-W", "1"],
        &["-x", "sw.txt"],
        &["-X"],
        &["--verify-read"],
        &["--verify-write"],
        &["-y"],
        &["-Y"],
        &["-z", "1"],
        &["-Z"],
        &["--dataPacketType=o"],
        &["--run-cmd-before-phase=true"],
        &["--run-cmd-after-phase=true"],
        &["--allocateBufferOnGPU"],
        &["--warningAsErrors"],
        &["--saveRankPerformanceDetails=r.csv"],
        &["--showRankStatistics"],
        &["--posix.odirect"],
        &["--posix.rangelocks"],
        &["-h"],
    ];
    for opt in opts {
        let mut a = vec!["-n", "4", "-w", "4096", "-e", "4096", "-d", s(&d)];
        a.extend_from_slice(opt);
        a.push("--print-spec");
        let out = md(&a);
        assert_no_panic(&out);
        let code = out.status.code();
        if code == Some(0) {
            continue;
        }
        assert_eq!(code, Some(2), "{opt:?}: {}", stderr(&out));
        let err = stderr(&out);
        let name = opt[0].split('=').next().unwrap();
        assert!(err.contains(name), "{opt:?} not named: {err}");
        assert!(
            names_a_native_option(&err),
            "{opt:?}: no native option named: {err}"
        );
    }
    assert_empty(dir.path());
}

#[test]
fn the_binary_called_mdtest_is_the_front_end() {
    let dir = scratch();
    let link = dir.path().join("mdtest");
    std::os::unix::fs::symlink(ioscale_path(), &link).unwrap();
    let d = dir.path().join("out");
    let out = std::process::Command::new(&link)
        .args(["-n", "10", "-F", "-d", s(&d)])
        .output()
        .unwrap();
    assert_no_panic(&out);
    assert_code(&out, 0);
    let text = stdout(&out);
    assert!(text.starts_with("-- started at "), "{text}");
    assert!(
        text.contains("\n\nmdtest-4.0.0 was launched with 1 total task(s) on 1 node(s)\n"),
        "{text}"
    );
    assert!(text.contains("Command line used: "), "{text}");
    assert!(text.contains(" '-n' '10' '-F' '-d' "), "{text}");
    // mdtest 4.0: Path is the -d directory, then FS, then the Nodemap.
    let path = format!("\nPath                : {}\nFS                  : ", s(&d));
    assert!(text.contains(&path), "{text}");
    assert!(text.contains("\nNodemap: 1\n1 tasks, 10 files\n"), "{text}");
    assert!(text.contains("-- finished at "), "{text}");
    assert!(!d.exists());
    let help = md(&["--help"]);
    assert_code(&help, 0);
    assert!(stdout(&help).contains("Examples"));
}
