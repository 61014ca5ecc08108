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
    let ph = phases(&v);
    assert!(!ph.is_empty(), "the partial phase is kept: {v}");
    if want.offset.is_some() {
        // A failed transfer is counted in its phase. (A failed fsync is
        // recorded in errors[] only; the phase's count is of transfers.)
        assert!(
            ph.last().unwrap()["errors"].as_u64().unwrap() >= 1,
            "{}",
            ph.last().unwrap()
        );
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
    let ph = phases(&v);
    assert_eq!(ph.len(), 1, "no read after a failed write");
    assert_eq!(ph[0]["op"], "write");
    assert_eq!(ph[0]["bytes"].as_u64(), Some(M), "{}", ph[0]);
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
    let ph = phases(&v);
    assert_eq!(ph.len(), 1);
    assert_eq!(ph[0]["bytes"].as_u64(), Some(2 * M), "{}", ph[0]);
    assert_clean(fs.source());
}

#[test]
fn fsync_fails() {
    let Some(fs) = TestFs::mount(&["--fsync-fail"]) else {
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
    // Every transfer was written; only the final fsync failed.
    assert_eq!(phases(&v)[0]["bytes"].as_u64(), Some(M));
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
    let ph = phases(&v);
    assert_eq!(ph.len(), 1);
    assert_eq!(ph[0]["op"], "read");
    assert_eq!(ph[0]["bytes"].as_u64(), Some(4 * 64 * K), "{}", ph[0]);
    // The kept files are the earlier run's: removed by `ioscale clean`.
    let out = run(&["clean", s(fs.path())]);
    assert_code(&out, 0);
    assert_clean(fs.source());
}
