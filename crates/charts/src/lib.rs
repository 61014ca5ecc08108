//! Charts and the HTML report of ioscale sweeps.
//!
//! The seeds draw two graphs by hand for every experiment: throughput
//! against threads and duration against threads. [`charts_for`] builds them
//! from a [`SweepRecord`] (one line per series, error bars from the
//! repetitions), [`svg`] draws them, [`png`] rasterises them, and [`html`]
//! puts them with the tables and the analysis into one self-contained page;
//! [`trend`] draws one figure of one workload over the runs of the results
//! history.
//! The heavy rasteriser lives in this crate so the rest of the workspace
//! does not build it.
#![deny(missing_docs)]

pub mod compare;
pub mod html;
pub mod overtime;
pub mod png;
pub mod svg;
pub mod trend;

use analysis::model::phase_failed;
use analysis::{OpStats, SweepRecord};

pub use compare::render_compare_html;
pub use html::render_html;
pub use png::{PngError, Rasteriser};
pub use svg::{Bar, Bars, Chart, Point, Series};

/// A chart and the file stem it is saved under (`throughput-write`).
#[derive(Debug, Clone)]
pub struct NamedChart {
    /// File stem, safe as a file name.
    pub name: String,
    /// The chart.
    pub chart: Chart,
}

/// The colour of each line of a sweep (its series label, in the order the
/// points first name it): one line has one colour on every chart of the
/// report (two targets' latency lines had the throughput chart's colours
/// of other lines).
fn line_colour(rec: &SweepRecord, series: &str) -> usize {
    let mut seen: Vec<&str> = Vec::new();
    for p in &rec.points {
        if !seen.contains(&p.series.as_str()) {
            seen.push(&p.series);
        }
    }
    seen.iter().position(|s| *s == series).unwrap_or(0)
}

/// The throughput, duration and latency lines of operation `op` (data
/// or not): one series per sweep series, a point per sweep point, and
/// the failed repetitions marked on the first two.
fn op_series(rec: &SweepRecord, op: &str, data: bool) -> [Vec<Series>; 3] {
    let mut thr: Vec<Series> = Vec::new();
    let mut dur: Vec<Series> = Vec::new();
    let mut lat: Vec<Series> = Vec::new();
    for p in &rec.points {
        let Some(o) = p
            .ops
            .iter()
            .find(|o| o.op == op && rec.op_moves_data(&o.op) == data)
        else {
            continue;
        };
        let label = if p.series.is_empty() {
            op.to_string()
        } else {
            p.series.clone()
        };
        let colour = line_colour(rec, &p.series);
        if o.failed > 0 {
            for set in [&mut thr, &mut dur] {
                let at = (p.workers() as f64, o.failed as u32);
                match set.iter_mut().find(|s| s.label == label) {
                    Some(s) => s.failed.push(at),
                    None => set.push(Series {
                        label: label.clone(),
                        points: Vec::new(),
                        failed: vec![at],
                        colour,
                        dashed: false,
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
            (&label, colour, false),
            Point {
                x: p.workers() as f64,
                y,
                lo,
                hi,
            },
        );
        push(
            &mut dur,
            (&label, colour, false),
            Point {
                x: p.workers() as f64,
                y: o.center_elapsed_s(),
                lo: o.elapsed_s.min,
                hi: o.elapsed_s.max,
            },
        );
        push_latency(&mut lat, p, op, (&label, colour), o);
    }
    [thr, dur, lat]
}

/// The measured p50 and p99 of `op` at point `p` (mean over the good
/// repetitions), in µs, bars from the lowest to the highest repetition's:
/// the line's colour, the p99 dashed.
fn push_latency(
    lat: &mut Vec<Series>,
    p: &analysis::SweepPoint,
    op: &str,
    (label, colour): (&str, usize),
    o: &OpStats,
) {
    // The measured p50 and p99 (mean over the good repetitions),
    // bars from the lowest to the highest repetition's.
    let good: Vec<&report::PhaseRecord> = p
        .result
        .phases
        .iter()
        .filter(|ph| ph.op == op && !ph.interrupted && !phase_failed(ph))
        .collect();
    for (name, y, f) in [
        (
            "p50",
            o.lat_p50_us,
            (|ph: &report::PhaseRecord| ph.lat_us.p50) as fn(&report::PhaseRecord) -> f64,
        ),
        ("p99", o.lat_p99_us, |ph: &report::PhaseRecord| {
            ph.lat_us.p99
        }),
    ] {
        // No good repetition: no latency was measured, so none is drawn.
        let Some(y) = y else {
            continue;
        };
        let v: Vec<f64> = good.iter().map(|ph| f(ph)).collect();
        let lo = v.iter().copied().fold(y, f64::min);
        let hi = v.iter().copied().fold(y, f64::max);
        push(
            lat,
            (&format!("{label} {name}"), colour, name == "p99"),
            Point {
                x: p.workers() as f64,
                y,
                lo,
                hi,
            },
        );
    }
}

/// The latency axis of lines in µs, from their values: its unit (that of
/// their median: µs, ms or s), the factor from µs to it, and whether it is
/// a log axis (values over more than [`svg::LOG_SPAN`], a p50 of 30 µs
/// under a p99 of 12 ms, which on a linear axis lies flat on 0).
pub fn latency_axis(lines: &[Series]) -> (&'static str, f64, bool) {
    let mut ys: Vec<f64> = lines
        .iter()
        .flat_map(|s| &s.points)
        .map(|p| p.y)
        .filter(|y| y.is_finite() && *y > 0.0)
        .collect();
    ys.sort_by(f64::total_cmp);
    let median = ys.get(ys.len() / 2).copied().unwrap_or(0.0);
    let (unit, scale) = if median >= 1e6 {
        ("s", 1e-6)
    } else if median >= 1e3 {
        ("ms", 1e-3)
    } else {
        ("µs", 1.0)
    };
    let lo = lines
        .iter()
        .flat_map(|s| &s.points)
        .map(|p| p.lo.min(p.y))
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let hi = lines
        .iter()
        .flat_map(|s| &s.points)
        .map(|p| p.hi.max(p.y))
        .fold(0.0f64, f64::max);
    (unit, scale, svg::needs_log(lo, hi))
}

/// The three charts of operation `op` from its lines.
fn op_charts(rec: &SweepRecord, op: &str, data: bool, lines: [Vec<Series>; 3]) -> [NamedChart; 3] {
    let [thr, dur, mut lat] = lines;
    let (lat_unit, lat_scale, lat_log) = latency_axis(&lat);
    for p in lat.iter_mut().flat_map(|s| s.points.iter_mut()) {
        (p.y, p.lo, p.hi) = (p.y * lat_scale, p.lo * lat_scale, p.hi * lat_scale);
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
    let stem = safe(op);
    let sub = subtitle(rec);
    let overlays = overlays(rec, op, &thr);
    [
        NamedChart {
            name: format!("throughput-{stem}"),
            chart: Chart {
                title: format!(
                    "{op}: {} vs workers",
                    if data { "throughput" } else { "rate" }
                ),
                subtitle: sub.clone(),
                overlays,
                x_label: "Workers (log2 scale)".into(),
                y_label: unit,
                series: thr,
                y_log: false,
            },
        },
        NamedChart {
            name: format!("duration-{stem}"),
            chart: Chart {
                title: format!("{op}: duration vs workers"),
                subtitle: sub.clone(),
                overlays: Vec::new(),
                x_label: "Workers (log2 scale)".into(),
                y_label: "Duration (s)".into(),
                series: dur,
                y_log: false,
            },
        },
        NamedChart {
            name: format!("latency-{stem}"),
            chart: Chart {
                title: format!("{op}: request latency (p50, p99) vs workers"),
                subtitle: sub,
                overlays: Vec::new(),
                x_label: "Workers (log2 scale)".into(),
                y_label: format!(
                    "Latency ({lat_unit}{})",
                    if lat_log { ", log scale" } else { "" }
                ),
                series: lat,
                y_log: lat_log,
            },
        },
    ]
}

/// The throughput, duration and latency (p50 and p99) charts of each
/// operation of a sweep.
pub fn charts_for(rec: &SweepRecord) -> Vec<NamedChart> {
    let mut ops: Vec<(String, bool)> = Vec::new();
    for p in &rec.points {
        for o in &p.ops {
            // A point whose every repetition failed moved nothing: it
            // is drawn on its operation's chart, not on one of its own.
            let key = (o.op.clone(), rec.op_moves_data(&o.op));
            if !ops.contains(&key) {
                ops.push(key);
            }
        }
    }
    let mut out = Vec::new();
    for (op, data) in ops {
        let lines = op_series(rec, &op, data);
        out.extend(op_charts(rec, &op, data, lines));
    }
    out
}

/// What was measured, for the subtitle: target and file system, transfer
/// size (when one), O_DIRECT or buffered, and the sync mode.
fn subtitle(rec: &SweepRecord) -> String {
    let Some(p) = rec.points.first() else {
        return String::new();
    };
    let h = &p.result.host;
    let mut parts = vec![if rec.config.targets.len() > 1 {
        format!("{} targets", rec.config.targets.len())
    } else {
        format!("{} ({})", p.target, h.fs_type)
    }];
    if let Some(w) = p.result.spec.as_run() {
        if rec.config.xfer.len() <= 1 {
            parts.push(format!("xfer {}", spec::format_size(w.xfer)));
        }
        parts.push(if w.direct { "O_DIRECT" } else { "buffered" }.into());
        parts.push(format!("sync {:?}", w.sync).to_lowercase());
    }
    parts.push(format!("{} rep(s) per point", rec.config.reps.max(1)));
    parts.join(" · ")
}

/// Dashed reference curves of a throughput chart: for each line, the ideal
/// linear scaling from its fewest-workers point, and the USL fit where the
/// analysis quotes it.
fn overlays(rec: &SweepRecord, op: &str, series: &[Series]) -> Vec<svg::Overlay> {
    let mut out = Vec::new();
    for (i, s) in series.iter().enumerate() {
        let mut pts = s.points.clone();
        pts.sort_by(|a, b| a.x.total_cmp(&b.x));
        let (Some(first), Some(last)) = (pts.first(), pts.last()) else {
            continue;
        };
        if pts.len() < 2 || first.x <= 0.0 || first.y <= 0.0 {
            continue;
        }
        // Samples every tenth of a doubling, so the curves look smooth on
        // the log2 axis.
        let xs: Vec<f64> = {
            let (a, b) = (first.x.log2(), last.x.log2());
            let n = ((b - a) * 10.0).ceil().max(1.0) as usize;
            (0..=n)
                .map(|k| 2f64.powf(a + (b - a) * k as f64 / n as f64))
                .collect()
        };
        out.push(svg::Overlay {
            label: "ideal linear".into(),
            series: i,
            dash: "6 4".into(),
            points: xs.iter().map(|&x| (x, first.y * x / first.x)).collect(),
        });
        let curve = rec.analysis.curves.iter().find(|c| {
            c.op == op && (c.series == s.label || (c.series.is_empty() && s.label == op))
        });
        if let Some(f) = curve.and_then(|c| c.usl.filter(|_| c.usl_shown)) {
            out.push(svg::Overlay {
                label: "USL fit".into(),
                series: i,
                dash: "2 3".into(),
                points: xs.iter().map(|&x| (x, f.predict(x))).collect(),
            });
        }
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

/// Adds `p` to the series `label` (of `colour`, `dashed`), made if new.
fn push(series: &mut Vec<Series>, (label, colour, dashed): (&str, usize, bool), p: Point) {
    match series.iter_mut().find(|s| s.label == label) {
        Some(s) => s.points.push(p),
        None => series.push(Series {
            label: label.to_string(),
            points: vec![p],
            failed: Vec::new(),
            colour,
            dashed,
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

/// A bar chart and the file stem it is saved under (`per-rank-write`).
#[derive(Debug, Clone)]
pub struct NamedBars {
    /// File stem, safe as a file name.
    pub name: String,
    /// The chart.
    pub bars: svg::Bars,
}

/// A bar at the mean of `vals`, its line from the lowest to the highest.
fn bar(label: String, vals: Vec<f64>) -> svg::Bar {
    let n = vals.len().max(1) as f64;
    let value = vals.iter().sum::<f64>() / n;
    svg::Bar {
        label,
        value,
        lo: vals.iter().copied().fold(value, f64::min),
        hi: vals.iter().copied().fold(value, f64::max),
    }
}

/// One bar per rank (of `ranks` × `tpr` threads): its workers' work over
/// the span from its first worker's start to its last one's finish, in
/// each good repetition. The figures come from the record's per-rank rows
/// (`rank_phases`, kept whether or not every worker's row was); a record
/// written before those rows existed has the per-worker rows instead.
fn rank_bars(
    good: &[(usize, &report::PhaseRecord)],
    c: &report::ClusterInfo,
    (ranks, tpr): (u32, u32),
    data: bool,
    units: analysis::Units,
) -> Vec<svg::Bar> {
    let from_ranks = good
        .iter()
        .any(|(i, _)| c.rank_phases.iter().any(|r| r.phase == *i));
    (0..ranks)
        .map(|r| {
            let spans: Vec<(u64, u64, f64)> = if from_ranks {
                c.rank_phases
                    .iter()
                    .filter(|x| x.rank == r && good.iter().any(|(i, _)| *i == x.phase))
                    .map(|x| (x.bytes, x.ops, x.end_s - x.start_s))
                    .collect()
            } else {
                good.iter()
                    .map(|(_, ph)| worker_span(ph, r * tpr..(r + 1) * tpr))
                    .collect()
            };
            let vals: Vec<f64> = spans
                .into_iter()
                .filter(|(_, _, span)| *span > 0.0)
                .map(|(bytes, ops, span)| {
                    if data {
                        units.from_mib_s(bytes as f64 / MIB / span)
                    } else {
                        ops as f64 / span
                    }
                })
                .collect();
            let host = c.hosts.get(r as usize).cloned().unwrap_or_default();
            bar(format!("rank {r} ({host})"), vals)
        })
        .collect()
}

/// The bytes, requests and span (first start to last finish, seconds) of
/// the workers `ids` in the per-worker rows of `ph`.
fn worker_span(ph: &report::PhaseRecord, ids: std::ops::Range<u32>) -> (u64, u64, f64) {
    let ws: Vec<&report::WorkerRecord> = ph
        .workers
        .iter()
        .filter(|w| ids.contains(&w.worker))
        .collect();
    let t0 = ws.iter().map(|w| w.start_s).fold(f64::INFINITY, f64::min);
    let t1 = ws.iter().map(|w| w.end_s).fold(0.0, f64::max);
    (
        ws.iter().map(|w| w.bytes).sum(),
        ws.iter().map(|w| w.ops).sum(),
        t1 - t0,
    )
}

/// One bar per node: the record's per-node totals of the good
/// repetitions.
fn node_bars(
    good: &[(usize, &report::PhaseRecord)],
    c: &report::ClusterInfo,
    data: bool,
    units: analysis::Units,
) -> Vec<svg::Bar> {
    let mut hosts: Vec<&str> = Vec::new();
    for h in &c.hosts {
        if !hosts.contains(&h.as_str()) {
            hosts.push(h);
        }
    }
    hosts
        .iter()
        .map(|h| {
            let vals: Vec<f64> = c
                .node_phases
                .iter()
                .filter(|np| np.host == *h && good.iter().any(|(i, _)| *i == np.phase))
                .map(|np| {
                    if data {
                        units.from_mib_s(np.bw_mib_s)
                    } else if np.elapsed_s > 0.0 {
                        np.ops as f64 / np.elapsed_s
                    } else {
                        0.0
                    }
                })
                .collect();
            bar(h.to_string(), vals)
        })
        .collect()
}

/// Under MPI, for each operation at its most workers: the throughput (or
/// rate) of each rank, and of each node when there are several, as bars
/// (mean over the good repetitions, the range of them as a line). A rank's
/// figure is its workers' work over the span from its first worker's start
/// to its last one's finish; a node's is the record's per-node total.
/// Empty for a sweep on one rank.
pub fn bars_for(rec: &SweepRecord) -> Vec<NamedBars> {
    let units = rec.analysis.units;
    let mut ops: Vec<String> = Vec::new();
    for p in &rec.points {
        for o in &p.ops {
            if !ops.contains(&o.op) {
                ops.push(o.op.clone());
            }
        }
    }
    let mut out = Vec::new();
    for op in ops {
        // The point with the most workers that ran on several ranks.
        let Some((p, o)) = rec
            .points
            .iter()
            .filter(|p| p.topology().0 > 1)
            .filter_map(|p| Some((p, p.ops.iter().find(|o| o.op == op && o.reps > 0)?)))
            .max_by_key(|(p, _)| p.workers())
        else {
            continue;
        };
        let Some(c) = p.result.host.cluster.as_ref() else {
            continue;
        };
        let data = o.moves_data();
        let unit = if data {
            format!("Throughput ({})", units.data())
        } else if o.counts_files {
            "Files per second".to_string()
        } else {
            "Operations per second".to_string()
        };
        let good: Vec<(usize, &report::PhaseRecord)> = p
            .result
            .phases
            .iter()
            .enumerate()
            .filter(|(_, ph)| ph.op == op && !ph.interrupted && !phase_failed(ph))
            .collect();
        let (ranks, tpr, workers) = p.topology();
        let rank_bars = rank_bars(&good, c, (ranks, tpr), data, units);
        let sub = format!(
            "{} ranks × {tpr} threads = {workers} workers · mean over {} good repetition(s)",
            ranks,
            good.len()
        );
        let stem = safe(&op);
        out.push(NamedBars {
            name: format!("per-rank-{stem}"),
            bars: svg::Bars {
                title: format!("{op}: per rank at {workers} workers"),
                subtitle: sub.clone(),
                y_label: unit.clone(),
                x_label: "Rank (host)".into(),
                bars: rank_bars,
            },
        });
        if c.nodes > 1 {
            let node_bars = node_bars(&good, c, data, units);
            out.push(NamedBars {
                name: format!("per-node-{stem}"),
                bars: svg::Bars {
                    title: format!("{op}: per node at {workers} workers"),
                    subtitle: sub,
                    y_label: unit,
                    x_label: "Node".into(),
                    bars: node_bars,
                },
            });
        }
    }
    out
}

const MIB: f64 = 1024.0 * 1024.0;
