//! Charts and the HTML report of ioscale sweeps.
//!
//! The seeds draw two graphs by hand for every experiment: throughput
//! against threads and duration against threads. [`charts_for`] builds them
//! from a [`SweepRecord`] (one line per series, error bars from the
//! repetitions), [`svg`] draws them, [`png`] rasterises them, and [`html`]
//! puts them with the tables and the analysis into one self-contained page.
//! The heavy rasteriser lives in this crate so the rest of the workspace
//! does not build it.

pub mod html;
pub mod png;
pub mod svg;

use analysis::{OpStats, SweepRecord};

pub use html::render_html;
pub use png::{PngError, Rasteriser};
pub use svg::{Chart, Point, Series};

/// A chart and the file stem it is saved under (`throughput-write`).
#[derive(Debug, Clone)]
pub struct NamedChart {
    /// File stem, safe as a file name.
    pub name: String,
    /// The chart.
    pub chart: Chart,
}

/// The throughput and duration charts of each operation of a sweep.
pub fn charts_for(rec: &SweepRecord) -> Vec<NamedChart> {
    let mut ops: Vec<(String, bool)> = Vec::new();
    for p in &rec.points {
        for o in &p.ops {
            let key = (o.op.clone(), o.moves_data());
            if !ops.contains(&key) {
                ops.push(key);
            }
        }
    }
    let mut out = Vec::new();
    for (op, data) in ops {
        let mut thr: Vec<Series> = Vec::new();
        let mut dur: Vec<Series> = Vec::new();
        for p in &rec.points {
            let Some(o) = p.ops.iter().find(|o| o.op == op && o.moves_data() == data) else {
                continue;
            };
            let label = if p.series.is_empty() {
                op.clone()
            } else {
                p.series.clone()
            };
            if o.failed > 0 {
                for set in [&mut thr, &mut dur] {
                    let at = (p.workers() as f64, o.failed as u32);
                    match set.iter_mut().find(|s| s.label == label) {
                        Some(s) => s.failed.push(at),
                        None => set.push(Series {
                            label: label.clone(),
                            points: Vec::new(),
                            failed: vec![at],
                        }),
                    }
                }
            }
            if o.reps == 0 {
                continue;
            }
            let (y, lo, hi) = throughput(o, data, rec.analysis.units);
            push(
                &mut thr,
                &label,
                Point {
                    x: p.workers() as f64,
                    y,
                    lo,
                    hi,
                },
            );
            push(
                &mut dur,
                &label,
                Point {
                    x: p.workers() as f64,
                    y: o.center_elapsed_s(),
                    lo: o.elapsed_s.min,
                    hi: o.elapsed_s.max,
                },
            );
        }
        let files = rec
            .points
            .iter()
            .flat_map(|p| &p.ops)
            .any(|o| o.op == op && o.counts_files);
        let unit = if data {
            format!("Throughput ({})", rec.analysis.units.data())
        } else if files {
            "Files per second".to_string()
        } else {
            "Operations per second".to_string()
        };
        let stem = safe(&op);
        out.push(NamedChart {
            name: format!("throughput-{stem}"),
            chart: Chart {
                title: format!(
                    "{op}: {} vs threads",
                    if data { "throughput" } else { "rate" }
                ),
                x_label: "Workers (log2 scale)".into(),
                y_label: unit,
                series: thr,
            },
        });
        out.push(NamedChart {
            name: format!("duration-{stem}"),
            chart: Chart {
                title: format!("{op}: duration vs threads"),
                x_label: "Workers (log2 scale)".into(),
                y_label: "Duration (s)".into(),
                series: dur,
            },
        });
    }
    out
}

fn throughput(o: &OpStats, data: bool, units: analysis::Units) -> (f64, f64, f64) {
    if data {
        (
            units.from_mib_s(o.center_bw_mib_s()),
            units.from_mib_s(o.bw_mib_s.min),
            units.from_mib_s(o.bw_mib_s.max),
        )
    } else {
        (o.center_iops(), o.iops.min, o.iops.max)
    }
}

fn push(series: &mut Vec<Series>, label: &str, p: Point) {
    match series.iter_mut().find(|s| s.label == label) {
        Some(s) => s.points.push(p),
        None => series.push(Series {
            label: label.to_string(),
            points: vec![p],
            failed: Vec::new(),
        }),
    }
}

fn safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
