//! `ioscale meta` end to end, on real file systems: the repository's own
//! (ext4 here) and small tmpfs mounts made for a test (skipped with a note
//! when mounting is not possible). No test asserts on timing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tempfile::TempDir;

mod common;

fn bin() -> PathBuf {
    common::ioscale_path()
}

fn scratch() -> TempDir {
    tempfile::Builder::new()
        .prefix("ioscale-meta-it-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("creating a scratch directory")
}

fn run(args: &[&str]) -> Output {
    let out = Command::new(bin())
        .arg("meta")
        .args(args)
        .output()
        .expect("running ioscale");
    no_panic(&out);
    out
}

fn no_panic(out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "ioscale panicked:\n{err}"
    );
}

fn code(out: &Output, want: i32) {
    assert_eq!(
        out.status.code(),
        Some(want),
        "exit code\n--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).expect("reading the JSON record")).expect("valid JSON")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Relative path → contents (`None` for directories, link text for links).
type Tree = BTreeMap<String, Option<Vec<u8>>>;

fn snapshot(dir: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let ft = e.file_type().unwrap();
            if ft.is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.insert(rel, Some(format!("-> {}", t.display()).into_bytes()));
            } else if ft.is_dir() {
                out.insert(rel, None);
                walk(root, &p, out);
            } else {
                out.insert(rel, Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Tree::new();
    walk(dir, dir, &mut out);
    out
}

fn plant_foreign(dir: &Path) {
    std::fs::write(dir.join("notes.txt"), b"user data, keep me\n").unwrap();
    std::fs::write(dir.join(".hidden"), vec![0xa5u8; 5000]).unwrap();
    std::fs::write(dir.join("f0.0"), b"looks like an ioscale name, is not").unwrap();
    std::fs::create_dir_all(dir.join("project/sub")).unwrap();
    std::fs::write(dir.join("project/sub/data.bin"), vec![7u8; 70_000]).unwrap();
    std::os::unix::fs::symlink("notes.txt", dir.join("link")).unwrap();
}

/// A mount made by a test, undone on drop.
struct Mount(TempDir);

impl Mount {
    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

fn sh(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn tmpfs(opts: &str) -> Option<Mount> {
    let dir = tempfile::Builder::new()
        .prefix("ioscale-meta-mnt-")
        .tempdir()
        .unwrap();
    if !sh(
        "mount",
        &["-t", "tmpfs", "-o", opts, "tmpfs", s(dir.path())],
    ) {
        eprintln!("note: cannot mount a tmpfs (needs root); skipping this part");
        return None;
    }
    Some(Mount(dir))
}

fn phase(v: &Value, i: usize) -> &Value {
    &v["phases"][i]
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

#[test]
fn seed_003_shape_counts_are_exact() {
    for threads in [1u64, 4] {
        for same_dir in [true, false] {
            let dir = scratch();
            let out_json = dir.path().join("r.json");
            let target = dir.path().join("t");
            std::fs::create_dir(&target).unwrap();
            let files = (1024 / threads).to_string();
            let threads_s = threads.to_string();
            let mut args = vec![
                "--ops",
                "create",
                "--threads",
                &threads_s,
                "--files",
                &files,
                "--file-size",
                "4k",
                "--files-per-dir",
                "1024",
                "--dirs-per-dir",
                "1024",
                "--json",
                s(&out_json),
                s(&target),
            ];
            if same_dir {
                args.insert(0, "--same-dir");
            }
            let out = run(&args);
            code(&out, 0);
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("thr = 00, elapsed = "), "{text}");
            assert!(text.contains("total files = 1024"), "{text}");
            assert!(
                text.contains("100.00% of requested files processed"),
                "{text}"
            );
            assert!(text.contains("files/sec = "), "{text}");
            let v = json(&out_json);
            assert_eq!(v["spec"]["kind"], "meta");
            let p = phase(&v, 0);
            assert_eq!(p["op"], "create");
            assert_eq!(u(&p["threads"]), threads);
            assert_eq!(u(&p["ops"]), 1024);
            assert_eq!(u(&p["bytes"]), 1024 * 4096);
            assert_eq!(u(&p["files"]["requested"]), 1024);
            assert_eq!(p["files"]["processed_pct"].as_f64(), Some(100.0));
            assert_eq!(p["workers"].as_array().unwrap().len() as u64, threads);
            for t in p["files"]["threads"].as_array().unwrap() {
                assert_eq!(u(&t["files"]), 1024 / threads);
                assert_eq!(t["status"], "ok");
            }
            for key in ["p50", "p99", "p999", "max"] {
                assert!(p["lat_us"][key].as_f64().unwrap() > 0.0);
            }
            assert!(
                snapshot(&target).is_empty(),
                "left behind: {:?}",
                snapshot(&target).keys()
            );
        }
    }
}

#[test]
fn every_op_runs_with_exact_counts() {
    let dir = scratch();
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    plant_foreign(&target);
    let before = snapshot(&target);
    let out_json = dir.path().join("r.json");
    let ops = "create,stat,read,append,overwrite,truncate-overwrite,chmod,rename,setxattr,\
               getxattr,symlink,readdir,delete,mkdir,rmdir,cleanup";
    let out = run(&[
        "--ops",
        ops,
        "--threads",
        "2",
        "--files",
        "100",
        "--file-size",
        "4k",
        "--files-per-dir",
        "10",
        "--dirs-per-dir",
        "3",
        "--json",
        s(&out_json),
        s(&target),
    ]);
    code(&out, 0);
    let v = json(&out_json);
    let names: Vec<&str> = ops.split(',').collect();
    let phases = v["phases"].as_array().unwrap();
    assert_eq!(phases.len(), names.len());
    for (p, name) in phases.iter().zip(&names) {
        assert_eq!(p["op"], *name);
        assert_eq!(u(&p["errors"]), 0, "{name}");
        let want = if *name == "readdir" { 400 } else { 200 };
        assert_eq!(u(&p["ops"]), want, "{name}");
    }
    let bytes = |i: usize| u(&phases[i]["bytes"]);
    assert_eq!(bytes(0), 200 * 4096); // create
    assert_eq!(bytes(2), 200 * 4096); // read
    assert_eq!(bytes(3), 200 * 4096); // append
    assert_eq!(bytes(5), 200 * 4096); // truncate-overwrite
    assert_eq!(before, snapshot(&target), "foreign files changed");
}

#[test]
fn random_sizes_and_empty_files() {
    let dir = scratch();
    let out_json = dir.path().join("r.json");
    let out = run(&[
        "--ops",
        "create,read,delete",
        "--files",
        "300",
        "--file-size",
        "1k..8k",
        "--record-size",
        "1k",
        "--seed",
        "7",
        "--json",
        s(&out_json),
        s(dir.path()),
    ]);
    code(&out, 0);
    let v = json(&out_json);
    let written = u(&phase(&v, 0)["bytes"]);
    assert!((300 * 1024..=300 * 8192).contains(&written), "{written}");
    assert_eq!(u(&phase(&v, 1)["bytes"]), written, "read what create wrote");
    assert!(u(&phase(&v, 0)["files"]["records"]) >= 300);

    let out = run(&[
        "--ops",
        "create,read,delete",
        "--files",
        "50",
        "--file-size",
        "0",
        "--json",
        s(&out_json),
        s(dir.path()),
    ]);
    code(&out, 0);
    let v = json(&out_json);
    assert_eq!(u(&phase(&v, 0)["ops"]), 50);
    assert_eq!(u(&phase(&v, 0)["bytes"]), 0);
}

#[test]
fn a_kept_tree_is_used_by_later_runs() {
    let dir = scratch();
    let t = dir.path();
    let common = ["--threads", "2", "--files", "64", "--same-dir"];
    let with = |ops: &str, extra: &[&str]| {
        let mut a = vec!["--ops", ops];
        a.extend_from_slice(&common);
        a.extend_from_slice(extra);
        a.push(s(t));
        run(&a)
    };
    code(&with("create", &["--keep"]), 0);
    assert!(t.join("ioscale-meta.d/.ioscale-meta-marker").exists());
    assert!(t.join("ioscale-meta.d/f1.63").exists());

    // A second create would clobber: refused, the tree untouched.
    let before = snapshot(t);
    let out = with("create", &[]);
    code(&out, 2);
    assert!(
        stderr(&out).contains("--clean-existing"),
        "{}",
        stderr(&out)
    );
    assert_eq!(before, snapshot(t));

    // Other shapes are refused too.
    let out = run(&["--ops", "stat", "--threads", "3", "--files", "64", s(t)]);
    code(&out, 2);
    assert!(stderr(&out).contains("--threads 2"), "{}", stderr(&out));

    let json_path = dir.path().join("r.json");
    let out = with("stat,read", &["--json", s(&json_path)]);
    code(&out, 0);
    let v = json(&json_path);
    assert_eq!(u(&phase(&v, 0)["ops"]), 128);
    assert_eq!(u(&phase(&v, 1)["bytes"]), 128 * 4096);
    // Without --keep a read-only run leaves the kept tree in place.
    assert!(t.join("ioscale-meta.d/f0.0").exists());

    let out = with("delete", &["--json", s(&json_path)]);
    code(&out, 0);
    assert_eq!(u(&phase(&json(&json_path), 0)["ops"]), 128);
    assert!(
        !t.join("ioscale-meta.d").exists(),
        "an empty tree is removed"
    );

    // --clean-existing removes a kept tree first.
    code(&with("create", &["--keep"]), 0);
    code(&with("create,delete", &["--clean-existing"]), 0);
    assert!(!t.join("ioscale-meta.d").exists());
}

#[test]
fn files_per_dir_makes_the_expected_tree() {
    let dir = scratch();
    let t = dir.path();
    let out = run(&[
        "--ops",
        "create",
        "--keep",
        "--threads",
        "2",
        "--files",
        "250",
        "--files-per-dir",
        "10",
        "--dirs-per-dir",
        "4",
        s(t),
    ]);
    code(&out, 0);
    let tree = snapshot(&t.join("ioscale-meta.d"));
    let dirs = tree.values().filter(|v| v.is_none()).count();
    // Per thread: 25 directory nodes = the thread directory + 24 below it.
    assert_eq!(dirs, 2 * 25, "{:?}", tree.keys());
    let files = tree.keys().filter(|k| k.contains("/f")).count();
    assert_eq!(files, 500);
    for k in tree.keys().filter(|k| k.contains("/f")) {
        let leaf = k.rsplit('/').next().unwrap();
        let i: u64 = leaf.split('.').nth(1).unwrap().parse().unwrap();
        let depth = k.matches('/').count();
        // node 0 = the thread dir; nodes 1-4 one level down; 5-20 two; 21-24 three.
        let node = i / 10;
        let want = match node {
            0 => 1,
            1..=4 => 2,
            5..=20 => 3,
            _ => 4,
        };
        assert_eq!(depth, want, "{k}");
    }
    let out = run(&[
        "--ops",
        "readdir,cleanup",
        "--threads",
        "2",
        "--files",
        "250",
        "--files-per-dir",
        "10",
        "--dirs-per-dir",
        "4",
        s(t),
    ]);
    code(&out, 0);
    assert!(snapshot(t).is_empty(), "{:?}", snapshot(t).keys());
}

#[test]
fn inode_exhaustion_stops_cleanly_and_cleans_up() {
    let Some(m) = tmpfs("size=16m,nr_inodes=200") else {
        return;
    };
    let t = m.path();
    plant_foreign(t);
    let before = snapshot(t);
    let dir = scratch();
    let json_path = dir.path().join("r.json");
    let out = run(&[
        "--ops",
        "create,stat,delete",
        "--threads",
        "2",
        "--files",
        "500",
        "--json",
        s(&json_path),
        s(t),
    ]);
    code(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("create "), "{err}");
    assert!(err.contains("ioscale-meta.d/thr.00"), "{err}");
    assert!(err.contains("out of space or inodes"), "{err}");
    let v = json(&json_path);
    let e = &v["errors"][0];
    assert_eq!(e["op"], "create");
    assert_eq!(u(&e["errno"]), 28);
    assert!(e["file"]
        .as_str()
        .unwrap()
        .contains("/ioscale-meta.d/thr.00"));
    // The failed create is no result: kept apart, with partial counts.
    assert!(v["phases"].as_array().unwrap().is_empty(), "{v}");
    let f = &v["failed_phases"][0];
    assert_eq!(f["op"], "create");
    let done = u(&f["partial_ops"]);
    assert!(done > 0 && done < 1000, "{done}");
    assert_eq!(
        before,
        snapshot(t),
        "cleanup left something or touched foreign files"
    );
}

#[test]
fn running_out_of_descriptors_is_reported() {
    let dir = scratch();
    let t = dir.path().join("t");
    std::fs::create_dir(&t).unwrap();
    // The run holds three descriptors for its whole life (the target,
    // the tree and the tree's lock): with 8, the workers run out.
    let with_limit = |n: u32| {
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -n {n} && exec \"$0\" meta --ops create --threads 2 --files 20 \"$1\""
            ))
            .arg(bin())
            .arg(&t)
            .output()
            .unwrap()
    };
    // Fewer: the setup fails at whichever step (making the tree, the
    // marker, the lock, a thread directory) and leaves nothing behind.
    for n in 4..8 {
        let out = with_limit(n);
        no_panic(&out);
        code(&out, 2);
        assert!(snapshot(&t).is_empty(), "{n}: {:?}", snapshot(&t).keys());
    }
    let out = with_limit(8);
    no_panic(&out);
    code(&out, 1);
    assert!(
        stderr(&out).contains("Too many open files"),
        "{}",
        stderr(&out)
    );
    assert!(snapshot(&t).is_empty(), "{:?}", snapshot(&t).keys());
}

#[test]
fn names_too_long_are_refused() {
    let dir = scratch();
    let prefix = "x".repeat(300);
    let out = run(&["--prefix", &prefix, s(dir.path())]);
    code(&out, 2);
    assert!(stderr(&out).contains("--prefix"), "{}", stderr(&out));
    assert!(stderr(&out).contains("255"), "{}", stderr(&out));
    // Just under the limit with the longest index: 250 + "f0." + "1023" = 257.
    let prefix = "y".repeat(250);
    let out = run(&["--prefix", &prefix, s(dir.path())]);
    code(&out, 2);
    assert!(snapshot(dir.path()).is_empty());
    // A long prefix that fits works.
    let prefix = "z".repeat(240);
    let out = run(&["--prefix", &prefix, "--files", "20", s(dir.path())]);
    code(&out, 0);
    assert!(snapshot(dir.path()).is_empty());
}

#[test]
fn bad_flags_name_the_flag() {
    let dir = scratch();
    for (args, needle) in [
        (vec!["--ops", "create,bogus"], "--ops"),
        (vec!["--ops", "create,create"], "--ops"),
        (vec!["--ops", "create", "--reps", "2"], "--reps"),
        (vec!["--files", "0"], "--files"),
        (vec!["--file-size", "8k..1k"], "--file-size"),
        (vec!["--dirs-per-dir", "4"], "--files-per-dir"),
    ] {
        let mut a = args.clone();
        a.push(s(dir.path()));
        let out = run(&a);
        code(&out, 2);
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
    let out = run(&[s(&dir.path().join("missing"))]);
    code(&out, 2);
    assert!(snapshot(dir.path()).is_empty());
}

#[test]
fn foreign_working_directory_is_refused_and_left_intact() {
    let dir = scratch();
    let t = dir.path();
    plant_foreign(t);
    let root = t.join("ioscale-meta.d");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("precious"), b"mine").unwrap();
    let before = snapshot(t);
    let out = run(&["--ops", "create,delete", "--files", "10", s(t)]);
    code(&out, 2);
    assert!(
        stderr(&out).contains("no ioscale marker"),
        "{}",
        stderr(&out)
    );
    let out = run(&["--ops", "cleanup", "--clean-existing", s(t)]);
    code(&out, 2);
    assert_eq!(before, snapshot(t));

    // Foreign files beside the tree survive a full run, byte for byte.
    std::fs::remove_file(root.join("precious")).unwrap();
    std::fs::remove_dir(&root).unwrap();
    let before = snapshot(t);
    let out = run(&[
        "--ops",
        "create,symlink,mkdir,delete",
        "--files",
        "30",
        s(t),
    ]);
    code(&out, 0);
    assert_eq!(before, snapshot(t));
}

#[test]
fn permission_problems_are_clear() {
    // A read-only mount is refused before anything is made.
    let dir = scratch();
    let ro = tempfile::Builder::new()
        .prefix("ioscale-meta-ro-")
        .tempdir()
        .unwrap();
    if sh("mount", &["--bind", s(dir.path()), s(ro.path())])
        && sh("mount", &["-o", "remount,bind,ro", s(ro.path())])
    {
        let m = Mount(ro);
        let out = run(&["--ops", "create", "--files", "10", s(m.path())]);
        code(&out, 2);
        assert!(stderr(&out).contains("read-only"), "{}", stderr(&out));
    } else {
        let _ = sh("umount", &[s(ro.path())]);
        eprintln!("note: cannot bind-mount read-only; skipping that part");
    }

    // EACCES mid-run: root keeps a tree, an unprivileged user may not delete in it.
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    if !is_root || !sh("setpriv", &["--version"]) {
        eprintln!("note: needs root and setpriv; skipping the EACCES part");
        return;
    }
    let base = tempfile::Builder::new()
        .prefix("ioscale-meta-acc-")
        .tempdir()
        .unwrap();
    let t = base.path();
    sh("chmod", &["0777", s(t)]);
    code(
        &run(&["--ops", "create", "--keep", "--files", "20", s(t)]),
        0,
    );
    let before = snapshot(t);
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(bin())
        .args(["meta", "--ops", "delete", "--files", "20", s(t)])
        .output()
        .unwrap();
    no_panic(&out);
    code(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("unlink "), "{err}");
    assert!(err.contains("Permission denied"), "{err}");
    assert!(err.contains("thr.000/f0.0"), "{err}");
    assert_eq!(before, snapshot(t));
    code(&run(&["--ops", "cleanup", "--files", "20", s(t)]), 0);
    assert!(snapshot(t).is_empty());
}

#[test]
fn time_limit_keeps_partial_results() {
    let Some(m) = tmpfs("size=64m,nr_inodes=400000") else {
        return;
    };
    let dir = scratch();
    let json_path = dir.path().join("r.json");
    let out = run(&[
        "--ops",
        "create,stat",
        "--files",
        "100000000",
        "--file-size",
        "0",
        "--time",
        "300ms",
        "--json",
        s(&json_path),
        s(m.path()),
    ]);
    code(&out, 0);
    let v = json(&json_path);
    let p = phase(&v, 0);
    assert_eq!(p["time_limited"], true);
    let made = u(&p["ops"]);
    assert!(made > 0 && made < 100_000_000);
    // stat works on the files that were made.
    let st = phase(&v, 1);
    assert_eq!(u(&st["files"]["requested"]), made);
    assert!(snapshot(m.path()).is_empty());
}

#[test]
fn memory_stays_flat_with_many_files() {
    let mount = tmpfs("size=256m,nr_inodes=400000");
    let dir = scratch();
    let target = mount
        .as_ref()
        .map(|m| m.path().to_path_buf())
        .unwrap_or_else(|| dir.path().to_path_buf());
    let json_path = dir.path().join("r.json");
    let out = run(&[
        "--ops",
        "create,stat,delete",
        "--files",
        "200000",
        "--file-size",
        "0",
        "--files-per-dir",
        "5000",
        "--json",
        s(&json_path),
        s(&target),
    ]);
    code(&out, 0);
    let v = json(&json_path);
    for p in v["phases"].as_array().unwrap() {
        assert_eq!(u(&p["ops"]), 200_000);
        let rss = u(&p["files"]["peak_rss_bytes"]);
        assert!(rss > 0 && rss < 64 << 20, "peak RSS {rss} bytes");
    }
    assert!(snapshot(&target).is_empty());
}

#[test]
fn a_thread_that_starts_after_the_first_finished_adds_nothing_to_the_stonewall() {
    // 64 threads of one file each on one CPU: the first thread to run makes
    // its file and finishes before most others have started. Those add
    // nothing to the work done by the time the first finished (they used
    // to add all of theirs, making the stonewall figure the total).
    let t = scratch();
    let o = scratch();
    let j = o.path().join("m.json");
    let out = std::process::Command::new("taskset")
        .args(["-c", "0"])
        .arg(bin())
        .args(["meta", "--ops", "create", "--threads", "64", "--files", "1"])
        .args(["--json", s(&j), s(t.path())])
        .output();
    let Ok(out) = out else {
        eprintln!("SKIPPED: taskset not installed");
        return;
    };
    code(&out, 0);
    let v = json(&j);
    let f = &phase(&v, 0)["files"];
    assert_eq!(f["processed"], 64, "{f}");
    let sw = f["stonewall_files"].as_u64().unwrap();
    assert!((1..64).contains(&sw), "stonewall {sw} of 64: {f}");
    assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0);
}
