//! The history in other tools' formats, as bytes: JSON lines (one run per
//! line, with its prints and figures, and with `--record` its full
//! record), CSV (one row per figure of a run, for a spreadsheet), and the
//! Prometheus text format (the latest figures of each workload on each
//! target, for node_exporter's textfile collector).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::Value;

use report::csv_field;

use crate::query::RunRow;

/// One run as a JSON object: its row, its prints and figures, and
/// `record` (the full record, parsed) when given.
pub fn json_of(r: &RunRow, record: Option<&str>) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
    if let (Value::Object(o), Some(rec)) = (&mut v, record) {
        o.insert(
            "record".into(),
            serde_json::from_str(rec).unwrap_or(Value::Null),
        );
    }
    v
}

/// JSON lines: one object per run of `rows` ([`json_of`]), each with the
/// record `records` gives for it (same order) when not empty.
pub fn jsonl(rows: &[RunRow], records: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let v = json_of(r, records.get(i).map(String::as_str));
        out.extend_from_slice(v.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

/// The CSV columns, in order.
pub const CSV_COLUMNS: &[&str] = &[
    "id",
    "started",
    "source",
    "status",
    "workload",
    "workload_text",
    "target",
    "hostname",
    "kernel",
    "cpu_model",
    "cpus",
    "mem_bytes",
    "fs_type",
    "fs_source",
    "device_model",
    "mount_options",
    "size_bytes",
    "host_fingerprint",
    "target_fingerprint",
    "op",
    "metric",
    "unit",
    "value",
    "lo",
    "hi",
    "reps",
    "headline",
];

/// CSV: a header, then one row per figure of each run (a run without
/// figures has one row with the figure's columns empty).
pub fn csv(rows: &[RunRow]) -> Vec<u8> {
    let mut out = CSV_COLUMNS.join(",") + "\n";
    let opt = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    for r in rows {
        let (h, t) = (&r.host, &r.target_print);
        let head = [
            r.id.to_string(),
            r.started.clone(),
            r.source.clone(),
            r.status.as_str().into(),
            r.workload.clone(),
            r.workload_text.clone(),
            r.target.clone(),
            h.hostname.clone(),
            h.kernel.clone(),
            h.cpu_model.clone(),
            h.cpus.to_string(),
            h.mem_bytes.to_string(),
            t.fs_type.clone(),
            t.fs_source.clone(),
            t.device_model.clone(),
            t.mount_options.clone(),
            t.size_bytes.map(|s| s.to_string()).unwrap_or_default(),
            r.host_fingerprint.clone(),
            r.target_fingerprint.clone(),
        ];
        let figs: Vec<[String; 8]> = if r.figures.is_empty() {
            vec![Default::default()]
        } else {
            r.figures
                .iter()
                .map(|f| {
                    [
                        f.op.clone(),
                        f.metric.clone(),
                        f.unit.clone(),
                        f.value.to_string(),
                        opt(f.lo),
                        opt(f.hi),
                        f.reps.to_string(),
                        u8::from(f.headline).to_string(),
                    ]
                })
                .collect()
        };
        for f in figs {
            let cells: Vec<String> = head.iter().chain(f.iter()).map(|c| csv_field(c)).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
    }
    out.into_bytes()
}

/// A Prometheus label value: backslash, double quote and newline escaped.
fn label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The metric family of a figure: `ioscale_bw_mib_s`, `ioscale_io500_score`.
fn family(kind: &str, metric: &str) -> String {
    let m: String = metric
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if kind == "io500" {
        format!("ioscale_io500_{m}")
    } else {
        format!("ioscale_{m}")
    }
}

/// The Prometheus text format of the latest good run of each workload on
/// each target in `rows` (newest first, as `list` gives them): one gauge
/// per figure, labelled with the workload, its description, the target,
/// the host and the operation, and `ioscale_run_started_seconds` per run.
pub fn prometheus(rows: &[RunRow]) -> Vec<u8> {
    let mut seen = BTreeSet::new();
    let latest: Vec<&RunRow> = rows
        .iter()
        .filter(|r| r.status == crate::entry::Status::Ok)
        .filter(|r| seen.insert((r.workload.clone(), r.target.clone())))
        .collect();
    let mut families: Vec<(String, String, Vec<String>)> = Vec::new();
    let mut put = |name: String, help: String, line: String| match families
        .iter_mut()
        .find(|(n, _, _)| *n == name)
    {
        Some((_, _, lines)) => lines.push(line),
        None => families.push((name, help, vec![line])),
    };
    for r in &latest {
        let base = format!(
            "workload=\"{}\",description=\"{}\",target=\"{}\",host=\"{}\"",
            label(&r.workload),
            label(&r.workload_text),
            label(&r.target),
            label(&r.host.hostname)
        );
        if let Some(t) = crate::when::epoch_seconds(&r.started) {
            put(
                "ioscale_run_started_seconds".into(),
                "When the latest recorded run of the workload began (Unix time).".into(),
                format!("ioscale_run_started_seconds{{{base},run=\"{}\"}} {t}", r.id),
            );
        }
        for f in &r.figures {
            let name = family(&r.kind, &f.metric);
            let help = format!(
                "ioscale's {} of the latest recorded run ({}).",
                f.metric, f.unit
            );
            let line = format!("{name}{{{base},op=\"{}\"}} {}", label(&f.op), f.value);
            put(name, help, line);
        }
    }
    let mut out = String::new();
    for (name, help, lines) in families {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped_and_families_named() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(family("run", "bw_mib_s"), "ioscale_bw_mib_s");
        assert_eq!(family("io500", "score"), "ioscale_io500_score");
        assert_eq!(family("meta", "lat-p50"), "ioscale_lat_p50");
    }
}
