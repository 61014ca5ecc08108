//! ioscale as MPI ranks: Open MPI's mpirun and a real one-node Slurm
//! (slurm-wlm and munge from Debian, started by scripts/slurm-local).
//!
//! Built only with `--features mpi`; scripts/test installs the packages
//! and runs `cargo test -p ioscale --features mpi --test mpi_cli`. A test
//! skips, saying why, only when mpirun or Slurm is not installed (or, for
//! Slurm and tmpfs, when not root). Every child runs under `timeout`, so a
//! rank that hangs fails the test instead of stalling CI.

#![cfg(feature = "mpi")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use common::*;
use serde_json::Value;

/// One MPI job at a time: 2 cores, and timing-free assertions anyway.
static SERIAL: Mutex<()> = Mutex::new(());

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn is_root() -> bool {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() == 0 }
}

fn skip(why: &str) {
    eprintln!("SKIPPED: {why}");
}

/// `mpirun -np N ioscale ARGS…` under a 120 s timeout.
fn mpirun(np: u32, args: &[&str]) -> Output {
    mpirun_env(np, &[], args)
}

/// [`mpirun`] with environment variables `env` set for the ranks.
fn mpirun_env(np: u32, env: &[(&str, &Path)], args: &[&str]) -> Output {
    let mut c = Command::new("timeout");
    c.envs(env.iter().copied());
    c.args([
        "-k",
        "10",
        "120",
        "mpirun",
        "--allow-run-as-root",
        "--oversubscribe",
    ])
    .args(["-np", &np.to_string()])
    .arg(ioscale_path())
    .args(args)
    .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none");
    let out = c.output().expect("running mpirun");
    assert_ne!(
        out.status.code(),
        Some(124),
        "mpirun timed out: {}",
        stderr(&out)
    );
    out
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// Checks what every gathered MPI record holds: ranks, hosts, tPN, one
/// worker record per rank × thread, node totals that add up.
fn check_cluster(v: &Value, ranks: u64, threads: u64) {
    let c = &v["host"]["cluster"];
    assert_eq!(c["launcher"], "mpi", "{c}");
    assert_eq!(c["ranks"], ranks, "{c}");
    assert_eq!(c["threads_per_rank"], threads);
    assert_eq!(c["nodes"], 1);
    assert_eq!(c["tasks_per_node"], ranks);
    let host = hostname();
    let hosts = c["hosts"].as_array().unwrap();
    assert_eq!(hosts.len() as u64, ranks);
    assert!(hosts.iter().all(|h| h == &Value::from(host.clone())), "{c}");
    let nodes = c["node_phases"].as_array().unwrap();
    let rank_rows = c["rank_phases"].as_array().unwrap();
    for (i, p) in phases(v).iter().enumerate() {
        // One row per rank, whose bytes add up to the phase's.
        let r: Vec<&Value> = rank_rows
            .iter()
            .filter(|r| r["phase"] == i as u64)
            .collect();
        assert_eq!(r.len() as u64, ranks, "one row per rank in phase {i}: {c}");
        let sum: u64 = r.iter().map(|r| r["bytes"].as_u64().unwrap()).sum();
        assert_eq!(Value::from(sum), p["bytes"], "{c}");
        // `run` keeps per-worker rows only with --per-worker; `meta` and
        // sweep points keep them.
        let workers = p["workers"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let gather = c["gathers"].as_array().unwrap().iter();
        let per_worker = gather
            .filter(|g| g["phase"] == i as u64)
            .map(|g| g["per_worker"].as_bool().unwrap())
            .next()
            .expect("the phase's gather is recorded");
        assert_eq!(per_worker, !workers.is_empty(), "{c}");
        if per_worker {
            assert_eq!(workers.len() as u64, ranks * threads);
        }
        for (k, w) in workers.iter().enumerate() {
            assert_eq!(w["worker"], k as u64);
            assert_eq!(w["host"], Value::from(host.clone()));
        }
        let n: Vec<&Value> = nodes.iter().filter(|n| n["phase"] == i as u64).collect();
        assert_eq!(n.len(), 1, "one node in phase {i}");
        assert_eq!(n[0]["bytes"], p["bytes"]);
        assert_eq!(n[0]["ranks"], ranks);
        assert_eq!(n[0]["workers"], ranks * threads);
    }
}

#[test]
fn four_ranks_one_file_each_gathered_at_rank_0() {
    if !have("mpirun") {
        return skip("mpirun not installed (apt-get install openmpi-bin libopenmpi-dev)");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let o = scratch();
    let j = o.path().join("r.json");
    let out = mpirun(
        4,
        &[
            "run",
            "--op",
            "write,read",
            "--layout",
            "per-thread",
            "--size",
            "4m",
            "--xfer",
            "256k",
            "--verify",
            "--keep",
            "--json",
            s(&j),
            s(dir.path()),
        ],
    );
    assert_code(&out, 0);
    // Only rank 0 prints: one table, one header.
    let text = stdout(&out);
    assert_eq!(text.matches("op     rep").count(), 1, "{text}");
    assert!(
        text.contains("ranks: 4 (mpi) x 1 thread(s) = 4 workers"),
        "{text}"
    );
    let v = json(&j);
    let ph = phases(&v);
    assert_eq!(ph.len(), 2);
    check_phase(&ph[0], "write", 4, 4 * (4 << 20), 256 << 10);
    check_phase(&ph[1], "read", 4, 4 * (4 << 20), 256 << 10);
    check_verified(&ph[1], 4 * (4 << 20));
    check_cluster(&v, 4, 1);
    // One file per worker across ranks, named by global worker index.
    let root = dir.path().join("ioscale.d");
    for w in 0..4 {
        let f = root.join(format!("file.{w:08}"));
        assert_eq!(file_len(&f), 4 << 20, "{}", f.display());
    }
    assert!(!root.join("file.00000004").exists());
    assert_code(&run(&["clean", s(dir.path())]), 0);
    assert_empty(dir.path());
}

#[test]
fn ranks_times_threads_share_one_file_and_read_each_others_data() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let o = scratch();
    let j = o.path().join("r.json");
    // --total splits over all 2 × 2 workers; --reorder reads the next worker's block.
    let out = mpirun(
        2,
        &[
            "run",
            "--op",
            "write,read",
            "--threads",
            "2",
            "--layout",
            "shared",
            "--total",
            "8m",
            "--block",
            "1m",
            "--xfer",
            "256k",
            "--verify",
            "--reorder",
            "--json",
            s(&j),
            s(dir.path()),
        ],
    );
    assert_code(&out, 0);
    let v = json(&j);
    let ph = phases(&v);
    check_phase(&ph[0], "write", 4, 8 << 20, 256 << 10);
    check_phase(&ph[1], "read", 4, 8 << 20, 256 << 10);
    check_verified(&ph[1], 8 << 20);
    check_cluster(&v, 2, 2);
    assert_eq!(
        v["spec"]["threads"], 2,
        "the spec keeps the threads per rank"
    );
    assert_eq!(v["spec"]["reorder_offset"], 1);
    assert_empty(dir.path());
}

#[test]
fn a_rank_that_fills_the_disk_stops_every_rank() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let Some(fs) = tmpfs("size=6m") else {
        return skip("cannot mount a tmpfs (needs root)");
    };
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let o = scratch();
    let j = o.path().join("r.json");
    // 4 × 4 MiB into 6 MiB: some rank hits ENOSPC, the others must not hang
    // in the read phase or the reduce.
    let out = mpirun(
        4,
        &[
            "run",
            "--op",
            "write,read",
            "--size",
            "4m",
            "--xfer",
            "64k",
            "--json",
            s(&j),
            s(fs.path()),
        ],
    );
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("No space left on device"), "{err}");
    let v = json(&j);
    assert!(
        phases(&v).is_empty(),
        "no result, and no read after the failed write"
    );
    let f = &v["failed_phases"][0];
    assert!(f["errors"].as_u64().unwrap() >= 1, "{f}");
    let errors = v["errors"].as_array().unwrap();
    assert!(errors.iter().any(|e| e["errno"] == 28), "{v}");
    assert_eq!(f["threads"], 4, "{f}");
    assert_empty(fs.path());
}

/// Regular files under `dir`, with their sizes.
fn files_in(dir: &Path) -> Vec<(String, u64)> {
    snapshot(dir)
        .into_iter()
        .filter_map(|(k, v)| v.map(|b| (k, b.len() as u64)))
        .collect()
}

#[test]
fn meta_on_four_ranks_makes_every_workers_files_and_removes_them() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let o = scratch();
    let j = o.path().join("m.json");
    // 4 ranks × 2 threads × 25 files, kept: exactly 200 files, named by
    // the 8 global worker indices.
    let out = mpirun(
        4,
        &[
            "meta",
            "--ops",
            "create,stat",
            "--threads",
            "2",
            "--files",
            "25",
            "--keep",
            "--json",
            s(&j),
            s(dir.path()),
        ],
    );
    assert_code(&out, 0);
    let text = stdout(&out);
    assert_eq!(text.matches("create (rep 1)").count(), 1, "{text}");
    let v = json(&j);
    let ph = phases(&v);
    assert_eq!(ph.len(), 2);
    for p in ph {
        assert_eq!(p["ops"], 200, "{p}");
        assert_eq!(p["files"]["requested"], 200);
        assert_eq!(p["errors"], 0);
    }
    assert_eq!(ph[0]["bytes"], 200 * 4096);
    check_cluster(&v, 4, 2);
    let root = dir.path().join("ioscale-meta.d");
    let files: Vec<(String, u64)> = files_in(&root)
        .into_iter()
        .filter(|(n, _)| !n.contains(".ioscale-meta-marker"))
        .collect();
    assert_eq!(files.len(), 200, "{files:?}");
    assert!(files.iter().all(|(_, len)| *len == 4096));
    for w in 0..8 {
        let mine = files
            .iter()
            .filter(|(n, _)| n.starts_with(&format!("thr.{w:03}/")))
            .count();
        assert_eq!(mine, 25, "worker {w}: {files:?}");
    }
    // The kept tree is the tree of 8 workers: 4 ranks × 2 threads remove it.
    let out = mpirun(
        4,
        &[
            "meta",
            "--ops",
            "delete",
            "--threads",
            "2",
            "--files",
            "25",
            "--quiet",
            s(dir.path()),
        ],
    );
    assert_code(&out, 0);
    assert_empty(dir.path());
}

#[test]
fn a_rank_that_runs_out_of_inodes_in_meta_stops_every_rank() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let Some(fs) = tmpfs("size=16m,nr_inodes=64") else {
        return skip("cannot mount a tmpfs (needs root)");
    };
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let o = scratch();
    let j = o.path().join("m.json");
    // 4 × 40 files into 64 inodes: some rank hits ENOSPC; the others must
    // stop at the agreement, not hang, and rank 0 removes everything.
    let out = mpirun(
        4,
        &[
            "meta",
            "--ops",
            "create,stat,delete",
            "--files",
            "40",
            "--json",
            s(&j),
            s(fs.path()),
        ],
    );
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("No space left on device"), "{err}");
    assert_eq!(
        err.matches("ioscale: error: worker").count(),
        1,
        "rank 0 alone reports: {err}"
    );
    let v = json(&j);
    assert!(phases(&v).is_empty(), "the failed create is no result");
    assert_eq!(v["failed_phases"][0]["threads"], 4, "{v}");
    let errors = v["errors"].as_array().unwrap();
    assert!(errors.iter().any(|e| e["errno"] == 28), "{v}");
    assert_empty(fs.path());
}

#[test]
fn ior_tasks_are_ranks_with_gathered_totals() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let file = dir.path().join("ior.bin");
    let out = mpirun(
        4,
        &[
            "ior",
            "-w",
            "-r",
            "-F",
            "-k",
            "-t",
            "64k",
            "-b",
            "1m",
            "-o",
            s(&file),
        ],
    );
    assert_code(&out, 0);
    let text = stdout(&out);
    assert_eq!(text.matches("Summary of all tests:").count(), 1, "{text}");
    assert!(text.contains("tasks               : 4"), "{text}");
    assert!(text.contains("clients per node    : 4"), "{text}");
    assert!(text.contains("nodes               : 1"), "{text}");
    assert!(text.contains("aggregate filesize  : 4 MiB"), "{text}");
    // #Tasks and tPN in the summary rows: 4 and 4.
    for op in ["write", "read"] {
        let row = text
            .lines()
            .find(|l| l.starts_with(op) && l.contains("POSIX"))
            .unwrap_or_else(|| panic!("no {op} summary row: {text}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            &cols[cols.len() - 14..cols.len() - 12],
            &["4", "4"],
            "{row}"
        );
    }
    // One file per task, each task's block in full.
    let files = files_in(dir.path());
    let data: Vec<_> = files
        .iter()
        .filter(|(n, _)| n.starts_with("ior.bin"))
        .collect();
    assert_eq!(data.len(), 4, "{files:?}");
    assert!(data.iter().all(|(_, len)| *len == 1 << 20), "{files:?}");

    // -N may only repeat the number of ranks.
    let out = mpirun(2, &["ior", "-N", "3", "-w", "-o", s(&file)]);
    assert_code(&out, 2);
    assert_eq!(stderr(&out).matches("-N 3").count(), 1, "{}", stderr(&out));
}

#[test]
fn mdtest_on_two_ranks_counts_every_task() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let d = dir.path().join("t");
    let out = mpirun(2, &["mdtest", "-n", "50", "-d", s(&d)]);
    assert_code(&out, 0);
    let text = stdout(&out);
    assert_eq!(text.matches("SUMMARY rate").count(), 1, "{text}");
    assert!(text.contains("with 2 total task(s)"), "{text}");
    assert!(text.contains("2 tasks, 100 files/directories"), "{text}");
    for row in ["File creation", "File removal", "Directory creation"] {
        let line = text.lines().find(|l| l.contains(row)).unwrap();
        assert!(!line.contains("NA"), "{line}");
    }
    assert_empty(dir.path());
}

#[test]
fn sweep_on_two_ranks_writes_one_record() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let o = scratch();
    let j = o.path().join("sweep.json");
    let out = mpirun(
        2,
        &[
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
            "256k",
            s(dir.path()),
        ],
    );
    assert_code(&out, 0);
    let v = json(&j);
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{v}");
    for p in points {
        let t = p["threads"].as_u64().unwrap();
        let r = &p["result"];
        check_cluster(r, 2, t);
        let ph = phases(r);
        check_phase(&ph[0], "write", 2 * t, 2 * t * (1 << 20), 256 << 10);
    }
    // Only rank 0 wrote the journal and the files.
    assert_eq!(names(o.path()), vec!["sweep.json".to_string()]);
    assert_empty(dir.path());
}

/// `--threads auto` and `--reps auto` on 2 ranks: rank 0 decides each
/// next count and each next repetition and every rank follows; the search
/// counts threads per rank and says so; `--resume` of the finished record
/// measures nothing more.
#[test]
fn an_adaptive_sweep_on_two_ranks_searches_threads_per_rank() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let o = scratch();
    let j = o.path().join("sweep.json");
    let args = [
        "sweep",
        "--threads",
        "auto:8",
        "--reps",
        "auto",
        "--max-reps",
        "4",
        "--json",
        s(&j),
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "1m",
        "--xfer",
        "256k",
        s(dir.path()),
    ];
    let out = mpirun(2, &args);
    assert_code(&out, 0);
    let v = json(&j);
    let path: Vec<u64> = v["search"]["path"]
        .as_array()
        .expect("search.path")
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert_eq!(path[0], 1, "{path:?}");
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), path.len(), "{v:#}");
    for p in points {
        let t = p["threads"].as_u64().unwrap();
        assert!(path.contains(&t), "{t} not in {path:?}");
        let r = &p["result"];
        check_cluster(r, 2, t);
        let ran = p["reps_auto"]["ran"].as_u64().expect("reps_auto.ran");
        assert!((3..=4).contains(&ran), "{ran}");
        assert_eq!(phases(r).len() as u64, ran, "one write phase a repetition");
    }
    let said = v["search"]["sentences"].to_string();
    assert!(said.contains("threads per rank, on 2 ranks"), "{said}");
    assert_eq!(names(o.path()), vec!["sweep.json".to_string()]);
    assert_empty(dir.path());
    // The finished search, resumed: nothing is left to measure.
    let mut again = args.to_vec();
    again.insert(1, "--resume");
    let out = mpirun(2, &again);
    assert_code(&out, 0);
    assert!(
        stderr(&out).contains("the search goes on after the counts 1"),
        "{}",
        stderr(&out)
    );
    assert_eq!(json(&j)["points"].as_array().unwrap().len(), path.len());
}

/// The results history under MPI: rank 0 records each run once — a run
/// on 2 ranks, an ior on 2 ranks (the history from the environment) and
/// a sweep of 2 points on 2 ranks make 1, 1 and 2 rows — and the run's
/// workload names its 2 ranks.
#[test]
fn rank_0_records_each_run_once_in_the_history() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let o = scratch();
    let db = o.path().join("h.db");
    let h = ["--history", s(&db)];
    let t = s(dir.path());
    let run = [
        &["run", "--op", "write", "--size", "1m", "-q"][..],
        &h,
        &[t],
    ]
    .concat();
    assert_code(&mpirun(2, &run), 0);
    let ior = dir.path().join("ior.bin");
    let env = [("IOSCALE_HISTORY", db.as_path())];
    let out = mpirun_env(
        2,
        &env,
        &["ior", "-w", "-t", "256k", "-b", "1m", "-o", s(&ior)],
    );
    assert_code(&out, 0);
    let sweep = [
        &["sweep", "--threads", "1,2", "-q"][..],
        &h,
        &["--", "run", "--op", "write", "--size", "1m", t],
    ]
    .concat();
    assert_code(&mpirun(2, &sweep), 0);
    let rows = std::process::Command::new("sqlite3")
        .arg(&db)
        .arg("SELECT source || ' ' || count(*) FROM runs GROUP BY source ORDER BY source")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&rows.stdout),
        "ior 1\nrun 1\nsweep 2\n"
    );
    let text = std::process::Command::new("sqlite3")
        .arg(&db)
        .arg("SELECT workload_text FROM runs WHERE source = 'run'")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains(", 2 ranks"));
    assert_eq!(
        names(o.path()),
        ["h.db"],
        "rank 0 alone wrote it, and closed it"
    );
    assert_empty(dir.path());
}

#[test]
fn sweep_on_four_ranks_is_labelled_and_analysed_by_workers() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let o = scratch();
    let j = o.path().join("sweep.json");
    let h = o.path().join("sweep.html");
    let out = mpirun(
        4,
        &[
            "sweep",
            "--threads",
            "1,2",
            "--reps",
            "2",
            "--json",
            s(&j),
            "--html",
            s(&h),
            "--",
            "run",
            "--op",
            "write",
            "--size",
            "256k",
            "--xfer",
            "64k",
            s(dir.path()),
        ],
    );
    assert_code(&out, 0);
    // The table counts workers (ranks × threads), with both factors.
    let text = stdout(&out);
    let head = text
        .lines()
        .find(|l| l.starts_with("Operation"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        head.contains("Workers  Ranks  Threads per rank  File count"),
        "{head}"
    );
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.starts_with("Write "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    // Workers, ranks, threads per rank, file count (one file per worker).
    assert_eq!(rows[0][1..5], ["4", "4", "1", "4"], "{text}");
    assert_eq!(rows[1][1..5], ["8", "4", "2", "8"], "{text}");
    // The analysis works by workers too: its points and Little's law.
    let v = json(&j);
    let c = &v["analysis"]["curves"][0];
    let w: Vec<u64> = c["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["threads"].as_u64().unwrap())
        .collect();
    assert_eq!(w, [4, 8], "{c:#}");
    assert_eq!(c["little"][0]["threads"], 4, "{c:#}");
    assert!(!c["verdict"]["text"].as_str().unwrap().contains("1 worker"));
    // The report shows what each rank did at 8 workers.
    let page = std::fs::read_to_string(&h).unwrap();
    assert!(page.contains("id=\"per-rank-write\""), "per-rank bars");
    assert!(page.contains("write: per rank at 8 workers"));
    for r in 0..4 {
        assert!(page.contains(&format!("rank {r} (")), "bar of rank {r}");
    }
    // Rank 0 probed every phase.
    for p in v["points"].as_array().unwrap() {
        assert_eq!(p["probes"].as_array().unwrap().len(), 2, "{p:#}");
    }
    assert_empty(dir.path());
}

/// A private Slurm (scripts/slurm-local), stopped on drop.
struct Slurm {
    dir: tempfile::TempDir,
    conf: PathBuf,
}

impl Slurm {
    fn start() -> Option<Slurm> {
        let dir = tempfile::Builder::new()
            .prefix("ioscale-slurm-")
            .tempdir()
            .ok()?;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-local");
        let out = Command::new("timeout")
            .args(["60", "bash"])
            .arg(&script)
            .arg("start")
            .arg(dir.path())
            .output()
            .expect("running scripts/slurm-local");
        assert!(
            out.status.success(),
            "scripts/slurm-local start failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let conf = dir.path().join("slurm.conf");
        Some(Slurm { dir, conf })
    }

    fn cmd(&self, program: &str, timeout_s: u32) -> Command {
        let mut c = Command::new("timeout");
        c.args(["-k", "10", &timeout_s.to_string(), program])
            .env("SLURM_CONF", &self.conf);
        c
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-local");
        let _ = Command::new("bash")
            .arg(script)
            .arg("stop")
            .arg(self.dir.path())
            .output();
    }
}

#[test]
fn slurm_job_runs_four_ranks_with_srun_and_pmix() {
    if !have("slurmctld") || !have("munged") || !have("mpirun") {
        return skip("slurm-wlm, munge or openmpi-bin not installed");
    }
    if !is_root() {
        return skip("starting slurmctld, slurmd and munged needs root");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let slurm = Slurm::start().expect("a local Slurm");
    let conf = std::fs::read_to_string(&slurm.conf).unwrap();
    assert!(
        conf.contains("MpiDefault=pmix"),
        "this Slurm has no PMIx plugin (mpi_pmix*.so); Debian ships it in slurm-wlm-basic-plugins"
    );
    let work = scratch();
    let target = work.path().join("fs");
    let results = work.path().join("results");
    std::fs::create_dir(&target).unwrap();
    let job = work.path().join("job.sbatch");
    let out = run(&[
        "slurm",
        "--nodes",
        "1",
        "--ntasks-per-node",
        "4",
        "--time",
        "00:05:00",
        "--output",
        s(&work.path().join("job.out")),
        "--results",
        s(&results),
        "--out",
        s(&job),
        "--",
        "run",
        "--op",
        "write,read",
        "--size",
        "2m",
        "--xfer",
        "256k",
        "--verify",
        s(&target),
    ]);
    assert_code(&out, 0);
    let script = std::fs::read_to_string(&job).unwrap();
    assert!(
        script.contains("srun --mpi=pmix --ntasks=\"$n\""),
        "{script}"
    );

    let sb = slurm
        .cmd("sbatch", 180)
        .arg("--wait")
        .arg(&job)
        .output()
        .expect("running sbatch");
    let log = std::fs::read_to_string(work.path().join("job.out")).unwrap_or_default();
    assert!(
        sb.status.success(),
        "sbatch --wait: {}{}\njob output:\n{log}",
        String::from_utf8_lossy(&sb.stdout),
        String::from_utf8_lossy(&sb.stderr)
    );
    let v = json(&results.join("ranks-4.json"));
    let ph = phases(&v);
    check_phase(&ph[0], "write", 4, 4 * (2 << 20), 256 << 10);
    check_phase(&ph[1], "read", 4, 4 * (2 << 20), 256 << 10);
    check_verified(&ph[1], 4 * (2 << 20));
    check_cluster(&v, 4, 1);
    assert_eq!(
        log.matches("op     rep").count(),
        1,
        "only rank 0 prints:\n{log}"
    );
    assert_empty(&target);

    // The wrong launches srun can make are refused with the fix, exit 2:
    // PMI-2 for an Open MPI that only speaks PMIx, and no PMI at all.
    for (mpi, says) in [("pmi2", "srun --mpi=pmix"), ("none", "without a PMI")] {
        let o = slurm
            .cmd("srun", 120)
            .args([&format!("--mpi={mpi}"), "-n", "2"])
            .arg(ioscale_path())
            .args(["run", "--size", "1m", s(&target)])
            .output()
            .expect("running srun");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "srun --mpi={mpi}: {err}");
        assert!(
            err.contains("Exited with exit code 2"),
            "srun --mpi={mpi}: {err}"
        );
    }
    assert_empty(&target);
}

/// Issue 13 item 12: every value `ioscale slurm` writes into a script is
/// checked (a control character is exit 2 naming the flag) and quoted, the
/// command is checked when the script is written, and the script a sweep
/// gets runs: each generated script here is run with `sbatch --wait` on
/// the local Slurm.
#[test]
fn slurm_scripts_are_checked_quoted_and_run() {
    if !have("slurmctld") || !have("munged") || !have("mpirun") {
        return skip("slurm-wlm, munge or openmpi-bin not installed");
    }
    if !is_root() {
        return skip("starting slurmctld, slurmd and munged needs root");
    }
    let work = scratch();
    let target = work.path().join("fs");
    std::fs::create_dir(&target).unwrap();
    let victim = work.path().join("injected");
    // Refused at generation, nothing written: a newline that would end an
    // #SBATCH line and run a command, a command without a TARGET, a
    // negative size, a sweep of 0 threads.
    let inject = format!("debug\ntouch {}", s(&victim));
    let job = work.path().join("bad.sbatch");
    for (flags, cmd, names) in [
        (
            vec!["--partition", inject.as_str()],
            vec!["run", s(&target)],
            "--partition",
        ),
        (
            vec!["--job-name", "a\rb"],
            vec!["run", s(&target)],
            "--job-name",
        ),
        (vec![], vec!["run"], "TARGET"),
        (vec![], vec!["run", "--size", "-1", s(&target)], "--size"),
        (
            vec![],
            vec!["sweep", "--threads", "0", "--", "run", s(&target)],
            "--threads",
        ),
    ] {
        let mut a = vec!["slurm", "--out", s(&job)];
        a.extend(flags);
        a.push("--");
        a.extend(cmd);
        let out = run(&a);
        assert_code(&out, 2);
        assert!(stderr(&out).contains(names), "{a:?}: {}", stderr(&out));
        assert!(!job.exists(), "{a:?} wrote a script");
    }

    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let slurm = Slurm::start().expect("a local Slurm");
    // A sweep job (--json goes to the sweep, not after the inner command),
    // with a job name, output and results directory that need quoting.
    let results = work.path().join("res dir");
    let log = work.path().join("job out.txt");
    let job = work.path().join("sweep.sbatch");
    let out = run(&[
        "slurm",
        "--ntasks-per-node",
        "2",
        "--ranks",
        "1,2",
        "--time",
        "00:05:00",
        "--job-name",
        "io'scale $(touch x)",
        "--output",
        s(&log),
        "--results",
        s(&results),
        "--launcher-args",
        "--overlap",
        "--out",
        s(&job),
        "--",
        "sweep",
        "--threads",
        "1,2",
        "--",
        "run",
        "--op",
        "write",
        "--xfer",
        "64k",
        "--size",
        "256k",
        s(&target),
    ]);
    assert_code(&out, 0);
    let sb = slurm
        .cmd("sbatch", 180)
        .arg("--wait")
        .arg(&job)
        .output()
        .expect("running sbatch");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        sb.status.success(),
        "sbatch --wait: {}{}\njob output:\n{text}",
        String::from_utf8_lossy(&sb.stdout),
        String::from_utf8_lossy(&sb.stderr)
    );
    for n in [1, 2] {
        let v = json(&results.join(format!("sweep-{n}.json")));
        assert_eq!(v["kind"], "sweep", "{v}");
        assert_eq!(v["points"].as_array().unwrap().len(), 2, "{v}");
    }
    assert!(!work.path().join("x").exists() && !victim.exists());
    assert_empty(&target);
}

/// The IOR summary row of `op` (panics with the text when there is none).
fn ior_row<'a>(text: &'a str, op: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(op) && l.contains("POSIX"))
        .unwrap_or_else(|| panic!("no {op} summary row: {text}"))
}

#[test]
fn files_written_by_n_ranks_read_back_by_n_by_half_and_by_one() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Shared file, file per task, directory per task.
    for extra in [&[][..], &["-F"][..], &["-F", "-u"][..]] {
        let dir = scratch();
        let file = dir.path().join("ior.bin");
        let common = ["-t", "64k", "-b", "128k", "-s", "4", "-k", "-o", s(&file)];
        let mut w = vec!["ior", "-w"];
        w.extend_from_slice(extra);
        w.extend_from_slice(&common);
        let out = mpirun(4, &w);
        assert_code(&out, 0);
        ior_row(&stdout(&out), "write");
        for np in [4, 2, 1] {
            let mut r = vec!["ior", "-r"];
            r.extend_from_slice(extra);
            r.extend_from_slice(&common);
            let out = mpirun(np, &r);
            assert_code(&out, 0);
            let text = stdout(&out);
            ior_row(&text, "read");
            // Each reader reads its own share in full: 512 KiB per task.
            let bytes = np as u64 * 512 * 1024;
            let want = format!("aggregate filesize  : {bytes} bytes");
            let want_mib = format!("aggregate filesize  : {} MiB", bytes >> 20);
            assert!(
                text.contains(&want) || (bytes.is_multiple_of(1 << 20) && text.contains(&want_mib)),
                "{extra:?} read by {np}: {text}"
            );
        }
    }
}

#[test]
fn files_shaped_by_real_ior_read_back_on_several_ranks() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // What IOR 4.0 leaves after `mpirun -np 4 ior -w -k -t 64k -b 128k
    // -s 4 -o ior.bin` (shared) and with -F (ior.bin.00000000 …): made
    // here by hand, with no ioscale marker.
    let dir = scratch();
    let shared = dir.path().join("shared.bin");
    std::fs::write(&shared, vec![7u8; 4 * 128 * 1024 * 4]).unwrap();
    let per = dir.path().join("per.bin");
    for t in 0..4 {
        std::fs::write(format!("{}.{t:08}", s(&per)), vec![7u8; 128 * 1024 * 4]).unwrap();
    }
    for (path, extra) in [(&shared, &[][..]), (&per, &["-F"][..])] {
        for np in [4, 2] {
            let mut r = vec!["ior", "-r", "-t", "64k", "-b", "128k", "-s", "4"];
            r.extend_from_slice(extra);
            r.extend_from_slice(&["-o", s(path)]);
            let out = mpirun(np, &r);
            assert_code(&out, 0);
            ior_row(&stdout(&out), "read");
        }
    }
    // A read never removes files it did not write.
    assert_eq!(file_len(&shared), 4 * 128 * 1024 * 4);
    assert_eq!(files_in(dir.path()).len(), 5);
}

#[test]
fn dd_on_four_ranks_writes_one_file_per_rank_and_reads_them_back() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let f = dir.path().join("dd");
    let out = mpirun(
        4,
        &[
            "dd",
            "if=/dev/zero",
            &format!("of={}", s(&f)),
            "bs=64k",
            "count=4",
        ],
    );
    assert_code(&out, 0);
    // Rank 0 prints the closing lines once, for all ranks' records.
    let err = stderr(&out);
    assert_eq!(err.matches("4+0 records out").count(), 4, "{err}");
    assert!(err.contains("total of 4 jobs: 1048576 bytes"), "{err}");
    let files = files_in(dir.path());
    assert_eq!(files.len(), 4, "{files:?}");
    for j in 1..=4 {
        assert_eq!(file_len(&dir.path().join(format!("dd-{j}"))), 256 << 10);
    }
    let out = mpirun(
        4,
        &["dd", &format!("if={}", s(&f)), "of=/dev/null", "bs=64k"],
    );
    assert_code(&out, 0);
    let err = stderr(&out);
    assert_eq!(err.matches("4+0 records in").count(), 4, "{err}");
    // Two ranks of two jobs: four files again, named by job number.
    let out = mpirun(
        2,
        &[
            "dd",
            "if=/dev/zero",
            &format!("of={}", s(&f)),
            "bs=64k",
            "count=2",
            "--jobs",
            "2",
        ],
    );
    assert_code(&out, 0);
    for j in 1..=4 {
        assert_eq!(file_len(&dir.path().join(format!("dd-{j}"))), 128 << 10);
    }
}

#[test]
fn smallfile_and_mdtest_on_four_ranks_count_every_task() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch();
    let top = dir.path().join("top");
    std::fs::create_dir(&top).unwrap();
    let out = mpirun(
        4,
        &[
            "smallfile",
            "--operation",
            "create",
            "--threads",
            "2",
            "--files",
            "20",
            "--file-size",
            "4",
            // Without the stonewall every thread counts all its files (with
            // it, smallfile's count is of the files done when the first
            // thread finished, which a rank started late on a loaded
            // machine leaves short: 101 of 160 seen in CI).
            "--stonewall",
            "N",
            "--top",
            s(&top),
        ],
    );
    assert_code(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("total threads = 8"), "{text}");
    assert!(text.contains("total files = 160"), "{text}");
    let d = dir.path().join("md");
    let out = mpirun(4, &["mdtest", "-n", "20", "-d", s(&d)]);
    assert_code(&out, 0);
    let text = stdout(&out);
    assert_eq!(text.matches("SUMMARY rate").count(), 1, "{text}");
    assert!(text.contains("with 4 total task(s)"), "{text}");
    assert!(text.contains("4 tasks, 80 files/directories"), "{text}");
}

#[test]
fn io500_on_four_ranks_lays_out_every_phase_as_io500_does() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mnt = if is_root() { tmpfs("size=256m") } else { None };
    let fallback = scratch();
    let target = mnt.as_ref().map_or(fallback.path(), |m| m.path());
    let work = scratch();
    let data = target.join("io500-data");
    let res = work.path().join("results");
    let cfg = io500::ini(
        work.path(),
        &data,
        &res,
        "\n[mdtest-easy-delete]\nrun = FALSE\n[mdtest-hard-delete]\nrun = FALSE\n",
    );
    let j = work.path().join("io500.json");
    // 4 ranks, one task each: the files of 4 io500 tasks, kept.
    let out = mpirun(
        4,
        &[
            "io500",
            "--stonewall",
            "2s",
            "--keep",
            "--json",
            s(&j),
            s(&cfg),
        ],
    );
    assert_code(&out, 0);
    let order: Vec<&str> = io500::ORDER
        .iter()
        .copied()
        .filter(|n| !n.ends_with("-delete"))
        .collect();
    io500::check_lines(&out, &order);
    let v = json(&j);
    assert_eq!(v["ranks"], 4);
    assert_eq!(v["tasks"], 4);
    io500::check_score(&v);
    io500::check_layout(&data, &v, 4);
    // 2 ranks × 2 threads, the whole standard run: everything it made goes.
    let data2 = target.join("io500-data2");
    let cfg = io500::ini(work.path(), &data2, &res, "");
    let j = work.path().join("full.json");
    let h = work.path().join("full.html");
    let out = mpirun(
        2,
        &[
            "io500",
            "--tasks",
            "2",
            "--stonewall",
            "2s",
            "--json",
            s(&j),
            "--html",
            s(&h),
            s(&cfg),
        ],
    );
    assert_code(&out, 0);
    io500::check_lines(&out, &io500::ORDER);
    let v = json(&j);
    assert_eq!(v["tasks"], 4);
    // Each rank's host is recorded, and the page sums the tasks per node:
    // one node here, so its row holds every task's items.
    let hosts = v["rank_hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2, "{v}");
    let page = std::fs::read_to_string(&h).unwrap();
    assert!(page.contains("<h2>Per node</h2>"), "{page}");
    let all = io500::items(&v, "mdtest-easy-write", 4);
    let row = format!(
        "<tr><td>mdtest-easy-write</td><td>{}</td><td>2</td><td>{}</td>",
        hosts[0].as_str().unwrap(),
        all * 4
    );
    assert!(page.contains(&row), "{row} not in {page}");
    io500::check_score(&v);
    let e = io500::items(&v, "mdtest-easy-write", 4);
    assert_eq!(io500::phase(&v, "mdtest-easy-delete")["ops"], e * 4);
    assert!(!data2.exists(), "the run removes what it made");
}

/// `mpirun -np 2 ioscale sweep --threads 1,2 -- io500 …`: every point runs
/// on both ranks (2 and 4 tasks in all) and rank 0 alone writes the record.
#[test]
fn an_io500_sweep_runs_every_point_on_every_rank() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mnt = if is_root() { tmpfs("size=256m") } else { None };
    let fallback = scratch();
    let target = mnt.as_ref().map_or(fallback.path(), |m| m.path());
    let work = scratch();
    let data = target.join("io500-data");
    let res = work.path().join("results");
    let cfg = io500::ini(work.path(), &data, &res, "");
    let j = work.path().join("sweep.json");
    let out = mpirun(
        2,
        &[
            "sweep",
            "--threads",
            "1,2",
            "--json",
            s(&j),
            "--",
            "io500",
            "--stonewall",
            "1s",
            s(&cfg),
        ],
    );
    assert_code(&out, 0);
    let v = json(&j);
    assert_eq!(v["ranks"], 2);
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2);
    for (p, all) in pts.iter().zip([2u64, 4]) {
        assert_eq!(p["io500"]["tasks"], all);
        io500::check_score(&p["io500"]);
    }
    let text = stdout(&out);
    assert_eq!(
        text.matches("io500 sweep: 2 of 2 points").count(),
        1,
        "{text}"
    );
    assert!(!data.exists(), "the runs' own files are removed");
}

/// Every rank, not only rank 0, opens its data files through a held
/// working directory: `T/ioscale.d` swapped for a link to a directory of
/// foreign files mid-run (a FUSE target with a delay per request, so the
/// swap lands while the repetitions run) leaves those files intact on
/// every rank's side.
#[test]
fn a_swapped_working_directory_is_never_followed_by_any_rank() {
    use safefs::testing::Victim;
    use std::time::{Duration, Instant};
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(fs) = common::fuse::TestFs::mount(&["--delay", "500us"]) else {
        return;
    };
    let o = scratch();
    let victim = Victim::plant(&o.path().join("VICTIM"), 7).unwrap();
    let t = fs.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let mut child = Command::new("timeout")
        .args([
            "-k",
            "10",
            "120",
            "mpirun",
            "--allow-run-as-root",
            "--oversubscribe",
        ])
        .args(["-np", "2"])
        .arg(ioscale_path())
        .args(["run", "--op", "write", "--reps", "100", "--threads", "1"])
        .args(["--size", "1m", "--xfer", "64k", "-q"])
        .arg(&t)
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let root = t.join("ioscale.d");
    let wait_for = |p: &Path| {
        let t0 = Instant::now();
        while std::fs::symlink_metadata(p).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "{p:?} never appeared"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    // Rank 1's file: both ranks are writing.
    wait_for(&root.join("file.00000001"));
    std::thread::sleep(Duration::from_millis(50));
    std::fs::rename(&root, t.join("moved")).unwrap();
    std::os::unix::fs::symlink(victim.path(), &root).unwrap();
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run ended before the swap: the test proves nothing"
    );
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    println!("exit {:?}; stderr:\n{err}", out.status);
    assert_ne!(out.status.code(), Some(124), "mpirun timed out");
    victim.check().unwrap();
    assert!(std::fs::symlink_metadata(&root)
        .unwrap()
        .file_type()
        .is_symlink());
}

/// `mpirun -np 2 ioscale ARGS…` with rank 1 held right before it opens
/// the set rank 0 prepared (the test hook `IOSCALE_TEST_PEER_PAUSE`):
/// `swap` runs in that window, then rank 1 goes on.
fn with_rank_1_held(args: &[&str], swap: impl FnOnce()) -> Output {
    let hook = scratch();
    let release = hook.path().join("go");
    let waiting = hook.path().join("go.waiting");
    let child = Command::new("timeout")
        .args([
            "-k",
            "10",
            "120",
            "mpirun",
            "--allow-run-as-root",
            "--oversubscribe",
        ])
        .args(["-np", "2"])
        .arg(ioscale_path())
        .args(args)
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env("IOSCALE_TEST_PEER_PAUSE", &release)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !waiting.exists() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(60),
            "rank 1 never reached the hook"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    swap();
    std::fs::write(&release, b"").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_ne!(out.status.code(), Some(124), "mpirun timed out");
    println!("exit {:?}; stderr:\n{}", out.status, stderr(&out));
    out
}

/// Issue 13: `ioscale.d` renamed away and another real directory put in
/// its place after rank 0 made it and before rank 1 opened it — empty but
/// for a VICTIM's `file.00000001`, then again with a copy of rank 0's
/// marker (token and all). Rank 1 compares the directory's identity with
/// rank 0's and the token in its marker: exit 2 naming rank 1, the
/// VICTIM's file intact, and rank 0's own set removed where it really is.
#[test]
fn a_directory_renamed_into_place_before_rank_1_opens_it_is_refused() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for copy_marker in [false, true] {
        let t = scratch();
        let root = t.path().join("ioscale.d");
        let moved = t.path().join("moved");
        let victim = b"the victim's own file, not ioscale's".to_vec();
        let args = [
            "run",
            "--op",
            "write",
            "--threads",
            "1",
            "--size",
            "1m",
            "-q",
        ];
        let out = with_rank_1_held(&[&args[..], &[s(t.path())]].concat(), || {
            std::fs::rename(&root, &moved).unwrap();
            std::fs::create_dir(&root).unwrap();
            std::fs::write(root.join("file.00000001"), &victim).unwrap();
            if copy_marker {
                std::fs::copy(moved.join(".ioscale-marker"), root.join(".ioscale-marker")).unwrap();
            }
        });
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("rank 1"), "names the rank: {err}");
        assert!(
            err.contains("is not the directory rank 0 prepared"),
            "{err}"
        );
        assert_eq!(std::fs::read(root.join("file.00000001")).unwrap(), victim);
        // Rank 0 emptied what it made through its handle, wherever it is
        // now (its name is the intruder's: that `rmdir` is refused).
        let left: Vec<_> = std::fs::read_dir(&moved).unwrap().flatten().collect();
        assert!(left.is_empty(), "rank 0's set is emptied: {left:?} {err}");
    }
}

/// Issue 13: IOR's files on the other ranks are opened relative to a held
/// directory with `O_NOFOLLOW`, not by path. Rank 1's file (`-F`) planted
/// as a link to a VICTIM, and rank 1's task directory (`-F -u`) swapped
/// for a link to a VICTIM directory, each after rank 0 set up and before
/// rank 1 opened them: refused, the VICTIM intact (before, rank 1 wrote
/// its data through the link).
#[test]
fn ior_files_of_other_ranks_are_never_reached_through_a_link() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let victim = b"the victim's own data".to_vec();
    // -F: the file itself is a link.
    let d = scratch();
    let v = scratch();
    let vf = v.path().join("precious");
    std::fs::write(&vf, &victim).unwrap();
    let o = d.path().join("x.bin");
    let ior = ["ior", "-w", "-F", "-b", "1m", "-t", "256k", "-o"];
    let out = with_rank_1_held(&[&ior[..], &[s(&o)]].concat(), || {
        std::os::unix::fs::symlink(&vf, d.path().join("x.bin.00000001")).unwrap();
    });
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read(&vf).unwrap(), victim, "{}", stderr(&out));
    // -F -u: rank 1's task directory is a link.
    let d = scratch();
    let vd = v.path().join("dir");
    std::fs::create_dir(&vd).unwrap();
    std::fs::write(vd.join("x.bin.00000001"), &victim).unwrap();
    let o = d.path().join("x.bin");
    let ior = ["ior", "-w", "-F", "-u", "-b", "1m", "-t", "256k", "-o"];
    let out = with_rank_1_held(&[&ior[..], &[s(&o)]].concat(), || {
        std::fs::rename(d.path().join("1"), d.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&vd, d.path().join("1")).unwrap();
    });
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(
        std::fs::read(vd.join("x.bin.00000001")).unwrap(),
        victim,
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&vd).unwrap().count(), 1, "{err}");
}

/// dd's files likewise: rank 1's `of=` (which did not exist, so rank 0
/// made it at set-up) swapped for a link to a VICTIM after rank 0 set up:
/// refused, the VICTIM intact.
#[test]
fn dd_files_of_other_ranks_are_never_reached_through_a_link() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let victim = b"the victim's own data".to_vec();
    let d = scratch();
    let vf = d.path().join("precious");
    std::fs::write(&vf, &victim).unwrap();
    // Two ranks, one job each: dd-1 and dd-2 (rank 1's).
    let of = format!("of={}", d.path().join("dd").display());
    let out = with_rank_1_held(&["dd", "if=/dev/zero", &of, "bs=64k", "count=4"], || {
        // Rank 0 made dd-2 (empty) at set-up: it is swapped for the link.
        let p = d.path().join("dd-2");
        std::fs::rename(&p, d.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&vf, &p).unwrap();
    });
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read(&vf).unwrap(), victim, "{}", stderr(&out));
}

/// The metadata tree likewise: `ioscale-meta.d` renamed away and another
/// directory made in its place (holding a VICTIM's `thr.001/f1.0`) after
/// rank 0 made it and before rank 1 opened it: rank 1 compares the
/// directory's identity with rank 0's and refuses (exit 2 naming rank 1);
/// the VICTIM's file is intact.
#[test]
fn a_meta_tree_renamed_into_place_before_rank_1_opens_it_is_refused() {
    if !have("mpirun") {
        return skip("mpirun not installed");
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let t = scratch();
    let root = t.path().join("ioscale-meta.d");
    let victim = b"the victim's own f1.0".to_vec();
    let args = [
        "meta",
        "--ops",
        "create,delete",
        "--threads",
        "1",
        "--files",
        "10",
        "-q",
    ];
    let out = with_rank_1_held(&[&args[..], &[s(t.path())]].concat(), || {
        std::fs::rename(&root, t.path().join("moved")).unwrap();
        std::fs::create_dir_all(root.join("thr.001")).unwrap();
        std::fs::write(root.join("thr.001/f1.0"), &victim).unwrap();
    });
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("rank 1"), "names the rank: {err}");
    assert!(
        err.contains("is not the directory rank 0 prepared"),
        "{err}"
    );
    assert_eq!(std::fs::read(root.join("thr.001/f1.0")).unwrap(), victim);
}
