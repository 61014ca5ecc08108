//! Throughput and latency over time: a phase's per-interval series.
//!
//! One figure per phase cannot tell "16 workers are slower" from "the
//! volume's burst credits ran out during the 16-worker point". A series
//! keeps, for every interval of a phase, the operations and bytes per
//! direction, the errors, how many workers were running and a latency
//! histogram, so rates, p50/p99/max and their changes over time can be
//! read back exactly.
//!
//! **The grid.** Interval `i` covers `[i·w, (i+1)·w)` nanoseconds from the
//! phase's common start (the barrier every worker and rank leaves
//! together), so the series of all workers and ranks line up interval by
//! interval and merge by adding counters and histogram buckets: exact,
//! associative and commutative. Percentiles come from the merged
//! histograms, never from averaging per-worker percentiles.
//!
//! **Bounded memory.** A series holds at most `cap` intervals. When a
//! sample lands past the last one, adjacent pairs `(2j, 2j+1)` merge and
//! the width doubles — exact, because every series of a phase shares the
//! grid `w·2^k` from the same start. A 24-hour phase at 1 s with the
//! default cap of 4096 ends with 2700 intervals of 32 s. An interval takes
//! 120 bytes plus 8 per non-empty latency bucket (at most
//! [`SERIES_BUCKETS`] = 608): at most `cap × 4984` bytes (19.5 MiB at the
//! default cap) per series, and about 2.4 MiB when the latencies of each
//! interval spread over a factor of 16 (64 buckets).
//!
//! **Recording.** Each worker owns a [`SeriesRecorder`]: per operation it
//! compares the completion time (which the worker's loop reads anyway)
//! with the end of the current interval, adds to plain counters and
//! increments one bucket of a dense histogram — no lock, no allocation, no
//! formatting. Only when an interval ends (once per interval, not per
//! operation) is the dense histogram folded into the series.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::counters::IoCounters;
use crate::hist::{layout_index, layout_range, quantile_of};

/// log2 of the sub-buckets per power of two of the interval histograms:
/// 16 sub-buckets, so a bucket is at most 1/16 of its lower bound wide
/// and a percentile read from its midpoint is within ≈3 % of a sample.
const SUB_BITS: u32 = 4;

/// Largest latency (ns, ≈ 36 minutes) with a bucket of its own; longer
/// ones share the top bucket, and each interval's maximum stays exact.
const TOP_NS: u64 = (1u64 << 41) - 1;

/// Buckets of an interval histogram.
pub const SERIES_BUCKETS: usize = layout_index(TOP_NS, SUB_BITS, TOP_NS) + 1;

/// Intervals a series holds before adjacent pairs merge (see the module
/// documentation for the memory this bounds).
pub const DEFAULT_CAP: usize = 4096;

/// Bits of a packed histogram entry that hold the count; the bucket index
/// (below 1024) takes the rest.
const COUNT_BITS: u32 = 54;
const COUNT_MASK: u64 = (1u64 << COUNT_BITS) - 1;

const _: () = assert!(SERIES_BUCKETS <= 1 << (64 - COUNT_BITS));

fn pack(index: usize, n: u64) -> u64 {
    ((index as u64) << COUNT_BITS) | n.min(COUNT_MASK)
}

fn unpack(e: u64) -> (usize, u64) {
    ((e >> COUNT_BITS) as usize, e & COUNT_MASK)
}

/// Why a series could not be made, merged or read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeriesError {
    /// An interval of 0 ns.
    ZeroInterval,
    /// A cap below 2 intervals (pairs could not merge).
    CapTooSmall(usize),
    /// Two series on different grids (base interval or cap differ).
    DifferentGrid {
        /// Base interval and cap of the first, ns.
        a: (u64, usize),
        /// Base interval and cap of the second, ns.
        b: (u64, usize),
    },
    /// A record that does not describe a series (what is wrong).
    Invalid(String),
}

impl fmt::Display for SeriesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeriesError::ZeroInterval => write!(f, "a series interval must be above 0"),
            SeriesError::CapTooSmall(c) => {
                write!(f, "a series must hold at least 2 intervals, not {c}")
            }
            SeriesError::DifferentGrid { a, b } => write!(
                f,
                "series on different grids cannot merge ({} ns × {} against {} ns × {})",
                a.0, a.1, b.0, b.1
            ),
            SeriesError::Invalid(why) => write!(f, "not a series: {why}"),
        }
    }
}

impl std::error::Error for SeriesError {}

/// The latency histogram of one interval, sparse: only its non-empty
/// buckets, each packed with its count into one `u64`.
#[derive(Clone, PartialEq, Eq)]
pub struct BinLatency {
    entries: Vec<u64>,
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
}

impl Default for BinLatency {
    fn default() -> Self {
        BinLatency {
            entries: Vec::new(),
            count: 0,
            sum: 0,
            // Neutral for min, so merging an empty histogram changes nothing.
            min: u64::MAX,
            max: 0,
        }
    }
}

// By hand, so a debug print shows `(bucket, count)` pairs rather than
// packed words.
impl fmt::Debug for BinLatency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BinLatency")
            .field("count", &self.count)
            .field("min", &self.min_ns())
            .field("max", &self.max)
            .field("buckets", &self.buckets().collect::<Vec<_>>())
            .finish()
    }
}

impl BinLatency {
    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Exact largest sample, ns (0 when empty).
    pub fn max_ns(&self) -> u64 {
        self.max
    }

    /// Exact smallest sample, ns (0 when empty).
    pub fn min_ns(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    /// Mean, ns (0 when empty).
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The sample at quantile `q` (0..=1), within ≈3 % (the bucket's
    /// midpoint, clamped into the exact extremes); 0 when empty.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        quantile_of(
            self.entries.iter().map(|&e| unpack(e)),
            self.count,
            self.min,
            self.max,
            q,
            SUB_BITS,
        )
    }

    /// The non-empty buckets as `(index, count)`, ascending.
    pub fn buckets(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.entries.iter().map(|&e| unpack(e))
    }

    /// Inclusive ns bounds of bucket `index`.
    pub fn bucket_bounds(index: usize) -> (u64, u64) {
        layout_range(index, SUB_BITS)
    }

    /// Adds every sample of `other` (a merge of the two sorted bucket
    /// lists).
    pub fn merge(&mut self, other: &BinLatency) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = other.clone();
            return;
        }
        let mut out = Vec::with_capacity(self.entries.len().max(other.entries.len()));
        {
            let (mut a, mut b) = (self.buckets().peekable(), other.buckets().peekable());
            loop {
                let (i, n) = match (a.peek().copied(), b.peek().copied()) {
                    (None, None) => break,
                    (Some(x), None) => {
                        a.next();
                        x
                    }
                    (None, Some(y)) => {
                        b.next();
                        y
                    }
                    (Some(x), Some(y)) => match x.0.cmp(&y.0) {
                        std::cmp::Ordering::Less => {
                            a.next();
                            x
                        }
                        std::cmp::Ordering::Greater => {
                            b.next();
                            y
                        }
                        std::cmp::Ordering::Equal => {
                            a.next();
                            b.next();
                            (x.0, x.1.saturating_add(y.1))
                        }
                    },
                };
                out.push(pack(i, n));
            }
        }
        self.entries = out;
        self.count = self.count.saturating_add(other.count);
        self.sum = self.sum.saturating_add(other.sum);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Rebuilds one from its record, checking it.
    fn from_record(r: &LatencyRecord) -> Result<BinLatency, SeriesError> {
        let mut entries = Vec::with_capacity(r.buckets.len());
        let mut total = 0u64;
        let mut last = None;
        for &(i, n) in &r.buckets {
            let i = i as usize;
            if i >= SERIES_BUCKETS || last.is_some_and(|l| l >= i) || n == 0 || n > COUNT_MASK {
                return Err(SeriesError::Invalid(format!(
                    "latency bucket ({i}, {n}) out of order, out of range or empty"
                )));
            }
            last = Some(i);
            total = total
                .checked_add(n)
                .ok_or_else(|| SeriesError::Invalid("latency counts overflow".into()))?;
            entries.push(pack(i, n));
        }
        if total != r.count || (r.count > 0 && r.min_ns > r.max_ns) {
            return Err(SeriesError::Invalid(format!(
                "latency buckets hold {total} samples, the record says {} (min {}, max {})",
                r.count, r.min_ns, r.max_ns
            )));
        }
        Ok(if r.count == 0 {
            BinLatency::default()
        } else {
            BinLatency {
                entries,
                count: r.count,
                sum: r.sum_ns,
                min: r.min_ns,
                max: r.max_ns,
            }
        })
    }

    fn record(&self) -> LatencyRecord {
        LatencyRecord {
            buckets: self.buckets().map(|(i, n)| (i as u16, n)).collect(),
            count: self.count,
            sum_ns: self.sum,
            min_ns: self.min_ns(),
            max_ns: self.max,
        }
    }
}

/// The dense histogram a recorder fills during one interval: one array
/// increment per sample.
#[derive(Clone)]
struct DenseLatency {
    buckets: Box<[u64; SERIES_BUCKETS]>,
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
}

impl DenseLatency {
    fn new() -> DenseLatency {
        DenseLatency {
            buckets: Box::new([0; SERIES_BUCKETS]),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    #[inline(always)]
    fn record(&mut self, ns: u64) {
        self.buckets[layout_index(ns, SUB_BITS, TOP_NS)] += 1;
        self.count += 1;
        self.sum = self.sum.saturating_add(ns);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// The samples so far as a sparse histogram; empties this one.
    fn take(&mut self) -> BinLatency {
        let entries = self
            .buckets
            .iter_mut()
            .enumerate()
            .filter(|(_, n)| **n != 0)
            .map(|(i, n)| pack(i, std::mem::take(n)))
            .collect();
        let out = BinLatency {
            entries,
            count: self.count,
            sum: self.sum,
            min: self.min,
            max: self.max,
        };
        self.count = 0;
        self.sum = 0;
        self.min = u64::MAX;
        self.max = 0;
        out
    }
}

/// What happened in one interval, added up over the workers (and ranks)
/// merged into it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bin {
    /// Operations, bytes per direction and errors completed in the interval.
    pub io: IoCounters,
    /// Nanoseconds the workers were running within the interval, summed
    /// over the workers: divided by the interval's length, the mean
    /// number of workers active.
    pub busy_ns: u64,
    /// Latencies of the operations completed in the interval.
    pub lat: BinLatency,
}

impl Bin {
    /// Adds `other` into this interval.
    pub fn merge(&mut self, other: &Bin) {
        self.io += other.io;
        self.busy_ns = self.busy_ns.saturating_add(other.busy_ns);
        self.lat.merge(&other.lat);
    }
}

/// The figures of one interval, as a reader wants them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BinFigures {
    /// Start, seconds from the phase's start.
    pub t_s: f64,
    /// Length, seconds (the last interval may be shorter than the others).
    pub dur_s: f64,
    /// MiB/s of all operations.
    pub mib_s: f64,
    /// Operations per second.
    pub iops: f64,
    /// Mean number of workers running.
    pub workers: f64,
    /// Latency, µs: mean, p50, p99, max (0 without operations).
    pub lat_mean_us: f64,
    /// Median latency, µs.
    pub lat_p50_us: f64,
    /// 99th-percentile latency, µs.
    pub lat_p99_us: f64,
    /// Largest latency, µs.
    pub lat_max_us: f64,
    /// Bytes moved in the phase before this interval.
    pub bytes_before: u64,
    /// Operations completed in this interval.
    pub ops: u64,
    /// Bytes moved in this interval.
    pub bytes: u64,
    /// Errors in this interval.
    pub errors: u64,
}

/// A phase's series: intervals of `width` ns from the phase's start.
///
/// Serialises as its record: the grid (`interval_ns`, `base_interval_ns`,
/// `cap`, `end_ns`) and one entry per interval with its exact counters
/// and latency buckets beside the figures derived from them (`t_s`,
/// `mib_s`, `iops`, `workers`, `lat_us`), which are recomputed, not read,
/// when a record is loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "SeriesRecord", into = "SeriesRecord")]
pub struct Series {
    base_ns: u64,
    width_ns: u64,
    cap: usize,
    end_ns: u64,
    bins: Vec<Bin>,
}

impl Series {
    /// An empty series of intervals of `interval_ns`, holding at most `cap`.
    pub fn new(interval_ns: u64, cap: usize) -> Result<Series, SeriesError> {
        if interval_ns == 0 {
            return Err(SeriesError::ZeroInterval);
        }
        if cap < 2 {
            return Err(SeriesError::CapTooSmall(cap));
        }
        Ok(Series {
            base_ns: interval_ns,
            width_ns: interval_ns,
            cap,
            end_ns: 0,
            bins: Vec::new(),
        })
    }

    /// The interval asked for, ns.
    pub fn base_ns(&self) -> u64 {
        self.base_ns
    }

    /// The interval now (the one asked for × 2^k after k coarsenings), ns.
    pub fn width_ns(&self) -> u64 {
        self.width_ns
    }

    /// Most intervals held.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Time covered, ns from the phase's start (the last worker's end).
    pub fn end_ns(&self) -> u64 {
        self.end_ns
    }

    /// The intervals, the first starting at the phase's start.
    pub fn bins(&self) -> &[Bin] {
        &self.bins
    }

    /// Everything added up over the intervals.
    pub fn total(&self) -> Bin {
        let mut t = Bin::default();
        for b in &self.bins {
            t.merge(b);
        }
        t
    }

    /// Start and length, ns, of interval `i` (the last is cut at the end).
    pub fn span_ns(&self, i: usize) -> (u64, u64) {
        let start = (i as u64).saturating_mul(self.width_ns);
        let end = start
            .saturating_add(self.width_ns)
            .min(self.end_ns.max(start));
        (start, end - start)
    }

    /// Merges adjacent pairs of intervals and doubles the width.
    pub fn coarsen(&mut self) {
        let mut out = Vec::with_capacity(self.bins.len().div_ceil(2));
        let mut it = std::mem::take(&mut self.bins).into_iter();
        while let Some(mut a) = it.next() {
            if let Some(b) = it.next() {
                a.merge(&b);
            }
            out.push(a);
        }
        self.bins = out;
        self.width_ns = self.width_ns.saturating_mul(2);
    }

    fn coarsen_to(&mut self, width_ns: u64) {
        while self.width_ns < width_ns {
            self.coarsen();
        }
    }

    /// The interval holding time `t_ns`, made (coarsening the series as
    /// needed to stay within the cap) if it does not exist yet.
    fn slot(&mut self, t_ns: u64) -> usize {
        while t_ns / self.width_ns >= self.cap as u64 {
            self.coarsen();
        }
        let i = (t_ns / self.width_ns) as usize;
        if self.bins.len() <= i {
            self.bins.resize_with(i + 1, Bin::default);
        }
        i
    }

    /// Adds `bin` into the interval holding `t_ns`. A recorder adds only
    /// whole intervals of its own width, which lie inside one of the
    /// series' (widths are the base × powers of two from the same start).
    pub fn add(&mut self, t_ns: u64, bin: &Bin) {
        let i = self.slot(t_ns);
        self.bins[i].merge(bin);
    }

    /// Extends the series to cover the time up to `end_ns`.
    pub fn cover(&mut self, end_ns: u64) {
        if end_ns > 0 {
            self.slot(end_ns - 1);
        }
        self.end_ns = self.end_ns.max(end_ns);
    }

    /// Counts one worker as running from `from_ns` to `to_ns`.
    pub fn add_busy(&mut self, from_ns: u64, to_ns: u64) {
        if to_ns <= from_ns {
            return;
        }
        self.cover(to_ns);
        let w = self.width_ns;
        let mut t = from_ns;
        while t < to_ns {
            let i = (t / w) as usize;
            let e = ((i as u64) + 1).saturating_mul(w).min(to_ns);
            self.bins[i].busy_ns = self.bins[i].busy_ns.saturating_add(e - t);
            t = e;
        }
    }

    /// Adds `other` (another worker's or rank's series of the same phase)
    /// into this one, interval by interval. Exact: the finer of the two
    /// is coarsened to the other's width first (and both further if the
    /// merged series would pass the cap), then counters and histograms
    /// add up. Associative and commutative.
    pub fn merge(&mut self, other: &Series) -> Result<(), SeriesError> {
        if (self.base_ns, self.cap) != (other.base_ns, other.cap) {
            return Err(SeriesError::DifferentGrid {
                a: (self.base_ns, self.cap),
                b: (other.base_ns, other.cap),
            });
        }
        let last_ns = |s: &Series| {
            let by_bins = (s.bins.len() as u64).saturating_mul(s.width_ns);
            by_bins.max(s.end_ns).saturating_sub(1)
        };
        let last = last_ns(self).max(last_ns(other));
        let mut width = self.width_ns.max(other.width_ns);
        while last / width >= self.cap as u64 {
            width = width.saturating_mul(2);
        }
        self.coarsen_to(width);
        let mut o = other.clone();
        o.coarsen_to(width);
        if self.bins.len() < o.bins.len() {
            self.bins.resize_with(o.bins.len(), Bin::default);
        }
        for (mine, theirs) in self.bins.iter_mut().zip(&o.bins) {
            mine.merge(theirs);
        }
        self.end_ns = self.end_ns.max(o.end_ns);
        Ok(())
    }

    /// Each interval's figures, in order.
    pub fn figures(&self) -> Vec<BinFigures> {
        let mut before = 0u64;
        self.bins
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let f = self.figures_of(i, b, before);
                before = before.saturating_add(b.io.bytes);
                f
            })
            .collect()
    }

    fn figures_of(&self, i: usize, b: &Bin, bytes_before: u64) -> BinFigures {
        let (start, dur) = self.span_ns(i);
        let dur_s = dur as f64 / 1e9;
        let per_s = |v: f64| if dur_s > 0.0 { v / dur_s } else { 0.0 };
        let us = |ns: u64| ns as f64 / 1e3;
        BinFigures {
            t_s: start as f64 / 1e9,
            dur_s,
            mib_s: per_s(b.io.bytes as f64 / 1_048_576.0),
            iops: per_s(b.io.ops as f64),
            workers: per_s(b.busy_ns as f64 / 1e9),
            lat_mean_us: b.lat.mean_ns() / 1e3,
            lat_p50_us: us(b.lat.quantile_ns(0.5)),
            lat_p99_us: us(b.lat.quantile_ns(0.99)),
            lat_max_us: us(b.lat.max_ns()),
            bytes_before,
            ops: b.io.ops,
            bytes: b.io.bytes,
            errors: b.io.errors,
        }
    }
}

/// How a window of per-interval values is judged steady, as fio's
/// `steadystate=` does: every value within a limit of the window's mean
/// (`iops`, `bw`), or the least-squares slope within a limit
/// (`iops_slope`, `bw_slope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SteadyCriterion {
    /// Largest distance of a value from the window's mean.
    Deviation,
    /// Absolute slope of the least-squares line, per second.
    Slope,
}

/// Whether `values` (one per interval of `interval_s` seconds) are steady
/// by `criterion` within `limit` (in the values' unit; per second for a
/// slope). An empty window is not steady.
pub fn steady(values: &[f64], interval_s: f64, criterion: SteadyCriterion, limit: f64) -> bool {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return false;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    match criterion {
        SteadyCriterion::Deviation => values.iter().all(|v| (v - mean).abs() <= limit),
        SteadyCriterion::Slope => {
            // x in seconds at the intervals' midpoints; the mean of x
            // cancels, so only the centred sums are needed.
            let xm = (n - 1.0) / 2.0;
            let (mut sxy, mut sxx) = (0.0, 0.0);
            for (i, v) in values.iter().enumerate() {
                let dx = (i as f64 - xm) * interval_s;
                sxy += dx * (v - mean);
                sxx += dx * dx;
            }
            let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
            slope.abs() <= limit
        }
    }
}

/// One worker's recording of a series: the current interval's counters
/// and dense histogram, folded into the series when the interval ends.
///
/// Times are ns since the phase's common start; the worker passes the
/// completion time it reads for its latency anyway.
pub struct SeriesRecorder {
    series: Series,
    win_start: u64,
    win_end: u64,
    io: IoCounters,
    lat: DenseLatency,
    started_ns: u64,
}

impl SeriesRecorder {
    /// A recorder for a worker that started `started_ns` after the phase's
    /// start, on intervals of `interval_ns`, holding at most `cap` of them.
    pub fn new(interval_ns: u64, cap: usize, started_ns: u64) -> Result<Self, SeriesError> {
        Ok(SeriesRecorder {
            series: Series::new(interval_ns, cap)?,
            win_start: 0,
            win_end: 0,
            io: IoCounters::new(),
            lat: DenseLatency::new(),
            started_ns,
        })
    }

    #[inline(always)]
    fn at(&mut self, t_ns: u64) {
        if t_ns >= self.win_end {
            self.roll(t_ns);
        }
    }

    /// A read of `bytes` completed at `t_ns` after `lat_ns`.
    #[inline]
    pub fn read(&mut self, t_ns: u64, bytes: u64, lat_ns: u64) {
        self.at(t_ns);
        self.io.record_read(bytes);
        self.lat.record(lat_ns);
    }

    /// A write of `bytes` completed at `t_ns` after `lat_ns`.
    #[inline]
    pub fn write(&mut self, t_ns: u64, bytes: u64, lat_ns: u64) {
        self.at(t_ns);
        self.io.record_write(bytes);
        self.lat.record(lat_ns);
    }

    /// Another operation (create, stat, delete …) that moved `bytes`,
    /// completed at `t_ns` after `lat_ns`.
    #[inline]
    pub fn other(&mut self, t_ns: u64, bytes: u64, lat_ns: u64) {
        self.at(t_ns);
        self.io.ops += 1;
        self.io.bytes += bytes;
        self.lat.record(lat_ns);
    }

    /// A failed operation ended at `t_ns`.
    #[inline]
    pub fn error(&mut self, t_ns: u64) {
        self.at(t_ns);
        self.io.record_error();
    }

    /// Folds the current interval into the series and opens the one
    /// holding `t_ns`: once per interval, off the per-operation path.
    #[cold]
    #[inline(never)]
    fn roll(&mut self, t_ns: u64) {
        self.flush();
        let i = self.series.slot(t_ns);
        let w = self.series.width_ns();
        self.win_start = (i as u64).saturating_mul(w);
        self.win_end = self.win_start.saturating_add(w);
    }

    fn flush(&mut self) {
        if self.io == IoCounters::new() && self.lat.count == 0 {
            return;
        }
        let bin = Bin {
            io: std::mem::take(&mut self.io),
            busy_ns: 0,
            lat: self.lat.take(),
        };
        self.series.add(self.win_start, &bin);
    }

    /// Sets when the worker started, ns after the phase's start (for a
    /// recorder made before the start barrier, when that was not known).
    pub fn set_start(&mut self, started_ns: u64) {
        self.started_ns = started_ns;
    }

    /// The series so far, without the interval in progress.
    pub fn series(&self) -> &Series {
        &self.series
    }

    /// The worker's series, for a worker that ended at `end_ns`: what it
    /// did, and its running time from its start to its end.
    pub fn finish(mut self, end_ns: u64) -> Series {
        self.flush();
        self.series.add_busy(self.started_ns, end_ns);
        self.series.cover(end_ns);
        self.series
    }
}

/// A series as it is stored (see [`Series`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SeriesRecord {
    /// The interval now, ns.
    interval_ns: u64,
    /// The interval asked for, ns.
    base_interval_ns: u64,
    /// Most intervals held.
    cap: usize,
    /// Time covered, ns.
    end_ns: u64,
    bins: Vec<BinRecord>,
}

/// One interval as it is stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct BinRecord {
    #[serde(default)]
    t_s: f64,
    #[serde(default)]
    dur_s: f64,
    // The counters one by one, not a flattened IoCounters: flattening
    // makes a map of unknown length, which the coordinator's wire format
    // (each rank's summary carries its series) cannot encode.
    ops: u64,
    bytes: u64,
    read_ops: u64,
    read_bytes: u64,
    write_ops: u64,
    write_bytes: u64,
    errors: u64,
    busy_ns: u64,
    #[serde(default)]
    workers: f64,
    #[serde(default)]
    mib_s: f64,
    #[serde(default)]
    iops: f64,
    #[serde(default)]
    lat_us: LatencyUs,
    lat: LatencyRecord,
}

/// Derived latency figures of an interval, µs.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
struct LatencyUs {
    mean: f64,
    p50: f64,
    p99: f64,
    max: f64,
}

/// An interval histogram as stored: `(bucket, count)` pairs.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LatencyRecord {
    buckets: Vec<(u16, u64)>,
    count: u64,
    sum_ns: u64,
    min_ns: u64,
    max_ns: u64,
}

impl From<Series> for SeriesRecord {
    fn from(s: Series) -> SeriesRecord {
        let bins = s
            .figures()
            .into_iter()
            .zip(&s.bins)
            .map(|(f, b)| BinRecord {
                t_s: f.t_s,
                dur_s: f.dur_s,
                ops: b.io.ops,
                bytes: b.io.bytes,
                read_ops: b.io.read_ops,
                read_bytes: b.io.read_bytes,
                write_ops: b.io.write_ops,
                write_bytes: b.io.write_bytes,
                errors: b.io.errors,
                busy_ns: b.busy_ns,
                workers: f.workers,
                mib_s: f.mib_s,
                iops: f.iops,
                lat_us: LatencyUs {
                    mean: f.lat_mean_us,
                    p50: f.lat_p50_us,
                    p99: f.lat_p99_us,
                    max: f.lat_max_us,
                },
                lat: b.lat.record(),
            })
            .collect();
        SeriesRecord {
            interval_ns: s.width_ns,
            base_interval_ns: s.base_ns,
            cap: s.cap,
            end_ns: s.end_ns,
            bins,
        }
    }
}

impl TryFrom<SeriesRecord> for Series {
    type Error = SeriesError;

    fn try_from(r: SeriesRecord) -> Result<Series, SeriesError> {
        let mut s = Series::new(r.base_interval_ns, r.cap)?;
        let ratio = r.interval_ns / r.base_interval_ns;
        if !r.interval_ns.is_multiple_of(r.base_interval_ns) || !ratio.is_power_of_two() {
            return Err(SeriesError::Invalid(format!(
                "interval {} ns is not {} ns times a power of two",
                r.interval_ns, r.base_interval_ns
            )));
        }
        if r.bins.len() > r.cap {
            return Err(SeriesError::Invalid(format!(
                "{} intervals, more than the cap of {}",
                r.bins.len(),
                r.cap
            )));
        }
        s.width_ns = r.interval_ns;
        s.end_ns = r.end_ns;
        for b in &r.bins {
            s.bins.push(Bin {
                io: IoCounters {
                    ops: b.ops,
                    bytes: b.bytes,
                    read_ops: b.read_ops,
                    read_bytes: b.read_bytes,
                    write_ops: b.write_ops,
                    write_bytes: b.write_bytes,
                    errors: b.errors,
                },
                busy_ns: b.busy_ns,
                lat: BinLatency::from_record(&b.lat)?,
            });
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests;
