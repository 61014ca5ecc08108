//! `ioscale mdtest` options built on `ioscale meta`: -Y (syncfs after each
//! phase), -X (check the data read), -N (task stride) and -L with a deeper
//! tree (items only in the leaves). No test asserts on timing.

mod common;

use std::path::Path;

use common::*;

fn md(args: &[&str]) -> std::process::Output {
    let mut a = vec!["mdtest"];
    a.extend_from_slice(args);
    run(&a)
}

/// Whether the SUMMARY table has a row named `row`.
fn has_row(text: &str, row: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with(row))
}

#[test]
fn sync_after_each_phase_runs_with_exact_counts() {
    let t = scratch();
    let d = t.path().join("md");
    let out = md(&["-n", "6", "-Y", "-u", "--tasks", "2", "-d", s(&d)]);
    assert_code(&out, 0);
    let text = stdout(&out);
    for row in [
        "Directory creation",
        "File creation",
        "File read",
        "File removal",
    ] {
        assert!(has_row(&text, row), "{row}:\n{text}");
    }
    assert!(text.contains("2 tasks, 12 files/directories"), "{text}");
    // The spec carries it, and every phase of the native record syncs.
    let out = md(&["-n", "6", "-Y", "-d", s(&d), "--print-spec"]);
    assert!(stdout(&out).contains("\"sync_phase\": true"));
    let o = scratch();
    let j = o.path().join("y.json");
    let out = run(&[
        "meta",
        "--ops",
        "create,stat,read,delete",
        "--sync-phase",
        "--threads",
        "2",
        "--files",
        "6",
        "--json",
        s(&j),
        "-q",
        s(t.path()),
    ]);
    assert_code(&out, 0);
    for p in phases(&json(&j)) {
        assert_eq!(p["ops"], 12);
        assert!(p["fsync_s"].as_f64().unwrap() > 0.0, "{p}");
    }
    assert_empty(t.path());
}

#[test]
fn verify_read_is_clean_and_names_a_flipped_byte() {
    let t = scratch();
    let d = t.path().join("md");
    let flags = [
        "-n", "4", "-F", "-u", "-w", "3000", "-e", "3000", "--tasks", "2",
    ];
    // Clean, in one run.
    let mut a = vec!["-X", "-d", s(&d)];
    a.extend(flags);
    assert_code(&md(&a), 0);
    // Create with -X (the pattern), flip a byte, read with -X.
    let mut a = vec!["-C", "-X", "-d", s(&d)];
    a.extend(flags);
    assert_code(&md(&a), 0);
    let victim = d.join("ioscale-meta.d/thr.001/f1.2");
    flip_byte(&victim, 1234);
    let mut a = vec!["-E", "--verify-read", "-d", s(&d)];
    a.extend(flags);
    let out = md(&a);
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "MISMATCH {} first bad offset 1234 (1 bytes)",
            s(&victim)
        )),
        "{err}"
    );
    let mut a = vec!["-r", "-d", s(&d)];
    a.extend(flags);
    assert_code(&md(&a), 0);
    // Only the -d directory an earlier run made is left, empty.
    assert_empty(&d);
}

/// -N 1: task 0 reads task 1's files. Replacing task 1's first file by a
/// directory (open works, read fails with EISDIR) shows which task read it.
#[test]
fn stride_reads_the_next_tasks_items() {
    let t = scratch();
    let d = t.path().join("md");
    let flags = ["-n", "2", "-F", "-u", "-w", "512", "--tasks", "2", "-d"];
    let mut a = vec!["-C"];
    a.extend(flags);
    a.push(s(&d));
    assert_code(&md(&a), 0);
    let f = d.join("ioscale-meta.d/thr.001/f1.0");
    std::fs::remove_file(&f).unwrap();
    std::fs::create_dir(&f).unwrap();
    for (stride, want) in [("1", 0), ("0", 1)] {
        let mut a = vec!["-E", "-N", stride];
        a.extend(flags);
        a.push(s(&d));
        let out = md(&a);
        assert_code(&out, 1);
        let err = stderr(&out);
        assert!(
            err.contains(&format!("worker {want}: read {}", s(&f)))
                && err.contains("Is a directory"),
            "-N {stride}: {err}"
        );
    }
    // Back to a file, so the removal finds what it made.
    std::fs::remove_dir(&f).unwrap();
    std::fs::write(&f, vec![0u8; 512]).unwrap();
    let mut a = vec!["-r", "-N", "1"];
    a.extend(flags);
    a.push(s(&d));
    assert_code(&md(&a), 0);
    assert_empty(&d);
    // A stride over one task wraps to itself, with a note.
    let out = md(&["-n", "2", "-N", "3", "-d", s(&d), "--print-spec"]);
    assert_code(&out, 0);
}

/// Walks `dir` and returns (directories, files) as relative paths.
fn walk(dir: &Path) -> (Vec<String>, Vec<String>) {
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    for (k, v) in snapshot(dir) {
        if k.ends_with(".ioscale-meta-marker") {
            continue;
        }
        if v.is_none() {
            dirs.push(k);
        } else {
            files.push(k);
        }
    }
    (dirs, files)
}

#[test]
fn leaf_only_puts_items_in_the_leaves() {
    let t = scratch();
    let d = t.path().join("md");
    // -z 2 -b 2: 7 directories, 4 of them leaves; -I 3: 3 items per leaf.
    let out = md(&[
        "-I",
        "3",
        "-z",
        "2",
        "-b",
        "2",
        "-L",
        "-F",
        "-C",
        "--tasks",
        "2",
        "-u",
        "-d",
        s(&d),
    ]);
    assert_code(&out, 0);
    let root = d.join("ioscale-meta.d");
    let (dirs, files) = walk(&root);
    assert_eq!(files.len(), 2 * 4 * 3, "{files:?}");
    for f in &files {
        // thr.N/hA/hB/name: exactly two levels below the task's directory.
        let parts: Vec<&str> = f.split('/').collect();
        assert_eq!(parts.len(), 4, "{f} is not in a leaf");
        assert!(
            parts[1].starts_with('h') && parts[2].starts_with('h'),
            "{f}"
        );
    }
    // Every leaf holds 3 items, the inner directories none.
    for dir in &dirs {
        let n = files
            .iter()
            .filter(|f| Path::new(f).parent() == Some(Path::new(dir)))
            .count();
        let depth = dir.split('/').count() - 1;
        assert_eq!(n, if depth == 2 { 3 } else { 0 }, "{dir}");
    }
    assert_eq!(dirs.len(), 2 * 7, "{dirs:?}");
    // Directories (-D) go to the leaves too; then remove all.
    let out = md(&[
        "-I",
        "3",
        "-z",
        "2",
        "-b",
        "2",
        "-L",
        "-F",
        "-T",
        "-E",
        "-r",
        "--tasks",
        "2",
        "-u",
        "-d",
        s(&d),
    ]);
    assert_code(&out, 0);
    assert!(!root.exists());
    let out = md(&[
        "-I",
        "2",
        "-z",
        "2",
        "-b",
        "2",
        "-L",
        "-D",
        "-C",
        "-d",
        s(&d),
    ]);
    assert_code(&out, 0);
    let (dirs, files) = walk(&root);
    assert!(files.is_empty());
    let items: Vec<&String> = dirs
        .iter()
        .filter(|p| p.rsplit('/').next().unwrap().starts_with('d'))
        .collect();
    assert_eq!(items.len(), 8, "{dirs:?}");
    assert!(items.iter().all(|p| p.split('/').count() == 3), "{items:?}");
    let out = md(&[
        "-I",
        "2",
        "-z",
        "2",
        "-b",
        "2",
        "-L",
        "-D",
        "-r",
        "-d",
        s(&d),
    ]);
    assert_code(&out, 0);
    assert_empty(&d);
}

/// An error in the second of three iterations (FUSE EIO after 30 data
/// requests: the first iteration's 4 creates, stats, reads and deletes
/// pass, the second stops in its read): the SUMMARY covers the iterations
/// that ran. Before, the iterations that never ran counted as rates of 0
/// (`File creation 4509 0.000 2880 …`: Min 0, Mean over 3).
#[test]
fn an_error_in_a_later_iteration_does_not_count_the_missing_ones_as_zero() {
    let Some(fs) = common::fuse::TestFs::mount(&["--eio-after-ops", "30"]) else {
        return;
    };
    let d = fs.path().join("md");
    let out = md(&["-F", "-n", "4", "-i", "3", "-w", "4096", "-d", s(&d)]);
    assert_code(&out, 1);
    let text = stdout(&out);
    let head = text
        .lines()
        .find(|l| l.starts_with("SUMMARY rate"))
        .unwrap_or_else(|| panic!("no summary:\n{text}"));
    assert!(!head.contains("of 3 iterations"), "{head}\n{text}");
    let mut rows = 0;
    for l in text.lines().filter(|l| l.trim_start().starts_with("File ")) {
        let nums: Vec<f64> = l
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        if nums.len() == 4 {
            let (max, min, mean) = (nums[0], nums[1], nums[2]);
            assert!(min > 0.0 && min <= mean && mean <= max, "{l}\n{text}");
            rows += 1;
        }
    }
    assert!(rows >= 2, "the iterations that ran are shown:\n{text}");
    assert_eq!(names(fs.source()), Vec::<String>::new(), "{}", stderr(&out));
}

/// `meta --leaf-depth 40 --dirs-per-dir 2 --files-per-dir 1` (accepted:
/// the tree's node numbers fit in 64 bits) makes 4 leaves 40 levels down.
/// Before, the teardown tried `rmdir` on every node number below the last
/// leaf, 2^40 of them, and the run never ended (nor did `clean`). It now
/// removes the leaves and then their ancestors, and the run ends with
/// nothing left. Bounded by a 60 s wait, so a hang fails the test.
#[test]
fn a_deep_leaf_tree_is_removed_without_walking_every_node_number() {
    let t = scratch();
    let d = t.path();
    let mut child = std::process::Command::new(ioscale_path())
        .args([
            "meta",
            "-q",
            "--files",
            "4",
            "--leaf-depth",
            "40",
            "--files-per-dir",
            "1",
            "--dirs-per-dir",
            "2",
            "--ops",
            "create,stat,delete",
            s(d),
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the run did not end in 60 s (it walks every node number)");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    assert_eq!(names(d), Vec::<String>::new());
}

/// mdtest's `-d` is opened or made by the executor without following a
/// link: a symbolic link (to a directory, or dangling), a FIFO or a
/// device planted there is refused with exit 2 before anything is made,
/// and whatever the link points at is left as it was.
#[test]
fn a_planted_link_fifo_or_device_at_the_test_directory_is_refused() {
    let t = scratch();
    let real = t.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::write(real.join("theirs"), b"foreign").unwrap();
    let link = t.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let dangling = t.path().join("dangling");
    let nowhere = t.path().join("nowhere");
    std::os::unix::fs::symlink(&nowhere, &dangling).unwrap();
    let fifo = t.path().join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let dev = t.path().join("null");
    assert!(std::process::Command::new("mknod")
        .args([s(&dev), "c", "1", "3"])
        .status()
        .unwrap()
        .success());
    // (A snapshot of the scratch directory would read the FIFO.)
    let before = (names_of(t.path()), snapshot(&real));
    for (d, kind) in [
        (&link, "symbolic link"),
        (&dangling, "symbolic link"),
        (&fifo, "FIFO"),
        (&dev, "character device"),
    ] {
        let out = md(&["-n", "4", "-d", s(d)]);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(err.contains(kind), "{}: {err}", d.display());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    }
    assert_eq!((names_of(t.path()), snapshot(&real)), before);
    assert!(std::fs::symlink_metadata(&nowhere).is_err());
}

/// A test directory that existed before the run stays after it; one the
/// run made goes, unless a kept tree (-C) is in it.
#[test]
fn only_a_test_directory_the_run_made_is_removed() {
    let t = scratch();
    let pre = t.path().join("pre");
    std::fs::create_dir(&pre).unwrap();
    assert_code(&md(&["-n", "4", "-d", s(&pre)]), 0);
    assert_empty(&pre);
    let made = t.path().join("made");
    let out = md(&["-n", "4", "-d", s(&made)]);
    assert_code(&out, 0);
    // The file system's line is there though the directory is gone.
    assert!(stdout(&out).contains("Used FS:"), "{}", stdout(&out));
    assert!(!made.exists(), "{:?}", names(t.path()));
    // -C keeps the tree, so the directory holding it stays; -r removes
    // the tree, and the directory (made by the -C run, not this one) stays.
    let kept = t.path().join("kept");
    assert_code(&md(&["-n", "4", "-F", "-C", "-d", s(&kept)]), 0);
    assert!(!names(&kept).is_empty());
    assert_code(&md(&["-n", "4", "-F", "-r", "-d", s(&kept)]), 0);
    assert_empty(&kept);
}

/// The names in `dir` (one level), sorted, without opening any.
fn names_of(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
