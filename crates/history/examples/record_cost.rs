//! What recording one run in the results history costs a measuring
//! command: each iteration does what the end of `ioscale run` does — read
//! the host facts the record lacks (CPU model, device, size), build the
//! row (the record's JSON, its statistics), open the history (a new
//! connection, as each process makes), write the run in one transaction,
//! close — on a small history and on one that already holds `--prefill`
//! runs. Prints per run the median and 90th percentile of the wall time,
//! the median CPU time of the thread (what the recording itself costs,
//! whatever else the machine runs) and the median of each step, for a
//! typical record (`tests/fixtures/run.json`, 3 repetitions of write and
//! read) and for one with 1,024 per-worker rows per phase.
//!
//!   cargo run --release -p ioscale-history --example record_cost -- \
//!       [--runs N] [--prefill N] [--dir DIR]
//!
//! DIR (default: a fresh directory under the system's temporary
//! directory) should be on the file system the history lives on.

use std::path::{Path, PathBuf};
use std::time::Instant;

use history::{Access, Entry, Extra, History};
use report::ResultSet;

fn fixture() -> ResultSet {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run.json");
    report::from_json(&std::fs::read(p).expect("the fixture record")).expect("a run record")
}

/// The fixture with `n` per-worker rows in every phase.
fn wide(n: u32) -> ResultSet {
    let mut rs = fixture();
    for p in &mut rs.phases {
        let w = p.workers.first().cloned().unwrap_or_default();
        p.workers = (0..n)
            .map(|i| report::WorkerRecord {
                worker: i,
                ..w.clone()
            })
            .collect();
    }
    rs
}

/// CPU time of this thread, in milliseconds.
fn cpu_ms() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec the call fills in.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1e3 + t.tv_nsec as f64 / 1e6
}

/// This thread's time waiting for a CPU while runnable, in milliseconds
/// (the second field of /proc/thread-self/schedstat).
fn queued_ms() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map_or(0.0, |ns| ns / 1e6)
}

/// The times of one recording's steps, in milliseconds: wall, CPU and
/// time waiting for a CPU in all, and the wall time of each step.
#[derive(Default)]
struct Times {
    wall: Vec<f64>,
    cpu: Vec<f64>,
    queued: Vec<f64>,
    facts: Vec<f64>,
    entry: Vec<f64>,
    open: Vec<f64>,
    insert: Vec<f64>,
    close: Vec<f64>,
}

/// Runs `runs` recordings of `rs` (each with its own start time).
fn time(db: &Path, rs: &ResultSet, runs: u32, tag: &str) -> Times {
    let mut t = Times::default();
    for i in 0..runs {
        let mut rs = rs.clone();
        rs.started = format!("2030-01-01T00:00:00Z {tag} {i}");
        let (t0, c0, q0) = (Instant::now(), cpu_ms(), queued_ms());
        let extra = Extra {
            cpu_model: bench::host::cpu_model(),
            device_model: bench::host::device_model(&rs.host.fs_source),
            size_bytes: bench::host::fs_size(db.parent().unwrap()),
        };
        let t1 = Instant::now();
        let e = Entry::of_run(&rs, "run", &extra).unwrap();
        let t2 = Instant::now();
        let mut h = History::open(db, Access::Write).unwrap();
        let t3 = Instant::now();
        h.insert(&e, Some("bench")).unwrap();
        let t4 = Instant::now();
        drop(h);
        let t5 = Instant::now();
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        t.wall.push(ms(t0, t5));
        t.cpu.push(cpu_ms() - c0);
        t.queued.push(queued_ms() - q0);
        t.facts.push(ms(t0, t1));
        t.entry.push(ms(t1, t2));
        t.open.push(ms(t2, t3));
        t.insert.push(ms(t3, t4));
        t.close.push(ms(t4, t5));
    }
    t
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn summary(name: &str, t: Times) {
    let mut w = t.wall.clone();
    w.sort_by(f64::total_cmp);
    let p90 = w[((w.len() - 1) as f64 * 0.9).round() as usize];
    // Off the CPU and not waiting for one: waiting for the disk (fsync).
    let io: Vec<f64> = (0..t.wall.len())
        .map(|i| (t.wall[i] - t.cpu[i] - t.queued[i]).max(0.0))
        .collect();
    println!(
        "{name:<32} runs {:>4}  wall median {:>6.2} ms (p90 {:>6.2}) = CPU {:.2} + waiting for a CPU \
         {:.2} + for the disk {:.2}  [steps: facts {:.2}, row {:.2}, open {:.2}, write {:.2}, close {:.2}]",
        w.len(),
        median(t.wall),
        p90,
        median(t.cpu),
        median(t.queued),
        median(io),
        median(t.facts),
        median(t.entry),
        median(t.open),
        median(t.insert),
        median(t.close),
    );
}

fn main() {
    let mut runs = 200u32;
    let mut prefill = 10_000u32;
    let mut dir: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().expect("a value");
        match a.as_str() {
            "--runs" => runs = val().parse().expect("--runs N"),
            "--prefill" => prefill = val().parse().expect("--prefill N"),
            "--dir" => dir = Some(PathBuf::from(val())),
            _ => panic!("usage: record_cost [--runs N] [--prefill N] [--dir DIR]"),
        }
    }
    let tmp = match &dir {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .unwrap();
    let db = tmp.path().join("history.db");
    let rs = fixture();
    println!(
        "history {} (record {} bytes; {} per-worker rows per phase in the wide one)",
        db.display(),
        serde_json::to_string(&rs).unwrap().len(),
        1024
    );
    let t0 = Instant::now();
    let first = time(&db, &rs, 1, "first");
    println!(
        "the first run (creates the file and its tables): {:.2} ms",
        first.wall[0]
    );
    // Warm-up, not counted: the file's pages in the page cache.
    time(&db, &rs, 20, "warm");
    summary(
        "typical record, small history",
        time(&db, &rs, runs, "small"),
    );
    {
        let mut h = History::open(&db, Access::Write).unwrap();
        for i in 0..prefill {
            let mut r = rs.clone();
            r.started = format!("2029-01-01T00:00:00Z fill {i}");
            h.insert(&Entry::of_run(&r, "run", &Extra::default()).unwrap(), None)
                .unwrap();
        }
    }
    let label = format!("typical record, {prefill} runs before");
    summary(&label, time(&db, &rs, runs, "big"));
    let w = wide(1024);
    println!(
        "wide record: {} bytes",
        serde_json::to_string(&w).unwrap().len()
    );
    summary(
        "1,024 workers per phase",
        time(&db, &w, runs.min(50), "wide"),
    );
    println!(
        "history file: {} bytes; total {:.1} s",
        std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0),
        t0.elapsed().as_secs_f64()
    );
}
