//! Issue 27: a set kept with `run --keep` or `meta --keep` sits in the
//! user's file system for as long as they like; a file they put under one
//! of its names (or a hard link to one of theirs) is theirs, and `ioscale
//! clean` — or a cleanup by a later run — leaves it and says so. A data set
//! records its files' (device, inode, ctime) when kept, as the IOR
//! front-end's sets did; a metadata tree, which may hold millions of
//! entries, records the moment it was kept (the file system's clock) and
//! leaves every entry changed after it, looking at entries one by one only
//! in the directories that changed.

mod common;
#[path = "support/hup.rs"]
mod hup;
#[path = "support/rel.rs"]
mod rel;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use common::*;
use rel::*;

/// A user's file outside the target, and its content.
fn users_file(d: &Path) -> std::path::PathBuf {
    let mine = d.join("mine");
    std::fs::write(&mine, b"a user's precious file\n").unwrap();
    mine
}

/// Puts the user's `mine` in place of the kept entry `at`: as a hard link
/// (`link`), or as a copy of its content.
fn plant(at: &Path, mine: &Path, link: bool) {
    std::fs::remove_file(at).unwrap();
    if link {
        std::fs::hard_link(mine, at).unwrap();
    } else {
        std::fs::copy(mine, at).unwrap();
    }
}

fn assert_theirs(p: &Path) {
    assert_eq!(
        std::fs::read(p).unwrap_or_default(),
        b"a user's precious file\n",
        "{} was removed or changed",
        p.display()
    );
}

#[test]
fn clean_leaves_a_users_file_or_link_put_in_a_kept_data_set() {
    // Before: `clean` removed both (a hard link's other name survived, the
    // copy was gone).
    for layout in ["per-thread", "per-thread-dir"] {
        let t = scratch();
        let tp = t.path();
        let u = scratch();
        let mine = users_file(u.path());
        let out = run(&[
            "run",
            "--op",
            "write",
            "--threads",
            "3",
            "--size",
            "64k",
            "--xfer",
            "4k",
            "--layout",
            layout,
            "--keep",
            "-q",
            s(tp),
        ]);
        assert_code(&out, 0);
        let root = tp.join("ioscale.d");
        let file = |i: u32| {
            let name = format!("file.{i:08}");
            if layout == "per-thread" {
                root.join(name)
            } else {
                root.join(format!("dir.{i:08}")).join(name)
            }
        };
        plant(&file(0), &mine, true);
        plant(&file(1), &mine, false);
        let out = run(&["clean", s(tp)]);
        assert_code(&out, 1);
        let err = stderr(&out);
        assert!(err.contains("not the file ioscale left there"), "{err}");
        assert_theirs(&file(0));
        assert_theirs(&file(1));
        assert_eq!(std::fs::metadata(&mine).unwrap().nlink(), 2, "{layout}");
        assert!(!file(2).exists(), "{layout}: ioscale's own file stays");
        // Once the user took theirs away, `clean` finishes the set.
        std::fs::remove_file(file(0)).unwrap();
        std::fs::remove_file(file(1)).unwrap();
        assert_code(&run(&["clean", s(tp)]), 0);
        assert_empty(tp);
    }
}

#[test]
fn a_kept_set_a_later_run_only_read_keeps_its_stamps() {
    // A read of the kept set changes nothing `clean` compares; a file put
    // there before that read is still the user's afterwards.
    let t = scratch();
    let tp = t.path();
    let u = scratch();
    let mine = users_file(u.path());
    let w = ["--threads", "2", "--size", "64k", "--xfer", "4k"];
    let out = run(&[&["run", "--op", "write", "--keep", "-q"], &w[..], &[s(tp)]].concat());
    assert_code(&out, 0);
    let f1 = tp.join("ioscale.d/file.00000001");
    let out = run(&[&["run", "--op", "read", "-q"], &w[..], &[s(tp)]].concat());
    assert_code(&out, 0);
    plant(&f1, &mine, false);
    let out = run(&["clean", s(tp)]);
    assert_code(&out, 1);
    assert_theirs(&f1);
    assert!(!tp.join("ioscale.d/file.00000000").exists());
}

#[test]
fn a_file_put_where_a_kept_run_had_made_none_is_left_alone() {
    // The run is stopped before its first write (at its `signals` hook)
    // and keeps the set it made: no data file exists, and the marker says
    // so. A file put under such a name later is not ioscale's.
    let t = scratch();
    let tp = t.path();
    let u = scratch();
    let mine = users_file(u.path());
    let mut child = spawn_env(
        &[
            "run",
            "--op",
            "write",
            "--threads",
            "2",
            "--size",
            "64k",
            "--xfer",
            "4k",
            "--keep",
            "-q",
            s(tp),
        ],
        &[("IOSCALE_TEST_FREEZE", "0:signals")],
    );
    hup::wait_stopped(&mut child, "run --keep");
    signal(&child, libc::SIGINT);
    hup::resume(&child);
    let out = finish(child, Duration::from_secs(60));
    assert_code(&out, 130);
    let f0 = tp.join("ioscale.d/file.00000000");
    assert!(!f0.exists());
    std::fs::copy(&mine, &f0).unwrap();
    let out = run(&["clean", s(tp)]);
    assert_code(&out, 1);
    assert!(
        stderr(&out).contains("put there after the set was kept"),
        "{}",
        stderr(&out)
    );
    assert_theirs(&f0);
}

/// `meta --keep` of 2 threads × `files` empty files in `t`.
fn kept_tree(t: &Path, files: &str) {
    let out = run(&[
        "meta",
        "--ops",
        "create",
        "--threads",
        "2",
        "--files",
        files,
        "--file-size",
        "0",
        "--keep",
        "-q",
        s(t),
    ]);
    assert_code(&out, 0);
}

#[test]
fn clean_and_cleanup_leave_a_users_file_or_link_put_in_a_kept_tree() {
    for how in ["clean", "cleanup", "clean-existing"] {
        let t = scratch();
        let tp = t.path();
        let u = scratch();
        let mine = users_file(u.path());
        kept_tree(tp, "20");
        let d = tp.join("ioscale-meta.d");
        let linked = d.join("thr.000/f0.3");
        let copied = d.join("thr.001/f1.7");
        plant(&linked, &mine, true);
        plant(&copied, &mine, false);
        let out = match how {
            "clean" => run(&["clean", s(tp)]),
            "cleanup" => run(&[
                "meta",
                "--ops",
                "cleanup",
                "--threads",
                "2",
                "--files",
                "20",
                "-q",
                s(tp),
            ]),
            _ => run(&[
                "meta",
                "--ops",
                "create",
                "--threads",
                "2",
                "--files",
                "20",
                "--clean-existing",
                "-q",
                s(tp),
            ]),
        };
        // `clean` says it removed part of the tree (1); a cleanup phase
        // notes what it left (0), as for a directory holding foreign
        // files; --clean-existing refuses to start on it (2).
        let want = match how {
            "clean" => 1,
            "cleanup" => 0,
            _ => 2,
        };
        assert_code(&out, want);
        assert!(
            stderr(&out).contains("after the tree was kept"),
            "{how}: {}",
            stderr(&out)
        );
        assert_theirs(&linked);
        assert_theirs(&copied);
        assert_eq!(std::fs::metadata(&mine).unwrap().nlink(), 2, "{how}");
        // ioscale's own entries went.
        assert!(!d.join("thr.000/f0.2").exists(), "{how}");
        assert!(!d.join("thr.001/f1.6").exists(), "{how}");
    }
}

#[test]
fn a_kept_tree_costs_a_stat_per_changed_directory_not_per_file() {
    // The seal is one time in the marker, not a list of every entry: a
    // tree of millions of files keeps a marker of a few hundred bytes,
    // and `clean` stats a directory once, and its entries only when the
    // directory changed after the tree was kept.
    if !have("strace") {
        eprintln!("skipping: no strace");
        return;
    }
    let t = scratch();
    let tp = t.path();
    kept_tree(tp, "2000");
    let marker = tp.join("ioscale-meta.d/.ioscale-meta-marker");
    assert!(std::fs::metadata(&marker).unwrap().len() < 1024);
    // One directory changed: a user's file beside ioscale's in thr.001.
    std::fs::write(tp.join("ioscale-meta.d/thr.001/notes"), b"mine").unwrap();
    let log = t.path().join("strace.log");
    let st = std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=newfstatat,statx,fstat", "-o"])
        .arg(&log)
        .arg(ioscale_path())
        .args(["clean", s(tp)])
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let stats_of = |stem: &str| text.lines().filter(|l| l.contains(stem)).count();
    // thr.001's 2000 entries are looked at, thr.000's are not.
    assert_eq!(stats_of("\"f0."), 0, "thr.000 did not change");
    assert!(stats_of("\"f1.") >= 2000, "{} stats", stats_of("\"f1."));
    assert_eq!(
        st.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert_eq!(
        std::fs::read(tp.join("ioscale-meta.d/thr.001/notes")).unwrap(),
        b"mine"
    );
}

#[test]
fn the_check_holds_through_another_view_of_the_same_files() {
    // A set kept through one view and cleaned through another (NFS gives
    // each client its own device number, a FUSE file system its own inode
    // numbers): ioscale's own files are still recognised and removed, a
    // file put there is still left. Here: kept through the test FUSE file
    // system, a user's file put in its source directory, `clean` through
    // the mount, then the other way round (on a mount of its own: the
    // kernel keeps what a FUSE file system said about a name for a while,
    // as an NFS client does, and a view that has not seen the change yet
    // is refused — the safe side).
    let u = scratch();
    let mine = users_file(u.path());
    for through_fuse in [true, false] {
        let Some(fs) = common::fuse::TestFs::mount(&[]) else {
            return;
        };
        let (keep_via, clean_via) = if through_fuse {
            (fs.path(), fs.source())
        } else {
            (fs.source(), fs.path())
        };
        let out = run(&[
            "run",
            "--op",
            "write",
            "--threads",
            "2",
            "--size",
            "64k",
            "--xfer",
            "4k",
            "--keep",
            "-q",
            s(keep_via),
        ]);
        assert_code(&out, 0);
        plant(&fs.source().join("ioscale.d/file.00000001"), &mine, false);
        let out = run(&["clean", s(clean_via)]);
        assert_code(&out, 1);
        assert_theirs(&fs.source().join("ioscale.d/file.00000001"));
        assert!(!fs.source().join("ioscale.d/file.00000000").exists());
        std::fs::remove_file(clean_via.join("ioscale.d/file.00000001")).unwrap();
        assert_code(&run(&["clean", s(clean_via)]), 0);
        assert_empty(fs.source());
    }
}
