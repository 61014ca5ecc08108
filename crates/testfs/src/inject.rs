//! What the file system adds to plain pass-through: delays, a bandwidth
//! cap and faults, decided per request.
//!
//! Everything here is shared by all service threads and is lock-free except
//! the token bucket's one small critical section (a reservation, not a
//! sleep), so the injector itself never serialises requests: a request
//! waits for its own deadline only, on its own thread.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::shape::{Credit, Origin, Served, Slots, Step};

/// Which faults to inject, as configured on the command line.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Data requests fail with EIO once this many bytes were served.
    pub eio_after_bytes: Option<u64>,
    /// Data requests fail with EIO once this many data requests were served.
    pub eio_after_ops: Option<u64>,
    /// Writes fail with ENOSPC once this many bytes were written in all.
    pub enospc_after_bytes: Option<u64>,
    /// Serve at most half of each write (at least 1 byte).
    pub short_writes: bool,
    /// Serve at most half of each read (at least 1 byte).
    pub short_reads: bool,
    /// fsync and fdatasync return EIO.
    pub fsync_fail: bool,
    /// Only paths (relative to the mount) containing this are faulted.
    pub path_substr: Option<String>,
}

impl Faults {
    /// True if any fault is configured.
    pub fn any(&self) -> bool {
        self.eio_after_bytes.is_some()
            || self.eio_after_ops.is_some()
            || self.enospc_after_bytes.is_some()
            || self.short_writes
            || self.short_reads
            || self.fsync_fail
    }

    /// Whether faults apply to a file at `rel` (its path inside the mount).
    pub fn applies_to(&self, rel: &str) -> bool {
        match &self.path_substr {
            Some(s) => rel.contains(s.as_str()),
            None => true,
        }
    }
}

/// Delays and the bandwidth cap.
#[derive(Debug, Clone, Default)]
pub struct Timing {
    /// Minimum service time of each read or write request.
    pub delay: Duration,
    /// Added to every metadata request (lookup, getattr, create, unlink, …).
    pub meta_delay: Duration,
    /// When set, `meta_delay` applies only to lookups, creates, mknods,
    /// mkdirs and unlinks of names whose path inside the mount contains
    /// this: one slow directory, to plant one slow worker.
    pub meta_delay_path_substr: Option<String>,
    /// Added to every fsync / fdatasync.
    pub fsync_delay: Duration,
    /// Aggregate cap on data bytes per second, across all requests.
    pub bw: Option<u64>,
    /// Spread of the data delay: each read or write request's delay is
    /// drawn uniformly from `delay ± delay_jitter` (never below 0), so the
    /// mean stays `delay` while repetitions and requests vary.
    pub delay_jitter: Duration,
    /// Seed of the delay draws: the n-th data request of a mount always
    /// gets the same delay.
    pub seed: u64,
    /// Burst credits: `(credit bytes, baseline bytes/s)`.
    pub credit: Option<(u64, u64)>,
    /// A latency step: the data delay changes at a time.
    pub step: Option<Step>,
    /// A server of K slots with a fixed service time per data request.
    pub slots: Option<(u32, Duration)>,
}

/// SplitMix64 of `seed` and `n` (Steele, Lea & Flood, OOPSLA 2014): a
/// stateless draw, so concurrent requests need no lock to get theirs.
pub fn draw(seed: u64, n: u64) -> f64 {
    let mut z = seed.wrapping_add(n.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Direction of a data request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// A read request.
    Read,
    /// A write request.
    Write,
}

/// Why a data request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// An injected I/O error (EIO).
    Eio,
    /// An injected full file system (ENOSPC).
    Enospc,
}

impl Refusal {
    /// The errno the kernel gets.
    pub fn errno(self) -> i32 {
        match self {
            Refusal::Eio => libc::EIO,
            Refusal::Enospc => libc::ENOSPC,
        }
    }
}

/// Counts of what was served and injected, for the summary at exit.
#[derive(Debug, Default)]
pub struct Counters {
    /// Read requests served (including refused ones).
    pub reads: AtomicU64,
    /// Write requests served (including refused ones).
    pub writes: AtomicU64,
    /// Bytes returned by reads.
    pub read_bytes: AtomicU64,
    /// Bytes accepted by writes.
    pub write_bytes: AtomicU64,
    /// Metadata requests.
    pub meta: AtomicU64,
    /// fsync requests.
    pub fsyncs: AtomicU64,
    /// Injected errors (EIO, ENOSPC, failed fsync).
    pub injected_errors: AtomicU64,
    /// Transfers cut short on purpose.
    pub short: AtomicU64,
    /// Requests received, by opcode (in the order of [`OPCODES`]).
    by_opcode: [AtomicU64; OPCODES.len()],
}

/// The requests counted by name: the opcodes this file system serves,
/// named as the kernel names them (`enum fuse_opcode`), so that the
/// counts compare one to one with a trace of the kernel's requests.
pub const OPCODES: [&str; 29] = [
    "FUSE_LOOKUP",
    "FUSE_GETATTR",
    "FUSE_SETATTR",
    "FUSE_READLINK",
    "FUSE_SYMLINK",
    "FUSE_MKNOD",
    "FUSE_MKDIR",
    "FUSE_UNLINK",
    "FUSE_RMDIR",
    "FUSE_RENAME",
    "FUSE_RENAME2",
    "FUSE_LINK",
    "FUSE_OPEN",
    "FUSE_READ",
    "FUSE_WRITE",
    "FUSE_STATFS",
    "FUSE_RELEASE",
    "FUSE_FSYNC",
    "FUSE_SETXATTR",
    "FUSE_GETXATTR",
    "FUSE_LISTXATTR",
    "FUSE_REMOVEXATTR",
    "FUSE_FLUSH",
    "FUSE_OPENDIR",
    "FUSE_READDIR",
    "FUSE_RELEASEDIR",
    "FUSE_FSYNCDIR",
    "FUSE_ACCESS",
    "FUSE_CREATE",
];

impl Counters {
    /// Counts one request of `opcode`, a name from [`OPCODES`].
    pub fn request(&self, opcode: &str) {
        let i = OPCODES.iter().position(|o| *o == opcode);
        debug_assert!(i.is_some(), "unknown opcode {opcode}");
        if let Some(i) = i {
            self.by_opcode[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The requests received so far, `FUSE_LOOKUP 3, FUSE_OPEN 1`: each
    /// opcode seen at least once, in the order of [`OPCODES`].
    pub fn by_opcode(&self) -> String {
        let seen: Vec<String> = OPCODES
            .iter()
            .zip(&self.by_opcode)
            .map(|(o, n)| (o, n.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .map(|(o, n)| format!("{o} {n}"))
            .collect();
        if seen.is_empty() {
            "none".into()
        } else {
            seen.join(", ")
        }
    }
}

/// A token bucket that hands out completion times instead of sleeping:
/// each request reserves `bytes / rate` seconds of the link after whatever
/// was reserved before it. Requests still run concurrently; only their
/// completion times are spread out so that the aggregate rate never
/// exceeds the cap (no burst credit is kept: an idle link does not let the
/// next requests go faster than the cap).
#[derive(Debug)]
pub struct Bucket {
    rate: f64,
    next_free: Mutex<Instant>,
}

impl Bucket {
    /// A bucket that lets `bytes_per_s` through.
    pub fn new(bytes_per_s: u64) -> Bucket {
        Bucket {
            rate: bytes_per_s as f64,
            next_free: Mutex::new(Instant::now()),
        }
    }

    /// Reserves `bytes` and returns when their transfer is complete.
    pub fn reserve(&self, bytes: u64, now: Instant) -> Instant {
        let cost = Duration::from_secs_f64(bytes as f64 / self.rate);
        let mut next = self.next_free.lock().unwrap_or_else(|e| e.into_inner());
        let start = (*next).max(now);
        *next = start + cost;
        *next
    }
}

/// The per-mount injector: configuration plus the shared counters the
/// "after N" faults count against.
#[derive(Debug)]
pub struct Injector {
    /// The faults.
    pub faults: Faults,
    /// The delays and the cap.
    pub timing: Timing,
    bucket: Option<Bucket>,
    /// Data bytes served to faultable files (for --eio-after-bytes).
    fault_bytes: AtomicU64,
    /// Data requests served on faultable files (for --eio-after-ops).
    fault_ops: AtomicU64,
    /// Bytes written to faultable files (for --enospc-after-bytes).
    fault_written: AtomicU64,
    /// Data requests whose delay was drawn (the index of the next draw).
    draws: AtomicU64,
    /// What happened, for the summary.
    pub counters: Counters,
    /// The burst-credit balance, when one is set.
    pub credit: Option<Credit>,
    /// The K-slot server, when one is set.
    pub slots: Option<Slots>,
    /// The first data request: the clock of the time-dependent shapes.
    pub origin: Origin,
    /// Data served (at reply time), for the interval log.
    pub served: Served,
}

impl Injector {
    /// An injector for these settings.
    pub fn new(faults: Faults, timing: Timing) -> Injector {
        Injector {
            bucket: timing.bw.map(Bucket::new),
            credit: timing.credit.map(|(c, b)| Credit::new(c, b)),
            slots: timing.slots.map(|(k, t)| Slots::new(k, t)),
            origin: Origin::default(),
            served: Served::default(),
            faults,
            timing,
            fault_bytes: AtomicU64::new(0),
            fault_ops: AtomicU64::new(0),
            fault_written: AtomicU64::new(0),
            draws: AtomicU64::new(0),
            counters: Counters::default(),
        }
    }

    /// Decides how much of a data request of `len` bytes to serve, or
    /// refuses it. `faulty` says whether faults apply to this file.
    ///
    /// Order: the EIO counters first (a device error wins over everything),
    /// then the short-transfer cut, then the space left. ENOSPC behaves like
    /// a real full file system: a write that crosses the limit is accepted
    /// up to it (a short write) and the next one fails.
    pub fn admit(&self, dir: Dir, len: usize, faulty: bool) -> Result<usize, Refusal> {
        if !faulty || len == 0 {
            return Ok(len);
        }
        let f = &self.faults;
        if let Some(n) = f.eio_after_ops {
            if self.fault_ops.fetch_add(1, Ordering::Relaxed) >= n {
                return self.refuse(Refusal::Eio);
            }
        }
        let mut take = len;
        let short = match dir {
            Dir::Read => f.short_reads,
            Dir::Write => f.short_writes,
        };
        if short && take > 1 {
            take = (take / 2).max(1);
        }
        if let Some(n) = f.eio_after_bytes {
            if self.fault_bytes.fetch_add(take as u64, Ordering::Relaxed) >= n {
                return self.refuse(Refusal::Eio);
            }
        }
        if dir == Dir::Write {
            if let Some(n) = f.enospc_after_bytes {
                let mut cur = self.fault_written.load(Ordering::Relaxed);
                loop {
                    let room = n.saturating_sub(cur);
                    if room == 0 {
                        return self.refuse(Refusal::Enospc);
                    }
                    let got = (take as u64).min(room);
                    match self.fault_written.compare_exchange_weak(
                        cur,
                        cur + got,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => {
                            take = got as usize;
                            break;
                        }
                        Err(now) => cur = now,
                    }
                }
            }
        }
        if take < len {
            self.counters.short.fetch_add(1, Ordering::Relaxed);
        }
        Ok(take)
    }

    fn refuse(&self, r: Refusal) -> Result<usize, Refusal> {
        self.counters
            .injected_errors
            .fetch_add(1, Ordering::Relaxed);
        Err(r)
    }

    /// When a data request that arrived at `arrived` and moved `bytes` may
    /// complete: not before its delay has passed, nor before the bandwidth
    /// cap has let its bytes through, the burst credits have paid for
    /// them, or a slot of the K-slot server has served it — the latest of
    /// these.
    pub fn data_deadline(&self, arrived: Instant, bytes: u64) -> Instant {
        let origin = self.origin.at(arrived);
        let mut done = arrived + self.data_delay(arrived);
        let now = Instant::now();
        if let (Some(b), true) = (&self.bucket, bytes > 0) {
            done = done.max(b.reserve(bytes, now));
        }
        if let (Some(c), true) = (&self.credit, bytes > 0) {
            done = done.max(c.reserve(bytes, now, origin));
        }
        if let Some(s) = &self.slots {
            done = done.max(s.reserve(arrived));
        }
        done
    }

    /// Holds a data request that arrived at `arrived` and moved `bytes`
    /// until [`Injector::data_deadline`], then counts it as served.
    pub fn serve_data(&self, arrived: Instant, bytes: u64) {
        if let Some(s) = &self.slots {
            s.enter();
        }
        sleep_until(self.data_deadline(arrived, bytes));
        if let Some(s) = &self.slots {
            s.leave();
        }
        self.served.done(bytes, arrived.elapsed());
    }

    /// The delay of a data request arriving at `now`: `--delay`, or the
    /// step's delay once its time has come; a draw around it when a
    /// jitter is set.
    pub fn data_delay(&self, now: Instant) -> Duration {
        let t = &self.timing;
        let base = match (t.step, self.origin.get()) {
            (Some(step), Some(o)) if now.saturating_duration_since(o) >= step.after => step.to,
            _ => t.delay,
        };
        if t.delay_jitter.is_zero() {
            return base;
        }
        let n = self.draws.fetch_add(1, Ordering::Relaxed);
        let u = draw(t.seed, n) * 2.0 - 1.0;
        let d = base.as_secs_f64() + u * t.delay_jitter.as_secs_f64();
        Duration::from_secs_f64(d.max(0.0))
    }

    /// One line of the interval log: the time since the first data
    /// request, and what was served since the previous line (`prev`,
    /// updated): bytes, requests, their mean time in the file system,
    /// and the credit balance and requests in the K-slot server when
    /// those are set. `None` before the first data request.
    pub fn interval_line(&self, now: Instant, prev: &mut (u64, u64, u64)) -> Option<String> {
        let t = now.saturating_duration_since(self.origin.get()?);
        let cur = self.served.snapshot();
        let (bytes, reqs, ns) = (
            cur.0.wrapping_sub(prev.0),
            cur.1.wrapping_sub(prev.1),
            cur.2.wrapping_sub(prev.2),
        );
        *prev = cur;
        let mean_us = ns.checked_div(reqs).unwrap_or(0) / 1000;
        let mut line = format!(
            "interval t={:.3}s bytes={bytes} requests={reqs} mean_us={mean_us}",
            t.as_secs_f64()
        );
        if let Some(c) = &self.credit {
            line += &format!(" credit_bytes={:.0}", c.balance(now));
        }
        if let Some(s) = &self.slots {
            line += &format!(" in_server={}", s.in_server());
        }
        Some(line)
    }

    /// Whether fsync on a file fails on purpose.
    pub fn fsync_fails(&self, faulty: bool) -> bool {
        let fail = faulty && self.faults.fsync_fail;
        if fail {
            self.counters
                .injected_errors
                .fetch_add(1, Ordering::Relaxed);
        }
        fail
    }

    /// One line summing up what was served and injected (and when the
    /// burst credits ran out, when they did).
    pub fn summary(&self) -> String {
        let c = &self.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let spent = match self.credit.as_ref().and_then(Credit::spent) {
            Some((t, b)) => format!(
                "; burst credit spent {:.3} s after the first data request, after {b} bytes",
                t.as_secs_f64()
            ),
            None if self.credit.is_some() => "; burst credit never spent".into(),
            None => String::new(),
        };
        format!(
            "{} reads ({} bytes), {} writes ({} bytes), {} fsyncs, {} metadata requests, \
             {} injected errors, {} short transfers{spent}",
            l(&c.reads),
            l(&c.read_bytes),
            l(&c.writes),
            l(&c.write_bytes),
            l(&c.fsyncs),
            l(&c.meta),
            l(&c.injected_errors),
            l(&c.short)
        )
    }
}

/// Sleeps until `t` (returns at once if it has passed).
pub fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inj(f: Faults) -> Injector {
        Injector::new(f, Timing::default())
    }

    #[test]
    fn eio_after_bytes_counts_whole_requests() {
        let i = inj(Faults {
            eio_after_bytes: Some(100),
            ..Faults::default()
        });
        assert_eq!(i.admit(Dir::Write, 60, true), Ok(60));
        assert_eq!(i.admit(Dir::Read, 60, true), Ok(60));
        assert_eq!(i.admit(Dir::Write, 60, true), Err(Refusal::Eio));
        // Files the faults do not apply to are untouched and uncounted.
        assert_eq!(i.admit(Dir::Write, 60, false), Ok(60));
    }

    #[test]
    fn eio_after_ops() {
        let i = inj(Faults {
            eio_after_ops: Some(2),
            ..Faults::default()
        });
        assert!(i.admit(Dir::Read, 1, true).is_ok());
        assert!(i.admit(Dir::Read, 1, true).is_ok());
        assert_eq!(i.admit(Dir::Read, 1, true), Err(Refusal::Eio));
    }

    #[test]
    fn enospc_serves_up_to_the_limit() {
        let i = inj(Faults {
            enospc_after_bytes: Some(100),
            ..Faults::default()
        });
        assert_eq!(i.admit(Dir::Write, 64, true), Ok(64));
        assert_eq!(i.admit(Dir::Read, 64, true), Ok(64));
        assert_eq!(i.admit(Dir::Write, 64, true), Ok(36));
        assert_eq!(i.admit(Dir::Write, 64, true), Err(Refusal::Enospc));
        assert_eq!(Refusal::Enospc.errno(), 28);
    }

    #[test]
    fn short_transfers_halve_but_never_reach_zero() {
        let i = inj(Faults {
            short_reads: true,
            ..Faults::default()
        });
        assert_eq!(i.admit(Dir::Read, 65536, true), Ok(32768));
        assert_eq!(i.admit(Dir::Read, 3, true), Ok(1));
        assert_eq!(i.admit(Dir::Read, 1, true), Ok(1));
        assert_eq!(i.admit(Dir::Write, 64, true), Ok(64));
    }

    #[test]
    fn bucket_spreads_completions() {
        let b = Bucket::new(1000);
        let t0 = Instant::now();
        let a = b.reserve(100, t0);
        let c = b.reserve(100, t0);
        assert!(a >= t0 + Duration::from_millis(99));
        assert!(c >= t0 + Duration::from_millis(199));
    }

    #[test]
    fn jittered_delays_are_seeded_spread_and_centred() {
        let t = Timing {
            delay: Duration::from_millis(4),
            delay_jitter: Duration::from_millis(3),
            seed: 7,
            ..Timing::default()
        };
        let a = Injector::new(Faults::default(), t.clone());
        let b = Injector::new(Faults::default(), t.clone());
        let da: Vec<Duration> = (0..2000).map(|_| a.data_delay(Instant::now())).collect();
        let db: Vec<Duration> = (0..2000).map(|_| b.data_delay(Instant::now())).collect();
        assert_eq!(da, db, "same seed, same delays");
        let ms: Vec<f64> = da.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        let lo = ms.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ms.iter().copied().fold(0.0, f64::max);
        let mean = ms.iter().sum::<f64>() / ms.len() as f64;
        assert!(
            (1.0..1.1).contains(&lo) && hi <= 7.0 && hi > 6.9,
            "{lo} {hi}"
        );
        assert!((mean - 4.0).abs() < 0.1, "{mean}");
        let c = Injector::new(Faults::default(), Timing { seed: 8, ..t });
        assert_ne!(
            c.data_delay(Instant::now()),
            da[0],
            "another seed, other delays"
        );
        // Without jitter the delay is exact.
        let d = inj(Faults::default());
        assert_eq!(d.data_delay(Instant::now()), Duration::ZERO);
    }

    #[test]
    fn requests_are_counted_by_opcode() {
        let c = Counters::default();
        assert_eq!(c.by_opcode(), "none");
        c.request("FUSE_CREATE");
        c.request("FUSE_LOOKUP");
        c.request("FUSE_CREATE");
        assert_eq!(c.by_opcode(), "FUSE_LOOKUP 1, FUSE_CREATE 2");
    }

    #[test]
    fn path_filter() {
        let f = Faults {
            path_substr: Some("file.0001".into()),
            ..Faults::default()
        };
        assert!(f.applies_to("ioscale.d/file.00010000"));
        assert!(!f.applies_to("ioscale.d/file.00000000"));
    }
}
