//! `ioscale meta --verify` (and its front-end spellings, mdtest -X and
//! smallfile --verify-read Y): data written by create/append/overwrite
//! carries a pattern of (file, offset, seed), `read` checks every byte, and
//! a flipped byte is reported with its path and offset (exit 1). Also
//! `--sync-phase` (mdtest -Y) and `--stop-at-first` (smallfile --finish N).
//! No test asserts on timing.

mod common;

use std::path::Path;

use common::*;

const SHAPE: [&str; 6] = ["--threads", "2", "--files", "5", "--file-size", "1k..3k"];

fn meta(ops: &str, extra: &[&str], target: &Path, json_out: Option<&Path>) -> std::process::Output {
    let mut a = vec!["meta", "--ops", ops];
    a.extend_from_slice(&SHAPE);
    a.extend_from_slice(extra);
    if let Some(j) = json_out {
        a.push("--json");
        a.push(s(j));
    }
    a.push(s(target));
    run(&a)
}

fn verify_of(v: &serde_json::Value, op: &str) -> serde_json::Value {
    phases(v)
        .iter()
        .find(|p| p["op"] == op)
        .unwrap_or_else(|| panic!("no {op} phase"))["verify"]
        .clone()
}

#[test]
fn verify_passes_clean_then_finds_a_flipped_byte() {
    let t = scratch();
    let o = scratch();
    // In one run: create, append and overwrite lay down the pattern, read
    // checks it all (an appended file is twice as long).
    let j = o.path().join("clean.json");
    let out = meta(
        "create,append,overwrite,read,delete",
        &["--verify"],
        t.path(),
        Some(&j),
    );
    assert_code(&out, 0);
    let v = json(&j);
    let ver = verify_of(&v, "read");
    assert_eq!(ver["bad_bytes"], 0);
    let read = phases(&v).iter().find(|p| p["op"] == "read").unwrap();
    assert_eq!(read["ops"], 10);
    assert_eq!(ver["checked_bytes"], read["read_bytes"]);
    assert!(ver["checked_bytes"].as_u64().unwrap() >= 2 * 10 * 1024);
    assert_empty(t.path());

    // Kept between runs: one flipped byte in one small file.
    assert_code(&meta("create", &["--verify", "--keep"], t.path(), None), 0);
    let victim = t.path().join("ioscale-meta.d/thr.001/f1.3");
    flip_byte(&victim, 700);
    let j = o.path().join("bad.json");
    let out = meta("read", &["--verify", "--keep"], t.path(), Some(&j));
    assert_code(&out, 1);
    let ver = verify_of(&json(&j), "read");
    assert_eq!(ver["bad_bytes"], 1);
    let mm = ver["mismatches"].as_array().unwrap();
    assert_eq!(mm.len(), 1, "{mm:?}");
    assert_eq!(mm[0]["file"], s(&victim));
    assert_eq!(mm[0]["offset"], 700);
    // The text report names it too.
    let text = stdout(&out);
    assert!(
        text.contains(&format!("MISMATCH {} first bad offset 700", s(&victim))),
        "{text}"
    );
    // Removing the kept tree restores a clean target.
    assert_code(&meta("cleanup", &[], t.path(), None), 0);
    assert_empty(t.path());
}

#[test]
fn a_short_file_is_a_mismatch_and_unpatterned_data_is_refused() {
    let t = scratch();
    assert_code(&meta("create", &["--verify", "--keep"], t.path(), None), 0);
    let victim = t.path().join("ioscale-meta.d/thr.000/f0.0");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&victim)
        .unwrap();
    f.set_len(100).unwrap();
    drop(f);
    let o = scratch();
    let j = o.path().join("r.json");
    let out = meta("read", &["--verify", "--keep"], t.path(), Some(&j));
    assert_code(&out, 1);
    let ver = verify_of(&json(&j), "read");
    let mm = ver["mismatches"].as_array().unwrap();
    assert_eq!(mm.len(), 1);
    assert_eq!(mm[0]["file"], s(&victim));
    assert_eq!(mm[0]["offset"], 100);
    assert_code(&meta("cleanup", &[], t.path(), None), 0);

    // Files written without --verify cannot be checked: refused up front.
    assert_code(&meta("create", &["--keep"], t.path(), None), 0);
    let out = meta("read", &["--verify", "--keep"], t.path(), None);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("--verify"), "{}", stderr(&out));
    assert_code(&meta("cleanup", &[], t.path(), None), 0);
    assert_empty(t.path());
}

#[test]
fn smallfile_verify_read_round_trip() {
    let t = scratch();
    let sf = |op: &str| {
        run(&[
            "smallfile",
            "--operation",
            op,
            "--verify-read",
            "Y",
            "--threads",
            "2",
            "--files",
            "6",
            "--file-size",
            "2",
            "--top",
            s(t.path()),
        ])
    };
    assert_code(&sf("create"), 0);
    assert_code(&sf("read"), 0);
    // Flip one byte of one file: the read names it and exits 1.
    let victim = t.path().join("ioscale-meta.d/thr.000/f0.4");
    flip_byte(&victim, 2047);
    let out = sf("read");
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("MISMATCH {} first bad offset 2047", s(&victim))),
        "{err}"
    );
    assert_code(&sf("cleanup"), 0);
    assert_empty(t.path());
}

#[test]
fn sync_phase_runs_inside_each_phase_and_counts_are_exact() {
    let targets: Vec<(Option<Mount>, std::path::PathBuf)> = {
        let mut v = Vec::new();
        let sc = scratch();
        v.push((None, sc.keep()));
        if let Some(m) = tmpfs("size=16m") {
            let p = m.path().to_path_buf();
            v.push((Some(m), p));
        }
        v
    };
    for (_m, dir) in &targets {
        let o = scratch();
        let j = o.path().join("y.json");
        let out = meta(
            "create,stat,read,delete",
            &["--sync-phase", "--verify"],
            dir,
            Some(&j),
        );
        assert_code(&out, 0);
        let v = json(&j);
        assert_eq!(v["spec"]["sync_phase"], true);
        for p in phases(&v) {
            assert_eq!(p["ops"], 10, "{}", p["op"]);
            assert_eq!(p["errors"], 0);
            // The sync time is recorded and lies within the phase's time.
            let fs = p["fsync_s"].as_f64().unwrap();
            assert!(fs > 0.0 && fs <= p["elapsed_s"].as_f64().unwrap(), "{p}");
        }
        assert_empty(dir);
    }
    for (m, dir) in targets {
        if m.is_none() {
            std::fs::remove_dir(&dir).unwrap();
        }
    }
}

#[test]
fn stop_at_first_ends_every_thread_when_one_finishes() {
    // Each phase stops both threads once the first is done; the untimed
    // teardown removes whatever the cut-short delete left.
    let t = scratch();
    let o = scratch();
    let j = o.path().join("s.json");
    let out = run(&[
        "meta",
        "--ops",
        "create,delete",
        "--threads",
        "2",
        "--files",
        "20000",
        "--file-size",
        "0",
        "--stop-at-first",
        "--json",
        s(&j),
        "-q",
        s(t.path()),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    let ph = phases(&v);
    let created = ph[0]["ops"].as_u64().unwrap();
    assert!((20000..=40000).contains(&created), "{created}");
    // One thread made all its files; the other stopped then.
    let per: Vec<u64> = ph[0]["files"]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["files"].as_u64().unwrap())
        .collect();
    assert_eq!(per.iter().max(), Some(&20000), "{per:?}");
    assert_eq!(per.iter().sum::<u64>(), created);
    // The delete works on those prefixes and stops when the thread with
    // the shorter one is done.
    let deleted = ph[1]["ops"].as_u64().unwrap();
    let shorter = *per.iter().min().unwrap();
    assert!(
        deleted >= shorter && deleted <= created,
        "{deleted} of {per:?}"
    );
    assert_empty(t.path());
    // smallfile spells it --finish N (with --stonewall Y, the default).
    let out = run(&[
        "smallfile",
        "--operation",
        "create",
        "--finish",
        "N",
        "--top",
        "/nonexistent",
        "--print-spec",
    ]);
    assert_code(&out, 0);
    assert!(
        stdout(&out).contains("\"stop_at_first\": true"),
        "{}",
        stdout(&out)
    );
}
