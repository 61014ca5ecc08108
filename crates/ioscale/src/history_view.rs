//! How the results history reads on a terminal and in a chart: the list
//! of runs, one run, a trend, a run against its baseline (`ioscale
//! history …`, and the lines `--baseline` prints after a run). Text and
//! charts only; what is shown comes from the `history` crate, which
//! judges.

use analysis::verdict::num;
use charts::trend::{Change, Trend, TrendPoint};
use history::{Figure, Judgement, RunRow, Status};

/// A row time as a terminal shows it: `2026-11-22 10:00:00`.
pub(crate) fn when(t: &str) -> String {
    t.replacen('T', " ", 1).trim_end_matches('Z').to_string()
}

/// A figure with its unit: `812 MiB/s`.
fn value(f: &Figure) -> String {
    format!("{} {}", num(f.value), f.unit)
        .trim_end()
        .to_string()
}

/// `lo–hi`, or `-` without an interval.
pub(crate) fn interval(lo: Option<f64>, hi: Option<f64>) -> String {
    match (lo, hi) {
        (Some(lo), Some(hi)) => format!("{}–{}", num(lo), num(hi)),
        _ => "-".into(),
    }
}

/// A run's headline figures in one cell: `write 812 MiB/s, read 2107 MiB/s`.
fn headlines(r: &RunRow) -> String {
    let cells: Vec<String> = r
        .headlines()
        .map(|f| format!("{} {}", f.op, value(f)))
        .collect();
    if cells.is_empty() {
        "(no figure: nothing completed)".into()
    } else {
        cells.join(", ")
    }
}

/// The list of runs, newest first, and what each workload key means.
pub(crate) fn list_text(rows: &[RunRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.id.to_string(),
                when(&r.started),
                r.source.clone(),
                r.status.as_str().into(),
                r.workload.clone(),
                r.target.clone(),
                headlines(r),
            ]
        })
        .collect();
    let head = [
        "id",
        "started (UTC)",
        "source",
        "status",
        "workload",
        "target",
        "figures",
    ];
    let mut out = analysis::render::layout_table(&head, &cells).join("\n") + "\n";
    let mut seen: Vec<&str> = Vec::new();
    for r in rows {
        if !seen.contains(&r.workload.as_str()) {
            if seen.is_empty() {
                out.push_str("\nworkloads:\n");
            }
            seen.push(&r.workload);
            out.push_str(&format!("  {}: {}\n", r.workload, r.workload_text));
        }
    }
    out
}

/// The host print in words.
fn host_text(r: &RunRow) -> String {
    let h = &r.host;
    let mut parts = vec![h.hostname.clone(), format!("kernel {}", h.kernel)];
    if !h.cpu_model.is_empty() {
        parts.push(h.cpu_model.clone());
    }
    if h.cpus > 0 {
        parts.push(format!("{} CPUs", h.cpus));
    }
    if h.mem_bytes > 0 {
        parts.push(format!("{} memory", spec::format_size(h.mem_bytes)));
    }
    format!("{} ({})", parts.join(", "), r.host_fingerprint)
}

/// The target print in words.
fn target_text(r: &RunRow) -> String {
    let t = &r.target_print;
    let mut parts = vec![format!("{} on {}", t.fs_type, t.fs_source)];
    if !t.device_model.is_empty() {
        parts.push(t.device_model.clone());
    }
    parts.push(t.mount_options.clone());
    if let Some(s) = t.size_bytes {
        parts.push(spec::format_size(s));
    }
    format!("{} ({})", parts.join(", "), r.target_fingerprint)
}

/// One run: its facts and every figure.
pub(crate) fn show_text(r: &RunRow) -> String {
    let facts = [
        (
            "started",
            format!("{} UTC (recorded {})", when(&r.started), when(&r.recorded)),
        ),
        ("command", charts::html::shell_words(&r.command)),
        ("source", r.source.clone()),
        ("status", r.status.as_str().into()),
        ("workload", format!("{}: {}", r.workload, r.workload_text)),
        ("target", r.target.clone()),
        ("host", host_text(r)),
        ("file system", target_text(r)),
        ("ioscale", r.version.clone()),
        ("batch", r.batch.clone().unwrap_or_default()),
    ];
    let mut out = format!("run {}\n", r.id);
    for (k, v) in facts {
        out.push_str(&format!("  {k:<12} {v}\n"));
    }
    let rows: Vec<Vec<String>> = r
        .figures
        .iter()
        .map(|f| {
            vec![
                f.op.clone(),
                f.metric.clone(),
                num(f.value),
                interval(f.lo, f.hi),
                f.unit.clone(),
                f.reps.to_string(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        out.push_str("\nfigures (95% bootstrap interval over the repetitions; - with one)\n");
        let head = ["op", "metric", "value", "interval", "unit", "reps"];
        for l in analysis::render::layout_table(&head, &rows) {
            out.push_str(&format!("  {l}\n"));
        }
    }
    out.push_str(&format!(
        "\nthe full record: ioscale history show {} --record\n",
        r.id
    ));
    out
}

/// The verdict cell of a figure.
fn word(v: &history::Verdict) -> String {
    match (v.noise, v.regressed) {
        (false, _) => "not judged (no noise measured)".into(),
        (true, true) => format!("{} (regression)", v.word),
        (true, false) => v.word.clone(),
    }
}

/// What changed and what could not be judged, then the regression line.
fn judgement_tail(j: &Judgement) -> Vec<String> {
    let mut out = Vec::new();
    if !j.changes.is_empty() {
        out.push(format!(
            "changed since the baseline's newest run: {}",
            j.changes.join("; ")
        ));
    }
    out.extend(j.warnings.iter().map(|w| format!("warning: {w}")));
    let fell: Vec<String> = j
        .verdicts
        .iter()
        .filter(|v| v.regressed)
        .map(|v| format!("{} {:.0}% lower", v.op, (1.0 - v.ratio) * 100.0))
        .collect();
    if !fell.is_empty() {
        out.push(format!(
            "regression: {} than the baseline, beyond the noise and the {:.0}% threshold (exit {})",
            fell.join(", "),
            j.threshold * 100.0,
            crate::exit::REGRESSED
        ));
    }
    out
}

/// The lines `--baseline` prints after a run (each after `TOOL: `).
pub(crate) fn gate_lines(j: &Judgement) -> Vec<String> {
    let mut out = vec![format!("history: run {} against {}:", j.run, j.against)];
    out.extend(
        j.verdicts
            .iter()
            .map(|v| format!("  {}", v.sentence("the baseline"))),
    );
    out.extend(judgement_tail(j));
    out
}

/// `ioscale history compare`: the run against its baseline, as a table
/// and a sentence per figure.
pub(crate) fn compare_text(j: &Judgement, run: &RunRow) -> String {
    let mut out = format!(
        "run {} ({}, {}) against {}\n",
        run.id,
        when(&run.started),
        charts::html::shell_words(&run.command),
        j.against
    );
    let rows: Vec<Vec<String>> = j
        .verdicts
        .iter()
        .map(|v| {
            vec![
                v.op.clone(),
                v.unit.clone(),
                num(v.baseline.value),
                interval(v.baseline.lo, v.baseline.hi),
                num(v.run.value),
                interval(v.run.lo, v.run.hi),
                format!("{:.2}", v.ratio),
                word(v),
            ]
        })
        .collect();
    if !rows.is_empty() {
        let run_col = format!("run {}", run.id);
        let head = [
            "op",
            "unit",
            "baseline",
            "spread",
            run_col.as_str(),
            "95%",
            "×",
            "verdict",
        ];
        for l in analysis::render::layout_table(&head, &rows) {
            out.push_str(&format!("  {l}\n"));
        }
        out.push_str(
            "  (a verdict needs a gap above 5% and intervals that do not overlap, as in `ioscale compare`)\n",
        );
    }
    for v in &j.verdicts {
        out.push_str(&format!("{}\n", v.sentence("the baseline")));
    }
    for l in judgement_tail(j) {
        out.push_str(&format!("{l}\n"));
    }
    out
}

/// The host or target changes before each run of `series` (oldest
/// first): `(index of the run after the change, what changed)`.
pub(crate) fn changes(series: &[RunRow]) -> Vec<(usize, String)> {
    series
        .windows(2)
        .enumerate()
        .filter_map(|(i, w)| {
            let mut c = w[1].host.changes_from(&w[0].host);
            c.extend(w[1].target_print.changes_from(&w[0].target_print));
            (!c.is_empty()).then(|| (i + 1, c.join("; ")))
        })
        .collect()
}

/// One figure's trend over `series`: the runs that have it, oldest first.
pub(crate) fn trend_of(series: &[RunRow], op: &str, metric: &str) -> Trend {
    let mut points = Vec::new();
    let mut index = Vec::new();
    for (i, r) in series.iter().enumerate() {
        if let Some(f) = r.figure(op, metric) {
            index.push(i);
            points.push(TrendPoint {
                run: r.id,
                when: when(&r.started),
                y: f.value,
                lo: f.lo,
                hi: f.hi,
                good: r.status == Status::Ok,
            });
        }
    }
    // A change before a run without the figure is drawn before the next
    // run that has it.
    let changes = changes(series)
        .into_iter()
        .filter_map(|(at, text)| {
            let at = index.iter().position(|&i| i >= at)?;
            Some(Change { at, text })
        })
        .collect();
    let unit = series
        .iter()
        .find_map(|r| r.figure(op, metric))
        .map(|f| f.unit.clone())
        .unwrap_or_default();
    let first = series.first();
    Trend {
        title: format!("{op} {metric} ({unit})"),
        subtitle: first
            .map(|r| format!("{} on {}: {}", r.workload, r.target, r.workload_text))
            .unwrap_or_default(),
        y_label: unit,
        points,
        changes,
    }
}

/// A trend as terminal lines: a row per run with its interval and a bar,
/// the changes between runs where they happened.
pub(crate) fn trend_text(t: &Trend) -> String {
    let max = t
        .points
        .iter()
        .map(|p| p.y)
        .fold(0.0f64, f64::max)
        .max(f64::MIN_POSITIVE);
    let rows: Vec<Vec<String>> = t
        .points
        .iter()
        .map(|p| {
            vec![
                p.run.to_string(),
                p.when.clone(),
                num(p.y),
                interval(p.lo, p.hi),
            ]
        })
        .collect();
    let head = ["run", "started (UTC)", t.y_label.as_str(), "95% interval"];
    let lines = analysis::render::layout_table(&head, &rows);
    let mut out = format!("{} — {}\n  {}\n", t.title, t.subtitle, lines[0]);
    for (i, (p, l)) in t.points.iter().zip(&lines[1..]).enumerate() {
        for c in t.changes.iter().filter(|c| c.at == i) {
            out.push_str(&format!("  ◆ changed: {}\n", c.text));
        }
        let bar = "█".repeat(((p.y / max) * 30.0).round().max(0.0) as usize);
        let bad = if p.good { "" } else { " (did not end cleanly)" };
        out.push_str(&format!("  {l}  {bar}{bad}\n"));
    }
    out
}
