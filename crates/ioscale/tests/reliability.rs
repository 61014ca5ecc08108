//! Faults, for every command: injected by the test FUSE file system
//! (crates/testfs) for `meta`, `sweep`, `ior` and `dd` (`run` has its own in
//! testfs_faults.rs), and real ones on real file systems — EACCES as an
//! unprivileged user, the working directory removed mid-run, EMFILE. Each
//! failure must give exit 1, an error line naming the operation, the file
//! and the offset (where there is one), the results so far saved, and a
//! cleanup that leaves SOURCE/TARGET as it was. Every result is read from
//! the JSON record; no test asserts on speed, only on lower bounds the
//! injected delays impose.

mod common;
#[path = "support/rel.rs"]
mod rel;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::fuse::TestFs;
use common::*;
use rel::*;
use serde_json::Value;

/// The one entry of `errors[]`, checked against op, errno and file.
fn the_error<'a>(v: &'a Value, op: &str, errno: i64, file: &str) -> &'a Value {
    let errs = v["errors"].as_array().expect("errors[]");
    assert!(!errs.is_empty(), "no errors[] in {v}");
    let e = &errs[0];
    assert_eq!(e["op"], op, "{e}");
    assert_eq!(e["errno"].as_i64(), Some(errno), "{e}");
    assert_eq!(e["file"], file, "{e}");
    e
}

fn meta_file(fs: &TestFs, i: u64) -> String {
    format!("{}/ioscale-meta.d/thr.000/f0.{i}", s(fs.path()))
}

// ---------------------------------------------------------------- meta

#[test]
fn meta_eio_after_ops() {
    // The 6th data request on a meta file fails: file f0.5, offset 0.
    let Some(fs) = TestFs::mount(&["--eio-after-ops", "5", "--faults-path-substr", "/f0."]) else {
        return;
    };
    let o = scratch();
    let j = o.path().join("m.json");
    let out = run(&[
        "meta",
        "--ops",
        "create,stat,delete",
        "--files",
        "20",
        "--file-size",
        "4k",
        "--json",
        s(&j),
        "-q",
        s(fs.path()),
    ]);
    assert_code(&out, 1);
    let f = meta_file(&fs, 5);
    error_line(&stderr(&out), "write", &f, Some(0));
    let v = json(&j);
    assert_eq!(the_error(&v, "write", 5, &f)["offset"].as_u64(), Some(0));
    assert!(phases(&v).is_empty(), "the failed create is no result");
    let f = &v["failed_phases"][0];
    assert_eq!(f["partial_ops"].as_u64(), Some(5), "{f}");
    assert_empty(fs.source());
}

#[test]
fn meta_enospc_names_the_offset() {
    // 64 KiB files written in 16 KiB records; the "disk" is full after
    // 100 KiB of data: f0.0 takes 64 KiB, f0.1's third record is accepted
    // up to the limit (4 KiB, a short write) and the next one fails.
    let Some(fs) = TestFs::mount(&[
        "--enospc-after-bytes",
        "100k",
        "--faults-path-substr",
        "/f0.",
    ]) else {
        return;
    };
    let o = scratch();
    let j = o.path().join("m.json");
    let out = run(&[
        "meta",
        "--ops",
        "create,delete",
        "--files",
        "10",
        "--file-size",
        "64k",
        "--record-size",
        "16k",
        "--json",
        s(&j),
        "-q",
        s(fs.path()),
    ]);
    assert_code(&out, 1);
    let f = meta_file(&fs, 1);
    let line = error_line(&stderr(&out), "write", &f, Some(36 * K));
    assert!(line.contains("No space left"), "{line}");
    let v = json(&j);
    the_error(&v, "write", 28, &f);
    assert_eq!(v["failed_phases"][0]["partial_ops"].as_u64(), Some(1));
    assert_empty(fs.source());
}

#[test]
fn meta_fsync_fails_then_slow_fsync_and_latency() {
    let Some(fs) = TestFs::mount(&["--fsync-fail"]) else {
        return;
    };
    let o = scratch();
    let j = o.path().join("m.json");
    let out = run(&[
        "meta",
        "--ops",
        "create,delete",
        "--fsync",
        "--files",
        "10",
        "--json",
        s(&j),
        "-q",
        s(fs.path()),
    ]);
    assert_code(&out, 1);
    let f = meta_file(&fs, 0);
    error_line(&stderr(&out), "fsync", &f, None);
    the_error(&json(&j), "fsync", 5, &f);
    assert_empty(fs.source());
    drop(fs);

    // A slow fsync and slow metadata requests: the run is clean and each
    // create's latency holds at least the injected delays.
    let Some(fs) = TestFs::mount(&["--fsync-delay", "20ms", "--meta-delay", "2ms"]) else {
        return;
    };
    let out = run(&[
        "meta",
        "--ops",
        "create,stat,delete",
        "--fsync",
        "--files",
        "8",
        "--json",
        s(&j),
        "-q",
        s(fs.path()),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    let ph = phases(&v);
    assert_eq!(ph.len(), 3);
    for p in ph {
        assert_eq!(p["ops"].as_u64(), Some(8), "{p}");
        assert_eq!(p["errors"].as_u64(), Some(0), "{p}");
    }
    let p50 = |i: usize| ph[i]["lat_us"]["p50"].as_f64().unwrap();
    assert!(p50(0) >= 22_000.0, "create p50 {} us", p50(0));
    assert!(p50(1) >= 2_000.0, "stat p50 {} us", p50(1));
    assert_empty(fs.source());
}

#[test]
fn meta_short_writes_and_reads_are_completed() {
    let Some(fs) = TestFs::mount(&["--short-writes", "--short-reads"]) else {
        return;
    };
    let o = scratch();
    let j = o.path().join("m.json");
    let out = run(&[
        "meta",
        "--ops",
        "create,read,delete",
        "--threads",
        "2",
        "--files",
        "10",
        "--file-size",
        "48k",
        "--json",
        s(&j),
        "-q",
        s(fs.path()),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    let ph = phases(&v);
    assert_eq!(ph[0]["bytes"].as_u64(), Some(20 * 48 * K), "{}", ph[0]);
    assert_eq!(ph[1]["bytes"].as_u64(), Some(20 * 48 * K), "{}", ph[1]);
    assert!(fs.log_text().contains("ioscale-testfs"));
    assert_empty(fs.source());
}

// ---------------------------------------------------------------- sweep

#[test]
fn sweep_keeps_points_and_reports_a_failed_one() {
    // 1 MiB per thread: the 1-thread point writes 1 MiB, the 2-thread point
    // meets the EIO after 1.5 MiB; the sweep goes on, keeps every point,
    // and exits 1.
    let Some(fs) = TestFs::mount(&[
        "--eio-after-bytes",
        "1536k",
        "--faults-path-substr",
        "file.",
    ]) else {
        return;
    };
    let o = scratch();
    let j = o.path().join("s.json");
    let out = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--json",
        s(&j),
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "1m",
        "--xfer",
        "64k",
        s(fs.path()),
    ]);
    assert_code(&out, 1);
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.contains("point threads=2") && l.contains("Input/output error"))
        .unwrap_or_else(|| panic!("no error line for the 2-thread point:\n{err}"));
    assert!(line.contains("write "), "{line}");
    assert!(line.contains("/ioscale.d/file.0000000"), "{line}");
    assert!(line.contains("at offset "), "{line}");
    let v = json(&j);
    assert_eq!(v["interrupted"], false);
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2, "both points are saved");
    assert!(pts[0]["result"]["errors"].as_array().unwrap().is_empty());
    let e = &pts[1]["result"]["errors"][0];
    assert_eq!(e["errno"].as_i64(), Some(5), "{e}");
    assert!(e["offset"].as_u64().is_some(), "{e}");
    assert_empty(fs.source());
}

#[test]
fn sweep_of_meta_through_failing_fsync() {
    let Some(fs) = TestFs::mount(&["--fsync-fail"]) else {
        return;
    };
    let o = scratch();
    let j = o.path().join("s.json");
    let out = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--json",
        s(&j),
        "--",
        "meta",
        "--ops",
        "create,delete",
        "--fsync",
        "--files",
        "5",
        s(fs.path()),
    ]);
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(
        err.lines()
            .any(|l| l.contains("point threads=1") && l.contains("fsync ")),
        "{err}"
    );
    let v = json(&j);
    assert_eq!(v["points"].as_array().unwrap().len(), 2);
    assert_empty(fs.source());
}

// ---------------------------------------------------------------- ior

/// `ioscale ior ARGS -o MNT/ior.bin` with a JSON summary; returns the
/// output and the summary's path holder.
fn ior_on(fs: &TestFs, args: &[&str]) -> (std::process::Output, tempfile::TempDir) {
    let o = scratch();
    let j = o.path().join("ior.json");
    let path = fs.path().join("ior.bin");
    let sf = format!("summaryFile={}", s(&j));
    let mut all = vec!["ior"];
    all.extend_from_slice(args);
    all.extend(["-O", "summaryFormat=JSON", "-O", &sf, "-o", s(&path)]);
    let out = run(&all);
    (out, o)
}

#[test]
fn ior_eio_enospc_fsync_and_read_faults() {
    // One file per task (-F): "bin.0000" selects the data file
    // ior.bin.00000000, not the sidecar marker .ior.bin.ioscale-marker.
    let filter = ["--faults-path-substr", "bin.0000"];
    let file = |fs: &TestFs| s(&fs.path().join("ior.bin.00000000")).to_string();
    for (flags, args, op, errno, offset) in [
        (
            vec!["--eio-after-bytes", "1m"],
            vec!["-F", "-w", "-b", "4m", "-t", "64k"],
            "write",
            5,
            Some(M),
        ),
        (
            vec!["--enospc-after-bytes", "2m"],
            vec!["-F", "-w", "-b", "4m", "-t", "64k"],
            "write",
            28,
            Some(2 * M),
        ),
        (
            vec!["--fsync-fail"],
            vec!["-F", "-w", "-e", "-b", "1m", "-t", "64k"],
            "fsync",
            5,
            None,
        ),
        (
            // 16 writes pass, then the 5th read fails.
            vec!["--eio-after-ops", "20"],
            vec!["-F", "-w", "-r", "-b", "1m", "-t", "64k"],
            "read",
            5,
            Some(4 * 64 * K),
        ),
    ] {
        let mut all = flags.clone();
        all.extend(filter);
        let Some(fs) = TestFs::mount(&all) else {
            return;
        };
        let (out, o) = ior_on(&fs, &args);
        assert_code(&out, 1);
        let f = file(&fs);
        let line = error_line(&stderr(&out), op, &f, offset);
        assert!(line.starts_with("ior: error: "), "{line}");
        // The summary of the phases that completed is saved; a failed
        // phase is no result and has no row.
        let text = std::fs::read_to_string(o.path().join("ior.json")).unwrap();
        assert_eq!(
            text.contains("\"write\""),
            op == "read",
            "{flags:?}: {text}"
        );
        assert!(
            names(fs.source()).is_empty(),
            "{flags:?}: left {:?}",
            names(fs.source())
        );
        let _ = errno;
    }
}

#[test]
fn ior_short_writes_verify_clean() {
    let Some(fs) = TestFs::mount(&["--short-writes", "--short-reads"]) else {
        return;
    };
    let (out, _o) = ior_on(
        &fs,
        &[
            "-w", "-r", "-W", "-R", "-b", "1m", "-t", "64k", "-N", "2", "-F",
        ],
    );
    assert_code(&out, 0);
    assert_empty(fs.source());
}

// ---------------------------------------------------------------- dd

#[test]
fn dd_eio_enospc_fsync_and_short_transfers() {
    let filter = ["--faults-path-substr", "dd"];
    for (flags, extra, op, offset) in [
        (vec!["--eio-after-bytes", "1m"], vec![], "write", Some(M)),
        (
            vec!["--enospc-after-bytes", "2m"],
            vec![],
            "write",
            Some(2 * M),
        ),
        (vec!["--fsync-fail"], vec!["conv=fsync"], "fsync", None),
    ] {
        let mut all = flags.clone();
        all.extend(filter);
        let Some(fs) = TestFs::mount(&all) else {
            return;
        };
        let of = fs.path().join("dd");
        let ofa = format!("of={}", s(&of));
        let mut args = vec!["dd", "--rm", "if=/dev/zero", &ofa, "bs=64k", "count=64"];
        args.extend(extra.iter().copied());
        let out = run(&args);
        assert_code(&out, 1);
        let err = stderr(&out);
        let line = error_line(&err, op, s(&of), offset);
        assert!(line.starts_with("dd: error: "), "{line}");
        // dd's closing lines report what was done before the fault.
        assert!(err.contains("records out"), "{err}");
        // --rm removes the file this run created, even after a failure.
        assert_empty(fs.source());
    }

    // Short writes, then short reads (sync engine), complete every block.
    let Some(fs) = TestFs::mount(&["--short-writes", "--short-reads"]) else {
        return;
    };
    let of = fs.path().join("dd");
    let out = run(&[
        "dd",
        "if=/dev/zero",
        &format!("of={}", s(&of)),
        "bs=64k",
        "count=16",
    ]);
    assert_code(&out, 0);
    assert_eq!(len(&fs.source().join("dd")), M);
    let out = run(&["dd", &format!("if={}", s(&of)), "of=/dev/null", "bs=64k"]);
    assert_code(&out, 0);
    assert!(stderr(&out).contains("1048576 bytes"), "{}", stderr(&out));
    std::fs::remove_file(&of).unwrap();
    assert_empty(fs.source());
}

// ------------------------------------------------- real faults, real fs

/// `ioscale ARGS` as the unprivileged user nobody.
fn as_nobody(args: &[&str]) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(ioscale_path())
        .args(args);
    c
}

fn nobody_possible() -> bool {
    if !is_root() || !have("setpriv") {
        eprintln!("note: needs root and setpriv; skipping the EACCES test");
        return false;
    }
    true
}

/// A directory in /tmp that nobody may traverse (the test's scratch
/// directories live under a root-only target dir).
fn world_dir() -> tempfile::TempDir {
    let d = tempfile::Builder::new()
        .prefix("ioscale-rel-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(
        d.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    d
}

#[test]
fn eacces_as_an_unprivileged_user() {
    if !nobody_possible() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let base = world_dir();
    // A directory it may not write: refused before anything (exit 2).
    let ro = base.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    plant_lookalikes(&ro);
    let before = snapshot(&ro);
    let out = as_nobody(&["run", "--op", "write", "--size", "1m", s(&ro)])
        .output()
        .unwrap();
    assert_no_panic(&out);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("permission denied"),
        "{}",
        stderr(&out)
    );
    assert_intact(&ro, &before, "");

    // Mid-run: the data file loses its permissions while it is written, so
    // the read phase cannot open it: exit 1 naming open and the file, the
    // write phase saved, the files removed, the rest intact.
    let t = base.path().join("t");
    std::fs::create_dir(&t).unwrap();
    plant_lookalikes(&t);
    std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o777)).unwrap();
    let before = snapshot(&t);
    let out_dir = base.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    std::fs::set_permissions(&out_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let j = out_dir.join("r.json");
    let mut child = as_nobody(&[
        "run",
        "--op",
        "write,read",
        "--size",
        "16m",
        "--xfer",
        "64k",
        "--sync",
        "each",
        "--json",
        s(&j),
        "-q",
        s(&t),
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let data = t.join("ioscale.d/file.00000000");
    wait_until(&mut child, "data was written", || len(&data) >= 64 * K);
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o000)).unwrap();
    let out = finish(child, Duration::from_secs(300));
    assert_code(&out, 1);
    let line = error_line(&stderr(&out), "open", s(&data), None);
    assert!(line.contains("Permission denied"), "{line}");
    let v = json(&j);
    the_error(&v, "open", 13, s(&data));
    let ph = phases(&v);
    assert_eq!(ph[0]["op"], "write");
    assert_eq!(ph[0]["bytes"].as_u64(), Some(16 * M));
    assert_intact(&t, &before, "cleanup ran; foreign files intact");
}

#[test]
fn working_directory_removed_mid_run() {
    let t = scratch();
    let tp = t.path();
    plant_lookalikes(tp);
    let before = snapshot(tp);
    let o = scratch();
    let j = o.path().join("r.json");
    let mut child = spawn(&[
        "run",
        "--op",
        "write,read",
        "--size",
        "2g",
        "--xfer",
        "64k",
        "--sync",
        "each",
        "--json",
        s(&j),
        "-q",
        s(tp),
    ]);
    let root = tp.join("ioscale.d");
    let data = root.join("file.00000000");
    wait_until(&mut child, "data was written", || len(&data) >= M);
    std::fs::remove_dir_all(&root).unwrap();
    let out = finish(child, Duration::from_secs(60));
    assert_code(&out, 1);
    let err = stderr(&out);
    let line = error_line(&err, "write", s(&data), None);
    assert!(line.contains("at offset "), "{line}");
    assert!(line.contains("deleted"), "{line}");
    assert!(!err.contains("could not remove"), "cleanup is quiet: {err}");
    let v = json(&j);
    let e = the_error(&v, "write", 2, s(&data));
    let off = e["offset"].as_u64().unwrap();
    assert!(
        phases(&v).is_empty(),
        "no result, and no read after the failed write"
    );
    let f = &v["failed_phases"][0];
    assert!(
        off >= M && off <= f["partial_bytes"].as_u64().unwrap(),
        "{e}"
    );
    assert_intact(tp, &before, "");

    // meta: the tree vanishes under the creates.
    let mut child = spawn(&[
        "meta",
        "--ops",
        "create,delete",
        "--files",
        "300000",
        "--file-size",
        "0",
        "--json",
        s(&j),
        "-q",
        s(tp),
    ]);
    let root = tp.join("ioscale-meta.d");
    wait_until(&mut child, "files were created", || {
        count_entries(&root.join("thr.000")) > 1000
    });
    rm_rf_while_busy(&root);
    let out = finish(child, Duration::from_secs(60));
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(
        err.lines().any(|l| l.contains(" error: ")
            && l.contains("ioscale-meta.d/thr.000")
            && l.contains("No such file")),
        "{err}"
    );
    assert!(!err.contains("could not remove"), "cleanup is quiet: {err}");
    let v = json(&j);
    assert_eq!(v["errors"][0]["errno"].as_i64(), Some(2), "{}", v["errors"]);
    // The create phase ran over 1000 files before the tree went: as a
    // failed phase (partial count) when the removal caught it mid-way, or
    // as a result when it finished first and the delete phase failed.
    let created: u64 = phases(&v)
        .iter()
        .filter(|p| p["op"] == "create")
        .map(|p| p["ops"].as_u64().unwrap())
        .chain(
            v["failed_phases"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["op"] == "create")
                .map(|p| p["partial_ops"].as_u64().unwrap()),
        )
        .sum();
    assert!(created > 1000, "{v}");
    assert!(!v["failed_phases"].as_array().unwrap().is_empty(), "{v}");
    assert_intact(tp, &before, "");
}

/// `rm -rf` of a tree something keeps creating entries in: retried until
/// the tree is gone.
fn rm_rf_while_busy(root: &Path) {
    for _ in 0..200 {
        match std::fs::remove_dir_all(root) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    panic!("could not remove {}", root.display());
}

#[test]
fn emfile_with_many_files_open() {
    if !have("prlimit") {
        eprintln!("note: prlimit missing; skipping");
        return;
    }
    let t = scratch();
    let tp = t.path();
    plant_lookalikes(tp);
    let before = snapshot(tp);
    let o = scratch();
    let j = o.path().join("r.json");
    for engine in ["sync", "io_uring"] {
        let out = Command::new("prlimit")
            .arg("--nofile=24")
            .arg(ioscale_path())
            .args([
                "run",
                "--op",
                "write",
                "--engine",
                engine,
                "--threads",
                "64",
                "--layout",
                "per-thread",
                "--size",
                "256k",
                "--xfer",
                "4k",
                "--sync",
                "each",
                "--json",
                s(&j),
                "-q",
                s(tp),
            ])
            .output()
            .unwrap();
        assert_no_panic(&out);
        assert_code(&out, 1);
        let err = stderr(&out);
        let first: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("Too many open files"))
            .collect();
        assert_eq!(first.len(), 1, "one line, not one per worker:\n{err}");
        assert!(first[0].contains("/ioscale.d/file.000000"), "{err}");
        let v = json(&j);
        let errs = v["errors"].as_array().unwrap();
        assert!(!errs.is_empty());
        for e in errs {
            assert_eq!(e["errno"].as_i64(), Some(24), "{e}");
            assert!(e["file"].as_str().unwrap().contains("/ioscale.d/file."));
        }
        if errs.len() > 1 {
            assert!(err.contains("more failure(s) with the same error"), "{err}");
        }
        assert_intact(tp, &before, engine);
    }
}

/// Runs `args` and checks that `dir` is as `before`.
fn intact_after(dir: &Path, before: &Tree, args: &[&str], code: i32) {
    let out = run(args);
    assert_code(&out, code);
    assert_intact(dir, before, &format!("after {args:?}"));
}

#[test]
fn lookalikes_survive_every_command_and_failure() {
    // Success on the repository's file system.
    let t = scratch();
    let tp = t.path();
    plant_lookalikes(tp);
    let before = snapshot(tp);
    let ts = s(tp);
    let ior_o = tp.join("ior.bin");
    let dd_of = format!("of={}/dd-{{}}", ts);
    for layout in ["shared", "per-thread", "per-thread-dir"] {
        intact_after(
            tp,
            &before,
            &[
                "run",
                "--op",
                "write,read",
                "--verify",
                "--threads",
                "2",
                "--layout",
                layout,
                "--size",
                "256k",
                "--xfer",
                "64k",
                "-q",
                ts,
            ],
            0,
        );
    }
    intact_after(tp, &before, &["meta", "--files", "50", "-q", ts], 0);
    intact_after(
        tp,
        &before,
        &[
            "sweep",
            "--threads",
            "1,2",
            "--",
            "run",
            "--op",
            "write",
            "--size",
            "64k",
            "--xfer",
            "64k",
            ts,
        ],
        0,
    );
    intact_after(
        tp,
        &before,
        &[
            "ior",
            "-w",
            "-r",
            "-F",
            "-N",
            "1",
            "-b",
            "256k",
            "-t",
            "64k",
            "-o",
            s(&ior_o),
        ],
        0,
    );
    // IOR with 2 tasks would write ior.bin.00000001, which is not ioscale's.
    intact_after(
        tp,
        &before,
        &[
            "ior",
            "-w",
            "-F",
            "-N",
            "2",
            "-b",
            "64k",
            "-t",
            "64k",
            "-o",
            s(&ior_o),
        ],
        2,
    );
    intact_after(
        tp,
        &before,
        &[
            "dd",
            "--jobs",
            "2",
            "--rm",
            "if=/dev/zero",
            &dd_of,
            "bs=64k",
            "count=4",
        ],
        0,
    );
    // Kept, then cleaned by marker.
    assert_code(
        &run(&[
            "run", "--op", "write", "--keep", "--size", "64k", "--xfer", "64k", "-q", ts,
        ]),
        0,
    );
    let now = snapshot(tp);
    assert!(now.contains_key("ioscale.d/file.00000000"));
    for (k, v) in &before {
        assert!(now.get(k) == Some(v), "{k} changed");
    }
    intact_after(tp, &before, &["clean", ts], 0);

    // Failures: a full tmpfs under every command.
    let Some(m) = tmpfs("size=4m") else {
        return;
    };
    let mp = m.path();
    plant_lookalikes(mp);
    let before = snapshot(mp);
    let ms = s(mp);
    let ior_o = mp.join("ior.bin");
    let dd_of = format!("of={}/dd-{{}}", ms);
    intact_after(
        mp,
        &before,
        &[
            "run", "--op", "write", "--size", "16m", "--xfer", "64k", "-q", ms,
        ],
        1,
    );
    intact_after(
        mp,
        &before,
        &[
            "meta",
            "--ops",
            "create,delete",
            "--files",
            "400",
            "--file-size",
            "64k",
            "-q",
            ms,
        ],
        1,
    );
    intact_after(
        mp,
        &before,
        &[
            "sweep",
            "--threads",
            "1,2",
            "--",
            "run",
            "--op",
            "write",
            "--size",
            "8m",
            "--xfer",
            "64k",
            ms,
        ],
        1,
    );
    intact_after(
        mp,
        &before,
        &[
            "ior",
            "-w",
            "-F",
            "-N",
            "1",
            "-b",
            "16m",
            "-t",
            "64k",
            "-o",
            s(&ior_o),
        ],
        1,
    );
    intact_after(
        mp,
        &before,
        &[
            "dd",
            "--jobs",
            "2",
            "--rm",
            "if=/dev/zero",
            &dd_of,
            "bs=64k",
            "count=128",
        ],
        1,
    );
}

#[test]
fn a_buffer_the_system_will_not_give_is_an_error_not_an_abort() {
    // Under an address-space limit of 1 GiB a 1 GiB transfer buffer cannot
    // be had: the worker reports it (exit 1, one line naming the buffer),
    // the record is written and the run's files are removed; before, the
    // allocation aborted the process (SIGABRT) and left ioscale.d behind.
    if !have("prlimit") {
        eprintln!("note: prlimit missing; skipping");
        return;
    }
    let t = scratch();
    let tp = t.path();
    plant_lookalikes(tp);
    let before = snapshot(tp);
    let o = scratch();
    let j = o.path().join("r.json");
    let out = Command::new("prlimit")
        .arg("--as=1073741824")
        .arg(ioscale_path())
        .args([
            "run",
            "--op",
            "write",
            "--xfer",
            "1g",
            "--size",
            "1g",
            "--json",
            s(&j),
            "-q",
            s(tp),
        ])
        .output()
        .unwrap();
    assert_no_panic(&out);
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("buffer"), "{err}");
    let v = json(&j);
    assert_eq!(v["errors"][0]["errno"], 12, "{v}");
    assert_eq!(v["errors"][0]["op"], "allocate buffer", "{v}");
    assert_eq!(v["failed_phases"][0]["op"], "write", "{v}");
    assert_intact(tp, &before, "after a refused buffer");
}
