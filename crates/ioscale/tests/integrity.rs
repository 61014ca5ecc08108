//! Data integrity under --verify, as a property: whatever bit of whatever
//! byte of a small data set is flipped between the write and the read
//! phase, the read reports exactly one bad byte, in the right file, at the
//! right offset, and exits 1 — for the shared and per-thread layouts and
//! both engines. Each case flips one bit, runs a verified read of the kept
//! files, and flips the bit back. (IOR's -W/-R/-G exit code is checked in
//! ior_cli.rs: `verification_finds_a_flipped_byte_and_its_offset`.)

mod common;

use std::path::Path;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Bytes each of the two workers writes.
const PER_THREAD: u64 = 64 * K;

/// Flips bit `bit` of the byte at `offset` of `file`.
fn flip_bit(file: &Path, offset: u64, bit: u8) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(file)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, offset).unwrap();
    b[0] ^= 1 << bit;
    f.write_all_at(&b, offset).unwrap();
}

fn flags<'a>(layout: &'a str, engine: &'a str) -> Vec<&'a str> {
    vec![
        "--layout",
        layout,
        "--engine",
        engine,
        "--threads",
        "2",
        "--size",
        "64k",
        "--xfer",
        "4k",
        "--seed",
        "7",
    ]
}

fn flipped_bits_are_found(layout: &str, engine: &str) {
    let t = scratch();
    let tp = t.path();
    let o = scratch();
    let j = o.path().join("r.json");
    let mut args = vec!["run", "--op", "write", "--verify", "--keep", "-q"];
    args.extend(flags(layout, engine));
    args.push(s(tp));
    assert_code(&run(&args), 0);
    let root = tp.join("ioscale.d");
    let files: Vec<std::path::PathBuf> = if layout == "shared" {
        vec![root.join("shared.dat")]
    } else {
        vec![root.join("file.00000000"), root.join("file.00000001")]
    };
    let file_size = if layout == "shared" {
        2 * PER_THREAD
    } else {
        PER_THREAD
    };
    let mut read = vec!["run", "--op", "read", "--verify", "--json", s(&j), "-q"];
    read.extend(flags(layout, engine));
    read.push(s(tp));

    let mut runner = TestRunner::new(Config {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(40)
            .min(40),
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(
            &(0..files.len(), 0..file_size, 0u8..8),
            |(fi, offset, bit)| {
                let file = &files[fi];
                flip_bit(file, offset, bit);
                let out = run(&read);
                flip_bit(file, offset, bit);
                prop_assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
                let v = json(&j);
                let p = &phases(&v)[0];
                let vf = &p["verify"];
                prop_assert_eq!(vf["checked_bytes"].as_u64(), Some(2 * PER_THREAD));
                prop_assert_eq!(vf["bad_bytes"].as_u64(), Some(1), "{}", vf);
                let mm = vf["mismatches"].as_array().unwrap();
                prop_assert_eq!(mm.len(), 1, "{:?}", mm);
                prop_assert_eq!(mm[0]["file"].as_str(), Some(s(file)));
                prop_assert_eq!(mm[0]["offset"].as_u64(), Some(offset));
                // Said on stderr even with -q: the file and the offset.
                let err = stderr(&out);
                let want = format!("{} at offset {offset}", s(file));
                prop_assert!(err.contains(&want), "{}", err);
                Ok(())
            },
        )
        .unwrap();
    // Unflipped again: the data set reads back clean.
    assert_code(&run(&read), 0);
    assert_code(&run(&["clean", s(tp)]), 0);
    assert_empty(tp);
}

#[test]
fn flipped_bit_shared_sync() {
    flipped_bits_are_found("shared", "sync");
}

#[test]
fn flipped_bit_per_thread_sync() {
    flipped_bits_are_found("per-thread", "sync");
}

#[test]
fn flipped_bit_shared_io_uring() {
    flipped_bits_are_found("shared", "io_uring");
}

#[test]
fn flipped_bit_per_thread_io_uring() {
    flipped_bits_are_found("per-thread", "io_uring");
}
