//! Changes inside a phase: drops, latency steps, and phases that never
//! settle.
//!
//! Cloud volumes change speed mid-run: burst credits run out, throttles
//! come and go. One figure per phase cannot tell "16 workers are slower"
//! from "the credits ran out during the 16-worker point"; a phase's
//! series ([`stats::Series`]) can. This module finds a change point in
//! each phase's intervals — the rate falls, or the median latency rises,
//! beyond the noise of the intervals around it and holds for several
//! intervals — and says in words when it happened, between which levels,
//! and whether the time into the phase or the bytes moved explain it
//! across worker counts rather than the workers. A phase without a
//! steady window is named too. The thresholds are in
//! [`crate::verdict`]; docs/analysis.md states the rules.
//!
//! The change point is the split that best separates two levels (the
//! largest mean difference weighted by `sqrt(n_in · n_out / n)`, a CUSUM
//! statistic; Page, Biometrika 41, 1954), over one split (the new level
//! holds to the end) or two (it comes back); the best split is then held
//! to the rules, so noise that the split fits is still refused.

use serde::{Deserialize, Serialize};
use stats::series::{steady, SteadyCriterion};
use stats::{BinFigures, Series};

use crate::verdict::{
    dur, num, workers_word, Units, DROP_ALIGN, DROP_HOLD, DROP_MIN_INTERVALS, DROP_MIN_PHASE,
    DROP_NOISE, DROP_NOISE_FLOOR, DROP_SHARE, LATENCY_STEADY, SERIES_WORKERS, STEADY_INTERVALS,
    STEADY_SHARE,
};

/// Longest run of intervals the split search reads at full resolution;
/// longer phases are searched on averages of adjacent intervals (the
/// search is quadratic) and the split checked on every interval.
const SEARCH_MAX: usize = 512;

/// One phase of a line, as the rules over time read it.
#[derive(Debug, Clone, Copy)]
pub struct PhaseView<'a> {
    /// Workers of its point.
    pub workers: u32,
    /// Its repetition.
    pub rep: u32,
    /// Its place in the order the phases ran (credits spent in one phase
    /// are still spent in the next).
    pub order: usize,
    /// Its series.
    pub series: &'a Series,
}

/// A change found inside one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Workers of the phase's point.
    pub workers: u32,
    /// The phase's repetition.
    pub rep: u32,
    /// Place of the phase in the run order.
    pub order: usize,
    /// Whether the rate fell.
    pub rate_fell: bool,
    /// Whether the median latency rose.
    pub latency_rose: bool,
    /// Seconds into the phase of the first interval at the new level.
    pub at_s: f64,
    /// Seconds into the phase at which the old level came back; `None`
    /// when the new level held to the end.
    pub back_s: Option<f64>,
    /// Mean rate of the intervals before, in the line's unit.
    pub rate_before: f64,
    /// Mean rate at the new level.
    pub rate_after: f64,
    /// Mean of the intervals' median latencies before, µs.
    pub p50_before_us: f64,
    /// The same at the new level.
    pub p50_after_us: f64,
    /// Bytes the phase moved before the change.
    pub bytes_before: u64,
    /// Operations the phase completed before the change.
    pub ops_before: u64,
    /// The interval, seconds.
    pub interval_s: f64,
    /// What the rate did where the latency alone was found to rise
    /// ([`RateAtStep::Fell`] when `rate_fell`).
    #[serde(default)]
    pub rate_at_step: RateAtStep,
}

/// What the rate did at a rise of the median latency, read at the
/// latency's change point by the same rules as a drop: the sentence
/// says it as the figures show it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateAtStep {
    /// The rate fell by the rules too (one change, said as a drop).
    #[default]
    Fell,
    /// The rate's mean fell by less than [`DROP_SHARE`], or not at all.
    Small,
    /// The rate's mean fell by [`DROP_SHARE`] or more, by less than
    /// [`DROP_NOISE`] × this noise of its intervals (the line's unit).
    Noise(f64),
    /// The rate's mean fell by [`DROP_SHARE`] or more, with more than
    /// 1 − [`DROP_HOLD`] of one side's intervals nearer the other level.
    Scattered,
}

/// A phase in which no window of intervals was steady.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unsteady {
    /// Workers of the phase's point.
    pub workers: u32,
    /// The phase's repetition.
    pub rep: u32,
    /// Lowest interval rate, in the line's unit.
    pub lo: f64,
    /// Highest interval rate.
    pub hi: f64,
    /// The interval, seconds.
    pub interval_s: f64,
}

/// What the rules over time found in one line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// One entry per phase with a change.
    pub changes: Vec<Change>,
    /// One entry per phase with no steady window.
    pub unsteady: Vec<Unsteady>,
    /// The findings in words.
    pub sentences: Vec<String>,
}

/// Whether a rate falls or a latency rises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    Down,
    Up,
}

impl Way {
    /// +1 when the old level is the higher one.
    fn sign(self) -> f64 {
        match self {
            Way::Down => 1.0,
            Way::Up => -1.0,
        }
    }
}

/// A verified change: intervals `[a, b)` at the new level, `lo`, the rest
/// at the old one, `hi`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Split {
    a: usize,
    b: usize,
    old: f64,
    new: f64,
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Robust standard deviation: 1.4826 × the median absolute deviation
/// (Iglewicz & Hoaglin 1993), so one stray interval does not widen it.
fn robust_sd(v: &[f64]) -> f64 {
    let mut c = v.to_vec();
    let m = median(&mut c);
    let mut d: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    1.4826 * median(&mut d)
}

/// Standard deviation of the intervals around their own segment's mean,
/// pooled over the segments: every interval counts, so a few intervals
/// on one side cannot make the noise look smaller than it is.
fn pooled_sd(segments: &[&[f64]]) -> f64 {
    let (mut ss, mut df) = (0.0, 0usize);
    for seg in segments.iter().filter(|s| !s.is_empty()) {
        let m = mean(seg);
        ss += seg.iter().map(|x| (x - m) * (x - m)).sum::<f64>();
        df += seg.len() - 1;
    }
    if df == 0 {
        0.0
    } else {
        (ss / df as f64).sqrt()
    }
}

/// Share of `v` on the side of `mid` that `sign` names.
fn held(v: &[f64], mid: f64, sign: f64) -> f64 {
    if v.is_empty() {
        return 1.0;
    }
    v.iter().filter(|&&x| sign * (x - mid) > 0.0).count() as f64 / v.len() as f64
}

/// Why [`judge`] refused a split.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Refusal {
    /// Too few intervals on a side.
    Short,
    /// The levels differ by less than the rule's share (or one is not a
    /// finite positive level).
    Small,
    /// The difference is within [`DROP_NOISE`] × this noise.
    Noise(f64),
    /// Too many intervals lie on the other side of the midpoint.
    Scattered,
}

/// Whether intervals `[a, b)` of `v` are a change of `way` from the rest.
fn verify(v: &[f64], a: usize, b: usize, way: Way) -> Option<Split> {
    judge(v, a, b, way).ok()
}

/// [`verify`], with the rule that refused the split.
fn judge(v: &[f64], a: usize, b: usize, way: Way) -> Result<Split, Refusal> {
    let (n, m) = (v.len(), DROP_MIN_INTERVALS);
    if a < m || b > n || b < a + m || (b < n && (n - b < m || b - a < 2 * m)) {
        return Err(Refusal::Short);
    }
    let (before, inside, after) = (&v[..a], &v[a..b], &v[b..]);
    let (old, new) = (mean(before), mean(inside));
    let big_enough = match way {
        Way::Down => new <= (1.0 - DROP_SHARE) * old,
        Way::Up => new >= LATENCY_STEADY * old,
    };
    if !big_enough || old <= 0.0 || !old.is_finite() || !new.is_finite() {
        return Err(Refusal::Small);
    }
    let floor = DROP_NOISE_FLOOR * old.max(new);
    let noise = pooled_sd(&[before, inside, after])
        .max(robust_sd(before))
        .max(robust_sd(inside))
        .max(floor);
    if (old - new).abs() < DROP_NOISE * noise {
        return Err(Refusal::Noise(noise));
    }
    let (mid, s) = ((old + new) / 2.0, way.sign());
    if held(before, mid, s) < DROP_HOLD || held(inside, mid, -s) < DROP_HOLD {
        return Err(Refusal::Scattered);
    }
    if !after.is_empty() {
        let back = mean(after);
        let noise = noise.max(robust_sd(after));
        if (back - new).abs() < DROP_NOISE * noise {
            return Err(Refusal::Noise(noise));
        }
        if held(after, mid, s) < DROP_HOLD {
            return Err(Refusal::Scattered);
        }
    }
    Ok(Split { a, b, old, new })
}

/// The best candidate splits of `v`: the change holding to the end, and
/// the one that comes back, each with its score.
fn candidates(v: &[f64], way: Way) -> [Option<(f64, usize, usize)>; 2] {
    let (n, m) = (v.len(), DROP_MIN_INTERVALS);
    let mut pre = vec![0.0; n + 1];
    for (i, x) in v.iter().enumerate() {
        pre[i + 1] = pre[i] + x;
    }
    let mut best: [Option<(f64, usize, usize)>; 2] = [None, None];
    for a in m..=n - m {
        for b in a + m..=n {
            // A change that comes back holds twice as long, and the old
            // level must hold after it too.
            if b < n && (n - b < m || b - a < 2 * m) {
                continue;
            }
            let (inn, out) = ((b - a) as f64, (n - (b - a)) as f64);
            let si = pre[b] - pre[a];
            let d = way.sign() * ((pre[n] - si) / out - si / inn);
            if d <= 0.0 {
                continue;
            }
            let score = d * (inn * out / n as f64).sqrt();
            let slot = &mut best[usize::from(b < n)];
            if slot.is_none_or(|(s, _, _)| score > s) {
                *slot = Some((score, a, b));
            }
        }
    }
    best
}

/// The change of `way` in `v`, if one passes the rules.
fn find(v: &[f64], way: Way) -> Option<Split> {
    if v.len() < DROP_MIN_PHASE.max(2 * DROP_MIN_INTERVALS) {
        return None;
    }
    // Long phases: search on averages of `k` adjacent intervals.
    let k = v.len().div_ceil(SEARCH_MAX).next_power_of_two();
    let coarse: Vec<f64> = v.chunks(k).map(mean).collect();
    if coarse.len() < 2 * DROP_MIN_INTERVALS {
        return None;
    }
    let mut found: Vec<(f64, usize, usize)> =
        candidates(&coarse, way).into_iter().flatten().collect();
    found.sort_by(|x, y| y.0.total_cmp(&x.0));
    found.into_iter().find_map(|(_, a, b)| {
        let (a, b) = refine(v, a * k, (b * k).min(v.len()), k, way);
        verify(v, a, b, way)
    })
}

/// The change's edges moved to the best of the `k` intervals around each
/// (the search on averages of `k` intervals found them to within `k`).
fn refine(v: &[f64], a: usize, b: usize, k: usize, way: Way) -> (usize, usize) {
    if k == 1 {
        return (a, b);
    }
    let m = DROP_MIN_INTERVALS;
    let score = |a: usize, b: usize| {
        let (before, inside, after) = (&v[..a], &v[a..b], &v[b..]);
        let out = (before.iter().sum::<f64>() + after.iter().sum::<f64>())
            / (before.len() + after.len()) as f64;
        way.sign() * (out - mean(inside))
    };
    let range = |x: usize, lo: usize, hi: usize| x.saturating_sub(k).max(lo)..=(x + k).min(hi);
    let a = range(a, m, b - m)
        .max_by(|&x, &y| score(x, b).total_cmp(&score(y, b)))
        .unwrap_or(a);
    if b == v.len() {
        return (a, b);
    }
    let b = range(b, a + m, v.len() - m)
        .max_by(|&x, &y| score(a, x).total_cmp(&score(a, y)))
        .unwrap_or(b);
    (a, b)
}

/// A phase's intervals as the rules read them: those of full length in
/// which at least [`SERIES_WORKERS`] of its workers were running.
fn kept(f: &[BinFigures], interval_s: f64) -> Vec<usize> {
    let most = f.iter().map(|b| b.workers).fold(0.0, f64::max);
    (0..f.len())
        .filter(|&i| f[i].dur_s >= 0.99 * interval_s && f[i].workers >= SERIES_WORKERS * most)
        .collect()
}

/// A series' figures, the intervals [`kept`] of them, and the interval
/// in seconds.
fn kept_of(s: &Series) -> (Vec<BinFigures>, Vec<usize>, f64) {
    let f = s.figures();
    let w = s.width_ns() as f64 / 1e9;
    let idx = kept(&f, w);
    (f, idx, w)
}

/// The rate of an interval in the line's unit.
fn rate(b: &BinFigures, data: bool, units: Units) -> f64 {
    if data {
        units.from_mib_s(b.mib_s)
    } else {
        b.iops
    }
}

/// The change inside one phase, and whether it had no steady window.
fn read_phase(p: &PhaseView, data: bool, units: Units) -> (Option<Change>, Option<Unsteady>) {
    let (f, idx, w) = kept_of(p.series);
    let rates: Vec<f64> = idx.iter().map(|&i| rate(&f[i], data, units)).collect();
    let lats: Vec<f64> = idx.iter().map(|&i| f[i].lat_p50_us).collect();
    // A median per interval needs an operation in every interval.
    let lat_ok = idx.iter().all(|&i| f[i].ops > 0);
    let fell = find(&rates, Way::Down);
    let rose = lat_ok.then(|| find(&lats, Way::Up)).flatten();
    let (split, rate_at_step) = match (fell, rose) {
        (Some(r), _) => (r, RateAtStep::Fell),
        // The rate read again at the latency's change point: a fall
        // there that passes the rules is the same change.
        (None, Some(l)) => match judge(&rates, l.a, l.b, Way::Down) {
            Ok(_) => (l, RateAtStep::Fell),
            Err(Refusal::Noise(n)) => (l, RateAtStep::Noise(n)),
            Err(Refusal::Scattered) => (l, RateAtStep::Scattered),
            Err(Refusal::Small | Refusal::Short) => (l, RateAtStep::Small),
        },
        (None, None) => {
            return (None, unsteady(p, &rates, w));
        }
    };
    let lat_rose = rose.is_some_and(|l| l.a.abs_diff(split.a) <= 1);
    let first = idx[split.a];
    let ops_before = f[..first].iter().map(|b| b.ops).sum();
    let change = Change {
        workers: p.workers,
        rep: p.rep,
        order: p.order,
        rate_fell: rate_at_step == RateAtStep::Fell,
        latency_rose: lat_rose,
        at_s: f[first].t_s,
        back_s: (split.b < idx.len()).then(|| f[idx[split.b]].t_s),
        rate_before: mean(&rates[..split.a]),
        rate_after: mean(&rates[split.a..split.b]),
        p50_before_us: mean(&lats[..split.a]),
        p50_after_us: mean(&lats[split.a..split.b]),
        bytes_before: f[first].bytes_before,
        ops_before,
        interval_s: w,
        rate_at_step,
    };
    (Some(change), None)
}

/// The phase as unsteady when it is long enough to judge and no
/// [`STEADY_INTERVALS`] intervals in a row stay within [`STEADY_SHARE`]
/// of their mean.
fn unsteady(p: &PhaseView, rates: &[f64], w: f64) -> Option<Unsteady> {
    if rates.len() < 2 * STEADY_INTERVALS {
        return None;
    }
    let any = rates.windows(STEADY_INTERVALS).any(|win| {
        let limit = STEADY_SHARE * mean(win);
        steady(win, w, SteadyCriterion::Deviation, limit)
    });
    (!any).then(|| Unsteady {
        workers: p.workers,
        rep: p.rep,
        lo: rates.iter().copied().fold(f64::INFINITY, f64::min),
        hi: rates.iter().copied().fold(0.0, f64::max),
        interval_s: w,
    })
}

/// Reads the phases of one line (one operation, one series of the
/// sweep): `unit` is its rate unit, `data` whether it moves data (MiB/s
/// in `units`; else operations per second). The sentences do not name
/// the operation: they are printed under the line's name.
pub fn read_line(unit: &str, data: bool, units: Units, phases: &[PhaseView]) -> Timeline {
    let mut t = Timeline::default();
    for p in phases {
        let (c, u) = read_phase(p, data, units);
        t.changes.extend(c);
        t.unsteady.extend(u);
    }
    let words = Words { unit, data };
    for rate_fell in [true, false] {
        let group: Vec<&Change> = t
            .changes
            .iter()
            .filter(|c| c.rate_fell == rate_fell)
            .collect();
        if let Some(s) = words.change_sentence(&group, phases) {
            t.sentences.push(s);
        }
    }
    if let Some(s) = words.after_sentence(&t.changes, phases, data, units) {
        t.sentences.push(s);
    }
    t.sentences
        .extend(words.unsteady_sentences(&t.unsteady, phases));
    t
}

/// How a line's findings are written.
struct Words<'a> {
    unit: &'a str,
    data: bool,
}

/// Phases of `phases` at `workers`.
fn reps_at(phases: &[PhaseView], workers: u32) -> usize {
    phases.iter().filter(|p| p.workers == workers).count()
}

/// The distinct worker counts of `cs`, ascending.
fn counts<T>(cs: &[T], workers: impl Fn(&T) -> u32) -> Vec<u32> {
    let mut w: Vec<u32> = cs.iter().map(workers).collect();
    w.sort_unstable();
    w.dedup();
    w
}

/// "2 and 4 workers", "2, 4 and 8 workers".
fn list_workers(ws: &[u32]) -> String {
    let n: Vec<String> = ws.iter().map(|w| w.to_string()).collect();
    let body = match n.len() {
        0 => String::new(),
        1 => n[0].clone(),
        _ => format!("{} and {}", n[..n.len() - 1].join(", "), n[n.len() - 1]),
    };
    if ws == [1] {
        "1 worker".into()
    } else {
        format!("{body} workers")
    }
}

/// Whether every value lies within [`DROP_ALIGN`] of their median, or
/// within `slack` of it.
fn aligned(v: &[f64], slack: f64) -> bool {
    let mut c = v.to_vec();
    let m = median(&mut c);
    v.iter()
        .all(|x| (x - m).abs() <= (DROP_ALIGN * m).max(slack))
}

impl Words<'_> {
    fn rate(&self, v: f64) -> String {
        format!("{} {}", num(v), self.unit)
    }

    /// What falls: the throughput of a line that moves data, else the
    /// rate of its operations.
    fn subject(&self) -> &'static str {
        if self.data {
            "Throughput"
        } else {
            "The rate"
        }
    }

    /// What the rate did at a rise of the latency alone, as its figures
    /// (the means before and at the new level) show it.
    fn rate_at_step(&self, c: &Change) -> String {
        let (b, a) = (self.rate(c.rate_before), self.rate(c.rate_after));
        let what = self.subject().to_lowercase();
        match c.rate_at_step {
            RateAtStep::Noise(n) => format!(
                "{what} fell from {b} to {a}, by less than {DROP_NOISE:.0} times the noise of \
                 its intervals ({}), so not a drop of its own",
                self.rate(n)
            ),
            RateAtStep::Scattered => format!(
                "{what} fell from {b} to {a} on average, with more than {:.0}% of the \
                 intervals on one side nearer the other level, so not a drop of its own",
                (1.0 - DROP_HOLD) * 100.0
            ),
            _ if c.rate_after >= c.rate_before => {
                format!("{what} did not fall ({b} before, {a} after)")
            }
            _ if c.rate_after > (1.0 - DROP_SHARE) * c.rate_before => format!(
                "{what} fell by less than {:.0}% ({b} before, {a} after)",
                DROP_SHARE * 100.0
            ),
            _ => format!("{what} was {b} before and {a} after"),
        }
    }

    /// The sentence of the changes in `group` (all drops of the rate, or
    /// all rises of the latency alone): the one at the most workers, and
    /// what the others say about its cause.
    fn change_sentence(&self, group: &[&Change], phases: &[PhaseView]) -> Option<String> {
        let main = group
            .iter()
            .max_by_key(|c| (c.workers, std::cmp::Reverse(c.rep)))?;
        let at = format!("{} into the phase", dur(main.at_s));
        let of = reps_of(group, phases, main.workers);
        let mut s = if main.rate_fell {
            let mut s = format!(
                "{} fell from {} to {} {at} at {}{of}",
                self.subject(),
                self.rate(main.rate_before),
                self.rate(main.rate_after),
                workers_word(main.workers)
            );
            if main.latency_rose {
                s += &format!(
                    ", while the median latency rose from {} to {}",
                    dur(main.p50_before_us / 1e6),
                    dur(main.p50_after_us / 1e6)
                );
            }
            s
        } else {
            format!(
                "The median latency rose from {} to {} {at} at {}{of}, while {}",
                dur(main.p50_before_us / 1e6),
                dur(main.p50_after_us / 1e6),
                workers_word(main.workers),
                self.rate_at_step(main),
            )
        };
        s += &match main.back_s {
            None => " and stayed there until the end".into(),
            Some(b) => format!(" and came back {} later", dur(b - main.at_s)),
        };
        s += &self.cause(group, phases);
        s.push('.');
        Some(s)
    }

    /// Why the changes of `group` happened, read across worker counts.
    fn cause(&self, group: &[&Change], phases: &[PhaseView]) -> String {
        let ws = counts(group, |c| c.workers);
        if ws.len() < 2 {
            return only_here(&ws, phases);
        }
        // Per worker count, the median time and volume of its changes.
        let per: Vec<(u32, f64, f64)> = ws
            .iter()
            .map(|&w| {
                let at = group.iter().filter(|c| c.workers == w);
                let mut t: Vec<f64> = at.clone().map(|c| c.at_s).collect();
                let mut v: Vec<f64> = at.map(|c| self.moved(c)).collect();
                (w, median(&mut t), median(&mut v))
            })
            .collect();
        let step = group.iter().map(|c| c.interval_s).fold(0.0, f64::max);
        let mut times: Vec<f64> = per.iter().map(|p| p.1).collect();
        let mut vols: Vec<f64> = per.iter().map(|p| p.2).collect();
        // One interval of the fastest rate is the slack on the volume.
        let vol_slack = group
            .iter()
            .map(|c| self.moved(c) / c.at_s.max(c.interval_s) * c.interval_s)
            .fold(0.0, f64::max);
        let (by_time, by_vol) = (aligned(&times, step), aligned(&vols, vol_slack));
        let list = list_workers(&ws);
        let same = |what: &str| format!("the same change appears at {list} after the same {what}");
        let t_med = dur(median(&mut times));
        let v_med = self.amount(median(&mut vols));
        let unit = if self.data {
            "number of bytes"
        } else {
            "number of operations"
        };
        match (by_time, by_vol) {
            (true, true) => format!(
                " (not the number of workers: {}, about {t_med} and {v_med})",
                same(&format!("time and {unit}"))
            ),
            (false, true) => format!(
                " (a limit reached after a volume — burst credits, a cache filling — not the \
                 number of workers: {}, about {v_med}, at {})",
                same(unit),
                per.iter().map(|p| dur(p.1)).collect::<Vec<_>>().join(", ")
            ),
            (true, false) => format!(
                " (a limit that sets in after a time — a throttle, credits — not the number \
                 of workers: {}, about {t_med})",
                same("time")
            ),
            (false, false) => format!(
                " (at {}: neither the time nor the {unit} line up)",
                per.iter()
                    .map(|p| format!(
                        "{} after {} and {}",
                        workers_word(p.0),
                        dur(p.1),
                        self.amount(p.2)
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// Bytes (data) or operations a phase moved before its change.
    fn moved(&self, c: &Change) -> f64 {
        if self.data {
            c.bytes_before as f64
        } else {
            c.ops_before as f64
        }
    }

    /// [`Words::moved`] in words.
    fn amount(&self, v: f64) -> String {
        if self.data {
            spec::format_size(v.round().max(0.0) as u64)
        } else {
            format!("{v:.0} operations")
        }
    }

    /// When phases run after the last drop (at other worker counts, with
    /// no change of their own) stay at the level it fell to: their lower
    /// figures are the same limit, not their number of workers.
    fn after_sentence(
        &self,
        changes: &[Change],
        phases: &[PhaseView],
        data: bool,
        units: Units,
    ) -> Option<String> {
        let last = changes
            .iter()
            .filter(|c| c.rate_fell && c.back_s.is_none())
            .max_by_key(|c| c.order)?;
        let later: Vec<(u32, f64)> = phases
            .iter()
            .filter(|p| p.order > last.order && p.workers != last.workers)
            .filter(|p| !changes.iter().any(|c| c.order == p.order))
            .filter_map(|p| {
                let (f, idx, _) = kept_of(p.series);
                let r: Vec<f64> = idx.iter().map(|&i| rate(&f[i], data, units)).collect();
                (!r.is_empty()).then(|| (p.workers, mean(&r)))
            })
            .collect();
        if later.is_empty()
            || !later
                .iter()
                .all(|&(_, r)| (r - last.rate_after).abs() <= DROP_ALIGN * last.rate_after)
        {
            return None;
        }
        let ws = counts(&later, |p| p.0);
        let lo = later.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let hi = later.iter().map(|p| p.1).fold(0.0, f64::max);
        Some(format!(
            "The phases run after it, at {}, stayed near the level {} fell to ({} at {}) from \
             their start: {}–{}; their figures show that limit, not the effect of their number \
             of workers.",
            list_workers(&ws),
            self.subject().to_lowercase(),
            self.rate(last.rate_after),
            workers_word(last.workers),
            num(lo),
            self.rate(hi)
        ))
    }

    /// One sentence per worker count whose phases had no steady window.
    fn unsteady_sentences(&self, un: &[Unsteady], phases: &[PhaseView]) -> Vec<String> {
        counts(un, |u| u.workers)
            .into_iter()
            .map(|w| {
                let at: Vec<&Unsteady> = un.iter().filter(|u| u.workers == w).collect();
                let (n, all) = (at.len(), reps_at(phases, w));
                let of = if n < all {
                    format!(" ({n} of {all} repetitions)")
                } else {
                    String::new()
                };
                let lo = at.iter().map(|u| u.lo).fold(f64::INFINITY, f64::min);
                let hi = at.iter().map(|u| u.hi).fold(0.0, f64::max);
                let span = dur(STEADY_INTERVALS as f64 * at[0].interval_s);
                format!(
                    "Not steady at {}{of}: no {} intervals in a row ({span}) stayed within \
                     ±{:.0}% of their mean; the intervals ranged from {} to {}.",
                    workers_word(w),
                    STEADY_INTERVALS,
                    STEADY_SHARE * 100.0,
                    num(lo),
                    self.rate(hi)
                )
            })
            .collect()
    }
}

/// " (no such change at 2 and 4 workers)": the other worker counts
/// whose phases were long enough to show a change, when the change
/// appeared at `ws` only.
fn only_here(ws: &[u32], phases: &[PhaseView]) -> String {
    let judged: Vec<&PhaseView> = phases
        .iter()
        .filter(|p| kept_of(p.series).1.len() >= DROP_MIN_PHASE)
        .collect();
    let others: Vec<u32> = counts(&judged, |p| p.workers)
        .into_iter()
        .filter(|w| !ws.contains(w))
        .collect();
    if others.is_empty() {
        String::new()
    } else {
        format!(" (no such change at {})", list_workers(&others))
    }
}

/// " (2 of 3 repetitions)" when not every phase at `workers` shows it.
fn reps_of(group: &[&Change], phases: &[PhaseView], workers: u32) -> String {
    let n = group.iter().filter(|c| c.workers == workers).count();
    let all = reps_at(phases, workers);
    if n < all {
        format!(" (in {n} of {all} repetitions)")
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests;
