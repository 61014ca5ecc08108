//! `ioscale run` and `ioscale clean` on real file systems (the repository's
//! ext4 and a tmpfs mounted by the test): the JSON record, layouts, kept
//! files, data verification, engines, sync modes, repetitions and CSV.

mod common;

use std::path::Path;

use common::*;

const WR: &str = "write,read";

fn happy_path(target: &Path, want_fs: &str) {
    let out_dir = scratch();
    let j = out_dir.path().join("r.json");
    let out = run(&[
        "run",
        "--op",
        WR,
        "--threads",
        "2",
        "--size",
        "4m",
        "--xfer",
        "64k",
        "--json",
        s(&j),
        s(target),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    assert_eq!(v["schema"], 1);
    assert_eq!(v["interrupted"], false);
    assert_eq!(v["errors"].as_array().unwrap().len(), 0);
    let ph = phases(&v);
    assert_eq!(ph.len(), 2, "two phases: {v}");
    check_phase(&ph[0], "write", 2, 2 * 4 * M, 64 * K);
    check_phase(&ph[1], "read", 2, 2 * 4 * M, 64 * K);
    assert_eq!(ph[0]["write_bytes"].as_u64(), Some(8 * M));
    assert_eq!(ph[1]["read_bytes"].as_u64(), Some(8 * M));
    assert_eq!(ph[0]["workers"].as_array().unwrap().len(), 2);
    assert_eq!(v["host"]["fs_type"], want_fs);
    assert_empty(target);
}

#[test]
fn happy_path_ext4() {
    let t = scratch();
    let fs = fs_type(t.path());
    if fs != "ext4" {
        eprintln!("note: the scratch directory is on {fs}, not ext4");
    }
    happy_path(t.path(), &fs);
}

#[test]
fn happy_path_tmpfs() {
    let Some(m) = tmpfs("size=64m") else { return };
    assert_eq!(fs_type(m.path()), "tmpfs");
    happy_path(m.path(), "tmpfs");
}

/// Every layout with --keep: names, sizes, a later read-only run over the
/// same data (verified), then `clean` leaves the target empty.
#[test]
fn layouts_keep_read_clean() {
    let cases: [(&str, &[&str], u64); 3] = [
        ("shared", &["ioscale.d/shared.dat"], 4 * 2 * 64 * K),
        (
            "per-thread",
            &["ioscale.d/file.00000000", "ioscale.d/file.00000001"],
            4 * 64 * K,
        ),
        (
            "per-thread-dir",
            &[
                "ioscale.d/dir.00000000/file.00000000",
                "ioscale.d/dir.00000001/file.00000001",
            ],
            4 * 64 * K,
        ),
    ];
    for (layout, files, size) in cases {
        let t = scratch();
        let tp = t.path();
        let out_dir = scratch();
        let j = out_dir.path().join("w.json");
        let flags = [
            "--layout",
            layout,
            "--threads",
            "2",
            "--block",
            "64k",
            "--segments",
            "4",
            "--xfer",
            "16k",
            "--verify",
        ];
        let mut args = vec!["run", "--op", "write", "--keep", "--json", s(&j)];
        args.extend(flags);
        args.push(s(tp));
        let out = run(&args);
        assert_code(&out, 0);
        check_phase(&phases(&json(&j))[0], "write", 2, 2 * 4 * 64 * K, 16 * K);

        let mut want: Vec<String> = files.iter().map(|f| f.to_string()).collect();
        want.push("ioscale.d".into());
        want.push("ioscale.d/.ioscale-marker".into());
        if layout == "per-thread-dir" {
            want.push("ioscale.d/dir.00000000".into());
            want.push("ioscale.d/dir.00000001".into());
        }
        want.sort();
        assert_eq!(names(tp), want, "layout {layout}");
        for f in files {
            let len = std::fs::metadata(tp.join(f)).unwrap().len();
            assert_eq!(len, size, "size of {f} ({layout})");
        }

        let r = out_dir.path().join("r.json");
        let mut args = vec!["run", "--op", "read", "--json", s(&r)];
        args.extend(flags);
        args.push(s(tp));
        let out = run(&args);
        assert_code(&out, 0);
        let v = json(&r);
        assert_eq!(phases(&v).len(), 1);
        check_phase(&phases(&v)[0], "read", 2, 2 * 4 * 64 * K, 16 * K);
        check_verified(&phases(&v)[0], 2 * 4 * 64 * K);
        // A read run leaves kept files where they are.
        assert_eq!(names(tp), want, "after the read run ({layout})");

        let out = run(&["clean", s(tp)]);
        assert_code(&out, 0);
        assert_empty(tp);
    }
}

#[test]
fn read_without_kept_files_is_refused() {
    let t = scratch();
    let out = run(&["run", "--op", "read", "--size", "1m", s(t.path())]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("--keep"), "{}", stderr(&out));
    assert_empty(t.path());
}

#[test]
fn verify_write_read_passes() {
    let t = scratch();
    let o = scratch();
    let j = o.path().join("r.json");
    let out = run(&[
        "run",
        "--op",
        WR,
        "--threads",
        "2",
        "--size",
        "2m",
        "--xfer",
        "64k",
        "--verify",
        "--json",
        s(&j),
        s(t.path()),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    check_phase(&phases(&v)[1], "read", 2, 4 * M, 64 * K);
    check_verified(&phases(&v)[1], 4 * M);
    assert_empty(t.path());
}

/// One flipped byte is found, and named by file and exact offset.
#[test]
fn verify_finds_a_flipped_byte() {
    for (layout, file, offset) in [
        ("per-thread", "ioscale.d/file.00000001", 300_001u64),
        ("shared", "ioscale.d/shared.dat", 2 * M + 77),
    ] {
        let t = scratch();
        let tp = t.path();
        let o = scratch();
        let flags = [
            "--layout",
            layout,
            "--threads",
            "2",
            "--size",
            "2m",
            "--xfer",
            "64k",
        ];
        let mut args = vec!["run", "--op", "write", "--verify", "--keep"];
        args.extend(flags);
        args.push(s(tp));
        assert_code(&run(&args), 0);

        let path = tp.join(file);
        flip_byte(&path, offset);

        let j = o.path().join("r.json");
        let mut args = vec!["run", "--op", "read", "--verify", "--json", s(&j)];
        args.extend(flags);
        args.push(s(tp));
        let out = run(&args);
        assert_code(&out, 1);
        let v = json(&j);
        let p = &phases(&v)[0];
        assert_eq!(p["verify"]["checked_bytes"].as_u64(), Some(4 * M));
        assert_eq!(p["verify"]["bad_bytes"].as_u64(), Some(1), "{layout}");
        let mm = p["verify"]["mismatches"].as_array().unwrap();
        assert_eq!(mm.len(), 1, "{layout}: {mm:?}");
        assert_eq!(mm[0]["file"], s(&path));
        assert_eq!(mm[0]["offset"].as_u64(), Some(offset));
        // The text report names them too.
        let text = stdout(&out) + &stderr(&out);
        assert!(text.contains(s(&path)), "{text}");
        assert!(text.contains(&offset.to_string()), "{text}");

        assert_code(&run(&["clean", s(tp)]), 0);
        assert_empty(tp);
    }
}

/// Random writes touch every transfer exactly once: a verified sequential
/// read of the whole data set afterwards finds no hole and no bad byte.
#[test]
fn random_writes_cover_everything() {
    let cases: [(&[&str], u64, u64); 2] = [
        (
            &["--threads", "2", "--size", "2m", "--xfer", "16k"],
            2,
            2 * 2 * M,
        ),
        (
            &[
                "--layout",
                "shared",
                "--threads",
                "3",
                "--block",
                "64k",
                "--segments",
                "4",
                "--xfer",
                "16k",
            ],
            3,
            3 * 4 * 64 * K,
        ),
    ];
    for (flags, threads, total) in cases {
        let t = scratch();
        let tp = t.path();
        let o = scratch();
        let w = o.path().join("w.json");
        let mut args = vec![
            "run",
            "--op",
            "randwrite",
            "--verify",
            "--keep",
            "--json",
            s(&w),
        ];
        args.extend(flags);
        args.push(s(tp));
        assert_code(&run(&args), 0);
        check_phase(&phases(&json(&w))[0], "randwrite", threads, total, 16 * K);

        let r = o.path().join("r.json");
        let mut args = vec!["run", "--op", "read", "--verify", "--json", s(&r)];
        args.extend(flags);
        args.push(s(tp));
        let out = run(&args);
        assert_code(&out, 0);
        check_verified(&phases(&json(&r))[0], total);
        assert_code(&run(&["clean", s(tp)]), 0);
        assert_empty(tp);
    }
}

fn uring_verified(target: &Path, direct: bool) {
    let o = scratch();
    let j = o.path().join("r.json");
    let mut args = vec![
        "run",
        "--engine",
        "io_uring",
        "--iodepth",
        "8",
        "--op",
        WR,
        "--threads",
        "2",
        "--size",
        "2m",
        "--xfer",
        "64k",
        "--verify",
        "--json",
        s(&j),
    ];
    if direct {
        args.push("--direct");
    }
    args.push(s(target));
    let out = run(&args);
    assert_code(&out, 0);
    let v = json(&j);
    assert_eq!(v["spec"]["engine"], "io_uring");
    assert_eq!(v["spec"]["iodepth"], 8);
    assert_eq!(v["spec"]["direct"], direct);
    check_phase(&phases(&v)[0], "write", 2, 4 * M, 64 * K);
    check_phase(&phases(&v)[1], "read", 2, 4 * M, 64 * K);
    check_verified(&phases(&v)[1], 4 * M);
    assert_empty(target);
}

#[test]
fn io_uring_verified() {
    let t = scratch();
    uring_verified(t.path(), false);
}

#[test]
fn io_uring_direct_verified_on_ext4() {
    let t = scratch();
    uring_verified(t.path(), true);
}

#[test]
fn sync_engine_direct_verified_on_ext4() {
    let t = scratch();
    let o = scratch();
    let j = o.path().join("r.json");
    let out = run(&[
        "run",
        "--direct",
        "--op",
        "randwrite,randread",
        "--size",
        "1m",
        "--xfer",
        "4k",
        "--verify",
        "--json",
        s(&j),
        s(t.path()),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    check_phase(&phases(&v)[0], "randwrite", 1, M, 4 * K);
    check_verified(&phases(&v)[1], M);
    assert_empty(t.path());
}

/// Whether this kernel's tmpfs accepts O_DIRECT, found independently of
/// ioscale (tmpfs gained O_DIRECT support in Linux 6.6).
fn tmpfs_takes_o_direct(dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let p = dir.join("probe");
    let r = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(libc::O_DIRECT)
        .open(&p);
    let _ = std::fs::remove_file(&p);
    r.is_ok()
}

#[test]
fn direct_on_tmpfs() {
    let Some(m) = tmpfs("size=64m") else { return };
    let takes = tmpfs_takes_o_direct(m.path());
    let o = scratch();
    let j = o.path().join("r.json");
    let out = run(&[
        "run",
        "--direct",
        "--op",
        WR,
        "--size",
        "1m",
        "--xfer",
        "64k",
        "--verify",
        "--json",
        s(&j),
        s(m.path()),
    ]);
    if takes {
        assert_code(&out, 0);
        let v = json(&j);
        check_phase(&phases(&v)[0], "write", 1, M, 64 * K);
        check_verified(&phases(&v)[1], M);
    } else {
        assert_code(&out, 2);
        assert!(stderr(&out).contains("--direct"), "{}", stderr(&out));
        assert!(!j.exists());
    }
    assert_empty(m.path());
}

#[test]
fn reps_and_csv() {
    let t = scratch();
    let o = scratch();
    let j = o.path().join("r.json");
    let c = o.path().join("r.csv");
    let out = run(&[
        "run",
        "--op",
        WR,
        "--reps",
        "3",
        "--size",
        "1m",
        "--xfer",
        "64k",
        "--json",
        s(&j),
        "--csv",
        s(&c),
        "--quiet",
        s(t.path()),
    ]);
    assert_code(&out, 0);
    assert!(out.stdout.is_empty(), "--quiet printed: {}", stdout(&out));
    let v = json(&j);
    let ph = phases(&v);
    assert_eq!(ph.len(), 6);
    for (i, p) in ph.iter().enumerate() {
        let op = if i % 2 == 0 { "write" } else { "read" };
        check_phase(p, op, 1, M, 64 * K);
        assert_eq!(p["rep"].as_u64(), Some(i as u64 / 2));
    }
    let summary = v["summary"].as_array().unwrap();
    assert_eq!(summary.len(), 2);
    for sm in summary {
        assert_eq!(sm["reps"].as_u64(), Some(3), "{sm}");
    }
    let csv = std::fs::read_to_string(&c).unwrap();
    let lines: Vec<&str> = csv.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 7, "header + 6 rows:\n{csv}");
    let header: Vec<&str> = lines[0].split(',').collect();
    assert!(
        header.contains(&"op") && header.contains(&"bytes"),
        "{}",
        lines[0]
    );
    for (i, l) in lines[1..].iter().enumerate() {
        let cols: Vec<&str> = l.split(',').collect();
        assert_eq!(cols.len(), header.len(), "row {i}: {l}");
        let op_col = header.iter().position(|h| *h == "op").unwrap();
        let want = if i % 2 == 0 { "write" } else { "read" };
        assert_eq!(cols[op_col].trim_matches('"'), want, "row {i}: {l}");
    }
    assert_empty(t.path());
}

/// --reorder: worker 0 reads file.00000001. A corrupted file.00000001 is
/// still reported by name; and replacing file.00000001 by something that
/// cannot be read shows which worker opened it.
#[test]
fn reorder_reads_the_other_workers_file() {
    let t = scratch();
    let tp = t.path();
    let o = scratch();
    let flags = ["--threads", "2", "--size", "4k", "--xfer", "4k"];
    let mut args = vec!["run", "--op", "write", "--verify", "--keep"];
    args.extend(flags);
    args.push(s(tp));
    assert_code(&run(&args), 0);
    let f1 = tp.join("ioscale.d/file.00000001");
    flip_byte(&f1, 100);

    let j = o.path().join("r.json");
    let mut args = vec![
        "run",
        "--op",
        "read",
        "--verify",
        "--reorder",
        "--json",
        s(&j),
    ];
    args.extend(flags);
    args.push(s(tp));
    let out = run(&args);
    assert_code(&out, 1);
    let v = json(&j);
    assert_eq!(v["spec"]["reorder_offset"], 1);
    let mm = phases(&v)[0]["verify"]["mismatches"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(mm.len(), 1, "{mm:?}");
    assert_eq!(mm[0]["file"], s(&f1));
    assert_eq!(mm[0]["offset"].as_u64(), Some(100));

    // Which worker read file.00000001? Make opening it fail: a directory
    // under a data file's name is refused at open with EISDIR (the workers
    // open only regular files), and the error record names the worker. An
    // ext4 directory is 4 KiB long, so it passes the size check of kept
    // files.
    std::fs::remove_file(&f1).unwrap();
    std::fs::create_dir(&f1).unwrap();
    if std::fs::metadata(&f1).unwrap().len() < 4096 {
        eprintln!("note: directories here are shorter than 4 KiB; skipping the worker check");
    } else {
        for (reorder, want_worker) in [(true, 0u64), (false, 1u64)] {
            let j = o.path().join(format!("e{reorder}.json"));
            let mut args = vec!["run", "--op", "read", "--json", s(&j)];
            if reorder {
                args.push("--reorder");
            }
            args.extend(flags);
            args.push(s(tp));
            let out = run(&args);
            assert_code(&out, 1);
            let v = json(&j);
            let errs = v["errors"].as_array().unwrap();
            assert_eq!(errs.len(), 1, "{errs:?}");
            assert_eq!(
                errs[0]["worker"].as_u64(),
                Some(want_worker),
                "reorder {reorder}"
            );
            assert_eq!(errs[0]["file"], s(&f1));
            assert_eq!(errs[0]["op"], "open");
            assert_eq!(errs[0]["errno"].as_i64(), Some(libc::EISDIR as i64));
            let err = stderr(&out);
            assert!(
                err.contains(&format!("worker {want_worker}")) && err.contains(s(&f1)),
                "{err}"
            );
        }
    }
    std::fs::remove_dir(&f1).unwrap();
    assert_code(&run(&["clean", s(tp)]), 0);
    assert_empty(tp);
}

#[test]
fn sync_modes() {
    let t = scratch();
    for mode in ["none", "end", "each", "dsync", "every:4"] {
        let o = scratch();
        let j = o.path().join("r.json");
        let out = run(&[
            "run",
            "--op",
            WR,
            "--sync",
            mode,
            "--threads",
            "2",
            "--size",
            "1m",
            "--xfer",
            "64k",
            "--verify",
            "--json",
            s(&j),
            s(t.path()),
        ]);
        assert_code(&out, 0);
        let v = json(&j);
        check_phase(&phases(&v)[0], "write", 2, 2 * M, 64 * K);
        check_verified(&phases(&v)[1], 2 * M);
        assert_empty(t.path());
    }
}

#[test]
fn help_and_version() {
    let out = run(&["run", "--help"]);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("Examples"), "{}", stdout(&out));
    assert!(stdout(&out).contains("--layout"));
    let out = run(&["--version"]);
    assert_code(&out, 0);
    assert!(
        stdout(&out).contains(env!("CARGO_PKG_VERSION")),
        "{}",
        stdout(&out)
    );
}

/// Kept files verify whatever --xfer the read run uses, even when the
/// transfers are not multiples of 8 bytes (buffered I/O allows any size).
#[test]
fn verify_is_independent_of_the_transfer_size() {
    let t = scratch();
    let tp = t.path();
    let out = run(&[
        "run",
        "--op",
        "randwrite",
        "--verify",
        "--keep",
        "--threads",
        "2",
        "--xfer",
        "1001",
        "--size",
        "12012",
        s(tp),
    ]);
    assert_code(&out, 0);
    for xfer in ["1001", "3003", "12012", "4", "1"] {
        let o = scratch();
        let j = o.path().join("r.json");
        let out = run(&[
            "run",
            "--op",
            "read",
            "--verify",
            "--threads",
            "2",
            "--xfer",
            xfer,
            "--size",
            "12012",
            "--json",
            s(&j),
            s(tp),
        ]);
        assert_code(&out, 0);
        check_verified(&phases(&json(&j))[0], 2 * 12012);
    }
    assert_code(&run(&["clean", s(tp)]), 0);
    assert_empty(tp);
}
