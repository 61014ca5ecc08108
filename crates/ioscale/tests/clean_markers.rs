//! `ioscale clean` trusts nothing in a marker it did not check (the fourth
//! adversarial pass): a marker is a file in a directory others may write
//! to, so a forged or damaged one must never make `clean` reach outside
//! the set, allocate without bound, or remove a file ioscale did not make.
//! Each test failed on the code before its fix.

mod common;

use std::path::Path;

use common::*;

/// Writes `text` to `name` in `dir` and returns its content for a later check.
fn plant(dir: &Path, name: &str, text: &str) -> (std::path::PathBuf, Vec<u8>) {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    (p, text.as_bytes().to_vec())
}

fn assert_intact(planted: &[(std::path::PathBuf, Vec<u8>)]) {
    for (p, want) in planted {
        let got = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(&got, want, "{} was changed", p.display());
    }
}

/// Replaces `from` by `to` in the marker file at `m` (the test's forgery).
fn forge(m: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(m).unwrap();
    assert!(
        text.contains(from),
        "{} has no {from}:\n{text}",
        m.display()
    );
    std::fs::write(m, text.replace(from, to)).unwrap();
}

/// A metadata tree's marker whose prefix climbs out of the tree
/// (`../../v/`): before, `clean` deleted `T/v/f0.0` … `f1.2`, six files
/// outside `ioscale-meta.d` that ioscale never made (the kernel's
/// `openat2(RESOLVE_NO_SYMLINKS)` allows `..`). Now the marker is refused
/// and nothing outside the tree is touched.
#[test]
fn a_meta_marker_whose_prefix_leaves_the_tree_is_refused() {
    let t = scratch();
    let d = t.path();
    let out = run(&[
        "meta",
        "-q",
        "--files",
        "3",
        "--threads",
        "2",
        "--ops",
        "create",
        "--keep",
        s(d),
    ]);
    assert_code(&out, 0);
    let v = d.join("v");
    std::fs::create_dir(&v).unwrap();
    let mut planted = Vec::new();
    for i in 0..3 {
        planted.push(plant(&v, &format!("f0.{i}"), "victim 0"));
        planted.push(plant(&v, &format!("f1.{i}"), "victim 1"));
    }
    let m = d.join("ioscale-meta.d/.ioscale-meta-marker");
    forge(&m, "\"prefix\": \"\"", "\"prefix\": \"../../v/\"");
    for args in [
        vec!["clean", s(d)],
        vec!["meta", "-q", "--ops", "cleanup", s(d)],
        vec!["meta", "-q", "--files", "3", "--threads", "2", s(d)],
    ] {
        let out = run(&args);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(err.contains(".ioscale-meta-marker"), "{args:?}: {err}");
        assert!(err.contains("prefix"), "{args:?}: {err}");
        assert_intact(&planted);
    }
    // The tree itself is still there: nothing was removed by that marker.
    assert!(d.join("ioscale-meta.d/thr.000/f0.0").exists());
}

/// s() for paths.
fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Markers claiming 2^32−1 workers: before, `clean` tried to allocate
/// 96 GiB for the names and aborted (exit 134, a lock file left behind).
/// Now each marker is refused, exit 2 naming it, and the files stay.
#[test]
fn a_marker_with_an_absurd_worker_count_is_refused_not_an_abort() {
    let t = scratch();
    let d = t.path();
    let o = d.join("x.bin");
    let out = run(&[
        "ior",
        "-w",
        "-k",
        "-F",
        "-N",
        "2",
        "-b",
        "16k",
        "-t",
        "16k",
        "-o",
        s(&o),
    ]);
    assert_code(&out, 0);
    let out = run(&[
        "run",
        "-q",
        "--op",
        "write",
        "--size",
        "16k",
        "--xfer",
        "16k",
        "--threads",
        "2",
        "--keep",
        s(d),
    ]);
    assert_code(&out, 0);
    let huge = "\"threads\": 4294967295";
    forge(&d.join(".x.bin.ioscale-marker"), "\"threads\": 2", huge);
    forge(&d.join("ioscale.d/.ioscale-marker"), "\"threads\": 2", huge);
    let before = names(d);
    let out = run(&["clean", s(&o)]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains(".x.bin.ioscale-marker"),
        "{}",
        stderr(&out)
    );
    let out = run(&["clean", s(d)]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("ioscale.d"), "{}", stderr(&out));
    assert_eq!(names(d), before, "{}", stderr(&out));
    assert!(d.join("x.bin.00000001").exists());
    assert!(d.join("ioscale.d/file.00000001").exists());
    assert!(!d.join(".x.bin.ioscale-marker.lock").exists());
    assert!(!d.join("ioscale.d/.ioscale-marker.lock").exists());
}

/// An IOR set kept with `-k`; the user then removed one of its files by
/// hand (the hidden marker stays) and later made a file of their own under
/// that name. Before, `clean DIR` deleted the user's file: the marker
/// named the files but not which files. Now it records each file's
/// identity and `clean` removes only those, leaving the newcomer and
/// naming it.
#[test]
fn clean_never_removes_a_file_that_took_the_name_of_a_kept_ior_file() {
    let t = scratch();
    let d = t.path();
    for extra in [&["-F"][..], &["-F", "-u"][..], &[][..]] {
        let o = d.join("x.bin");
        let mut a = vec!["ior", "-w", "-k", "-N", "2", "-b", "16k", "-t", "16k"];
        a.extend_from_slice(extra);
        a.extend_from_slice(&["-o", s(&o)]);
        assert_code(&run(&a), 0);
        let name = match extra.len() {
            0 => "x.bin",
            1 => "x.bin.00000001",
            _ => "1/x.bin.00000001",
        };
        let p = d.join(name);
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, "the user's own data").unwrap();
        let out = run(&["clean", s(d)]);
        assert_code(&out, 1);
        assert_eq!(
            std::fs::read(&p).unwrap(),
            b"the user's own data",
            "{extra:?}: {}",
            stderr(&out)
        );
        assert!(stderr(&out).contains(name), "{extra:?}: {}", stderr(&out));
        // The marker stays until the name is free; then `clean` finishes.
        assert!(d.join(".x.bin.ioscale-marker").exists());
        std::fs::remove_file(&p).unwrap();
        let out = run(&["clean", s(d)]);
        assert_code(&out, 0);
        assert_eq!(
            names(d),
            Vec::<String>::new(),
            "{extra:?}: {}",
            stderr(&out)
        );
    }
}

/// A metadata tree's marker with shape values no run can have: before,
/// `leaf_depth` 2^32−1 made `clean` panic (exit 101, "attempt to add with
/// overflow" in the engine's tree arithmetic). Each is refused (exit 2,
/// naming the marker) or, where the shape is still one the engine can
/// walk, cleaned; never a panic, and the tree is not left half-removed.
#[test]
fn a_meta_marker_with_an_impossible_shape_is_refused_not_a_panic() {
    for (key, value) in [
        ("leaf_depth", "4294967295"),
        ("leaf_depth", "65"),
        ("files_per_dir", "0"),
        ("threads", "0"),
        ("files", "1099511627777"),
    ] {
        let t = scratch();
        let d = t.path();
        let out = run(&[
            "meta",
            "-q",
            "--files",
            "3",
            "--threads",
            "2",
            "--ops",
            "create",
            "--keep",
            s(d),
        ]);
        assert_code(&out, 0);
        let m = d.join("ioscale-meta.d/.ioscale-meta-marker");
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&m).unwrap()).unwrap();
        v[key] = serde_json::from_str(value).unwrap();
        std::fs::write(&m, v.to_string()).unwrap();
        let out = run(&["clean", s(d)]);
        assert_code(&out, 2);
        assert!(
            stderr(&out).contains(".ioscale-meta-marker"),
            "{key}={value}: {}",
            stderr(&out)
        );
        assert!(
            d.join("ioscale-meta.d/thr.000/f0.0").exists(),
            "{key}={value}"
        );
    }
}

/// A kept tree whose marker cannot be rewritten because the file system
/// is full: the note said "(no write permission)", sending the user after
/// the wrong cause. It now names the error the write got.
#[test]
fn a_marker_that_cannot_be_saved_names_the_real_error() {
    let Some(m) = tmpfs("size=2m") else {
        return;
    };
    let d = m.path();
    let out = run(&[
        "smallfile",
        "--top",
        s(d),
        "--operation",
        "create",
        "--threads",
        "1",
        "--files",
        "4",
        "--file-size",
        "1024",
    ]);
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(!err.contains("no write permission"), "{err}");
    let note = err
        .lines()
        .find(|l| l.contains("could not update the marker"))
        .unwrap_or_else(|| panic!("no note on the marker: {err}"));
    assert!(note.contains("No space left on device"), "{err}");
    // The tree is still ioscale's: clean removes it.
    let out = run(&["clean", s(d)]);
    assert_code(&out, 0);
    assert_eq!(names(d), Vec::<String>::new(), "{}", stderr(&out));
}

/// `clean T/ioscale-meta.d` (the set itself rather than the directory
/// that holds it) said only "nothing to clean"; it now names the command
/// that removes it, and still removes nothing.
#[test]
fn clean_of_the_set_directory_itself_names_its_parent() {
    let t = scratch();
    let d = t.path();
    let out = run(&[
        "meta",
        "-q",
        "--files",
        "2",
        "--ops",
        "create",
        "--keep",
        s(d),
    ]);
    assert_code(&out, 0);
    let out = run(&["clean", s(&d.join("ioscale-meta.d"))]);
    assert_code(&out, 2);
    let want = format!("`ioscale clean {}`", d.display());
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    assert!(d.join("ioscale-meta.d/thr.000/f0.0").exists());
}
