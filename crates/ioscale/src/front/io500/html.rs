//! The HTML report of an io500 record (`ioscale io500 --html FILE`, or
//! `ioscale report RECORD.json --html FILE` later): the score first, then
//! what makes it invalid, a chart per score group, each phase's figures
//! (latency percentiles, CPU, tasks and ranks) and, per phase, what its
//! measurements say about its limit. Self-contained: inline SVG with a
//! `<title>` on every bar, no scripts.

use std::fmt::Write as _;

use serde_json::Value;

/// Escapes text for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// What a table shows for a figure the record has as `null`.
const NOT_MEASURED: &str = "not measured";

/// A figure with `prec` decimals, or [`NOT_MEASURED`] when the record
/// has none (the timestamp phase's latencies, a failed phase's).
fn shown(v: &Value, prec: usize) -> String {
    match v.as_f64() {
        Some(x) => format!("{x:.prec$}"),
        None => NOT_MEASURED.into(),
    }
}

/// Refuses a figure no io500 run gives, as a record edited or damaged
/// after the run may hold (the record is read as JSON values, so each
/// figure is looked at here): the scores, and each phase's durations,
/// rates, CPU times and latencies, finite and not negative; each phase's
/// measured resources as [`probe::Resources::check`] has them. Returns
/// the field, its value and why.
pub fn check_figures(rec: &Value) -> Result<(), String> {
    let bad = |field: String, v: &Value, why: &str| Err(format!("{field} = {v}: {why}"));
    let real = |field: String, v: &Value| match v {
        Value::Null => Ok(()),
        Value::Number(n) if n.as_f64().is_some_and(|x| x.is_finite() && x >= 0.0) => Ok(()),
        _ => bad(field, v, "must be a finite number, not negative"),
    };
    for part in ["total", "bw_gib_s", "md_kiops"] {
        for score in ["score", "scorex"] {
            real(format!("{score}.{part}"), &rec[score][part])?;
        }
    }
    for (i, ph) in rec["phases"].as_array().into_iter().flatten().enumerate() {
        for name in [
            "elapsed_s",
            "score",
            "bw_mib_s",
            "iops",
            "cpu_user_s",
            "cpu_sys_s",
        ] {
            real(format!("phases[{i}].{name}"), &ph[name])?;
        }
        for (k, v) in ph["lat_us"].as_object().into_iter().flatten() {
            real(format!("phases[{i}].lat_us.{k}"), v)?;
        }
        if ph["resources"].is_null() {
            continue;
        }
        let r: probe::Resources = serde_json::from_value(ph["resources"].clone())
            .map_err(|e| format!("phases[{i}].resources: not a measurement ioscale writes: {e}"))?;
        r.check()
            .map_err(|b| format!("phases[{i}].resources.{} = {}: {}", b.field, b.value, b.why))?;
    }
    Ok(())
}

/// Whether `rec` is an io500 record (as `ioscale io500 --json` writes).
pub fn is_io500(rec: &Value) -> bool {
    rec["command"] == "io500" && rec["tool"] == "ioscale" && rec["phases"].is_array()
}

/// (fewest, most) items of one phase's tasks, and of its ranks.
fn spread(ph: &Value, tasks_per_rank: u64) -> Option<((u64, u64), (u64, u64))> {
    let tasks = ph["tasks"].as_array()?;
    if tasks.is_empty() {
        return None;
    }
    let items: Vec<u64> = tasks
        .iter()
        .map(|t| t["items"].as_u64().unwrap_or(0))
        .collect();
    let per = tasks_per_rank.max(1) as usize;
    let ranks: Vec<u64> = items
        .chunks(per)
        .map(|c| c.iter().fold(0u64, |a, n| a.saturating_add(*n)))
        .collect();
    let mm = |v: &[u64]| (*v.iter().min().unwrap_or(&0), *v.iter().max().unwrap_or(&0));
    Some((mm(&items), mm(&ranks)))
}

/// What one phase's measurements say about its limit, in words; each
/// sentence names the figure it rests on.
pub fn limit_of(ph: &Value, rec: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let elapsed = f(&ph["elapsed_s"]);
    let name = ph["name"].as_str().unwrap_or("");
    if name == "timestamp" {
        return out;
    }
    if elapsed < 0.5 {
        out.push(format!(
            "Ran {elapsed:.3} s: too short to tell what limited it (the rules' phases run for minutes)."
        ));
        return out;
    }
    let busy = (f(&ph["cpu_user_s"]) + f(&ph["cpu_sys_s"])) / elapsed;
    let ranks = rec["ranks"].as_u64().unwrap_or(1) as u32;
    let tasks = rec["tasks"].as_u64().unwrap_or(1) as u32;
    let resources: Option<probe::Resources> = serde_json::from_value(ph["resources"].clone()).ok();
    match resources {
        Some(r) => {
            // The same rules as a sweep point's limit (docs/analysis.md),
            // on rank 0's node.
            let ctx = analysis::findings::Context {
                cpus: r.cpus,
                fs_type: r.fs_type.clone(),
            };
            let p = analysis::findings::CurvePoint {
                threads: tasks,
                ranks,
                threads_per_rank: tasks / ranks.max(1),
                value: f(&ph["score"]),
                elapsed_s: elapsed,
                iops: f(&ph["iops"]),
                cpu_busy: busy,
                lat_p50_us: f(&ph["lat_us"]["p50"]),
                lat_p99_us: f(&ph["lat_us"]["p99"]),
                resources: Some(r),
                ..Default::default()
            };
            let l = analysis::findings::limiter(std::slice::from_ref(&p), &ctx);
            out.push(format!(
                "Limited by {}{}.",
                l.figure,
                if ranks > 1 {
                    " (measured on rank 0's node)"
                } else {
                    ""
                }
            ));
        }
        None => out.push(format!(
            "Not measured: the record has no resource measurements (ioscale used {busy:.2} CPUs)."
        )),
    }
    let tpr = rec["tasks_per_rank"].as_u64().unwrap_or(1);
    if let Some(((lo, hi), (rlo, rhi))) = spread(ph, tpr) {
        if lo > 0 && hi as f64 > 1.25 * lo as f64 {
            out.push(format!(
                "Uneven tasks: the slowest task did {lo} items, the fastest {hi} ({:.2}×).",
                hi as f64 / lo as f64
            ));
        }
        if ranks > 1 && rlo > 0 && rhi as f64 > 1.25 * rlo as f64 {
            out.push(format!(
                "Uneven ranks: {rlo} to {rhi} items per rank ({:.2}×).",
                rhi as f64 / rlo as f64
            ));
        }
    }
    out
}

/// A horizontal bar chart of the phases of one group.
fn chart(title: &str, unit: &str, bars: &[(String, f64, bool)]) -> String {
    let mut s = String::new();
    if bars.is_empty() {
        return s;
    }
    let max = bars.iter().map(|b| b.1).fold(0.0f64, f64::max);
    let row = 28.0;
    let (label_w, plot_w) = (190.0, 700.0);
    let h = 50.0 + row * bars.len() as f64;
    let _ = write!(
        s,
        r#"<figure><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="100%" role="img" aria-label="{t}">
<text x="{label_w}" y="18" font-size="15" font-weight="bold">{t} ({u})</text>
"#,
        w = label_w + plot_w + 120.0,
        t = esc(title),
        u = esc(unit)
    );
    for (k, (name, v, valid)) in bars.iter().enumerate() {
        let y = 32.0 + row * k as f64;
        let w = if max > 0.0 { plot_w * v / max } else { 0.0 };
        let fill = if *valid { "#3b6fb6" } else { "#b0b8c4" };
        let _ = writeln!(
            s,
            r#"<text x="{lx}" y="{ty}" font-size="13" text-anchor="end">{n}</text><rect x="{label_w}" y="{y}" width="{w:.1}" height="20" fill="{fill}"><title>{n}: {v:.6} {u}{inv}</title></rect><text x="{vx:.1}" y="{ty}" font-size="12">{v:.3}{inv}</text>"#,
            lx = label_w - 8.0,
            ty = y + 15.0,
            n = esc(name),
            u = esc(unit),
            inv = if *valid { "" } else { " (invalid)" },
            vx = label_w + w + 6.0,
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{label_w}" y="{yy}" font-size="12">{u}; grey: the phase is invalid</text></svg></figure>"#,
        yy = h - 4.0,
        u = esc(unit)
    );
    s
}

/// The report as one HTML page.
pub fn render(rec: &Value) -> String {
    let mut s = String::new();
    let phases: Vec<&Value> = rec["phases"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    headline(&mut s, rec);
    warnings(&mut s, rec, &phases);
    for (group, title, unit) in [
        ("BW", "Bandwidth phases", "GiB/s"),
        ("MD", "Metadata phases", "kIOPS"),
    ] {
        let bars: Vec<(String, f64, bool)> = phases
            .iter()
            .filter(|p| p["group"] == group)
            .map(|p| {
                (
                    p["name"].as_str().unwrap_or("").to_string(),
                    f(&p["score"]),
                    p["valid"] == true,
                )
            })
            .collect();
        s.push_str(&chart(title, unit, &bars));
    }
    phase_table(&mut s, rec, &phases);
    node_table(&mut s, rec, &phases);
    s.push_str("<h2>What limited each phase</h2>\n<ul>\n");
    for ph in &phases {
        let lines = limit_of(ph, rec);
        if lines.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            "<li><b>{}</b>: {}</li>",
            esc(ph["name"].as_str().unwrap_or("")),
            esc(&lines.join(" "))
        );
    }
    s.push_str("</ul>\n</body></html>\n");
    s
}

/// Under MPI: each phase's ranks, items and rate on every node, from the
/// tasks' own figures and the host of each rank.
fn node_table(s: &mut String, rec: &Value, phases: &[&Value]) {
    let hosts: Vec<&str> = rec["rank_hosts"]
        .as_array()
        .map(|a| a.iter().filter_map(|h| h.as_str()).collect())
        .unwrap_or_default();
    if hosts.len() <= 1 {
        return;
    }
    let tpr = rec["tasks_per_rank"].as_u64().unwrap_or(1).max(1);
    let mut nodes: Vec<&str> = Vec::new();
    for h in &hosts {
        if !nodes.contains(h) {
            nodes.push(h);
        }
    }
    s.push_str(
        "<h2>Per node</h2>\n<table><tr><th>phase</th><th>node</th><th>ranks</th>\
         <th>items</th><th>rate</th></tr>\n",
    );
    for ph in phases {
        let Some(tasks) = ph["tasks"].as_array().filter(|t| !t.is_empty()) else {
            continue;
        };
        let el = f(&ph["elapsed_s"]);
        let data = ph["unit"] == "GiB/s";
        for node in &nodes {
            let on = |t: &&Value| {
                let rank = t["task"].as_u64().unwrap_or(0) / tpr;
                hosts.get(rank as usize) == Some(node)
            };
            let sum = |k: &str| -> u64 {
                tasks
                    .iter()
                    .filter(on)
                    .map(|t| t[k].as_u64().unwrap_or(0))
                    .sum()
            };
            let rate = if el <= 0.0 {
                "".to_string()
            } else if data {
                format!(
                    "{:.1} MiB/s",
                    sum("bytes") as f64 / el / (1u64 << 20) as f64
                )
            } else {
                format!("{:.0} ops/s", sum("ops") as f64 / el)
            };
            let _ = writeln!(
                *s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(ph["name"].as_str().unwrap_or("")),
                esc(node),
                hosts.iter().filter(|h| *h == node).count(),
                sum("items"),
                rate
            );
        }
    }
    s.push_str("</table>\n");
}

/// The page's head, title and the score line.
fn headline(s: &mut String, rec: &Value) {
    let sc = &rec["score"];
    let valid = sc["valid"].as_bool().unwrap_or(false);
    let _ = write!(
        *s,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>IO500 {ver} — ioscale</title>
<style>body{{font-family:sans-serif;margin:1.5em;max-width:1400px}}table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:3px 7px;text-align:right}}td:first-child,th:first-child{{text-align:left}}.warn{{background:#fff4d6;border-left:4px solid #e0a800;padding:.5em 1em}}.headline{{font-size:1.3em}}</style></head><body>
<h1>IO500 {ver}, run by ioscale {iv}</h1>
"#,
        ver = esc(rec["io500"].as_str().unwrap_or("")),
        iv = esc(rec["version"].as_str().unwrap_or("")),
    );
    let _ = writeln!(
        *s,
        "<p class=\"headline\"><b>Score {:.6}</b> (bandwidth {:.6} GiB/s, metadata {:.6} kIOPS): <b>{}</b>, \
         {} task(s) on {} rank(s), stonewall {} s.</p>",
        f(&sc["total"]),
        f(&sc["bw_gib_s"]),
        f(&sc["md_kiops"]),
        if valid { "valid" } else { "INVALID" },
        rec["tasks"].as_u64().unwrap_or(0),
        rec["ranks"].as_u64().unwrap_or(0),
        rec["stonewall_s"].as_u64().map_or("?".into(), |x| x.to_string()),
    );
}

/// Why the run is invalid, an interrupt, and failed phases, as a banner.
fn warnings(s: &mut String, rec: &Value, phases: &[&Value]) {
    let sc = &rec["score"];
    let mut warns: Vec<String> = sc["invalid_reasons"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str().map(|r| format!("Invalid: {r}")))
        .collect();
    if rec["interrupted"] == true {
        warns.push(
            "Interrupted: the phases after the interrupt did not run; the score is invalid.".into(),
        );
    }
    for ph in phases {
        let bad = ph["bad_bytes"].as_u64().unwrap_or(0);
        let errs = ph["tasks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| !t["error"].is_null())
            .count();
        if bad > 0 || errs > 0 {
            warns.push(format!(
                "{}: {errs} task(s) failed, {bad} bad bytes.",
                ph["name"].as_str().unwrap_or("")
            ));
        }
    }
    if !warns.is_empty() {
        s.push_str("<div class=\"warn\"><ul>\n");
        for w in &warns {
            let _ = writeln!(*s, "<li>{}</li>", esc(w));
        }
        s.push_str("</ul></div>\n");
    }
}

/// The table of every phase's figures.
fn phase_table(s: &mut String, rec: &Value, phases: &[&Value]) {
    s.push_str(
        "<h2>Phases</h2>\n<table><tr><th>phase</th><th>score</th><th>unit</th><th>time s</th><th>ops</th>\
         <th>MiB/s</th><th>IOPS</th><th>p50 µs</th><th>p99 µs</th><th>max µs</th><th>CPU s (user+sys)</th>\
         <th>items per task (min–max)</th><th>valid</th></tr>\n",
    );
    let tpr = rec["tasks_per_rank"].as_u64().unwrap_or(1);
    for ph in phases {
        let l = &ph["lat_us"];
        let items = spread(ph, tpr).map_or("".into(), |((lo, hi), _)| format!("{lo}–{hi}"));
        let cpu = match (ph["cpu_user_s"].as_f64(), ph["cpu_sys_s"].as_f64()) {
            (Some(u), Some(y)) => format!("{:.3}", u + y),
            _ => NOT_MEASURED.into(),
        };
        let _ = writeln!(
            *s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{cpu}</td><td>{}</td><td>{}</td></tr>",
            esc(ph["name"].as_str().unwrap_or("")),
            shown(&ph["score"], 6),
            esc(ph["unit"].as_str().unwrap_or("")),
            f(&ph["elapsed_s"]),
            shown(&ph["ops"], 0),
            shown(&ph["bw_mib_s"], 1),
            shown(&ph["iops"], 0),
            shown(&l["p50"], 1),
            shown(&l["p99"], 1),
            shown(&l["max"], 1),
            items,
            if ph["valid"] == true { "yes" } else { "no" },
        );
    }
    s.push_str("</table>\n");
}

/// `ioscale report` of an io500 record: the summary on standard output and
/// `--html`; `None` when the file is not an io500 record (the usual
/// report reads it).
pub fn report(args: &crate::args::ReportArgs) -> Option<crate::exit::Exit> {
    use crate::exit::Failure;
    // Whether it is an io500 record, from its top-level `command` and
    // `tool` alone, parsed as a stream: any other record is left to the
    // streaming reader without ever being held as text or JSON values.
    #[derive(serde::Deserialize)]
    struct Head {
        #[serde(default)]
        command: Option<Value>,
        #[serde(default)]
        tool: Option<Value>,
    }
    let (f, _) = safefs::open_bounded("FILE", &args.file, safefs::MAX_RECORD_BYTES).ok()?;
    let head: Head = serde_json::from_reader(std::io::BufReader::new(f)).ok()?;
    if head.command.as_ref().and_then(Value::as_str) != Some("io500")
        || head.tool.as_ref().and_then(Value::as_str) != Some("ioscale")
    {
        return None;
    }
    let bytes = safefs::read_bounded("FILE", &args.file, safefs::MAX_RECORD_BYTES).ok()?;
    let rec: Value = serde_json::from_slice(&bytes).ok()?;
    if !is_io500(&rec) {
        return None;
    }
    if let Err(e) = check_figures(&rec) {
        return Some(Err(Failure::Refused(format!(
            "{}: {e}; the record was changed or damaged after the run",
            args.file.display()
        ))));
    }
    for (flag, given) in [("--csv", args.csv.is_some()), ("--png", args.png.is_some())] {
        if given {
            return Some(Err(Failure::usage(format!(
                "{flag}: an io500 record has its CSV-like results in its \
                 resultdir; `report` writes its --html and prints its summary"
            ))));
        }
    }
    if args.view.format != crate::args::Format::Text {
        return Some(Err(Failure::usage(
            "--format: an io500 record is reported as text (and --html)",
        )));
    }
    if let Some(p) = &args.html {
        if let Err(e) = crate::output::check_output_path("--html", p)
            .and_then(|()| crate::output::write_atomic(p, render(&rec).as_bytes()))
        {
            return Some(Err(Failure::Output(e)));
        }
    }
    if !args.quiet {
        print!("{}", summary(&rec));
    }
    Some(Ok(0))
}

/// The score and each phase's figure and limit, as text.
pub fn summary(rec: &Value) -> String {
    let mut s = String::new();
    let sc = &rec["score"];
    let _ = writeln!(
        s,
        "IO500 {}: score {:.6} (bandwidth {:.6} GiB/s, metadata {:.6} kIOPS) {}",
        rec["io500"].as_str().unwrap_or(""),
        f(&sc["total"]),
        f(&sc["bw_gib_s"]),
        f(&sc["md_kiops"]),
        if sc["valid"] == true {
            "valid"
        } else {
            "INVALID"
        }
    );
    for ph in rec["phases"].as_array().into_iter().flatten() {
        let _ = writeln!(
            s,
            "  {:<22} {:>12.6} {:<6} {}",
            ph["name"].as_str().unwrap_or(""),
            f(&ph["score"]),
            ph["unit"].as_str().unwrap_or(""),
            limit_of(ph, rec).join(" ")
        );
    }
    s
}
