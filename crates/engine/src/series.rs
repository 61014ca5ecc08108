//! What a worker records over time: its share of the phase's per-interval
//! series ([`stats::Series`], issue 28).
//!
//! The loops already read the clock once per operation (or per batch of
//! completions) for the latency; [`Recorder`] takes that same reading,
//! so recording adds no clock call, no lock and no allocation per
//! operation: a compare, a few additions and one histogram bucket. The
//! recorder is made before the start barrier (its histogram allocated
//! there) and turned into the worker's [`Series`] after the worker ends;
//! the driver merges the workers' series, exactly, interval by interval.
//! A phase without a grid ([`SeriesGrid`] `None`: `--interval off`)
//! records nothing and pays one branch per operation.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use stats::{Series, SeriesRecorder};

/// The intervals a phase's workers record on: `interval_ns` from the
/// phase's epoch (the exit of its start barrier), at most `cap` of them
/// per series before adjacent pairs merge (so memory stays bounded
/// however long the phase runs; see [`stats::series`]), and the interval
/// the phase's record reports at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesGrid {
    /// Interval the workers record at, ns (above 0).
    pub interval_ns: u64,
    /// Intervals held before pairs merge (at least 2).
    pub cap: usize,
    /// Interval the record reports at, ns: `interval_ns` × 2^k. A phase
    /// too short for [`SeriesGrid::MIN_INTERVALS`] of them is reported
    /// finer, down to `interval_ns` ([`SeriesGrid::settle`]).
    pub report_ns: u64,
}

impl SeriesGrid {
    /// Intervals a phase keeps at least, where the recording is fine
    /// enough: the rules over time read a change from 16 on
    /// (`analysis::verdict::DROP_MIN_PHASE`).
    pub const MIN_INTERVALS: u64 = 20;

    /// Finer recording steps below the reported interval of the default
    /// grid: 2^4, so a phase of 1.25 s still has 20 intervals.
    const FINER: u32 = 4;

    /// Intervals of exactly `interval_ns`, holding
    /// [`stats::series::DEFAULT_CAP`]; `None` for 0 (no series).
    pub fn every(interval_ns: u64) -> Option<SeriesGrid> {
        (interval_ns > 0).then_some(SeriesGrid {
            interval_ns,
            cap: stats::series::DEFAULT_CAP,
            report_ns: interval_ns,
        })
    }

    /// Intervals of `report_ns`, or finer (down to 1/16 of it) for a
    /// phase too short for [`SeriesGrid::MIN_INTERVALS`] of them: the
    /// workers record at 1/16 and the driver coarsens exactly.
    pub fn at_most(report_ns: u64) -> Option<SeriesGrid> {
        let base = report_ns >> Self::FINER;
        (base > 0).then_some(SeriesGrid {
            interval_ns: base,
            cap: stats::series::DEFAULT_CAP,
            report_ns: base << Self::FINER,
        })
    }

    /// A phase's merged series as the record reports it: coarsened
    /// (exactly, pairs of intervals merged) towards `report_ns` while the
    /// phase keeps at least [`SeriesGrid::MIN_INTERVALS`].
    pub fn settle(&self, mut s: Series) -> Series {
        while s.width_ns() < self.report_ns
            && s.end_ns() / s.width_ns().saturating_mul(2) >= Self::MIN_INTERVALS
        {
            s.coarsen();
        }
        s
    }
}

/// One worker's recording (see the module documentation).
pub struct Recorder {
    epoch: Instant,
    rec: Option<Box<SeriesRecorder>>,
}

impl Recorder {
    /// A recorder on `grid` (none: records nothing) with times taken from
    /// `epoch`, the phase's common origin.
    pub fn new(grid: Option<SeriesGrid>, epoch: Instant) -> Recorder {
        Recorder {
            epoch,
            rec: grid
                .and_then(|g| SeriesRecorder::new(g.interval_ns, g.cap, 0).ok())
                .map(Box::new),
        }
    }

    /// A recorder that records nothing.
    pub fn off() -> Recorder {
        Recorder {
            epoch: Instant::now(),
            rec: None,
        }
    }

    /// Whether it records.
    #[inline(always)]
    pub fn on(&self) -> bool {
        self.rec.is_some()
    }

    /// `now` as ns since the epoch, when it records (0 otherwise: the
    /// conversion is skipped).
    #[inline(always)]
    pub fn at(&self, now: Instant) -> u64 {
        if self.rec.is_some() {
            now.saturating_duration_since(self.epoch).as_nanos() as u64
        } else {
            0
        }
    }

    /// The worker started `ns` after the epoch.
    pub fn start(&mut self, ns: u64) {
        if let Some(r) = self.rec.as_deref_mut() {
            r.set_start(ns);
        }
    }

    /// A read of `bytes` completed at `t_ns` (from [`Recorder::at`])
    /// after `lat_ns`.
    #[inline(always)]
    pub fn read(&mut self, t_ns: u64, bytes: u64, lat_ns: u64) {
        if let Some(r) = self.rec.as_deref_mut() {
            r.read(t_ns, bytes, lat_ns);
        }
    }

    /// A write of `bytes` completed at `t_ns` after `lat_ns`.
    #[inline(always)]
    pub fn write(&mut self, t_ns: u64, bytes: u64, lat_ns: u64) {
        if let Some(r) = self.rec.as_deref_mut() {
            r.write(t_ns, bytes, lat_ns);
        }
    }

    /// A file of a metadata phase done at `now` after `lat_ns`, having
    /// read `read` and written `written` bytes: counted as a write when
    /// it wrote (of all its bytes: no phase both reads and writes a
    /// file), a read when it read, another operation otherwise.
    #[inline(always)]
    pub fn file(&mut self, now: Instant, read: u64, written: u64, lat_ns: u64) {
        if self.rec.is_some() {
            let t = self.at(now);
            let r = self.rec.as_deref_mut().expect("checked above");
            if written > 0 {
                r.write(t, written + read, lat_ns);
            } else if read > 0 {
                r.read(t, read, lat_ns);
            } else {
                r.other(t, 0, lat_ns);
            }
        }
    }

    /// A failed operation ended at `now`.
    #[inline]
    pub fn error(&mut self, now: Instant) {
        if self.rec.is_some() {
            let t = self.at(now);
            if let Some(r) = self.rec.as_deref_mut() {
                r.error(t);
            }
        }
    }

    /// The worker's series, for a worker that ended `end_ns` after the
    /// epoch; `None` when it recorded nothing.
    pub fn finish(self, end_ns: u64) -> Option<Series> {
        self.rec.map(|r| r.finish(end_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn off_records_nothing_and_on_keeps_each_operation_in_its_interval() {
        let epoch = Instant::now();
        let mut off = Recorder::new(None, epoch);
        off.read(5, 4096, 10);
        assert!(!off.on());
        assert_eq!(off.finish(100), None);

        let grid = SeriesGrid::every(1_000_000).expect("a grid");
        let mut on = Recorder::new(Some(grid), epoch);
        on.start(0);
        let t = |ms: u64| epoch + Duration::from_millis(ms);
        on.read(on.at(t(0)), 4096, 1_000);
        on.write(on.at(t(2)), 8192, 2_000);
        on.file(t(2), 0, 100, 3_000);
        on.file(t(3), 50, 0, 4_000);
        on.file(t(3), 0, 0, 5_000);
        on.error(t(3));
        let s = on.finish(4_000_000).expect("a series");
        let b = s.bins();
        assert_eq!(b.len(), 4);
        assert_eq!((b[0].io.read_ops, b[0].io.read_bytes), (1, 4096));
        assert_eq!((b[2].io.write_ops, b[2].io.write_bytes), (2, 8292));
        assert_eq!(b[3].io.read_bytes, 50);
        assert_eq!(b[3].io.ops, 2);
        assert_eq!(b[3].io.errors, 1);
        assert_eq!(b[3].lat.max_ns(), 5_000);
        // Busy from 0 to 4 ms: one worker in each interval.
        assert!(b.iter().all(|b| b.busy_ns == 1_000_000));
    }

    #[test]
    fn a_default_grid_reports_its_interval_or_finer_for_a_short_phase() {
        assert_eq!(SeriesGrid::every(0), None);
        assert_eq!(SeriesGrid::at_most(15), None);
        let g = SeriesGrid::at_most(1_000_000_000).expect("a grid");
        assert_eq!(g.interval_ns, 62_500_000);
        let phase = |secs: u64| {
            let mut s = Series::new(g.interval_ns, g.cap).expect("a series");
            s.cover(secs * 1_000_000_000);
            g.settle(s)
        };
        // 60 s: reported at 1 s; 5 s: at 250 ms (20 intervals); 1 s: as
        // recorded (16 intervals of 62.5 ms).
        assert_eq!(phase(60).width_ns(), 1_000_000_000);
        assert_eq!(phase(60).bins().len(), 60);
        assert_eq!(phase(5).width_ns(), 250_000_000);
        assert_eq!(phase(5).bins().len(), 20);
        assert_eq!(phase(1).width_ns(), 62_500_000);
        // An exact grid is never coarsened by the driver.
        let e = SeriesGrid::every(100_000_000).expect("a grid");
        let mut s = Series::new(e.interval_ns, e.cap).expect("a series");
        s.cover(60_000_000_000);
        assert_eq!(e.settle(s).width_ns(), 100_000_000);
    }
}
