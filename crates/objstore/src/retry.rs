//! Retries as a measured thing: which answers are retried, how long the
//! client waits between attempts (a backoff the user sets), and the
//! counters that keep throttling and server errors visible instead of
//! folding them into a request's latency.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How a failed attempt is retried: up to `retries` more attempts, the
/// n-th after a wait drawn uniformly from `[0, min(cap, base × 2ⁿ)]`
/// ("full jitter", so that workers throttled together do not retry
/// together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts after the first (0: never retry).
    pub retries: u32,
    /// The first wait's upper bound.
    pub base: Duration,
    /// The largest wait.
    pub cap: Duration,
}

impl Default for RetryPolicy {
    /// 4 retries (5 attempts), waits up to 100 ms, 200 ms, 400 ms, 800 ms,
    /// capped at 5 s.
    fn default() -> Self {
        RetryPolicy {
            retries: 4,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(5),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry `n` (0-based), for a uniform draw `unit` in
    /// [0, 1).
    pub fn wait(&self, n: u32, unit: f64) -> Duration {
        let ceiling = self
            .base
            .saturating_mul(1u32.checked_shl(n.min(31)).unwrap_or(u32::MAX))
            .min(self.cap);
        Duration::try_from_secs_f64(ceiling.as_secs_f64() * unit.clamp(0.0, 1.0))
            .map_or(ceiling, |d| d.min(ceiling))
    }
}

/// What an attempt's failure was, for counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transient {
    /// The store asked the client to slow down: 503 (`SlowDown`) or 429.
    Throttled,
    /// The store failed: 500, 502, 504, or 400 `RequestTimeout`.
    ServerError,
    /// The connection was refused, reset or closed, or timed out.
    Dropped,
}

/// The retries of one request (or, added up, of many): how many attempts
/// failed and why, and the time they cost — kept apart from the latency
/// of the attempt that succeeded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retries {
    /// Attempts answered 503 `SlowDown` or 429.
    pub throttled: u32,
    /// Attempts answered 500, 502, 504 or `RequestTimeout`.
    pub server_errors: u32,
    /// Attempts with no answer (refused, reset, closed, timed out).
    pub dropped: u32,
    /// Time spent in the failed attempts.
    pub failed_time: Duration,
    /// Time spent waiting between attempts.
    pub backoff: Duration,
}

impl Retries {
    /// Failed attempts of any kind.
    pub fn count(&self) -> u32 {
        self.throttled + self.server_errors + self.dropped
    }

    /// Counts one failed attempt.
    pub fn note(&mut self, what: Transient, took: Duration) {
        match what {
            Transient::Throttled => self.throttled += 1,
            Transient::ServerError => self.server_errors += 1,
            Transient::Dropped => self.dropped += 1,
        }
        self.failed_time += took;
    }

    /// Adds another request's retries to these.
    pub fn add(&mut self, other: &Retries) {
        self.throttled += other.throttled;
        self.server_errors += other.server_errors;
        self.dropped += other.dropped;
        self.failed_time += other.failed_time;
        self.backoff += other.backoff;
    }
}

/// The retries of every request a client made, added up as they end: a
/// phase reads it before and after and keeps the difference
/// ([`RetryTally::since`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetryTally {
    /// Requests that needed more than one attempt (whether or not one
    /// succeeded in the end).
    pub retried: u64,
    /// Attempts answered 503 `SlowDown` or 429.
    pub throttled: u64,
    /// Attempts answered 500, 502, 504 or `RequestTimeout`.
    pub server_errors: u64,
    /// Attempts with no answer.
    pub dropped: u64,
    /// Time spent waiting between attempts.
    pub backoff: Duration,
}

impl RetryTally {
    /// What was added after `before` was read.
    pub fn since(&self, before: &RetryTally) -> RetryTally {
        RetryTally {
            retried: self.retried.saturating_sub(before.retried),
            throttled: self.throttled.saturating_sub(before.throttled),
            server_errors: self.server_errors.saturating_sub(before.server_errors),
            dropped: self.dropped.saturating_sub(before.dropped),
            backoff: self.backoff.saturating_sub(before.backoff),
        }
    }

    /// Failed attempts of any kind.
    pub fn attempts(&self) -> u64 {
        self.throttled + self.server_errors + self.dropped
    }
}

/// The shared counters behind [`RetryTally`], added to without a lock.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    retried: AtomicU64,
    throttled: AtomicU64,
    server_errors: AtomicU64,
    dropped: AtomicU64,
    backoff_ns: AtomicU64,
}

impl Tally {
    /// Adds one ended request's retries (nothing when it had none).
    pub(crate) fn add(&self, r: &Retries) {
        if r.count() == 0 {
            return;
        }
        let add = |c: &AtomicU64, n: u64| c.fetch_add(n, Ordering::Relaxed);
        add(&self.retried, 1);
        add(&self.throttled, r.throttled.into());
        add(&self.server_errors, r.server_errors.into());
        add(&self.dropped, r.dropped.into());
        let ns = u64::try_from(r.backoff.as_nanos()).unwrap_or(u64::MAX);
        add(&self.backoff_ns, ns);
    }

    /// The counters now.
    pub(crate) fn read(&self) -> RetryTally {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        RetryTally {
            retried: get(&self.retried),
            throttled: get(&self.throttled),
            server_errors: get(&self.server_errors),
            dropped: get(&self.dropped),
            backoff: Duration::from_nanos(get(&self.backoff_ns)),
        }
    }
}

/// Which answers are worth another attempt.
pub(crate) fn classify_status(status: u16, code: Option<&str>) -> Option<Transient> {
    // A copy can fail after its 200 was sent: the code in the body says.
    match code {
        Some("SlowDown") => return Some(Transient::Throttled),
        Some("InternalError") => return Some(Transient::ServerError),
        _ => {}
    }
    match status {
        503 | 429 => Some(Transient::Throttled),
        500 | 502 | 504 => Some(Transient::ServerError),
        400 if code == Some("RequestTimeout") => Some(Transient::ServerError),
        _ => None,
    }
}

/// A small seeded generator for the jitter (SplitMix64): each connection
/// has its own, so no lock is taken and a run can be replayed.
#[derive(Debug, Clone)]
pub(crate) struct Jitter(u64);

impl Jitter {
    pub(crate) fn new(seed: u64) -> Jitter {
        Jitter(seed)
    }

    /// A uniform draw in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_to_the_cap_and_never_overflow() {
        let p = RetryPolicy::default();
        let w = p.wait(0, 0.5);
        assert!(
            w > Duration::from_millis(49) && w < Duration::from_millis(51),
            "{w:?}"
        );
        assert_eq!(p.wait(3, 1.0), Duration::from_millis(800));
        assert_eq!(p.wait(10, 1.0), Duration::from_secs(5));
        assert_eq!(p.wait(u32::MAX, 1.0), Duration::from_secs(5));
        assert_eq!(p.wait(2, 0.0), Duration::ZERO);
        let huge = RetryPolicy {
            retries: u32::MAX,
            base: Duration::MAX,
            cap: Duration::MAX,
        };
        assert_eq!(huge.wait(40, 1.0), Duration::MAX);
    }

    #[test]
    fn throttles_and_server_errors_are_told_apart() {
        assert_eq!(
            classify_status(503, Some("SlowDown")),
            Some(Transient::Throttled)
        );
        assert_eq!(classify_status(429, None), Some(Transient::Throttled));
        assert_eq!(classify_status(500, None), Some(Transient::ServerError));
        assert_eq!(
            classify_status(400, Some("RequestTimeout")),
            Some(Transient::ServerError)
        );
        assert_eq!(classify_status(400, Some("InvalidArgument")), None);
        assert_eq!(classify_status(403, None), None);
        assert_eq!(
            classify_status(200, Some("InternalError")),
            Some(Transient::ServerError)
        );
        assert_eq!(
            classify_status(200, Some("SlowDown")),
            Some(Transient::Throttled)
        );
        assert_eq!(classify_status(404, None), None);
        let mut r = Retries::default();
        r.note(Transient::Throttled, Duration::from_millis(2));
        r.note(Transient::Dropped, Duration::from_millis(3));
        let mut s = Retries::default();
        s.add(&r);
        s.add(&r);
        assert_eq!((s.throttled, s.dropped, s.count()), (2, 2, 4));
        assert_eq!(s.failed_time, Duration::from_millis(10));
    }

    #[test]
    fn the_tally_counts_retried_requests_and_attempts() {
        let t = Tally::default();
        t.add(&Retries::default());
        let before = t.read();
        assert_eq!(before, RetryTally::default());
        let mut r = Retries::default();
        r.note(Transient::Throttled, Duration::ZERO);
        r.note(Transient::Throttled, Duration::ZERO);
        r.note(Transient::Dropped, Duration::ZERO);
        r.backoff = Duration::from_millis(30);
        t.add(&r);
        t.add(&r);
        let d = t.read().since(&before);
        assert_eq!(
            (d.retried, d.throttled, d.dropped, d.attempts()),
            (2, 4, 2, 6)
        );
        assert_eq!(d.backoff, Duration::from_millis(60));
        assert_eq!(before.since(&t.read()), RetryTally::default());
    }

    #[test]
    fn jitter_is_uniform_enough_and_in_range() {
        let mut j = Jitter::new(7);
        let draws: Vec<f64> = (0..10_000).map(|_| j.unit()).collect();
        assert!(draws.iter().all(|&u| (0.0..1.0).contains(&u)));
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "mean {mean}");
    }
}
