//! Line charts as hand-written SVG: throughput or duration against thread
//! count, one line per series, a log2 x-axis and error bars; a log10 y-axis
//! where the values span more than [`LOG_SPAN`] (latency percentiles,
//! whose p50 otherwise lies flat on 0 under a p99 a hundred times larger).
//!
//! SVG is text, needs no dependency and embeds directly in the HTML
//! report; [`crate::png`] rasterises the same document, so the PNG and the
//! SVG always show the same picture.

use std::fmt::Write;

/// One point: x, the central y, and the error bar's ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Thread count.
    pub x: f64,
    /// Central value.
    pub y: f64,
    /// Lower end of the error bar (lowest repetition).
    pub lo: f64,
    /// Upper end of the error bar (highest repetition).
    pub hi: f64,
}

/// One line.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Points, any order (drawn by x).
    pub points: Vec<Point>,
    /// Failed repetitions, as (x, how many): drawn as a red cross at the
    /// bottom of the plot, with the count on hover.
    pub failed: Vec<(f64, u32)>,
    /// Its colour, an index into the palette: the caller gives one line
    /// of a sweep the same colour on every chart.
    pub colour: usize,
    /// Drawn dashed (a p99 beside the solid p50 of the same line).
    pub dashed: bool,
}

/// A reference curve drawn dashed over a series: the ideal linear scaling
/// from its first point, or the fitted USL model.
#[derive(Debug, Clone, PartialEq)]
pub struct Overlay {
    /// Legend text ("ideal linear", "USL fit").
    pub label: String,
    /// Index of the series whose colour it takes.
    pub series: usize,
    /// Dash pattern (SVG `stroke-dasharray`).
    pub dash: String,
    /// (x, y) samples; those above the plot are cut off.
    pub points: Vec<(f64, f64)>,
}

/// A whole chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Title above the plot.
    pub title: String,
    /// One line under the title: what was measured (target, transfer size,
    /// O_DIRECT / sync mode).
    pub subtitle: String,
    /// Dashed reference curves.
    pub overlays: Vec<Overlay>,
    /// x-axis label.
    pub x_label: String,
    /// y-axis label.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
    /// A log10 y-axis, for values over several orders of magnitude.
    pub y_log: bool,
}

/// Largest ratio of the highest to the lowest positive value a linear
/// y-axis shows: beyond it the lowest line would lie on the axis.
pub const LOG_SPAN: f64 = 20.0;

/// Whether values from `lo` to `hi` (positive) need a log axis.
pub fn needs_log(lo: f64, hi: f64) -> bool {
    lo > 0.0 && hi.is_finite() && hi / lo > LOG_SPAN
}

/// The colour of palette entry `i`.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// The legend texts of `labels`, each at most `n` characters and told
/// apart: as they are when they fit; else without the words (or path
/// components) they all begin with, and cut at the front, keeping the
/// end that differs ("…/a p50", "…/b p50"), not at the end (two targets
/// both read "/tmp/meaning-fmnt-l…").
pub fn legend_labels(labels: &[&str], n: usize) -> Vec<String> {
    if labels.iter().all(|l| l.chars().count() <= n) {
        return labels.iter().map(|l| l.to_string()).collect();
    }
    // The longest common prefix ending at a separator.
    let first: Vec<char> = labels
        .first()
        .map(|l| l.chars().collect())
        .unwrap_or_default();
    let mut common = first.len();
    for l in labels.iter().skip(1) {
        common = common.min(
            first
                .iter()
                .zip(l.chars())
                .take_while(|(a, b)| **a == *b)
                .count(),
        );
    }
    let cut = if labels.len() > 1 {
        first[..common]
            .iter()
            .rposition(|c| *c == '/' || *c == ' ')
            .map_or(0, |k| k + 1)
    } else {
        0
    };
    let short: Vec<String> = labels
        .iter()
        .map(|l| {
            let rest: Vec<char> = l.chars().skip(cut).collect();
            let lead = if cut > 0 { 1 } else { 0 };
            if rest.len() + lead <= n {
                let s: String = rest.iter().collect();
                if cut > 0 {
                    format!("…{s}")
                } else {
                    s
                }
            } else {
                let keep: String = rest[rest.len() - (n - 1)..].iter().collect();
                format!("…{keep}")
            }
        })
        .collect();
    // Labels alike in their last characters too: numbered, so no two
    // legends read the same.
    let distinct = short
        .iter()
        .enumerate()
        .all(|(i, a)| short.iter().skip(i + 1).all(|b| a != b));
    if distinct {
        return short;
    }
    short
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let tag = format!("{}:", i + 1);
            let room = n.saturating_sub(tag.chars().count() + 1).max(1);
            let tail: Vec<char> = l.chars().collect();
            let tail: String = tail[tail.len().saturating_sub(room)..].iter().collect();
            format!("{tag}{tail}")
        })
        .collect()
}

/// Width of a rendered chart, pixels.
pub const WIDTH: f64 = 760.0;
/// Height of a rendered chart, pixels.
pub const HEIGHT: f64 = 440.0;

pub(crate) const LEFT: f64 = 78.0;
pub(crate) const RIGHT: f64 = 190.0;
pub(crate) const TOP: f64 = 48.0;
pub(crate) const BOTTOM: f64 = 58.0;

/// Characters of a legend text beside the plot.
const LEGEND_CHARS: usize = 20;

/// Line colours (Okabe–Ito, readable by colour-blind readers).
pub(crate) const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];

/// Escapes text for XML content and attributes.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" upper bound and step for a 0-based axis (1, 2, 2.5, 5 × 10^k).
pub(crate) fn nice_axis(max: f64) -> (f64, f64) {
    if !(max.is_finite() && max > 0.0) {
        return (1.0, 0.25);
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

pub(crate) fn tick_label(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 || (v.fract() == 0.0 && v.abs() >= 1.0) {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').to_string()
    }
}

/// The plot area of a chart: the log2 x range and the y range, with the
/// mapping of data to pixels.
struct Frame {
    pw: f64,
    ph: f64,
    x0: f64,
    x1: f64,
    ytop: f64,
    ystep: f64,
    /// log10 of the axis' ends, for a log y-axis.
    log: Option<(f64, f64)>,
}

impl Frame {
    /// The frame that holds every point and error bar of `all`, on a log
    /// y-axis when `log` (and every value is positive).
    fn of(all: &[&Point], log: bool) -> Frame {
        let pw = WIDTH - LEFT - RIGHT;
        let ph = HEIGHT - TOP - BOTTOM;
        let xs = all.iter().map(|p| p.x.max(1e-9).log2());
        let (mut x0, mut x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
        if !x0.is_finite() {
            (x0, x1) = (0.0, 1.0);
        }
        if x1 - x0 < 1e-9 {
            x0 -= 1.0;
            x1 += 1.0;
        }
        // A little room so end points and their error bars are not on the frame.
        let pad = (x1 - x0) * 0.04;
        let (x0, x1) = (x0 - pad, x1 + pad);
        let ymax = all
            .iter()
            .map(|p| p.hi.max(p.y))
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let (ytop, ystep) = nice_axis(ymax * 1.05);
        let ymin = all
            .iter()
            .map(|p| p.lo.min(p.y))
            .filter(|v| v.is_finite())
            .fold(f64::INFINITY, f64::min);
        // Whole decades around the values.
        let log = (log && ymin > 0.0 && ymax > 0.0).then(|| {
            (
                ymin.log10().floor(),
                ymax.log10().ceil().max(ymin.log10().floor() + 1.0),
            )
        });
        Frame {
            pw,
            ph,
            x0,
            x1,
            ytop,
            ystep,
            log,
        }
    }

    /// The y values of the grid lines: 0, step, … up to the top; on a log
    /// axis each decade (with 2 and 5 of it when there are at most two).
    fn y_ticks(&self) -> Vec<f64> {
        match self.log {
            Some((a, b)) => {
                let few = b - a <= 2.0;
                let mut t = Vec::new();
                let mut k = a;
                while k <= b + 1e-9 {
                    let d = 10f64.powf(k);
                    t.push(d);
                    if few && k < b - 1e-9 {
                        t.extend([2.0 * d, 5.0 * d]);
                    }
                    k += 1.0;
                }
                t
            }
            None => {
                let mut t = Vec::new();
                let mut v = 0.0;
                while v <= self.ytop + self.ystep * 1e-6 {
                    t.push(v);
                    v += self.ystep;
                }
                t
            }
        }
    }

    /// The y-axis' largest value (what a curve may reach).
    fn y_max(&self) -> f64 {
        self.log.map_or(self.ytop, |(_, b)| 10f64.powf(b))
    }

    fn px(&self, x: f64) -> f64 {
        LEFT + (x.max(1e-9).log2() - self.x0) / (self.x1 - self.x0) * self.pw
    }

    fn py(&self, y: f64) -> f64 {
        let share = match self.log {
            Some((a, b)) => (y.max(10f64.powf(a - 0.1)).log10() - a) / (b - a),
            None => y.max(0.0) / self.ytop,
        };
        TOP + self.ph - share.min(1.05) * self.ph
    }
}

/// The opening tag, background, title and subtitle.
fn draw_title(s: &mut String, c: &Chart, f: &Frame) {
    let scale = if f.log.is_some() { "log" } else { "linear" };
    head(s, (&c.title, &c.subtitle), f.pw, scale);
}

/// The opening tag, background, `title` and `subtitle` over a plot area
/// `pw` pixels wide, its y-axis `scale` (`linear` or `log`) said in a
/// `data-y-scale` attribute: the head of every chart of the report.
pub(crate) fn head(s: &mut String, (title, subtitle): (&str, &str), pw: f64, scale: &str) {
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="DejaVu Sans, Verdana, Arial, sans-serif" font-size="13" role="img" data-y-scale="{scale}">"##
    );
    let _ = write!(s, "<title>{}</title>", esc(title));
    let _ = write!(
        s,
        r##"<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>"##
    );
    let _ = write!(
        s,
        r##"<text x="{}" y="26" text-anchor="middle" font-size="16" font-weight="bold" fill="#222">{}</text>"##,
        LEFT + pw / 2.0,
        esc(title)
    );
    if !subtitle.is_empty() {
        let _ = write!(
            s,
            r##"<text x="{}" y="42" text-anchor="middle" font-size="11" fill="#555">{}</text>"##,
            LEFT + pw / 2.0,
            esc(&ellipsis(subtitle, 110))
        );
    }
}

/// The y grid with its ticks, and the x ticks at powers of two plus every
/// measured x.
fn draw_grid(s: &mut String, f: &Frame, all: &[&Point]) {
    let (pw, ph) = (f.pw, f.ph);
    for v in f.y_ticks() {
        let y = f.py(v);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#dddddd" stroke-width="1"/><text class="y-tick" x="{:.1}" y="{:.1}" text-anchor="end" fill="#333">{}</text>"##,
            LEFT + pw,
            LEFT - 8.0,
            y + 4.5,
            tick_label(v)
        );
    }
    let mut ticks: Vec<f64> = Vec::new();
    let mut k = f.x0.ceil();
    while k <= f.x1 {
        ticks.push(2f64.powf(k));
        k += 1.0;
    }
    for p in all {
        if !ticks.iter().any(|t| (t - p.x).abs() < 1e-9) {
            ticks.push(p.x);
        }
    }
    ticks.sort_by(f64::total_cmp);
    let mut last_x = f64::NEG_INFINITY;
    for t in ticks {
        let x = f.px(t);
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#eeeeee" stroke-width="1"/>"##,
            TOP + ph
        );
        // Skip labels that would overlap the previous one.
        if x - last_x >= 24.0 {
            let _ = write!(
                s,
                r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#333">{}</text>"##,
                TOP + ph + 18.0,
                tick_label(t)
            );
            last_x = x;
        }
    }
}

/// The frame and the axis labels.
fn draw_axes(s: &mut String, c: &Chart, f: &Frame) {
    axes(s, &c.x_label, &c.y_label, f.pw, f.ph);
}

/// The frame of a `pw` × `ph` plot area and its axis labels.
pub(crate) fn axes(s: &mut String, x_label: &str, y_label: &str, pw: f64, ph: f64) {
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#666" stroke-width="1"/>"##
    );
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#222">{}</text>"##,
        LEFT + pw / 2.0,
        HEIGHT - 14.0,
        esc(x_label)
    );
    let _ = write!(
        s,
        r##"<text x="20" y="{:.1}" text-anchor="middle" fill="#222" transform="rotate(-90 20 {:.1})">{}</text>"##,
        TOP + ph / 2.0,
        TOP + ph / 2.0,
        esc(y_label)
    );
}

/// The reference curves, drawn first so they sit under the data.
fn draw_overlays(s: &mut String, c: &Chart, f: &Frame) {
    for o in &c.overlays {
        let col = colour(c.series.get(o.series).map_or(o.series, |s| s.colour));
        let pts: Vec<String> = o
            .points
            .iter()
            .take_while(|p| p.1 <= f.y_max() * 1.02)
            .map(|p| format!("{:.1},{:.1}", f.px(p.0), f.py(p.1)))
            .collect();
        if pts.len() > 1 {
            let _ = write!(
                s,
                r##"<polyline class="overlay" points="{}" fill="none" stroke="{col}" stroke-opacity="0.6" stroke-width="1.5" stroke-dasharray="{}"><title>{}</title></polyline>"##,
                pts.join(" "),
                o.dash,
                esc(&o.label)
            );
        }
    }
}

/// Series `i` of `nser`, shown in the legend as `legend`: its line,
/// error bars, markers, failed repetitions and legend entry.
fn draw_series(s: &mut String, f: &Frame, (i, nser): (usize, f64), ser: &Series, legend: &str) {
    // Error bars of several series side by side, not on top of each other.
    let dodge = (i as f64 - (nser - 1.0) / 2.0) * 5.0;
    let col = colour(ser.colour);
    let dash = if ser.dashed {
        r#" stroke-dasharray="7 4""#
    } else {
        ""
    };
    let mut pts = ser.points.clone();
    pts.sort_by(|a, b| a.x.total_cmp(&b.x));
    let _ = write!(
        s,
        r##"<g class="series" data-label="{}" data-colour="{col}" data-legend="{}" data-dashed="{}">"##,
        esc(&ser.label),
        esc(legend),
        ser.dashed
    );
    if pts.len() > 1 {
        let path: Vec<String> = pts
            .iter()
            .map(|p| format!("{:.1},{:.1}", f.px(p.x), f.py(p.y)))
            .collect();
        let _ = write!(
            s,
            r##"<polyline points="{}" fill="none" stroke="{col}" stroke-width="2.5"{dash}/>"##,
            path.join(" ")
        );
    }
    for p in &pts {
        draw_point(s, f, p, dodge, col, &ser.label);
    }
    for &(fx, n) in &ser.failed {
        if fx < 2f64.powf(f.x0) - 1e-9 || fx > 2f64.powf(f.x1) + 1e-9 {
            continue;
        }
        let (x, y) = (f.px(fx), TOP + f.ph - 9.0);
        let _ = write!(
            s,
            r##"<path class="failed" d="M{:.1},{:.1}L{:.1},{:.1}M{:.1},{:.1}L{:.1},{:.1}" stroke="#c00000" stroke-width="2.5"><title>{}: {n} failed repetition(s) at {} workers, left out</title></path>"##,
            x - 5.0,
            y - 5.0,
            x + 5.0,
            y + 5.0,
            x - 5.0,
            y + 5.0,
            x + 5.0,
            y - 5.0,
            esc(&ser.label),
            tick_label(fx)
        );
    }
    // legend entry
    let ly = TOP + 10.0 + i as f64 * 22.0;
    let lx = LEFT + f.pw + 16.0;
    let _ = write!(
        s,
        r##"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{col}" stroke-width="3"{dash}/><circle cx="{:.1}" cy="{ly:.1}" r="4" fill="{col}"/><text class="legend" x="{:.1}" y="{:.1}" fill="#222">{}</text>"##,
        lx + 26.0,
        lx + 13.0,
        lx + 32.0,
        ly + 4.5,
        esc(legend)
    );
    s.push_str("</g>");
}

/// One measured point: its error bar (moved aside by `dodge`) and marker.
fn draw_point(s: &mut String, f: &Frame, p: &Point, dodge: f64, col: &str, label: &str) {
    let x = f.px(p.x) + dodge;
    if p.hi > p.lo {
        let (ya, yb) = (f.py(p.lo), f.py(p.hi));
        let _ = write!(
            s,
            r##"<path d="M{x:.1},{ya:.1}V{yb:.1}M{:.1},{ya:.1}H{:.1}M{:.1},{yb:.1}H{:.1}" stroke="{col}" stroke-width="1.5" fill="none"/>"##,
            x - 4.0,
            x + 4.0,
            x - 4.0,
            x + 4.0
        );
    }
    let x = x - dodge;
    let _ = write!(
        s,
        r##"<circle cx="{x:.1}" cy="{:.1}" r="4" fill="{col}"><title>{}: {} workers, {} (repetitions {} to {})</title></circle>"##,
        f.py(p.y),
        esc(label),
        tick_label(p.x),
        tick_label(p.y),
        tick_label(p.lo),
        tick_label(p.hi)
    );
}

/// Legend entries of the reference curves, one per kind, below the
/// series'.
fn draw_overlay_legend(s: &mut String, c: &Chart, f: &Frame) {
    let mut kinds: Vec<(&str, &str)> = Vec::new();
    for o in &c.overlays {
        if !kinds.iter().any(|k| k.0 == o.label) {
            kinds.push((&o.label, &o.dash));
        }
    }
    for (k, (label, dash)) in kinds.iter().enumerate() {
        let ly = TOP + 10.0 + (c.series.len() + k) as f64 * 22.0;
        let lx = LEFT + f.pw + 16.0;
        let _ = write!(
            s,
            r##"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="#666" stroke-width="1.5" stroke-dasharray="{dash}"/><text x="{:.1}" y="{:.1}" fill="#222">{}</text>"##,
            lx + 26.0,
            lx + 32.0,
            ly + 4.5,
            esc(&ellipsis(label, 20))
        );
    }
}

/// Renders the chart as a standalone SVG document.
pub fn render(c: &Chart) -> String {
    let mut s = String::new();
    let all: Vec<&Point> = c.series.iter().flat_map(|s| &s.points).collect();
    let f = Frame::of(&all, c.y_log);
    draw_title(&mut s, c, &f);
    draw_grid(&mut s, &f, &all);
    draw_axes(&mut s, c, &f);
    draw_overlays(&mut s, c, &f);
    let nser = c.series.len() as f64;
    let labels: Vec<&str> = c.series.iter().map(|s| s.label.as_str()).collect();
    let legends = legend_labels(&labels, LEGEND_CHARS);
    for (i, (ser, legend)) in c.series.iter().zip(&legends).enumerate() {
        draw_series(&mut s, &f, (i, nser), ser, legend);
    }
    draw_overlay_legend(&mut s, c, &f);
    if all.is_empty() {
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#888">no data</text>"##,
            LEFT + f.pw / 2.0,
            TOP + f.ph / 2.0
        );
    }
    s.push_str("</svg>\n");
    s
}

pub(crate) fn ellipsis(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let head: String = s.chars().take(n - 1).collect();
        format!("{head}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> Chart {
        Chart {
            title: "write: throughput <vs> threads".into(),
            subtitle: "/mnt/t (tmpfs), xfer 64 KiB".into(),
            overlays: vec![Overlay {
                label: "ideal linear".into(),
                series: 0,
                dash: "6 4".into(),
                points: vec![
                    (1.0, 25.0),
                    (2.0, 50.0),
                    (4.0, 100.0),
                    (8.0, 200.0),
                    (16.0, 400.0),
                ],
            }],
            x_label: "threads (log2)".into(),
            y_label: "MB/s".into(),
            y_log: false,
            series: vec![Series {
                colour: 0,
                dashed: false,
                label: "shared & co".into(),
                failed: vec![(2.0, 1)],
                points: [1.0, 2.0, 4.0, 8.0]
                    .iter()
                    .map(|&x| Point {
                        x,
                        y: 25.0 * x,
                        lo: 24.0 * x,
                        hi: 26.0 * x,
                    })
                    .collect(),
            }],
        }
    }

    #[test]
    fn escapes_and_draws_every_point() {
        let s = render(&chart());
        assert!(s.starts_with("<svg"));
        assert!(s.contains("&lt;vs&gt;") && s.contains("shared &amp; co"));
        assert_eq!(s.matches("<circle").count(), 4 + 1, "4 markers + legend");
        assert_eq!(
            s.matches("<polyline").count(),
            2,
            "the line and the ideal-linear overlay"
        );
        assert_eq!(
            s.matches("class=\"failed\"").count(),
            1,
            "one failed marker"
        );
        assert!(s.contains("1 failed repetition(s) at 2 workers, left out"));
    }

    #[test]
    fn legends_alike_at_both_ends_are_numbered() {
        let a = format!("/x/{}/same-end", "a".repeat(30));
        let b = format!("/y/{}/same-end", "a".repeat(30));
        let l = legend_labels(&[&a, &b], 20);
        assert_ne!(l[0], l[1], "{l:?}");
        assert!(l.iter().all(|x| x.chars().count() <= 20), "{l:?}");
    }

    #[test]
    fn nice_axes() {
        assert_eq!(nice_axis(281.0), (300.0, 100.0));
        assert_eq!(nice_axis(9.0), (10.0, 2.0));
        assert_eq!(nice_axis(0.0), (1.0, 0.25));
    }

    #[test]
    fn log2_axis_spaces_doublings_evenly() {
        let s = render(&chart());
        let xs: Vec<f64> = s
            .split("<circle cx=\"")
            .skip(1)
            .take(4)
            .map(|t| t.split('"').next().unwrap().parse().unwrap())
            .collect();
        let d1 = xs[1] - xs[0];
        let d2 = xs[2] - xs[1];
        assert!((d1 - d2).abs() < 0.2, "{xs:?}");
    }

    #[test]
    fn empty_chart_says_so() {
        let s = render(&Chart {
            series: vec![],
            ..chart()
        });
        assert!(s.contains("no data"));
    }
}

/// A bar chart: one bar per rank or node, with the range of the
/// repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    /// Title above the plot.
    pub title: String,
    /// One line under the title.
    pub subtitle: String,
    /// y-axis label, with its unit.
    pub y_label: String,
    /// x-axis label (what a bar is: "Rank", "Node").
    pub x_label: String,
    /// The bars, left to right.
    pub bars: Vec<Bar>,
}

/// One bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// What it stands for ("rank 0 (n1)").
    pub label: String,
    /// Its height.
    pub value: f64,
    /// Lowest repetition.
    pub lo: f64,
    /// Highest repetition.
    pub hi: f64,
}

/// Renders a bar chart as a standalone SVG document, the same size as the
/// line charts; hovering a bar shows its exact value.
pub fn render_bars(b: &Bars) -> String {
    let mut s = String::new();
    let pw = WIDTH - LEFT - 40.0;
    let ph = HEIGHT - TOP - BOTTOM;
    let top = b
        .bars
        .iter()
        .map(|x| x.hi.max(x.value))
        .fold(0.0f64, f64::max);
    let (ymax, step) = nice_axis(top * 1.05);
    let y = |v: f64| TOP + ph - v / ymax * ph;
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" font-family=\"DejaVu Sans, Verdana, sans-serif\">\
<rect width=\"{WIDTH}\" height=\"{HEIGHT}\" fill=\"#fff\"/>\
<text x=\"{}\" y=\"20\" font-size=\"16\" font-weight=\"bold\" text-anchor=\"middle\">{}</text>\
<text x=\"{}\" y=\"36\" font-size=\"11\" fill=\"#555\" text-anchor=\"middle\">{}</text>",
        WIDTH / 2.0,
        esc(&b.title),
        WIDTH / 2.0,
        esc(&ellipsis(&b.subtitle, 110))
    );
    let mut v = 0.0;
    while v <= ymax + step * 1e-9 {
        let yy = y(v);
        let _ = write!(
            s,
            "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#e4e4e4\"/>\
<text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
            LEFT + pw,
            LEFT - 6.0,
            yy + 4.0,
            tick_label(v)
        );
        v += step;
    }
    let n = b.bars.len().max(1) as f64;
    let slot = pw / n;
    let w = (slot * 0.6).min(80.0);
    for (i, bar) in b.bars.iter().enumerate() {
        let cx = LEFT + slot * (i as f64 + 0.5);
        let col = PALETTE[0];
        let _ = write!(
            s,
            "<g><title>{}: {} (repetitions {}–{})</title>\
<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{col}\" opacity=\"0.85\"/>\
<line x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#222\"/></g>\
<text x=\"{cx:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            esc(&bar.label),
            tick_label(bar.value),
            tick_label(bar.lo),
            tick_label(bar.hi),
            cx - w / 2.0,
            y(bar.value),
            (TOP + ph - y(bar.value)).max(0.0),
            y(bar.lo),
            y(bar.hi),
            TOP + ph + 16.0,
            esc(&ellipsis(&bar.label, (slot / 7.0) as usize + 1))
        );
    }
    let _ = write!(
        s,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#444\"/>\
<text x=\"{}\" y=\"{}\" font-size=\"13\" text-anchor=\"middle\">{}</text>\
<text x=\"18\" y=\"{}\" font-size=\"13\" text-anchor=\"middle\" transform=\"rotate(-90 18 {})\">{}</text></svg>",
        LEFT + pw / 2.0,
        HEIGHT - 14.0,
        esc(&b.x_label),
        TOP + ph / 2.0,
        TOP + ph / 2.0,
        esc(&b.y_label)
    );
    s
}
