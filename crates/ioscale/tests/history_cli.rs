//! The results history end to end (issue 30): every measuring command
//! records its run, `ioscale history` reads it back, the regression gate
//! (`--baseline`, exit 3) flags a target made twice as slow and never ten
//! reruns, and a history that cannot be written (corrupt, locked,
//! read-only, full, newer) is one warning while the run's own outputs are
//! written. The history files are read back with Debian's `sqlite3`.
//!
//! Each test names its own history file (`--history`, or
//! `IOSCALE_HISTORY` for the front-ends); none writes the user's.

mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// `ioscale ARGS` recording in `db` (through the environment, as the
/// front-ends take it).
fn run_in(db: &Path, args: &[&str]) -> Output {
    let out = ioscale()
        .env("IOSCALE_HISTORY", db)
        .args(args)
        .output()
        .expect("running ioscale");
    assert_no_panic(&out);
    out
}

/// `sqlite3 -json DB SQL`, parsed (an empty result is an empty array).
fn sql(db: &Path, query: &str) -> Vec<Value> {
    let out = Command::new("sqlite3")
        .arg("-json")
        .arg(db)
        .arg(query)
        .output()
        .expect("the sqlite3 command line (apt-get install sqlite3)");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    if text.trim().is_empty() {
        Vec::new()
    } else {
        serde_json::from_str::<Value>(&text)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }
}

fn count(db: &Path, table: &str) -> u64 {
    sql(db, &format!("SELECT count(*) AS n FROM {table}"))[0]["n"]
        .as_u64()
        .unwrap()
}

fn history_warnings(out: &Output) -> usize {
    stderr(out).matches("warning: history:").count()
}

/// The README's first command (scaled down) records its run, and
/// `ioscale history list` right after shows it; the row, read with
/// `sqlite3`, holds what the run's JSON record says.
#[test]
fn the_readme_run_is_recorded_and_listed_right_after() {
    let d = scratch();
    let o = scratch();
    let data = o.path().join("data");
    let j = o.path().join("r.json");
    // The default file: $XDG_DATA_HOME/ioscale/history.db, made with its
    // directory.
    let out = ioscale()
        .env("XDG_DATA_HOME", &data)
        .args(["run", "--size", "8m", "--json", s(&j), s(d.path())])
        .output()
        .unwrap();
    assert_code(&out, 0);
    assert_eq!(history_warnings(&out), 0, "{}", stderr(&out));
    let db = data.join("ioscale/history.db");
    assert!(db.is_file());
    let list = ioscale()
        .env("XDG_DATA_HOME", &data)
        .args(["history", "list"])
        .output()
        .unwrap();
    assert_code(&list, 0);
    let text = stdout(&list);
    let target = d.path().canonicalize().unwrap().display().to_string();
    assert!(text.contains(&target) && text.contains(" run "), "{text}");
    assert!(text.contains("write ") && text.contains("MiB/s"), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.contains(&target)).count(),
        1,
        "{text}"
    );

    let rec = json(&j);
    let rows = sql(
        &db,
        "SELECT id, started, command, target, status, source, record FROM runs",
    );
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row["started"], rec["started"]);
    assert_eq!(row["target"], rec["host"]["target"]);
    assert_eq!(
        (row["status"].as_str(), row["source"].as_str()),
        (Some("ok"), Some("run"))
    );
    let command: Value = serde_json::from_str(row["command"].as_str().unwrap()).unwrap();
    assert_eq!(command, rec["command"]);
    let stored: Value = serde_json::from_str(row["record"].as_str().unwrap()).unwrap();
    assert_eq!(stored, rec, "the history keeps the record the run wrote");
    // The headline figures are the record's: one repetition, so the mean.
    for p in phases(&rec) {
        let f = sql(
            &db,
            &format!(
                "SELECT value, lo, hi, reps FROM figures WHERE op = '{}' AND metric = 'bw_mib_s'",
                p["op"].as_str().unwrap()
            ),
        );
        let (v, want) = (
            f[0]["value"].as_f64().unwrap(),
            p["bw_mib_s"].as_f64().unwrap(),
        );
        assert!((v - want).abs() <= 1e-9 * want, "{v} vs {want}");
        assert!(
            f[0]["lo"].is_null() && f[0]["hi"].is_null(),
            "one repetition: no interval"
        );
        assert_eq!(f[0]["reps"], 1);
    }
    // `show --record` gives the record back for `ioscale report`.
    let shown = ioscale()
        .env("XDG_DATA_HOME", &data)
        .args(["history", "show", "last", "--record"])
        .output()
        .unwrap();
    assert_code(&shown, 0);
    assert_eq!(serde_json::from_slice::<Value>(&shown.stdout).unwrap(), rec);
}

/// The same experiment typed in another flag order (and with sizes
/// written another way) is the same workload; another transfer size is
/// not.
#[test]
fn reruns_share_a_workload_key_whatever_the_flag_order() {
    let d = scratch();
    let o = scratch();
    let db = o.path().join("h.db");
    let t = s(d.path());
    for args in [
        vec![
            "run",
            "--op",
            "write,read",
            "--size",
            "4m",
            "--xfer",
            "256k",
            "-q",
            t,
        ],
        vec![
            "run",
            "-q",
            "--xfer",
            "262144",
            "--size",
            "4096k",
            t,
            "--op",
            "write,read",
        ],
        vec![
            "run",
            "--op",
            "write,read",
            "--size",
            "4m",
            "--xfer",
            "128k",
            "-q",
            t,
        ],
    ] {
        assert_code(&run_in(&db, &args), 0);
    }
    let keys: Vec<String> = sql(&db, "SELECT workload FROM runs ORDER BY id")
        .iter()
        .map(|r| r["workload"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys.len(), 3);
    assert_eq!(keys[0], keys[1]);
    assert_ne!(keys[0], keys[2]);
    let list = run_in(&db, &["history", "list", "--workload", &keys[0][..8]]);
    assert_eq!(
        stdout(&list)
            .lines()
            .filter(|l| l.contains(" run "))
            .count(),
        2
    );
}

/// Every measuring command records each of its runs once, under its own
/// name: run, meta, a sweep's points (one batch), ior, dd, mdtest,
/// smallfile, fio and io500.
#[test]
fn every_measuring_command_records_its_runs_once() {
    let d = scratch();
    let o = scratch();
    let db = o.path().join("h.db");
    let t = s(d.path());
    let ior = d.path().join("ior.bin");
    let of = d.path().join("dd.out");
    let md = d.path().join("md");
    let sf = d.path().join("sf");
    std::fs::create_dir(&sf).unwrap();
    let of_arg = format!("of={}", of.display());
    let dir_arg = format!("--directory={t}");
    let cmds: Vec<Vec<&str>> = vec![
        vec!["run", "--size", "2m", "-q", t],
        vec![
            "meta",
            "--ops",
            "create,stat,delete",
            "--files",
            "20",
            "-q",
            t,
        ],
        vec![
            "sweep",
            "--threads",
            "1,2",
            "-q",
            "--",
            "run",
            "--size",
            "1m",
            t,
        ],
        vec!["ior", "-w", "-r", "-t", "64k", "-b", "256k", "-o", s(&ior)],
        vec!["dd", "if=/dev/zero", &of_arg, "bs=64k", "count=16"],
        vec!["mdtest", "-n", "20", "-d", s(&md)],
        vec![
            "smallfile",
            "--operation",
            "create",
            "--files",
            "20",
            "--top",
            s(&sf),
        ],
        vec![
            "fio",
            "--name=j",
            "--rw=write",
            "--size=1m",
            "--bs=64k",
            &dir_arg,
        ],
    ];
    for c in &cmds {
        let out = run_in(&db, c);
        assert_code(&out, 0);
        assert_eq!(history_warnings(&out), 0, "{c:?}: {}", stderr(&out));
    }
    let _ = std::fs::remove_file(&of);
    let rows = sql(&db, "SELECT source, kind, count(*) AS n, count(DISTINCT batch) AS b FROM runs GROUP BY source, kind");
    let got: Vec<(String, String, u64, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["source"].as_str().unwrap().into(),
                r["kind"].as_str().unwrap().into(),
                r["n"].as_u64().unwrap(),
                r["b"].as_u64().unwrap(),
            )
        })
        .collect();
    for want in [
        ("run", "run", 1, 1),
        ("meta", "meta", 1, 1),
        ("sweep", "run", 2, 1),
        ("ior", "run", 1, 1),
        ("dd", "run", 1, 1),
        ("mdtest", "meta", 1, 1),
        ("smallfile", "meta", 1, 1),
        ("fio", "run", 1, 1),
    ] {
        let want = (want.0.to_string(), want.1.to_string(), want.2, want.3);
        assert!(got.contains(&want), "{want:?} not in {got:?}");
    }
    // Each has its headline figure.
    let bare = sql(&db, "SELECT id, source FROM runs WHERE id NOT IN (SELECT run_id FROM figures WHERE headline = 1)");
    assert!(bare.is_empty(), "{bare:?}");

    // io500: its score and phase scores.
    let work = scratch();
    let data = d.path().join("io500-data");
    std::fs::create_dir(&data).unwrap();
    let cfg = common::io500::ini(work.path(), &data, &work.path().join("res"), "");
    let out = run_in(
        &db,
        &["io500", "--tasks", "1", "--stonewall", "1s", s(&cfg)],
    );
    assert_code(&out, 0);
    let io = sql(&db, "SELECT r.kind, r.target, f.value FROM runs r JOIN figures f ON f.run_id = r.id WHERE r.source = 'io500' AND f.op = 'score' AND f.metric = 'total'");
    assert_eq!(io.len(), 1, "{io:?}");
    assert_eq!(io[0]["kind"], "io500");
    assert!(io[0]["value"].as_f64().unwrap() > 0.0);
}

/// Children spawned at once, all writing one history: every run is there.
#[test]
fn concurrent_runs_lose_nothing() {
    let o = scratch();
    let db = o.path().join("h.db");
    let dirs: Vec<_> = (0..6).map(|_| scratch()).collect();
    let children: Vec<Child> = dirs
        .iter()
        .map(|d| {
            Command::new(ioscale_path())
                .args([
                    "run",
                    "--size",
                    "1m",
                    "--xfer",
                    "64k",
                    "--reps",
                    "2",
                    "-q",
                    "--progress",
                    "none",
                ])
                .arg("--history")
                .arg(&db)
                .arg(d.path())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(history_warnings(&out), 0, "{}", stderr(&out));
    }
    assert_eq!(count(&db, "runs"), 6);
    assert_eq!(count(&db, "figures"), 6 * 8);
}

/// What a run writes besides the history, and whether it is all there.
fn outputs_written(o: &Path) {
    let rec = json(&o.join("r.json"));
    assert_eq!(phases(&rec).len(), 2);
    let csv = std::fs::read_to_string(o.join("r.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
}

/// A run with its JSON and CSV outputs, recording in `db`.
fn run_with_outputs(db: &Path, d: &Path, o: &Path) -> Output {
    let _ = std::fs::remove_file(o.join("r.json"));
    let _ = std::fs::remove_file(o.join("r.csv"));
    let out = ioscale()
        .args([
            "run",
            "--size",
            "1m",
            "-q",
            "--progress",
            "none",
            "--history",
        ])
        .arg(db)
        .arg("--json")
        .arg(o.join("r.json"))
        .arg("--csv")
        .arg(o.join("r.csv"))
        .arg(d)
        .output()
        .unwrap();
    assert_no_panic(&out);
    out
}

/// A corrupt file, a file of a newer schema, one another process holds
/// locked, one on a read-only file system and one on a full file system:
/// each is one warning that names the problem, the run's JSON and CSV are
/// written and it exits 0; the corrupt and the newer files are unchanged.
#[test]
fn a_broken_history_is_one_warning_and_the_run_s_outputs_are_written() {
    let d = scratch();
    let o = scratch();
    let check = |db: &Path, says: &str| {
        let out = run_with_outputs(db, d.path(), o.path());
        assert_code(&out, 0);
        assert_eq!(history_warnings(&out), 1, "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{says}: {}", stderr(&out));
        outputs_written(o.path());
    };
    // Corrupt: bytes that are no database.
    let corrupt = o.path().join("corrupt.db");
    let junk: Vec<u8> = (0..20000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 11) as u8)
        .collect();
    std::fs::write(&corrupt, &junk).unwrap();
    check(&corrupt, "not an SQLite database");
    assert_eq!(std::fs::read(&corrupt).unwrap(), junk);
    // Newer: a good history whose version is past this build's.
    let newer = o.path().join("newer.db");
    assert_code(&run_with_outputs(&newer, d.path(), o.path()), 0);
    sql(&newer, "PRAGMA user_version = 99");
    let before = std::fs::read(&newer).unwrap();
    check(&newer, "written by a newer ioscale");
    assert_eq!(std::fs::read(&newer).unwrap(), before);
    let list = ioscale()
        .args(["history", "list", "--history"])
        .arg(&newer)
        .output()
        .unwrap();
    assert_code(&list, 2);
    assert!(
        stderr(&list).contains("history schema 99"),
        "{}",
        stderr(&list)
    );
    // Locked: another process holds an exclusive transaction for the
    // whole run (SQLite waits 5 s for it, then gives up).
    let locked = o.path().join("locked.db");
    assert_code(&run_with_outputs(&locked, d.path(), o.path()), 0);
    let mut holder = Command::new("sqlite3")
        .arg(&locked)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = holder.stdin.take().unwrap();
    let held = o.path().join("held");
    writeln!(input, "BEGIN EXCLUSIVE;\n.shell touch {}", held.display()).unwrap();
    input.flush().unwrap();
    let t0 = Instant::now();
    while !held.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "sqlite3 never took the lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    check(&locked, "locked");
    drop(input);
    holder.wait().unwrap();
    assert_eq!(count(&locked, "runs"), 1, "the locked run was not written");

    let (Some(ro), Some(full)) = (tmpfs("size=1m"), tmpfs("size=256k")) else {
        return;
    };
    // Read-only: a history made there, then the file system remounted ro.
    let ro_db = ro.path().join("h.db");
    assert_code(&run_with_outputs(&ro_db, d.path(), o.path()), 0);
    let remount = Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(ro.path())
        .status()
        .unwrap();
    assert!(remount.success());
    check(&ro_db, "read-only");
    // Full: the file system filled to the last block.
    let full_db = full.path().join("h.db");
    let _ = Command::new("dd")
        .arg(format!("of={}", full.path().join("fill").display()))
        .args(["if=/dev/zero", "bs=4k"])
        .stderr(Stdio::null())
        .status();
    check(&full_db, "full");
}

/// An output that names a history is refused before the run (it would
/// replace every run kept there), whichever command and flag name it.
#[test]
fn an_output_never_replaces_a_history() {
    let d = scratch();
    let o = scratch();
    let db = o.path().join("h.db");
    assert_code(&run_in(&db, &["run", "--size", "1m", "-q", s(d.path())]), 0);
    let before = std::fs::read(&db).unwrap();
    let hist = ["--history", s(&db)];
    for args in [
        vec!["run", "--size", "1m", "-q", "--json", s(&db), s(d.path())],
        vec!["meta", "--files", "4", "-q", "--csv", s(&db), s(d.path())],
        [&["history", "export", "--output", s(&db)][..], &hist].concat(),
        [&["history", "trend", "--svg", s(&db)][..], &hist].concat(),
    ] {
        let out = run_in(&db, &args);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains("an ioscale results history"),
            "{args:?}: {err}"
        );
    }
    let dd = ioscale()
        .env("IOSCALE_HISTORY", &db)
        .current_dir(d.path())
        .args([
            "dd",
            "if=/dev/zero",
            "of=x",
            "bs=4k",
            "count=1",
            "--record",
            s(&db),
        ])
        .output()
        .unwrap();
    assert_code(&dd, 2);
    assert_eq!(std::fs::read(&db).unwrap(), before);
    assert_eq!(count(&db, "runs"), 1);
    assert_empty(d.path());
}

/// `--no-history` and `IOSCALE_HISTORY=off` record nothing (no file is
/// made); bad gate settings are usage errors before anything runs.
#[test]
fn no_history_records_nothing_and_bad_settings_are_usage_errors() {
    let d = scratch();
    let o = scratch();
    let db = o.path().join("h.db");
    let out = ioscale()
        .args(["run", "--size", "1m", "-q", "--no-history", "--history"])
        .arg(&db)
        .arg(d.path())
        .output()
        .unwrap();
    assert_code(&out, 2); // --history and --no-history conflict
    let out = ioscale()
        .args(["run", "--size", "1m", "-q", "--no-history", s(d.path())])
        .env("IOSCALE_HISTORY", &db)
        .output()
        .unwrap();
    assert_code(&out, 0);
    let out = ioscale()
        .env("IOSCALE_HISTORY", "off")
        .env("XDG_DATA_HOME", o.path())
        .args([
            "dd",
            "if=/dev/zero",
            &format!("of={}/f", d.path().display()),
            "bs=4k",
            "count=2",
        ])
        .output()
        .unwrap();
    assert_code(&out, 0);
    std::fs::remove_file(d.path().join("f")).unwrap();
    assert!(!db.exists() && !o.path().join("ioscale").exists());
    assert!(names(o.path()).is_empty(), "{:?}", names(o.path()));

    for (env, args) in [
        (None, vec!["run", "--baseline", "newest", "-q", s(d.path())]),
        (
            None,
            vec!["run", "--baseline", "last", "--threshold", "0", s(d.path())],
        ),
        (
            Some("nope"),
            vec!["ior", "-w", "-t", "64k", "-b", "64k", "-o", "IOR"],
        ),
        (
            Some("nope"),
            vec!["fio", "--name=j", "--rw=write", "--size=64k"],
        ),
    ] {
        let mut c = ioscale();
        c.env("IOSCALE_HISTORY", &db)
            .args(&args)
            .current_dir(d.path());
        if let Some(v) = env {
            c.env("IOSCALE_BASELINE", v);
        }
        let out = c.output().unwrap();
        assert_code(&out, 2);
        assert!(
            stderr(&out).contains("median, median:N, last, best")
                || stderr(&out).contains("percentage"),
            "{}",
            stderr(&out)
        );
    }
    assert_empty(d.path());
    assert!(!db.exists());
}

/// An ioscale-testfs mount at a fixed mount point, stopped on drop (the
/// slower target must be the same path as the fast one, as when storage
/// degrades under the same mount).
struct Mounted {
    child: Child,
    mp: PathBuf,
}

impl Mounted {
    fn at(mp: &Path, source: &Path, flags: &[&str]) -> Mounted {
        let bin = common::fuse::testfs_bin().expect("building ioscale-testfs");
        let child = Command::new(bin)
            .args(flags)
            .arg("-q")
            .arg(source)
            .arg(mp)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mp = mp.canonicalize().unwrap();
        let t0 = Instant::now();
        while !mounted(&mp) {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "testfs did not mount"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Mounted { child, mp }
    }
}

fn mounted(mp: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| {
            l.split(' ').nth(4) == Some(&*mp.to_string_lossy()) && l.contains("fuse.ioscale-testfs")
        })
}

impl Drop for Mounted {
    fn drop(&mut self) {
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.child.wait();
        let t0 = Instant::now();
        while mounted(&self.mp) && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The regression gate on known series, on ioscale-testfs where every
/// request takes at least 100 ms (long beside what a busy machine adds
/// to a request): five runs make the baseline; ten reruns with
/// `--baseline median` are never a regression (exit 0); the same mount
/// point served at 200 ms per request (a target twice as slow) is (exit
/// 3), its JSON record still written; `history compare` says the same,
/// `history trend` shows every run.
#[test]
fn a_target_twice_as_slow_is_a_regression_and_ten_reruns_are_not() {
    if let Some(why) = common::fuse::fuse_unavailable() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let o = scratch();
    let src = scratch();
    let mp = tempfile::Builder::new()
        .prefix("history-fuse-")
        .tempdir()
        .unwrap();
    let db = o.path().join("h.db");
    let j = o.path().join("r.json");
    let job = |extra: &[&str]| {
        let mut a = vec![
            "run",
            "--op",
            "write,read",
            "--size",
            "256k",
            "--xfer",
            "64k",
            "--reps",
            "3",
            "-q",
            "--progress",
            "none",
            "--history",
            s(&db),
            "--json",
            s(&j),
        ];
        a.extend_from_slice(extra);
        a.push(s(mp.path()));
        let out = ioscale().args(&a).output().unwrap();
        assert_no_panic(&out);
        out
    };
    {
        let _fs = Mounted::at(mp.path(), src.path(), &["--delay", "100ms"]);
        for _ in 0..5 {
            assert_code(&job(&[]), 0);
        }
        for i in 0..10 {
            let out = job(&["--baseline", "median"]);
            assert_code(&out, 0);
            let err = stderr(&out);
            assert!(
                err.contains("history: run ") && !err.contains("regression"),
                "rerun {i}: {err}"
            );
        }
    }
    let _fs = Mounted::at(mp.path(), src.path(), &["--delay", "200ms"]);
    std::fs::remove_file(&j).unwrap();
    let out = job(&["--baseline", "median"]);
    assert_code(&out, 3);
    let err = stderr(&out);
    assert!(
        err.contains("regression: write") && err.contains("read"),
        "{err}"
    );
    assert!(err.contains("slower than the baseline"), "{err}");
    assert_eq!(phases(&json(&j)).len(), 6, "the run's record is written");
    let runs = sql(&db, "SELECT id FROM runs ORDER BY id DESC LIMIT 1");
    let slow = runs[0]["id"].as_i64().unwrap();
    assert_eq!(count(&db, "runs"), 16);

    let cmp = ioscale()
        .args(["history", "compare", "--history", s(&db)])
        .output()
        .unwrap();
    assert_code(&cmp, 3);
    assert!(
        stdout(&cmp).contains("slower (regression)"),
        "{}",
        stdout(&cmp)
    );
    let cmp = ioscale()
        .args([
            "history",
            "compare",
            "last",
            "--run",
            &(slow - 1).to_string(),
            "--history",
            s(&db),
        ])
        .output()
        .unwrap();
    assert_code(&cmp, 0);
    let trend = ioscale()
        .args(["history", "trend", "--op", "write", "--history", s(&db)])
        .output()
        .unwrap();
    assert_code(&trend, 0);
    let text = stdout(&trend);
    assert_eq!(
        text.lines().filter(|l| l.contains('█')).count(),
        16,
        "{text}"
    );
    assert!(text.contains("slower than the baseline"), "{text}");
}

/// `import` adds a record once (the run's own `--json` is already there;
/// a sweep's points and an edited record are new); `trend` marks the host
/// change the edited record carries and draws SVG, PNG and HTML; `export`
/// gives JSON lines, CSV and Prometheus text; `prune` removes.
#[test]
fn import_trend_export_and_prune() {
    let d = scratch();
    let o = scratch();
    let db = o.path().join("h.db");
    let j = o.path().join("r.json");
    let sw = o.path().join("s.json");
    let h = |args: &[&str]| {
        let out = ioscale()
            .arg("history")
            .args(args)
            .arg("--history")
            .arg(&db)
            .output()
            .unwrap();
        assert_no_panic(&out);
        out
    };
    let t = s(d.path());
    assert_code(
        &run_in(
            &db,
            &[
                "run",
                "--size",
                "1m",
                "--reps",
                "2",
                "-q",
                "--json",
                s(&j),
                t,
            ],
        ),
        0,
    );
    let out = h(&["import", s(&j)]);
    assert_code(&out, 0);
    assert!(
        stderr(&out).contains("0 run(s) added") && stderr(&out).contains("1 already there"),
        "{}",
        stderr(&out)
    );
    // A record of the same workload from another kernel.
    let mut rec = json(&j);
    rec["host"]["kernel"] = "9.9.9-test".into();
    rec["started"] = "2099-01-01T00:00:00Z".into();
    let edited = o.path().join("edited.json");
    std::fs::write(&edited, serde_json::to_vec(&rec).unwrap()).unwrap();
    assert_code(
        &run_in(
            &db,
            &[
                "sweep",
                "--threads",
                "1,2",
                "-q",
                "--no-history",
                "--json",
                s(&sw),
                "--",
                "run",
                "--size",
                "1m",
                t,
            ],
        ),
        0,
    );
    let out = h(&["import", s(&edited), s(&sw)]);
    assert_code(&out, 0);
    assert!(stderr(&out).contains("3 run(s) added"), "{}", stderr(&out));
    assert_eq!(count(&db, "runs"), 4);
    assert_eq!(
        sql(
            &db,
            "SELECT count(*) AS n FROM runs WHERE source = 'import'"
        )[0]["n"],
        3
    );

    let svg = o.path().join("t.svg");
    let png = o.path().join("t.png");
    let html = o.path().join("t.html");
    let out = h(&[
        "trend",
        "last",
        "--svg",
        s(&svg),
        "--png",
        s(&png),
        "--html",
        s(&html),
    ]);
    assert_code(&out, 0);
    assert!(
        stdout(&out).contains("◆ changed: kernel"),
        "{}",
        stdout(&out)
    );
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg_text.contains("<svg") && svg_text.contains("kernel"),
        "{svg_text}"
    );
    assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<svg") && page.matches("<figure>").count() == 2,
        "write and read"
    );

    let out = h(&["export", "--format", "jsonl", "--record"]);
    assert_code(&out, 0);
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert!(lines
        .iter()
        .all(|l| l["record"]["tool"] == "ioscale" && l["figures"].is_array()));
    let csv = o.path().join("h.csv");
    let prom = o.path().join("h.prom");
    assert_code(
        &h(&[
            "export",
            "--format",
            "csv",
            "--output",
            s(&csv),
            "--prometheus",
            s(&prom),
        ]),
        0,
    );
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(
        csv.starts_with("id,started,source,status,workload"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 1 + count(&db, "figures") as usize);
    let prom = std::fs::read_to_string(&prom).unwrap();
    assert!(prom.contains("# TYPE ioscale_bw_mib_s gauge"), "{prom}");
    // The latest of each workload on each target: two workloads (1 and 2
    // threads) on one target.
    let w = prom
        .lines()
        .filter(|l| l.starts_with("ioscale_bw_mib_s{") && l.contains("op=\"write\""))
        .count();
    assert_eq!(w, 2, "{prom}");

    assert_code(&h(&["prune"]), 2);
    let out = h(&["prune", "--keep", "1"]);
    assert_code(&out, 0);
    assert!(
        stderr(&out).contains("2 run(s) removed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(count(&db, "runs"), 2);
}

/// A sweep interrupted in the middle of its second point keeps the first
/// point in the history and has no row for the one cut short.
#[test]
fn an_interrupted_sweep_keeps_the_points_it_finished() {
    let Some(fs) = common::fuse::TestFs::mount(&["--delay", "50ms"]) else {
        return;
    };
    let o = scratch();
    let db = o.path().join("h.db");
    let hold = o.path().join("hold");
    std::fs::write(&hold, b"").unwrap();
    let child = Command::new(ioscale_path())
        .args([
            "sweep",
            "--threads",
            "1,2",
            "--reps",
            "2",
            "-q",
            "--progress",
            "none",
            "--history",
        ])
        .arg(&db)
        .args(["--", "run", "--size", "512k", "--xfer", "64k"])
        .arg(fs.path())
        .env("IOSCALE_TEST_SWEEP_HOLD", &hold)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut held = hold.clone().into_os_string();
    held.push(".held");
    let t0 = Instant::now();
    while !Path::new(&held).exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the first point never finished"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        count(&db, "runs"),
        1,
        "the first point is recorded when it is done"
    );
    // Let the second point start (each of its requests takes 50 ms), then
    // interrupt it.
    std::fs::remove_file(&hold).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let rows = sql(&db, "SELECT status, source FROM runs");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (rows[0]["status"].as_str(), rows[0]["source"].as_str()),
        (Some("ok"), Some("sweep"))
    );
}

/// A fresh directory on a tmpfs of its own (as root), else a scratch
/// directory beside the other tests'.
enum Fresh {
    Tmpfs(common::Mount),
    Dir(tempfile::TempDir),
}

impl Fresh {
    fn new() -> Fresh {
        sandbox_history();
        match tmpfs("size=64m") {
            Some(m) => Fresh::Tmpfs(m),
            None => Fresh::Dir(scratch()),
        }
    }

    fn path(&self) -> &Path {
        match self {
            Fresh::Tmpfs(m) => m.path(),
            Fresh::Dir(d) => d.path(),
        }
    }
}

/// A home or data directory that is a link to another file system (as
/// on many clusters) holds the default history: the run records there,
/// with no warning, and `history list` reads it.
#[test]
fn the_default_history_under_a_linked_data_directory_is_written() {
    let f = Fresh::new();
    let real = f.path().join("real");
    let d = f.path().join("d");
    std::fs::create_dir(&real).unwrap();
    std::fs::create_dir(&d).unwrap();
    let data = f.path().join("data");
    std::os::unix::fs::symlink(&real, &data).unwrap();
    let out = ioscale()
        .env("XDG_DATA_HOME", &data)
        .args(["run", "--size", "1m", "-q", "--progress", "none", s(&d)])
        .output()
        .unwrap();
    assert_code(&out, 0);
    assert_eq!(history_warnings(&out), 0, "{}", stderr(&out));
    let db = real.join("ioscale/history.db");
    assert_eq!(count(&db, "runs"), 1);
    let list = ioscale()
        .env("XDG_DATA_HOME", &data)
        .args(["history", "list"])
        .output()
        .unwrap();
    assert_code(&list, 0);
    assert!(stdout(&list).contains(" run "), "{}", stdout(&list));
}

/// `sqlite3 DB` holding an exclusive transaction until dropped.
struct Holder {
    child: Child,
    input: Option<std::process::ChildStdin>,
}

impl Holder {
    fn lock(db: &Path, flag: &Path) -> Holder {
        let mut child = Command::new("sqlite3")
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        writeln!(input, "BEGIN EXCLUSIVE;\n.shell touch {}", flag.display()).unwrap();
        input.flush().unwrap();
        wait_for(flag, "sqlite3 never took the lock");
        Holder {
            child,
            input: Some(input),
        }
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        drop(self.input.take());
        let _ = self.child.wait();
    }
}

/// Waits until `p` exists (a guard against a hang, not a timing claim).
fn wait_for(p: &Path, what: &str) {
    let t0 = Instant::now();
    while !p.exists() {
        assert!(t0.elapsed() < Duration::from_secs(120), "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Ctrl-C while the run waits for another process's lock on the history
/// (its outputs already written) ends the wait: exit 130, one warning
/// that says so, the JSON record whole, no row added. If the run gave up
/// on its own (5 s) before the signal reached it, the scene is set again.
#[test]
fn a_ctrl_c_while_the_history_is_locked_ends_the_wait_with_130() {
    let f = Fresh::new();
    let d = f.path().join("d");
    std::fs::create_dir(&d).unwrap();
    let db = f.path().join("h.db");
    let j = f.path().join("r.json");
    assert_code(&run_with_outputs(&db, &d, f.path()), 0);
    let _held = Holder::lock(&db, &f.path().join("held"));
    for attempt in 0..3 {
        let _ = std::fs::remove_file(&j);
        let mut child = Command::new(ioscale_path())
            .args(["run", "--size", "1m", "-q", "--progress", "none"])
            .arg("--history")
            .arg(&db)
            .arg("--json")
            .arg(&j)
            .arg(&d)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for(&j, "the run never wrote its record");
        if child.try_wait().unwrap().is_some() {
            eprintln!("attempt {attempt}: the run gave up before the signal");
            continue;
        }
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        if out.status.code() == Some(0) && stderr(&out).contains("more than 5 s") {
            eprintln!("attempt {attempt}: the run gave up before the signal");
            continue;
        }
        assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
        assert_eq!(history_warnings(&out), 1, "{}", stderr(&out));
        assert!(
            stderr(&out).contains("interrupted while another process held the database locked"),
            "{}",
            stderr(&out)
        );
        assert_eq!(phases(&json(&j)).len(), 2, "the record is whole");
        drop(_held);
        assert_eq!(count(&db, "runs"), 1, "nothing of the run was written");
        return;
    }
    panic!("the run never waited long enough for the signal");
}

/// A record of `base` begun at a time of its own (a new run to the
/// history), written to `dir/NAME`.
fn variant(base: &Value, i: usize, dir: &Path) -> PathBuf {
    let mut rec = base.clone();
    rec["started"] = format!(
        "2030-01-01T{:02}:{:02}:{:02}Z",
        i / 3600,
        i / 60 % 60,
        i % 60
    )
    .into();
    let p = dir.join(format!("r{i:04}.json"));
    std::fs::write(&p, serde_json::to_vec(&rec).unwrap()).unwrap();
    p
}

/// Whether every run in `db` is whole: SQLite's integrity check passes,
/// each run has `figures` figures and its host and target, and no figure
/// is left without its run.
fn whole(db: &Path, figures: u64) {
    assert_eq!(
        sql(db, "PRAGMA integrity_check")[0]["integrity_check"],
        "ok"
    );
    let bad = sql(
        db,
        &format!(
            "SELECT id FROM runs r WHERE host_id IS NULL OR target_id IS NULL
             OR (SELECT count(*) FROM figures f WHERE f.run_id = r.id) != {figures}"
        ),
    );
    assert!(bad.is_empty(), "half-written runs: {bad:?}");
    let orphans = sql(
        db,
        "SELECT count(*) AS n FROM figures WHERE run_id NOT IN (SELECT id FROM runs)",
    );
    assert_eq!(orphans[0]["n"], 0);
}

/// A writer killed (SIGKILL, SIGHUP) at moments spread over an import of
/// 200 runs, each its own transaction, leaves only whole runs; the
/// import run again adds exactly the ones that were not there.
#[test]
fn a_writer_killed_at_any_moment_leaves_only_whole_runs() {
    let f = Fresh::new();
    let d = f.path().join("d");
    std::fs::create_dir(&d).unwrap();
    let j = f.path().join("base.json");
    let out = ioscale()
        .args([
            "run",
            "--size",
            "1m",
            "-q",
            "--no-history",
            "--json",
            s(&j),
            s(&d),
        ])
        .output()
        .unwrap();
    assert_code(&out, 0);
    let base = json(&j);
    let recs = f.path().join("recs");
    std::fs::create_dir(&recs).unwrap();
    let files: Vec<PathBuf> = (0..200).map(|i| variant(&base, i, &recs)).collect();
    let import = |db: &Path| {
        let mut c = Command::new(ioscale_path());
        c.args(["history", "import", "--history"])
            .arg(db)
            .args(&files)
            .stderr(Stdio::piped());
        c
    };
    // One whole import, timed, to spread the kills over its length.
    let full = f.path().join("full.db");
    let t0 = Instant::now();
    assert_code(&import(&full).output().unwrap(), 0);
    let took = t0.elapsed();
    assert_eq!(count(&full, "runs"), 200);
    let figures = count(&full, "figures") / 200;

    let db = f.path().join("h.db");
    let mut cut = 0;
    for (i, sig) in (1..=12).zip([libc::SIGKILL, libc::SIGHUP].into_iter().cycle()) {
        let mut child = import(&db).spawn().unwrap();
        std::thread::sleep(took * i / 12);
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        let _ = child.wait();
        if db.exists() {
            whole(&db, figures);
            let n = count(&db, "runs");
            cut += usize::from(n > 0 && n < 200);
        }
    }
    eprintln!("{cut} of 12 kills fell in the middle of the import");
    let before = if db.exists() { count(&db, "runs") } else { 0 };
    let out = import(&db).output().unwrap();
    assert_code(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{} run(s) added", 200 - before))
            && err.contains(&format!("{before} already there")),
        "{err}"
    );
    whole(&db, figures);
    assert_eq!(count(&db, "runs"), 200);
}

/// A history file this user may not write (another user's, mode 0444)
/// is one warning before SQLite opens it: the run's outputs are written,
/// the file is unchanged and nothing is made beside it (no -wal or -shm
/// of this user's in the other's directory). As root the run is made as
/// `nobody`.
#[test]
fn a_read_only_history_file_is_one_warning_and_nothing_is_made_beside_it() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let f = Fresh::new();
    let dir = f.path().join("shared");
    let d = f.path().join("d");
    for p in [&dir, &d] {
        std::fs::create_dir(p).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let db = dir.join("h.db");
    assert_code(&run_with_outputs(&db, &d, f.path()), 0);
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = std::fs::read(&db).unwrap();
    let listed = names(&dir);
    let j = dir.join("r.json");
    let mut c = Command::new(ioscale_path());
    c.args([
        "run",
        "--size",
        "1m",
        "-q",
        "--progress",
        "none",
        "--history",
    ])
    .arg(&db)
    .arg("--json")
    .arg(&j)
    .arg(&d);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        c.uid(65534).gid(65534);
    }
    let out = c.output().unwrap();
    assert_code(&out, 0);
    assert_eq!(history_warnings(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("read-only to this user"),
        "{}",
        stderr(&out)
    );
    assert_eq!(phases(&json(&j)).len(), 2);
    std::fs::remove_file(&j).unwrap();
    assert_eq!(std::fs::read(&db).unwrap(), before);
    assert_eq!(names(&dir), listed);
}
