//! Live counters of the running phase, for a progress display.
//!
//! Each worker thread of this process owns one slot (a cache line of its
//! own, so no two workers share a line) and stores its running totals
//! there with relaxed atomic stores after each batch of completions: no
//! lock, no allocation, no formatting and no extra clock read in the I/O
//! loop. A display thread sums the slots a few times a second
//! ([`snapshot`]). The driver names the phase before its workers start
//! ([`begin`]) and hands over its reduced figures when it is recorded
//! ([`finished`]); nothing here is printed.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Slots, one per worker thread of this process (worker `w` uses slot
/// `w % SLOTS`; the threads of one process have consecutive indices, so
/// up to `SLOTS` threads never share one).
pub const SLOTS: usize = 1024;

#[repr(align(128))]
struct Slot {
    units: AtomicU64,
    bytes: AtomicU64,
    /// Since the process started, over every phase: requests, bytes and
    /// summed latency (ns); never reset.
    all_units: AtomicU64,
    all_bytes: AtomicU64,
    all_lat_ns: AtomicU64,
    /// The reads and the writes among them, each counted apart (kept
    /// only with [`crate::worker::Detail`] on), so a sampler can split a
    /// mixed phase by direction without subtracting one reading from
    /// another taken at a different moment.
    r_units: AtomicU64,
    r_bytes: AtomicU64,
    r_lat_ns: AtomicU64,
    w_units: AtomicU64,
    w_bytes: AtomicU64,
    w_lat_ns: AtomicU64,
    /// Summed submission latency of reads and of writes, likewise.
    r_slat_ns: AtomicU64,
    w_slat_ns: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    units: AtomicU64::new(0),
    bytes: AtomicU64::new(0),
    all_units: AtomicU64::new(0),
    all_bytes: AtomicU64::new(0),
    all_lat_ns: AtomicU64::new(0),
    r_units: AtomicU64::new(0),
    r_bytes: AtomicU64::new(0),
    r_lat_ns: AtomicU64::new(0),
    w_units: AtomicU64::new(0),
    w_bytes: AtomicU64::new(0),
    w_lat_ns: AtomicU64::new(0),
    r_slat_ns: AtomicU64::new(0),
    w_slat_ns: AtomicU64::new(0),
};
static COUNTS: [Slot; SLOTS] = [EMPTY; SLOTS];
static RUNNING: AtomicBool = AtomicBool::new(false);
static LISTENING: AtomicBool = AtomicBool::new(false);
static PHASE: Mutex<Option<Running>> = Mutex::new(None);
static DONE: Mutex<Vec<Finished>> = Mutex::new(Vec::new());

/// What a phase is, told by the driver before its workers start.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseInfo {
    /// The operation (write, read, create, …).
    pub op: String,
    /// Repetition, from 0.
    pub rep: u32,
    /// Units of work are bytes (data) rather than files (metadata).
    pub moves_data: bool,
    /// Bytes (data) or files (metadata) this process's workers will do;
    /// 0 when unknown.
    pub expected: u64,
    /// The phase's time limit, if any.
    pub time_limit: Option<Duration>,
}

/// The running phase: its description and when it began.
#[derive(Debug, Clone)]
struct Running {
    info: PhaseInfo,
    started: Instant,
}

/// The running phase as a display sees it.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// What runs.
    pub info: PhaseInfo,
    /// Since [`begin`].
    pub elapsed: Duration,
    /// Requests (data) or files (metadata) done by this process so far.
    pub units: u64,
    /// Bytes moved by this process so far.
    pub bytes: u64,
}

/// A recorded phase's reduced figures (of all ranks), as the report has
/// them.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// The operation.
    pub op: String,
    /// Repetition, from 0.
    pub rep: u32,
    /// Bytes moved in all.
    pub bytes: u64,
    /// Files (metadata phases), or `None` for data phases.
    pub files: Option<u64>,
    /// The phase's elapsed time in seconds.
    pub elapsed_s: f64,
    /// Aggregate MiB/s.
    pub bw_mib_s: f64,
    /// Aggregate operations (or files) per second.
    pub ops_s: f64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Called by the driver before a phase's workers start: clears the slots
/// (and the intervals of [`crate::live_interval`]) and names the phase.
pub fn begin(info: PhaseInfo) {
    for s in &COUNTS {
        s.units.store(0, Ordering::Relaxed);
        s.bytes.store(0, Ordering::Relaxed);
    }
    crate::live_interval::reset();
    *lock(&PHASE) = Some(Running {
        info,
        started: Instant::now(),
    });
    RUNNING.store(true, Ordering::Release);
}

/// Called by the driver once the phase's workers have all returned.
pub fn end() {
    RUNNING.store(false, Ordering::Release);
    *lock(&PHASE) = None;
}

/// A worker's running totals: two relaxed stores into its own slot.
#[inline]
pub fn publish(worker: u32, units: u64, bytes: u64) {
    let s = &COUNTS[worker as usize % SLOTS];
    s.units.store(units, Ordering::Relaxed);
    s.bytes.store(bytes, Ordering::Relaxed);
}

/// A data worker's totals over every phase so far (requests, bytes,
/// summed latency in ns): three relaxed stores into its own slot, beside
/// [`publish`]. The worker adds its phase's counts to what
/// [`lifetime`] gave when the phase began, so the totals only grow.
#[inline]
pub fn publish_lifetime(worker: u32, units: u64, bytes: u64, lat_ns: u64) {
    let s = &COUNTS[worker as usize % SLOTS];
    s.all_units.store(units, Ordering::Relaxed);
    s.all_bytes.store(bytes, Ordering::Relaxed);
    s.all_lat_ns.store(lat_ns, Ordering::Relaxed);
}

/// A worker's [`publish_lifetime`] totals by direction: reads' and
/// writes' (requests, bytes, summed latency in ns), published the same
/// way.
#[inline]
pub fn publish_lifetime_dirs(worker: u32, reads: (u64, u64, u64), writes: (u64, u64, u64)) {
    let s = &COUNTS[worker as usize % SLOTS];
    s.r_units.store(reads.0, Ordering::Relaxed);
    s.r_bytes.store(reads.1, Ordering::Relaxed);
    s.r_lat_ns.store(reads.2, Ordering::Relaxed);
    s.w_units.store(writes.0, Ordering::Relaxed);
    s.w_bytes.store(writes.1, Ordering::Relaxed);
    s.w_lat_ns.store(writes.2, Ordering::Relaxed);
}

/// A worker's summed submission latency (ns) of reads and of writes over
/// every phase, published like [`publish_lifetime`].
#[inline]
pub fn publish_lifetime_slat(worker: u32, slat_ns: [u64; 2]) {
    let s = &COUNTS[worker as usize % SLOTS];
    s.r_slat_ns.store(slat_ns[0], Ordering::Relaxed);
    s.w_slat_ns.store(slat_ns[1], Ordering::Relaxed);
}

/// What [`publish_lifetime_slat`] stored: reads', writes' (ns).
pub fn lifetime_slat(worker: u32) -> [u64; 2] {
    let s = &COUNTS[worker as usize % SLOTS];
    [
        s.r_slat_ns.load(Ordering::Relaxed),
        s.w_slat_ns.load(Ordering::Relaxed),
    ]
}

/// [`lifetime`]'s totals by direction, `[reads, writes]`; zero unless the
/// workers keep per-direction figures ([`crate::worker::Detail`] on).
pub fn lifetime_dirs(worker: u32) -> [(u64, u64, u64); 2] {
    let s = &COUNTS[worker as usize % SLOTS];
    [
        (
            s.r_units.load(Ordering::Relaxed),
            s.r_bytes.load(Ordering::Relaxed),
            s.r_lat_ns.load(Ordering::Relaxed),
        ),
        (
            s.w_units.load(Ordering::Relaxed),
            s.w_bytes.load(Ordering::Relaxed),
            s.w_lat_ns.load(Ordering::Relaxed),
        ),
    ]
}

/// One worker slot's totals over every phase: (requests, bytes, summed
/// latency in ns), for a sampler that logs per-interval figures (fio's
/// bw/iops/lat logs) across phases.
pub fn lifetime(worker: u32) -> (u64, u64, u64) {
    let s = &COUNTS[worker as usize % SLOTS];
    (
        s.all_units.load(Ordering::Relaxed),
        s.all_bytes.load(Ordering::Relaxed),
        s.all_lat_ns.load(Ordering::Relaxed),
    )
}

/// Whether a display listens ([`listen`]): the workers then share their
/// completed intervals ([`crate::live_interval`]).
pub fn listening() -> bool {
    LISTENING.load(Ordering::Acquire)
}

/// The running phase and this process's counts, or `None` between phases.
pub fn snapshot() -> Option<Snapshot> {
    if !RUNNING.load(Ordering::Acquire) {
        return None;
    }
    let r = lock(&PHASE).clone()?;
    let (units, bytes) = totals(&COUNTS);
    Some(Snapshot {
        info: r.info,
        elapsed: r.started.elapsed(),
        units,
        bytes,
    })
}

/// The phase's (requests, bytes) summed over `slots`.
fn totals(slots: &[Slot]) -> (u64, u64) {
    slots.iter().fold((0, 0), |(u, b), s| {
        (
            u + s.units.load(Ordering::Relaxed),
            b + s.bytes.load(Ordering::Relaxed),
        )
    })
}

/// Called by the driver (on the rank that records) with a recorded
/// phase's figures.
/// Kept only while a display listens ([`listen`]).
pub fn finished(f: Finished) {
    if LISTENING.load(Ordering::Acquire) {
        lock(&DONE).push(f);
    }
}

/// A display starts (`true`) or stops (`false`) collecting the recorded
/// phases; either way the ones not yet taken are dropped.
pub fn listen(on: bool) {
    LISTENING.store(on, Ordering::Release);
    lock(&DONE).clear();
}

/// The phases recorded since the last call, oldest first.
pub fn take_finished() -> Vec<Finished> {
    std::mem::take(&mut *lock(&DONE))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The phase state is global: the tests that begin and end phases take
    /// turns (one's `end` would otherwise end the other's phase).
    static TURN: Mutex<()> = Mutex::new(());

    #[test]
    fn slots_sum_and_reset_per_phase() {
        let _t = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let info = PhaseInfo {
            op: "write".into(),
            rep: 0,
            moves_data: true,
            expected: 300,
            time_limit: None,
        };
        // Slots no other test's workers use: the engine's tests that run
        // workers publish into the first slots meanwhile.
        let (a, b) = (SLOTS as u32 - 2, SLOTS as u32 - 1);
        let mine = || totals(&COUNTS[a as usize..=b as usize]);
        begin(info.clone());
        publish(a, 1, 100);
        publish(b, 2, 200);
        publish(a, 2, 150);
        assert_eq!(mine(), (4, 350));
        let s = snapshot().unwrap();
        assert!(s.units >= 4 && s.bytes >= 350, "{s:?}");
        assert_eq!(s.info, info);
        end();
        assert!(snapshot().is_none());
        begin(PhaseInfo { rep: 1, ..info });
        assert_eq!(mine(), (0, 0));
        assert_eq!(snapshot().unwrap().info.rep, 1);
        end();
        let f = Finished {
            op: "write".into(),
            rep: 0,
            bytes: 350,
            files: None,
            elapsed_s: 1.0,
            bw_mib_s: 0.0,
            ops_s: 4.0,
        };
        finished(f.clone());
        assert!(take_finished().is_empty(), "kept with nobody listening");
        listen(true);
        finished(f.clone());
        assert_eq!(take_finished(), vec![f]);
        assert!(take_finished().is_empty());
        listen(false);
    }

    #[test]
    fn lifetime_totals_outlast_phases() {
        let _t = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let w = 1000;
        publish_lifetime(w, 3, 300, 90);
        begin(PhaseInfo {
            op: "read".into(),
            rep: 0,
            moves_data: true,
            expected: 0,
            time_limit: None,
        });
        assert_eq!(lifetime(w), (3, 300, 90), "begin keeps them");
        end();
    }
}
