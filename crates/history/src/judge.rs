//! Is this run slower than before? A run's headline figures against a
//! baseline of earlier runs of the same workload on the same target,
//! judged by the rule `ioscale compare` uses
//! ([`analysis::compare::judge`]): a difference counts only when it is
//! larger than [`analysis::verdict::MIN_EFFECT`] and the two sides'
//! intervals do not overlap.
//!
//! A baseline of several runs (`median`) is their median, and its spread
//! is the range their figures (and their own intervals) cover; a baseline
//! of one run is that run with its 95 % interval over its repetitions.
//! Where neither side measured any noise (one repetition against one
//! run), nothing is judged: a regression is never declared on a gap
//! alone. A figure regresses when it is judged slower and falls by more
//! than the threshold.

use stats::Interval;

use analysis::compare::judge as judge_rule;
use analysis::verdict::num;

use crate::db::History;
use crate::entry::{Figure, Status};
use crate::error::Error;
use crate::query::RunRow;

/// Earlier runs a baseline of the median takes by default.
pub const DEFAULT_WINDOW: usize = 5;

/// The fall (a share) beyond which a figure judged slower regresses.
pub const DEFAULT_THRESHOLD: f64 = 0.10;

/// Which earlier runs a run is judged against. All but [`Baseline::Run`]
/// take the good runs (status `ok`) of the same workload on the same
/// target that came before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Baseline {
    /// The median of the last N of them, with their spread.
    Median(usize),
    /// The last of them.
    Last,
    /// For each figure, the one with the best value.
    Best,
    /// The run of this id.
    Run(i64),
}

impl Baseline {
    /// `median` (of the last [`DEFAULT_WINDOW`]), `median:N`, `last`,
    /// `best`, or a run id.
    pub fn parse(s: &str) -> Result<Baseline, String> {
        let bad = || format!("{s:?}: use median, median:N, last, best or a run id");
        match s {
            "median" => Ok(Baseline::Median(DEFAULT_WINDOW)),
            "last" => Ok(Baseline::Last),
            "best" => Ok(Baseline::Best),
            _ => match s.strip_prefix("median:") {
                Some(n) => match n.parse::<usize>() {
                    Ok(n) if n > 0 => Ok(Baseline::Median(n)),
                    _ => Err(bad()),
                },
                None => s.parse::<i64>().map(Baseline::Run).map_err(|_| bad()),
            },
        }
    }
}

impl std::fmt::Display for Baseline {
    /// The word [`Baseline::parse`] reads back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Baseline::Median(n) if *n == DEFAULT_WINDOW => f.write_str("median"),
            Baseline::Median(n) => write!(f, "median:{n}"),
            Baseline::Last => f.write_str("last"),
            Baseline::Best => f.write_str("best"),
            Baseline::Run(id) => write!(f, "{id}"),
        }
    }
}

/// One side of a comparison: a figure, its interval, and the runs it
/// comes from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Side {
    /// The central value.
    pub value: f64,
    /// The interval's lower end (a run's 95 % interval, or the spread of
    /// several runs); `None` when no noise was measured.
    pub lo: Option<f64>,
    /// The upper end.
    pub hi: Option<f64>,
    /// The runs.
    pub runs: Vec<i64>,
}

impl Side {
    fn interval(&self) -> Option<Interval> {
        match (self.lo, self.hi) {
            (Some(lo), Some(hi)) => Some(Interval {
                lo,
                hi,
                level: 0.95,
                n: self.runs.len().max(2),
            }),
            _ => None,
        }
    }
}

/// The judgement of one figure.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Verdict {
    /// Operation.
    pub op: String,
    /// Metric (`bw_mib_s`, `iops`, `score`).
    pub metric: String,
    /// Unit.
    pub unit: String,
    /// The baseline's side.
    pub baseline: Side,
    /// The judged run's side.
    pub run: Side,
    /// The run's value ÷ the baseline's.
    pub ratio: f64,
    /// `faster`, `slower` or `no clear difference` (compare's words).
    pub word: String,
    /// Whether either side measured noise; without it nothing is judged.
    pub noise: bool,
    /// Judged slower and fallen by more than the threshold.
    pub regressed: bool,
}

/// A run against its baseline.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Judgement {
    /// The judged run.
    pub run: i64,
    /// The baseline in words ("the median of the last 5 runs of this
    /// workload on /mnt/fs (runs 3–7)").
    pub against: String,
    /// The baseline's runs.
    pub baseline_runs: Vec<i64>,
    /// The share a figure must fall by to regress.
    pub threshold: f64,
    /// Per headline figure.
    pub verdicts: Vec<Verdict>,
    /// What changed on the host or the target since the baseline's newest
    /// run.
    pub changes: Vec<String>,
    /// Why something could not be judged.
    pub warnings: Vec<String>,
}

impl Judgement {
    /// Whether any figure regressed.
    pub fn regressed(&self) -> bool {
        self.verdicts.iter().any(|v| v.regressed)
    }
}

impl Verdict {
    /// The verdict in one sentence: "write 812 MiB/s: 50% slower than the
    /// median of …, outside their spread".
    pub fn sentence(&self, against: &str) -> String {
        let pct = ((self.ratio - 1.0).abs() * 100.0).round();
        let direction = if self.ratio < 1.0 { "lower" } else { "higher" };
        let spread = match (self.baseline.lo, self.baseline.hi) {
            (Some(lo), Some(hi)) if self.baseline.runs.len() > 1 => {
                format!(", spread {}–{}", num(lo), num(hi))
            }
            (Some(lo), Some(hi)) => format!(", 95% interval {}–{}", num(lo), num(hi)),
            _ => String::new(),
        };
        let head = format!("{} {} {}: {pct}%", self.op, num(self.run.value), self.unit);
        let base = format!(
            "{against} ({} {}{spread})",
            num(self.baseline.value),
            self.unit
        );
        if !self.noise {
            return format!(
                "{head} {direction} than {base}; not judged: one repetition on each side measures no noise (run with --reps 3, or compare with --baseline median)"
            );
        }
        match self.word.as_str() {
            "slower" | "faster" => format!("{head} {} than {base}, beyond the noise", self.word),
            _ => format!("{head} {direction} than {base}, within the noise: no clear difference"),
        }
    }
}

/// The median of `v` (not empty).
fn median(v: &[f64]) -> f64 {
    stats::summary::median(v).unwrap_or(f64::NAN)
}

/// The baseline side of figure (`op`, `metric`) over `rows`: one run as
/// it is, several as their median and spread.
fn side_of(rows: &[&RunRow], op: &str, metric: &str) -> Option<Side> {
    let got: Vec<(i64, &Figure)> = rows
        .iter()
        .filter_map(|r| r.figure(op, metric).map(|f| (r.id, f)))
        .collect();
    match got.as_slice() {
        [] => None,
        [(id, f)] => Some(Side {
            value: f.value,
            lo: f.lo,
            hi: f.hi,
            runs: vec![*id],
        }),
        many => {
            let values: Vec<f64> = many.iter().map(|(_, f)| f.value).collect();
            let lo = many.iter().map(|(_, f)| f.lo.unwrap_or(f.value));
            let hi = many.iter().map(|(_, f)| f.hi.unwrap_or(f.value));
            Some(Side {
                value: median(&values),
                lo: Some(lo.fold(f64::INFINITY, f64::min)),
                hi: Some(hi.fold(f64::NEG_INFINITY, f64::max)),
                runs: many.iter().map(|(id, _)| *id).collect(),
            })
        }
    }
}

/// The runs a baseline of `b` takes for `run`, and the words for them.
fn baseline_runs(h: &History, run: &RunRow, b: Baseline) -> Result<(Vec<RunRow>, String), Error> {
    let on = format!("this workload on {}", run.target);
    Ok(match b {
        Baseline::Median(n) => {
            let rows = h.earlier(run, Some(n))?;
            let what = format!(
                "the median of the last {} run(s) of {on} ({})",
                rows.len(),
                ids(&rows)
            );
            (rows, what)
        }
        Baseline::Last => {
            let rows = h.earlier(run, Some(1))?;
            let what = format!("the last run of {on} ({})", ids(&rows));
            (rows, what)
        }
        Baseline::Best => (
            h.earlier(run, None)?,
            format!("the best earlier run of {on}"),
        ),
        Baseline::Run(id) => {
            let row = h.run(id)?;
            (vec![row], format!("run {id}"))
        }
    })
}

/// `runs 3, 5–7` style list of ids (newest first as given).
fn ids(rows: &[RunRow]) -> String {
    let mut v: Vec<i64> = rows.iter().map(|r| r.id).collect();
    v.sort_unstable();
    let words: Vec<String> = v.iter().map(|i| i.to_string()).collect();
    match words.len() {
        0 => "none".into(),
        1 => format!("run {}", words[0]),
        _ => format!("runs {}", words.join(", ")),
    }
}

impl History {
    /// Judges run `id` against baseline `b`: each headline figure of the
    /// run, by compare's rule; a figure regresses when judged slower and
    /// lower by more than `threshold` (a share, 0.10 = 10 %).
    pub fn judge(&self, id: i64, b: Baseline, threshold: f64) -> Result<Judgement, Error> {
        let run = self.run(id)?;
        let (rows, against) = baseline_runs(self, &run, b)?;
        let mut j = Judgement {
            run: id,
            against,
            baseline_runs: rows.iter().map(|r| r.id).collect(),
            threshold,
            verdicts: Vec::new(),
            changes: Vec::new(),
            warnings: Vec::new(),
        };
        if run.status != Status::Ok {
            j.warnings.push(format!(
                "run {id} ended with {}: its figures are not judged",
                run.status.as_str()
            ));
            return Ok(j);
        }
        if rows.is_empty() {
            j.warnings.push(format!(
                "no earlier good run of this workload on {}: nothing to compare with",
                run.target
            ));
            return Ok(j);
        }
        if let Baseline::Run(b) = b {
            if rows[0].workload != run.workload {
                j.warnings.push(format!(
                    "run {b} ran another workload ({}); the figures compare different experiments",
                    rows[0].workload_text
                ));
            }
        }
        let newest = &rows[0];
        j.changes = run.host.changes_from(&newest.host);
        j.changes
            .extend(run.target_print.changes_from(&newest.target_print));
        let all: Vec<&RunRow> = rows.iter().collect();
        for f in run.headlines().filter(|f| f.higher_is_better) {
            let pool: Vec<&RunRow> = match b {
                Baseline::Best => best_of(&all, &f.op, &f.metric).into_iter().collect(),
                _ => all.clone(),
            };
            let Some(base) = side_of(&pool, &f.op, &f.metric) else {
                j.warnings
                    .push(format!("{}: the baseline has no {} figure", f.op, f.metric));
                continue;
            };
            j.verdicts.push(verdict(id, f, base, threshold));
        }
        Ok(j)
    }
}

/// The row of `rows` with the best value of (`op`, `metric`).
fn best_of<'a>(rows: &[&'a RunRow], op: &str, metric: &str) -> Option<&'a RunRow> {
    rows.iter()
        .copied()
        .filter(|r| r.figure(op, metric).is_some())
        .max_by(|a, b| {
            let v = |r: &RunRow| r.figure(op, metric).map_or(f64::NEG_INFINITY, |f| f.value);
            v(a).total_cmp(&v(b))
        })
}

/// Figure `f` of run `id` against `base`.
fn verdict(id: i64, f: &Figure, base: Side, threshold: f64) -> Verdict {
    let run = Side {
        value: f.value,
        lo: f.lo,
        hi: f.hi,
        runs: vec![id],
    };
    let (ia, ib) = (base.interval(), run.interval());
    let word = judge_rule(base.value, ia, run.value, ib).to_string();
    let ratio = if base.value > 0.0 {
        run.value / base.value
    } else {
        f64::NAN
    };
    let noise = ia.is_some() || ib.is_some();
    Verdict {
        op: f.op.clone(),
        metric: f.metric.clone(),
        unit: f.unit.clone(),
        regressed: noise && word == "slower" && ratio < 1.0 - threshold,
        baseline: base,
        run,
        ratio,
        word,
        noise,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baselines_parse_from_their_words() {
        assert_eq!(Baseline::parse("median"), Ok(Baseline::Median(5)));
        assert_eq!(Baseline::parse("median:3"), Ok(Baseline::Median(3)));
        assert_eq!(Baseline::parse("last"), Ok(Baseline::Last));
        assert_eq!(Baseline::parse("best"), Ok(Baseline::Best));
        assert_eq!(Baseline::parse("42"), Ok(Baseline::Run(42)));
        for b in ["median", "median:3", "last", "best", "42"] {
            assert_eq!(Baseline::parse(b).unwrap().to_string(), b);
        }
        for bad in ["median:0", "median:x", "newest", "", "4.5"] {
            assert!(Baseline::parse(bad).is_err(), "{bad}");
        }
    }

    fn fig(value: f64, ci: Option<(f64, f64)>) -> Figure {
        Figure {
            op: "write".into(),
            metric: "bw_mib_s".into(),
            unit: "MiB/s".into(),
            value,
            lo: ci.map(|c| c.0),
            hi: ci.map(|c| c.1),
            reps: if ci.is_some() { 3 } else { 1 },
            higher_is_better: true,
            headline: true,
        }
    }

    fn side(value: f64, lo: Option<f64>, hi: Option<f64>, runs: usize) -> Side {
        Side {
            value,
            lo,
            hi,
            runs: (1..=runs as i64).collect(),
        }
    }

    /// Half the throughput outside the baseline's spread regresses; the
    /// same fall with no noise measured on either side is not judged; a
    /// run inside the spread is no clear difference.
    #[test]
    fn a_fall_regresses_only_beyond_noise_and_threshold() {
        let base = side(1000.0, Some(950.0), Some(1040.0), 5);
        let v = verdict(9, &fig(500.0, None), base.clone(), 0.10);
        assert_eq!(v.word, "slower");
        assert!(v.regressed && v.noise);
        let s = v.sentence("the median of the last 5 run(s)");
        assert!(
            s.contains("50% slower") && s.contains("spread 950–1040"),
            "{s}"
        );

        let lone = side(1000.0, None, None, 1);
        let v = verdict(9, &fig(500.0, None), lone, 0.10);
        assert!(!v.noise && !v.regressed, "{v:?}");
        assert!(v.sentence("run 1").contains("not judged"));

        let v = verdict(9, &fig(960.0, Some((930.0, 990.0))), base.clone(), 0.10);
        assert_eq!(v.word, "no clear difference");
        assert!(!v.regressed);
        // Beyond the noise but within the threshold: judged slower, and
        // no regression.
        let v = verdict(9, &fig(920.0, Some((915.0, 925.0))), base, 0.10);
        assert_eq!(v.word, "slower");
        assert!(!v.regressed, "8% is under the 10% threshold");
    }
}
