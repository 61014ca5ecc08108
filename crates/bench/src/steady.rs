//! `--steady KIND:LIMIT:WINDOW[:RAMP]`: end a timed phase once it is
//! steady, as fio's `steadystate=`, `steadystate_duration=` and
//! `steadystate_ramp_time=` do (issue 28).
//!
//! Once a second (fio collects once per second too) the driver's thread
//! reads the phase's live totals ([`engine::live::snapshot`]) and keeps
//! the second's IOPS or MiB/s; after the ramp, once the last WINDOW of
//! seconds is steady by the criterion ([`stats::series::steady`]: every
//! value within the limit of the window's mean for `iops` and `bw`, the
//! least-squares slope within it for `iops_slope` and `bw_slope`; a
//! percentage is of the window's mean), the phase is cut there
//! ([`engine::PhaseControl::cut`]) as its time limit would cut it. A
//! phase needs a time limit to be cut: `--steady` is refused without
//! `--time`, and a phase that ends (its limit, its data) before it is
//! steady says so in its record. The workers' loops are not touched: they
//! already read the time limit, and read the cut beside it.
//!
//! A time-based fio job runs its files as passes, one phase each
//! ([`crate::plan::Passes`]); fio judges steadiness across the whole loop,
//! so the executor hands one watch to every recorded pass
//! ([`PhaseWatch::Carried`]): its seconds run on the first pass's clock,
//! and the totals of the passes before are carried into the next.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use stats::series::{steady, SteadyCriterion};

/// What is judged, as fio's `steadystate=` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Every second's IOPS within the limit of the window's mean.
    Iops,
    /// The slope of the seconds' IOPS within the limit.
    IopsSlope,
    /// Every second's MiB/s within the limit of the window's mean.
    Bw,
    /// The slope of the seconds' MiB/s within the limit.
    BwSlope,
}

impl Kind {
    /// fio's name of it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Iops => "iops",
            Kind::IopsSlope => "iops_slope",
            Kind::Bw => "bw",
            Kind::BwSlope => "bw_slope",
        }
    }

    fn criterion(self) -> SteadyCriterion {
        match self {
            Kind::Iops | Kind::Bw => SteadyCriterion::Deviation,
            Kind::IopsSlope | Kind::BwSlope => SteadyCriterion::Slope,
        }
    }

    fn data(self) -> bool {
        matches!(self, Kind::Bw | Kind::BwSlope)
    }
}

/// A steady-state rule (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Steady {
    /// The criterion.
    pub kind: Kind,
    /// The limit: percent of the window's mean when `pct`, else IOPS or
    /// MiB/s (per second for a slope).
    pub limit: f64,
    /// Whether `limit` is a percentage.
    pub pct: bool,
    /// The rolling window, whole seconds (at least 2).
    pub window: Duration,
    /// Time from the phase's start before seconds are collected.
    pub ramp: Duration,
    /// The phase's figures stay the whole phase's, warm-up included (fio's
    /// `steadystate=`: its figures cover the whole job); without it they
    /// are the steady window's ([`apply`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole: bool,
}

// The limit is finite (parse refuses NaN), so equality is total.
impl Eq for Steady {}

/// One second: the sampling period, as fio's.
const SAMPLE: Duration = Duration::from_secs(1);

impl Steady {
    /// Reads `KIND:LIMIT:WINDOW[:RAMP]`, e.g. `iops:5%:30s`,
    /// `bw_slope:0.5:1m:10s`.
    pub fn parse(text: &str) -> Result<Steady, String> {
        let parts: Vec<&str> = text.split(':').collect();
        if !(3..=4).contains(&parts.len()) {
            return Err(format!(
                "{text}: give KIND:LIMIT:WINDOW[:RAMP], e.g. iops:5%:30s"
            ));
        }
        let kind = match parts[0] {
            "iops" => Kind::Iops,
            "iops_slope" => Kind::IopsSlope,
            "bw" => Kind::Bw,
            "bw_slope" => Kind::BwSlope,
            k => {
                return Err(format!(
                    "{k}: the criterion is iops, iops_slope, bw or bw_slope"
                ))
            }
        };
        let (num, pct) = match parts[1].strip_suffix('%') {
            Some(n) => (n, true),
            None => (parts[1], false),
        };
        let limit: f64 = num
            .trim()
            .parse()
            .ok()
            .filter(|l: &f64| l.is_finite() && *l >= 0.0)
            .ok_or_else(|| format!("{}: the limit is a number ≥ 0, or a percentage", parts[1]))?;
        let dur = |t: &str| spec::parse_duration(t).map_err(|e| format!("{t}: {e}"));
        let window = dur(parts[2])?;
        if window < 2 * SAMPLE || window.subsec_nanos() != 0 {
            return Err(format!(
                "{}: the window is whole seconds, at least 2 (one sample a second)",
                parts[2]
            ));
        }
        let ramp = parts.get(3).map_or(Ok(Duration::ZERO), |t| dur(t))?;
        Ok(Steady {
            kind,
            limit,
            pct,
            window,
            ramp,
            whole: false,
        })
    }

    /// Samples in the window.
    pub fn samples(&self) -> usize {
        self.window.as_secs() as usize
    }

    /// Whether the window `values` (one a second) is steady.
    pub fn judge(&self, values: &[f64]) -> bool {
        if values.len() < self.samples() {
            return false;
        }
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let limit = if self.pct {
            self.limit / 100.0 * mean
        } else {
            self.limit
        };
        steady(values, SAMPLE.as_secs_f64(), self.kind.criterion(), limit)
    }

    /// The record's `steady` object for a phase that ended with `watch`.
    fn record(&self, watch: &Watch) -> report::SteadyRecord {
        let st = watch.state();
        report::SteadyRecord {
            criterion: self.kind.name().into(),
            limit: self.limit,
            limit_pct: self.pct,
            window_s: self.window.as_secs_f64(),
            ramp_s: self.ramp.as_secs_f64(),
            reached: st.reached_ns.is_some(),
            at_s: st.reached_ns.map(|n| n as f64 / 1e9),
            samples: st.values.clone(),
            sample_ops: st.counts.iter().map(|c| c.0).collect(),
            sample_bytes: st.counts.iter().map(|c| c.1).collect(),
            whole: None,
        }
    }
}

/// The driver's watch over one phase: the seconds read so far and when
/// the phase was found steady.
#[derive(Debug)]
pub struct Watch {
    rule: Steady,
    state: Mutex<State>,
}

#[derive(Debug, Default, Clone)]
struct State {
    /// The last window's values (at most a window's).
    values: Vec<f64>,
    /// The same seconds' operations and bytes.
    counts: Vec<(u64, u64)>,
    /// The live totals (operations, bytes) at the last sample.
    last: (u64, u64),
    /// Samples taken.
    taken: u64,
    /// ns since `origin` at which the last window was steady.
    reached_ns: Option<u64>,
    /// The clock the seconds run on: the first watched phase's epoch.
    origin: Option<Instant>,
    /// The epoch of the phase being watched.
    phase: Option<Instant>,
    /// Operations and bytes of the phases watched before it.
    base: (u64, u64),
    /// The live totals of this phase, as last read.
    seen: (u64, u64),
}

/// The watch a phase is judged by: its own, or one the executor carries
/// across a job's passes (see the module documentation).
#[derive(Debug)]
pub(crate) enum PhaseWatch<'a> {
    /// This phase's alone.
    Own(Watch),
    /// Every recorded pass's.
    Carried(&'a Watch),
}

impl PhaseWatch<'_> {
    /// The watch.
    pub(crate) fn get(&self) -> &Watch {
        match self {
            PhaseWatch::Own(w) => w,
            PhaseWatch::Carried(w) => w,
        }
    }
}

impl Watch {
    /// A watch by `rule`.
    pub fn new(rule: Steady) -> Watch {
        Watch {
            rule,
            state: Mutex::new(State::default()),
        }
    }

    /// What the watch found, as the record's `steady` object.
    pub fn record(&self) -> report::SteadyRecord {
        self.rule.record(self)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the live totals when a second has passed since the last
    /// sample (after the ramp), and cuts the phase through `ctl` once the
    /// last window is steady. Called often by the driver's thread.
    pub fn tick(&self, ctl: &engine::PhaseControl, now: Instant) {
        let mut st = self.state();
        if st.reached_ns.is_some() {
            return;
        }
        if st.phase != Some(ctl.epoch) {
            // A new pass: what the last one moved is carried.
            st.base = (st.base.0 + st.seen.0, st.base.1 + st.seen.1);
            st.seen = (0, 0);
            st.phase = Some(ctl.epoch);
        }
        let origin = *st.origin.get_or_insert(ctl.epoch);
        let since = now.saturating_duration_since(origin);
        let Some(after) = since.checked_sub(self.rule.ramp) else {
            return;
        };
        let due = after.as_secs();
        if due < st.taken {
            return;
        }
        let Some(snap) = engine::live::snapshot() else {
            return;
        };
        st.seen = (snap.units, snap.bytes);
        let totals = (st.base.0 + st.seen.0, st.base.1 + st.seen.1);
        // The first reading (at the ramp's end) starts the count.
        if st.taken > 0 {
            let (du, db) = (
                totals.0.saturating_sub(st.last.0),
                totals.1.saturating_sub(st.last.1),
            );
            let v = if self.rule.kind.data() {
                db as f64 / 1_048_576.0
            } else {
                du as f64
            };
            st.values.push(v);
            st.counts.push((du, db));
            let n = self.rule.samples();
            if st.values.len() > n {
                st.values.remove(0);
                st.counts.remove(0);
            }
            if self.rule.judge(&st.values) {
                let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
                st.reached_ns = Some(ns(since));
                ctl.cut(ns(now.saturating_duration_since(ctl.epoch)));
            }
        }
        st.last = totals;
        st.taken = due + 1;
    }
}

impl Watch {
    /// Reads the phase's last live totals once its workers have
    /// returned, so a carried watch counts the tail of the pass (the
    /// seconds after its last sample) in the next pass's first second.
    pub(crate) fn settle(&self, ctl: &engine::PhaseControl) {
        let mut st = self.state();
        if st.phase == Some(ctl.epoch) {
            if let Some(snap) = engine::live::snapshot() {
                st.seen = (snap.units, snap.bytes);
            }
        }
    }
}

/// Puts `st` in the phase's record `r`; when the phase was steady, the
/// record's figures become the steady window's (the intervals of its
/// series inside the window) and the whole phase's go to `st.whole`. A
/// phase without a series (`--interval off`), or by a rule that keeps the
/// `whole` phase's figures, keeps them.
pub fn apply(r: &mut report::PhaseRecord, mut st: report::SteadyRecord, whole: bool) {
    let window = match (st.at_s, r.series.as_ref()) {
        (Some(at), Some(s)) if st.reached && !whole => window_of(s, at - st.window_s, at),
        _ => None,
    };
    if let Some(w) = window {
        st.whole = Some(report::SteadyWhole {
            bytes: r.bytes,
            ops: r.ops,
            elapsed_s: r.elapsed_s,
        });
        let rate = |x: f64| x / w.secs;
        r.bytes = w.io.bytes;
        r.ops = w.io.ops;
        r.read_bytes = w.io.read_bytes;
        r.write_bytes = w.io.write_bytes;
        r.elapsed_s = w.secs;
        r.bw_mib_s = rate(w.io.bytes as f64) / 1_048_576.0;
        r.bw_mb_s = rate(w.io.bytes as f64) / 1e6;
        r.iops = rate(w.io.ops as f64);
        if let Some(f) = r.files.as_mut() {
            // A metadata phase's `ops` are its files processed.
            f.processed = r.ops;
            if f.requested > 0 {
                f.processed_pct = 100.0 * f.processed as f64 / f.requested as f64;
            }
        }
    }
    r.steady = Some(st);
}

/// The counters and seconds of the intervals of `s` that lie inside
/// `[from_s, to_s]` (to a millisecond: the watch reads on its own
/// clock); `None` when none does.
struct Window {
    io: stats::counters::IoCounters,
    secs: f64,
}

fn window_of(s: &stats::Series, from_s: f64, to_s: f64) -> Option<Window> {
    let mut io = stats::counters::IoCounters::default();
    let mut secs = 0.0;
    for (b, f) in s.bins().iter().zip(s.figures()) {
        if f.t_s >= from_s - 1e-3 && f.t_s + f.dur_s <= to_s + 1e-3 {
            io.merge(&b.io);
            secs += f.dur_s;
        }
    }
    (secs > 0.0).then_some(Window { io, secs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fio_s_criteria_and_refuses_the_rest() {
        let s = Steady::parse("iops:5%:30s").unwrap();
        assert_eq!((s.kind, s.limit, s.pct), (Kind::Iops, 5.0, true));
        assert_eq!(
            (s.window, s.ramp),
            (Duration::from_secs(30), Duration::ZERO)
        );
        let s = Steady::parse("bw_slope:0.5:1m:10s").unwrap();
        assert_eq!((s.kind, s.pct, s.samples()), (Kind::BwSlope, false, 60));
        assert_eq!(s.ramp, Duration::from_secs(10));
        for bad in [
            "",
            "iops",
            "iops:5%",
            "lat:5%:30s",
            "iops:-1:30s",
            "iops:nan:30s",
            "iops:1e400:30s",
            "iops:5%:1s",
            "iops:5%:1500ms",
            "iops:5%:30s:soon",
            "iops:5%:30s:1s:2",
        ] {
            assert!(Steady::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn judges_as_fio_does() {
        let s = Steady::parse("iops:5%:4s").unwrap();
        assert!(s.judge(&[100.0, 102.0, 98.0, 100.0]));
        assert!(!s.judge(&[100.0, 110.0, 98.0, 100.0]));
        // Too few samples for the window.
        assert!(!s.judge(&[100.0, 100.0, 100.0]));
        let a = Steady::parse("iops:3:4s").unwrap();
        assert!(a.judge(&[100.0, 102.0, 98.0, 100.0]));
        assert!(!a.judge(&[100.0, 104.0, 96.0, 100.0]));
        // A slope of 1 per second against 1% of a mean of 101.5.
        let sl = Steady::parse("bw_slope:1%:4s").unwrap();
        assert!(sl.judge(&[100.0, 101.0, 102.0, 103.0]));
        assert!(!sl.judge(&[100.0, 110.0, 120.0, 130.0]));
        // Steady level, wild values: not steady by deviation.
        assert!(!s.judge(&[0.0, 200.0, 0.0, 200.0]));
    }
}
