//! The io_uring engines through the `ioscale` binary: `run --engine
//! io_uring --uring-opts …`, `meta --engine io_uring --iodepth N`, the
//! flags' bad values, the errors the kernel or a file system returns with
//! requests in flight, and SIGINT with requests in flight.

mod common;
#[path = "support/rel.rs"]
mod rel;

use std::path::Path;
use std::time::Duration;

use common::fuse::TestFs;
use common::*;
use rel::*;
use serde_json::Value;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Exit 2, one line naming `flag`, and nothing created in `t`.
fn refused(args: &[&str], t: &Path, flag: &str) {
    let before = snapshot(t);
    let mut all = args.to_vec();
    all.push(s(t));
    let out = run(&all);
    assert_code(&out, 2);
    let err = stderr(&out);
    assert!(err.contains(flag), "{args:?}: no {flag} in: {err}");
    assert_eq!(snapshot(t), before, "{args:?} created something");
}

#[test]
fn bad_engine_flags_exit_2_naming_the_flag() {
    let t = scratch();
    let tp = t.path();
    plant_foreign(tp);
    let run_cases: &[(&[&str], &str)] = &[
        (&["--engine", "posixaio"], "--engine posixaio"),
        (&["--engine", ""], "--engine"),
        (&["--iodepth", "8"], "--iodepth 8"),
        (&["--engine", "io_uring", "--iodepth", "0"], "--iodepth"),
        (&["--engine", "io_uring", "--iodepth", "-3"], "--iodepth"),
        (&["--engine", "io_uring", "--iodepth", "99999"], "--iodepth"),
        (
            &["--engine", "io_uring", "--uring-opts", "bogus"],
            "--uring-opts",
        ),
        (
            &["--engine", "io_uring", "--uring-opts", "sqpoll=0"],
            "--uring-opts",
        ),
        (
            &["--engine", "io_uring", "--uring-opts", "sqpoll=x"],
            "--uring-opts",
        ),
        (
            &["--engine", "io_uring", "--uring-opts", ""],
            "--uring-opts",
        ),
        (&["--uring-opts", "fixedbufs"], "--uring-opts"),
    ];
    for (args, flag) in run_cases {
        let mut a = vec!["run", "--size", "1m"];
        a.extend_from_slice(args);
        refused(&a, tp, flag);
    }
    let meta_cases: &[(&[&str], &str)] = &[
        (&["--engine", "aio"], "--engine aio"),
        (&["--iodepth", "8"], "--iodepth 8"),
        (&["--engine", "io_uring", "--iodepth", "0"], "--iodepth"),
        (&["--engine", "io_uring", "--iodepth", "5000"], "--iodepth"),
        (&["--engine", "io_uring", "--iodepth", "x"], "--iodepth"),
        (
            &["--engine", "io_uring", "--ops", "create,setxattr,delete"],
            "--ops setxattr",
        ),
        (
            &["--engine", "io_uring", "--file-size", "2m"],
            "--file-size",
        ),
    ];
    for (args, flag) in meta_cases {
        let mut a = vec!["meta", "--files", "10"];
        a.extend_from_slice(args);
        refused(&a, tp, flag);
    }
}

/// `run --engine io_uring --uring-opts …` moves and verifies every byte,
/// and the record says which options were asked for.
#[test]
fn run_with_uring_opts_verifies_and_records_them() {
    let Some(m) = tmpfs("size=64m") else {
        return;
    };
    let o = scratch();
    for opts in ["fixedbufs,files,batch", "tuned", "coop,single", "sqpoll=10"] {
        let j = o.path().join("r.json");
        let out = run(&[
            "run",
            "--op",
            "write,randread",
            "--threads",
            "2",
            "--size",
            "4m",
            "--xfer",
            "4k",
            "--engine",
            "io_uring",
            "--iodepth",
            "16",
            "--uring-opts",
            opts,
            "--verify",
            "--json",
            s(&j),
            "-q",
            s(m.path()),
        ]);
        assert_code(&out, 0);
        let v = json(&j);
        assert_eq!(v["spec"]["engine"], "io_uring");
        assert_eq!(v["spec"]["iodepth"], 16);
        let want = spec::UringOpts::parse(opts).unwrap();
        let got: spec::UringOpts = serde_json::from_value(v["spec"]["uring_opts"].clone())
            .unwrap_or_else(|e| panic!("{opts}: uring_opts {e}: {}", v["spec"]));
        assert_eq!(got, want, "{opts}");
        let ph = phases(&v);
        assert_eq!(ph.len(), 2);
        check_phase(&ph[0], "write", 2, 8 << 20, 4096);
        check_phase(&ph[1], "randread", 2, 8 << 20, 4096);
        check_verified(&ph[1], 8 << 20);
        // A feature this kernel refused is a warning, said once.
        let w: Vec<&str> = v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let mut d = w.clone();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), w.len(), "a warning repeated: {w:?}");
        assert_empty(m.path());
    }
}

/// A spec without `uring_opts`, as written before the flag existed.
#[test]
fn run_without_uring_opts_records_none() {
    let t = scratch();
    let o = scratch();
    let j = o.path().join("r.json");
    let out = run(&[
        "run",
        "--size",
        "1m",
        "--engine",
        "uring",
        "--json",
        s(&j),
        "-q",
        s(t.path()),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    assert_eq!(
        v["spec"]["engine"], "io_uring",
        "the old spelling still works"
    );
    assert_eq!(v["spec"]["iodepth"], 32, "io_uring's own default depth");
    assert!(v["spec"].get("uring_opts").is_none(), "{}", v["spec"]);
}

fn meta_uring(target: &Path, json_path: &Path, extra: &[&str]) -> std::process::Output {
    let mut a = vec!["meta", "--engine", "io_uring", "--json", s(json_path), "-q"];
    a.extend_from_slice(extra);
    a.push(s(target));
    run(&a)
}

/// Every phase does all its operations and the data read back is what was
/// written; the tree is gone afterwards and foreign files are untouched.
fn meta_end_to_end(t: &Path, threads: &str, files: u64, depth: &str) {
    plant_foreign(t);
    let before = snapshot(t);
    let o = scratch();
    let j = o.path().join("m.json");
    let out = meta_uring(
        t,
        &j,
        &[
            "--ops",
            "create,stat,read,rename,delete,mkdir,stat-dir,rmdir",
            "--threads",
            threads,
            "--files",
            &files.to_string(),
            "--file-size",
            "6k",
            "--record-size",
            "4k",
            "--iodepth",
            depth,
            "--verify",
        ],
    );
    assert_code(&out, 0);
    let v = json(&j);
    assert_eq!(v["spec"]["engine"], "io_uring");
    assert_eq!(v["spec"]["iodepth"].as_str(), None);
    assert_eq!(v["spec"]["iodepth"].to_string(), depth);
    let n: u64 = threads.parse::<u64>().unwrap() * files;
    let ph = phases(&v);
    let names: Vec<&str> = ph.iter().map(|p| p["op"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["create", "stat", "read", "rename", "delete", "mkdir", "stat-dir", "rmdir"]
    );
    for p in ph {
        assert_eq!(u(&p["ops"]), n, "{}", p["op"]);
        assert_eq!(u(&p["errors"]), 0, "{}", p["op"]);
    }
    assert_eq!(u(&ph[0]["bytes"]), n * 6144, "create wrote every byte");
    assert_eq!(u(&ph[2]["bytes"]), n * 6144, "read read every byte");
    assert_eq!(u(&ph[2]["verify"]["bad_bytes"]), 0);
    assert_eq!(before, snapshot(t), "the tree was not removed");
}

#[test]
fn meta_io_uring_end_to_end_on_tmpfs() {
    let Some(m) = tmpfs("size=64m") else {
        return;
    };
    meta_end_to_end(m.path(), "2", 300, "16");
}

#[test]
fn meta_io_uring_end_to_end_on_a_slow_fuse_fs() {
    let Some(fs) = TestFs::mount(&["--meta-delay", "2ms"]) else {
        return;
    };
    meta_end_to_end(fs.path(), "1", 96, "32");
    let (st, log) = fs.stop();
    assert!(st.success(), "{log}");
}

/// ENOSPC in the middle of a queued create phase: exit 1, the error names
/// the operation, file and errno, the partial phase is kept, and cleanup
/// removes everything that was made.
#[test]
fn meta_io_uring_enospc_is_reported_and_cleaned_up() {
    let Some(m) = tmpfs("size=1m") else {
        return;
    };
    let t = m.path();
    plant_foreign(t);
    let before = snapshot(t);
    let o = scratch();
    let j = o.path().join("m.json");
    let out = meta_uring(
        t,
        &j,
        &[
            "--ops",
            "create,stat,delete",
            "--files",
            "2000",
            "--file-size",
            "64k",
            "--iodepth",
            "32",
        ],
    );
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("ioscale-meta.d/thr.00"), "{err}");
    let v = json(&j);
    let e = &v["errors"][0];
    assert_eq!(u(&e["errno"]), 28, "{e}");
    assert!(
        e["file"].as_str().unwrap().contains("/ioscale-meta.d/"),
        "{e}"
    );
    // The failed create is no result: it is kept under failed_phases
    // with its partial count, and the stat phase never started.
    assert!(phases(&v).is_empty(), "{v}");
    let failed = v["failed_phases"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "stat never started");
    assert_eq!(failed[0]["op"], "create", "{}", failed[0]);
    assert!(u(&failed[0]["partial_ops"]) < 2000, "{}", failed[0]);
    assert_eq!(before, snapshot(t), "cleanup left something behind");
}

/// EIO from the file system on a queued write: exit 1 with errno 5.
#[test]
fn meta_io_uring_eio_is_reported_and_cleaned_up() {
    let Some(fs) = TestFs::mount(&["--eio-after-ops", "40"]) else {
        return;
    };
    let t = fs.path().to_path_buf();
    let o = scratch();
    let j = o.path().join("m.json");
    let out = meta_uring(
        &t,
        &j,
        &[
            "--ops",
            "create,read,delete",
            "--files",
            "200",
            "--file-size",
            "4k",
            "--iodepth",
            "16",
        ],
    );
    assert_code(&out, 1);
    let v = json(&j);
    let e = &v["errors"][0];
    assert_eq!(u(&e["errno"]), 5, "{e}");
    assert!(
        e["file"].as_str().unwrap().contains("/ioscale-meta.d/"),
        "{e}"
    );
    // The failed create is no result: it is kept under failed_phases
    // with its partial count, and the read phase never started.
    assert!(phases(&v).is_empty(), "{v}");
    let failed = v["failed_phases"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "read never started");
    assert_eq!(failed[0]["op"], "create", "{}", failed[0]);
    assert!(u(&failed[0]["partial_ops"]) < 200, "{}", failed[0]);
    assert_eq!(count_entries(&t), 0, "cleanup left something behind");
    let (st, log) = fs.stop();
    assert!(st.success(), "{log}");
}

/// SIGINT while one thread keeps 32 creates in flight on a slow file
/// system: exit 130, the partial phase marked interrupted, nothing left.
#[test]
fn meta_io_uring_sigint_with_requests_in_flight() {
    let Some(fs) = TestFs::mount(&["--meta-delay", "2ms"]) else {
        return;
    };
    let t = fs.path().to_path_buf();
    let o = scratch();
    let j = o.path().join("m.json");
    let mut child = spawn(&[
        "meta",
        "--engine",
        "io_uring",
        "--iodepth",
        "32",
        "--ops",
        "create,stat,delete",
        "--files",
        "1000000",
        "--file-size",
        "0",
        "--json",
        s(&j),
        "-q",
        s(&t),
    ]);
    let d = t.join("ioscale-meta.d");
    wait_until(&mut child, "files were created", || count_entries(&d) > 300);
    signal(&child, libc::SIGINT);
    let out = finish(child, Duration::from_secs(120));
    assert_code(&out, 130);
    let v = json(&j);
    assert_eq!(v["interrupted"], true);
    let ph = phases(&v);
    assert_eq!(ph.len(), 1);
    assert_eq!(ph[0]["interrupted"], true);
    assert!(u(&ph[0]["ops"]) > 0);
    assert_eq!(count_entries(&t), 0, "left behind after the interrupt");
    let (st, log) = fs.stop();
    assert!(st.success(), "{log}");
}

/// SIGINT with 64 reads in flight on one worker: exit 130, and
/// the data files are removed.
#[test]
fn run_io_uring_sigint_with_requests_in_flight() {
    let t = scratch();
    let tp = t.path();
    plant_foreign(tp);
    let before = snapshot(tp);
    let o = scratch();
    let j = o.path().join("r.json");
    let mut child = spawn(&[
        "run",
        "--op",
        "write,randread",
        "--size",
        "32m",
        "--xfer",
        "4k",
        "--engine",
        "io_uring",
        "--iodepth",
        "64",
        "--uring-opts",
        "tuned,batch",
        "--reps",
        "100000",
        "--json",
        s(&j),
        "-q",
        s(tp),
    ]);
    wait_until(&mut child, "the data file was written", || {
        len(&tp.join("ioscale.d/shared.dat")) >= 32 << 20
            || len(&tp.join("ioscale.d/file.00000000")) >= 32 << 20
    });
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGINT);
    let out = finish(child, Duration::from_secs(60));
    assert_code(&out, 130);
    let v = json(&j);
    assert_eq!(v["interrupted"], true);
    assert_intact(tp, &before, "after SIGINT");
}

/// `sweep --iodepth` is an axis: one series per depth, each point run with
/// its depth, for `meta` and `run`; bad depths are refused before any point.
#[test]
fn sweep_over_iodepth() {
    let t = scratch();
    let tp = t.path();
    let o = scratch();
    let j = o.path().join("s.json");
    let out = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--iodepth",
        "1,8",
        "--json",
        s(&j),
        "--",
        "meta",
        "--engine",
        "io_uring",
        "--ops",
        "create,stat,delete",
        "--files",
        "40",
        s(tp),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    assert_eq!(v["config"]["iodepth"], serde_json::json!([1, 8]));
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    for (p, (series, depth)) in points.iter().zip([
        ("depth 1", 1),
        ("depth 1", 1),
        ("depth 8", 8),
        ("depth 8", 8),
    ]) {
        assert_eq!(p["series"], series, "{p}");
        // Depth 1 is the default, left out of the record.
        let d = p["result"]["spec"]["iodepth"].as_u64().unwrap_or(1);
        assert_eq!(d, depth, "{}", p["result"]["spec"]);
        assert_eq!(p["result"]["spec"]["engine"], "io_uring");
        for ph in phases(&p["result"]) {
            assert_eq!(u(&ph["errors"]), 0, "{ph}");
        }
    }
    assert_empty(tp);

    let out = run(&[
        "sweep",
        "--threads",
        "1",
        "--iodepth",
        "4,16",
        "--json",
        s(&j),
        "--",
        "run",
        "--engine",
        "io_uring",
        "--op",
        "write,randread",
        "--size",
        "1m",
        "--xfer",
        "4k",
        s(tp),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    let depths: Vec<u64> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| u(&p["result"]["spec"]["iodepth"]))
        .collect();
    assert_eq!(depths, [4, 16]);
    assert_empty(tp);

    for (depth, inner_engine, flag) in [
        ("0", "io_uring", "--iodepth"),
        ("1,x", "io_uring", "--iodepth"),
        ("1,8", "sync", "--iodepth 8"),
    ] {
        let out = run(&[
            "sweep",
            "--threads",
            "1",
            "--iodepth",
            depth,
            "--",
            "meta",
            "--engine",
            inner_engine,
            "--files",
            "10",
            s(tp),
        ]);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(err.contains(flag), "{depth} {inner_engine}: {err}");
        assert_empty(tp);
    }
}

/// The default submission (`each`) costs one io_uring_enter per request:
/// the last request of a refill goes with the wait for completions instead
/// of a submit of its own followed by the wait (which was two calls per
/// request at depth 1). Counted with strace, so not a timing.
#[test]
fn each_submission_is_one_enter_per_request() {
    if !have("strace") {
        eprintln!("note: strace not installed; skipping");
        return;
    }
    let t = scratch();
    let tp = t.path();
    let out = run(&[
        "run",
        "--op",
        "write",
        "--size",
        "8m",
        "--xfer",
        "1m",
        "--keep",
        "-q",
        s(tp),
    ]);
    assert_code(&out, 0);
    let o = scratch();
    for depth in ["1", "8"] {
        let log = o.path().join(format!("strace.{depth}"));
        let st = std::process::Command::new("strace")
            .args(["-f", "-c", "-e", "trace=io_uring_enter", "-o", s(&log)])
            .arg(ioscale_path())
            .args([
                "run",
                "--op",
                "randread",
                "--size",
                "8m",
                "--xfer",
                "4k",
                "--keep",
                "--engine",
                "io_uring",
                "--iodepth",
                depth,
                "-q",
                s(tp),
            ])
            .output()
            .unwrap();
        assert_code(&st, 0);
        // strace -c: "% time  seconds  usecs/call  calls  [errors]  syscall".
        let text = std::fs::read_to_string(&log).unwrap();
        let enters: usize = text
            .lines()
            .find(|l| l.trim_end().ends_with(" io_uring_enter"))
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("no io_uring_enter count in:\n{text}"));
        // 2048 requests of 4 KiB; a few more calls for the final drain.
        assert!(
            (2048..=2048 + 16).contains(&enters),
            "depth {depth}: {enters} io_uring_enter calls for 2048 requests"
        );
    }
    let out = run(&["clean", s(tp)]);
    assert_code(&out, 0);
}

/// One thread whose files span several directories keeps requests to
/// several of them in flight (round robin over up to `--iodepth`
/// directories): every file is still done once, in the right directory,
/// with a short last directory.
#[test]
fn meta_io_uring_round_robin_over_directories() {
    let Some(m) = tmpfs("size=64m") else {
        return;
    };
    let t = m.path();
    let o = scratch();
    let j = o.path().join("m.json");
    let args = [
        "--threads",
        "1",
        "--files",
        "47",
        "--files-per-dir",
        "5",
        "--iodepth",
        "4",
    ];
    let mut a = vec!["--ops", "create", "--keep", "--file-size", "1k"];
    a.extend_from_slice(&args);
    assert_code(&meta_uring(t, &j, &a), 0);
    // 47 files, 5 to a directory: 9 full directories and one with 2.
    let base = t.join("ioscale-meta.d/thr.000");
    let mut per_dir = std::collections::BTreeMap::new();
    for e in walkdir(&base) {
        if e.is_file() {
            *per_dir
                .entry(e.parent().unwrap().to_path_buf())
                .or_insert(0) += 1;
        }
    }
    let mut counts: Vec<u32> = per_dir.values().copied().collect();
    counts.sort_unstable();
    assert_eq!(counts, [2, 5, 5, 5, 5, 5, 5, 5, 5, 5], "{per_dir:?}");

    // A directory where file 23 should be: the read fails, and the error
    // names that file in its own directory, not the directory the thread
    // was issuing into when the failure came back.
    let victim = per_dir
        .keys()
        .flat_map(|d| std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()))
        .find(|p| p.file_name().unwrap().to_str().unwrap().ends_with(".23"))
        .expect("file 23");
    std::fs::remove_file(&victim).unwrap();
    std::fs::create_dir(&victim).unwrap();
    let mut a = vec!["--ops", "read", "--keep", "--file-size", "1k"];
    a.extend_from_slice(&args);
    let out = meta_uring(t, &j, &a);
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains(victim.to_str().unwrap()),
        "{victim:?} not in: {err}"
    );
}

/// A thread going round robin over its hashed directories makes and opens
/// them through the ring, all at once, not with a `mkdirat` and an
/// `openat2` system call per directory one after another (on a 2 ms FUSE
/// server those kept the worker out of the ring for a quarter of a create
/// phase). Seen with strace, so not a timing; the tree is the same.
#[test]
fn meta_io_uring_makes_a_groups_directories_through_the_ring() {
    if !have("strace") {
        eprintln!("note: strace not installed; skipping");
        return;
    }
    let Some(m) = tmpfs("size=64m") else {
        return;
    };
    let t = m.path();
    let o = scratch();
    let log = o.path().join("strace");
    let st = std::process::Command::new("strace")
        .args(["-f", "-e", "trace=mkdirat,mkdir,openat2", "-o", s(&log)])
        .arg(ioscale_path())
        .args(["meta", "--engine", "io_uring", "--iodepth", "8"])
        .args(["--threads", "1", "--files", "64", "--files-per-dir", "4"])
        .args(["--dirs-per-dir", "4", "--file-size", "0"])
        .args(["--ops", "create", "--keep", "-q", s(t)])
        .output()
        .unwrap();
    assert_code(&st, 0);
    let text = std::fs::read_to_string(&log).unwrap();
    let hashed: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("mkdirat(") && l.contains("\"h"))
        .collect();
    assert!(hashed.is_empty(), "made one by one: {hashed:#?}");
    // 64 files, 4 to a directory: 16 directories of 4, in a tree of 4
    // to a parent.
    let base = t.join("ioscale-meta.d/thr.000");
    let mut per_dir = std::collections::BTreeMap::new();
    for e in walkdir(&base) {
        *per_dir
            .entry(e.parent().unwrap().to_path_buf())
            .or_insert(0) += 1;
    }
    assert_eq!(per_dir.len(), 16, "{per_dir:?}");
    assert!(per_dir.values().all(|&n| n == 4), "{per_dir:?}");
    assert!(base.join("h0/h0").is_dir(), "a second level: {per_dir:?}");
    let c = ioscale().args(["clean", s(t)]).output().unwrap();
    assert_code(&c, 0);
}

fn walkdir(d: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walkdir(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// One `run --engine io_uring` write-then-verified-read of 8 MiB on `dir`
/// with `--uring-opts opts`, with `refuse` in `IOSCALE_URING_REFUSE`:
/// checks the data and returns the record's io_uring warnings.
fn uring_run_with_refusals(dir: &Path, j: &Path, opts: &str, refuse: &str) -> Vec<String> {
    let out = ioscale()
        .env("IOSCALE_URING_REFUSE", refuse)
        .args([
            "run",
            "--op",
            "write,randread",
            "--threads",
            "2",
            "--size",
            "4m",
            "--xfer",
            "4k",
            "--engine",
            "io_uring",
            "--iodepth",
            "8",
            "--uring-opts",
            opts,
            "--verify",
            "--json",
            s(j),
            "-q",
            s(dir),
        ])
        .output()
        .unwrap();
    assert_no_panic(&out);
    assert_code(&out, 0);
    let v = json(j);
    let ph = phases(&v);
    check_phase(&ph[0], "write", 2, 8 << 20, 4096);
    check_phase(&ph[1], "randread", 2, 8 << 20, 4096);
    check_verified(&ph[1], 8 << 20);
    assert_empty(dir);
    v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|w| w.starts_with("io_uring:"))
        .map(String::from)
        .collect()
}

/// Every ring feature the kernel may refuse falls back to the plain way
/// with one note saying so, and the run still moves and verifies every
/// byte. This kernel refuses none of them, so the refusals are forced
/// through `IOSCALE_URING_REFUSE`.
#[test]
fn refused_ring_features_fall_back_with_a_note() {
    let Some(m) = tmpfs("size=64m") else {
        return;
    };
    let o = scratch();
    let j = o.path().join("r.json");
    let has = |w: &[String], what: &str| w.iter().filter(|x| x.contains(what)).count();
    let w = uring_run_with_refusals(
        m.path(),
        &j,
        "tuned",
        "single,coop,fixedbufs,files,ringfd,nosqarray",
    );
    for what in [
        "SINGLE_ISSUER/DEFER_TASKRUN not supported",
        "COOP_TASKRUN not supported",
        "registering buffers failed",
        "registering files failed",
        "NO_SQARRAY not supported",
        "registering the ring's descriptor failed",
    ] {
        assert_eq!(has(&w, what), 1, "{what}: {w:?}");
    }
    let w = uring_run_with_refusals(m.path(), &j, "fixedbufs,sqpoll=10", "sqpoll");
    assert_eq!(has(&w, "SQPOLL refused"), 1, "{w:?}");
    assert_eq!(w.len(), 1, "{w:?}");
    // The two features every ring asks for, refused under `plain`: a note
    // each, and nothing else.
    let w = uring_run_with_refusals(m.path(), &j, "plain", "ringfd,nosqarray");
    assert_eq!(has(&w, "NO_SQARRAY not supported"), 1, "{w:?}");
    assert_eq!(
        has(&w, "registering the ring's descriptor failed"),
        1,
        "{w:?}"
    );
    assert_eq!(w.len(), 2, "{w:?}");
    // Nothing refused: the asked-for set runs without a note.
    let w = uring_run_with_refusals(m.path(), &j, "tuned", "");
    assert!(w.is_empty(), "{w:?}");
    // SQPOLL with the task-work flags: the kernel does not combine them;
    // SQPOLL is kept, the others left out with a note.
    let w = uring_run_with_refusals(m.path(), &j, "tuned,sqpoll=10", "");
    assert_eq!(has(&w, "not used with SQPOLL"), 1, "{w:?}");
    assert_eq!(w.len(), 1, "{w:?}");
}

/// What strace saw of the io_uring calls of one `run --op write,randread`
/// (1 MiB in 4 KiB requests, depth 4) with `opts` and `refuse` in
/// `IOSCALE_URING_REFUSE`: the set-up flags of each ring, the flags of
/// each io_uring_enter, and the io_uring_register operations, in order.
/// The bits strace printed in hex in a flag word (it names the flags it
/// knows and prints the rest as a number).
fn hex_bits(field: &str) -> u64 {
    field
        .split('|')
        .filter_map(|f| f.trim().strip_prefix("0x"))
        .map(|h| {
            let end = h.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(h.len());
            u64::from_str_radix(&h[..end], 16).unwrap()
        })
        .fold(0, |a, b| a | b)
}

struct UringCalls {
    setup_flags: Vec<u64>,
    enter_flags: Vec<String>,
    /// Each io_uring_enter's min_complete: how many completions it waited
    /// for.
    enter_waits: Vec<u32>,
    registers: Vec<String>,
}

fn uring_calls(dir: &Path, opts: &str, refuse: &str) -> UringCalls {
    let o = scratch();
    let log = o.path().join("strace");
    let st = std::process::Command::new("strace")
        .args([
            "-f",
            "-e",
            "trace=io_uring_setup,io_uring_enter,io_uring_register",
        ])
        .args(["-e", "abbrev=none", "-o", s(&log)])
        .arg(ioscale_path())
        .env("IOSCALE_URING_REFUSE", refuse)
        .args([
            "run",
            "--op",
            "write,randread",
            "--size",
            "1m",
            "--xfer",
            "4k",
        ])
        .args([
            "--engine",
            "io_uring",
            "--iodepth",
            "4",
            "--uring-opts",
            opts,
        ])
        .args(["--verify", "-q", s(dir)])
        .output()
        .unwrap();
    assert_code(&st, 0);
    let text = std::fs::read_to_string(&log).unwrap();
    let mut c = UringCalls {
        setup_flags: Vec::new(),
        enter_flags: Vec::new(),
        enter_waits: Vec::new(),
        registers: Vec::new(),
    };
    for l in text.lines() {
        if let Some(i) = l.find("io_uring_setup(") {
            let f = &l[i..];
            let f = &f[f.find("flags=").unwrap() + 6..];
            c.setup_flags.push(hex_bits(&f[..f.find(',').unwrap()]));
        } else if let Some(i) = l.find("io_uring_enter(") {
            // io_uring_enter(fd, to_submit, min_complete, flags, sig, size)
            let args: Vec<&str> = l[i + 15..].split(", ").collect();
            c.enter_flags.push(args[3].to_string());
            c.enter_waits.push(args[2].parse().unwrap());
        } else if let Some(i) = l.find("io_uring_register(") {
            let args: Vec<&str> = l[i + 18..].split(", ").collect();
            c.registers.push(args[1].to_string());
        }
    }
    // With SQPOLL the kernel's thread submits and a worker whose
    // completions are already posted never enters the ring (seen on a
    // quiet CI machine): only the other rings must be entered.
    assert!(
        opts.contains("sqpoll") || !c.enter_flags.is_empty(),
        "no io_uring_enter in:\n{text}"
    );
    c
}

/// Every ring is set up without the submission index array
/// (`IORING_SETUP_NO_SQARRAY`, 0x10000) and entered through the index its
/// worker registered (`IORING_REGISTER_RING_FDS`, then
/// `IORING_ENTER_REGISTERED_RING` on every io_uring_enter), given back at
/// the end of each phase; refused, the rings are set up and entered the
/// plain way (and the data still verifies). Seen with strace, so not a
/// timing.
#[test]
fn rings_skip_the_sq_array_and_are_entered_by_registered_index() {
    if !have("strace") {
        eprintln!("note: strace not installed; skipping");
        return;
    }
    const NO_SQARRAY: u64 = 0x10000;
    let registered =
        |f: &String| f.contains("IORING_ENTER_REGISTERED_RING") || hex_bits(f) & 0x10 != 0;
    let t = scratch();
    for opts in ["plain", "tuned", "tuned,batch", "fixedbufs,sqpoll=1000"] {
        let c = uring_calls(t.path(), opts, "");
        // The first ring is the preflight check's, made with no flags;
        // then the data rings (one per phase under SINGLE_ISSUER, else
        // one kept across phases).
        let (pre, data) = c.setup_flags.split_first().unwrap();
        assert_eq!(*pre & NO_SQARRAY, 0, "{opts}: {:?}", c.setup_flags);
        assert!(!data.is_empty(), "{opts}: {:?}", c.setup_flags);
        assert!(
            data.iter().all(|f| f & NO_SQARRAY != 0),
            "{opts}: {:?}",
            c.setup_flags
        );
        let plain = c.enter_flags.iter().filter(|f| !registered(f)).count();
        assert_eq!(plain, 0, "{opts}: {:?}", c.enter_flags);
        let n = |op: &str| c.registers.iter().filter(|r| *r == op).count();
        assert_eq!(
            n("IORING_REGISTER_RING_FDS"),
            2,
            "{opts}: {:?}",
            c.registers
        );
        assert_eq!(
            n("IORING_UNREGISTER_RING_FDS"),
            2,
            "{opts}: {:?}",
            c.registers
        );
        assert_empty(t.path());
    }
    let c = uring_calls(t.path(), "tuned", "ringfd,nosqarray");
    assert!(
        c.setup_flags.iter().all(|f| f & NO_SQARRAY == 0),
        "{:?}",
        c.setup_flags
    );
    assert!(
        c.enter_flags.iter().all(|f| !registered(f)),
        "{:?}",
        c.enter_flags
    );
    assert!(
        !c.registers.iter().any(|r| r.contains("RING_FDS")),
        "{:?}",
        c.registers
    );
    assert_empty(t.path());
}

/// `--uring-opts spin` waits for completions without sleeping in the
/// kernel: no io_uring_enter of the run waits for a completion
/// (min_complete 0: it submits, or runs the completion work the ring flags
/// as waiting), where without it many calls wait for one; with
/// and without the task-work flags (tuned), and the data still verifies.
/// Seen with strace, so not a timing.
#[test]
fn spin_waits_without_sleeping_in_the_kernel() {
    if !have("strace") {
        eprintln!("note: strace not installed; skipping");
        return;
    }
    let t = scratch();
    for opts in ["spin", "tuned,spin", "tuned,batch,spin"] {
        let c = uring_calls(t.path(), opts, "");
        assert!(
            c.enter_waits.iter().all(|&w| w == 0),
            "{opts}: {:?}",
            c.enter_waits
        );
        assert_empty(t.path());
    }
    // Without it, the worker sleeps in the kernel for completions: 1024
    // requests of 4 KiB in all, depth 4, at least one wait per 16.
    let c = uring_calls(t.path(), "tuned", "");
    let waits = c.enter_waits.iter().filter(|&&w| w > 0).count();
    assert!(waits >= 64, "{waits} waits: {:?}", c.enter_waits);
    assert_empty(t.path());
}

/// With SQPOLL the kernel thread takes requests from the ring and the
/// worker reaps completions from it without a system call:
/// `io_uring_enter` is called only to wake the thread, not once per
/// request as without it (see `each_submission_is_one_enter_per_request`).
/// The thread's idle time (1 s) outlasts the run, so it never sleeps
/// between requests. Counted with strace, so not a timing.
#[test]
fn sqpoll_submits_and_reaps_without_a_system_call_per_request() {
    if !have("strace") {
        eprintln!("note: strace not installed; skipping");
        return;
    }
    let t = scratch();
    let tp = t.path();
    let out = run(&[
        "run",
        "--op",
        "write",
        "--size",
        "8m",
        "--xfer",
        "1m",
        "--keep",
        "-q",
        s(tp),
    ]);
    assert_code(&out, 0);
    let o = scratch();
    for depth in ["1", "8"] {
        let log = o.path().join(format!("strace.{depth}"));
        let j = o.path().join("r.json");
        let st = std::process::Command::new("strace")
            .args(["-f", "-c", "-e", "trace=io_uring_enter", "-o", s(&log)])
            .arg(ioscale_path())
            .args([
                "run",
                "--op",
                "randread",
                "--size",
                "8m",
                "--xfer",
                "4k",
                "--keep",
                "--engine",
                "io_uring",
                "--iodepth",
                depth,
                "--uring-opts",
                "sqpoll=1000",
                "--json",
                s(&j),
                "-q",
                s(tp),
            ])
            .output()
            .unwrap();
        assert_code(&st, 0);
        let v = json(&j);
        if v["warnings"].to_string().contains("SQPOLL refused") {
            eprintln!("note: this kernel refuses SQPOLL; skipping");
            return;
        }
        assert_eq!(u(&phases(&v)[0]["ops"]), 2048);
        let text = std::fs::read_to_string(&log).unwrap();
        // strace -c: "% time  seconds  usecs/call  calls  [errors]  syscall";
        // no line at all when there was no call.
        let enters: usize = text
            .lines()
            .find(|l| l.trim_end().ends_with(" io_uring_enter"))
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        // 2048 requests; a wake-up or two, and the final drain.
        assert!(
            enters <= 16,
            "depth {depth}: {enters} io_uring_enter calls for 2048 requests with SQPOLL"
        );
    }
    let out = run(&["clean", s(tp)]);
    assert_code(&out, 0);
}

/// Runs `ioscale meta --engine io_uring --iodepth 32` creating, stating
/// and deleting `files` empty files in one directory on `dir`, and returns
/// the most io-wq worker threads (`iou-wrk-*`) seen alive in the process
/// at once, polling /proc until it exits.
fn peak_iowq_workers(dir: &Path, files: &str) -> usize {
    let mut child = std::process::Command::new(ioscale_path())
        .args([
            "meta",
            "--engine",
            "io_uring",
            "--iodepth",
            "32",
            "--threads",
            "1",
            "--files",
            files,
            "--file-size",
            "0",
            "--ops",
            "create,stat,delete",
            "-q",
            s(dir),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let tasks = format!("/proc/{}/task", child.id());
    let mut peak = 0;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success(), "ioscale meta failed: {st:?}");
            return peak;
        }
        let alive = std::fs::read_dir(&tasks)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.starts_with("iou-wrk"))
            })
            .count();
        peak = peak.max(alive);
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The io-wq worker cap follows the file system: on a local one (tmpfs)
/// the work is CPU-bound and the ring allows no more workers than CPUs;
/// on a FUSE fs with 2 ms per request the cap is `--iodepth`, so more
/// requests are served at once than there are CPUs. Upper bound on tmpfs
/// whatever the timing; on FUSE the workers wait for the daemon and stay
/// until the ring goes, so the poll sees them.
#[test]
fn iowq_cap_is_the_cpus_on_tmpfs_and_the_depth_on_fuse() {
    let cpus = std::thread::available_parallelism().unwrap().get();
    if std::env::var_os("IOSCALE_URING_IOWQ").is_some() {
        eprintln!("note: IOSCALE_URING_IOWQ is set; skipping");
        return;
    }
    if let Some(m) = tmpfs("size=64m") {
        let peak = peak_iowq_workers(m.path(), "20000");
        assert!(
            peak <= cpus,
            "{peak} io-wq workers on tmpfs with {cpus} CPUs"
        );
    }
    if cpus >= 16 {
        eprintln!("note: {cpus} CPUs: the FUSE part needs fewer than 16; skipping");
        return;
    }
    let Some(fs) = TestFs::mount(&["--meta-delay", "2ms", "--threads", "32"]) else {
        return;
    };
    let peak = peak_iowq_workers(fs.path(), "256");
    let (st, log) = fs.stop();
    assert!(st.success(), "{log}");
    assert!(
        peak > cpus,
        "{peak} io-wq workers on a 2 ms FUSE fs at depth 32 with {cpus} CPUs"
    );
}

/// The measurement knobs of the metadata engine (`IOSCALE_URING_ASYNC`,
/// `IOSCALE_URING_IOWQ`) change how requests are served, not what is
/// done: every phase does every file, the data reads back as written, and
/// the tree is removed. A bad cap value falls back to the rule.
#[test]
fn meta_io_uring_measurement_knobs_do_every_operation() {
    let Some(m) = tmpfs("size=64m") else {
        return;
    };
    let o = scratch();
    let j = o.path().join("m.json");
    for (asy, cap) in [("1", "kernel"), ("1", "depth"), ("0", "3"), ("1", "bogus")] {
        let out = ioscale()
            .env("IOSCALE_URING_ASYNC", asy)
            .env("IOSCALE_URING_IOWQ", cap)
            .args([
                "meta",
                "--engine",
                "io_uring",
                "--iodepth",
                "16",
                "--threads",
                "2",
                "--files",
                "200",
                "--file-size",
                "6k",
                "--record-size",
                "4k",
                "--ops",
                "create,stat,read,rename,delete,mkdir,stat-dir,rmdir",
                "--verify",
                "--json",
                s(&j),
                "-q",
                s(m.path()),
            ])
            .output()
            .unwrap();
        assert_no_panic(&out);
        assert_code(&out, 0);
        let v = json(&j);
        for p in phases(&v) {
            assert_eq!(u(&p["ops"]), 400, "{asy}/{cap}: {}", p["op"]);
            assert_eq!(u(&p["errors"]), 0, "{asy}/{cap}: {}", p["op"]);
        }
        let ph = phases(&v);
        assert_eq!(u(&ph[2]["bytes"]), 400 * 6144, "{asy}/{cap}");
        assert_eq!(u(&ph[2]["verify"]["bad_bytes"]), 0, "{asy}/{cap}");
        assert_empty(m.path());
    }
}
