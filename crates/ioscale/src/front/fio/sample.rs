//! Per-interval figures of each worker, for fio's bw/iops lines and its
//! `write_bw_log`/`write_lat_log`/`write_iops_log` files.
//!
//! A thread of its own reads the engine's live lifetime counters (each
//! worker's requests, bytes and summed latency over every phase, and the
//! same per direction, which the workers store after every batch of
//! completions) once per interval and keeps the differences, one tick per
//! direction that did something. It never touches the workers' I/O loop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use spec::Op;

/// One interval of one worker.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    /// End of the interval, ms since the sampler started (fio's log time).
    pub t_ms: u64,
    /// Length of the interval, ms (shorter at a phase's start and end).
    pub dt_ms: f64,
    /// Writes (fio's ddir 1) rather than reads.
    pub write: bool,
    /// Requests completed in the interval.
    pub ios: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Summed latency of those requests, ns.
    pub lat_ns: u64,
    /// The part of it before the submit call returned (slat), ns; 0
    /// where the engine hands requests over in its wait.
    pub slat_ns: u64,
    /// The interval is a whole one (fio keeps only those as bw/iops
    /// samples; its latency log also takes the last, partial one).
    pub full: bool,
}

impl Tick {
    /// Direction as fio's logs write it: 0 read, 1 write.
    pub fn ddir(&self) -> u8 {
        u8::from(self.write)
    }
    /// KiB/s over the interval.
    pub fn kib_s(&self) -> f64 {
        self.bytes as f64 / 1024.0 / (self.dt_ms / 1000.0)
    }
    /// Requests per second over the interval.
    pub fn iops(&self) -> f64 {
        self.ios as f64 / (self.dt_ms / 1000.0)
    }
}

/// The running sampler.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    t0: Instant,
    handle: JoinHandle<Vec<Vec<Tick>>>,
}

/// What a sampler gathered.
pub struct Sampled {
    /// Each worker's intervals.
    pub ticks: Vec<Vec<Tick>>,
    /// When it started: the origin of the logs' times (fio's job start).
    pub t0: Instant,
}

struct State {
    t0: Instant,
    every: Duration,
    /// Per worker: the last reading.
    prev: Vec<Reading>,
    /// Workers per step of the run's concurrency group, in order.
    sizes: Vec<u32>,
    /// The operation of each worker's phase at the last reading.
    ops: Vec<Op>,
    win_start: Instant,
    ticks: Vec<Vec<Tick>>,
}

impl State {
    /// Takes every worker's change since the last reading; the `last`
    /// reading (at the end) is a partial interval.
    fn tick(&mut self, now: Instant, last: bool) {
        if let Some(snap) = engine::live::snapshot() {
            // A group's phase is named by its steps' operations in order
            // (`write+randread`).
            let mut w = 0usize;
            for (n, name) in self.sizes.iter().zip(snap.info.op.split('+')) {
                let end = (w + *n as usize).min(self.ops.len());
                if let Some(op) = Op::parse(name) {
                    self.ops[w..end].iter_mut().for_each(|o| *o = op);
                }
                w = end;
            }
        }
        let dt = now.saturating_duration_since(self.win_start);
        // Readings follow a fixed schedule, so a late one shortens the
        // next interval a little: still a whole one.
        let full = !last && dt * 2 >= self.every;
        let t_ms = now.saturating_duration_since(self.t0).as_millis() as u64;
        let dt_ms = dt.as_secs_f64() * 1000.0;
        for (w, prev) in self.prev.iter_mut().enumerate() {
            let cur = Reading::of(w as u32);
            let sub = |a: (u64, u64, u64), b: (u64, u64, u64)| {
                (
                    a.0.saturating_sub(b.0),
                    a.1.saturating_sub(b.1),
                    a.2.saturating_sub(b.2),
                )
            };
            let all = sub(cur.all, prev.all);
            let rd = sub(cur.dirs[0], prev.dirs[0]);
            let wr = sub(cur.dirs[1], prev.dirs[1]);
            let slat = [0, 1].map(|k| cur.slat[k].saturating_sub(prev.slat[k]));
            // Single-direction phases by their operation; a mix by what
            // the workers count per direction (never by subtracting one
            // counter from another read at a different moment).
            let split = match self.ops[w] {
                Op::Rw | Op::Randrw => [(false, rd, slat[0]), (true, wr, slat[1])],
                op => [(!op.reads(), all, slat[0] + slat[1]), (false, (0, 0, 0), 0)],
            };
            for (write, (ios, bytes, lat_ns), slat_ns) in split {
                if ios > 0 && !dt.is_zero() {
                    self.ticks[w].push(Tick {
                        t_ms,
                        dt_ms,
                        write,
                        ios,
                        bytes,
                        lat_ns,
                        slat_ns,
                        full,
                    });
                }
            }
            *prev = cur;
        }
        self.win_start = now;
    }
}

impl Sampler {
    /// Starts sampling every `every` the workers of a run's steps (their
    /// workers numbered one after another), each step given as its
    /// workers and first operation.
    pub fn start(steps: Vec<(u32, Op)>, every: Duration) -> Sampler {
        let workers: u32 = steps.iter().map(|s| s.0).sum();
        let ops: Vec<Op> = steps
            .iter()
            .flat_map(|&(n, op)| std::iter::repeat_n(op, n as usize))
            .collect();
        let sizes = steps.iter().map(|s| s.0).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        // Totals of earlier runs in this process are not this run's.
        let prev: Vec<_> = (0..workers).map(Reading::of).collect();
        let t0 = Instant::now();
        let handle = std::thread::spawn(move || {
            let mut st = State {
                t0,
                every,
                prev,
                sizes,
                ops,
                win_start: t0,
                ticks: vec![Vec::new(); workers as usize],
            };
            let mut k = 1u32;
            loop {
                let next = t0 + every * k;
                loop {
                    let now = Instant::now();
                    if flag.load(Ordering::Acquire) || now >= next {
                        break;
                    }
                    std::thread::park_timeout(next - now);
                }
                let last = flag.load(Ordering::Acquire);
                st.tick(Instant::now(), last);
                if last {
                    break;
                }
                // A late wake-up skips the intervals it missed.
                let since = t0.elapsed().as_nanos() / every.as_nanos().max(1);
                k = (since as u32).saturating_add(1).max(k + 1);
            }
            st.ticks
        });
        Sampler { stop, t0, handle }
    }

    /// Stops (after one last reading) and returns each worker's intervals.
    pub fn finish(self) -> Sampled {
        self.stop.store(true, Ordering::Release);
        self.handle.thread().unpark();
        Sampled {
            ticks: self.handle.join().unwrap_or_default(),
            t0: self.t0,
        }
    }
}

impl Sampled {
    /// Nothing sampled (no pass was recorded).
    pub fn none() -> Sampled {
        Sampled {
            ticks: Vec::new(),
            t0: Instant::now(),
        }
    }
}

/// A worker's lifetime totals.
#[derive(Debug, Clone, Copy)]
struct Reading {
    /// All requests: count, bytes, summed latency (ns).
    all: (u64, u64, u64),
    /// Reads and writes, each counted apart.
    dirs: [(u64, u64, u64); 2],
    /// Summed submission latency of reads, of writes (ns).
    slat: [u64; 2],
}

impl Reading {
    fn of(w: u32) -> Reading {
        Reading {
            all: engine::live::lifetime(w),
            dirs: engine::live::lifetime_dirs(w),
            slat: engine::live::lifetime_slat(w),
        }
    }
}

/// The bw (KiB/s) and iops samples of one worker in one direction.
pub fn samples(ticks: &[Tick], reads: bool) -> (Vec<f64>, Vec<f64>) {
    ticks
        .iter()
        .filter(|t| t.full && t.write != reads)
        .map(|t| (t.kib_s(), t.iops()))
        .unzip()
}
