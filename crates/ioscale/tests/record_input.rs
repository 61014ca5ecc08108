//! Issue 13, item 8: `report`, `compare` and `sweep --resume` read a record
//! only from a regular file of at most 1 GiB (exit 2 otherwise, before any
//! read: `/dev/zero` and a FIFO are refused at once instead of read
//! forever or waited on), and parse it as a stream, so a large valid
//! record needs memory of the order of the record, not many times it.

mod common;
#[path = "support/rel.rs"]
mod rel;

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use rel::*;

/// Runs `ioscale args` to the end and returns its exit code and peak
/// resident set size in bytes (wait4's rusage of that child alone).
// wait4 below reaps the child (Child::wait would lose its rusage).
#[allow(clippy::zombie_processes)]
fn peak_rss(args: &[&str]) -> (i32, u64) {
    let child = Command::new(ioscale_path())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, which nothing else reaps.
    let rc = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut ru) };
    assert_eq!(rc, child.id() as libc::pid_t, "wait4");
    let st = std::process::ExitStatus::from_raw(status);
    // ru_maxrss is in KiB on Linux.
    (st.code().unwrap_or(-1), ru.ru_maxrss as u64 * 1024)
}

/// A valid run record of about `mib` MiB: a real run's record with its
/// write phase given many workers (as a run of that many workers has).
fn large_record(dir: &Path, mib: usize) -> std::path::PathBuf {
    let j = dir.join("small.json");
    let data = dir.join("data");
    std::fs::create_dir(&data).unwrap();
    let out = run(&[
        "run",
        "--op",
        "write",
        "--xfer",
        "4k",
        "--size",
        "64k",
        "--json",
        s(&j),
        "-q",
        s(&data),
    ]);
    assert_code(&out, 0);
    let mut v = json(&j);
    let w = v["phases"][0]["workers"][0].clone();
    // Written piece by piece: this process stays small, since a child's
    // peak RSS starts from its parent's at the fork.
    v["phases"][0]["workers"] = serde_json::json!(["@workers@"]);
    let text = serde_json::to_string(&v).unwrap();
    let (head, tail) = text.split_once("\"@workers@\"").unwrap();
    let big = dir.join("big.json");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
    f.write_all(head.as_bytes()).unwrap();
    let mut written = 0;
    let mut i = 0u64;
    while written < mib << 20 {
        let mut x = w.clone();
        x["worker"] = serde_json::json!(i);
        let one = serde_json::to_vec(&x).unwrap();
        if i > 0 {
            f.write_all(b",").unwrap();
        }
        f.write_all(&one).unwrap();
        written += one.len() + 1;
        i += 1;
    }
    f.write_all(tail.as_bytes()).unwrap();
    f.flush().unwrap();
    big
}

#[test]
fn a_large_record_is_read_in_memory_of_its_order() {
    let t = scratch();
    let big = large_record(t.path(), 20);
    let size = std::fs::metadata(&big).unwrap().len();
    for args in [
        vec!["report", s(&big)],
        vec!["report", "--format", "csv", s(&big)],
        vec!["compare", s(&big), s(&big)],
    ] {
        let (code, rss) = peak_rss(&args);
        assert_eq!(code, 0, "{args:?}");
        eprintln!("{args:?}: peak RSS {rss} bytes, record {size} bytes");
        // The parsed record plus the program itself: at most three times
        // the record and 40 MiB. Parsing into a tree of JSON values first
        // took seven times the record.
        let bound = 3 * size + (40 << 20);
        assert!(
            rss < bound,
            "{args:?}: peak RSS {rss} bytes for a record of {size} bytes (bound {bound})"
        );
    }
}

/// Runs `args` and requires exit 2 with `want` on stderr; a read that
/// never ends (the old `/dev/zero`, a FIFO without a writer) fails the
/// test after 60 s instead of hanging it.
fn refused(args: &[&str], want: &str) {
    let child = spawn(args);
    let out = finish(child, Duration::from_secs(60));
    assert_code(&out, 2);
    assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
}

#[test]
fn non_regular_and_oversized_records_are_refused() {
    let t = scratch();
    let d = t.path();
    let fifo = d.join("fifo");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let chr = "is a character device";
    refused(&["report", "/dev/zero"], chr);
    refused(&["report", s(&fifo)], "is a FIFO");
    refused(&["report", s(d)], "is a directory");
    refused(&["compare", "/dev/zero", "/dev/zero"], chr);
    refused(&["compare", s(&fifo), s(&fifo)], "is a FIFO");
    let target = d.join("t");
    std::fs::create_dir(&target).unwrap();
    for j in ["/dev/zero", s(&fifo)] {
        refused(
            &[
                "sweep",
                "--resume",
                "--json",
                j,
                "--threads",
                "1,2",
                "--",
                "run",
                "--op",
                "write",
                "--xfer",
                "4k",
                "--size",
                "64k",
                s(&target),
            ],
            "--json",
        );
    }
    assert_empty(&target);
    // One byte over the documented limit (a sparse file: no disk used).
    let huge = d.join("huge.json");
    let f = std::fs::File::create(&huge).unwrap();
    f.set_len((1 << 30) + 1).unwrap();
    refused(&["report", s(&huge)], "1073741824 bytes");
    refused(&["compare", s(&huge), s(&huge)], "1073741824 bytes");
}
