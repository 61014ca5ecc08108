//! `ioscale meta --ops stat-dir`: an lstat of each directory `mkdir` made
//! (mdtest's "Directory stat"), laid out by an untimed mkdir when none
//! exist, and removed afterwards like every meta tree.

mod common;

use common::*;

#[test]
fn stat_dir_stats_every_directory_mkdir_made() {
    let dir = scratch();
    let j = dir.path().join("m.json");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let out = run(&[
        "meta",
        "--ops",
        "mkdir,stat-dir,rmdir",
        "--threads",
        "3",
        "--files",
        "40",
        "--json",
        s(&j),
        s(&data),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    let ops: Vec<&str> = phases(&v)
        .iter()
        .map(|p| p["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["mkdir", "stat-dir", "rmdir"]);
    for p in phases(&v) {
        assert_eq!(p["ops"], 120, "{p}");
        assert_eq!(p["errors"], 0, "{p}");
    }
    assert_empty(&data);
}

#[test]
fn stat_dir_alone_gets_its_directories_from_an_untimed_mkdir() {
    let dir = scratch();
    let out = run(&["meta", "--ops", "stat-dir", "--files", "25", s(dir.path())]);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("untimed mkdir"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("total files = 25"),
        "{}",
        stdout(&out)
    );
    assert_empty(dir.path());
}

#[test]
fn stat_dir_after_rmdir_is_refused_only_if_it_cannot_work() {
    // stat-dir after rmdir gets a fresh untimed mkdir: the sequence is valid.
    let dir = scratch();
    let out = run(&[
        "meta",
        "--ops",
        "mkdir,rmdir,stat-dir,cleanup",
        "--files",
        "5",
        s(dir.path()),
    ]);
    assert_code(&out, 0);
    assert_empty(dir.path());
}
