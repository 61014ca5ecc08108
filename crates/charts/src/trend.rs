//! One figure of one workload over time, from the results history
//! (`ioscale history trend`): a point per recorded run, in the order they
//! ran, with its 95 % interval as an error bar, runs that did not end
//! cleanly drawn hollow, and a dashed line where the host or the target
//! changed (a kernel update, another mount option), named in the legend.
//!
//! The x-axis is the runs' order, not their dates: reruns often come in
//! bursts, and a time axis would pile them into one column.

use std::fmt::Write;

use crate::html::{table, STYLE};
use crate::svg::{
    ellipsis, esc, nice_axis, tick_label, BOTTOM, HEIGHT, LEFT, PALETTE, RIGHT, TOP, WIDTH,
};

/// One recorded run.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendPoint {
    /// Its id in the history (the x-axis label).
    pub run: i64,
    /// When it began.
    pub when: String,
    /// The figure.
    pub y: f64,
    /// Its interval's ends; `None` with one repetition.
    pub lo: Option<f64>,
    /// Upper end.
    pub hi: Option<f64>,
    /// Whether it ended cleanly (others are drawn hollow and not joined).
    pub good: bool,
}

/// A change of host or target between two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Index of the first point after the change.
    pub at: usize,
    /// What changed (`kernel 6.1.0-9 → 6.1.0-10`).
    pub text: String,
}

/// A trend chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    /// Title above the plot.
    pub title: String,
    /// One line under it (the workload and target).
    pub subtitle: String,
    /// y-axis label.
    pub y_label: String,
    /// The runs, oldest first.
    pub points: Vec<TrendPoint>,
    /// The changes, in order.
    pub changes: Vec<Change>,
}

/// Maps runs and figures to pixels.
struct Frame {
    n: usize,
    ytop: f64,
    ystep: f64,
}

impl Frame {
    fn pw(&self) -> f64 {
        WIDTH - LEFT - RIGHT
    }

    fn ph(&self) -> f64 {
        HEIGHT - TOP - BOTTOM
    }

    /// Point `i` (of `n`, spread evenly with half a step at each end).
    fn px(&self, i: f64) -> f64 {
        LEFT + (i + 0.5) / self.n.max(1) as f64 * self.pw()
    }

    fn py(&self, y: f64) -> f64 {
        TOP + self.ph() - (y.max(0.0) / self.ytop).min(1.05) * self.ph()
    }
}

fn frame(t: &Trend) -> Frame {
    let top = t
        .points
        .iter()
        .map(|p| p.hi.unwrap_or(p.y).max(p.y))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let (ytop, ystep) = nice_axis(top * 1.05);
    Frame {
        n: t.points.len(),
        ytop,
        ystep,
    }
}

/// The title, frame, y grid and axis labels.
fn draw_frame(s: &mut String, t: &Trend, f: &Frame) {
    let (pw, ph) = (f.pw(), f.ph());
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="DejaVu Sans, Verdana, Arial, sans-serif" font-size="13" role="img"><title>{}</title><rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/><text x="{:.1}" y="26" text-anchor="middle" font-size="16" font-weight="bold" fill="#222">{}</text><text x="{:.1}" y="42" text-anchor="middle" font-size="11" fill="#555">{}</text>"##,
        esc(&t.title),
        LEFT + pw / 2.0,
        esc(&t.title),
        LEFT + pw / 2.0,
        esc(&ellipsis(&t.subtitle, 110))
    );
    let mut v = 0.0;
    while v <= f.ytop + f.ystep * 1e-6 {
        let y = f.py(v);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#dddddd"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#333">{}</text>"##,
            LEFT + pw,
            LEFT - 8.0,
            y + 4.5,
            tick_label(v)
        );
        v += f.ystep;
    }
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#666"/><text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#222">run (oldest first)</text><text x="20" y="{:.1}" text-anchor="middle" fill="#222" transform="rotate(-90 20 {:.1})">{}</text>"##,
        LEFT + pw / 2.0,
        HEIGHT - 14.0,
        TOP + ph / 2.0,
        TOP + ph / 2.0,
        esc(&t.y_label)
    );
}

/// The changes: a dashed line before the first run after each, numbered,
/// and the numbered list in the legend.
fn draw_changes(s: &mut String, t: &Trend, f: &Frame) {
    for (k, c) in t.changes.iter().enumerate() {
        let x = f.px(c.at as f64 - 0.5);
        let _ = write!(
            s,
            r##"<g class="change"><line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#8a4b00" stroke-dasharray="5,4"/><text x="{:.1}" y="{:.1}" fill="#8a4b00" font-size="11">{}</text><title>{}</title></g>"##,
            TOP + f.ph(),
            x + 3.0,
            TOP + 12.0,
            k + 1,
            esc(&c.text)
        );
        let ly = TOP + 40.0 + k as f64 * 18.0;
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{ly:.1}" fill="#8a4b00" font-size="11">{}: {}<title>{}</title></text>"##,
            LEFT + f.pw() + 12.0,
            k + 1,
            esc(&ellipsis(&c.text, 26)),
            esc(&c.text)
        );
    }
}

/// The runs: the line through the good ones, each run's error bar and
/// marker, and the x labels (run ids; skipped where they would overlap).
fn draw_points(s: &mut String, t: &Trend, f: &Frame) {
    let col = PALETTE[0];
    let good: Vec<String> = t
        .points
        .iter()
        .enumerate()
        .filter(|(_, p)| p.good)
        .map(|(i, p)| format!("{:.1},{:.1}", f.px(i as f64), f.py(p.y)))
        .collect();
    if good.len() > 1 {
        let _ = write!(
            s,
            r##"<polyline points="{}" fill="none" stroke="{col}" stroke-width="2"/>"##,
            good.join(" ")
        );
    }
    let mut last_x = f64::NEG_INFINITY;
    for (i, p) in t.points.iter().enumerate() {
        let x = f.px(i as f64);
        if let (Some(lo), Some(hi)) = (p.lo, p.hi) {
            let (ya, yb) = (f.py(lo), f.py(hi));
            let _ = write!(
                s,
                r##"<path d="M{x:.1},{ya:.1}V{yb:.1}M{:.1},{ya:.1}H{:.1}M{:.1},{yb:.1}H{:.1}" stroke="{col}" stroke-width="1.5" fill="none"/>"##,
                x - 4.0,
                x + 4.0,
                x - 4.0,
                x + 4.0
            );
        }
        let (fill, stroke) = if p.good {
            (col, col)
        } else {
            ("#ffffff", "#c00000")
        };
        let _ = write!(
            s,
            r##"<circle cx="{x:.1}" cy="{:.1}" r="4" fill="{fill}" stroke="{stroke}" stroke-width="1.5"><title>run {}, {}: {}{}</title></circle>"##,
            f.py(p.y),
            p.run,
            esc(&p.when),
            tick_label(p.y),
            if p.good { "" } else { " (did not end cleanly)" }
        );
        if x - last_x >= 30.0 {
            let _ = write!(
                s,
                r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#333">{}</text>"##,
                TOP + f.ph() + 18.0,
                p.run
            );
            last_x = x;
        }
    }
}

/// The chart as a standalone SVG document.
pub fn render(t: &Trend) -> String {
    let f = frame(t);
    let mut s = String::new();
    draw_frame(&mut s, t, &f);
    draw_changes(&mut s, t, &f);
    draw_points(&mut s, t, &f);
    if t.points.is_empty() {
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#888">no runs</text>"##,
            LEFT + f.pw() / 2.0,
            TOP + f.ph() / 2.0
        );
    }
    s.push_str("</svg>\n");
    s
}

/// A table under a chart: its head and rows.
pub type Table = (Vec<String>, Vec<Vec<String>>);

/// A self-contained page: the title, a paragraph per line of `intro`,
/// and each chart with its table and the sentences under it.
pub fn render_html(title: &str, intro: &[String], parts: &[(Trend, Table, Vec<String>)]) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        esc(title),
        esc(title)
    );
    for l in intro {
        let _ = writeln!(o, "<p>{}</p>", esc(l));
    }
    for (t, (head, rows), notes) in parts {
        let _ = writeln!(o, "<h2>{}</h2>", esc(&t.title));
        for n in notes {
            let _ = writeln!(o, "<p class=\"verdict\">{}</p>", esc(n));
        }
        let _ = writeln!(o, "<figure>{}</figure>", render(t));
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        table(&mut o, &head, rows);
    }
    o.push_str("</body></html>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(run: i64, y: f64, good: bool) -> TrendPoint {
        TrendPoint {
            run,
            when: "2026-11-22T10:00:00Z".into(),
            y,
            lo: Some(y * 0.9),
            hi: Some(y * 1.1),
            good,
        }
    }

    /// Every run is drawn with its id and error bar; the bad one hollow;
    /// the change is a numbered dashed line with its text in the legend.
    #[test]
    fn runs_bars_and_changes_are_drawn() {
        let t = Trend {
            title: "write <MiB/s>".into(),
            subtitle: "w-1 on /mnt/fs".into(),
            y_label: "MiB/s".into(),
            points: vec![
                point(3, 100.0, true),
                point(4, 98.0, false),
                point(7, 50.0, true),
            ],
            changes: vec![Change {
                at: 2,
                text: "kernel 6.1 → 6.2".into(),
            }],
        };
        let s = render(&t);
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
        assert_eq!(s.matches("<circle").count(), 3);
        assert_eq!(s.matches("stroke=\"#c00000\"").count(), 1);
        assert_eq!(s.matches("<g class=\"change\">").count(), 1);
        assert!(s.contains("kernel 6.1 → 6.2") && s.contains("write &lt;MiB/s&gt;"));
        for id in [">3<", ">4<", ">7<"] {
            assert!(s.contains(id), "{id}");
        }
        let h = render_html(
            "trend",
            &["one".into()],
            &[(
                t,
                (vec!["run".into()], vec![vec!["3".into()]]),
                vec!["slower".into()],
            )],
        );
        assert!(h.contains("<svg") && h.contains("<td class=\"n\">3</td>") && h.contains("slower"));
        let empty = render(&Trend {
            title: String::new(),
            subtitle: String::new(),
            y_label: String::new(),
            points: Vec::new(),
            changes: Vec::new(),
        });
        assert!(empty.contains("no runs"));
    }
}
