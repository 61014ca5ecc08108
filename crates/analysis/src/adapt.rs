//! The decisions of an adaptive sweep: how many repetitions a point needs
//! (`--reps auto`) and which worker count to measure next (`--threads
//! auto`), made with the analysis' own rules so that the verdict printed
//! at the end is the one that stopped the search.
//!
//! Both decisions are pure functions of what was measured: the search
//! keeps no state of its own, it is read again from the points after each
//! count. A sweep resumed from its record therefore continues the search
//! it was doing, and a test drives it with synthetic curves.
//!
//! The repetition rule ([`judge_reps`]): a point repeats until the 95 %
//! bootstrap interval of every operation's central figure (the one the
//! tables and the analysis use, [`crate::model::OpStats::rate_ci`]) is
//! within ±[`REPS_TARGET`] of it, with at least [`REPS_MIN`] good
//! repetitions, and at most the `--max-reps` (failed repetitions count
//! towards it: a point that keeps failing stops there).
//!
//! The search ([`search`]) over each line of the sweep:
//!
//! 1. **Doubling.** From the start count, double while each count is
//!    clearly above the best before it ([`clearly_above`]: more than
//!    [`MIN_EFFECT`](crate::verdict::MIN_EFFECT) and intervals apart). It stops at the first count
//!    that is not, when the line's verdict is already certain
//!    (serialised, CPU-bound, falls) or both points are quiet enough to
//!    show a flat line ([`PLATEAU_NOISE`]); otherwise after
//!    [`SEARCH_PATIENCE`] such counts in a row; and at the largest count.
//! 2. **Refining.** The optimum is the smallest count within noise of the
//!    peak (not clearly below it). Between it and the largest measured
//!    count below it (clearly below the peak), the count nearest their
//!    geometric mean is measured next, until the two are neighbours.
//!
//! A line still rising at the largest count has an optimum of "at least"
//! that count; it is refined only when its verdict is not latency-bound
//! (the knee may lie between the last two doublings). The sweep measures the smallest count any line
//! asks for; every line is measured there.

use serde::{Deserialize, Serialize};
use stats::Interval;

use crate::verdict::{
    clearly_above, dur, num, workers_word, CurveAnalysis, CurvePoint, VerdictKind, PLATEAU_NOISE,
    REPS_MAX, REPS_MIN, REPS_TARGET, SEARCH_MAX, SEARCH_PATIENCE,
};

/// `--reps auto[:x%]` with `--max-reps N`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RepsAuto {
    /// Widest relative half-width of the interval (0.05 = ±5 %).
    pub target: f64,
    /// Fewest repetitions.
    pub min: u32,
    /// Most repetitions, failed ones included.
    pub max: u32,
}

/// The target is a finite share ([`RepsAuto::parse`] takes no NaN), so
/// equality is an equivalence (a sweep's parameters compare with `Eq`).
impl Eq for RepsAuto {}

impl RepsAuto {
    /// Reads `auto`, `auto:3%` or `auto:3` (percent), with `--max-reps`
    /// (default [`REPS_MAX`]). `None` for a plain count.
    pub fn parse(spec: &str, max_reps: Option<u32>) -> Result<Option<RepsAuto>, String> {
        let Some(rest) = spec.strip_prefix("auto") else {
            return Ok(None);
        };
        let target = match rest.strip_prefix(':') {
            None if rest.is_empty() => REPS_TARGET,
            None => {
                return Err(format!(
                    "--reps {spec}: expected auto or auto:X% (e.g. auto:3%)"
                ))
            }
            Some(p) => {
                let v: f64 = p.trim_end_matches('%').parse().map_err(|_| {
                    format!("--reps {spec}: the target must be a percentage, e.g. auto:3%")
                })?;
                if !(v > 0.0 && v < 100.0) {
                    return Err(format!(
                        "--reps {spec}: the target must lie between 0% and 100%, both excluded"
                    ));
                }
                v / 100.0
            }
        };
        let max = max_reps.unwrap_or(REPS_MAX);
        if max < REPS_MIN {
            return Err(format!(
                "--max-reps {max}: --reps auto runs at least {REPS_MIN} repetitions a point (its interval is judged over them)"
            ));
        }
        Ok(Some(RepsAuto {
            target,
            min: REPS_MIN,
            max,
        }))
    }
}

/// One operation of a point, as the repetition rule reads it (from its
/// statistics: `From<&OpStats>` in [`crate::model`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RepFigure {
    /// The operation.
    pub op: String,
    /// Good repetitions.
    pub good: u32,
    /// The central figure (trimmed mean or mean of the good repetitions).
    pub center: f64,
    /// Its 95 % interval.
    pub ci: Option<Interval>,
}

impl RepFigure {
    /// The interval's relative half-width, when there is one to judge:
    /// two good repetitions or more, a positive finite centre and bounds.
    pub fn noise(&self) -> Option<f64> {
        let c = self.ci?;
        (self.good >= 2 && self.center.is_finite() && self.center > 0.0)
            .then(|| (c.hi - c.lo) / 2.0 / self.center)
            .filter(|h| h.is_finite() && *h >= 0.0)
    }
}

/// What a point's repetitions show against a [`RepsAuto`] target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepsOutcome {
    /// Repetitions run, failed ones included.
    pub ran: u32,
    /// Good repetitions of the operation with the fewest.
    pub good: u32,
    /// The widest relative half-width over the operations; `None` when an
    /// operation has no interval to judge.
    pub noise: Option<f64>,
    /// The operation that decided: the widest, or one without an interval.
    pub op: String,
    /// The target (0.05 = ±5 %).
    pub target: f64,
    /// The most repetitions allowed.
    pub max: u32,
    /// Every operation within the target, with enough good repetitions.
    pub reached: bool,
    /// No more repetitions: the target is reached or the most were run.
    pub done: bool,
}

/// The repetition rule after `ran` repetitions of a point whose
/// operations read `ops`.
pub fn judge_reps(rule: &RepsAuto, ran: u32, ops: &[RepFigure]) -> RepsOutcome {
    let good = ops.iter().map(|o| o.good).min().unwrap_or(0);
    // The deciding operation: one with no interval first, else the widest.
    let worst = ops.iter().find(|o| o.noise().is_none()).or_else(|| {
        ops.iter().max_by(|a, b| {
            let n = |o: &RepFigure| o.noise().unwrap_or(0.0);
            n(a).total_cmp(&n(b))
        })
    });
    let noise = match worst {
        Some(o) => o.noise(),
        None => None,
    };
    let reached =
        !ops.is_empty() && good >= rule.min && noise.is_some_and(|n| n <= rule.target + 1e-12);
    RepsOutcome {
        ran,
        good,
        noise,
        op: worst.map(|o| o.op.clone()).unwrap_or_default(),
        target: rule.target,
        max: rule.max,
        reached,
        done: reached || ran >= rule.max,
    }
}

impl RepsOutcome {
    /// "3 repetitions, ±2.1% (target ±5%, reached)", or with the target
    /// missed at the most repetitions, what the noise was.
    pub fn text(&self) -> String {
        let reps = if self.ran == 1 {
            "1 repetition".to_string()
        } else {
            format!("{} repetitions", self.ran)
        };
        let noise = match self.noise {
            Some(n) => format!("±{:.1}%", n * 100.0),
            None => "no interval".into(),
        };
        let target = format!("±{}%", percent(self.target));
        if self.reached {
            format!("{reps}, {noise} (target {target}, reached)")
        } else if self.done {
            let why = if self.good < REPS_MIN.min(self.max) {
                format!("{} good, too few to judge", self.good)
            } else {
                format!("{noise} for {}", self.op)
            };
            format!(
                "{reps}, the --max-reps: target {target} not reached ({why}); the noise here is wider than the target"
            )
        } else {
            format!("{reps} so far, {noise} (target {target})")
        }
    }
}

/// A share as a percentage without a needless decimal: 0.05 is "5",
/// 0.025 is "2.5".
pub fn percent(share: f64) -> String {
    let p = share * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}")
    } else {
        let t = format!("{p:.2}");
        t.trim_end_matches('0').to_string()
    }
}

/// `--threads auto[:MAX]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadsAuto {
    /// The first count measured.
    pub start: u32,
    /// The largest count the search may try.
    pub max: u32,
}

impl ThreadsAuto {
    /// Reads `auto` or `auto:MAX` (default [`SEARCH_MAX`]); `None` for a
    /// list.
    pub fn parse(spec: &str) -> Result<Option<ThreadsAuto>, String> {
        Self::parse_flag("--threads", spec, SEARCH_MAX)
    }

    /// [`ThreadsAuto::parse`] for `flag` (`--ranks`, `--nodes`), whose
    /// MAX is `default_max` when not given.
    pub fn parse_flag(
        flag: &str,
        spec: &str,
        default_max: u32,
    ) -> Result<Option<ThreadsAuto>, String> {
        let Some(rest) = spec.strip_prefix("auto") else {
            return Ok(None);
        };
        let max = match rest.strip_prefix(':') {
            None if rest.is_empty() => default_max.max(1),
            None => {
                return Err(format!(
                    "{flag} {spec}: expected auto or auto:MAX (e.g. auto:64)"
                ))
            }
            Some(m) => m.parse::<u32>().ok().filter(|&m| m >= 1).ok_or_else(|| {
                format!("{flag} {spec}: MAX must be a count from 1 to {}", u32::MAX)
            })?,
        };
        Ok(Some(ThreadsAuto { start: 1, max }))
    }

    /// The doubling ladder: start, 2 × start, … up to `max`, and `max`
    /// itself when the doublings miss it.
    pub fn ladder(&self) -> Vec<u32> {
        let mut out = Vec::new();
        let mut c = self.start.clamp(1, self.max.max(1));
        loop {
            out.push(c);
            match c.checked_mul(2) {
                Some(n) if n <= self.max => c = n,
                _ => break,
            }
        }
        if *out.last().expect("one count") < self.max {
            out.push(self.max);
        }
        out
    }
}

/// The smallest transfer size `--xfer auto` tries without a range.
pub const XFER_MIN: u64 = 4096;
/// The largest transfer size `--xfer auto` tries without a range.
pub const XFER_MAX: u64 = 64 << 20;
/// The largest unit a transfer-size search counts in: sizes are aligned
/// to it (or to the largest power of two dividing the smallest size).
pub const XFER_ALIGN: u64 = 4096;

/// `--xfer auto[:MIN-MAX]`: the search over transfer sizes, counted in
/// `unit`s, with the axis that says so. `None` for a list.
pub fn parse_xfer_auto(spec: &str) -> Result<Option<(ThreadsAuto, Axis)>, String> {
    let Some(rest) = spec.strip_prefix("auto") else {
        return Ok(None);
    };
    let bad = || format!("--xfer {spec}: expected auto or auto:MIN-MAX (e.g. auto:4k-16m)");
    let (min, max) = match rest.strip_prefix(':') {
        None if rest.is_empty() => (XFER_MIN, XFER_MAX),
        None => return Err(bad()),
        Some(r) => {
            let (a, b) = r.split_once('-').ok_or_else(bad)?;
            let size = |v: &str| {
                spec::parse_size(v)
                    .ok()
                    .filter(|&v| v > 0)
                    .ok_or_else(|| format!("--xfer {spec}: {v} is not a transfer size"))
            };
            (size(a)?, size(b)?)
        }
    };
    if max < min {
        return Err(format!(
            "--xfer {spec}: MAX is below MIN (the range runs from the smaller size to the larger)"
        ));
    }
    let unit = (1u64 << min.trailing_zeros()).min(XFER_ALIGN);
    let count = |v: u64| {
        u32::try_from(v / unit).map_err(|_| {
            format!(
                "--xfer {spec}: at most {} × MIN ({}) to search",
                u32::MAX,
                spec::format_size(unit)
            )
        })
    };
    let rule = ThreadsAuto {
        start: count(min)?,
        max: count(max)?,
    };
    Ok(Some((rule, Axis::Xfer { unit })))
}

/// The transfer sizes a `--xfer auto` search may try, in bytes: its
/// doubling ladder, and between two doublings the aligned sizes of at
/// most three significant bits (a count whose odd part is at most 7:
/// four a doubling, 1, 1.25, 1.5, 1.75 ×), on a log scale.
pub fn xfer_sizes(rule: &ThreadsAuto, unit: u64) -> Vec<u64> {
    let mut counts = rule.ladder();
    for e in 0..32u32 {
        for m in 1..=7u64 {
            let c = m << e;
            if c >= u64::from(rule.start) && c <= u64::from(rule.max) {
                counts.push(c as u32);
            }
        }
    }
    counts.sort_unstable();
    counts.dedup();
    counts.into_iter().map(|c| u64::from(c) * unit).collect()
}

/// Where the search of a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Doubling the count while the rate rises beyond noise.
    Doubling,
    /// Narrowing down the smallest count within noise of the peak.
    Refining,
    /// Nothing more to measure.
    Done,
}

/// Why the doubling of a line stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopKind {
    /// The count was not clearly above the best before it and both were
    /// quiet enough to show it: the line is flat or falls.
    NoRise,
    /// The line's verdict was certain: serialised, CPU-bound or falls.
    Verdict,
    /// [`SEARCH_PATIENCE`] counts in a row not clearly above the best,
    /// with too much noise to say more.
    Noise,
    /// Every repetition failed at [`SEARCH_PATIENCE`] counts in a row.
    Failed,
    /// The largest count the search may try.
    Max,
}

/// Why and where the doubling of a line stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stop {
    /// Why.
    pub kind: StopKind,
    /// The count at which it stopped.
    pub at: u32,
    /// The best count before it (the one it was compared with).
    pub best: Option<u32>,
    /// The line's verdict then.
    pub verdict: VerdictKind,
    /// Whether the count at which it stopped still rose clearly.
    pub rising: bool,
}

/// The optimum of a line: the smallest count within noise of its peak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Optimum {
    /// The swept count (threads, or threads per rank under MPI).
    pub count: u32,
    /// Its workers (ranks × threads).
    pub workers: u32,
    /// "At least": the line still rose at the largest count.
    pub at_least: bool,
    /// The sentence with its evidence.
    pub text: String,
}

/// The search of one line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineSearch {
    /// The line (`op` or `op (series)`).
    pub line: String,
    /// Where its search is.
    pub stage: Stage,
    /// The count it asks for next.
    pub next: Option<u32>,
    /// Why its doubling stopped, once it did.
    pub stop: Option<Stop>,
    /// Its optimum, from the points so far.
    pub optimum: Option<Optimum>,
}

/// The search over every line: what to measure next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Search {
    /// The smallest count any line asks for; `None` when every line is
    /// done.
    pub next: Option<u32>,
    /// Each line's search.
    pub lines: Vec<LineSearch>,
}

/// What an adaptive search counts: the key of its lines' points. The
/// search is the same on every axis; only the key and the words differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "axis")]
pub enum Axis {
    /// `--threads auto`: threads, or threads per rank under MPI
    /// ([`swept_count`]).
    #[default]
    Workers,
    /// `--ranks auto`: the MPI ranks a sweep launches on one node.
    Ranks,
    /// `--nodes auto`: the nodes a sweep launches, this many ranks on
    /// each.
    Nodes {
        /// Ranks on each node.
        ranks_per_node: u32,
    },
    /// `--xfer auto`: the transfer size, counted in `unit` bytes.
    Xfer {
        /// Bytes of one count.
        unit: u64,
    },
}

impl Axis {
    /// The flag that asks for the search.
    pub fn flag(&self) -> &'static str {
        match self {
            Axis::Workers => "--threads",
            Axis::Ranks => "--ranks",
            Axis::Nodes { .. } => "--nodes",
            Axis::Xfer { .. } => "--xfer",
        }
    }

    /// The count a point stands for, where the point itself says it
    /// (every axis but [`Axis::Xfer`], whose lines the caller keys).
    pub fn key(&self, p: &CurvePoint) -> u32 {
        match self {
            Axis::Workers | Axis::Xfer { .. } => swept_count(p),
            Axis::Ranks => p.ranks.max(1),
            Axis::Nodes { ranks_per_node } => p.ranks.max(1) / (*ranks_per_node).max(1),
        }
    }

    /// A count in words: "8 workers" (from the point's workers), "4
    /// ranks", "2 nodes", "1 MiB".
    pub fn word(&self, count: u32, p: &CurvePoint) -> String {
        match self {
            Axis::Workers => workers_word(p.threads),
            _ => self.count_text(count),
        }
    }

    /// A count in words without its point: "4 ranks", "1 node", "1 MiB";
    /// for workers the bare number.
    pub fn count_text(&self, c: u32) -> String {
        let plural = |n: u32, one: &str| {
            if n == 1 {
                format!("1 {one}")
            } else {
                format!("{n} {one}s")
            }
        };
        match self {
            Axis::Workers => c.to_string(),
            Axis::Ranks => plural(c, "rank"),
            Axis::Nodes { .. } => plural(c, "node"),
            Axis::Xfer { unit } => spec::format_size(u64::from(c).saturating_mul(*unit)),
        }
    }

    /// The smallest count measured, in the optimum's words.
    fn fewest(&self) -> &'static str {
        match self {
            Axis::Workers => "the fewest workers measured",
            Axis::Ranks => "the fewest ranks measured",
            Axis::Nodes { .. } => "the fewest nodes measured",
            Axis::Xfer { .. } => "the smallest transfer size measured",
        }
    }

    /// Whether the analysis' verdicts over workers settle this axis'
    /// lines (they do where more of the axis means more workers).
    fn worker_verdicts(&self) -> bool {
        !matches!(self, Axis::Xfer { .. })
    }
}

/// One line of a search: its name, unit and verdict, and its points by
/// count (built from a curve with [`Line::of_curve`], or by the caller
/// for an axis the points do not carry, such as the transfer size).
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The line's name (`op` or `op (series)`).
    pub name: String,
    /// The unit of its figures.
    pub unit: String,
    /// The analysis' verdict over its points (only read on an axis where
    /// more means more workers).
    pub kind: VerdictKind,
    /// Its points with their counts.
    pub points: Vec<(u32, CurvePoint)>,
}

impl Line {
    /// A curve's line, its points keyed by `axis`.
    pub fn of_curve(c: &CurveAnalysis, axis: Axis) -> Line {
        Line {
            name: c.name(),
            unit: c.unit.clone(),
            kind: c.verdict.kind,
            points: c.points.iter().map(|p| (axis.key(p), p.clone())).collect(),
        }
    }
}

/// The count a point stands for in the search: threads per rank under
/// MPI, else its workers.
pub fn swept_count(p: &CurvePoint) -> u32 {
    if p.ranks > 1 && p.threads_per_rank > 0 {
        p.threads_per_rank
    } else {
        p.threads
    }
}

/// Whether a point has a figure the search may read: a good repetition
/// and a finite rate.
fn good(p: &CurvePoint) -> bool {
    p.reps > 0 && p.value.is_finite() && p.value >= 0.0
}

/// Whether a point is quiet enough to show a flat line: an interval over
/// two or more repetitions no wider than [`PLATEAU_NOISE`].
fn quiet(p: &CurvePoint) -> bool {
    p.reps >= 2 && p.interval().half_width_rel(p.value) <= PLATEAU_NOISE
}

/// The verdicts that settle a line whatever more workers would show.
fn certain(k: VerdictKind) -> bool {
    matches!(
        k,
        VerdictKind::Serialised | VerdictKind::CpuBound | VerdictKind::Falls
    )
}

/// A line's points by count (the last one given wins).
fn by_count(l: &Line) -> Vec<(u32, &CurvePoint)> {
    let mut v: Vec<(u32, &CurvePoint)> = l.points.iter().map(|(c, p)| (*c, p)).collect();
    v.sort_by_key(|x| x.0);
    v.dedup_by_key(|x| x.0);
    v
}

/// Walks the doubling ladder over the measured points: `Err(next)` while
/// a ladder count is still to be measured, else why it stopped.
fn doubling(
    rule: &ThreadsAuto,
    pts: &[(u32, &CurvePoint)],
    kind: VerdictKind,
    allowed: &dyn Fn(u32) -> bool,
) -> Result<Stop, u32> {
    let get = |c: u32| pts.iter().find(|x| x.0 == c).map(|x| x.1);
    let mut best: Option<(u32, &CurvePoint)> = None;
    let mut stalls = 0;
    let stop = |kind_: StopKind, at: u32, best: Option<(u32, &CurvePoint)>, rising: bool| Stop {
        kind: kind_,
        at,
        best: best.map(|b| b.0),
        verdict: kind,
        rising,
    };
    let ladder: Vec<u32> = rule.ladder().into_iter().filter(|&c| allowed(c)).collect();
    for &c in &ladder {
        let p = get(c).ok_or(c)?;
        if !good(p) {
            stalls += 1;
            if stalls >= SEARCH_PATIENCE {
                return Ok(stop(StopKind::Failed, c, best, false));
            }
            continue;
        }
        let Some((_, b)) = best else {
            best = Some((c, p));
            continue;
        };
        if clearly_above(p, b) {
            best = Some((c, p));
            stalls = 0;
            continue;
        }
        stalls += 1;
        if certain(kind) {
            return Ok(stop(StopKind::Verdict, c, best, false));
        }
        if quiet(p) && quiet(b) {
            return Ok(stop(StopKind::NoRise, c, best, false));
        }
        if stalls >= SEARCH_PATIENCE {
            return Ok(stop(StopKind::Noise, c, best, false));
        }
    }
    let last = ladder.last().copied().unwrap_or(rule.start);
    Ok(stop(StopKind::Max, last, best, stalls == 0))
}

/// The bracket of the optimum: the smallest good count within noise of
/// the peak, the largest good count below it, and the peak.
struct Bracket<'a> {
    hi: (u32, &'a CurvePoint),
    lo: Option<(u32, &'a CurvePoint)>,
    peak: (u32, &'a CurvePoint),
}

fn bracket<'a>(pts: &[(u32, &'a CurvePoint)]) -> Option<Bracket<'a>> {
    let good: Vec<(u32, &CurvePoint)> = pts.iter().copied().filter(|x| good(x.1)).collect();
    let peak = *good
        .iter()
        .rev()
        .max_by(|a, b| a.1.value.total_cmp(&b.1.value))?;
    let i = good
        .iter()
        .position(|x| !clearly_above(peak.1, x.1))
        .expect("the peak is within noise of itself");
    Some(Bracket {
        hi: good[i],
        lo: i.checked_sub(1).map(|j| good[j]),
        peak,
    })
}

/// [`refine_next_in`] over every count.
#[cfg(test)]
fn refine_next(lo: u32, hi: u32, measured: &[u32]) -> Option<u32> {
    refine_next_in(lo, hi, measured, &|_| true)
}

/// The unmeasured count between `lo` and `hi` (both excluded) nearest
/// their geometric mean, among the counts `allowed` says may be measured,
/// ties to the smaller; `None` when none is left. It walks at most the
/// counts between the two.
fn refine_next_in(
    lo: u32,
    hi: u32,
    measured: &[u32],
    allowed: &dyn Fn(u32) -> bool,
) -> Option<u32> {
    if hi <= lo.saturating_add(1) {
        return None;
    }
    let g = ((lo as f64) * (hi as f64)).sqrt();
    let mid = (g.round() as u32).clamp(lo + 1, hi - 1);
    let free = |c: u32| c > lo && c < hi && !measured.contains(&c) && allowed(c);
    // Outward from the middle, to the first free count each way.
    let dist = |c: u32| ((c as f64) / g).ln().abs();
    let mut best: Option<u32> = None;
    for dir in [-1i64, 1] {
        let mut c = mid as i64;
        while c > lo as i64 && c < hi as i64 {
            if free(c as u32) {
                let c = c as u32;
                if best.is_none_or(|b| dist(c) < dist(b) || (dist(c) == dist(b) && c < b)) {
                    best = Some(c);
                }
                break;
            }
            c += dir;
        }
    }
    best
}

/// Reads one line's search from its points and verdict.
pub fn line_search(rule: &ThreadsAuto, c: &CurveAnalysis) -> LineSearch {
    line_search_in(rule, c, &|_| true)
}

/// [`line_search`] over the counts `allowed` says may be measured (a
/// `--scale total` sweep tries only the counts its total splits evenly
/// across).
pub fn line_search_in(
    rule: &ThreadsAuto,
    c: &CurveAnalysis,
    allowed: &dyn Fn(u32) -> bool,
) -> LineSearch {
    line_search_on(
        rule,
        &Line::of_curve(c, Axis::Workers),
        Axis::Workers,
        allowed,
    )
}

/// The search of one line over `axis`, among the counts `allowed` says
/// may be measured. On an axis where more does not mean more workers
/// (the transfer size) the analysis' worker verdicts settle nothing: only
/// the curve itself stops the doubling.
pub fn line_search_on(
    rule: &ThreadsAuto,
    c: &Line,
    axis: Axis,
    allowed: &dyn Fn(u32) -> bool,
) -> LineSearch {
    let pts = by_count(c);
    let kind = if axis.worker_verdicts() {
        c.kind
    } else {
        VerdictKind::Uncertain
    };
    let mut out = LineSearch {
        line: c.name.clone(),
        stage: Stage::Doubling,
        next: None,
        stop: None,
        optimum: None,
    };
    let br = bracket(&pts);
    let stop = match doubling(rule, &pts, kind, allowed) {
        Err(next) => {
            out.next = Some(next);
            out.optimum = br.map(|b| optimum(&b, &c.unit, false, axis));
            return out;
        }
        Ok(s) => s,
    };
    // Still rising at the largest count: nothing beyond it to find. A
    // latency-bound line (each request as long as with the fewest
    // workers) rises in step with its workers, so no count below it is
    // within noise of it: it is not refined.
    let still_rising = stop.kind == StopKind::Max && stop.rising;
    let linear = still_rising && kind == VerdictKind::LatencyBound;
    out.stop = Some(stop);
    out.stage = Stage::Done;
    let Some(b) = br else {
        return out;
    };
    let still_rising = still_rising && b.hi.0 == stop.at;
    if !linear {
        if let Some(lo) = b.lo {
            let measured: Vec<u32> = pts.iter().map(|x| x.0).collect();
            out.next = refine_next_in(lo.0, b.hi.0, &measured, allowed);
            if out.next.is_some() {
                out.stage = Stage::Refining;
            }
        }
    }
    out.optimum = Some(optimum(&b, &c.unit, still_rising, axis));
    out
}

/// The search over every line of a sweep.
pub fn search(rule: &ThreadsAuto, curves: &[CurveAnalysis]) -> Search {
    search_in(rule, curves, &|_| true)
}

/// [`search`] over the counts `allowed` says may be measured.
pub fn search_in(
    rule: &ThreadsAuto,
    curves: &[CurveAnalysis],
    allowed: &dyn Fn(u32) -> bool,
) -> Search {
    let lines: Vec<Line> = curves
        .iter()
        .map(|c| Line::of_curve(c, Axis::Workers))
        .collect();
    search_lines(rule, &lines, Axis::Workers, allowed)
}

/// The search over `lines` on `axis`, among the counts `allowed` says
/// may be measured: the smallest count any line asks for.
pub fn search_lines(
    rule: &ThreadsAuto,
    lines: &[Line],
    axis: Axis,
    allowed: &dyn Fn(u32) -> bool,
) -> Search {
    let found: Vec<LineSearch> = lines
        .iter()
        .map(|l| line_search_on(rule, l, axis, allowed))
        .collect();
    let next = if lines.is_empty() {
        // Nothing measured yet: the first count.
        rule.ladder().into_iter().find(|&c| allowed(c))
    } else {
        found.iter().filter_map(|l| l.next).min()
    };
    Search { next, lines: found }
}

/// "±3%", or that there is no noise estimate.
fn noise_of(ps: &[&CurvePoint]) -> String {
    if ps.iter().all(|p| p.reps >= 2) {
        let n = ps
            .iter()
            .map(|p| p.interval().half_width_rel(p.value))
            .fold(0.0, f64::max);
        format!("±{:.0}%", n * 100.0)
    } else {
        "no noise estimate: one repetition".into()
    }
}

/// The optimum sentence: the count, how it stands to the peak, and to the
/// count below it.
fn optimum(b: &Bracket<'_>, unit: &str, at_least: bool, axis: Axis) -> Optimum {
    let (lc, _) = b.lo.unwrap_or(b.hi);
    let word = |c: u32, p: &CurvePoint| axis.word(c, p);
    let (hc, h) = b.hi;
    let (pc, p) = b.peak;
    let judged = |ps: &[&CurvePoint]| ps.iter().all(|p| p.reps >= 2);
    let mut text = if at_least {
        format!(
            "At least {}: still rising at the largest count the search may try, {} {unit} ({})",
            word(hc, h),
            num(h.value),
            noise_of(&[h])
        )
    } else if hc == pc {
        format!(
            "{}: the peak, {} {unit} ({})",
            word(hc, h),
            num(h.value),
            noise_of(&[h])
        )
    } else {
        let gap = (1.0 - h.value / p.value).max(0.0) * 100.0;
        format!(
            "{}: within {gap:.0}% of the peak at {} ({} {unit}; {})",
            word(hc, h),
            word(pc, p),
            num(p.value),
            noise_of(&[h, p])
        )
    };
    match b.lo {
        Some((_, l)) if judged(&[h, l]) && clearly_above(h, l) => text.push_str(&format!(
            ", clearly above {} at {}",
            num(l.value),
            word(lc, l)
        )),
        Some((_, l)) if judged(&[p, l]) => text.push_str(&format!(
            "; {} at {} is clearly below the peak",
            num(l.value),
            word(lc, l)
        )),
        Some((_, l)) => text.push_str(&format!(
            "; {} at {} is {:.0}% below the peak, a gap not judged against noise",
            num(l.value),
            word(lc, l),
            (1.0 - l.value / p.value.max(f64::MIN_POSITIVE)) * 100.0
        )),
        None if !at_least => text.push_str(&format!(", {}", axis.fewest())),
        None => {}
    }
    text.push('.');
    Optimum {
        count: hc,
        workers: h.threads,
        at_least,
        text,
    }
}

/// Why the doubling stopped, in words.
pub fn stop_text(s: &Stop) -> String {
    stop_text_in(s, "")
}

/// [`stop_text`] with the counts' unit after the count it stopped at
/// (`" threads per rank"` under MPI, where the search counts threads per
/// rank and the optimum is stated in workers).
pub fn stop_text_in(s: &Stop, unit: &str) -> String {
    let best = s.best.map(|b| b.to_string());
    stop_words(s, format!("{}{unit}", s.at), best)
}

/// [`stop_text`] on `axis` (`ranks`: the most ranks of its points, for
/// threads per rank under MPI).
pub fn stop_text_on(s: &Stop, axis: Axis, ranks: u32) -> String {
    match axis {
        Axis::Workers if ranks > 1 => stop_text_in(s, " threads per rank"),
        Axis::Workers => stop_text_in(s, ""),
        _ => stop_words(s, axis.count_text(s.at), s.best.map(|b| axis.count_text(b))),
    }
}

/// The stop's sentence with its counts in words: `at` where it stopped,
/// `best` the count it was compared with.
fn stop_words(s: &Stop, at: String, best: Option<String>) -> String {
    let vs = |b: &Option<String>| {
        b.as_ref()
            .map(|b| format!(" than at {b}"))
            .unwrap_or_default()
    };
    match s.kind {
        StopKind::NoRise => format!(
            "the doubling stopped at {}: not clearly higher{}, within noise no wider than ±{:.0}%",
            at,
            vs(&best),
            PLATEAU_NOISE * 100.0
        ),
        StopKind::Verdict => format!(
            "the doubling stopped at {}: not clearly higher{}, and the line's verdict, {}, is settled by the points measured",
            at,
            vs(&best),
            verdict_word(s.verdict)
        ),
        StopKind::Noise => format!(
            "the doubling stopped at {}: {SEARCH_PATIENCE} doublings in a row not clearly higher{}, too noisy to say more; more repetitions (--reps auto) would narrow it",
            at,
            vs(&best)
        ),
        StopKind::Failed => format!(
            "the doubling stopped at {}: every repetition failed at {SEARCH_PATIENCE} counts in a row",
            at
        ),
        StopKind::Max if s.rising => format!(
            "the doubling reached the largest count the search may try, {}, still rising beyond noise",
            at
        ),
        StopKind::Max => format!(
            "the doubling reached the largest count the search may try, {}",
            at
        ),
    }
}

/// The verdict's name as the analysis says it.
fn verdict_word(k: VerdictKind) -> &'static str {
    match k {
        VerdictKind::AllFailed => "every repetition failed",
        VerdictKind::SinglePoint => "one worker count",
        VerdictKind::CpuBound => "CPU-bound",
        VerdictKind::Serialised => "serialised",
        VerdictKind::LatencyBound => "latency-bound",
        VerdictKind::Rising => "still rising",
        VerdictKind::Saturated => "saturated",
        VerdictKind::Falls => "falls",
        VerdictKind::Uncertain => "cannot tell within noise",
    }
}

/// The time a ladder of counts would take, estimated from the measured
/// counts' wall times `times` (count, seconds): each count not measured
/// takes the time of the nearest measured count (on a log scale), times
/// the ratio of the counts when each worker keeps its own share
/// (`per_worker`, the work grows with the workers). `None` without a
/// measured time.
pub fn ladder_estimate(
    times: &[(u32, f64)],
    ladder: impl IntoIterator<Item = u32>,
    per_worker: bool,
) -> Option<f64> {
    let t: Vec<(u32, f64)> = times
        .iter()
        .copied()
        .filter(|x| x.0 > 0 && x.1.is_finite() && x.1 >= 0.0)
        .collect();
    if t.is_empty() {
        return None;
    }
    let mut sum = 0.0;
    for c in ladder {
        let (c0, s0) = *t
            .iter()
            .min_by(|a, b| {
                let d = |x: u32| ((x as f64) / (c.max(1) as f64)).ln().abs();
                d(a.0).total_cmp(&d(b.0)).then(a.0.cmp(&b.0))
            })
            .expect("not empty");
        sum += if per_worker {
            s0 * c as f64 / c0 as f64
        } else {
            s0
        };
    }
    Some(sum)
}

/// The largest ladder the fine-ladder estimate walks count by count.
pub const FINE_LADDER_MAX: u32 = 1 << 16;

/// What a finished (or interrupted) search says: its path, each line's
/// optimum and stop, and its time against the ladders it replaced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchReport {
    /// The rule.
    pub rule: ThreadsAuto,
    /// What the search counted (workers when the record does not say).
    #[serde(default, skip_serializing_if = "is_workers")]
    pub axis: Axis,
    /// The counts in the order they were measured.
    pub path: Vec<u32>,
    /// The wall time of each count measured (count, seconds): every point
    /// at that count with all its repetitions, set-up and clean-up
    /// included.
    pub times: Vec<(u32, f64)>,
    /// Each line's search.
    pub lines: Vec<LineSearch>,
    /// Whether nothing is left to measure.
    pub done: bool,
    /// Wall time of the points measured, seconds.
    pub spent_s: f64,
    /// Estimated time of every count from the start to the largest.
    pub fine_ladder_s: Option<f64>,
    /// Estimated time of the doubling ladder to the largest.
    pub doubling_ladder_s: Option<f64>,
    /// The sentences.
    pub sentences: Vec<String>,
    /// Counts in the search's range it may not try: their point is
    /// refused as asked (a `--scale total` total that does not split
    /// evenly across the count, data that is not a multiple of the size).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<u32>,
}

impl SearchReport {
    /// Notes the counts the search may not try (`left_out`) and says so,
    /// with `why`, after the path.
    pub fn leave_out(&mut self, left_out: Vec<u32>, why: &str) {
        if left_out.is_empty() {
            return;
        }
        const SHOWN: usize = 12;
        let mut list: Vec<String> = left_out
            .iter()
            .take(SHOWN)
            .map(|&c| self.axis.count_text(c))
            .collect();
        if left_out.len() > SHOWN {
            list.push(format!("… ({} in all)", left_out.len()));
        }
        let at = self
            .sentences
            .iter()
            .position(|t| t.starts_with("Search path"))
            .map_or(self.sentences.len(), |i| i + 1);
        self.sentences.insert(
            at,
            format!(
                "Left out of the search, not measured: {} ({why}).",
                list.join(", ")
            ),
        );
        self.left_out = left_out;
    }
}

fn is_workers(a: &Axis) -> bool {
    *a == Axis::Workers
}

/// The report of a search: `path` the counts measured in order, `times`
/// the wall time of each (count, seconds), `per_worker` whether the work
/// grows with the workers.
pub fn search_report(
    rule: &ThreadsAuto,
    curves: &[CurveAnalysis],
    path: &[u32],
    times: &[(u32, f64)],
    per_worker: bool,
) -> SearchReport {
    search_report_in(rule, curves, path, times, per_worker, &|_| true)
}

/// [`search_report`] over the counts `allowed` says may be measured.
pub fn search_report_in(
    rule: &ThreadsAuto,
    curves: &[CurveAnalysis],
    path: &[u32],
    times: &[(u32, f64)],
    per_worker: bool,
    allowed: &dyn Fn(u32) -> bool,
) -> SearchReport {
    let lines: Vec<Line> = curves
        .iter()
        .map(|c| Line::of_curve(c, Axis::Workers))
        .collect();
    let counts = Measured { path, times };
    search_report_on(rule, &lines, Axis::Workers, counts, per_worker, allowed)
}

/// The counts a search measured: in order, and each one's wall time
/// (count, seconds).
#[derive(Debug, Clone, Copy)]
pub struct Measured<'a> {
    /// The counts in the order they were measured.
    pub path: &'a [u32],
    /// Each one's wall time.
    pub times: &'a [(u32, f64)],
}

/// [`search_report_in`] over `lines` on `axis`.
pub fn search_report_on(
    rule: &ThreadsAuto,
    lines: &[Line],
    axis: Axis,
    measured: Measured<'_>,
    per_worker: bool,
    allowed: &dyn Fn(u32) -> bool,
) -> SearchReport {
    let Measured { path, times } = measured;
    let s = search_lines(rule, lines, axis, allowed);
    // Under MPI the search counts threads per rank (see [`swept_count`]):
    // its path and stops say so, the optima speak of workers.
    let ranks = lines
        .iter()
        .flat_map(|c| c.points.iter())
        .map(|p| p.1.ranks)
        .max()
        .unwrap_or(1);
    let unit = match axis {
        Axis::Workers if ranks > 1 => " threads per rank",
        Axis::Workers | Axis::Xfer { .. } => "",
        Axis::Ranks => " ranks",
        Axis::Nodes { .. } => " nodes",
    };
    let spent: f64 = times.iter().map(|x| x.1).filter(|t| t.is_finite()).sum();
    // The ladders over the counts the sweep may try; over transfer sizes
    // only the doubling one (every aligned size is no ladder anyone runs).
    let fine_counts: Vec<u32> = if rule.max <= FINE_LADDER_MAX && axis.worker_verdicts() {
        (rule.start..=rule.max).filter(|&c| allowed(c)).collect()
    } else {
        Vec::new()
    };
    let fine = (!fine_counts.is_empty())
        .then(|| ladder_estimate(times, fine_counts.iter().copied(), per_worker))
        .flatten();
    let dbl_counts: Vec<u32> = rule.ladder().into_iter().filter(|&c| allowed(c)).collect();
    let doubling = ladder_estimate(times, dbl_counts.iter().copied(), per_worker);
    let mut sentences = Vec::new();
    for l in &s.lines {
        let mut t = format!("{}: ", l.line);
        match &l.optimum {
            Some(o) => t.push_str(&o.text),
            None => t.push_str("no optimum: no count has a good repetition."),
        }
        if let Some(st) = &l.stop {
            t.push_str(&format!(" The search: {}.", stop_text_on(st, axis, ranks)));
        }
        sentences.push(t);
    }
    sentences.push(path_sentence(rule, path, s.next.is_none(), ranks, axis));
    if let (Axis::Xfer { .. }, Some(d)) = (axis, doubling) {
        sentences.push(format!(
            "It measured {} sizes in {}; the doubling ladder from {} to {} ({} sizes) would take about {} (estimated from the measured sizes' times).",
            path.len(),
            dur(spent),
            axis.count_text(rule.start),
            axis.count_text(rule.max),
            dbl_counts.len(),
            dur(d)
        ));
    }
    if let Some(f) = fine {
        let dbl = doubling
            .map(|d| {
                format!(
                    ", the doubling ladder ({} counts) about {}",
                    dbl_counts.len(),
                    dur(d)
                )
            })
            .unwrap_or_default();
        sentences.push(format!(
            "It measured {} counts in {}; every count from {} to {}{unit}{} would take about {}{dbl} (estimated from the measured counts' times).",
            path.len(),
            dur(spent),
            rule.start,
            rule.max,
            if fine_counts.len() as u64 == u64::from(rule.max - rule.start) + 1 {
                String::new()
            } else {
                format!(" the sweep may try ({})", fine_counts.len())
            },
            dur(f)
        ));
    }
    SearchReport {
        rule: *rule,
        axis,
        path: path.to_vec(),
        times: times.to_vec(),
        done: s.next.is_none(),
        lines: s.lines,
        spent_s: spent,
        fine_ladder_s: fine,
        doubling_ladder_s: doubling,
        sentences,
        left_out: Vec::new(),
    }
}

/// "Search path: 1, 2, 4, 8, 16 (doubling), then 6, 7 (refining)."; over
/// `ranks` > 1 MPI ranks the counts are threads per rank and it says so.
fn path_sentence(rule: &ThreadsAuto, path: &[u32], done: bool, ranks: u32, axis: Axis) -> String {
    let ladder = rule.ladder();
    let split = path
        .iter()
        .position(|c| !ladder.contains(c))
        .unwrap_or(path.len());
    let list = |v: &[u32]| {
        v.iter()
            .map(|&c| match axis {
                Axis::Xfer { .. } => axis.count_text(c),
                _ => c.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if path.is_empty() {
        return "Search path: nothing measured yet.".into();
    }
    let per_rank = match axis {
        Axis::Workers if ranks > 1 => format!(" (threads per rank, on {ranks} ranks)"),
        Axis::Workers => String::new(),
        Axis::Ranks => " (ranks)".into(),
        Axis::Nodes { ranks_per_node } => {
            format!(
                " (nodes, {} on each)",
                Axis::Ranks.count_text(ranks_per_node)
            )
        }
        Axis::Xfer { .. } => " (transfer size)".into(),
    };
    let mut t = format!("Search path{per_rank}: {} (doubling)", list(&path[..split]));
    if split < path.len() {
        t.push_str(&format!(", then {} (refining)", list(&path[split..])));
    }
    if !done {
        t.push_str("; not finished, --resume continues it");
    }
    t.push('.');
    t
}

#[cfg(test)]
mod tests;
