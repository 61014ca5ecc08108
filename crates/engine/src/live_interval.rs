//! The running phase's last completed interval, for the progress display
//! (issue 28): taken from the series the workers record for the phase's
//! record ([`crate::series::Recorder`]), not from a second sampler.
//!
//! When a worker's recording passes the end of a display interval (the
//! interval the record reports at, [`crate::SeriesGrid::report_ns`], or
//! wider once a long phase has coarsened its series), it sums the
//! intervals its series has closed into that interval and publishes the
//! sum into a small ring of its own slot, then how far it has closed.
//! This happens once per interval, off the per-operation path; a worker
//! that recorded nothing in an interval publishes nothing for it (it
//! counts as zero). An interval is complete once every worker of the
//! phase in this process has closed past it (or ended); [`latest`] sums
//! the newest complete one across the slots. So the figure shown is the
//! sum of the very intervals the record keeps for this process, and
//! under MPI it is this rank's own share.
//!
//! Every slot is zero until a worker joins: the statics live in zeroed
//! memory and cost nothing while nobody listens.

use std::sync::atomic::{fence, AtomicU64, Ordering};

use crate::live::SLOTS;

/// Display intervals each slot keeps: a display that falls this many
/// intervals behind shows nothing rather than a figure it cannot be sure
/// of.
pub const RING: u64 = 8;

/// One published interval: `tag` is its start (ns) + 1, 0 while it is
/// written or when empty (a seqlock: the reader checks it twice).
#[derive(Default)]
struct Entry {
    tag: AtomicU64,
    dur: AtomicU64,
    ops: AtomicU64,
    bytes: AtomicU64,
}

#[repr(align(128))]
#[derive(Default)]
struct Slot {
    /// ns up to which every interval is published, + 1; 0: no worker.
    closed: AtomicU64,
    /// 1 once the worker has ended (everything it did is published).
    ended: AtomicU64,
    ring: [Entry; RING as usize],
}

#[allow(clippy::declare_interior_mutable_const)]
const ENTRY: Entry = Entry {
    tag: AtomicU64::new(0),
    dur: AtomicU64::new(0),
    ops: AtomicU64::new(0),
    bytes: AtomicU64::new(0),
};
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    closed: AtomicU64::new(0),
    ended: AtomicU64::new(0),
    ring: [ENTRY; RING as usize],
};
static SHARES: [Slot; SLOTS] = [EMPTY; SLOTS];
/// The widest interval published in this phase, ns.
static UNIT: AtomicU64 = AtomicU64::new(0);

/// The newest interval every worker of this process has closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    /// Start, ns from the phase's start (its epoch).
    pub start_ns: u64,
    /// Length, ns.
    pub dur_ns: u64,
    /// Operations (files, for a metadata phase) completed in it.
    pub ops: u64,
    /// Bytes moved in it.
    pub bytes: u64,
}

impl Interval {
    /// MiB/s over the interval.
    pub fn mib_s(&self) -> f64 {
        self.bytes as f64 / 1_048_576.0 / (self.dur_ns as f64 / 1e9)
    }

    /// Operations per second over the interval.
    pub fn ops_s(&self) -> f64 {
        self.ops as f64 / (self.dur_ns as f64 / 1e9)
    }
}

/// Forgets the last phase's intervals (the driver's
/// [`crate::live::begin`], before the workers start).
pub(crate) fn reset() {
    UNIT.store(0, Ordering::Relaxed);
    for s in &SHARES {
        s.closed.store(0, Ordering::Relaxed);
        s.ended.store(0, Ordering::Relaxed);
        for e in &s.ring {
            e.tag.store(0, Ordering::Relaxed);
        }
    }
    fence(Ordering::Release);
}

/// A worker takes part: nothing is complete until it closes past it.
pub(crate) fn join(slot: u32) {
    let s = &SHARES[slot as usize % SLOTS];
    s.ended.store(0, Ordering::Relaxed);
    s.closed.store(1, Ordering::Release);
}

/// A worker's share of the interval `[start_ns, start_ns + dur_ns)`.
pub(crate) fn publish(slot: u32, start_ns: u64, dur_ns: u64, ops: u64, bytes: u64) {
    let e = &SHARES[slot as usize % SLOTS].ring[((start_ns / dur_ns) % RING) as usize];
    e.tag.store(0, Ordering::Relaxed);
    fence(Ordering::Release);
    e.dur.store(dur_ns, Ordering::Relaxed);
    e.ops.store(ops, Ordering::Relaxed);
    e.bytes.store(bytes, Ordering::Relaxed);
    e.tag.store(start_ns + 1, Ordering::Release);
    UNIT.fetch_max(dur_ns, Ordering::AcqRel);
}

/// A worker has published every interval before `upto_ns`; `ended`: and
/// will publish no more.
pub(crate) fn close(slot: u32, upto_ns: u64, ended: bool) {
    let s = &SHARES[slot as usize % SLOTS];
    s.closed.store(upto_ns.saturating_add(1), Ordering::Release);
    if ended {
        s.ended.store(1, Ordering::Release);
    }
}

/// The newest interval of `dur_ns` that every running worker has closed,
/// summed over the workers; `None` before the first, after the last
/// worker ended, or when a reading was torn or overrun.
pub fn latest() -> Option<Interval> {
    let dur_ns = width()?;
    let running = SHARES
        .iter()
        .filter(|s| s.closed.load(Ordering::Acquire) > 0 && s.ended.load(Ordering::Acquire) == 0)
        .map(|s| s.closed.load(Ordering::Acquire) - 1)
        .min()?;
    let end = running / dur_ns * dur_ns;
    let start = end.checked_sub(dur_ns)?;
    let mut sum = Interval {
        start_ns: start,
        dur_ns,
        ops: 0,
        bytes: 0,
    };
    let i = ((start / dur_ns) % RING) as usize;
    for s in SHARES
        .iter()
        .filter(|s| s.closed.load(Ordering::Acquire) > 0)
    {
        let e = &s.ring[i];
        let t1 = e.tag.load(Ordering::Acquire);
        let (d, ops, bytes) = (
            e.dur.load(Ordering::Relaxed),
            e.ops.load(Ordering::Relaxed),
            e.bytes.load(Ordering::Relaxed),
        );
        fence(Ordering::Acquire);
        let t2 = e.tag.load(Ordering::Relaxed);
        // Overrun: the worker may have written a later interval here.
        let closed = s.closed.load(Ordering::Acquire).saturating_sub(1);
        if t1 != t2 || closed >= start.saturating_add(RING * dur_ns) {
            return None;
        }
        if t1 == start + 1 {
            if d != dur_ns {
                return None;
            }
            sum.ops += ops;
            sum.bytes += bytes;
        }
    }
    Some(sum)
}

/// The display interval the workers publish on now: the widest any
/// worker has published (a long phase coarsens its series); `None`
/// before the first.
pub fn width() -> Option<u64> {
    Some(UNIT.load(Ordering::Acquire)).filter(|u| *u > 0)
}
