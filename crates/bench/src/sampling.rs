//! Per-interval figures of each worker ([`crate::plan::Rules::samples`]),
//! taken by the executor so that no front-end keeps a clock: fio's bw/iops
//! samples and its `write_bw_log`/`write_lat_log`/`write_iops_log` files
//! are rendered from them.
//!
//! A thread of its own reads the engine's live lifetime counters (each
//! worker's requests, bytes and summed latency over every phase, and the
//! same per direction, which the workers store after every batch of
//! completions) once per interval and keeps the differences, one tick per
//! direction that did something. It never touches the workers' I/O loop.
//! It reads this process's workers only.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use spec::Op;

use crate::plan::{Plan, Work};

/// One interval of one worker.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    /// End of the interval, ms since the sampling's origin
    /// ([`Sampled::since`]).
    pub t_ms: u64,
    /// Length of the interval, ms (shorter at a phase's start and end).
    pub dt_ms: f64,
    /// Writes rather than reads.
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
    /// The interval is a whole one (not the last, partial one).
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

/// What the sampling gathered over a plan.
#[derive(Debug, Clone)]
pub struct Sampled {
    /// Each worker's intervals: the workers of the first sampled stage's
    /// steps, numbered one after another.
    pub ticks: Vec<Vec<Tick>>,
    /// When it started: the start of the first recorded pass (or of the
    /// first driver call), on this process's clock.
    origin: Instant,
}

impl Sampled {
    /// How long after the origin `t` came (zero for a moment before it):
    /// where a request completed or a pass started, on the ticks' time
    /// axis.
    pub fn since(&self, t: Instant) -> Duration {
        t.saturating_duration_since(self.origin)
    }
}

/// The sampling of one execution: started once, at the first recorded
/// pass; ended (one last reading) when the plan is done.
pub(crate) struct Sampling {
    every: Option<Duration>,
    running: Option<Sampler>,
}

impl Sampling {
    /// Sampling every `every` (none: never starts).
    pub(crate) fn new(every: Option<Duration>) -> Sampling {
        Sampling {
            every,
            running: None,
        }
    }

    /// Starts sampling the workers of stage `stage` of `plan`, with its
    /// origin at `at`, unless it is running already.
    pub(crate) fn begin(&mut self, plan: &Plan, stage: usize, at: Instant) {
        let Some(every) = self.every else {
            return;
        };
        if self.running.is_some() {
            return;
        }
        let steps = plan.stages[stage]
            .steps
            .iter()
            .filter_map(|s| match &s.work {
                Work::Data(d) => Some((d.threads, d.ops.first().copied().unwrap_or(Op::Write))),
                _ => None,
            })
            .collect();
        self.running = Some(Sampler::start(steps, every, at));
    }

    /// Stops it; what it gathered, if it started.
    pub(crate) fn end(self) -> Option<Sampled> {
        self.running.map(Sampler::finish)
    }
}

/// The running sampler thread.
struct Sampler {
    stop: Arc<AtomicBool>,
    origin: Instant,
    handle: JoinHandle<Vec<Vec<Tick>>>,
}

struct State {
    t0: Instant,
    every: Duration,
    /// Per worker: the last reading.
    prev: Vec<Reading>,
    /// Workers per step of the concurrency group, in order.
    sizes: Vec<u32>,
    /// The operation of each worker's phase at the last reading.
    ops: Vec<Op>,
    win_start: Instant,
    ticks: Vec<Vec<Tick>>,
}

impl State {
    /// The operation each worker's step runs now: a group's phase is
    /// named by its steps' operations in order (`write+randread`).
    fn follow_ops(&mut self) {
        let Some(snap) = engine::live::snapshot() else {
            return;
        };
        let mut w = 0usize;
        for (n, name) in self.sizes.iter().zip(snap.info.op.split('+')) {
            let end = (w + *n as usize).min(self.ops.len());
            if let Some(op) = Op::parse(name) {
                self.ops[w..end].iter_mut().for_each(|o| *o = op);
            }
            w = end;
        }
    }

    /// Takes every worker's change since the last reading; the `last`
    /// reading (at the end) is a partial interval.
    fn tick(&mut self, now: Instant, last: bool) {
        self.follow_ops();
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

    /// Reads at `t0 + k × every` until `flag` is set, then once more (an
    /// interval past the clock's range: only that last reading).
    fn run(mut self, flag: &AtomicBool) -> Vec<Vec<Tick>> {
        let (t0, every) = (self.t0, self.every);
        let mut k = 1u32;
        loop {
            let next = every.checked_mul(k).and_then(|d| t0.checked_add(d));
            loop {
                let now = Instant::now();
                if flag.load(Ordering::Acquire) || next.is_some_and(|n| now >= n) {
                    break;
                }
                match next {
                    Some(n) => std::thread::park_timeout(n - now),
                    None => std::thread::park(),
                }
            }
            let last = flag.load(Ordering::Acquire);
            self.tick(Instant::now(), last);
            if last {
                break;
            }
            // A late wake-up skips the intervals it missed.
            let since = t0.elapsed().as_nanos() / every.as_nanos().max(1);
            k = u32::try_from(since)
                .unwrap_or(u32::MAX)
                .saturating_add(1)
                .max(k.saturating_add(1));
        }
        self.ticks
    }
}

impl Sampler {
    /// Starts sampling every `every` the workers of a
    /// group's steps (their workers numbered one after another), each
    /// step given as its workers and first operation; `origin` is the
    /// ticks' time zero.
    fn start(steps: Vec<(u32, Op)>, every: Duration, origin: Instant) -> Sampler {
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
        let st = State {
            t0: origin,
            every,
            prev,
            sizes,
            ops,
            win_start: origin,
            ticks: vec![Vec::new(); workers as usize],
        };
        let handle = std::thread::spawn(move || st.run(&flag));
        Sampler {
            stop,
            origin,
            handle,
        }
    }

    /// Stops (after one last reading) and returns each worker's intervals.
    fn finish(self) -> Sampled {
        self.stop.store(true, Ordering::Release);
        self.handle.thread().unpark();
        Sampled {
            ticks: self.handle.join().unwrap_or_default(),
            origin: self.origin,
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
