//! Faults injected by the test FUSE file system (crates/testfs), run
//! through ioscale: each must end with exit code 1, one error line naming
//! the operation, the file and (for transfers) the offset, the partial
//! results and the errno in the JSON record, and SOURCE left as it was.

mod common;

use std::path::Path;

use common::fuse::TestFs;
use common::*;
use serde_json::Value;

/// What a failed run must show.
struct Expect<'a> {
    op: &'a str,
    errno: i64,
    message: &'a str,
    offset: Option<u64>,
}

/// Runs ioscale with `args` (TARGET last) and checks the failure it reports.
fn failing_run(fs: &TestFs, args: &[&str], want: Expect) -> Value {
    let o = scratch();
    let j = o.path().join("r.json");
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--json", s(&j), s(fs.path())]);
    let out = run(&all);
    assert_code(&out, 1);
    let err = stderr(&out);
    let file = fs.path().join("ioscale.d/file.00000000");
    let line = err
        .lines()
        .find(|l| l.contains(want.message))
        .unwrap_or_else(|| panic!("no '{}' line in:\n{err}", want.message));
    assert!(line.contains(want.op), "{line}");
    assert!(line.contains(s(&file)), "{line}");

    let v = json(&j);
    let errs = v["errors"].as_array().expect("errors[]");
    assert_eq!(errs.len(), 1, "{errs:?}");
    let e = &errs[0];
    assert_eq!(e["errno"].as_i64(), Some(want.errno), "{e}");
    assert_eq!(e["op"], want.op, "{e}");
    assert_eq!(e["file"], s(&file), "{e}");
    if let Some(off) = want.offset {
        assert_eq!(e["offset"].as_u64(), Some(off), "{e}");
        assert!(line.contains(&format!("offset {off}")), "{line}");
    }
    // The failed phase is no result: it is kept apart, its counts under
    // partial_* names.
    let failed = v["failed_phases"].as_array().expect("failed_phases[]");
    assert_eq!(failed.len(), 1, "the partial phase is kept apart: {v}");
    let f = &failed[0];
    assert!(
        f.get("bytes").is_none() && f.get("bw_mib_s").is_none(),
        "{f}"
    );
    assert!(phases(&v)
        .iter()
        .all(|p| p["op"] != f["op"] || p["rep"] != f["rep"]));
    if want.offset.is_some() {
        // A failed transfer is counted in its phase. (A failed fsync is
        // recorded in errors[] only; the phase's count is of transfers.)
        assert!(f["errors"].as_u64().unwrap() >= 1, "{f}");
    }
    v
}

fn assert_clean(src: &Path) {
    assert_empty(src);
}

#[test]
fn eio_after_bytes_on_write() {
    let Some(fs) = TestFs::mount(&["--eio-after-bytes", "1m"]) else {
        return;
    };
    let v = failing_run(
        &fs,
        &["run", "--op", "write,read", "--size", "4m", "--xfer", "64k"],
        Expect {
            op: "write",
            errno: 5,
            message: "Input/output error",
            offset: Some(M),
        },
    );
    assert_eq!(phases(&v).len(), 0, "no read after a failed write");
    let f = &v["failed_phases"][0];
    assert_eq!(f["op"], "write");
    assert_eq!(f["partial_bytes"].as_u64(), Some(M), "{f}");
    assert_clean(fs.source());
}

#[test]
fn enospc_after_bytes() {
    // Only the data file counts toward the limit (not ioscale's small
    // marker file), so the full "disk" is met exactly at offset 2 MiB
    // rather than inside the last transfer before it.
    let Some(fs) = TestFs::mount(&[
        "--enospc-after-bytes",
        "2m",
        "--faults-path-substr",
        "file.",
    ]) else {
        return;
    };
    let v = failing_run(
        &fs,
        &["run", "--op", "write,read", "--size", "4m", "--xfer", "64k"],
        Expect {
            op: "write",
            errno: 28,
            message: "No space left",
            offset: Some(2 * M),
        },
    );
    assert_eq!(phases(&v).len(), 0);
    let f = &v["failed_phases"][0];
    assert_eq!(f["partial_bytes"].as_u64(), Some(2 * M), "{f}");
    assert_clean(fs.source());
}

#[test]
fn fsync_fails() {
    // The fault hits ioscale's data files; its marker (written and
    // fsynced before the phase) is kept out of it.
    let Some(fs) = TestFs::mount(&["--fsync-fail", "--faults-path-substr", "file."]) else {
        return;
    };
    let v = failing_run(
        &fs,
        &[
            "run", "--op", "write", "--sync", "end", "--size", "1m", "--xfer", "64k",
        ],
        Expect {
            op: "fsync",
            errno: 5,
            message: "Input/output error",
            offset: None,
        },
    );
    // Every transfer was written; only the final fsync failed, so the
    // phase is still no result.
    assert!(phases(&v).is_empty(), "{v}");
    assert_eq!(v["failed_phases"][0]["partial_bytes"].as_u64(), Some(M));
    assert_clean(fs.source());
}

#[test]
fn eio_after_ops_on_read() {
    // Lay the files out directly in SOURCE (no faults), then read them
    // through a mount that fails the 5th data request on ioscale's data
    // files (the filter keeps the marker out of the count).
    let Some(fs) = TestFs::mount(&["--eio-after-ops", "4", "--faults-path-substr", "file."]) else {
        return;
    };
    let out = run(&[
        "run",
        "--op",
        "write",
        "--keep",
        "--size",
        "1m",
        "--xfer",
        "64k",
        "--quiet",
        s(fs.source()),
    ]);
    assert_code(&out, 0);
    let v = failing_run(
        &fs,
        &["run", "--op", "read", "--size", "1m", "--xfer", "64k"],
        Expect {
            op: "read",
            errno: 5,
            message: "Input/output error",
            offset: Some(4 * 64 * K),
        },
    );
    assert_eq!(phases(&v).len(), 0);
    let f = &v["failed_phases"][0];
    assert_eq!(f["op"], "read");
    assert_eq!(f["partial_bytes"].as_u64(), Some(4 * 64 * K), "{f}");
    // The kept files are the earlier run's: removed by `ioscale clean`.
    let out = run(&["clean", s(fs.path())]);
    assert_code(&out, 0);
    assert_clean(fs.source());
}

#[test]
fn a_failed_phase_prints_no_figures_in_any_format() {
    // IOR prints an ERROR line and no row for a phase that failed; a row
    // built from the bytes moved before the error is not a result.
    let Some(fs) = TestFs::mount(&["--eio-after-bytes", "256k"]) else {
        return;
    };
    let f = fs.path().join("ior.bin");
    let out = run(&["ior", "-w", "-t", "64k", "-b", "1m", "-o", s(&f)]);
    assert_code(&out, 1);
    let text = stdout(&out);
    assert!(
        !text.lines().any(|l| l.starts_with("write ")),
        "a write row for a failed phase:\n{text}"
    );
    assert!(!text.contains("Max Write"), "{text}");
    assert!(
        stderr(&out).contains("Input/output error"),
        "{}",
        stderr(&out)
    );
    assert_clean(fs.source());
    drop(fs);
    // Native: text, CSV and JSON (a fresh mount: the EIO budget is spent).
    let Some(fs) = TestFs::mount(&["--eio-after-bytes", "256k"]) else {
        return;
    };
    let o = scratch();
    let (j, c) = (o.path().join("r.json"), o.path().join("r.csv"));
    let out = run(&[
        "run",
        "--op",
        "write",
        "--size",
        "1m",
        "--xfer",
        "64k",
        "--json",
        s(&j),
        "--csv",
        s(&c),
        s(fs.path()),
    ]);
    assert_code(&out, 1);
    assert!(!stdout(&out).contains("MiB/s"), "{}", stdout(&out));
    let csv = std::fs::read_to_string(&c).unwrap();
    assert_eq!(csv.lines().count(), 1, "only the header: {csv}");
    let v = json(&j);
    assert!(phases(&v).is_empty(), "{v}");
    assert!(v["summary"].as_array().unwrap().is_empty(), "{v}");
    let p = &v["failed_phases"][0];
    assert_eq!(p["op"], "write");
    assert!(p["partial_bytes"].as_u64().unwrap() <= 256 * K, "{p}");
    assert_clean(fs.source());
    drop(fs);
    // mdtest: NA for the failed creation and the phases after it, not 0.
    let Some(fs) = TestFs::mount(&["--eio-after-bytes", "8k"]) else {
        return;
    };
    let d = fs.path().join("md");
    let out = run(&["mdtest", "-F", "-n", "10", "-w", "4096", "-d", s(&d)]);
    assert_code(&out, 1);
    let text = stdout(&out);
    for row in ["File creation", "File stat", "File removal"] {
        let line = text.lines().find(|l| l.contains(row));
        assert!(line.is_none_or(|l| l.contains("NA")), "{row}: {text}");
    }
    assert_clean(fs.source());
}
