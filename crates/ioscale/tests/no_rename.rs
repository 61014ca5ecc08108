//! A target that cannot rename (ioscale-testfs --no-rename: every rename
//! fails with ENOSYS, as on some FUSE and object-store gateways): ioscale
//! writes its markers in place there, keeps and cleans its sets as
//! anywhere else, and leaves no temporary file behind.

mod common;

use std::path::Path;

use common::fuse::TestFs;
use common::*;

/// The names under `dir`, recursively, relative to it.
fn all_names(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

fn no_temp_left(src: &Path) {
    let names = all_names(src);
    assert!(
        !names
            .iter()
            .any(|n| n.contains("ioscale-tmp") || n.ends_with(".tmp")),
        "a temporary file was left: {names:?}"
    );
}

/// A marker is a JSON object written by ioscale.
fn marker_at(p: &Path) -> serde_json::Value {
    let text = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let v: serde_json::Value =
        serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(
        v["tool"].as_str().is_some_and(|t| t.starts_with("ioscale")),
        "{v}"
    );
    v
}

#[test]
fn the_fs_really_refuses_rename() {
    let Some(fs) = TestFs::mount(&["--no-rename"]) else {
        return;
    };
    let a = fs.path().join("a");
    std::fs::write(&a, b"x").unwrap();
    let e = std::fs::rename(&a, fs.path().join("b")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSYS), "{e}");
    std::fs::remove_file(&a).unwrap();
}

#[test]
fn run_keep_then_clean_without_rename() {
    let Some(fs) = TestFs::mount(&["--no-rename"]) else {
        return;
    };
    let out = run(&[
        "run",
        "--op",
        "write,read",
        "--threads",
        "2",
        "--size",
        "256k",
        "--xfer",
        "64k",
        "--reps",
        "1",
        "--keep",
        s(fs.path()),
    ]);
    assert_code(&out, 0);
    let m = marker_at(&fs.source().join("ioscale.d/.ioscale-marker"));
    assert_eq!(m["threads"], 2, "{m}");
    no_temp_left(fs.source());
    // A second run reuses the kept set: it rewrites the marker in place.
    let out = run(&[
        "run",
        "--op",
        "read",
        "--threads",
        "2",
        "--size",
        "256k",
        "--xfer",
        "64k",
        "--reps",
        "1",
        "--keep",
        s(fs.path()),
    ]);
    assert_code(&out, 0);
    no_temp_left(fs.source());
    let out = run(&["clean", s(fs.path())]);
    assert_code(&out, 0);
    assert_empty(fs.source());
}

#[test]
fn meta_keep_without_rename() {
    let Some(fs) = TestFs::mount(&["--no-rename"]) else {
        return;
    };
    let out = run(&[
        "meta",
        "--ops",
        "create,stat",
        "--threads",
        "2",
        "--files",
        "20",
        "--reps",
        "1",
        "--keep",
        s(fs.path()),
    ]);
    assert_code(&out, 0);
    let m = marker_at(&fs.source().join("ioscale-meta.d/.ioscale-meta-marker"));
    assert_eq!(m["tool"], "ioscale-meta", "{m}");
    no_temp_left(fs.source());
    // A second run stats the kept tree (the marker rewritten in place),
    // then its cleanup phase removes the tree, marker included.
    let out = run(&[
        "meta",
        "--ops",
        "stat,cleanup",
        "--threads",
        "2",
        "--files",
        "20",
        "--reps",
        "1",
        s(fs.path()),
    ]);
    assert_code(&out, 0);
    assert_empty(fs.source());
}

#[test]
fn ior_keep_without_rename() {
    let Some(fs) = TestFs::mount(&["--no-rename"]) else {
        return;
    };
    let f = fs.path().join("ior.bin");
    let out = run(&[
        "ior",
        "-w",
        "-r",
        "-k",
        "-t",
        "64k",
        "-b",
        "256k",
        "-o",
        s(&f),
    ]);
    assert_code(&out, 0);
    marker_at(&fs.source().join(".ior.bin.ioscale-marker"));
    assert!(fs.source().join("ior.bin").is_file());
    no_temp_left(fs.source());
    // The output files inside the target are written in place too.
    let j = fs.path().join("r.json");
    let out = run(&[
        "run",
        "--op",
        "write",
        "--threads",
        "1",
        "--size",
        "64k",
        "--xfer",
        "64k",
        "--reps",
        "1",
        "--json",
        s(&j),
        s(fs.path()),
    ]);
    assert_code(&out, 0);
    assert!(json(&j)["results"].is_array() || json(&j).is_object());
    no_temp_left(fs.source());
}

/// A sweep's journal, rewritten after every point, lives on the target
/// here: each rewrite is in place, the last one whole.
#[test]
fn sweep_journal_without_rename() {
    let Some(fs) = TestFs::mount(&["--no-rename"]) else {
        return;
    };
    let j = fs.path().join("s.json");
    let html = fs.path().join("s.html");
    let out = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--reps",
        "1",
        "--json",
        s(&j),
        "--html",
        s(&html),
        "-q",
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "64k",
        "--xfer",
        "64k",
        s(fs.path()),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    assert_eq!(v["points"].as_array().map(Vec::len), Some(2), "{v}");
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .ends_with("</html>\n"));
    no_temp_left(fs.source());
    std::fs::remove_file(&j).unwrap();
    std::fs::remove_file(&html).unwrap();
    assert_empty(fs.source());
}
