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
    /// Where the completed intervals go for the live display, if one
    /// listens ([`Recorder::shown`]).
    share: Option<Share>,
    /// ns at which the next display interval closes (`u64::MAX`: none).
    share_next: u64,
}

/// A recorder's part in the live display ([`crate::live_interval`]).
struct Share {
    slot: u32,
    /// The display interval: [`display_ns`] of the record's.
    report_ns: u64,
    /// Every display interval before this is published, ns.
    done_to: u64,
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
            share: grid.map(|g| Share {
                slot: 0,
                report_ns: display_ns(g.report_ns),
                done_to: 0,
            }),
            share_next: u64::MAX,
        }
    }

    /// Shares the intervals this recorder completes with the live
    /// display through `slot` (the worker's live-counter slot), when a
    /// display listens: the display's per-interval figure is then the
    /// sum of the very intervals the record keeps. Call before the start
    /// barrier.
    pub fn shown(mut self, slot: u32) -> Recorder {
        match self.share.as_mut() {
            Some(sh) if self.rec.is_some() && crate::live::listening() => {
                sh.slot = slot;
                crate::live_interval::join(slot);
                self.share_next = sh.report_ns;
            }
            _ => self.share = None,
        }
        self
    }

    /// After an operation recorded at `t_ns`: publishes the display
    /// intervals it closed. One compare per operation.
    #[inline(always)]
    fn passed(&mut self, t_ns: u64) {
        if t_ns >= self.share_next {
            self.publish(t_ns, false);
        }
    }

    /// Publishes every display interval that ends by `t_ns` (rounded up
    /// to a whole interval when `ended`: the worker's last, partial one).
    #[cold]
    #[inline(never)]
    fn publish(&mut self, t_ns: u64, ended: bool) {
        let (Some(sh), Some(r)) = (self.share.as_mut(), self.rec.as_deref()) else {
            return;
        };
        self.share_next = publish_share(sh, r.series(), t_ns, ended);
    }

    /// A recorder that records nothing.
    pub fn off() -> Recorder {
        Recorder {
            epoch: Instant::now(),
            rec: None,
            share: None,
            share_next: u64::MAX,
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
            self.passed(t_ns);
        }
    }

    /// A write of `bytes` completed at `t_ns` after `lat_ns`.
    #[inline(always)]
    pub fn write(&mut self, t_ns: u64, bytes: u64, lat_ns: u64) {
        if let Some(r) = self.rec.as_deref_mut() {
            r.write(t_ns, bytes, lat_ns);
            self.passed(t_ns);
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
            self.passed(t);
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
            self.passed(t);
        }
    }

    /// The worker's series, for a worker that ended `end_ns` after the
    /// epoch; `None` when it recorded nothing.
    pub fn finish(self, end_ns: u64) -> Option<Series> {
        let s = self.rec.map(|r| r.finish(end_ns));
        if let (Some(mut sh), Some(s)) = (self.share, s.as_ref()) {
            publish_share(&mut sh, s, end_ns, true);
        }
        s
    }
}

/// The shortest interval the live display publishes: a person reads a
/// line at most a few times a second, and workers of one phase drift
/// apart by more than the display's ring of [`crate::live_interval::RING`]
/// intervals when they are a few milliseconds each (`--interval 1ms`
/// showed nothing at all).
pub const DISPLAY_MIN_NS: u64 = 100_000_000;

/// The display interval for a record reporting at `report_ns`: that
/// interval doubled until it reaches [`DISPLAY_MIN_NS`] — a power-of-two
/// multiple, so it is a whole number of the series' intervals (which
/// coarsen by pairs) or a divisor of them, and each figure shown is still
/// the exact sum of intervals the record keeps.
fn display_ns(report_ns: u64) -> u64 {
    let mut d = report_ns.max(1);
    while d < DISPLAY_MIN_NS {
        d *= 2;
    }
    d
}

/// Publishes the display intervals of `sh` that `series` has closed by
/// `t_ns` (all of them, the last partial one too, when `ended`); returns
/// when the next one closes.
fn publish_share(sh: &mut Share, series: &Series, t_ns: u64, ended: bool) -> u64 {
    use crate::live_interval::{close, publish, RING};
    let unit = sh.report_ns.max(series.width_ns());
    let mut upto = t_ns / unit * unit;
    if ended && upto < t_ns {
        upto = upto.saturating_add(unit);
    }
    // Only the last RING intervals can still be shown.
    let from = (sh.done_to / unit * unit).max(upto.saturating_sub(RING * unit));
    let w = series.width_ns();
    let bins = series.bins();
    let mut at = from;
    while at < upto {
        let i = (at / w) as usize;
        let n = (unit / w) as usize;
        let (mut ops, mut bytes) = (0u64, 0u64);
        for b in bins
            .get(i.min(bins.len())..(i + n).min(bins.len()))
            .unwrap_or(&[])
        {
            ops += b.io.ops;
            bytes += b.io.bytes;
        }
        if ops > 0 || bytes > 0 {
            publish(sh.slot, at, unit, ops, bytes);
        }
        at += unit;
    }
    sh.done_to = upto;
    close(sh.slot, upto, ended);
    upto.saturating_add(unit)
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
