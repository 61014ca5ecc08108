//! `ioscale sweep --threads LIST -- io500 …`: the IO500 suite once per
//! task count, and how its score and each phase scale.
//!
//! Each point is a whole `ioscale io500` run with `--tasks N` (per rank
//! under MPI), its `[RESULT]` and `[SCORE ]` lines printed as it goes. At
//! the end rank 0 prints the scores per point and each phase's figure per
//! point, and writes them as JSON (every point's full io500 record) and
//! CSV. One run per point: the sweep states the ratios it measured and
//! says that, without repetitions, it cannot tell them from noise.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use coord::Coordinator;
use serde_json::{json, Value};
use spec::{parse_count, parse_list};

use crate::exit::{Exit, Failure};
use crate::job::SweepArgs;

/// The sweep flags an io500 sweep takes; any other is refused by name.
fn refuse_other_flags(a: &SweepArgs) -> Result<(), String> {
    let set: [(&str, bool); 10] = [
        ("--xfer", a.xfer.is_some()),
        ("--layout", a.layout.is_some()),
        ("--target", a.target.is_some()),
        ("--iodepth", a.iodepth.is_some()),
        ("--reps", a.reps.is_some()),
        ("--scale", a.scale.is_some()),
        ("--trim", a.trim.is_some()),
        ("--resume", a.resume),
        ("--html", a.html.is_some()),
        ("--png", a.png.is_some()),
    ];
    for (flag, given) in set {
        if given {
            return Err(format!(
                "{flag}: an `io500` sweep varies --threads (io500's --tasks) only and writes \
                 --json and --csv; {flag} is not available for it"
            ));
        }
    }
    if a.view.format != crate::args::Format::Text {
        return Err("--format: an `io500` sweep prints text; use --json FILE or --csv FILE".into());
    }
    Ok(())
}

/// The io500 words after `--` without `io500`, checked: the sweep sets
/// `--tasks` and `--json` of every point itself.
fn inner_words(a: &SweepArgs) -> Result<Vec<String>, String> {
    let words: Vec<String> = a.inner.iter().skip(1).cloned().collect();
    for w in &words {
        let flag = w.split('=').next().unwrap_or(w);
        if matches!(flag, "-t" | "--tasks") || (w.starts_with("-t") && !w.starts_with("--")) {
            return Err(format!(
                "{w}: the sweep sets io500's --tasks of each point from --threads; \
                 remove it from the io500 command"
            ));
        }
        if flag == "--json" || flag == "--resultdir-sub" {
            return Err(
                "--json: give --json FILE to sweep (before --), not to the inner io500".into(),
            );
        }
    }
    Ok(words)
}

/// The task counts of `--threads`.
fn task_counts(a: &SweepArgs) -> Result<Vec<u32>, String> {
    let v = parse_list(&a.threads, parse_count).map_err(|e| format!("--threads: {e}"))?;
    v.into_iter()
        .map(|t| match u32::try_from(t) {
            Ok(0) => Err("--threads: 0 is not a task count".to_string()),
            Ok(t) => Ok(t),
            Err(_) => Err(format!("--threads: {t} is too large")),
        })
        .collect()
}

/// One point: its task count, exit code and io500 record (when written).
struct Point {
    tasks: u32,
    code: i32,
    record: Option<Value>,
}

/// Runs the sweep on every rank; rank 0 prints and writes.
pub fn sweep(a: &SweepArgs, coord: &dyn Coordinator) -> Exit {
    let root = coord.rank() == 0;
    let (words, counts) = checked(a, coord)?;
    // Each point's record goes to a scratch directory of rank 0's (the
    // other ranks write no record).
    let scratch = if root {
        Some(crate::output::Scratch::new("ioscale-io500-sweep")?)
    } else {
        None
    };
    let stop = crate::launch::install_signals()?;
    let mut points: Vec<Point> = Vec::new();
    let mut code = 0;
    for (k, &tasks) in counts.iter().enumerate() {
        if coord.any(stop.load(Ordering::Relaxed)) {
            code = 130;
            break;
        }
        if root && !a.quiet {
            announce(k, counts.len(), tasks, coord.size());
        }
        let json_name = format!("point-{k}.json");
        // Every rank runs the same command line.
        let json_path: String = coord
            .broadcast_as(
                &scratch
                    .as_ref()
                    .map(|d| d.file(&json_name).display().to_string())
                    .unwrap_or_default(),
            )
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut argv = words.clone();
        argv.extend([
            "--tasks".to_string(),
            tasks.to_string(),
            "--json".to_string(),
            json_path,
            "--resultdir-sub".to_string(),
            format!("tasks-{tasks}"),
        ]);
        let c = point_code(super::ranks_main_quiet(&argv, coord, a.quiet), root)?;
        let record = scratch
            .as_ref()
            .and_then(|d| d.read(&json_name))
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
        points.push(Point {
            tasks,
            code: c,
            record,
        });
        if root {
            let interrupted = c == 130;
            write_outputs(a, &points, counts.len(), coord.size(), interrupted)
                .map_err(Failure::Output)?;
        }
        match c {
            0 => {}
            // A usage or setup problem (said by the point): the next
            // points would fail alike.
            2 if k == 0 => return Err(Failure::Said(2)),
            130 => {
                code = 130;
                break;
            }
            c => code = code.max(c),
        }
    }
    if root {
        // Once more at the end: an interrupt between points is recorded too.
        write_outputs(a, &points, counts.len(), coord.size(), code == 130)
            .map_err(Failure::Output)?;
        if !a.quiet {
            print!("{}", text(&points, counts.len()));
        }
    }
    Ok(code)
}

/// A point's exit code: a point that could not run is said at once, in
/// io500's name (the sweep goes on, or stops, by its code); only a
/// failure of the sweep's own machinery ends the sweep.
fn point_code(point: Exit, root: bool) -> Result<i32, Failure> {
    match point {
        Ok(c) => Ok(c),
        Err(f @ Failure::Other(_)) => Err(f),
        Err(f) if root => Ok(f.report("io500")),
        Err(f) => Ok(f.code()),
    }
}

/// The inner io500 words and the task counts, once the flags and output
/// paths are checked on rank 0.
fn checked(a: &SweepArgs, coord: &dyn Coordinator) -> Result<(Vec<String>, Vec<u32>), Failure> {
    let root = coord.rank() == 0;
    let (words, counts) = refuse_other_flags(a)
        .and_then(|()| inner_words(a))
        .and_then(|w| task_counts(a).map(|t| (w, t)))
        .map_err(Failure::usage)?;
    let mut bad = Ok(());
    if root {
        bad = crate::output::check_output_set(
            &[("--json", a.json.as_deref()), ("--csv", a.csv.as_deref())],
            &[],
        );
    }
    bench::cluster::root_check(coord, bad).map_err(|e| match e {
        Some(e) => Failure::refused(format!("{e:#}")),
        None => Failure::Said(2),
    })?;
    Ok((words, counts))
}

/// The progress line of point `k` (from 0) of `of`.
fn announce(k: usize, of: usize, tasks: u32, ranks: u32) {
    let on = if ranks > 1 {
        format!(" on {ranks} ranks ({} tasks)", tasks * ranks)
    } else {
        String::new()
    };
    eprintln!("ioscale: [point {}/{of}] io500 --tasks {tasks}{on}", k + 1);
}

/// The score of a point's record: (bw GiB/s, md kIOPS, total, valid).
fn score(r: &Value) -> Option<(f64, f64, f64, bool)> {
    let s = &r["score"];
    Some((
        s["bw_gib_s"].as_f64()?,
        s["md_kiops"].as_f64()?,
        s["total"].as_f64()?,
        s["valid"].as_bool()?,
    ))
}

/// Every phase name, in the order of the first record that has it.
fn phase_names(points: &[Point]) -> Vec<(String, String)> {
    let mut names: Vec<(String, String)> = Vec::new();
    for p in points {
        for ph in p
            .record
            .as_ref()
            .and_then(|r| r["phases"].as_array())
            .into_iter()
            .flatten()
        {
            let n = ph["name"].as_str().unwrap_or("").to_string();
            if !names.iter().any(|(m, _)| *m == n) {
                names.push((n, ph["unit"].as_str().unwrap_or("").to_string()));
            }
        }
    }
    names
}

fn phase_score(p: &Point, name: &str) -> Option<f64> {
    p.record.as_ref()?["phases"]
        .as_array()?
        .iter()
        .find(|ph| ph["name"] == name)?["score"]
        .as_f64()
}

/// The tables and the measured ratios, for standard output.
fn text(points: &[Point], total: usize) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\nio500 sweep: {} of {total} points over tasks",
        points.len()
    );
    let _ = writeln!(
        o,
        "\n{:>6} {:>10} {:>10} {:>10}",
        "tasks", "BW GiB/s", "MD kIOPS", "total"
    );
    for p in points {
        let tasks = p
            .record
            .as_ref()
            .and_then(|r| r["tasks"].as_u64())
            .unwrap_or(p.tasks.into());
        match p.record.as_ref().and_then(score) {
            Some((bw, md, tot, valid)) => {
                let _ = writeln!(
                    o,
                    "{tasks:>6} {bw:>10.6} {md:>10.6} {tot:>10.6}  {}{}",
                    if valid { "valid" } else { "INVALID" },
                    if p.code != 0 {
                        format!(" (exit {})", p.code)
                    } else {
                        String::new()
                    }
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    "{tasks:>6} {:>10} {:>10} {:>10}  no score (exit {})",
                    "-", "-", "-", p.code
                );
            }
        }
    }
    let names = phase_names(points);
    if !names.is_empty() {
        let _ = write!(o, "\n{:<22} {:<6}", "phase", "unit");
        for p in points {
            let _ = write!(o, " {:>12}", format!("tasks={}", p.tasks));
        }
        let _ = writeln!(o);
        for (n, unit) in &names {
            let _ = write!(o, "{n:<22} {unit:<6}");
            for p in points {
                match phase_score(p, n) {
                    Some(x) => {
                        let _ = write!(o, " {x:>12.6}");
                    }
                    None => {
                        let _ = write!(o, " {:>12}", "-");
                    }
                }
            }
            let _ = writeln!(o);
        }
    }
    let scored: Vec<(u32, f64)> = points
        .iter()
        .filter_map(|p| p.record.as_ref().and_then(score).map(|s| (p.tasks, s.2)))
        .collect();
    if let (Some(first), Some(last)) = (scored.first(), scored.last()) {
        if scored.len() > 1 && first.1 > 0.0 {
            let _ = writeln!(
                o,
                "\nTotal score {:.6} at {} task(s) → {:.6} at {} ({:.2}× for {:.2}× the tasks). \
                 One run per point: the sweep cannot tell these ratios from run-to-run noise; \
                 repeat the sweep to see their spread.",
                first.1,
                first.0,
                last.1,
                last.0,
                last.1 / first.1,
                f64::from(last.0) / f64::from(first.0),
            );
        }
    }
    o
}

/// The sweep record (JSON) and the CSV, rewritten after every point.
fn write_outputs(
    a: &SweepArgs,
    points: &[Point],
    total: usize,
    ranks: u32,
    interrupted: bool,
) -> anyhow::Result<()> {
    if let Some(p) = &a.json {
        let rec = json!({
            "schema": 1,
            "tool": "ioscale",
            "kind": "io500-sweep",
            "version": env!("CARGO_PKG_VERSION"),
            "command": std::env::args().collect::<Vec<_>>(),
            "ranks": ranks,
            "points_total": total,
            "interrupted": interrupted,
            "points": points.iter().map(|p| json!({
                "tasks_per_rank": p.tasks,
                "exit_code": p.code,
                "io500": p.record,
            })).collect::<Vec<_>>(),
        });
        crate::output::write_atomic(p, serde_json::to_string_pretty(&rec)?.as_bytes())?;
    }
    if let Some(p) = &a.csv {
        let mut out = String::new();
        let mut row = |cells: [&str; 7]| {
            let line: Vec<String> = cells.iter().map(|c| report::export::csv_field(c)).collect();
            out.push_str(&line.join(","));
            out.push('\n');
        };
        row([
            "tasks_per_rank",
            "tasks",
            "phase",
            "unit",
            "score",
            "valid",
            "exit_code",
        ]);
        for pt in points {
            let Some(r) = &pt.record else {
                continue;
            };
            let per = pt.tasks.to_string();
            let tasks = r["tasks"].as_u64().unwrap_or(0).to_string();
            let code = pt.code.to_string();
            for ph in r["phases"].as_array().into_iter().flatten() {
                let score = ph["score"]
                    .as_f64()
                    .map(|x| x.to_string())
                    .unwrap_or_default();
                let valid = ph["valid"].as_bool().unwrap_or(false).to_string();
                row([
                    &per,
                    &tasks,
                    ph["name"].as_str().unwrap_or(""),
                    ph["unit"].as_str().unwrap_or(""),
                    &score,
                    &valid,
                    &code,
                ]);
            }
            if let Some((bw, md, tot, valid)) = score(r) {
                let valid = valid.to_string();
                for (n, unit, x) in [
                    ("SCORE bw", "GiB/s", bw),
                    ("SCORE md", "kIOPS", md),
                    ("SCORE total", "", tot),
                ] {
                    row([&per, &tasks, n, unit, &x.to_string(), &valid, &code]);
                }
            }
        }
        let bytes = out.into_bytes();
        crate::output::write_atomic(p, &bytes)?;
    }
    Ok(())
}
