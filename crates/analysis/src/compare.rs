//! Two or more saved records side by side, with their ratios.
//!
//! Rows are matched by (series, operation, thread count), so two sweeps of
//! the same job on different file systems line up point by point, and two
//! single runs line up by operation. Each record after the first gets a
//! ratio column against the first, and a geometric mean of those ratios
//! (the right average for ratios) sums it up.

use serde::{Deserialize, Serialize};

use crate::findings::num;
use crate::model::SweepRecord;
use crate::render::layout_table;

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
}

/// Lines up the records.
pub fn compare(records: &[(String, SweepRecord)]) -> Comparison {
    let mut rows: Vec<CompareRow> = Vec::new();
    for (i, (_, rec)) in records.iter().enumerate() {
        for p in &rec.points {
            for o in &p.ops {
                let data = o.moves_data();
                let unit = if data { "MB/s" } else { "ops/s" };
                let v = if data {
                    o.center_bw_mb_s()
                } else {
                    o.center_iops()
                };
                let row = match rows.iter_mut().position(|r| {
                    r.series == p.series && r.op == o.op && r.threads == p.threads && r.unit == unit
                }) {
                    Some(k) => &mut rows[k],
                    None => {
                        rows.push(CompareRow {
                            series: p.series.clone(),
                            op: o.op.clone(),
                            threads: p.threads,
                            unit: unit.into(),
                            values: vec![None; records.len()],
                            ratios: vec![None; records.len()],
                        });
                        rows.last_mut().expect("just pushed")
                    }
                };
                row.values[i] = Some(v);
            }
        }
    }
    for r in &mut rows {
        if let Some(base) = r.values[0].filter(|b| *b > 0.0) {
            for (ratio, v) in r.ratios.iter_mut().zip(&r.values) {
                *ratio = v.map(|v| v / base);
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
    }
}

/// The comparison as a text table and a summary line per record.
pub fn render_text(c: &Comparison) -> String {
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
        }
    }
    let rows: Vec<Vec<String>> = c
        .rows
        .iter()
        .map(|r| {
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
                cells.push(
                    r.values[i]
                        .map(|v| format!("{v:.2}"))
                        .unwrap_or_else(|| "-".into()),
                );
                if i > 0 {
                    cells.push(
                        r.ratios[i]
                            .map(|v| format!("{v:.2}"))
                            .unwrap_or_else(|| "-".into()),
                    );
                }
            }
            cells
        })
        .collect();
    let head_ref: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut out = vec![format!(
        "Compared with {} (×N = record N ÷ record 1; figures are trimmed means or means over repetitions)",
        c.names[0]
    )];
    out.extend(layout_table(&head_ref, &rows));
    out.push(String::new());
    for i in 1..c.names.len() {
        let n = c.rows.iter().filter(|r| r.ratios[i].is_some()).count();
        out.push(match c.geomean_ratio[i] {
            Some(g) => format!(
                "{} ÷ {}: geometric mean {}× over {n} matched row(s){}",
                c.names[i],
                c.names[0],
                num(g),
                if g > 1.0 {
                    " — faster"
                } else if g < 1.0 {
                    " — slower"
                } else {
                    ""
                }
            ),
            None => format!(
                "{} ÷ {}: no matching rows (different operations or thread counts)",
                c.names[i], c.names[0]
            ),
        });
    }
    out.join("\n") + "\n"
}
