//! Service that changes over time or queues: burst credits, a latency
//! step, and a server with K parallel slots — the known answers of
//! throughput over time (a burst-credit volume's drop to its baseline, a
//! latency that steps up mid-run) and of the optimum parallelism (a
//! server that takes K requests at once).
//!
//! Like the bandwidth cap in [`crate::inject`], each of them hands out
//! completion times under a short lock (a reservation, never a sleep):
//! the request then waits for its own deadline on its own service thread,
//! so requests are still served concurrently and only their completions
//! are spread out as the shape demands.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A burst-credit volume (as EBS gp2 or EFS in bursting mode): a balance
/// of `credit` bytes, full at mount, that data requests spend; it refills
/// at `baseline` bytes per second up to `credit`. While the balance holds
/// a request's bytes, the request completes at once (the burst rate is
/// whatever else limits it: `--bw`, the delay, the CPUs); once it is
/// spent, a request completes when the refill has paid for its bytes, so
/// the volume serves `baseline` bytes per second.
///
/// Kept as a balance that may go negative (a debt the refill pays off in
/// order), so requests that arrive together complete one after another at
/// the baseline rate without any of them sleeping under the lock.
#[derive(Debug)]
pub struct Credit {
    capacity: f64,
    baseline: f64,
    state: Mutex<CreditState>,
    /// Nanoseconds from the first data request to the first request the
    /// balance could not pay for (0: not yet), and the bytes served before.
    spent_at_ns: AtomicU64,
    spent_after_bytes: AtomicU64,
}

#[derive(Debug)]
struct CreditState {
    balance: f64,
    at: Option<Instant>,
    reserved: u64,
}

impl Credit {
    /// A full balance of `credit` bytes refilled at `baseline` bytes/s.
    pub fn new(credit: u64, baseline: u64) -> Credit {
        Credit {
            capacity: credit as f64,
            baseline: baseline.max(1) as f64,
            state: Mutex::new(CreditState {
                balance: credit as f64,
                at: None,
                reserved: 0,
            }),
            spent_at_ns: AtomicU64::new(0),
            spent_after_bytes: AtomicU64::new(0),
        }
    }

    /// Spends `bytes` at `now` and returns when the balance has paid for
    /// them. `origin` is the time of the first data request (the clock of
    /// [`Credit::spent`]).
    pub fn reserve(&self, bytes: u64, now: Instant, origin: Instant) -> Instant {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let since =
            s.at.map_or(0.0, |at| now.saturating_duration_since(at).as_secs_f64());
        s.balance = (s.balance + since * self.baseline).min(self.capacity);
        s.at = Some(s.at.map_or(now, |at| at.max(now)));
        s.balance -= bytes as f64;
        let before = s.reserved;
        s.reserved = s.reserved.saturating_add(bytes);
        if s.balance >= 0.0 {
            return now;
        }
        if self.spent_at_ns.load(Ordering::Relaxed) == 0 {
            let t = now.saturating_duration_since(origin).as_nanos() as u64;
            self.spent_after_bytes.store(before, Ordering::Relaxed);
            self.spent_at_ns.store(t.max(1), Ordering::Relaxed);
        }
        later(now, -s.balance / self.baseline)
    }

    /// The balance now, bytes (negative: requests wait for the refill).
    pub fn balance(&self, now: Instant) -> f64 {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let since =
            s.at.map_or(0.0, |at| now.saturating_duration_since(at).as_secs_f64());
        (s.balance + since * self.baseline).min(self.capacity)
    }

    /// When the balance first ran out: time since the first data request
    /// and the bytes reserved before that request; `None` while it holds.
    pub fn spent(&self) -> Option<(Duration, u64)> {
        let ns = self.spent_at_ns.load(Ordering::Relaxed);
        (ns > 0).then(|| {
            (
                Duration::from_nanos(ns),
                self.spent_after_bytes.load(Ordering::Relaxed),
            )
        })
    }
}

/// `secs` after `now`, or a year after it when that is further (or not a
/// number): a debt of terabytes at a baseline of a few bytes per second
/// must not overflow the clock.
fn later(now: Instant, secs: f64) -> Instant {
    const YEAR: Duration = Duration::from_secs(365 * 86_400);
    let d = Duration::try_from_secs_f64(secs).unwrap_or(YEAR).min(YEAR);
    now.checked_add(d).unwrap_or(now)
}

/// A server that takes at most `K` requests at once, each for a fixed
/// service time: a request that arrives when all K slots are busy waits
/// for the first to free (first come, first served), so K clients are
/// served at K / service requests per second and more only queue.
#[derive(Debug)]
pub struct Slots {
    service: Duration,
    free_at: Mutex<Vec<Instant>>,
    waiting: AtomicU64,
}

impl Slots {
    /// `k` slots (at least 1) of `service` each.
    pub fn new(k: u32, service: Duration) -> Slots {
        let now = Instant::now();
        Slots {
            service,
            free_at: Mutex::new(vec![now; k.max(1) as usize]),
            waiting: AtomicU64::new(0),
        }
    }

    /// Takes the slot that frees first and returns when this request's
    /// service there ends.
    pub fn reserve(&self, now: Instant) -> Instant {
        let mut lanes = self.free_at.lock().unwrap_or_else(|e| e.into_inner());
        let Some(lane) = lanes.iter_mut().min() else {
            return now + self.service;
        };
        let done = (*lane).max(now) + self.service;
        *lane = done;
        done
    }

    /// Requests in the server (in service or waiting for a slot) now.
    pub fn in_server(&self) -> u64 {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Counts a request in or out of the server.
    pub fn enter(&self) {
        self.waiting.fetch_add(1, Ordering::Relaxed);
    }

    /// See [`Slots::enter`].
    pub fn leave(&self) {
        self.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A data delay that steps from `--delay` to `to` once `after` has
/// passed since the first data request.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    /// Time from the first data request to the step.
    pub after: Duration,
    /// The delay of each data request from then on.
    pub to: Duration,
}

/// The clock of the time-dependent shapes: it starts at the first data
/// request of the mount, so "30 s in" means 30 s of I/O, not of waiting
/// for a client to start.
#[derive(Debug, Default)]
pub struct Origin(OnceLock<Instant>);

impl Origin {
    /// The first data request's arrival, set by the first caller.
    pub fn at(&self, now: Instant) -> Instant {
        *self.0.get_or_init(|| now)
    }

    /// The first data request's arrival, if one came.
    pub fn get(&self) -> Option<Instant> {
        self.0.get().copied()
    }
}

/// What the interval log counts: data completed (at reply time) and the
/// time requests spent in the file system.
#[derive(Debug, Default)]
pub struct Served {
    /// Bytes of data requests replied to.
    pub bytes: AtomicU64,
    /// Data requests replied to.
    pub requests: AtomicU64,
    /// Their summed time from arrival to reply, ns.
    pub service_ns: AtomicU64,
}

impl Served {
    /// Counts a data request replied to after `took`, having moved `bytes`.
    pub fn done(&self, bytes: u64, took: Duration) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.service_ns
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Bytes, requests and summed service ns so far.
    pub fn snapshot(&self) -> (u64, u64, u64) {
        (
            self.bytes.load(Ordering::Relaxed),
            self.requests.load(Ordering::Relaxed),
            self.service_ns.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// Drives a credit with a client that always has `depth` requests of
    /// `size` outstanding, on a virtual clock: returns the completion
    /// times, seconds from the start.
    fn drive(c: &Credit, size: u64, n: usize, depth: usize) -> Vec<f64> {
        let t0 = Instant::now();
        let mut out: Vec<Instant> = Vec::new();
        let mut issue = vec![t0; depth];
        for i in 0..n {
            let at = issue[i % depth];
            let done = c.reserve(size, at, t0);
            out.push(done);
            issue[i % depth] = done;
        }
        out.iter().map(|t| (*t - t0).as_secs_f64()).collect()
    }

    #[test]
    fn credit_serves_at_once_then_at_the_baseline() {
        // 8 MiB of credit, 1 MiB/s refill, 1 MiB requests: the first 8 go
        // at once (the burst), then one per second.
        let c = Credit::new(8 * MIB, MIB);
        let t = drive(&c, MIB, 14, 1);
        assert!(t[..8].iter().all(|&x| x < 0.01), "{t:?}");
        for (k, x) in t[8..].iter().enumerate() {
            assert!((x - (k as f64 + 1.0)).abs() < 0.02, "{t:?}");
        }
        let (at, before) = c.spent().unwrap();
        assert!(at < Duration::from_millis(10));
        assert_eq!(before, 8 * MIB);
    }

    #[test]
    fn concurrent_requests_after_the_credit_complete_in_order() {
        let c = Credit::new(0, 4 * MIB);
        let t = drive(&c, MIB, 12, 4);
        // Four clients at once: completions every 0.25 s, 4 MiB/s in all.
        for (k, x) in t.iter().enumerate() {
            assert!((x - 0.25 * (k as f64 + 1.0)).abs() < 0.02, "{t:?}");
        }
    }

    #[test]
    fn credit_refills_at_the_baseline_up_to_its_size() {
        let c = Credit::new(4 * MIB, MIB);
        let t0 = Instant::now();
        assert_eq!(c.reserve(4 * MIB, t0, t0), t0);
        // 2 s idle refill 2 MiB; the cap keeps 10 s of idling at 4 MiB.
        let t2 = t0 + Duration::from_secs(2);
        assert!((c.balance(t2) - 2.0 * MIB as f64).abs() < 1.0);
        assert!((c.balance(t0 + Duration::from_secs(10)) - 4.0 * MIB as f64).abs() < 1.0);
        assert_eq!(c.reserve(2 * MIB, t2, t0), t2);
        let late = c.reserve(MIB, t2, t0);
        assert!((late - t2).as_secs_f64() > 0.99);
        assert_eq!(c.spent().unwrap().1, 6 * MIB);
    }

    #[test]
    fn a_huge_debt_does_not_overflow_the_clock() {
        let c = Credit::new(0, 1);
        let t0 = Instant::now();
        let done = c.reserve(u64::MAX, t0, t0);
        assert_eq!(done - t0, Duration::from_secs(365 * 86_400));
        assert!(c.reserve(u64::MAX, t0, t0) >= done);
    }

    #[test]
    fn slots_serve_k_at_once_first_come_first_served() {
        let s = Slots::new(2, Duration::from_millis(10));
        let t0 = Instant::now();
        let done: Vec<u128> = (0..6).map(|_| (s.reserve(t0) - t0).as_millis()).collect();
        assert_eq!(done, vec![10, 10, 20, 20, 30, 30]);
        // A request after the queue drained is served at once.
        let later = t0 + Duration::from_millis(100);
        assert_eq!(s.reserve(later) - later, Duration::from_millis(10));
    }

    #[test]
    fn origin_is_the_first_caller() {
        let o = Origin::default();
        assert!(o.get().is_none());
        let t0 = Instant::now();
        assert_eq!(o.at(t0), t0);
        assert_eq!(o.at(t0 + Duration::from_secs(1)), t0);
    }
}
