//! The history on a real SQLite file: rows as the `sqlite3` command line
//! reads them back, the migration of a database of the first schema, the
//! refusal of a newer or foreign file (left as it was), concurrent
//! writers, the baseline verdicts on known series, and pruning.
//!
//! The records are a real `ioscale run --reps 3 --json` record
//! (fixtures/run.json) with its repetitions' figures set to known values.

use std::path::{Path, PathBuf};
use std::process::Command;

use history::{Access, Baseline, Entry, Extra, Filter, History, Prune};
use report::ResultSet;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn base_record() -> ResultSet {
    report::from_json(&std::fs::read(fixture("run.json")).unwrap()).unwrap()
}

/// The fixture record begun at `started` (`YYYY-MM-DDTHH:MM:SSZ`) whose
/// write repetitions ran at `write` MiB/s each (read left as recorded).
fn record(started: &str, write: &[f64; 3]) -> ResultSet {
    let mut rs = base_record();
    rs.started = started.into();
    for p in rs.phases.iter_mut().filter(|p| p.op == "write") {
        let bw = write[p.rep as usize];
        p.bw_mib_s = bw;
        p.bw_mb_s = bw * 1.048576;
        p.elapsed_s = p.bytes as f64 / (bw * 1048576.0);
        p.iops = p.ops as f64 / p.elapsed_s;
    }
    rs.summarise();
    rs
}

fn entry(rs: &ResultSet) -> Entry {
    let extra = Extra {
        cpu_model: "Test CPU".into(),
        device_model: "virtio_blk".into(),
        size_bytes: Some(1 << 30),
    };
    Entry::of_run(rs, "run", &extra).unwrap()
}

fn at(i: u32) -> String {
    format!("2026-11-{:02}T10:00:00Z", 1 + i)
}

fn sqlite3(db: &Path, sql: &str) -> Option<Value> {
    let out = Command::new("sqlite3")
        .arg("-json")
        .arg(db)
        .arg(sql)
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    Some(if text.trim().is_empty() {
        Value::Array(Vec::new())
    } else {
        serde_json::from_str(&text).unwrap()
    })
}

fn close_to(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// What a run's row holds, read with Debian's `sqlite3`, is what its
/// record says: time, command, target, workload key, prints, each figure
/// as the statistics of the record give it, and the record itself.
#[test]
fn rows_read_back_with_the_sqlite3_command_line_match_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let mut db = History::open(&path, Access::Write).unwrap();
    let recs = [
        record(&at(0), &[100.0, 110.0, 105.0]),
        record(&at(1), &[200.0, 190.0, 210.0]),
    ];
    let entries: Vec<Entry> = recs.iter().map(entry).collect();
    for e in &entries {
        assert!(db.insert(e, Some("b1")).unwrap().new);
    }
    drop(db);
    let Some(runs) = sqlite3(
        &path,
        "SELECT r.id, r.started, r.command, r.target, r.workload, r.status, r.batch, r.record,
                h.hostname, h.cpu_model, t.fs_type, t.device_model, t.size_bytes
         FROM runs r JOIN hosts h ON h.id = r.host_id JOIN targets t ON t.id = r.target_id
         ORDER BY r.id",
    ) else {
        eprintln!("SKIPPED: no sqlite3 command line");
        return;
    };
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for ((row, rs), e) in runs.iter().zip(&recs).zip(&entries) {
        assert_eq!(row["started"], rs.started.as_str());
        let command: Vec<String> = serde_json::from_str(row["command"].as_str().unwrap()).unwrap();
        assert_eq!(command, rs.command);
        assert_eq!(row["target"], rs.host.target.as_str());
        assert_eq!(row["workload"], e.workload.key.as_str());
        assert_eq!(row["status"], "ok");
        assert_eq!(row["batch"], "b1");
        assert_eq!(row["hostname"], rs.host.hostname.as_str());
        assert_eq!(row["cpu_model"], "Test CPU");
        assert_eq!(row["fs_type"], rs.host.fs_type.as_str());
        assert_eq!(row["device_model"], "virtio_blk");
        assert_eq!(row["size_bytes"], 1u64 << 30);
        let stored: ResultSet = serde_json::from_str(row["record"].as_str().unwrap()).unwrap();
        assert_eq!(&stored, rs, "the record is kept whole");
        let figs = sqlite3(
            &path,
            &format!(
                "SELECT op, metric, unit, value, lo, hi, reps, headline FROM figures
                 WHERE run_id = {} ORDER BY position",
                row["id"]
            ),
        )
        .unwrap();
        let figs = figs.as_array().unwrap();
        assert_eq!(figs.len(), e.figures.len());
        // Each figure is what the record's repetitions give: the write
        // bandwidth is the mean of the three set above.
        for (f, want) in figs.iter().zip(&e.figures) {
            assert_eq!(f["op"], want.op.as_str());
            assert_eq!(f["metric"], want.metric.as_str());
            assert_eq!(f["unit"], want.unit.as_str());
            assert!(
                close_to(f["value"].as_f64().unwrap(), want.value),
                "{f} vs {want:?}"
            );
            assert_eq!(f["reps"], 3);
        }
        let w = figs
            .iter()
            .find(|f| f["op"] == "write" && f["metric"] == "bw_mib_s")
            .unwrap();
        let reps: Vec<f64> = rs
            .phases
            .iter()
            .filter(|p| p.op == "write")
            .map(|p| p.bw_mib_s)
            .collect();
        assert!(close_to(
            w["value"].as_f64().unwrap(),
            reps.iter().sum::<f64>() / 3.0
        ));
        assert_eq!(w["headline"], 1);
        let (lo, hi) = (w["lo"].as_f64().unwrap(), w["hi"].as_f64().unwrap());
        assert!(lo <= w["value"].as_f64().unwrap() && hi >= w["value"].as_f64().unwrap());
    }
    // One host and one target print for both runs.
    assert_eq!(
        sqlite3(&path, "SELECT count(*) AS n FROM hosts").unwrap()[0]["n"],
        1
    );
    assert_eq!(
        sqlite3(&path, "SELECT count(*) AS n FROM targets").unwrap()[0]["n"],
        1
    );
    // The same record again is not a second run.
    let mut db = History::open(&path, Access::Write).unwrap();
    let again = db.insert(&entries[0], None).unwrap();
    assert_eq!((again.id, again.new), (1, false));
    assert_eq!(db.list(&Filter::default()).unwrap().len(), 2);
}

fn load_v1(path: &Path) {
    let sql = std::fs::read_to_string(fixture("history-v1.sql")).unwrap();
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(&sql).unwrap();
}

fn digest(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

/// A database made by the first schema opens, reaches the current one,
/// and its runs read back with their figures; one step more (a schema
/// this build does not know) and it is refused, byte for byte untouched.
#[test]
fn a_database_of_the_first_schema_migrates_and_a_newer_one_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    load_v1(&path);
    let db = History::open(&path, Access::Write).unwrap();
    assert_eq!(db.version().unwrap(), history::schema::LATEST);
    let rows = db.list(&Filter::default()).unwrap();
    let sources: Vec<&str> = rows.iter().map(|r| r.source.as_str()).collect();
    assert_eq!(sources, ["ior", "meta", "run"]);
    for r in &rows {
        assert!(r.headlines().count() > 0, "{r:?}");
        let rec: Value = serde_json::from_str(&db.record(r.id).unwrap()).unwrap();
        assert_eq!(rec["started"], r.started.as_str());
    }
    drop(db);

    // The upgrade path itself: a step after the last.
    let mut steps = history::schema::MIGRATIONS.to_vec();
    steps.push("ALTER TABLE runs ADD COLUMN note TEXT;");
    let db = History::open_with(&path, Access::Write, &steps).unwrap();
    assert_eq!(db.version().unwrap(), history::schema::LATEST + 1);
    assert_eq!(db.list(&Filter::default()).unwrap().len(), 3);
    drop(db);

    let before = digest(&path);
    for access in [Access::Write, Access::Read] {
        match History::open(&path, access) {
            Err(history::Error::Newer { found, known, .. }) => {
                assert_eq!(
                    (found, known),
                    (history::schema::LATEST + 1, history::schema::LATEST)
                );
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a newer schema was opened"),
        }
    }
    assert_eq!(digest(&path), before, "the newer file changed");
    let msg = History::open(&path, Access::Write)
        .err()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("newer ioscale") && msg.contains("nothing was changed"),
        "{msg}"
    );
}

/// Another application's SQLite file and a file that is no database are
/// refused; neither changes.
#[test]
fn foreign_and_corrupt_files_are_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .unwrap();
    let before = digest(&foreign);
    let e = History::open(&foreign, Access::Write).err().unwrap();
    assert!(matches!(e, history::Error::Foreign { .. }), "{e}");
    assert_eq!(digest(&foreign), before);

    let garbage = dir.path().join("garbage.db");
    let bytes: Vec<u8> = (0..8192u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(&garbage, &bytes).unwrap();
    let e = History::open(&garbage, Access::Write).err().unwrap();
    assert!(e.to_string().contains("not an SQLite database"), "{e}");
    assert_eq!(digest(&garbage), bytes);
}

/// A link, a FIFO (which would block the first read), a directory and a
/// device are refused before SQLite opens them; a missing file is "no history" for a
/// reader and made for a writer.
#[test]
fn links_fifos_and_directories_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.db");
    History::open(&real, Access::Write).unwrap();
    let link = dir.path().join("link.db");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let fifo = dir.path().join("fifo.db");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let null = PathBuf::from("/dev/null");
    for p in [&link, &fifo, &dir.path().to_path_buf(), &null] {
        let e = History::open(p, Access::Write).err().unwrap();
        assert!(
            matches!(e, history::Error::Refused { .. }),
            "{}: {e}",
            p.display()
        );
    }
    // A planted -wal that is a link is refused too.
    let wal_link = dir.path().join("w.db-wal");
    std::os::unix::fs::symlink("/etc/passwd", &wal_link).unwrap();
    let e = History::open(&dir.path().join("w.db"), Access::Write)
        .err()
        .unwrap();
    assert!(e.to_string().contains("-wal"), "{e}");
    let e = History::open(&dir.path().join("none.db"), Access::Read)
        .err()
        .unwrap();
    assert!(matches!(e, history::Error::Missing { .. }), "{e}");
    assert!(!dir.path().join("none.db").exists());
}

/// A home or data directory is often a link to another file system: the
/// directories on the way are followed (the file is made in the real
/// one), the history's own name never is. A path that names no file is
/// refused, nothing made.
#[test]
fn a_linked_directory_on_the_way_is_followed_and_a_path_naming_no_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let linked = dir.path().join("home");
    std::os::unix::fs::symlink(&real, &linked).unwrap();
    let mut db = History::open(&linked.join("h.db"), Access::Write).unwrap();
    db.insert(&entry(&record(&at(0), &[100.0, 101.0, 102.0])), None)
        .unwrap();
    drop(db);
    assert!(real.join("h.db").is_file());
    let db = History::open(&linked.join("h.db"), Access::Read).unwrap();
    assert_eq!(db.list(&Filter::default()).unwrap().len(), 1);
    drop(db);
    // The name itself a link to the same file: refused.
    let named = real.join("named.db");
    std::os::unix::fs::symlink(real.join("h.db"), &named).unwrap();
    let e = History::open(&linked.join("named.db"), Access::Write)
        .err()
        .unwrap();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    let before = std::fs::read_dir(&real).unwrap().count();
    for p in ["new.db/", "..", "."] {
        let e = History::open(&real.join(p), Access::Write).err().unwrap();
        assert!(e.to_string().contains("names a directory"), "{p}: {e}");
    }
    assert_eq!(std::fs::read_dir(&real).unwrap().count(), before);
}

/// Values at the edges of their types are kept and read back: memory,
/// file-system size and byte counts of u64::MAX (past SQLite's i64), a
/// CPU count of u32::MAX, figures of 1e300 and 0, and a host name with a
/// NUL byte and 10,000 characters.
#[test]
fn values_at_the_edges_are_kept_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let mut rs = record(&at(0), &[100.0, 101.0, 102.0]);
    rs.host.mem_bytes = u64::MAX;
    rs.host.cpus = u32::MAX;
    rs.host.hostname = format!("h\0x{}", "é".repeat(10_000));
    for p in rs.phases.iter_mut() {
        if p.op == "read" {
            p.bytes = u64::MAX;
            p.bw_mib_s = 1e300;
            p.bw_mb_s = 1e300;
            p.iops = 1e300;
        } else if p.rep == 0 {
            p.bw_mib_s = 0.0;
            p.bw_mb_s = 0.0;
            p.iops = 0.0;
        }
    }
    rs.summarise();
    let mut e = entry(&rs);
    e.target.size_bytes = Some(u64::MAX);
    let mut db = History::open(&path, Access::Write).unwrap();
    let id = db.insert(&e, None).unwrap().id;
    drop(db);
    let db = History::open(&path, Access::Read).unwrap();
    let row = db.run(id).unwrap();
    assert_eq!(
        row.host.mem_bytes,
        i64::MAX as u64,
        "clamped to SQLite's integer"
    );
    assert_eq!(row.host.hostname, rs.host.hostname);
    let read = row
        .figures
        .iter()
        .find(|f| f.op == "read" && f.metric == "bw_mib_s")
        .unwrap();
    assert_eq!(read.value, 1e300);
    let Some(v) = sqlite3(
        &path,
        "SELECT h.cpus, h.mem_bytes, t.size_bytes, length(CAST(h.hostname AS BLOB)) AS n FROM runs r
         JOIN hosts h ON h.id = r.host_id JOIN targets t ON t.id = r.target_id",
    ) else {
        return;
    };
    assert_eq!(v[0]["cpus"], u64::from(u32::MAX));
    assert_eq!(v[0]["mem_bytes"], i64::MAX);
    assert!(v[0]["size_bytes"].is_null(), "{v}: not past i64, unknown");
    assert_eq!(v[0]["n"], 20_003, "every byte, the NUL too");
}

/// `list` selects by target, workload (a key or the start of one, `%`
/// and `_` taken as themselves), host, time and status, newest first;
/// `limit` keeps the newest. Six runs on two hosts and two targets, the
/// last one interrupted.
#[test]
fn list_selects_by_target_workload_host_time_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = History::open(&dir.path().join("h.db"), Access::Write).unwrap();
    let mut key = String::new();
    for i in 0..6u32 {
        let mut e = entry(&record(&at(i), &[100.0, 101.0, 102.0]));
        e.host.hostname = if i < 3 { "a" } else { "b" }.into();
        e.target.path = if i % 2 == 0 { "/x" } else { "/y" }.into();
        if i == 5 {
            e.status = history::Status::Interrupted;
        }
        key = e.workload.key.clone();
        db.insert(&e, None).unwrap();
    }
    let days = |f: Filter| -> Vec<String> {
        db.list(&f)
            .unwrap()
            .iter()
            .map(|r| r.started[8..10].to_string())
            .collect()
    };
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        days(Filter::default()),
        ["06", "05", "04", "03", "02", "01"]
    );
    let target = Filter {
        target: s("/x"),
        ..Filter::default()
    };
    assert_eq!(days(target), ["05", "03", "01"]);
    let host = Filter {
        host: s("b"),
        ..Filter::default()
    };
    assert_eq!(days(host), ["06", "05", "04"]);
    let both = Filter {
        host: s("a"),
        target: s("/y"),
        ..Filter::default()
    };
    assert_eq!(days(both), ["02"]);
    let span = Filter {
        since: Some(at(2)),
        until: Some(at(4)),
        ..Filter::default()
    };
    assert_eq!(days(span), ["04", "03"]);
    let cut = Filter {
        status: Some(history::Status::Interrupted),
        ..Filter::default()
    };
    assert_eq!(days(cut), ["06"]);
    for (w, n) in [
        (&key[..6], 6),
        (key.as_str(), 6),
        ("w-%", 0),
        ("w-_", 0),
        ("x", 0),
    ] {
        let f = Filter {
            workload: s(w),
            ..Filter::default()
        };
        assert_eq!(days(f).len(), n, "{w}");
    }
    let newest = Filter {
        limit: Some(2),
        ..Filter::default()
    };
    assert_eq!(days(newest), ["06", "05"]);
}

/// Eight writers, each with its own connection, insert 25 runs each at
/// the same time: all 200 are there.
#[test]
fn concurrent_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.db");
    let threads: Vec<_> = (0..8u32)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut db = History::open(&path, Access::Write).unwrap();
                // Few enough transactions that no writer waits past the
                // 5 s busy timeout for the others' fsyncs on a loaded disk.
                for i in 0..10u32 {
                    let started = format!("2026-10-{:02}T{:02}:{:02}:00Z", 1 + t, i / 60, i % 60);
                    let e = entry(&record(&started, &[100.0, 101.0, 102.0]));
                    assert!(db.insert(&e, Some(&format!("t{t}"))).unwrap().new);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let db = History::open(&path, Access::Read).unwrap();
    let rows = db.list(&Filter::default()).unwrap();
    assert_eq!(rows.len(), 80);
    assert!(
        rows.iter().all(|r| r.figures.len() == 8),
        "every run has its figures"
    );
}

/// Eight processes' worth of connections opening one new file at the
/// same moment: one sets it up, none takes it for another application's
/// (its tables seen before its application id), every run is written.
/// Many rounds, each on a fresh file, all starting at a barrier.
#[test]
fn a_new_file_opened_by_many_at_once_is_set_up_once() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..40u32 {
        let path = dir.path().join(format!("h{round}.db"));
        let gate = std::sync::Arc::new(std::sync::Barrier::new(8));
        let threads: Vec<_> = (0..8u32)
            .map(|t| {
                let (path, gate) = (path.clone(), gate.clone());
                std::thread::spawn(move || {
                    let e = entry(&record(&format!("r{round} t{t}"), &[100.0, 101.0, 102.0]));
                    gate.wait();
                    History::open(&path, Access::Write)
                        .and_then(|mut db| db.insert(&e, None))
                        .map(|i| i.new)
                })
            })
            .collect();
        for t in threads {
            let got = t.join().unwrap();
            assert!(matches!(got, Ok(true)), "round {round}: {got:?}");
        }
        let db = History::open(&path, Access::Read).unwrap();
        assert_eq!(db.list(&Filter::default()).unwrap().len(), 8);
    }
}

/// Known series: ten reruns of the same workload, each within ±3% and
/// with its own spread, are never a regression against the median of the
/// five before; a run at half the throughput is, against every baseline;
/// one that is only 8% slower is judged slower but under the threshold.
#[test]
fn verdicts_on_known_series() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = History::open(&dir.path().join("h.db"), Access::Write).unwrap();
    let wiggle = [
        1.0, 0.97, 1.03, 0.99, 1.02, 0.98, 1.01, 1.0, 0.97, 1.03, 0.99, 1.02, 1.0, 0.98, 1.01,
    ];
    let mut ids = Vec::new();
    for (i, w) in wiggle.iter().enumerate() {
        let c = 1000.0 * w;
        let e = entry(&record(&at(i as u32), &[c * 0.99, c, c * 1.01]));
        ids.push(db.insert(&e, None).unwrap().id);
    }
    for &id in &ids[5..] {
        for b in [Baseline::Median(5), Baseline::Last, Baseline::Best] {
            let j = db.judge(id, b, 0.10).unwrap();
            assert!(!j.regressed(), "run {id} against {b}: {j:?}");
            assert!(j.warnings.is_empty(), "{:?}", j.warnings);
        }
    }
    let slow = entry(&record(&at(20), &[495.0, 500.0, 505.0]));
    let slow = db.insert(&slow, None).unwrap().id;
    for b in [
        Baseline::Median(5),
        Baseline::Last,
        Baseline::Best,
        Baseline::Run(ids[3]),
    ] {
        let j = db.judge(slow, b, 0.10).unwrap();
        assert!(j.regressed(), "against {b}: {j:?}");
        let v = j.verdicts.iter().find(|v| v.op == "write").unwrap();
        assert_eq!(v.word, "slower");
        assert!((v.ratio - 0.5).abs() < 0.05, "{}", v.ratio);
        // Reads were not changed: no regression there.
        let r = j.verdicts.iter().find(|v| v.op == "read").unwrap();
        assert!(!r.regressed, "{r:?}");
    }
    let j = db.judge(slow, Baseline::Median(5), 0.10).unwrap();
    assert_eq!(j.baseline_runs.len(), 5);
    assert!(j.against.contains("median of the last 5"), "{}", j.against);
    let mild = entry(&record(&at(21), &[915.0, 920.0, 925.0]));
    let mild = db.insert(&mild, None).unwrap().id;
    let j = db.judge(mild, Baseline::Run(ids[14]), 0.10).unwrap();
    let v = j.verdicts.iter().find(|v| v.op == "write").unwrap();
    assert_eq!(v.word, "slower");
    assert!(!j.regressed(), "8% is under the 10% threshold: {j:?}");
    // The first run has nothing before it.
    let j = db.judge(ids[0], Baseline::Median(5), 0.10).unwrap();
    assert!(j.verdicts.is_empty() && !j.warnings.is_empty());
}

/// One repetition on each side measures no noise: half the throughput is
/// reported, and not judged a regression.
#[test]
fn no_regression_without_a_noise_estimate() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = History::open(&dir.path().join("h.db"), Access::Write).unwrap();
    let one_rep = |started: &str, bw: f64| {
        let mut rs = record(started, &[bw, bw, bw]);
        rs.phases.retain(|p| p.rep == 0);
        rs.summarise();
        entry(&rs)
    };
    let a = db.insert(&one_rep(&at(0), 1000.0), None).unwrap().id;
    let b = db.insert(&one_rep(&at(1), 500.0), None).unwrap().id;
    let j = db.judge(b, Baseline::Last, 0.10).unwrap();
    assert_eq!(j.baseline_runs, [a]);
    let v = j.verdicts.iter().find(|v| v.op == "write").unwrap();
    assert!(!v.noise && !v.regressed, "{v:?}");
    assert!(v.sentence("run 1").contains("not judged"));
    // Two earlier runs give a spread: the median baseline judges.
    let c = db.insert(&one_rep(&at(2), 990.0), None).unwrap().id;
    let d = db.insert(&one_rep(&at(3), 480.0), None).unwrap().id;
    let j = db.judge(d, Baseline::Median(2), 0.10).unwrap();
    assert_eq!(j.baseline_runs, [c, b]);
    let j = db.judge(d, Baseline::Run(c), 0.10).unwrap();
    assert!(!j.regressed());
}

/// `--keep 2` keeps the newest two runs of each workload; `--before`
/// removes what began earlier; a run's figures go with it; `dry_run`
/// removes nothing.
#[test]
fn prune_keeps_the_newest_of_each_workload() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = History::open(&dir.path().join("h.db"), Access::Write).unwrap();
    for i in 0..5 {
        db.insert(&entry(&record(&at(i), &[100.0, 100.0, 100.0])), None)
            .unwrap();
    }
    let mut other = record(&at(9), &[100.0, 100.0, 100.0]);
    other.host.target = "/elsewhere".into();
    db.insert(&entry(&other), None).unwrap();
    let keep = Prune {
        keep: Some(2),
        ..Default::default()
    };
    assert_eq!(db.prune(&keep, true).unwrap(), 3);
    assert_eq!(db.list(&Filter::default()).unwrap().len(), 6);
    assert_eq!(db.prune(&keep, false).unwrap(), 3);
    let ids: Vec<i64> = db
        .list(&Filter::default())
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, [6, 5, 4]);
    let before = Prune {
        before: Some(at(4)),
        ..Default::default()
    };
    assert_eq!(db.prune(&before, false).unwrap(), 1);
    assert!(db.run(4).is_err());
    assert_eq!(
        db.prune(&Prune::default(), false).unwrap(),
        0,
        "no criterion, nothing goes"
    );
    db.vacuum().unwrap();
    let n = rusqlite::Connection::open(db.path())
        .unwrap()
        .query_row("SELECT count(*) FROM figures", [], |r| r.get::<_, i64>(0))
        .unwrap();
    assert_eq!(n, 2 * 8);
}
