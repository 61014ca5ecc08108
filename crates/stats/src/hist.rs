//! Mergeable log-linear latency histogram.
//!
//! Tail latency (p99, p99.9) cannot be recovered from averages, and storing
//! every sample does not scale to millions of operations per thread across
//! many MPI ranks. A fixed-size histogram with bounded relative error keeps
//! `record` cheap enough for the benchmark's hot loop and makes reduction a
//! plain element-wise sum, so threads, ranks and repetitions combine
//! identically and the result does not depend on merge order.
//!
//! Layout: values below 128 ns get one bucket each (exact). Above that each
//! power of two is split into 64 equal sub-buckets, so a bucket is never
//! wider than 1/64 of its lower bound (≈1.6 % relative error). Values at or
//! above 2^48 ns (≈78 hours) share the top bucket; `max` is tracked
//! separately so it stays exact even then.

use std::fmt;
use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

/// log2 of the number of sub-buckets per power of two; sets the precision.
const SUB_BITS: u32 = 6;
/// Highest exponent given its own buckets; everything above clamps.
const TOP_EXP: u32 = 47;

/// Largest latency, in nanoseconds, that gets a bucket of its own; larger
/// values are counted in the top bucket (their exact maximum is still kept).
pub const MAX_TRACKABLE_NS: u64 = (1u64 << (TOP_EXP + 1)) - 1;

/// Total bucket count, derived from the index of the largest trackable
/// value so the two can never disagree.
const NUM_BUCKETS: usize = bucket_index(MAX_TRACKABLE_NS) + 1;

// Storage latencies beyond 2^44 ns (~4.9 hours) only arise from hung I/O;
// below that every value must keep the full precision.
const _: () = assert!(MAX_TRACKABLE_NS >= 1 << 44);

/// Maps a value to its bucket in the log-linear layout with `sub_bits`
/// bits of sub-bucket (2^`sub_bits` sub-buckets per power of two) whose
/// largest bucketed value is `max` (larger values clamp to the top
/// bucket). This histogram and the per-interval one of
/// [`crate::series`] share it, each with its own constants.
///
/// `shift` is how many low bits are discarded: zero for values below
/// 2^(sub_bits+1), after which `v >> shift` always lands in
/// [2^sub_bits, 2^(sub_bits+1)). Multiplying `shift` by the sub-bucket
/// count then stacks the magnitudes without gaps, and the exact range
/// falls out as the `shift == 0` case, so no branch is needed. The clamp
/// and `saturating_sub` compile to conditional moves (`Ord::min` is not
/// `const`, hence the `if`).
#[inline(always)]
pub(crate) const fn layout_index(ns: u64, sub_bits: u32, max: u64) -> usize {
    let v = if ns < max { ns } else { max };
    let shift = (63 - sub_bits).saturating_sub(v.leading_zeros());
    ((shift as usize) << sub_bits) + (v >> shift) as usize
}

/// Inclusive value range `(low, high)` covered by bucket `index` of the
/// layout with `sub_bits`; the exact inverse of [`layout_index`].
pub(crate) const fn layout_range(index: usize, sub_bits: u32) -> (u64, u64) {
    let shift = (index >> sub_bits).saturating_sub(1);
    let low = ((index - (shift << sub_bits)) as u64) << shift;
    (low, low + ((1u64 << shift) - 1))
}

/// Maps a value to its bucket in this histogram's layout.
#[inline(always)]
const fn bucket_index(ns: u64) -> usize {
    layout_index(ns, SUB_BITS, MAX_TRACKABLE_NS)
}

/// Inclusive value range of bucket `index` in this histogram's layout.
const fn bucket_range(index: usize) -> (u64, u64) {
    layout_range(index, SUB_BITS)
}

/// The value at quantile `q` of a histogram in the layout with
/// `sub_bits`, given its buckets as `(index, count)` in ascending index,
/// its sample count and its exact extremes: the midpoint of the bucket
/// holding the sample of rank `ceil(q * count)`, clamped into
/// `[min, max]`; the first and last ranks give the exact extremes, an
/// empty histogram 0 and a NaN `q` counts as 0.
pub(crate) fn quantile_of(
    buckets: impl Iterator<Item = (usize, u64)>,
    count: u64,
    min: u64,
    max: u64,
    q: f64,
    sub_bits: u32,
) -> u64 {
    if count == 0 {
        return 0;
    }
    let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
    // `as` saturates, and the clamp keeps rank within 1..=count even
    // when f64 rounding nudges q*count past count.
    let rank = ((q * count as f64).ceil() as u64).clamp(1, count);
    if rank == 1 {
        return min;
    }
    if rank == count {
        return max;
    }
    let mut seen = 0u64;
    for (index, n) in buckets {
        seen += n;
        if seen >= rank {
            let (low, high) = layout_range(index, sub_bits);
            let mid = low + (high - low) / 2;
            return mid.clamp(min, max);
        }
    }
    // Unreachable while bucket counts sum to `count`; max is the only
    // answer that respects the contract if they somehow do not.
    max
}

/// Log-linear histogram of latencies in nanoseconds.
///
/// All storage is allocated by [`LatencyHistogram::new`]; [`record`]
/// never allocates, locks or loops. Give each worker thread its own
/// histogram and [`merge`] them afterwards.
///
/// [`record`]: LatencyHistogram::record
/// [`merge`]: LatencyHistogram::merge
#[derive(Clone, PartialEq, Eq)]
pub struct LatencyHistogram {
    // A boxed fixed-size array rather than a slice lets the compiler prove
    // `bucket_index` is in range and drop the bounds check in `record`.
    buckets: Box<[u64; NUM_BUCKETS]>,
    count: u64,
    // Saturating rather than u128: 2^64 ns is ~584 years of summed latency,
    // and a plain u64 keeps the sparse form friendly to JSON consumers.
    sum: u64,
    min: u64,
    max: u64,
}

impl LatencyHistogram {
    /// Creates an empty histogram, allocating all bucket storage up front
    /// (about 22 KiB).
    pub fn new() -> Self {
        let buckets: Box<[u64; NUM_BUCKETS]> = vec![0u64; NUM_BUCKETS]
            .into_boxed_slice()
            .try_into()
            .expect("vector length equals NUM_BUCKETS");
        Self {
            buckets,
            count: 0,
            sum: 0,
            // Sentinels chosen so the first `record` overwrites both without
            // a branch on `count`.
            min: u64::MAX,
            max: 0,
        }
    }

    /// Records one latency sample of `ns` nanoseconds.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.buckets[bucket_index(ns)] += 1;
        self.count += 1;
        self.sum = self.sum.saturating_add(ns);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// Adds every sample of `other` into `self`.
    ///
    /// Merging is associative and commutative, so any reduction tree over
    /// threads, ranks or repetitions gives the same histogram.
    pub fn merge(&mut self, other: &Self) {
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *mine += *theirs;
        }
        self.count += other.count;
        self.sum = self.sum.saturating_add(other.sum);
        // The sentinels of an empty `other` are neutral for min/max, so no
        // special case is needed.
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Number of recorded samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Whether no sample has been recorded.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Exact smallest recorded value in ns, or 0 when empty.
    pub fn min(&self) -> u64 {
        if self.is_empty() {
            0
        } else {
            self.min
        }
    }

    /// Exact largest recorded value in ns (even above
    /// [`MAX_TRACKABLE_NS`]), or 0 when empty.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Sum of all recorded values in ns, saturating at `u64::MAX`.
    pub fn sum_ns(&self) -> u64 {
        self.sum
    }

    /// Arithmetic mean in ns (exact up to f64 rounding), or 0.0 when empty.
    pub fn mean_ns(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Value in ns at quantile `q` (0.0 ..= 1.0, clamped; NaN counts as 0).
    ///
    /// Finds the bucket holding the sample of rank `ceil(q * count)` and
    /// returns the bucket midpoint, clamped into the exact `[min, max]`, so
    /// the answer is within ≈0.8 % of a true sample from that bucket. The
    /// first and last ranks return the exact min and max. Returns 0 when
    /// empty.
    pub fn value_at_quantile(&self, q: f64) -> u64 {
        quantile_of(
            self.buckets.iter().copied().enumerate(),
            self.count,
            self.min,
            self.max,
            q,
            SUB_BITS,
        )
    }

    /// The non-empty buckets as `(low, high, count)`: inclusive ns bounds
    /// (high is at most 1/64 above low past 128 ns), lowest first.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| {
                let (low, high) = bucket_range(i);
                (low, high, n)
            })
    }

    /// Sample standard deviation in ns (n − 1, as fio prints it), from the
    /// bucket midpoints clamped into `[min, max]`: each sample is placed
    /// within ≈0.8 % of its value. 0 with fewer than two samples.
    pub fn stddev_ns(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let mean = self.mean_ns();
        let mut sq = 0.0;
        for (low, high, n) in self.buckets() {
            let mid = (low + (high - low) / 2).clamp(self.min, self.max) as f64;
            sq += (mid - mean) * (mid - mean) * n as f64;
        }
        (sq / (self.count - 1) as f64).sqrt()
    }

    /// Clears all samples, keeping the allocation.
    pub fn reset(&mut self) {
        self.buckets.fill(0);
        self.count = 0;
        self.sum = 0;
        self.min = u64::MAX;
        self.max = 0;
    }

    /// Mean, p50, p99, p99.9, min and max converted to microseconds, the
    /// unit of the report's `lat_us` object. All zero when empty.
    pub fn summary(&self) -> LatencySummary {
        if self.is_empty() {
            return LatencySummary::default();
        }
        let us = |ns: u64| ns as f64 / 1_000.0;
        LatencySummary {
            mean: self.mean_ns() / 1_000.0,
            p50: us(self.value_at_quantile(0.50)),
            p99: us(self.value_at_quantile(0.99)),
            p999: us(self.value_at_quantile(0.999)),
            max: us(self.max()),
            min: us(self.min()),
        }
    }

    /// Compact form listing only non-empty buckets, for shipping between
    /// MPI ranks or storing alongside results; typical runs touch a few
    /// hundred of the ~2750 buckets.
    pub fn to_sparse(&self) -> SparseHistogram {
        let buckets = self
            .buckets
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n != 0)
            .map(|(i, &n)| (i as u32, n))
            .collect();
        SparseHistogram {
            buckets,
            count: self.count,
            sum: self.sum,
            min: self.min(),
            max: self.max(),
        }
    }

    /// Rebuilds a histogram from its sparse form.
    ///
    /// The input may come from another process, so it is validated rather
    /// than trusted: bucket indices must exist and bucket counts must add
    /// up to `count`. Repeated indices are summed.
    pub fn from_sparse(sparse: &SparseHistogram) -> Result<Self, SparseError> {
        let mut hist = Self::new();
        let mut total = 0u64;
        for &(index, n) in &sparse.buckets {
            let slot = hist
                .buckets
                .get_mut(index as usize)
                .ok_or(SparseError::BucketOutOfRange { index })?;
            *slot = slot.checked_add(n).ok_or(SparseError::CountOverflow)?;
            total = total.checked_add(n).ok_or(SparseError::CountOverflow)?;
        }
        if total != sparse.count {
            return Err(SparseError::CountMismatch {
                declared: sparse.count,
                in_buckets: total,
            });
        }
        if sparse.count == 0 {
            // min/max of an empty histogram carry no information; restoring
            // the sentinels keeps later merges correct.
            return Ok(hist);
        }
        if sparse.min > sparse.max {
            return Err(SparseError::MinAboveMax {
                min: sparse.min,
                max: sparse.max,
            });
        }
        hist.count = sparse.count;
        hist.sum = sparse.sum;
        hist.min = sparse.min;
        hist.max = sparse.max;
        Ok(hist)
    }
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

// Hand-written so debug output shows the statistics rather than thousands
// of bucket counters.
impl fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LatencyHistogram")
            .field("count", &self.count)
            .field("min", &self.min())
            .field("max", &self.max())
            .field("mean_ns", &self.mean_ns())
            .field(
                "nonzero_buckets",
                &self.buckets.iter().filter(|&&n| n != 0).count(),
            )
            .finish()
    }
}

impl AddAssign<&LatencyHistogram> for LatencyHistogram {
    fn add_assign(&mut self, rhs: &LatencyHistogram) {
        self.merge(rhs);
    }
}

impl From<&LatencyHistogram> for SparseHistogram {
    fn from(hist: &LatencyHistogram) -> Self {
        hist.to_sparse()
    }
}

impl TryFrom<&SparseHistogram> for LatencyHistogram {
    type Error = SparseError;

    fn try_from(sparse: &SparseHistogram) -> Result<Self, SparseError> {
        Self::from_sparse(sparse)
    }
}

/// Latency percentiles in MICROSECONDS (f64).
///
/// Serialised as the report's `lat_us` object; `p50`, `p99`, `p999` and
/// `max` are the contract fields, `mean` and `min` are extras.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Arithmetic mean, µs.
    pub mean: f64,
    /// Median, µs.
    pub p50: f64,
    /// 99th percentile, µs.
    pub p99: f64,
    /// 99.9th percentile, µs.
    pub p999: f64,
    /// Exact maximum, µs.
    pub max: f64,
    /// Exact minimum, µs.
    pub min: f64,
}

/// Serialisable sparse form of a [`LatencyHistogram`].
///
/// Bucket indices are only meaningful to the same bucket layout, i.e. the
/// same version of this crate on both ends.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SparseHistogram {
    /// `(bucket index, count)` for every non-empty bucket, ascending index.
    pub buckets: Vec<(u32, u64)>,
    /// Total samples; equals the sum of the bucket counts.
    pub count: u64,
    /// Sum of all samples in ns, saturating.
    pub sum: u64,
    /// Exact minimum in ns (0 when empty).
    pub min: u64,
    /// Exact maximum in ns (0 when empty).
    pub max: u64,
}

/// Why a [`SparseHistogram`] could not be turned back into a histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SparseError {
    /// A bucket index beyond this build's layout.
    BucketOutOfRange {
        /// The offending index.
        index: u32,
    },
    /// Bucket counts do not add up to the declared total.
    CountMismatch {
        /// `count` field of the input.
        declared: u64,
        /// Sum of the bucket counts.
        in_buckets: u64,
    },
    /// Bucket counts overflow `u64`.
    CountOverflow,
    /// Non-empty histogram whose minimum exceeds its maximum.
    MinAboveMax {
        /// Declared minimum.
        min: u64,
        /// Declared maximum.
        max: u64,
    },
}

impl fmt::Display for SparseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SparseError::BucketOutOfRange { index } => write!(
                f,
                "bucket index {index} out of range (layout has {NUM_BUCKETS} buckets)"
            ),
            SparseError::CountMismatch {
                declared,
                in_buckets,
            } => write!(
                f,
                "declared count {declared} differs from bucket total {in_buckets}"
            ),
            SparseError::CountOverflow => write!(f, "bucket counts overflow u64"),
            SparseError::MinAboveMax { min, max } => {
                write!(f, "minimum {min} exceeds maximum {max}")
            }
        }
    }
}

impl std::error::Error for SparseError {}

#[cfg(test)]
mod tests {

    #[test]
    fn buckets_and_stddev() {
        let mut h = LatencyHistogram::new();
        assert_eq!(h.stddev_ns(), 0.0);
        for v in [10, 20, 30, 40] {
            h.record(v);
        }
        // Exact below 128 ns: sqrt((225 + 25 + 25 + 225) / 3).
        assert!(
            (h.stddev_ns() - 12.909944).abs() < 1e-5,
            "{}",
            h.stddev_ns()
        );
        let b: Vec<_> = h.buckets().collect();
        assert_eq!(b, vec![(10, 10, 1), (20, 20, 1), (30, 30, 1), (40, 40, 1)]);
        // Past 128 ns a bucket is within 1/64 of its low bound.
        let mut h = LatencyHistogram::new();
        h.record(1_000_000);
        h.record(3_000_000);
        let sd = h.stddev_ns();
        assert!((sd - 1_414_213.56).abs() / 1_414_213.56 < 0.016, "{sd}");
        for (lo, hi, _) in h.buckets() {
            assert!(lo <= hi && (hi - lo) as f64 <= lo as f64 / 64.0);
        }
    }

    use super::*;

    #[test]
    fn layout_is_contiguous_and_invertible() {
        assert_eq!(NUM_BUCKETS, 2752);
        assert_eq!(bucket_index(0), 0);
        assert_eq!(bucket_index(127), 127);
        assert_eq!(bucket_index(128), 128);
        assert_eq!(bucket_index(u64::MAX), NUM_BUCKETS - 1);
        let mut expected_low = 0u64;
        for index in 0..NUM_BUCKETS {
            let (low, high) = bucket_range(index);
            // Buckets tile the value range with no gaps or overlaps.
            assert_eq!(low, expected_low, "bucket {index}");
            assert_eq!(bucket_index(low), index);
            assert_eq!(bucket_index(high), index);
            expected_low = high + 1;
        }
        assert_eq!(expected_low - 1, MAX_TRACKABLE_NS);
    }

    #[test]
    fn exact_below_128() {
        for v in 0..128u64 {
            assert_eq!(bucket_range(bucket_index(v)), (v, v));
            let mut h = LatencyHistogram::new();
            h.record(v);
            h.record(v);
            h.record(1_000_000);
            assert_eq!(h.value_at_quantile(0.5), v);
        }
    }

    #[test]
    fn relative_error_bounded_across_sweep() {
        let mut v = 1u64;
        while v < 1u64 << 40 {
            for probe in [v, v + 1, v.saturating_mul(2) - 1] {
                let (low, high) = bucket_range(bucket_index(probe));
                assert!(low <= probe && probe <= high, "{probe} not in bucket");
                let width = (high - low + 1) as f64;
                assert!(
                    width / low.max(1) as f64 <= 1.0 / 64.0 || probe < 128,
                    "bucket of {probe} too wide"
                );
                let mid = low + (high - low) / 2;
                let err = (mid as f64 - probe as f64).abs() / probe as f64;
                assert!(err <= 1.0 / 64.0, "{probe}: error {err}");
            }
            // ~1.3 % steps so every sub-bucket pattern gets exercised.
            v = v + v / 77 + 1;
        }
    }

    #[test]
    fn uniform_quantiles_within_two_percent() {
        let mut h = LatencyHistogram::new();
        for v in 1..=100_000u64 {
            h.record(v);
        }
        assert_eq!(h.count(), 100_000);
        assert_eq!(h.min(), 1);
        assert_eq!(h.max(), 100_000);
        assert!((h.mean_ns() - 50_000.5).abs() < 1e-9);
        for (q, want) in [
            (0.01, 1_000.0),
            (0.25, 25_000.0),
            (0.5, 50_000.0),
            (0.9, 90_000.0),
            (0.99, 99_000.0),
            (0.999, 99_900.0),
        ] {
            let got = h.value_at_quantile(q) as f64;
            assert!((got - want).abs() / want <= 0.02, "q={q}: {got} vs {want}");
        }
        assert_eq!(h.value_at_quantile(0.0), 1);
        assert_eq!(h.value_at_quantile(1.0), 100_000);
        assert_eq!(h.value_at_quantile(7.0), 100_000);
        assert_eq!(h.value_at_quantile(f64::NAN), 1);

        let s = h.summary();
        assert!((s.p50 - 50.0).abs() / 50.0 <= 0.02);
        assert!((s.p99 - 99.0).abs() / 99.0 <= 0.02);
        assert!((s.p999 - 99.9).abs() / 99.9 <= 0.02);
        assert_eq!(s.max, 100.0);
        assert_eq!(s.min, 0.001);
        assert!((s.mean - 50.0005).abs() < 1e-9);
    }

    #[test]
    fn quantile_stays_within_exact_extremes() {
        let mut h = LatencyHistogram::new();
        // All three share one bucket whose midpoint lies outside [min, max].
        for v in [1_000_000u64, 1_000_001, 1_000_002] {
            h.record(v);
        }
        let p = h.value_at_quantile(0.5);
        assert!((1_000_000..=1_000_002).contains(&p));
    }

    #[test]
    fn merge_equals_single_recording() {
        let values: Vec<u64> = (0..5_000u64).map(|i| i * i * 37 + i).collect();
        let mut whole = LatencyHistogram::new();
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        for (i, &v) in values.iter().enumerate() {
            whole.record(v);
            if i % 3 == 0 {
                a.record(v);
            } else {
                b.record(v);
            }
        }
        let mut merged = a.clone();
        merged.merge(&b);
        assert_eq!(merged, whole);

        let mut via_op = b.clone();
        via_op += &a;
        assert_eq!(via_op, whole);

        // An empty operand is neutral on either side.
        let mut empty = LatencyHistogram::new();
        empty += &whole;
        assert_eq!(empty, whole);
        let mut w = whole.clone();
        w.merge(&LatencyHistogram::new());
        assert_eq!(w, whole);
    }

    #[test]
    fn empty_behaviour() {
        let h = LatencyHistogram::default();
        assert!(h.is_empty());
        assert_eq!(h.count(), 0);
        assert_eq!(h.min(), 0);
        assert_eq!(h.max(), 0);
        assert_eq!(h.mean_ns(), 0.0);
        assert_eq!(h.value_at_quantile(0.5), 0);
        assert_eq!(h.summary(), LatencySummary::default());
        assert!(h.to_sparse().buckets.is_empty());
    }

    #[test]
    fn reset_clears_everything() {
        let mut h = LatencyHistogram::new();
        h.record(5);
        h.record(50_000);
        h.reset();
        assert_eq!(h, LatencyHistogram::new());
        h.record(7);
        assert_eq!(h.min(), 7);
        assert_eq!(h.max(), 7);
    }

    #[test]
    fn huge_values_clamp_but_max_exact() {
        let mut h = LatencyHistogram::new();
        h.record(10);
        h.record(u64::MAX - 5);
        h.record(1u64 << 50);
        assert_eq!(h.max(), u64::MAX - 5);
        assert_eq!(h.min(), 10);
        assert_eq!(h.value_at_quantile(1.0), u64::MAX - 5);
        // The middle sample sits in the clamped top bucket.
        let p50 = h.value_at_quantile(0.5);
        assert_eq!(bucket_index(p50), NUM_BUCKETS - 1);
        let sparse = h.to_sparse();
        assert_eq!(sparse.buckets.last(), Some(&((NUM_BUCKETS - 1) as u32, 2)));
        // Sum saturates instead of wrapping.
        assert_eq!(h.sum_ns(), u64::MAX);
    }

    #[test]
    fn sparse_roundtrip() {
        let mut h = LatencyHistogram::new();
        for v in [3u64, 3, 900, 12_345, 7_000_000, 1 << 45] {
            h.record(v);
        }
        let sparse = h.to_sparse();
        assert_eq!(sparse.buckets.len(), 5);
        assert!(sparse.buckets.windows(2).all(|w| w[0].0 < w[1].0));
        let json = serde_json::to_string(&sparse).unwrap();
        let decoded: SparseHistogram = serde_json::from_str(&json).unwrap();
        assert_eq!(decoded, sparse);
        let back = LatencyHistogram::from_sparse(&decoded).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.min(), 3);
        assert_eq!(back.max(), 1 << 45);
        assert_eq!(back.sum_ns(), h.sum_ns());

        let empty = LatencyHistogram::try_from(&SparseHistogram::default()).unwrap();
        assert_eq!(empty, LatencyHistogram::new());
    }

    #[test]
    fn sparse_rejects_bad_input() {
        let bad_index = SparseHistogram {
            buckets: vec![(NUM_BUCKETS as u32, 1)],
            count: 1,
            sum: 1,
            min: 1,
            max: 1,
        };
        assert_eq!(
            LatencyHistogram::from_sparse(&bad_index),
            Err(SparseError::BucketOutOfRange {
                index: NUM_BUCKETS as u32
            })
        );
        let bad_count = SparseHistogram {
            buckets: vec![(5, 2)],
            count: 3,
            sum: 10,
            min: 5,
            max: 5,
        };
        assert!(matches!(
            LatencyHistogram::from_sparse(&bad_count),
            Err(SparseError::CountMismatch { .. })
        ));
        let bad_order = SparseHistogram {
            buckets: vec![(5, 1)],
            count: 1,
            sum: 5,
            min: 6,
            max: 5,
        };
        let err = LatencyHistogram::from_sparse(&bad_order).unwrap_err();
        assert!(err.to_string().contains("exceeds"));
    }

    #[test]
    fn summary_serialises_with_contract_names() {
        let s = LatencySummary {
            mean: 1.5,
            p50: 1.0,
            p99: 2.0,
            p999: 3.0,
            max: 4.0,
            min: 0.5,
        };
        let v: serde_json::Value = serde_json::to_value(s).unwrap();
        for key in ["p50", "p99", "p999", "max", "mean", "min"] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        let back: LatencySummary = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
    }
}
