//! Operation and byte counters.
//!
//! Throughput figures (MiB/s, IOPS) are derived from these totals divided by
//! wall time, so they are kept separate from latency: a worker can count
//! every operation even when latency sampling is switched off, and the
//! counters stay plain integers that add across threads and ranks without
//! any loss.

use std::iter::Sum;
use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

/// Totals of completed I/O operations and the bytes they moved.
///
/// `ops`/`bytes` cover reads and writes together so that mixed workloads
/// can report one aggregate figure without re-adding the halves. Failed
/// operations only bump `errors`: counting their bytes would inflate
/// throughput with data that never moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoCounters {
    /// Successful operations of any kind.
    pub ops: u64,
    /// Bytes moved by successful operations of any kind.
    pub bytes: u64,
    /// Successful read operations.
    pub read_ops: u64,
    /// Bytes returned by successful reads.
    pub read_bytes: u64,
    /// Successful write operations.
    pub write_ops: u64,
    /// Bytes accepted by successful writes.
    pub write_bytes: u64,
    /// Operations that failed.
    pub errors: u64,
}

impl IoCounters {
    /// Creates zeroed counters.
    pub const fn new() -> Self {
        Self {
            ops: 0,
            bytes: 0,
            read_ops: 0,
            read_bytes: 0,
            write_ops: 0,
            write_bytes: 0,
            errors: 0,
        }
    }

    /// Counts one successful read of `bytes` bytes.
    #[inline]
    pub fn record_read(&mut self, bytes: u64) {
        self.ops += 1;
        self.bytes += bytes;
        self.read_ops += 1;
        self.read_bytes += bytes;
    }

    /// Counts one successful write of `bytes` bytes.
    #[inline]
    pub fn record_write(&mut self, bytes: u64) {
        self.ops += 1;
        self.bytes += bytes;
        self.write_ops += 1;
        self.write_bytes += bytes;
    }

    /// Counts one failed operation.
    #[inline]
    pub fn record_error(&mut self) {
        self.errors += 1;
    }

    /// Adds `other` into `self`; same as `+=`, spelled like
    /// [`LatencyHistogram::merge`](crate::LatencyHistogram::merge) so the
    /// reduction code reads uniformly.
    #[inline]
    pub fn merge(&mut self, other: &Self) {
        *self += *other;
    }
}

impl AddAssign for IoCounters {
    #[inline]
    fn add_assign(&mut self, rhs: Self) {
        self.ops += rhs.ops;
        self.bytes += rhs.bytes;
        self.read_ops += rhs.read_ops;
        self.read_bytes += rhs.read_bytes;
        self.write_ops += rhs.write_ops;
        self.write_bytes += rhs.write_bytes;
        self.errors += rhs.errors;
    }
}

impl AddAssign<&IoCounters> for IoCounters {
    #[inline]
    fn add_assign(&mut self, rhs: &IoCounters) {
        *self += *rhs;
    }
}

impl Add for IoCounters {
    type Output = IoCounters;

    #[inline]
    fn add(mut self, rhs: Self) -> Self {
        self += rhs;
        self
    }
}

impl Sum for IoCounters {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::new(), Add::add)
    }
}

impl<'a> Sum<&'a IoCounters> for IoCounters {
    fn sum<I: Iterator<Item = &'a IoCounters>>(iter: I) -> Self {
        iter.fold(Self::new(), |acc, c| acc + *c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_split_by_direction() {
        let mut c = IoCounters::new();
        c.record_read(4096);
        c.record_read(4096);
        c.record_write(1 << 20);
        c.record_error();
        assert_eq!(
            c,
            IoCounters {
                ops: 3,
                bytes: 8192 + (1 << 20),
                read_ops: 2,
                read_bytes: 8192,
                write_ops: 1,
                write_bytes: 1 << 20,
                errors: 1,
            }
        );
    }

    #[test]
    fn add_assign_and_sum_agree() {
        let mut a = IoCounters::default();
        a.record_read(10);
        let mut b = IoCounters::default();
        b.record_write(20);
        b.record_error();

        let mut merged = a;
        merged += b;
        let mut by_ref = a;
        by_ref += &b;
        let mut by_merge = a;
        by_merge.merge(&b);
        let summed: IoCounters = [a, b].iter().sum();

        assert_eq!(merged, by_ref);
        assert_eq!(merged, by_merge);
        assert_eq!(merged, summed);
        assert_eq!(merged, a + b);
        assert_eq!(merged.ops, 2);
        assert_eq!(merged.bytes, 30);
        assert_eq!(merged.errors, 1);
    }

    #[test]
    fn serde_roundtrip() {
        let mut c = IoCounters::new();
        c.record_write(512);
        let json = serde_json::to_string(&c).unwrap();
        let back: IoCounters = serde_json::from_str(&json).unwrap();
        assert_eq!(c, back);
    }
}
