//! Issue 13, items 9 and 11: a `--verify` read of kept files checks what
//! the marker says was written. Files whose last write ran without
//! `--verify` hold no known pattern: the read is refused (exit 2), not
//! reported as corruption. A kept file cut short is damaged data: exit 1
//! naming the offset where its data ends, not "write the files again".

mod common;

use std::path::Path;

use common::*;

fn write(t: &Path, extra: &[&str]) {
    let mut a = vec![
        "run", "--op", "write", "--keep", "--xfer", "64k", "--size", "1m",
    ];
    a.extend_from_slice(extra);
    a.extend(["-q", s(t)]);
    let out = run(&a);
    assert_code(&out, 0);
}

fn read_verify(t: &Path, extra: &[&str]) -> std::process::Output {
    let mut a = vec![
        "run", "--op", "read", "--verify", "--keep", "--xfer", "64k", "--size", "1m",
    ];
    a.extend_from_slice(extra);
    a.extend(["-q", s(t)]);
    run(&a)
}

#[test]
fn a_verify_read_of_files_rewritten_without_verify_is_refused() {
    let t = scratch();
    let d = t.path();
    write(d, &["--verify"]);
    write(d, &[]);
    let out = read_verify(d, &[]);
    assert_code(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("not written with a known pattern"), "{err}");
    assert!(!err.contains("bad byte"), "{err}");
    // Without --verify the files are readable as before.
    let out = run(&[
        "run",
        "--op",
        "read",
        "--keep",
        "--xfer",
        "64k",
        "--size",
        "1m",
        "-q",
        s(d),
    ]);
    assert_code(&out, 0);
    // Written with the pattern again, they verify.
    write(d, &["--verify"]);
    let j = d.join("r.json");
    let out = read_verify(d, &["--json", s(&j)]);
    assert_code(&out, 0);
    check_verified(&phases(&json(&j))[0], 1 << 20);
    let out = run(&["clean", s(d)]);
    assert_code(&out, 0);
}

#[test]
fn a_verify_read_with_reorder_checks_what_the_writer_wrote() {
    for layout in ["per-thread", "shared", "per-thread-dir"] {
        let t = scratch();
        let d = t.path();
        write(d, &["--verify", "--threads", "2", "--layout", layout]);
        let j = d.join("r.json");
        let out = read_verify(
            d,
            &[
                "--threads",
                "2",
                "--layout",
                layout,
                "--reorder",
                "--json",
                s(&j),
            ],
        );
        assert_code(&out, 0);
        check_verified(&phases(&json(&j))[0], 2 << 20);
        let out = run(&["clean", s(d)]);
        assert_code(&out, 0);
    }
}

#[test]
fn a_truncated_kept_file_fails_at_the_offset_where_its_data_ends() {
    let t = scratch();
    let d = t.path();
    write(d, &["--verify"]);
    let f = d.join("ioscale.d").join("file.00000000");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&f)
        .unwrap()
        .set_len(300_000)
        .unwrap();
    let out = read_verify(d, &[]);
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(err.contains(s(&f)), "{err}");
    assert!(err.contains("ends at offset 300000"), "{err}");
    assert!(!err.contains("write the files again"), "{err}");
    // The kept files stay for `clean`, which removes them.
    assert!(f.exists());
    let out = run(&["clean", s(d)]);
    assert_code(&out, 0);
    assert_empty(d);
}

#[test]
fn ior_checks_only_files_written_with_its_pattern() {
    let t = scratch();
    let f = t.path().join("f");
    let ior = |args: &[&str]| {
        let mut a = vec!["ior"];
        a.extend_from_slice(args);
        a.extend(["-t", "64k", "-b", "256k", "-o", s(&f)]);
        run(&a)
    };
    assert_code(&ior(&["-w", "-W", "-k"]), 0);
    assert_code(&ior(&["-w", "-k"]), 0);
    let out = ior(&["-r", "-R", "-k"]);
    assert_code(&out, 2);
    let err = stderr(&out);
    assert!(err.contains("not written with a known pattern"), "{err}");
    assert!(!err.contains("differ"), "{err}");
    // Written with -W again, -R checks them; without -k they go.
    assert_code(&ior(&["-w", "-W", "-k"]), 0);
    assert_code(&ior(&["-r", "-R"]), 0);
    assert_empty(t.path());
}
