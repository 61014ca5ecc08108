//! Two or more saved records side by side, with their ratios.
//!
//! Rows are matched by (series, operation, thread count), so two sweeps of
//! the same job on different file systems line up point by point, and two
//! single runs line up by operation. Each record after the first gets a
//! ratio column against the first, and a geometric mean of those ratios
//! (the right average for ratios) sums it up.

use serde::{Deserialize, Serialize};

use stats::Interval;

use crate::findings::unit_of;
use crate::model::SweepRecord;
use crate::render::layout_table;
use crate::verdict::{num, Units, MIN_EFFECT};

/// One matched row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    /// Series label (may be empty).
    pub series: String,
    /// Operation.
    pub op: String,
    /// Workers.
    pub threads: u32,
    /// `MB/s` or `ops/s`.
    pub unit: String,
    /// The central figure of each record, `None` where it has no such row.
    pub values: Vec<Option<f64>>,
    /// Each value ÷ the first record's (the first entry is always 1 when
    /// present).
    pub ratios: Vec<Option<f64>>,
    /// The 95 % bootstrap interval of each value (same unit).
    #[serde(default)]
    pub intervals: Vec<Option<Interval>>,
    /// Per record after the first: `faster`, `slower` or `no clear
    /// difference` against the first, judged with the intervals.
    #[serde(default)]
    pub verdicts: Vec<Option<String>>,
}

/// `faster`, `slower` or `no clear difference`: `b` against `a`, by more
/// than [`MIN_EFFECT`] and with intervals that do not overlap.
pub fn judge(a: f64, ia: Option<Interval>, b: f64, ib: Option<Interval>) -> &'static str {
    let ia = ia.unwrap_or(Interval {
        lo: a,
        hi: a,
        level: 0.95,
        n: 1,
    });
    let ib = ib.unwrap_or(Interval {
        lo: b,
        hi: b,
        level: 0.95,
        n: 1,
    });
    if b > a * (1.0 + MIN_EFFECT) && ib.lo > ia.hi {
        "faster"
    } else if a > b * (1.0 + MIN_EFFECT) && ia.lo > ib.hi {
        "slower"
    } else {
        "no clear difference"
    }
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The records' names, in order.
    pub names: Vec<String>,
    /// Matched rows.
    pub rows: Vec<CompareRow>,
    /// Per record, the geometric mean of its ratios to the first over the
    /// rows both have; `None` for the first and when nothing matched.
    pub geomean_ratio: Vec<Option<f64>>,
    /// Records that ran a different workload from the first (buffered
    /// against O_DIRECT, another sync mode, other sizes or repetitions):
    /// their ratios compare different experiments.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// What a record's workload was, as the facts a comparison must share:
/// the I/O mode (O_DIRECT or buffered, and the sync mode) and the amount
/// (bytes per worker × repetitions).
fn workload(rec: &SweepRecord) -> Vec<String> {
    let Some(p) = rec.points.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(w) = p.result.spec.as_run() {
        out.push(format!(
            "{}, sync {}",
            if w.direct { "O_DIRECT" } else { "buffered" },
            format!("{:?}", w.sync).to_lowercase()
        ));
    }
    let reps = rec.config.reps.max(1);
    out.push(format!(
        "{} per worker × {reps} rep{}",
        spec::format_size(p.bytes_per_thread),
        if reps == 1 { "" } else { "s" }
    ));
    out
}

/// What kind of workload a record ran: data (`run`) or metadata (`meta`).
fn kind_of(rec: &SweepRecord) -> &'static str {
    match rec.points.first().map(|p| p.result.spec.as_run().is_some()) {
        Some(false) => "a metadata workload (meta)",
        _ => "a data workload (run)",
    }
}

/// A warning per record whose workload differs from the first's.
fn workload_warnings(records: &[(String, SweepRecord)]) -> Vec<String> {
    let Some((name0, first)) = records.first() else {
        return Vec::new();
    };
    let w0 = workload(first);
    records[1..]
        .iter()
        .filter_map(|(name, rec)| {
            // A data workload against a metadata one: their facts are not
            // the same list, so say that instead of pairing unlike facts
            // ("0 B per worker × 1 rep vs buffered, sync none").
            let (kind, kind0) = (kind_of(rec), kind_of(first));
            if kind != kind0 {
                return Some(format!(
                    "{name} and {name0} ran different kinds of workload: {kind} vs {kind0}; their ratios compare different experiments"
                ));
            }
            let w = workload(rec);
            let diff: Vec<String> = w
                .iter()
                .zip(&w0)
                .filter(|(x, y)| x != y)
                .map(|(x, y)| format!("{x} vs {y}"))
                .collect();
            (!diff.is_empty()).then(|| {
                format!(
                    "{name} and {name0} ran different workloads: {}; their ratios compare different experiments",
                    diff.join("; ")
                )
            })
        })
        .collect()
}

/// Lines up the records, in MB/s (the unit the binary's compare printed
/// before `--units`; see [`compare_with`]).
pub fn compare(records: &[(String, SweepRecord)]) -> Comparison {
    compare_with(records, Units::Si)
}

/// Lines up the records, data rates in `units`.
pub fn compare_with(records: &[(String, SweepRecord)], units: Units) -> Comparison {
    let mut rows: Vec<CompareRow> = Vec::new();
    for (i, (_, rec)) in records.iter().enumerate() {
        for p in &rec.points {
            for o in &p.ops {
                if o.reps == 0 {
                    continue;
                }
                let data = o.rate_is_data();
                let unit = unit_of(o, units);
                let scale = |x: f64| if data { units.from_mib_s(x) } else { x };
                let v = scale(if data {
                    o.center_bw_mib_s()
                } else {
                    o.center_iops()
                });
                let iv = o.rate_ci().filter(|c| c.n > 1).map(|c| Interval {
                    lo: scale(c.lo),
                    hi: scale(c.hi),
                    ..c
                });
                let workers = p.workers();
                let row = match rows.iter_mut().position(|r| {
                    r.series == p.series && r.op == o.op && r.threads == workers && r.unit == unit
                }) {
                    Some(k) => &mut rows[k],
                    None => {
                        rows.push(CompareRow {
                            series: p.series.clone(),
                            op: o.op.clone(),
                            threads: workers,
                            unit: unit.into(),
                            values: vec![None; records.len()],
                            ratios: vec![None; records.len()],
                            intervals: vec![None; records.len()],
                            verdicts: vec![None; records.len()],
                        });
                        rows.last_mut().expect("just pushed")
                    }
                };
                row.values[i] = Some(v);
                row.intervals[i] = iv;
            }
        }
    }
    for r in &mut rows {
        if let Some(base) = r.values[0].filter(|b| *b > 0.0) {
            for (ratio, v) in r.ratios.iter_mut().zip(&r.values) {
                *ratio = v.map(|v| v / base);
            }
            for i in 1..r.values.len() {
                if let Some(v) = r.values[i] {
                    r.verdicts[i] =
                        Some(judge(base, r.intervals[0], v, r.intervals[i]).to_string());
                }
            }
        }
    }
    let geomean_ratio = (0..records.len())
        .map(|i| {
            if i == 0 {
                return None;
            }
            let rs: Vec<f64> = rows.iter().filter_map(|r| r.ratios[i]).collect();
            stats::summary::geometric_mean(&rs)
        })
        .collect();
    Comparison {
        names: records.iter().map(|(n, _)| n.clone()).collect(),
        rows,
        geomean_ratio,
        warnings: workload_warnings(records),
    }
}

/// The comparison's table: its head and one row per matched row, each
/// record's figure with its 95 % interval, then per record after the
/// first its ratio and verdict. The text and the HTML show the same.
pub fn table(c: &Comparison) -> (Vec<String>, Vec<Vec<String>>) {
    let with_series = c.rows.iter().any(|r| !r.series.is_empty());
    let mut head: Vec<String> = Vec::new();
    if with_series {
        head.push("Series".into());
    }
    head.extend(["Operation".into(), "Threads".into(), "Unit".into()]);
    for (i, n) in c.names.iter().enumerate() {
        head.push(n.clone());
        if i > 0 {
            head.push(format!("×{}", i + 1));
            head.push(format!("verdict {}", i + 1));
        }
    }
    let rows = c
        .rows
        .iter()
        .map(|r| row_cells(c, r, with_series))
        .collect();
    (head, rows)
}

/// The cells of matched row `r`.
fn row_cells(c: &Comparison, r: &CompareRow, with_series: bool) -> Vec<String> {
    let mut cells = Vec::new();
    if with_series {
        cells.push(if r.series.is_empty() {
            "-".into()
        } else {
            r.series.clone()
        });
    }
    cells.extend([r.op.clone(), r.threads.to_string(), r.unit.clone()]);
    for i in 0..c.names.len() {
        // The figure with its 95 % interval: the spread a verdict
        // is judged against.
        cells.push(match (r.values[i], r.intervals.get(i).copied().flatten()) {
            (Some(v), Some(iv)) => format!("{v:.2} ({}–{})", num(iv.lo), num(iv.hi)),
            (Some(v), None) => format!("{v:.2}"),
            (None, _) => "-".into(),
        });
        if i > 0 {
            cells.push(
                r.ratios[i]
                    .map(|v| format!("{v:.2}"))
                    .unwrap_or_else(|| "-".into()),
            );
            // A row whose figure rests on one repetition was judged
            // by its 5% gap alone: say so in the cell, and never
            // "no clear difference" for a gap no noise was measured
            // against (the record keeps the verdict as judged).
            let bare = r.intervals[0].is_none() || r.intervals[i].is_none();
            cells.push(match r.verdicts[i].as_deref() {
                None => "-".into(),
                Some("no clear difference") if bare => "not judged (1 rep)".into(),
                Some(v) if bare => format!("{v} (1 rep, gap only)"),
                Some(v) => v.to_string(),
            });
        }
    }
    cells
}

/// What the table's figures are, said once above it.
pub fn table_note(c: &Comparison) -> String {
    format!(
        "Compared with {} (×N = record N ÷ record 1; figures are trimmed means or means over the good repetitions, with their 95% bootstrap interval in parentheses; a verdict needs a gap above 5% and non-overlapping intervals)",
        c.names[0]
    )
}

/// The comparison as a text table and a summary line per record.
pub fn render_text(c: &Comparison) -> String {
    let (head, rows) = table(c);
    let head_ref: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut out: Vec<String> = c.warnings.iter().map(|w| format!("warning: {w}")).collect();
    out.push(table_note(c));
    out.extend(layout_table(&head_ref, &rows));
    out.push(String::new());
    out.extend(summary(c));
    out.join("\n") + "\n"
}

/// One line per record after the first: its geometric mean ratio to the
/// first and how its rows were judged.
pub fn summary(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    for i in 1..c.names.len() {
        let n = c.rows.iter().filter(|r| r.ratios[i].is_some()).count();
        let vs: Vec<&str> = c
            .rows
            .iter()
            .filter_map(|r| r.verdicts[i].as_deref())
            .collect();
        let count = |w: &str| vs.iter().filter(|v| **v == w).count();
        let (f, sl, same) = (
            count("faster"),
            count("slower"),
            count("no clear difference"),
        );
        // Rows where either figure rests on one repetition: no interval,
        // so their verdict is the 5% gap alone, not a judgement of noise.
        let bare = c
            .rows
            .iter()
            .filter(|r| r.verdicts[i].is_some())
            .filter(|r| r.intervals[0].is_none() || r.intervals[i].is_none())
            .count();
        let word = if bare > 0 {
            let all = if same == vs.len() {
                " — not judged different at any row".to_string()
            } else if f == vs.len() {
                " — faster at every row".to_string()
            } else if sl == vs.len() {
                " — slower at every row".to_string()
            } else {
                format!(" — faster in {f}, slower in {sl}, not judged different in {same} row(s)")
            };
            format!(
                "{all} (one repetition in {bare} of them: no noise estimate there, only the 5% gap; run with --reps 3 or more)"
            )
        } else if same == vs.len() {
            " — no clear difference (every row within noise)".to_string()
        } else if f == vs.len() {
            " — faster at every row, beyond noise".to_string()
        } else if sl == vs.len() {
            " — slower at every row, beyond noise".to_string()
        } else {
            format!(" — faster in {f}, slower in {sl}, no clear difference in {same} row(s)")
        };
        out.push(match c.geomean_ratio[i] {
            Some(g) => format!(
                "{} ÷ {}: geometric mean {}× over {n} matched row(s){word}",
                c.names[i],
                c.names[0],
                num(g),
            ),
            None => format!(
                "{} ÷ {}: no matching rows (different operations or thread counts)",
                c.names[i], c.names[0]
            ),
        });
    }
    out
}
