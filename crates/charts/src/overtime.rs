//! Throughput and p99 latency over time, for the phases of one point: the
//! charts beside the scaling charts that show what one figure per phase
//! hides (a burst-credit volume's drop, a throttle, a latency step).
//!
//! Each repetition of the point is one line (all overlaid, in the
//! palette's order), drawn through the midpoints of its intervals; a
//! change the analysis found ([`analysis::timeline`]) is a dashed
//! vertical mark at its time. Series longer than [`MAX_POINTS`] intervals
//! are coarsened first — exactly, by [`stats::Series::coarsen`], so the
//! p99 of a drawn point is the p99 of its merged intervals, not an
//! average of percentiles. In the HTML report each point is a
//! `<details>` element: the reader opens the point to look at; those with
//! a change (or, without any, the most workers) start open.

use std::fmt::Write;

use analysis::timeline::Change;
use analysis::Units;
use stats::Series;

use crate::svg::{
    axes, ellipsis, esc, head, nice_axis, tick_label, BOTTOM, HEIGHT, LEFT, PALETTE, RIGHT, TOP,
    WIDTH,
};

/// Most points one line draws.
pub const MAX_POINTS: usize = 600;

/// One line over time: `(seconds, value)`, a NaN value breaking the line
/// (an interval without operations has no latency).
#[derive(Debug, Clone, PartialEq)]
pub struct TimeLine {
    /// Legend text.
    pub label: String,
    /// Points in time order.
    pub points: Vec<(f64, f64)>,
}

/// A chart over time.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeChart {
    /// Title.
    pub title: String,
    /// One line under it.
    pub subtitle: String,
    /// y-axis label (with its unit).
    pub y_label: String,
    /// The lines.
    pub lines: Vec<TimeLine>,
    /// Vertical marks: time and what happened there.
    pub marks: Vec<(f64, String)>,
}

/// The phases of one point of one operation.
#[derive(Debug, Clone)]
pub struct PointPhases<'a> {
    /// The operation.
    pub op: &'a str,
    /// The sweep series the point belongs to (may be empty).
    pub label: &'a str,
    /// Workers of the point.
    pub workers: u32,
    /// Each repetition's series.
    pub reps: Vec<(u32, &'a Series)>,
}

impl PointPhases<'_> {
    /// "write at 8 workers", with the series label when there is one.
    pub fn name(&self) -> String {
        let w = if self.workers == 1 {
            "1 worker".to_string()
        } else {
            format!("{} workers", self.workers)
        };
        if self.label.is_empty() {
            format!("{} at {w}", self.op)
        } else {
            format!("{} ({}) at {w}", self.op, self.label)
        }
    }
}

/// `s` coarsened (exactly) to at most [`MAX_POINTS`] intervals.
fn drawable(s: &Series) -> Series {
    let mut s = s.clone();
    while s.bins().len() > MAX_POINTS {
        s.coarsen();
    }
    s
}

/// The throughput and p99-latency charts of a point: `data` says whether
/// the rate is in `unit` of data (MiB/s or MB/s by `units`) or operations
/// per second; `changes` are the analysis's findings (those of this point
/// are marked).
pub fn point_charts(
    p: &PointPhases,
    data: bool,
    unit: &str,
    units: Units,
    changes: &[Change],
) -> [TimeChart; 2] {
    let mut rate = Vec::new();
    let mut p99 = Vec::new();
    for &(rep, s) in &p.reps {
        let f = drawable(s).figures();
        let mid = |b: &stats::BinFigures| b.t_s + b.dur_s / 2.0;
        let label = format!("repetition {}", rep + 1);
        rate.push(TimeLine {
            label: label.clone(),
            points: f
                .iter()
                .map(|b| {
                    let v = if data {
                        units.from_mib_s(b.mib_s)
                    } else {
                        b.iops
                    };
                    (mid(b), v)
                })
                .collect(),
        });
        p99.push(TimeLine {
            label,
            points: f
                .iter()
                .map(|b| (mid(b), if b.ops > 0 { b.lat_p99_us } else { f64::NAN }))
                .collect(),
        });
    }
    // Latency in ms once any p99 reaches a millisecond.
    let top = p99
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let (scale, lat_unit) = if top >= 1000.0 {
        (1e-3, "ms")
    } else {
        (1.0, "µs")
    };
    for l in &mut p99 {
        for pt in &mut l.points {
            pt.1 *= scale;
        }
    }
    let marks: Vec<(f64, String)> = changes
        .iter()
        .filter(|c| c.workers == p.workers && p.reps.iter().any(|r| r.0 == c.rep))
        .map(|c| {
            let what = if c.rate_fell { "fell" } else { "latency rose" };
            (
                c.at_s,
                format!("repetition {}: {what} at {:.1} s", c.rep + 1, c.at_s),
            )
        })
        .collect();
    let width = p
        .reps
        .first()
        .map(|r| drawable(r.1).width_ns() as f64 / 1e9)
        .unwrap_or(0.0);
    let subtitle = format!(
        "{} repetition(s) overlaid; one point per {} interval",
        p.reps.len(),
        analysis::verdict::dur(width)
    );
    [
        TimeChart {
            title: format!("{}: throughput over time", p.name()),
            subtitle: subtitle.clone(),
            y_label: format!("Throughput ({unit})"),
            lines: rate,
            marks: marks.clone(),
        },
        TimeChart {
            title: format!("{}: p99 latency over time", p.name()),
            subtitle,
            y_label: format!("Tail latency (p99, {lat_unit})"),
            lines: p99,
            marks,
        },
    ]
}

/// Renders a chart over time as a standalone SVG document.
pub fn render_time(c: &TimeChart) -> String {
    let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let pts = || {
        c.lines
            .iter()
            .flat_map(|l| l.points.iter())
            .filter(|p| p.1.is_finite())
    };
    let tmax = pts().map(|p| p.0).fold(0.0, f64::max);
    let (xtop, xstep) = nice_axis(tmax);
    let (ytop, ystep) = nice_axis(pts().map(|p| p.1).fold(0.0, f64::max) * 1.05);
    let px = |t: f64| LEFT + (t / xtop).clamp(0.0, 1.0) * pw;
    let py = |v: f64| TOP + ph - (v.max(0.0) / ytop).min(1.05) * ph;
    let mut s = String::new();
    // A point's name holds its target's path: the chart's own title is cut
    // to what fits its width (the caption below has it whole).
    let title: String = if c.title.chars().count() > 56 {
        c.title.chars().take(55).chain(['…']).collect()
    } else {
        c.title.clone()
    };
    head(&mut s, (&title, &c.subtitle), pw, "linear");
    grid(&mut s, (xtop, xstep), (ytop, ystep), &px, &py);
    axes(&mut s, "Time into the phase (s)", &c.y_label, pw, ph);
    for (t, what) in &c.marks {
        let x = px(*t);
        let _ = write!(
            s,
            r##"<line class="change" x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#c00000" stroke-width="1.5" stroke-dasharray="5 3"><title>{}</title></line>"##,
            TOP + ph,
            esc(what)
        );
    }
    for (i, l) in c.lines.iter().enumerate() {
        line(&mut s, i, l, &px, &py);
    }
    if pts().next().is_none() {
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#888">no data</text>"##,
            LEFT + pw / 2.0,
            TOP + ph / 2.0
        );
    }
    s.push_str("</svg>\n");
    s
}

/// The grid and tick labels of both linear axes.
fn grid(
    s: &mut String,
    x: (f64, f64),
    y: (f64, f64),
    px: &dyn Fn(f64) -> f64,
    py: &dyn Fn(f64) -> f64,
) {
    let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let mut v = 0.0;
    while v <= y.0 + y.1 * 1e-6 {
        let yy = py(v);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#dddddd" stroke-width="1"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#333">{}</text>"##,
            LEFT + pw,
            LEFT - 8.0,
            yy + 4.5,
            tick_label(v)
        );
        v += y.1;
    }
    let mut t = 0.0;
    while t <= x.0 + x.1 * 1e-6 {
        let xx = px(t);
        let _ = write!(
            s,
            r##"<line x1="{xx:.1}" y1="{TOP}" x2="{xx:.1}" y2="{:.1}" stroke="#eeeeee" stroke-width="1"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle" fill="#333">{}</text>"##,
            TOP + ph,
            TOP + ph + 18.0,
            tick_label(t)
        );
        t += x.1;
    }
}

/// Line `i`: its stretches between gaps, and its legend entry.
fn line(s: &mut String, i: usize, l: &TimeLine, px: &dyn Fn(f64) -> f64, py: &dyn Fn(f64) -> f64) {
    let col = PALETTE[i % PALETTE.len()];
    let _ = write!(s, r##"<g class="series" data-label="{}">"##, esc(&l.label));
    for run in l
        .points
        .split(|p| !p.1.is_finite())
        .filter(|r| !r.is_empty())
    {
        let path: Vec<String> = run
            .iter()
            .map(|p| format!("{:.1},{:.1}", px(p.0), py(p.1)))
            .collect();
        if run.len() == 1 {
            let _ = write!(
                s,
                r##"<circle cx="{}" r="2" fill="{col}"/>"##,
                path[0].replace(',', "\" cy=\"")
            );
        } else {
            let _ = write!(
                s,
                r##"<polyline points="{}" fill="none" stroke="{col}" stroke-width="1.8" stroke-opacity="0.85"><title>{}</title></polyline>"##,
                path.join(" "),
                esc(&l.label)
            );
        }
    }
    let (lx, ly) = (WIDTH - RIGHT + 16.0, TOP + 10.0 + i as f64 * 22.0);
    let _ = write!(
        s,
        r##"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{col}" stroke-width="3"/><text x="{:.1}" y="{:.1}" fill="#222">{}</text></g>"##,
        lx + 26.0,
        lx + 32.0,
        ly + 4.5,
        esc(&ellipsis(&l.label, 20))
    );
}

/// The "Over time" section of the HTML report: one `<details>` element
/// per point with its two charts; points with a change (or, when none
/// has one, the one with the most workers) start open.
pub fn over_time_html(
    points: &[PointPhases],
    data: &dyn Fn(&str) -> (bool, String),
    units: Units,
    changes: &dyn Fn(&PointPhases) -> Vec<Change>,
) -> String {
    let mut o = String::new();
    if points.iter().all(|p| p.reps.is_empty()) {
        return o;
    }
    o.push_str("<h2>Over time</h2><p>Each phase's throughput and 99th-percentile latency per interval, every repetition of a point overlaid; a dashed red line marks a change the analysis found. Open a point to see it.</p>\n");
    let found: Vec<Vec<Change>> = points.iter().map(changes).collect();
    let most = points.iter().map(|p| p.workers).max().unwrap_or(0);
    let none = found.iter().all(Vec::is_empty);
    for (p, ch) in points.iter().zip(&found) {
        if p.reps.is_empty() {
            continue;
        }
        let (is_data, unit) = data(p.op);
        let open = if !ch.is_empty() || (none && p.workers == most) {
            " open"
        } else {
            ""
        };
        let note = match ch.first() {
            Some(c) if c.rate_fell => format!(" — fell {:.1} s in", c.at_s),
            Some(c) => format!(" — latency rose {:.1} s in", c.at_s),
            None => String::new(),
        };
        let _ = write!(
            o,
            "<details{open}><summary>{} ({} repetition(s)){}</summary><div class=\"charts\">",
            esc(&p.name()),
            p.reps.len(),
            esc(&note)
        );
        for c in point_charts(p, is_data, &unit, units, ch) {
            let _ = write!(
                o,
                "<figure>{}<figcaption>{}</figcaption></figure>",
                render_time(&c),
                esc(&c.title)
            );
        }
        o.push_str("</div></details>\n");
    }
    o
}

/// The phases of a record's points that recorded a series, one entry per
/// point and operation, each repetition a line.
fn points_of(rec: &analysis::model::SweepRecord) -> Vec<PointPhases<'_>> {
    let mut points = Vec::new();
    for p in &rec.points {
        for o in &p.ops {
            let reps: Vec<(u32, &Series)> = p
                .result
                .phases
                .iter()
                .filter(|ph| ph.op == o.op && !ph.interrupted)
                .filter_map(|ph| Some((ph.rep, ph.series.as_ref()?)))
                .collect();
            if !reps.is_empty() {
                points.push(PointPhases {
                    op: &o.op,
                    label: &p.series,
                    workers: p.threads,
                    reps,
                });
            }
        }
    }
    points
}

/// Whether `op` moves data in `rec`, and its rate's unit.
fn unit_in(rec: &analysis::model::SweepRecord, op: &str) -> (bool, String) {
    let units = rec.analysis.units;
    if rec.op_moves_data(op) {
        return (true, units.data().to_string());
    }
    let stats = rec.points.iter().flat_map(|p| &p.ops).find(|o| o.op == op);
    let unit = stats.map_or("ops/s", |o| analysis::findings::unit_of(o, units));
    (false, unit.to_string())
}

/// The changes the rules over time ([`analysis::timeline`]) find in the
/// phases of `p`: the same rules, on the same series, as the analysis's
/// sentences.
fn changes_in(rec: &analysis::model::SweepRecord, p: &PointPhases) -> Vec<Change> {
    let (data, unit) = unit_in(rec, p.op);
    let views: Vec<analysis::timeline::PhaseView> = p
        .reps
        .iter()
        .enumerate()
        .map(|(order, &(rep, series))| analysis::timeline::PhaseView {
            workers: p.workers,
            rep,
            order,
            series,
        })
        .collect();
    analysis::timeline::read_line(&unit, data, rec.analysis.units, &views).changes
}

/// The "Over time" section of a record's HTML report: every point's
/// phases that recorded a series, by operation, each change marked.
pub fn over_time_for(rec: &analysis::model::SweepRecord) -> String {
    over_time_html(
        &points_of(rec),
        &|op| unit_in(rec, op),
        rec.analysis.units,
        &|p| changes_in(rec, p),
    )
}

/// The charts over time of a record as `(file name, SVG)`: for `--png`,
/// beside the scaling charts (`time-[<series>-]<op>-<workers>-throughput`
/// and `…-p99`).
pub fn over_time_svgs(rec: &analysis::model::SweepRecord) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in points_of(rec) {
        let (data, unit) = unit_in(rec, p.op);
        let ch = changes_in(rec, &p);
        let base = analysis::render::anchor(p.label, p.op, p.workers)
            .replacen("pt-", "time-", 1)
            .replace("--", "-");
        let [thr, lat] = point_charts(&p, data, &unit, rec.analysis.units, &ch);
        out.push((format!("{base}-throughput"), render_time(&thr)));
        out.push((format!("{base}-p99"), render_time(&lat)));
    }
    out
}

#[cfg(test)]
mod tests {
    use stats::SeriesRecorder;

    use super::*;

    const S: u64 = 1_000_000_000;

    /// `n` intervals of 1 s: `rate(i)` writes of 1 MiB, each taking
    /// `lat_us(i)`.
    fn series(n: u64, rate: impl Fn(u64) -> u64, lat_us: impl Fn(u64) -> u64) -> Series {
        let mut r = SeriesRecorder::new(S, 4096, 0).unwrap();
        for i in 0..n {
            let k = rate(i);
            for j in 0..k {
                r.write(i * S + j * S / k, 1 << 20, lat_us(i) * 1000);
            }
        }
        r.finish(n * S)
    }

    #[test]
    fn throughput_and_p99_lines_per_repetition_with_the_change_marked() {
        let a = series(
            40,
            |i| if i < 25 { 100 } else { 20 },
            |i| if i < 25 { 500 } else { 3000 },
        );
        let b = series(40, |_| 100, |_| 500);
        let p = PointPhases {
            op: "write",
            label: "",
            workers: 8,
            reps: vec![(0, &a), (1, &b)],
        };
        let change = Change {
            workers: 8,
            rep: 0,
            order: 0,
            rate_fell: true,
            latency_rose: true,
            at_s: 25.0,
            back_s: None,
            rate_before: 100.0,
            rate_after: 20.0,
            p50_before_us: 500.0,
            p50_after_us: 3000.0,
            bytes_before: 2500 << 20,
            ops_before: 2500,
            interval_s: 1.0,
            rate_at_step: analysis::timeline::RateAtStep::Fell,
        };
        let [thr, lat] = point_charts(&p, true, "MiB/s", Units::Iec, &[change]);
        assert_eq!(thr.lines.len(), 2);
        assert_eq!(thr.lines[0].points[0], (0.5, 100.0));
        assert_eq!(thr.lines[0].points[30], (30.5, 20.0));
        assert_eq!(lat.y_label, "Tail latency (p99, ms)");
        assert_eq!(lat.lines[0].points[30].1, 3.0);
        assert_eq!(
            thr.marks,
            vec![(25.0, "repetition 1: fell at 25.0 s".into())]
        );
        let svg = render_time(&thr);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("class=\"change\"").count(), 1);
        assert!(svg.contains("write at 8 workers: throughput over time"));
        // The x axis runs in seconds to a nice bound past the last interval.
        assert!(svg.contains(">40<"), "{svg}");
    }

    #[test]
    fn long_series_are_coarsened_exactly_and_gaps_break_the_line() {
        let long = series(3000, |i| if i % 2 == 0 { 4 } else { 0 }, |_| 100);
        let p = PointPhases {
            op: "read",
            label: "shared",
            workers: 1,
            reps: vec![(0, &long)],
        };
        let [thr, lat] = point_charts(&p, true, "MiB/s", Units::Iec, &[]);
        assert!(thr.lines[0].points.len() <= MAX_POINTS);
        // Merged to 8 s: every drawn interval holds four seconds of 4 MiB.
        assert!(
            thr.lines[0].points.iter().all(|p| p.1 == 2.0),
            "{:?}",
            &thr.lines[0].points[..3]
        );
        assert_eq!(lat.y_label, "Tail latency (p99, µs)");
        assert!(thr.subtitle.contains("8.00 s interval"), "{}", thr.subtitle);
        assert!(p.name() == "read (shared) at 1 worker");
        // Every other interval of the raw series has no operation: at full
        // resolution the latency line has gaps.
        let short = series(10, |i| if i % 2 == 0 { 4 } else { 0 }, |_| 100);
        let p = PointPhases {
            op: "read",
            label: "",
            workers: 1,
            reps: vec![(0, &short)],
        };
        let [_, lat] = point_charts(&p, true, "MiB/s", Units::Iec, &[]);
        let svg = render_time(&lat);
        assert_eq!(svg.matches("<polyline").count(), 0);
        assert_eq!(svg.matches("<circle").count(), 5);
    }

    #[test]
    fn the_html_section_opens_points_with_a_change() {
        let a = series(20, |_| 10, |_| 100);
        let b = series(20, |_| 20, |_| 100);
        let points = vec![
            PointPhases {
                op: "write",
                label: "",
                workers: 2,
                reps: vec![(0, &a)],
            },
            PointPhases {
                op: "write",
                label: "",
                workers: 4,
                reps: vec![(0, &b)],
            },
        ];
        let html = over_time_html(&points, &|_| (true, "MiB/s".into()), Units::Iec, &|_| {
            Vec::new()
        });
        assert_eq!(html.matches("<details").count(), 2);
        assert_eq!(
            html.matches("<details open>").count(),
            1,
            "the most workers open"
        );
        assert!(html.contains("<summary>write at 4 workers (1 repetition(s))</summary>"));
        assert_eq!(html.matches("<svg").count(), 4);
        assert!(
            over_time_html(&[], &|_| (true, String::new()), Units::Iec, &|_| Vec::new()).is_empty()
        );
    }
}
