//! The HTML page of `ioscale compare --html`: the comparison of two or
//! more saved records with the report's own pieces (its style, tables,
//! charts and figure captions, from [`crate::html`] and [`crate::svg`]).
//! What the text prints is here too, in the same words: the summary line
//! per record, the warnings about workloads that differ, and the matched
//! rows with their intervals, ratios and verdicts; the charts add one
//! line per record for each operation (and series), each record in one
//! colour on every chart.

use std::fmt::Write;

use analysis::compare::{summary, table, table_note, Comparison};
use analysis::SweepRecord;

use crate::html::{figure, shell_words, table as html_table, STYLE};
use crate::svg::{self, esc, Chart, Point, Series};

/// One chart per operation and series of the matched rows: each record's
/// figure (its interval as the error bar) by workers.
pub fn compare_charts(c: &Comparison) -> Vec<(String, Chart)> {
    let mut keys: Vec<(&str, &str, &str)> = Vec::new();
    for r in &c.rows {
        let k = (r.series.as_str(), r.op.as_str(), r.unit.as_str());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(series, op, unit)| {
            let lines: Vec<Series> = c
                .names
                .iter()
                .enumerate()
                .map(|(i, name)| Series {
                    label: name.clone(),
                    points: c
                        .rows
                        .iter()
                        .filter(|r| r.series == series && r.op == op && r.unit == unit)
                        .filter_map(|r| {
                            let y = r.values[i]?;
                            let iv = r.intervals.get(i).copied().flatten();
                            Some(Point {
                                x: r.threads as f64,
                                y,
                                lo: iv.map_or(y, |v| v.lo),
                                hi: iv.map_or(y, |v| v.hi),
                            })
                        })
                        .collect(),
                    failed: Vec::new(),
                    colour: i,
                    dashed: false,
                })
                .collect();
            let what = if series.is_empty() {
                op.to_string()
            } else {
                format!("{op} ({series})")
            };
            let name = format!(
                "compare-{}",
                what.chars()
                    .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' })
                    .collect::<String>()
            );
            (
                name,
                Chart {
                    title: format!("{what}: records compared"),
                    subtitle: format!("ratios against {}", c.names[0]),
                    overlays: Vec::new(),
                    x_label: "Workers (log2 scale)".into(),
                    y_label: unit.to_string(),
                    series: lines,
                    y_log: false,
                },
            )
        })
        .collect()
}

/// What each record is: its command, its target and its verdicts.
fn records_section(o: &mut String, records: &[(String, SweepRecord)]) {
    o.push_str("<h2>Records</h2>\n");
    for (name, rec) in records {
        let _ = writeln!(o, "<h3>{}</h3>", esc(name));
        let _ = writeln!(
            o,
            "<p>{}</p><pre>{}</pre>",
            esc(&analysis::render::describe(rec)),
            esc(&shell_words(&rec.command))
        );
        if !rec.analysis.curves.is_empty() {
            o.push_str("<ul class=\"analysis\">");
            for c in &rec.analysis.curves {
                let _ = write!(
                    o,
                    "<li><b>{}</b>: {}</li>",
                    esc(&c.name()),
                    esc(&c.verdict.text)
                );
            }
            o.push_str("</ul>\n");
        }
    }
}

/// The whole page of `c`, the comparison of `records` (each with its name,
/// in the order compared).
pub fn render_compare_html(c: &Comparison, records: &[(String, SweepRecord)]) -> String {
    let mut o = String::new();
    let title = "ioscale comparison";
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title><style>{STYLE}</style></head><body>\n<h1>{title}</h1>\n"
    );
    let names: Vec<String> = c.names.iter().map(|n| esc(n)).collect();
    let _ = writeln!(
        o,
        "<p>{} records: {}; each against {}.</p>",
        c.names.len(),
        names.join(", "),
        names[0]
    );
    o.push_str("<section id=\"headline\"><h2>Answer</h2><ul class=\"headline\">");
    for l in summary(c) {
        let _ = write!(o, "<li>{}</li>", esc(&l));
    }
    o.push_str("</ul></section>\n");
    if !c.warnings.is_empty() {
        o.push_str("<section id=\"warnings\"><h2>Read the figures with this in mind</h2><ul>\n");
        for w in &c.warnings {
            let _ = writeln!(o, "<li class=\"warn\">{}</li>", esc(w));
        }
        o.push_str("</ul></section>\n");
    }
    o.push_str("<h2>Charts</h2><p>One line per record; error bars span each figure's 95% interval.</p><div class=\"charts\">\n");
    for (name, chart) in compare_charts(c) {
        figure(&mut o, &name, &svg::render(&chart), &chart.title);
    }
    o.push_str("</div>\n");
    let (head, rows) = table(c);
    let _ = writeln!(o, "<h2>Matched rows</h2><p>{}</p>", esc(&table_note(c)));
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    html_table(&mut o, &head, &rows);
    records_section(&mut o, records);
    o.push_str("</body></html>\n");
    o
}
