//! Drives the MPI coordinator alone, without file I/O, for its CI tests
//! (`crates/coord/tests/mpi_nodes.rs`) and the scale benchmark
//! (`scripts/bench-coord`): phases of simulated work with the stonewall,
//! abort and phase-end collectives, a node-merged gather of a
//! histogram-sized payload, and optional per-rank rows.
//!
//! Usage: `mpirun … coord-probe [--phases N] [--work-ms M] [--words W]
//! [--rows] [--abort-phase P] [--stall-rank R --stall-phase P]
//! [--kill-rank R --kill-phase P] [--slow-rank R --slow-ms M]`.
//! Rank 0 prints one `phase …` line per phase; every rank prints one
//! `agree …` line per phase with what the phase-end collective told it.

use std::time::{Duration, Instant};

use coord::{Coordinator, Signal};

struct Opts {
    phases: u64,
    work_ms: u64,
    words: usize,
    rows: bool,
    abort_phase: Option<u64>,
    stall: Option<(u32, u64)>,
    kill: Option<(u32, u64)>,
    slow: Option<(u32, u64)>,
}

fn parse() -> Opts {
    let mut o = Opts {
        phases: 3,
        work_ms: 0,
        words: 64,
        rows: false,
        abort_phase: None,
        stall: None,
        kill: None,
        slow: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut stall_rank = None;
    let mut stall_phase = None;
    let mut kill_rank = None;
    let mut kill_phase = None;
    let mut slow_rank = None;
    let mut slow_ms = None;
    let mut i = 0;
    while i < args.len() {
        let val = |i: usize| -> u64 {
            args.get(i + 1)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| {
                    eprintln!("coord-probe: {} needs a number", args[i]);
                    std::process::exit(2)
                })
        };
        match args[i].as_str() {
            "--phases" => o.phases = val(i),
            "--work-ms" => o.work_ms = val(i),
            "--words" => o.words = val(i) as usize,
            "--abort-phase" => o.abort_phase = Some(val(i)),
            "--stall-rank" => stall_rank = Some(val(i) as u32),
            "--stall-phase" => stall_phase = Some(val(i)),
            "--kill-rank" => kill_rank = Some(val(i) as u32),
            "--kill-phase" => kill_phase = Some(val(i)),
            "--slow-rank" => slow_rank = Some(val(i) as u32),
            "--slow-ms" => slow_ms = Some(val(i)),
            "--rows" => {
                o.rows = true;
                i += 1;
                continue;
            }
            a => {
                eprintln!("coord-probe: unknown argument {a}");
                std::process::exit(2)
            }
        }
        i += 2;
    }
    if let (Some(r), Some(p)) = (stall_rank, stall_phase) {
        o.stall = Some((r, p));
    }
    if let (Some(r), Some(p)) = (kill_rank, kill_phase) {
        o.kill = Some((r, p));
    }
    if let (Some(r), Some(ms)) = (slow_rank, slow_ms) {
        o.slow = Some((r, ms));
    }
    o
}

/// Peak resident set of this process, KiB (VmHWM).
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// A histogram-like payload: `words` counters, merged by adding.
fn merge_counts(acc: &mut Vec<u64>, other: Vec<u64>) {
    if acc.len() < other.len() {
        acc.resize(other.len(), 0);
    }
    for (a, b) in acc.iter_mut().zip(other) {
        *a += b;
    }
}

fn main() {
    let o = parse();
    let c = match coord::init() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("coord-probe: {e}");
            std::process::exit(2)
        }
    };
    let c: &dyn Coordinator = &*c;
    let hosts = c.gather_wire_as(&c.hostname()).expect("host names decode");
    if let Some(h) = hosts {
        println!("hosts {}", h.join(","));
    }
    for phase in 1..=o.phases {
        run_phase(c, &o, phase);
    }
}

/// How long each collective step of a phase took on this rank.
struct Times {
    barrier: Duration,
    end: Duration,
    gather: Duration,
}

/// One phase: the start barrier, the simulated work with its signals, the
/// phase-end collective, then the merged gather and its line.
fn run_phase(c: &dyn Coordinator, o: &Opts, phase: u64) {
    let rank = c.rank();
    let s0 = c.stats();
    let t0 = Instant::now();
    if let Err(e) = c.barrier_within(None) {
        eprintln!("coord-probe: rank {rank}: {e}");
        c.abort(3);
    }
    let barrier = t0.elapsed();
    let mut sig = c.signals(phase);
    misbehave(o, rank, phase);
    let mut heard_first = work(c, o, phase, sig.as_mut());
    let t1 = Instant::now();
    let end = match sig.end(None, 1 << (rank % 8)) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("coord-probe: rank {rank} ({}): {e}", c.hostname());
            c.abort(3);
        }
    };
    drop(sig);
    let end_t = t1.elapsed();
    heard_first |= end.signals.contains(&Signal::FirstDone(1000 + phase));
    println!(
        "agree rank {rank} phase {phase} first {} abort {} flags {} heard {}",
        end.first_done_ns.unwrap_or(0),
        end.abort as u8,
        end.flags,
        heard_first as u8
    );
    let times = Times {
        barrier,
        end: end_t,
        gather: Duration::ZERO,
    };
    gather(c, o, phase, times, &s0, &end);
}

/// The faults a test asked of this rank in this phase: stop answering (a
/// hung node, SIGSTOP) or die (a crashed node, SIGKILL).
fn misbehave(o: &Opts, rank: u32, phase: u64) {
    for (when, sig) in [(o.stall, "-STOP"), (o.kill, "-KILL")] {
        if when == Some((rank, phase)) {
            let _ = std::process::Command::new("kill")
                .args([sig, &std::process::id().to_string()])
                .status();
        }
    }
}

/// The simulated work: the phase's designated rank announces the first
/// finish (and the abort, when asked), every rank polls for signals until
/// its work time is up, the others then announce theirs. Returns whether
/// this rank heard the designated first finish.
fn work(
    c: &dyn Coordinator,
    o: &Opts,
    phase: u64,
    sig: &mut (dyn coord::PhaseSignals + '_),
) -> bool {
    let rank = c.rank();
    let designated = (phase % c.size() as u64) as u32;
    let mut heard_first = false;
    if rank == designated {
        sig.announce(Signal::FirstDone(1000 + phase));
        if o.abort_phase == Some(phase) {
            sig.announce(Signal::Abort);
        }
    }
    let extra = match o.slow {
        Some((r, ms)) if r == rank => ms,
        _ => 0,
    };
    let work_end = Instant::now() + Duration::from_millis(o.work_ms + extra);
    loop {
        for s in sig.poll() {
            if s == Signal::FirstDone(1000 + phase) {
                heard_first = true;
            }
        }
        if Instant::now() >= work_end {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    if rank != designated {
        sig.announce(Signal::FirstDone(5_000_000 + rank as u64));
    }
    heard_first
}

/// The merged gather (every rank's counters summed at node leaders, then
/// at rank 0), the optional per-rank rows, and rank 0's `phase` line.
fn gather(
    c: &dyn Coordinator,
    o: &Opts,
    phase: u64,
    mut times: Times,
    s0: &coord::CoordStats,
    end: &coord::PhaseEnd,
) {
    let (rank, size) = (c.rank(), c.size());
    let t2 = Instant::now();
    let mine: Vec<u64> = (0..o.words as u64).map(|w| w + rank as u64).collect();
    let merged = c.reduce_as(&mine, merge_counts).expect("counters decode");
    let rows = if o.rows {
        c.gather_wire_as(&mine).expect("rows decode")
    } else {
        None
    };
    times.gather = t2.elapsed();
    let s1 = c.stats();
    // What this phase cost each rank, before the bookkeeping below adds its own.
    let mine_cost = [s1.p2p_sent - s0.p2p_sent, s1.collectives - s0.collectives];
    let worst = c
        .reduce_as(&mine_cost.to_vec(), |a, b| {
            for (x, y) in a.iter_mut().zip(b) {
                *x = (*x).max(y);
            }
        })
        .expect("costs decode");
    let (Some(m), Some(w)) = (merged, worst) else {
        return;
    };
    let n = size as u64;
    let ok = m.len() == o.words
        && m.iter()
            .enumerate()
            .all(|(i, &v)| v == n * i as u64 + n * (n - 1) / 2);
    let rows_ok = rows.as_ref().is_none_or(|r| {
        r.len() == size as usize && r.iter().enumerate().all(|(i, v)| v[0] == i as u64)
    });
    println!(
        "phase {phase} ranks {size} barrier_us {} end_us {} gather_us {} coord_us {} \
         p2p_max {} coll_max {} bytes_root {} rss_kib {} skew_us {:.1} merged_ok {} rows_ok {}",
        times.barrier.as_micros(),
        times.end.as_micros(),
        times.gather.as_micros(),
        (times.barrier + times.end + times.gather).as_micros(),
        w[0],
        w[1],
        s1.bytes_gathered - s0.bytes_gathered,
        peak_rss_kib(),
        end.start_skew_ns.unwrap_or(0) as f64 / 1e3,
        ok as u8,
        rows_ok as u8
    );
}
