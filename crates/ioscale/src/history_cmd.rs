//! `ioscale history`: the runs every measuring command recorded, read back
//! — `list`, `show`, `trend`, `compare`, `export`, `import`, `prune`.
//! This file is the subcommand's argv and what each step writes where;
//! the `history` crate reads and judges, [`crate::history_view`] words it.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use history::{Access, Baseline, Filter, History, Prune, RunRow, Status};

use crate::exit::{Exit, Failure, REGRESSED};
use crate::history_run::{place, Place};
use crate::history_view as view;

/// Examples for `ioscale history --help`.
pub const EXAMPLES: &str = "Examples:
  # every measuring command records its run; the newest first
  ioscale run /mnt/fs
  ioscale run /mnt/fs
  ioscale history list
  ioscale history show 1
  # the newest run's figures over its earlier runs (terminal, HTML page)
  ioscale history trend --html trend.html
  # the newest run against the median of the 5 before it (exit 3: regression)
  ioscale history compare
  ioscale history compare last --run 2
  ioscale history export --format csv --output runs.csv
  ioscale history export --prometheus ioscale.prom
  # records saved before (run, sweep, fio and io500 JSON)
  ioscale run --no-history --json old.json /mnt/fs
  ioscale history import old.json
  ioscale history prune --keep 20

The file: --history FILE, else $IOSCALE_HISTORY, else
$XDG_DATA_HOME/ioscale/history.db, else ~/.local/share/ioscale/history.db.
Its tables are documented in docs/history.md; `sqlite3 FILE` reads them.
For node_exporter, write --prometheus into its textfile collector's
directory. Exit codes: 0 done, 2 usage error or unreadable history, 3
(compare) a figure regressed beyond the noise and --threshold.";

/// Examples for `ioscale history list --help`.
const LIST_EXAMPLES: &str = "Examples:
  ioscale history list
  ioscale history list --target /mnt/fs --since 7d -n 0
  ioscale history list --workload w-3f2a --status ok --format json";

/// Examples for `ioscale history show --help`.
const SHOW_EXAMPLES: &str = "Examples:
  ioscale history show
  ioscale history show 12
  # the record again, for `ioscale report`
  ioscale history show 12 --record > run12.json";

/// Examples for `ioscale history trend --help`.
const TREND_EXAMPLES: &str = "Examples:
  ioscale history trend
  ioscale history trend 12 --op write --last 20
  ioscale history trend --svg write.svg --png write.png --html trend.html";

/// Examples for `ioscale history compare --help`.
const COMPARE_EXAMPLES: &str = "Examples:
  # the newest run against the median of the 5 before it
  ioscale history compare
  ioscale history compare last
  ioscale history compare best --run 12 --threshold 5

Exit codes: 0 no regression, 3 a figure fell beyond the noise and the
threshold, 2 usage error or unreadable history.";

/// Examples for `ioscale history export --help`.
const EXPORT_EXAMPLES: &str = "Examples:
  ioscale history export > runs.jsonl
  ioscale history export --format csv --since 30d --output runs.csv
  ioscale history export --prometheus /var/lib/node_exporter/ioscale.prom";

/// Examples for `ioscale history import --help`.
const IMPORT_EXAMPLES: &str = "Examples:
  ioscale history import run.json sweep.json
  ioscale history import fio-records.json io500.json";

/// Examples for `ioscale history prune --help`.
const PRUNE_EXAMPLES: &str = "Examples:
  ioscale history prune --keep 20
  ioscale history prune --before 90d --dry-run
  ioscale history prune --status interrupted --vacuum";

/// Flags of `ioscale history`.
#[derive(Debug, Args)]
pub struct HistoryCmd {
    /// The history file [default: $IOSCALE_HISTORY, else
    /// $XDG_DATA_HOME/ioscale/history.db, else ~/.local/share/ioscale/history.db].
    #[arg(long, global = true, value_name = "FILE")]
    pub history: Option<PathBuf>,

    /// What to do.
    #[command(subcommand)]
    pub command: Step,
}

/// The steps of `ioscale history`.
#[derive(Debug, Subcommand)]
pub enum Step {
    /// The recorded runs, newest first (filter by target, workload, host, time).
    #[command(after_help = LIST_EXAMPLES)]
    List(ListArgs),
    /// One run: when, the command, workload, host and target, every figure.
    #[command(after_help = SHOW_EXAMPLES)]
    Show(ShowArgs),
    /// One figure of one workload on one target over its runs (terminal, SVG, PNG, HTML).
    #[command(after_help = TREND_EXAMPLES)]
    Trend(TrendArgs),
    /// A run against earlier runs of its workload on its target, noise-aware (exit 3 on a regression).
    #[command(after_help = COMPARE_EXAMPLES)]
    Compare(CompareArgs),
    /// The runs as JSON lines or CSV, or their latest figures in Prometheus's text format.
    #[command(after_help = EXPORT_EXAMPLES)]
    Export(ExportArgs),
    /// Add ioscale JSON records (run, meta, sweep, fio --ioscale-json, io500 --json) to the history.
    #[command(after_help = IMPORT_EXAMPLES)]
    Import(ImportArgs),
    /// Remove runs: older than a time, beyond the newest N of each workload, by status or id.
    #[command(after_help = PRUNE_EXAMPLES)]
    Prune(PruneArgs),
}

/// The runs a step reads.
#[derive(Debug, Clone, Args)]
pub struct FilterArgs {
    /// Runs on this target directory.
    #[arg(long, value_name = "PATH")]
    pub target: Option<PathBuf>,
    /// Runs of this workload (its key, or the start of it).
    #[arg(long, value_name = "KEY")]
    pub workload: Option<String>,
    /// Runs on this host.
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Runs that began at or after WHEN: 2026-11-22, 2026-11-22T10:00:00Z, or back from now: 90m, 24h, 7d, 2w.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Runs that began before WHEN (as --since).
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// Runs that ended so.
    #[arg(long, value_enum)]
    pub status: Option<StatusArg>,
}

/// A run's outcome on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusArg {
    /// Ran clean.
    Ok,
    /// I/O errors or a failed data check.
    Errors,
    /// Cut short by a signal.
    Interrupted,
}

impl From<StatusArg> for Status {
    fn from(s: StatusArg) -> Status {
        match s {
            StatusArg::Ok => Status::Ok,
            StatusArg::Errors => Status::Errors,
            StatusArg::Interrupted => Status::Interrupted,
        }
    }
}

/// Text or JSON on standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ViewFormat {
    /// For reading.
    Text,
    /// For scripts.
    Json,
}

/// Flags of `ioscale history list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    /// At most N runs (0: all).
    #[arg(long, short = 'n', default_value_t = 20, value_name = "N")]
    pub limit: usize,
    /// Format for standard output.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ViewFormat,
}

/// Flags of `ioscale history show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The run's id, or `last` (the newest).
    #[arg(default_value = "last")]
    pub run: String,
    /// Print the run's full JSON record instead (`ioscale report` reads it).
    #[arg(long)]
    pub record: bool,
    /// Format for standard output.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ViewFormat,
}

/// Flags of `ioscale history trend`.
#[derive(Debug, Args)]
pub struct TrendArgs {
    /// A run whose workload and target to follow, or `last` (the newest).
    #[arg(default_value = "last")]
    pub run: String,
    /// The operation (default: every one of the workload).
    #[arg(long, value_name = "OP")]
    pub op: Option<String>,
    /// The figure: bw_mib_s, iops, lat_p50_us, lat_p99_us, io500's score
    /// (default: each operation's headline, its bandwidth or rate).
    #[arg(long, value_name = "METRIC")]
    pub metric: Option<String>,
    /// Only the last N runs.
    #[arg(long, value_name = "N")]
    pub last: Option<usize>,
    /// Write the (first) chart as SVG to FILE.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Write the (first) chart as PNG to FILE.
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,
    /// Write every chart with its table and verdict to a self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Flags of `ioscale history compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline: median (of the last 5 earlier runs, with their
    /// spread), median:N, last, best, or a run id.
    #[arg(default_value = "median", value_parser = Baseline::parse)]
    pub baseline: Baseline,
    /// The run to judge [default: the newest].
    #[arg(long, value_name = "ID")]
    pub run: Option<i64>,
    /// How far (percent) a figure must fall, beyond the noise, to be a regression.
    #[arg(long, default_value = "10", value_name = "PCT")]
    pub threshold: f64,
    /// Format for standard output.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ViewFormat,
}

/// Formats of `ioscale history export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// One JSON object per run and line.
    Jsonl,
    /// One row per figure of a run.
    Csv,
}

/// Flags of `ioscale history export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    /// The format.
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: ExportFormat,
    /// Include each run's full record (JSON lines).
    #[arg(long)]
    pub record: bool,
    /// Write to FILE instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also write the latest figures of each workload on each target in
    /// Prometheus's text format to FILE (for node_exporter's textfile
    /// collector; replaced atomically).
    #[arg(long, value_name = "FILE")]
    pub prometheus: Option<PathBuf>,
}

/// Flags of `ioscale history import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// JSON records written by ioscale (`--json`, `--record`, `--ioscale-json`).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// Flags of `ioscale history prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Runs that began before WHEN (as list's --since: a date, a time, or 90d back from now).
    #[arg(long, value_name = "WHEN")]
    pub before: Option<String>,
    /// Keep the newest N runs of each workload on each target.
    #[arg(long, value_name = "N")]
    pub keep: Option<usize>,
    /// Runs that ended so.
    #[arg(long, value_enum)]
    pub status: Option<StatusArg>,
    /// These runs.
    #[arg(long = "id", value_name = "ID")]
    pub ids: Vec<i64>,
    /// Say how many would go, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Give the space back to the file system afterwards (rewrites the file).
    #[arg(long)]
    pub vacuum: bool,
}

/// Opens the history of `ioscale history` (for [`Access::Write`], making
/// the default file's directory when missing).
fn open(cmd: &HistoryCmd, access: Access) -> Result<History, Failure> {
    let (path, default) = match place(cmd.history.as_deref(), false) {
        Place::File { path, default } => (path, default),
        Place::Off => {
            return Err(Failure::usage(
                "IOSCALE_HISTORY=off: no history to use; give --history FILE",
            ))
        }
        Place::Nowhere(why) => return Err(Failure::Usage(why)),
    };
    if access == Access::Write && default {
        history::db::make_dir(&path).map_err(Failure::refused)?;
    }
    History::open(&path, access).map_err(Failure::refused)
}

/// Writes `bytes` to standard output (a closed pipe is no error).
fn out(bytes: &[u8]) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(bytes);
    let _ = o.flush();
}

/// `ioscale history`.
pub fn cmd_history(cmd: &HistoryCmd) -> Exit {
    match &cmd.command {
        Step::List(a) => list(cmd, a),
        Step::Show(a) => show(cmd, a),
        Step::Trend(a) => trend(cmd, a),
        Step::Compare(a) => compare(cmd, a),
        Step::Export(a) => export(cmd, a),
        Step::Import(a) => import(cmd, a),
        Step::Prune(a) => prune(cmd, a),
    }
}

/// A run named on the command line: an id or `last`.
fn run_id(db: &History, s: &str) -> Result<i64, Failure> {
    if s == "last" {
        return db.newest().map_err(Failure::refused)?.ok_or_else(|| {
            Failure::refused(format!("{}: no run recorded yet", db.path().display()))
        });
    }
    s.parse().map_err(|_| {
        Failure::usage(format!(
            "{s:?}: give a run id (see `ioscale history list`) or last"
        ))
    })
}

/// The target as the history stores it (the canonical path when it
/// exists).
fn target_key(p: &Path) -> String {
    std::fs::canonicalize(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

fn filter(a: &FilterArgs, limit: Option<usize>) -> Result<Filter, Failure> {
    let when = |flag: &str, v: &Option<String>| {
        v.as_deref()
            .map(|s| history::when::parse_now(s).map_err(|e| Failure::usage(format!("{flag} {e}"))))
            .transpose()
    };
    Ok(Filter {
        target: a.target.as_deref().map(target_key),
        workload: a.workload.clone(),
        host: a.host.clone(),
        since: when("--since", &a.since)?,
        until: when("--until", &a.until)?,
        status: a.status.map(Status::from),
        ids: Vec::new(),
        limit,
    })
}

fn json_line(v: &impl serde::Serialize) -> Result<Vec<u8>, Failure> {
    let mut b = serde_json::to_vec_pretty(v)?;
    b.push(b'\n');
    Ok(b)
}

fn list(cmd: &HistoryCmd, a: &ListArgs) -> Exit {
    let db = open(cmd, Access::Read)?;
    let rows = db
        .list(&filter(&a.filter, (a.limit > 0).then_some(a.limit))?)
        .map_err(Failure::refused)?;
    match a.format {
        ViewFormat::Json => out(&json_line(&rows)?),
        ViewFormat::Text if rows.is_empty() => eprintln!("ioscale: history: no run matches"),
        ViewFormat::Text => out(view::list_text(&rows).as_bytes()),
    }
    Ok(0)
}

fn show(cmd: &HistoryCmd, a: &ShowArgs) -> Exit {
    let db = open(cmd, Access::Read)?;
    let id = run_id(&db, &a.run)?;
    if a.record {
        let rec = db.record(id).map_err(Failure::refused)?;
        let v: serde_json::Value = serde_json::from_str(&rec)?;
        out(&json_line(&v)?);
        return Ok(0);
    }
    let row = db.run(id).map_err(Failure::refused)?;
    match a.format {
        ViewFormat::Json => out(&json_line(&row)?),
        ViewFormat::Text => out(view::show_text(&row).as_bytes()),
    }
    Ok(0)
}

fn compare(cmd: &HistoryCmd, a: &CompareArgs) -> Exit {
    if !(a.threshold > 0.0 && a.threshold < 100.0) {
        return Err(Failure::usage(format!(
            "--threshold {}: give a percentage between 0 and 100 (exclusive)",
            a.threshold
        )));
    }
    let db = open(cmd, Access::Read)?;
    let id = match a.run {
        Some(id) => id,
        None => run_id(&db, "last")?,
    };
    let run = db.run(id).map_err(Failure::refused)?;
    let j = db
        .judge(id, a.baseline, a.threshold / 100.0)
        .map_err(Failure::refused)?;
    match a.format {
        ViewFormat::Json => out(&json_line(&j)?),
        ViewFormat::Text => out(view::compare_text(&j, &run).as_bytes()),
    }
    Ok(if j.regressed() { REGRESSED } else { 0 })
}

/// Refuses, before anything is read, outputs that could not be written,
/// that name one file twice, or that would replace a history.
fn check_outputs(outputs: &[(&str, Option<&Path>)]) -> Result<(), Failure> {
    crate::output::check_output_set(outputs, &[]).map_err(|e| Failure::refused(format!("{e:#}")))
}

/// Writes a result file through the one safe-output routine.
fn write_file(flag: &str, p: &Path, bytes: &[u8]) -> Result<(), Failure> {
    crate::output::write_named(flag, p, bytes).map_err(Failure::Output)
}

fn trend(cmd: &HistoryCmd, a: &TrendArgs) -> Exit {
    check_outputs(&[
        ("--svg", a.svg.as_deref()),
        ("--png", a.png.as_deref()),
        ("--html", a.html.as_deref()),
    ])?;
    let db = open(cmd, Access::Read)?;
    let id = run_id(&db, &a.run)?;
    let run = db.run(id).map_err(Failure::refused)?;
    let mut series = db
        .series(&run.workload, &run.target)
        .map_err(Failure::refused)?;
    if let Some(n) = a.last {
        series.drain(..series.len().saturating_sub(n.max(1)));
    }
    let figures: Vec<(String, String)> = run
        .figures
        .iter()
        .filter(|f| a.op.as_ref().is_none_or(|op| *op == f.op))
        .filter(|f| match &a.metric {
            Some(m) => *m == f.metric,
            None => f.headline,
        })
        .map(|f| (f.op.clone(), f.metric.clone()))
        .collect();
    if figures.is_empty() {
        return Err(Failure::usage(format!(
            "run {id} has no figure of {} {}; `ioscale history show {id}` lists its figures",
            a.op.as_deref().unwrap_or("any operation"),
            a.metric.as_deref().unwrap_or("(headline)")
        )));
    }
    let latest = db
        .judge(
            id,
            Baseline::Median(history::judge::DEFAULT_WINDOW),
            history::judge::DEFAULT_THRESHOLD,
        )
        .map_err(Failure::refused)?;
    let mut parts = Vec::new();
    let mut text = String::new();
    for (op, metric) in &figures {
        let t = view::trend_of(&series, op, metric);
        text.push_str(&view::trend_text(&t));
        let notes: Vec<String> = latest
            .verdicts
            .iter()
            .filter(|v| v.op == *op && v.metric == *metric)
            .map(|v| {
                format!(
                    "run {id} against {}: {}",
                    latest.against,
                    v.sentence("the baseline")
                )
            })
            .collect();
        for n in &notes {
            text.push_str(&format!("  {n}\n"));
        }
        text.push('\n');
        let table = trend_table(&t);
        parts.push((t, table, notes));
    }
    out(text.as_bytes());
    write_trend_files(a, &run, &parts)
}

/// A trend's table for the HTML page.
fn trend_table(t: &charts::trend::Trend) -> charts::trend::Table {
    let head = [
        "run",
        "started (UTC)",
        t.y_label.as_str(),
        "95% interval",
        "ended",
    ]
    .map(String::from)
    .to_vec();
    let rows = t
        .points
        .iter()
        .map(|p| {
            let iv = view::interval(p.lo, p.hi);
            vec![
                p.run.to_string(),
                p.when.clone(),
                analysis::verdict::num(p.y),
                iv,
                if p.good {
                    "ok".into()
                } else {
                    "not cleanly".into()
                },
            ]
        })
        .collect();
    (head, rows)
}

/// `trend --svg/--png/--html`.
fn write_trend_files(
    a: &TrendArgs,
    run: &RunRow,
    parts: &[(charts::trend::Trend, charts::trend::Table, Vec<String>)],
) -> Exit {
    let first = &parts[0].0;
    if let Some(p) = &a.svg {
        write_file("--svg", p, charts::trend::render(first).as_bytes())?;
    }
    if let Some(p) = &a.png {
        let r = charts::Rasteriser::new();
        if r.fonts() == 0 {
            eprintln!("ioscale: warning: no system fonts found; the PNG chart will have no labels (install fonts-dejavu-core)");
        }
        let png = r
            .png(&charts::trend::render(first), 1.0)
            .map_err(|e| Failure::Output(anyhow::anyhow!("--png {}: {e}", p.display())))?;
        write_file("--png", p, &png)?;
    }
    if let Some(p) = &a.html {
        let intro = vec![
            format!("Workload {}: {}", run.workload, run.workload_text),
            format!("Target {}; runs oldest first; error bars are each run's 95% interval over its repetitions; dashed lines mark a change of host or target.", run.target),
        ];
        let page = charts::trend::render_html("ioscale history trend", &intro, parts);
        write_file("--html", p, page.as_bytes())?;
    }
    Ok(0)
}

fn export(cmd: &HistoryCmd, a: &ExportArgs) -> Exit {
    check_outputs(&[
        ("--output", a.output.as_deref()),
        ("--prometheus", a.prometheus.as_deref()),
    ])?;
    let db = open(cmd, Access::Read)?;
    let rows = db
        .list(&filter(&a.filter, None)?)
        .map_err(Failure::refused)?;
    let bytes = match a.format {
        ExportFormat::Csv => history::export::csv(&rows),
        ExportFormat::Jsonl => {
            let records = if a.record {
                rows.iter()
                    .map(|r| db.record(r.id))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(Failure::refused)?
            } else {
                Vec::new()
            };
            history::export::jsonl(&rows, &records)
        }
    };
    if let Some(p) = &a.prometheus {
        write_file("--prometheus", p, &history::export::prometheus(&rows))?;
    }
    match &a.output {
        Some(p) => write_file("--output", p, &bytes)?,
        None if a.prometheus.is_none() => out(&bytes),
        None => {}
    }
    Ok(0)
}

fn import(cmd: &HistoryCmd, a: &ImportArgs) -> Exit {
    let mut db = open(cmd, Access::Write)?;
    let (mut added, mut there) = (0usize, 0usize);
    for p in &a.files {
        let entries = entries_of_file(p).map_err(Failure::Refused)?;
        let batch = format!("import {}", p.display());
        for e in &entries {
            let i = db.insert(e, Some(&batch)).map_err(Failure::refused)?;
            if i.new {
                added += 1;
            } else {
                there += 1;
            }
        }
        eprintln!(
            "ioscale: history: {}: {} run(s)",
            p.display(),
            entries.len()
        );
    }
    eprintln!(
        "ioscale: history: {added} run(s) added to {}, {there} already there",
        db.path().display()
    );
    Ok(0)
}

fn prune(cmd: &HistoryCmd, a: &PruneArgs) -> Exit {
    let before = a
        .before
        .as_deref()
        .map(history::when::parse_now)
        .transpose()
        .map_err(|e| Failure::usage(format!("--before {e}")))?;
    let p = Prune {
        before,
        keep: a.keep,
        status: a.status.map(Status::from),
        ids: a.ids.clone(),
    };
    if p.is_empty() {
        return Err(Failure::usage(
            "say which runs to remove: --before WHEN, --keep N, --status S or --id ID",
        ));
    }
    let mut db = open(cmd, Access::Read)?;
    let n = db.prune(&p, a.dry_run).map_err(Failure::refused)?;
    if a.dry_run {
        eprintln!("ioscale: history: {n} run(s) would be removed (--dry-run: nothing removed)");
    } else {
        eprintln!(
            "ioscale: history: {n} run(s) removed from {}",
            db.path().display()
        );
        if a.vacuum {
            db.vacuum().map_err(Failure::refused)?;
        }
    }
    Ok(0)
}

/// The rows of a saved record: a run or meta record, each point of a
/// sweep, each record of fio's `--ioscale-json` list, an io500 record.
/// Read within [`safefs::MAX_RECORD_BYTES`], checked as `ioscale report`
/// checks a record; their host facts are the record's own.
fn entries_of_file(p: &Path) -> Result<Vec<history::Entry>, String> {
    #[derive(serde::Deserialize)]
    struct Head {
        #[serde(default)]
        tool: Option<String>,
        #[serde(default)]
        command: Option<serde_json::Value>,
    }
    let what = format!("{}", p.display());
    let bytes =
        safefs::read_bounded("import", p, safefs::MAX_RECORD_BYTES).map_err(|e| e.to_string())?;
    let bad = |e: &dyn std::fmt::Display| format!("{what}: {e}");
    let extra = history::Extra::default();
    let of_run =
        |rs: &report::ResultSet| history::Entry::of_run(rs, "import", &extra).map_err(|e| bad(&e));
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        let list: Vec<serde_json::Value> = serde_json::from_slice(&bytes).map_err(|e| bad(&e))?;
        return list
            .iter()
            .map(|v| {
                let b = serde_json::to_vec(v).map_err(|e| bad(&e))?;
                of_run(&report::from_json(&b).map_err(|e| bad(&e))?)
            })
            .collect();
    }
    let head: Head = serde_json::from_slice(&bytes).map_err(|e| bad(&e))?;
    if head.tool.as_deref() == Some("ioscale")
        && head.command.as_ref().and_then(|c| c.as_str()) == Some("io500")
    {
        let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| bad(&e))?;
        return Ok(vec![history::Entry::of_io500(
            &v,
            &history::entry::io500_host(&v),
            "import",
            &extra,
        )]);
    }
    match analysis::render::load(&bytes).map_err(|e| bad(&e))? {
        analysis::Loaded::Run(rs) => Ok(vec![of_run(&rs)?]),
        analysis::Loaded::Sweep(rec) => rec.points.iter().map(|pt| of_run(&pt.result)).collect(),
    }
}
