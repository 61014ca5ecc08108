//! `ioscale fio` makes the system calls fio 3.33 (Debian's) makes for what
//! a job file says and for what it leaves out: both run the same job on
//! the same file system under strace, and the calls are counted by kind —
//! the cache drop and access hint fio gives each file it opens
//! (`invalidate=1`, `fadvise_hint=1`, its defaults) and after a layout,
//! the fsync/fdatasync of `fsync=N`/`fdatasync=N`/`end_fsync`, the data
//! transfers (psync: io_uring's fio queues its syncs in the ring, where
//! strace cannot count them; crates/engine/tests/fio_blocks.rs counts
//! ioscale's). A verify job's blocks are fio's: real fio reads ioscale's
//! file back with the same `verify=` and finds nothing wrong.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs fio (`real`) or `ioscale fio` with `args` in `dir` under strace;
/// returns the trace.
fn traced(real: bool, args: &[&str], dir: &Path) -> String {
    let flags = ["-e", "trace=fadvise64,fsync,fdatasync,pread64,pwrite64"];
    let mut args = args.to_vec();
    args.push("--output=/dev/null");
    common::strace::fio_traced(real, &flags, &args, dir).0
}

/// The calls of a trace by kind: fadvise by advice, fsync, fdatasync, and
/// the data transfers of `bs` bytes each way.
fn counts(trace: &str, bs: &str) -> Vec<(String, usize)> {
    let count = |pat: &str, also: &str| {
        trace
            .lines()
            .filter(|l| l.contains(pat) && l.contains(also))
            .count()
    };
    let done = format!(", {bs}, ");
    vec![
        (
            "DONTNEED".into(),
            count("fadvise64(", "POSIX_FADV_DONTNEED"),
        ),
        (
            "SEQUENTIAL".into(),
            count("fadvise64(", "POSIX_FADV_SEQUENTIAL"),
        ),
        ("RANDOM".into(), count("fadvise64(", "POSIX_FADV_RANDOM")),
        ("fsync".into(), count("fsync(", "")),
        ("fdatasync".into(), count("fdatasync(", "")),
        ("pread64".into(), count("pread64(", &done)),
        ("pwrite64".into(), count("pwrite64(", &done)),
    ]
}

/// The files a job leaves, removed between runs.
fn clear(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
}

#[test]
fn cache_hints_syncs_and_transfers_are_fios() {
    if !have("fio") || !have("strace") {
        eprintln!("SKIPPED: fio or strace not installed");
        return;
    }
    let Some(m) = tmpfs("size=64m") else { return };
    // Each job with a fresh file, so both lay it out.
    let jobs: &[&[&str]] = &[
        &["--rw=read"],
        &["--rw=randread", "--loops=2"],
        &["--rw=write"],
        &["--rw=randwrite", "--invalidate=0"],
        &["--rw=read", "--fadvise_hint=0"],
        &["--rw=write", "--invalidate=0", "--fadvise_hint=0"],
        &["--rw=write", "--fdatasync=1"],
        &["--rw=write", "--fsync=4"],
        &["--rw=write", "--fsync=4", "--end_fsync=1"],
        &["--rw=write", "--fdatasync=300"],
        &["--rw=write", "--end_fsync=1"],
        &["--rw=write", "--verify=md5"],
        &["--rw=randwrite", "--verify=crc32c", "--do_verify=1"],
    ];
    let dir = m.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    for extra in jobs {
        let mut args = vec!["--name=j", "--bs=4k", "--size=1m"];
        args.extend_from_slice(extra);
        let want = counts(&traced(true, &args, &dir), "4096");
        clear(&dir);
        let got = counts(&traced(false, &args, &dir), "4096");
        clear(&dir);
        assert_eq!(got, want, "{extra:?}: ioscale's calls, then fio's");
    }
}

#[test]
fn fio_reads_ioscales_verify_blocks_back_without_a_mismatch() {
    if !have("fio") {
        eprintln!("SKIPPED: fio not installed");
        return;
    }
    let Some(m) = tmpfs("size=64m") else { return };
    let d = m.path();
    for sum in ["crc32c", "crc32c-intel", "md5", "sha1", "xxhash"] {
        let v = format!("--verify={sum}");
        let args = [
            "fio",
            "--name=j",
            "--rw=write",
            "--bs=8k",
            "--size=256k",
            &v,
        ];
        let out = ioscale().args(args).current_dir(d).output().unwrap();
        assert_code(&out, 0);
        // fio with the same verify= reads the file and checks each block.
        let check = |d: &Path| -> Output {
            Command::new("fio")
                .args(["--name=j", "--rw=read", "--bs=8k", "--size=256k", &v])
                .current_dir(d)
                .output()
                .unwrap()
        };
        let out = check(d);
        assert!(
            out.status.success(),
            "{sum}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // A changed data byte is fio's mismatch too: the blocks are
        // really checked, not just read.
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(d.join("j.0.0"))
            .unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, &[0x33], 5 * 8192 + 4000).unwrap();
        let out = check(d);
        assert!(!out.status.success(), "{sum}: fio found no mismatch");
        clear(d);
    }
}

#[test]
fn options_set_to_fios_defaults_are_accepted_and_their_opposites_named() {
    let Some(m) = tmpfs("size=64m") else { return };
    let d = m.path();
    let base = ["fio", "--name=j", "--rw=write", "--bs=4k", "--size=64k"];
    for ok in [
        &["--do_verify=1", "--verify=md5"][..],
        &["--invalidate=1"],
        &["--allow_file_create=1"],
        &["--fadvise_hint=1"],
        &["--verify=crc32c", "--verify_fatal=1"],
    ] {
        let out = ioscale()
            .args(base)
            .args(ok)
            .current_dir(d)
            .output()
            .unwrap();
        assert_code(&out, 0);
        clear(d);
    }
    for (bad, names) in [
        ("--do_verify=0", "do_verify=0"),
        ("--allow_file_create=0", "allow_file_create=0"),
        ("--fadvise_hint=random", "fadvise_hint=random"),
        ("--verify=sha256", "verify=sha256"),
    ] {
        let out = ioscale()
            .args(base)
            .arg(bad)
            .current_dir(d)
            .output()
            .unwrap();
        assert_code(&out, 2);
        assert!(stderr(&out).contains(names), "{bad}: {}", stderr(&out));
        assert!(names_in(d).is_empty(), "{bad}: made {:?}", names_in(d));
    }
}

fn names_in(d: &Path) -> Vec<String> {
    names(d)
}
