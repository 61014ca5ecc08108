//! The self-contained HTML report: charts inline as SVG, the seed-style
//! table, per-point statistics, the analysis, host facts and the exact
//! command. No scripts, fonts or images are fetched, so it opens the same
//! offline, from a mail attachment or a CI artefact.

use std::fmt::Write;

use analysis::findings::{dur, num};
use analysis::render::{anchor, describe, table_head_for, table_rows, Row};
use analysis::SweepRecord;

use crate::svg::{self, esc};

/// The report's style sheet (the comparison page shares it).
pub(crate) const STYLE: &str = "body{font-family:'DejaVu Sans',Verdana,Arial,sans-serif;margin:24px auto;padding:0 12px;max-width:1180px;color:#222;background:#fff;overflow-wrap:anywhere}\
div.wide{overflow-x:auto;max-width:100%}\
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{border:1px solid #ccc;padding:3px 8px}\
th{background:#f2f2f2;overflow-wrap:normal;word-break:normal;hyphens:manual}td.n{text-align:right;font-variant-numeric:tabular-nums}\
pre{background:#f6f6f6;padding:8px;overflow-x:auto;white-space:pre-wrap}\
.charts{display:block}figure{margin:0 0 18px}figure svg{width:100%;height:auto}figcaption{font-size:12px;color:#555}\
ul.headline li{margin:6px 0;font-size:15px}\
.warn{color:#8a4b00}ul.analysis li{margin:4px 0}\
.banner{background:#fff3e0;border:1px solid #e0a050;padding:8px 12px;margin:12px 0}\
p.verdict{font-weight:bold;margin:6px 0}p.evidence{font-size:12px;color:#555;margin:2px 0 8px}\
tr.failed td{background:#fdecea}tr:target td{background:#fff8c4}";

/// Opens a table (`attrs` for the `<table>` tag) and writes its head row.
/// A table wider than the window scrolls inside its box; the page itself
/// never scrolls sideways.
fn table_head<'a>(out: &mut String, attrs: &str, head: impl IntoIterator<Item = &'a str>) {
    let _ = write!(out, "<div class=\"wide\"><table{attrs}><thead><tr>");
    for h in head {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
}

/// The cells of one row, numbers marked for right alignment, and the end
/// of the row.
fn row_cells(out: &mut String, cells: &[String]) {
    for c in cells {
        let n = c.parse::<f64>().is_ok();
        let _ = write!(
            out,
            "<td{}>{}</td>",
            if n { " class=\"n\"" } else { "" },
            esc(c)
        );
    }
    out.push_str("</tr>");
}

/// A table of `head` and `rows`, numbers right-aligned.
pub(crate) fn table(out: &mut String, head: &[&str], rows: &[Vec<String>]) {
    table_head(out, "", head.iter().copied());
    for r in rows {
        out.push_str("<tr>");
        row_cells(out, r);
    }
    out.push_str("</tbody></table></div>\n");
}

fn row_table(out: &mut String, head: &[String], rows: &[Row]) {
    table_head(out, " id=\"results\"", head.iter().map(String::as_str));
    for r in rows {
        let _ = write!(
            out,
            "<tr id=\"{}\"{}>",
            esc(&r.anchor),
            if r.failed > 0 {
                " class=\"failed\""
            } else {
                ""
            }
        );
        row_cells(out, &r.cells);
    }
    out.push_str("</tbody></table></div>\n");
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The banner counting failed repetitions, with the first error.
fn failures_banner(o: &mut String, rec: &SweepRecord) {
    if let Some((failed, total, first)) = rec.failed_reps() {
        let _ = writeln!(
        o,
        "<div class=\"banner\" id=\"failures\"><b>{failed} of {total} repetitions failed</b> and are left out of every figure (marked in the table and with a cross in the charts). First error: {}</div>",
        esc(&first)
    );
    }
}

/// What to keep in mind reading the figures: the analysis' notes and one
/// warning of each kind.
fn warnings_section(o: &mut String, rec: &SweepRecord) {
    let mut warns: Vec<&String> = Vec::new();
    for p in &rec.points {
        for w in &p.result.warnings {
            let kind = analysis::render::warning_kind(w);
            if !warns
                .iter()
                .any(|x| analysis::render::warning_kind(x) == kind)
            {
                warns.push(w);
            }
        }
    }
    // The analysis' own notes (one repetition per point…); failed
    // repetitions already have the banner.
    let notes: Vec<&String> = rec
        .analysis
        .notes
        .iter()
        .filter(|n| !n.contains("repetitions failed"))
        .collect();
    if !warns.is_empty() || !notes.is_empty() {
        o.push_str("<section id=\"warnings\"><h2>Read the figures with this in mind</h2><ul>\n");
        for n in notes {
            let _ = writeln!(o, "<li class=\"warn\">{}</li>", esc(n));
        }
        for w in warns.iter().take(20) {
            let _ = writeln!(o, "<li class=\"warn\">{}</li>", esc(w));
        }
        o.push_str("</ul></section>\n");
    }
}

/// The charts, then the per-rank and per-node bars.
fn charts_section(o: &mut String, rec: &SweepRecord) {
    o.push_str("<h2>Charts</h2><p>Error bars span the lowest to the highest good repetition (side by side for several lines); the line joins the trimmed means (or means); dashed: ideal linear scaling from the fewest workers, dotted: the USL fit where the analysis quotes it; a red cross marks failed repetitions. Hover a point for its values.</p><div class=\"charts\">\n");
    for c in crate::charts_for(rec) {
        figure(o, &c.name, &svg::render(&c.chart), &c.chart.title);
    }
    o.push_str("</div>\n");
    let bars = crate::bars_for(rec);
    if !bars.is_empty() {
        o.push_str("<h2>Per rank and per node</h2><p>At the most workers of each operation: what each rank (and each node) did, mean over the good repetitions, the line spanning the lowest to the highest. Uneven bars show a rank or node that held the others back.</p><div class=\"charts\">\n");
        for b in bars {
            figure(o, &b.name, &svg::render_bars(&b.bars), &b.bars.title);
        }
        o.push_str("</div>\n");
    }
    o.push_str(&crate::overtime::over_time_for(rec));
}

/// One chart of the report: its SVG with the title as caption, linked by
/// `name`.
pub(crate) fn figure(o: &mut String, name: &str, svg: &str, title: &str) {
    let _ = writeln!(
        o,
        "<figure id=\"{}\">{}<figcaption>{}</figcaption></figure>",
        esc(name),
        svg,
        esc(title)
    );
}

/// The analysis in detail: each curve's verdict with links to the points
/// it rests on, its sentences, and the comparisons.
fn analysis_section(o: &mut String, rec: &SweepRecord) {
    o.push_str("<h2>Analysis in detail</h2>\n<div id=\"analysis\">\n");
    for n in &rec.analysis.notes {
        let _ = writeln!(o, "<p class=\"warn\">{}</p>", esc(n));
    }
    for c in &rec.analysis.curves {
        let _ = write!(o, "<h3>{}</h3>", esc(&c.name()));
        let _ = write!(o, "<p class=\"verdict\">{}</p>", esc(&c.verdict.text));
        if !c.verdict.evidence.is_empty() {
            o.push_str("<p class=\"evidence\">Based on: ");
            let links: Vec<String> = c
                .verdict
                .evidence
                .iter()
                .map(|e| {
                    let iv = e
                        .interval
                        .filter(|i| i.n > 1)
                        .map(|i| format!(" [95% CI {}–{}]", num(i.lo), num(i.hi)))
                        .unwrap_or_default();
                    format!(
                        "<a href=\"#{}\">{} ({} worker{}): {} {}{}</a>",
                        esc(&anchor(&c.series, &c.op, e.workers)),
                        esc(&e.what),
                        e.workers,
                        if e.workers == 1 { "" } else { "s" },
                        num(e.value),
                        esc(&c.unit),
                        esc(&iv)
                    )
                })
                .collect();
            o.push_str(&links.join("; "));
            if let Some(l) = &c.verdict.limiter {
                let _ = write!(
                    o,
                    "; limit measured at <a href=\"#{}\">{} worker{}</a>",
                    esc(&anchor(&c.series, &c.op, l.workers)),
                    l.workers,
                    if l.workers == 1 { "" } else { "s" }
                );
            }
            o.push_str("</p>");
        }
        o.push_str("<ul class=\"analysis\">");
        for s in c.sentences.iter().filter(|s| **s != c.verdict.text) {
            let _ = write!(o, "<li>{}</li>", esc(s));
        }
        o.push_str("</ul>\n");
    }
    if !rec.analysis.comparisons.is_empty() {
        o.push_str("<h3>Compared</h3><ul class=\"analysis\">");
        for c in &rec.analysis.comparisons {
            let _ = write!(o, "<li>{}: {}", esc(&c.op), esc(&c.sentence));
            compared_evidence(o, rec, c);
            o.push_str("</li>");
        }
        o.push_str("</ul>\n");
    }
    o.push_str("</div>\n");
}

/// The results table, and the geometric mean across operations.
fn results_section(o: &mut String, rec: &SweepRecord) {
    let units = rec.analysis.units;
    o.push_str("<h2>Results</h2>\n");
    row_table(o, &table_head_for(rec), &table_rows(rec));

    if rec.points.iter().any(|p| p.ops.len() > 1) {
        o.push_str("<h3>Geometric mean across operations</h3>\n");
        // A Series column only where the sweep has several lines.
        let series = has_series(rec);
        let rows: Vec<Vec<String>> = rec
            .points
            .iter()
            .map(|p| {
                let mut r = if series {
                    vec![p.series.clone()]
                } else {
                    Vec::new()
                };
                r.extend([
                    p.workers().to_string(),
                    p.geomean_bw_mib_s
                        .map(|g| num(units.from_mib_s(g)))
                        .unwrap_or_default(),
                    p.geomean_iops.map(num).unwrap_or_default(),
                ]);
                r
            })
            .collect();
        let data = format!("Throughput ({})", units.data());
        let head = ["Series", "Workers", data.as_str(), "ops/s"];
        table(o, &head[usize::from(!series)..], &rows);
    }
}

/// Whether the sweep has several lines (targets, layouts, transfer sizes
/// swept), each named by its series label: only then do tables show a
/// Series column (it stood empty in every row).
fn has_series(rec: &SweepRecord) -> bool {
    rec.points.iter().any(|p| !p.series.is_empty())
}

/// The statistics of each point over its repetitions.
fn stats_section(o: &mut String, rec: &SweepRecord) {
    let units = rec.analysis.units;
    let _ = writeln!(o, "<h2>Statistics per point</h2><p>Over the repetitions: bandwidth in {}; trimmed mean drops the k highest and k lowest; outliers by modified z-score (|M| &gt; 3.5); latency by Little's law is workers ÷ operations per second; failed repetitions are left out.</p>", units.data());
    let mut rows = Vec::new();
    for p in &rec.points {
        for s in &p.ops {
            let mut row = if has_series(rec) {
                vec![p.series.clone()]
            } else {
                Vec::new()
            };
            row.extend([
                s.op.clone(),
                p.workers().to_string(),
                if s.failed > 0 {
                    format!("{} ({} failed)", s.reps, s.failed)
                } else {
                    s.reps.to_string()
                },
                format!("{:.2}", units.from_mib_s(s.bw_mib_s.min)),
                format!("{:.2}", units.from_mib_s(s.bw_mib_s.max)),
                format!("{:.2}", units.from_mib_s(s.bw_mib_s.mean)),
                format!("{:.2}", units.from_mib_s(s.bw_mib_s.median)),
                format!("{:.2}", units.from_mib_s(s.bw_mib_s.stddev)),
                s.bw_mib_s_trimmed
                    .map(|t| format!("{:.2}", units.from_mib_s(t)))
                    .unwrap_or_else(|| "-".into()),
                format!("{:.1}", s.iops.mean),
                s.little_latency_s.map(dur).unwrap_or_else(|| "-".into()),
                s.lat_p50_us
                    .map(|l| format!("{l:.1}"))
                    .unwrap_or_else(|| "-".into()),
                s.cpu_busy
                    .map(|c| format!("{c:.2}"))
                    .unwrap_or_else(|| "-".into()),
                if s.outlier_reps.is_empty() {
                    "-".into()
                } else {
                    s.outlier_reps
                        .iter()
                        .map(|r| format!("rep {}", report::shown_rep(*r)))
                        .collect::<Vec<_>>()
                        .join(" ")
                },
            ]);
            rows.push(row);
        }
    }
    let head = [
        "Series",
        "Op",
        "Workers",
        "Reps",
        "Min",
        "Max",
        "Mean",
        "Median",
        "Stddev",
        "Trimmed",
        "IOPS",
        "Latency (Little)",
        "p50 (µs)",
        "CPUs busy",
        "Outliers",
    ];
    table(o, &head[usize::from(!has_series(rec))..], &rows);
}

/// The command, the host and targets, and the first point's workload.
fn host_section(o: &mut String, rec: &SweepRecord) {
    let _ = writeln!(
        o,
        "<h2>Command</h2><pre id=\"command\">{}</pre>",
        esc(&shell_words(&rec.command))
    );
    let h = &rec.host;
    o.push_str("<h2>Host</h2>\n");
    let mut facts = vec![
        vec!["hostname".to_string(), h.hostname.clone()],
        vec!["kernel".into(), h.kernel.clone()],
        vec!["CPUs".into(), h.cpus.to_string()],
        vec![
            "memory".into(),
            format!("{:.1} GiB", h.mem_bytes as f64 / (1u64 << 30) as f64),
        ],
        vec!["ioscale".into(), rec.version.clone()],
        vec!["started".into(), rec.started.clone()],
    ];
    let mut targets: Vec<&report::HostInfo> = Vec::new();
    for p in &rec.points {
        if !targets.iter().any(|t| t.target == p.result.host.target) {
            targets.push(&p.result.host);
        }
    }
    if targets.is_empty() {
        targets.push(h);
    }
    for t in targets {
        facts.push(vec![
            "target".into(),
            format!(
                "{} — {} on {} ({}, {})",
                t.target, t.fs_type, t.mount_point, t.fs_source, t.mount_options
            ),
        ]);
    }
    table(o, &["fact", "value"], &facts);
    if let Some(p) = rec.points.first() {
        let _ = writeln!(
            o,
            "<p>Workload of the first point: {}</p>",
            esc(&p.result.spec.describe())
        );
    }
}

/// An adaptive sweep's decisions, right after the answer: the search
/// (each line's optimum, the path, the time against the ladders) and
/// each point's repetitions against the `--reps auto` target.
fn adaptive_section(o: &mut String, rec: &SweepRecord) {
    // The search first: it holds the answer to the sweep's question.
    for sec in analysis::render::adaptive_sections(rec).iter().rev() {
        let Some((head, lines)) = sec.split_first() else {
            continue;
        };
        let id = if head.starts_with("Search") {
            "search"
        } else {
            "adaptive-reps"
        };
        let _ = write!(o, "<section id=\"{id}\"><h2>{}</h2><ul>", esc(head));
        for l in lines {
            let _ = write!(o, "<li>{}</li>", esc(l.trim()));
        }
        o.push_str("</ul></section>\n");
    }
}

/// Renders the whole report.
pub fn render_html(rec: &SweepRecord) -> String {
    let mut o = String::new();
    let title = if rec.points_total > 1 || rec.config.threads.len() > 1 {
        "ioscale sweep report"
    } else {
        "ioscale run report"
    };
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title><style>{STYLE}</style></head><body>\n<h1>{title}</h1>\n"
    );
    let _ = writeln!(o, "<p>{}</p>", esc(&describe(rec)));
    // A sweep that stopped early says so before anything is read into it.
    if let Some(u) = analysis::render::unfinished(rec) {
        let _ = writeln!(
            o,
            "<div class=\"banner\" id=\"unfinished\"><b>{}</b>: {}. {}.</div>",
            esc(&u.head()),
            esc(&u.reason),
            esc(&capitalise(u.next))
        );
    }
    // The answer first: one verdict per line, then the comparisons.
    if !rec.analysis.curves.is_empty() {
        o.push_str("<section id=\"headline\"><h2>Answer</h2><ul class=\"headline\">");
        for c in &rec.analysis.curves {
            let _ = write!(
                o,
                "<li><b>{}</b>: {}</li>",
                esc(&c.name()),
                esc(&c.verdict.text)
            );
        }
        for c in &rec.analysis.comparisons {
            let _ = write!(o, "<li><b>{}</b>: {}</li>", esc(&c.op), esc(&c.sentence));
        }
        o.push_str("</ul></section>\n");
    }
    adaptive_section(&mut o, rec);

    failures_banner(&mut o, rec);
    warnings_section(&mut o, rec);
    charts_section(&mut o, rec);
    analysis_section(&mut o, rec);
    results_section(&mut o, rec);
    stats_section(&mut o, rec);
    host_section(&mut o, rec);
    o.push_str("</body></html>\n");
    o
}

/// Joins words as a shell would need them typed (single quotes where a
/// word holds anything but safe characters).
pub fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The numbers a comparison rests on, each linked to its table row: both
/// lines at every common worker count, with their intervals, and which
/// was clearly faster.
fn compared_evidence(o: &mut String, rec: &SweepRecord, c: &analysis::findings::Comparison) {
    if c.at.is_empty() {
        return;
    }
    let unit = rec
        .analysis
        .curves
        .iter()
        .find(|l| l.op == c.op && l.series == c.a)
        .map_or("", |l| l.unit.as_str());
    let side = |series: &str, workers: u32, v: f64, iv: Option<(f64, f64)>| {
        let iv = iv
            .map(|(lo, hi)| format!(" [95% CI {}–{}]", num(lo), num(hi)))
            .unwrap_or_default();
        format!(
            "<a href=\"#{}\">{}: {} {}{}</a>",
            esc(&anchor(series, &c.op, workers)),
            esc(series),
            num(v),
            esc(unit),
            esc(&iv)
        )
    };
    let links: Vec<String> =
        c.at.iter()
            .map(|x| {
                // An interval from more than one repetition, as (lo, hi).
                let a_iv = x.a_interval.filter(|i| i.n > 1).map(|i| (i.lo, i.hi));
                let b_iv = x.b_interval.filter(|i| i.n > 1).map(|i| (i.lo, i.hi));
                format!(
                    "{} worker{}: {} vs {} ({})",
                    x.workers,
                    if x.workers == 1 { "" } else { "s" },
                    side(&c.a, x.workers, x.a, a_iv),
                    side(&c.b, x.workers, x.b, b_iv),
                    match (&x.faster, a_iv.is_some() && b_iv.is_some()) {
                        (Some(f), true) => format!("{} clearly faster", esc(f)),
                        (None, true) => "within noise".to_string(),
                        // One repetition on a side: the gap alone, no
                        // noise it could be judged against.
                        (f, false) => {
                            let (hi, lo) = (x.a.max(x.b), x.a.min(x.b));
                            let apart = if lo > 0.0 {
                                format!("{:.0}% apart", (hi / lo - 1.0) * 100.0)
                            } else {
                                "apart".to_string()
                            };
                            match f {
                                Some(f) => format!(
                                    "{} faster, {apart}; no noise estimate: one repetition",
                                    esc(f)
                                ),
                                None => format!(
                                    "{apart}, not judged a difference; no noise estimate: one repetition"
                                ),
                            }
                        }
                    }
                )
            })
            .collect();
    o.push_str("<p class=\"evidence\">Based on: ");
    o.push_str(&links.join("; "));
    o.push_str("</p>");
}
