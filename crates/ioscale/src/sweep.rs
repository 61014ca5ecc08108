//! `ioscale sweep`: one job at many thread counts (× transfer sizes ×
//! layouts × targets), with statistics per point and the analysis.
//!
//! The inner command (`-- run …` or `-- meta …`) is parsed once, by the
//! very clap definitions of `ioscale run`/`meta`, into its typed request;
//! each point sets the request's typed fields it varies (threads, transfer
//! size, layout, target, depth, and the size per worker under `--scale
//! total`; no argv text is edited or parsed again) and builds the point's
//! workload, checked like any command line. The points of one thread count
//! run as one plan on the executor (`bench::exec`), one stage per point,
//! their repetitions taking turns, so a sweep point is exactly the run a
//! user would have typed. After every finished point the whole record is written
//! to `--json` again (temporary file, then rename), which is what makes an
//! interrupted sweep resumable: `--resume` reads it back, checks that the
//! arguments are the same, and runs only the points that are missing.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use analysis::adapt::{Axis, RepsAuto, ThreadsAuto};
use analysis::model::{default_trim, point_stats_probed};
use analysis::render::render_json;
use analysis::{SweepConfig, SweepPoint, SweepRecord, SWEEP_SCHEMA};
use bench::exec::Env;
use bench::plan::{Plan, Stage, Step, Work};
use clap::Parser;
use coord::Coordinator;
use spec::{format_size, parse_count, parse_list, parse_size, Layout};

use crate::args::Format;
use crate::emit::Outputs;
use crate::exit::{Exit, Failure};
use crate::job::{JobCli, JobCommand, Scale, SweepArgs};
use crate::progress::{Display, ProgressMode};

mod adaptive;
mod nodes;

/// Examples for `ioscale sweep --help`.
pub const SWEEP_EXAMPLES: &str = "Examples:
  # how many threads this storage needs, searched (doubling, then refining
  # to the smallest count within noise of the peak), each point repeated
  # until its 95% interval is within ±5% (at most 10 times)
  ioscale sweep --threads auto:16 --reps auto --json auto.json \\
      -- run --op write --xfer 1m --size 64m --direct /mnt/efs

  # seed 000 (EFS workshop, IOR): 2 GiB in all, 1..64 threads, three layouts,
  # O_DIRECT
  ioscale sweep --threads 1..64x2 --layout shared,per-thread,per-thread-dir \\
      --scale total --json efs.json --html efs.html --png efs-charts \\
      -- run --op write --xfer 1m --total 2g --direct /mnt/efs

  # seed 001 (dd): EBS against EFS, 1 MiB and 16 MiB, O_SYNC writes
  ioscale sweep --threads 1,4,16 --xfer 1m,16m --target /ebs,/efs \\
      --scale total -- run --op write --total 2g --sync each

  # seed 003 (smallfile): 1024 files of 4 KiB in all, same directory or one
  # per thread
  ioscale sweep --threads 1..32x2 --layout same-dir,per-thread-dir \\
      --scale total -- meta --op create --files 1024 --file-size 4k /mnt/efs

  # seed 004 (Flux7): 10 repetitions, trimmed mean of the middle 6
  ioscale sweep --threads 1..13 --reps 10 --trim 2 \\
      -- run --op write,read,rw,randrw --size 256m --direct /mnt/ssd

  # continue seed 000 after Ctrl-C: the same line with --resume added (at
  # the end works too)
  ioscale sweep --threads 1..64x2 --layout shared,per-thread,per-thread-dir \\
      --scale total --json efs.json --html efs.html --png efs-charts \\
      --resume -- run --op write --xfer 1m --total 2g --direct /mnt/efs

  # io500: the whole suite once per task count, and how its score scales
  ioscale sweep --threads 1,2,4 --json io500.json -- io500 config.ini

  # under sbatch: one log line per finished phase and point (the default
  # when standard error is not a terminal)
  ioscale sweep --progress plain --threads 1..16x2 --json s.json \\
      -- run --op write --total 2g /shared/fs";

/// A usage problem: printed, exit 2.
struct Usage(String);

/// What a point moves in all its timed phases and repetitions: bytes
/// for `run`, files for `meta` (one unit per sweep, whose points are all
/// one kind).
fn moved(work: &Work) -> f64 {
    match work {
        Work::Data(w) => w.total_bytes() as f64 * w.ops.len() as f64 * f64::from(w.reps),
        Work::Meta(m) => {
            m.files as f64 * f64::from(m.threads) * m.ops.len() as f64 * f64::from(m.reps)
        }
        _ => 0.0,
    }
}

/// One point, planned before anything runs so every bad combination is
/// refused up front.
struct Planned {
    threads: u32,
    xfer: u64,
    layout: String,
    target: String,
    series: String,
    /// Files each worker makes (metadata: its files; data: its own
    /// file), or `None` for the one file every worker shares.
    files_per_worker: Option<u64>,
    dir_per_file: bool,
    bytes_per_thread: u64,
    /// The point's validated workload: its step.
    work: Work,
}

/// The sweep's parameters after parsing.
struct Sweep {
    config: SweepConfig,
    points: Vec<Planned>,
    /// The inner command asked for every worker's row (`--per-worker`):
    /// under MPI each point gathers every worker's sample to rank 0;
    /// otherwise one merged summary per node (and per rank) reaches it.
    per_worker: bool,
    /// The inner command's `--interval`: each timed phase's series.
    interval: bench::interval::Interval,
    /// The inner command's `--steady`: each timed phase ends once steady.
    steady: Option<bench::steady::Steady>,
}

fn usage<T>(msg: impl Into<String>) -> Result<T, Usage> {
    Err(Usage(msg.into()))
}

/// Parses the inner command with the `ioscale` definitions. A missing
/// TARGET is filled with `target` when the sweep names targets itself.
fn parse_inner(inner: &[String], target: Option<&str>) -> Result<JobCommand, Usage> {
    let argv = std::iter::once("ioscale".to_string()).chain(inner.iter().cloned());
    match JobCli::try_parse_from(argv) {
        Ok(c) => Ok(c.command),
        Err(e) => {
            if let (Some(t), clap::error::ErrorKind::MissingRequiredArgument) = (target, e.kind()) {
                let mut with = inner.to_vec();
                with.push(t.to_string());
                return parse_inner(&with, None);
            }
            // clap's first line, and its did-you-mean tip when it has one.
            let text = e.to_string();
            let tip = text
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("tip:"))
                .map(|t| format!("\n  {t}"))
                .unwrap_or_default();
            usage(format!(
                "the command after -- ({}): {}{tip}",
                inner.join(" "),
                text.lines().next().unwrap_or("invalid")
            ))
        }
    }
}

/// The values of a swept dimension, or the inner command's own when not
/// swept (`None` in the list means "leave as the inner command has it").
fn dim<T: Clone>(v: &[T]) -> Vec<Option<T>> {
    if v.is_empty() {
        vec![None]
    } else {
        v.iter().cloned().map(Some).collect()
    }
}

/// The swept lists as given on the command line, checked.
struct Lists {
    threads: Vec<u32>,
    xfers: Vec<u64>,
    layouts: Vec<String>,
    targets: Vec<String>,
    depths: Vec<u32>,
}

/// A comma list of words (`--layout`, `--target`), empty items dropped.
fn words(s: &Option<String>) -> Vec<String> {
    s.as_deref()
        .map(|s| {
            s.split(',')
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// A list of counts for `flag`, each at least 1 and within u32.
fn counts(flag: &str, what: &str, s: &str) -> Result<Vec<u32>, Usage> {
    parse_list(s, parse_count)
        .map_err(|e| Usage(format!("{flag}: {e}")))?
        .into_iter()
        .map(|n| match u32::try_from(n) {
            Ok(0) => usage(format!("{flag}: 0 is not a {what}")),
            Ok(n) => Ok(n),
            Err(_) => usage(format!("{flag}: {n} is too large")),
        })
        .collect()
}

impl Lists {
    fn parse(args: &SweepArgs) -> Result<Lists, Usage> {
        let xfers = match &args.xfer {
            // Every size the search may try, in order.
            Some(x) => match xfer_auto(args)? {
                Some((rule, Axis::Xfer { unit })) => analysis::adapt::xfer_sizes(&rule, unit),
                _ => parse_list(x, parse_size).map_err(|e| Usage(format!("--xfer: {e}")))?,
            },
            None => Vec::new(),
        };
        let depths = match &args.iodepth {
            Some(d) => counts("--iodepth", "queue depth", d)?,
            None => Vec::new(),
        };
        let threads = match ThreadsAuto::parse(&args.threads).map_err(Usage)? {
            Some(a) if a.max > AUTO_MAX => {
                return usage(format!(
                    "--threads {}: a search tries at most {AUTO_MAX} threads",
                    args.threads
                ))
            }
            // Every count the search may try, in order.
            Some(a) => (a.start..=a.max).collect(),
            None => counts("--threads", "thread count", &args.threads)?,
        };
        let lists = Lists {
            threads,
            xfers,
            layouts: words(&args.layout),
            targets: words(&args.target),
            depths,
        };
        once("--threads", &lists.threads)?;
        once("--xfer", &lists.xfers)?;
        once("--iodepth", &lists.depths)?;
        once("--layout", &lists.layouts)?;
        once("--target", &lists.targets)?;
        Ok(lists)
    }
}

/// Refuses a value given twice in a swept list: it would measure one
/// point twice as two, and the analysis would set the point against
/// itself ("no clear difference between 2 workers and 2 workers" of
/// `--threads 2,2`).
fn once<T: PartialEq + std::fmt::Debug>(flag: &str, list: &[T]) -> Result<(), Usage> {
    match (1..list.len()).find(|&i| list[..i].contains(&list[i])) {
        Some(i) => usage(format!(
            "{flag}: {:?} is given twice (each value is one point of the sweep)",
            list[i]
        )),
        None => Ok(()),
    }
}

/// Refuses output flags given to the inner `run` or `meta` (`inner`):
/// the sweep owns them.
fn sweeps_own(
    record: &crate::args::RecordFiles,
    shown: &crate::args::Shown,
    history: &crate::history_run::HistoryArgs,
    inner: &str,
) -> Result<(), Usage> {
    if history.any() {
        return usage(format!(
            "give --history, --no-history, --baseline and --threshold to sweep (before --), not to the inner {inner}"
        ));
    }
    if record.json.is_some()
        || record.csv.is_some()
        || record.over_time.series_csv.is_some()
        || shown.quiet
        || shown.format != Format::Text
    {
        return usage(format!(
            "give --json, --csv, --series-csv, --format and --quiet to sweep (before --), not to \
             the inner {inner}"
        ));
    }
    if shown.progress != ProgressMode::Auto {
        return usage(format!(
            "give --progress to sweep (before --), not to the inner {inner}"
        ));
    }
    Ok(())
}

/// What kind of job the inner command is (`run`, `meta`, `fio`), its own
/// repetitions and whether it gives a `--total`; refuses inner flags the
/// sweep owns and swept lists the job cannot take.
fn inner_kind(
    inner: &JobCommand,
    lists: &Lists,
    args: &SweepArgs,
) -> Result<(&'static str, String, bool), Usage> {
    match inner {
        JobCommand::Run(r) => {
            sweeps_own(&r.record, &r.shown, &r.history, "run")?;
            Ok(("run", r.reps.clone(), r.total.is_some()))
        }
        JobCommand::Meta(m) => {
            sweeps_own(&m.record, &m.shown, &m.history, "meta")?;
            if !lists.xfers.is_empty() {
                return usage("--xfer applies to `run` sweeps; a `meta` job has no transfer size (sweep --layout or --threads)");
            }
            Ok(("meta", m.reps.clone(), false))
        }
        JobCommand::Fio { .. } => {
            // A fio job sweeps numjobs: its size= is per clone, and its
            // file names come from the job.
            if !lists.xfers.is_empty() || !lists.layouts.is_empty() || !lists.targets.is_empty() {
                return usage("a `fio` sweep varies --threads (fio's numjobs) only; change bs=, directory= in the job file");
            }
            if args.scale == Some(Scale::Total) {
                return usage("--scale total: a fio job's size= is per clone (numjobs); a `fio` sweep keeps it (per-thread)");
            }
            Ok(("fio", "1".to_string(), false))
        }
        _ => usage(
            "sweep runs `run` or `meta` (or a `fio` job, or `io500`): ioscale sweep --threads 1..16x2 -- run --op write /mnt/fs",
        ),
    }
}

/// Refuses a `--layout` value the job kind does not have.
fn check_layouts(kind: &str, layouts: &[String]) -> Result<(), Usage> {
    for l in layouts {
        let ok = match kind {
            "run" => Layout::parse(l).is_some(),
            _ => matches!(l.as_str(), "same-dir" | "per-thread-dir"),
        };
        if !ok {
            return usage(format!(
                "--layout: unknown layout '{l}' for `{kind}' (use {})",
                if kind == "run" {
                    "shared, per-thread, per-thread-dir"
                } else {
                    "same-dir, per-thread-dir"
                }
            ));
        }
    }
    Ok(())
}

/// The most threads `--threads auto:MAX` may try: every count up to it
/// is planned (and checked) before the first point runs.
const AUTO_MAX: u32 = 4096;

/// `--xfer auto[:MIN-MAX]`: the search over sizes and its axis, refused
/// beside `--threads auto` (one axis is searched at a time). Every size
/// it may try is planned and checked before the first point runs: at
/// most four a doubling over a u32 of counts, so about 130.
fn xfer_auto(args: &SweepArgs) -> Result<Option<(ThreadsAuto, Axis)>, Usage> {
    let Some(x) = &args.xfer else {
        return Ok(None);
    };
    let Some((rule, axis)) = analysis::adapt::parse_xfer_auto(x).map_err(Usage)? else {
        return Ok(None);
    };
    if args.threads.starts_with("auto") {
        return usage(format!(
            "--xfer {x} with --threads {}: a sweep searches one axis at a time; list the thread counts (e.g. --threads 1,4)",
            args.threads
        ));
    }
    Ok(Some((rule, axis)))
}

/// `--reps auto[:x%]` with `--max-reps`, checked with `--trim`: the
/// rule, and the repetitions every point runs before it is judged.
fn reps_auto(args: &SweepArgs) -> Result<Option<RepsAuto>, Usage> {
    let max = match &args.max_reps {
        Some(m) => Some(
            parse_count(m)
                .ok()
                .and_then(|m| u32::try_from(m).ok())
                .ok_or_else(|| Usage(format!("--max-reps {m}: expected a count")))?,
        ),
        None => None,
    };
    let rule = match &args.reps {
        Some(r) => RepsAuto::parse(r, max).map_err(Usage)?,
        None => None,
    };
    if rule.is_none() && max.is_some() {
        return usage("--max-reps goes with --reps auto (the most repetitions a point may take)");
    }
    Ok(rule)
}

/// `--reps` (or the inner command's) and `--trim`, checked together.
fn reps_and_trim(args: &SweepArgs, inner_reps: &str) -> Result<(u32, u32), Usage> {
    if let Some(rule) = reps_auto(args)? {
        // The trim is fixed before the count of repetitions is known:
        // none unless asked for, and never all of the fewest.
        let trim = match &args.trim {
            Some(t) => parse_count(t)
                .ok()
                .and_then(|t| u32::try_from(t).ok())
                .ok_or_else(|| Usage(format!("--trim {t}: expected a count")))?,
            None => 0,
        };
        if trim > 0 && trim.saturating_mul(2) >= rule.min {
            return usage(format!(
                "--trim {trim} drops all of the {} repetitions --reps auto runs first; use --trim 0 or --reps N",
                rule.min
            ));
        }
        return Ok((rule.min, trim));
    }
    // Past u32 a count is refused, never cut to its low bits (4294967297
    // repetitions were one).
    let fit = |flag: &str, v: u64| {
        u32::try_from(v).map_err(|_| {
            Usage(format!(
                "{flag} {v} is out of range: at most 100000 repetitions"
            ))
        })
    };
    let reps: u32 = match &args.reps {
        Some(r) => fit(
            "--reps",
            parse_count(r).map_err(|e| Usage(format!("--reps: {e}")))?,
        )?,
        None => fit("--reps", parse_count(inner_reps).unwrap_or(1))?,
    };
    if reps == 0 {
        return usage("--reps: must be at least 1");
    }
    let trim = match &args.trim {
        Some(t) => fit(
            "--trim",
            parse_count(t).map_err(|e| Usage(format!("--trim: {e}")))?,
        )?,
        None => default_trim(reps),
    };
    if trim.saturating_mul(2) >= reps && trim > 0 {
        return usage(format!(
            "--trim {trim} drops all {reps} repetitions (2 × {trim} ≥ {reps}); use a smaller --trim or more --reps"
        ));
    }
    Ok((reps, trim))
}

fn plan(args: &SweepArgs) -> Result<Sweep, Usage> {
    let lists = Lists::parse(args)?;
    let first_target = lists.targets.first().map(String::as_str);
    let inner = parse_inner(&args.inner, first_target)?;
    // The inner command's --endpoint, --region, --profile, --addressing
    // reach every point's s3:// target (they were dropped: a sweep asked
    // AWS's endpoint instead of the one named).
    match &inner {
        JobCommand::Run(r) => r.s3.apply(),
        JobCommand::Meta(m) => m.s3.apply(),
        _ => Ok(()),
    }
    .map_err(|e| Usage(e.to_string()))?;
    let (kind, inner_reps, has_total) = inner_kind(&inner, &lists, args)?;
    let per_worker = match &inner {
        JobCommand::Run(r) => r.per_worker,
        JobCommand::Meta(m) => m.per_worker,
        _ => false,
    };
    // The inner command's --interval; the default for the others.
    let interval = match &inner {
        JobCommand::Run(r) => r.record.over_time.interval(),
        JobCommand::Meta(m) => m.record.over_time.interval(),
        _ => Ok(Default::default()),
    }
    .map_err(Usage)?;
    if interval == bench::interval::Interval::Off && args.series_csv.is_some() {
        return usage("--series-csv needs the series the inner --interval off turns off");
    }
    let steady = inner_steady(&inner, args)?;
    check_layouts(kind, &lists.layouts)?;
    let (reps, trim) = reps_and_trim(args, &inner_reps)?;
    let reps_rule = reps_auto(args)?;
    let xfer_rule = xfer_auto(args)?;
    let threads_rule = match xfer_rule {
        Some((rule, _)) => Some(rule),
        None => ThreadsAuto::parse(&args.threads).map_err(Usage)?,
    };
    let axis = xfer_rule.map_or(Axis::Workers, |x| x.1);
    let scale = args.scale.unwrap_or(if has_total {
        Scale::Total
    } else {
        Scale::PerThread
    });
    let typed = typed_inner(&inner, !lists.xfers.is_empty(), !lists.layouts.is_empty());
    let (typed, base_amount) = typed
        .and_then(|typed| {
            let base = base_amount(&typed, &lists, reps)?;
            Ok((typed, base))
        })
        .map_err(|Usage(m)| {
            Usage(format!(
                "point threads={}{}: {m}",
                lists.threads[0],
                lists
                    .xfers
                    .first()
                    .map(|x| format!(" xfer={}", format_size(*x)))
                    .unwrap_or_default()
            ))
        })?;
    let mut lists = lists;
    let grid = Grid {
        typed: &typed,
        lists: &lists,
        kind,
        scale,
        reps,
        base_amount,
        searched: threads_rule.map(|_| axis),
    };
    let (points, left_out) = grid.points()?;
    lists.threads.retain(|n| !left_out.threads.contains(n));
    lists.xfers.retain(|x| !left_out.xfers.contains(x));
    let config = SweepConfig {
        command: kind.into(),
        threads: lists.threads.clone(),
        xfer: lists.xfers.clone(),
        layout: lists.layouts.clone(),
        targets: lists.targets.clone(),
        iodepth: lists.depths.clone(),
        // Under --reps auto the most a point may run: no repetition is
        // numbered past it.
        reps: reps_rule.map_or(reps, |r| r.max),
        scale: scale.name().into(),
        trim,
        inner: args.inner.clone(),
        threads_auto: threads_rule,
        reps_auto: reps_rule,
        search_axis: axis,
    };

    Ok(Sweep {
        config,
        points,
        per_worker,
        interval,
        steady,
    })
}

/// The inner command's `--steady`, checked against its `--time` (only
/// the time limit's presence; its value is checked with the job) and
/// refused under `--nodes` (judged in one process).
fn inner_steady(
    inner: &JobCommand,
    args: &SweepArgs,
) -> Result<Option<bench::steady::Steady>, Usage> {
    let (over, time) = match inner {
        JobCommand::Run(r) => (&r.record.over_time, &r.time),
        JobCommand::Meta(m) => (&m.record.over_time, &m.time),
        _ => return Ok(None),
    };
    let ranks = if args.nodes.is_some() || args.ranks.is_some() {
        2
    } else {
        1
    };
    over.steady(time.as_ref().map(|_| std::time::Duration::MAX), ranks)
        .map_err(Usage)
}

/// The amount of work per thread of the first point (bytes for `run`,
/// files for `meta`), which the other points scale from. The inner
/// command is typed once; its flag errors are the first point's, as they
/// always were.
fn base_amount(typed: &Inner, lists: &Lists, reps: u32) -> Result<u64, Usage> {
    let base = point(
        typed,
        lists.targets.first().map(String::as_str),
        lists.threads[0],
        Axes {
            xfer: lists.xfers.first().copied(),
            layout: lists.layouts.first().map(String::as_str),
            iodepth: lists.depths.first().copied(),
        },
        None,
        reps,
    )?;
    Ok(match &base {
        Work::Meta(m) => m.files,
        Work::Data(w) => w.bytes_per_worker(),
        _ => 0,
    })
}

/// Everything that expands the swept lists into points.
struct Grid<'a> {
    typed: &'a Inner,
    lists: &'a Lists,
    kind: &'static str,
    scale: Scale,
    reps: u32,
    base_amount: u64,
    /// `--threads auto` (or `--xfer auto`): the counts (sizes) are the
    /// ones the search may try.
    searched: Option<Axis>,
}

/// The counts and sizes a search leaves out: their point is refused at
/// some series (a total that does not split evenly across the count, a
/// size its data is not a multiple of).
#[derive(Default)]
struct LeftOut {
    threads: Vec<u32>,
    xfers: Vec<u64>,
}

impl Grid<'_> {
    /// Every point, series by series (target × layout × xfer × depth),
    /// each over the thread counts; each point's job is built and checked.
    /// Under `--threads auto` a count after the first whose job is refused
    /// at some series (a total that does not split evenly across it) is
    /// left out of the search instead, and under `--xfer auto` such a size:
    /// the second value lists those.
    fn points(&self) -> Result<(Vec<Planned>, LeftOut), Usage> {
        let l = self.lists;
        let mut points = Vec::new();
        let mut left_out = LeftOut::default();
        let by_xfer = matches!(self.searched, Some(Axis::Xfer { .. }));
        for target in dim(&l.targets) {
            for layout in dim(&l.layouts) {
                for (xfer, depth) in dim(&l.xfers)
                    .into_iter()
                    .flat_map(|x| dim(&l.depths).into_iter().map(move |d| (x, d)))
                {
                    let axes = Axes {
                        xfer,
                        layout: layout.as_deref(),
                        iodepth: depth,
                    };
                    let series = self.series(target.as_deref(), axes);
                    for &n in &l.threads {
                        match self.job(target.as_deref(), n, axes) {
                            Ok(job) => points.push(planned(job, n, series.clone())),
                            Err(_) if by_xfer && xfer != l.xfers.first().copied() => {
                                left_out.xfers.extend(xfer)
                            }
                            Err(_) if self.searched.is_some() && !by_xfer && n != l.threads[0] => {
                                left_out.threads.push(n)
                            }
                            Err(e) => return Err(e),
                        }
                    }
                }
            }
        }
        points.retain(|p| !left_out.threads.contains(&p.threads));
        points.retain(|p| !left_out.xfers.contains(&p.xfer));
        Ok((points, left_out))
    }

    /// The series label: the values of the dimensions swept over more
    /// than one value.
    fn series(&self, target: Option<&str>, axes: Axes<'_>) -> String {
        let l = self.lists;
        let mut label = Vec::new();
        if l.targets.len() > 1 {
            label.push(target.unwrap_or_default().to_string());
        }
        if l.layouts.len() > 1 {
            label.push(axes.layout.unwrap_or_default().to_string());
        }
        if l.xfers.len() > 1 {
            label.push(format_size(axes.xfer.unwrap_or(0)));
        }
        if l.depths.len() > 1 {
            label.push(format!("depth {}", axes.iodepth.unwrap_or(1)));
        }
        label.join(" ")
    }

    /// The work per thread at `n` threads under the sweep's `--scale`.
    fn amount(&self, n: u32) -> Result<u64, Usage> {
        match self.scale {
            Scale::PerThread => Ok(self.base_amount),
            Scale::Total => {
                let total = self.base_amount * self.lists.threads[0] as u64;
                if !total.is_multiple_of(n as u64) {
                    return usage(format!(
                        "--scale total: the first point's total ({}) does not split evenly across {n} threads; choose thread counts that divide it",
                        if self.kind == "run" { format_size(total) } else { format!("{total} files") }
                    ));
                }
                Ok(total / n as u64)
            }
        }
    }

    /// The job of the point at `n` threads, its errors named by the point.
    fn job(&self, target: Option<&str>, n: u32, axes: Axes<'_>) -> Result<Work, Usage> {
        let first_target = self.lists.targets.first().map(String::as_str);
        point(
            self.typed,
            target.or(first_target),
            n,
            axes,
            Some(self.amount(n)?),
            self.reps,
        )
        .map_err(|Usage(m)| {
            Usage(format!(
                "point threads={n}{}{}{}: {m}",
                axes.xfer
                    .map(|x| format!(" xfer={}", format_size(x)))
                    .unwrap_or_default(),
                axes.iodepth
                    .map(|d| format!(" iodepth={d}"))
                    .unwrap_or_default(),
                axes.layout
                    .map(|l| format!(" layout={l}"))
                    .unwrap_or_default()
            ))
        })
    }
}

/// A planned point from its checked workload.
fn planned(work: Work, threads: u32, series: String) -> Planned {
    let (xfer, layout, target, files_per_worker, dir_per_file, bytes_per_thread) = match &work {
        Work::Meta(m) => (
            0,
            if m.same_dir {
                "same-dir"
            } else {
                "per-thread-dir"
            }
            .to_string(),
            m.target.display().to_string(),
            Some(m.files),
            !m.same_dir,
            m.files * m.file_size.max(),
        ),
        Work::Data(w) => (
            w.xfer,
            w.layout.name().to_string(),
            w.target.display().to_string(),
            (w.layout != Layout::Shared).then_some(1),
            w.layout == Layout::PerThreadDir,
            w.bytes_per_worker(),
        ),
        _ => unreachable!("a sweep point is a data or metadata workload"),
    };
    Planned {
        threads,
        xfer,
        layout,
        target,
        series,
        files_per_worker,
        dir_per_file,
        bytes_per_thread,
        work,
    }
}

/// The inner command of a sweep as a typed request, parsed once.
enum Inner {
    /// `-- run …`.
    Run(spec::RawWorkload),
    /// `-- meta …`.
    Meta(spec::RawMeta),
    /// `-- fio …`: the job's words; each point sets numjobs.
    Fio(Vec<String>),
}

/// An inner `--threads`, which the sweep's `--threads` replaces at every
/// point: a value the inner command would refuse (0, not a number) is
/// refused; another than the default 1 is said not to count.
fn inner_threads(v: &str) -> Result<(), Usage> {
    match parse_count(v) {
        Ok(1) => Ok(()),
        Ok(0) | Err(_) => usage(format!(
            "the command after --: --threads {v}: not a thread count; leave --threads out \
             there: the sweep's --threads LIST sets each point's threads"
        )),
        Ok(n) => {
            eprintln!(
                "ioscale: warning: the command after --: --threads {n} is not used: the sweep's \
                 --threads LIST sets each point's threads"
            );
            Ok(())
        }
    }
}

/// Types the inner command's flags once, into its request. The fields
/// every point sets itself — threads, repetitions, and the transfer size
/// or layout when the sweep varies them — are cleared in the typed
/// request (an inner `-t 4` under `sweep --threads 1,2` never counts,
/// and [`inner_threads`] says so); each point then sets them ([`point`]).
fn typed_inner(inner: &JobCommand, swept_xfer: bool, swept_layout: bool) -> Result<Inner, Usage> {
    match inner {
        JobCommand::Run(r) => {
            inner_threads(&r.threads)?;
            let mut raw = r.to_raw().map_err(|e| Usage(e.to_string()))?;
            raw.threads = None;
            raw.reps = None;
            if swept_xfer {
                raw.xfer = None;
            }
            if swept_layout {
                raw.layout = None;
            }
            Ok(Inner::Run(raw))
        }
        JobCommand::Meta(m) => {
            inner_threads(&m.threads)?;
            let mut raw = m.to_raw().map_err(|e| Usage(e.to_string()))?;
            raw.threads = None;
            raw.reps = None;
            Ok(Inner::Meta(raw))
        }
        JobCommand::Fio { args } => Ok(Inner::Fio(args.clone())),
        _ => usage("sweep runs `run` or `meta` (or a `fio` job)"),
    }
}

/// A point's values of the swept dimensions other than threads and
/// target; `None` leaves the inner command's own.
#[derive(Clone, Copy)]
struct Axes<'a> {
    xfer: Option<u64>,
    layout: Option<&'a str>,
    iodepth: Option<u32>,
}

/// One point's job: the typed inner request with the swept values set.
/// `amount` is the bytes per thread (`run`) or files per thread (`meta`);
/// `None` leaves the inner command's sizing alone.
fn point(
    inner: &Inner,
    target: Option<&str>,
    threads: u32,
    axes: Axes<'_>,
    amount: Option<u64>,
    reps: u32,
) -> Result<Work, Usage> {
    let Axes {
        xfer,
        layout,
        iodepth,
    } = axes;
    match inner {
        Inner::Run(raw) => {
            let mut r = raw.clone();
            r.threads = Some(threads.into());
            r.reps = Some(reps.into());
            if let Some(t) = target {
                r.target = Some(PathBuf::from(t));
            }
            if xfer.is_some() {
                r.xfer = xfer;
            }
            if let Some(l) = layout {
                // plan() checked every --layout value already.
                r.layout = Layout::parse(l);
            }
            if let Some(a) = amount {
                r.size = Some(a);
                r.total = None;
                if r.block.is_some() {
                    // IOR style: keep the block, let the segments follow
                    // (ior -b 1m -s 2048/N).
                    r.segments = None;
                }
            }
            if let Some(d) = iodepth {
                r.iodepth = Some(d.into());
            }
            let spec = r.build().map_err(|e| Usage(e.to_string()))?;
            // Refused up front, as every other bad combination.
            engine::registry::check_data(&spec.engine, spec.iodepth, spec.direct)
                .map_err(|e| Usage(e.to_string()))?;
            Ok(spec.into())
        }
        Inner::Meta(raw) => {
            let mut m = raw.clone();
            m.threads = Some(threads.into());
            m.reps = Some(reps.into());
            if let Some(t) = target {
                m.target = Some(PathBuf::from(t));
            }
            if let Some(l) = layout {
                m.same_dir = l == "same-dir";
            }
            if let Some(a) = amount {
                m.files = Some(a);
            }
            if let Some(d) = iodepth {
                m.iodepth = Some(d.into());
            }
            let spec = m.build().map_err(|e| Usage(e.to_string()))?;
            engine::registry::check_meta_spec(&spec.engine, spec.iodepth, &spec)
                .map_err(|e| Usage(e.to_string()))?;
            Ok(spec.into())
        }
        Inner::Fio(args) => {
            let mut spec = crate::front::fio::sweep_point(args, threads).map_err(|e| Usage(e.0))?;
            spec.reps = reps;
            Ok(spec.into())
        }
    }
}

/// A line for standard error while the sweep runs: through the display
/// when there is one, so it does not land in the middle of the live line.
fn say(live: &Option<Display>, line: String) {
    match live {
        Some(l) => l.say(line),
        None => eprintln!("ioscale: {line}"),
    }
}

/// Explains how a saved sweep's arguments differ from these.
fn config_diff(saved: &SweepConfig, now: &SweepConfig) -> Vec<String> {
    let mut d = Vec::new();
    let mut cmp = |name: &str, a: String, b: String| {
        if a != b {
            d.push(format!("{name}: {a} in the file, {b} now"));
        }
    };
    let dbg = |v: &dyn std::fmt::Debug| format!("{v:?}");
    cmp("inner command", saved.command.clone(), now.command.clone());
    cmp("--threads", dbg(&saved.threads), dbg(&now.threads));
    cmp("--xfer", dbg(&saved.xfer), dbg(&now.xfer));
    cmp("--layout", dbg(&saved.layout), dbg(&now.layout));
    cmp("--target", dbg(&saved.targets), dbg(&now.targets));
    cmp("--iodepth", dbg(&saved.iodepth), dbg(&now.iodepth));
    cmp("--reps", saved.reps.to_string(), now.reps.to_string());
    cmp("--scale", saved.scale.clone(), now.scale.clone());
    cmp("--trim", saved.trim.to_string(), now.trim.to_string());
    cmp(
        "--threads auto",
        dbg(&saved.threads_auto),
        dbg(&now.threads_auto),
    );
    cmp(
        "--reps auto (--max-reps)",
        dbg(&saved.reps_auto),
        dbg(&now.reps_auto),
    );
    cmp(
        "the words after --",
        saved.inner.join(" "),
        now.inner.join(" "),
    );
    d
}

/// `ioscale sweep`; started by mpirun or srun, every point runs as the
/// ranks of the launch, and rank 0 alone prints, journals and renders.
pub fn cmd_sweep(args: &SweepArgs) -> Exit {
    let mut args = args.clone();
    trailing_resume(&mut args).map_err(Failure::Usage)?;
    if args.nodes.is_some() || args.ranks.is_some() {
        let flag = if args.nodes.is_some() {
            "--nodes"
        } else {
            "--ranks"
        };
        adaptive::refuse_threads_with(flag, &args).map_err(Failure::Usage)?;
        return nodes::sweep_nodes(&args);
    }
    crate::launch::as_ranks("ioscale", |coord| sweep_ranks(&args, coord))
}

/// Checks a sweep's command line as `sweep` would before its first point
/// (the lists, the inner command, every point's workload), without running
/// anything: for `ioscale slurm`, at generation time.
pub(crate) fn check_args(args: &SweepArgs) -> Result<(), String> {
    let mut args = args.clone();
    trailing_resume(&mut args)?;
    plan(&args).map(|_| ()).map_err(|Usage(m)| m)
}

/// Users re-run the line they typed with `--resume` added at the end,
/// which puts it after `--`, among the inner command's words. Neither
/// `run` nor `meta` has a `--resume`, so there it can only mean the
/// sweep's: it is taken back out (the saved record's words after `--` are
/// then the same as the first run's).
fn trailing_resume(args: &mut SweepArgs) -> Result<(), String> {
    if args.inner.last().map(String::as_str) != Some("--resume") {
        return Ok(());
    }
    args.inner.pop();
    if args.json.is_none() {
        return Err(
            "--resume continues the sweep saved by --json FILE: give the same --json FILE \
                    (before --) as the run it continues"
                .into(),
        );
    }
    args.resume = true;
    Ok(())
}

/// A sweep of `io500` points: io500's own sweep, after refusing what it
/// cannot take (an adaptive search, the history flags).
fn io500_sweep(args: &SweepArgs, coord: &dyn Coordinator) -> Exit {
    adaptive::refuse_with("an io500 sweep", args).map_err(Failure::Usage)?;
    if args.history.any() {
        // Each io500 point records itself, as io500 does: from the
        // environment.
        return Err(Failure::usage(
            "an io500 sweep records each point as io500 does: give IOSCALE_HISTORY=FILE|off, \
             IOSCALE_BASELINE and IOSCALE_THRESHOLD instead of --history, --no-history, \
             --baseline and --threshold",
        ));
    }
    crate::front::io500::sweep::sweep(args, coord)
}

fn sweep_ranks(args: &SweepArgs, coord: &dyn Coordinator) -> Exit {
    if args.inner.first().map(String::as_str) == Some("io500") {
        return io500_sweep(args, coord);
    }
    let root = coord.rank() == 0;
    let plan = plan(args).map_err(|Usage(m)| Failure::Usage(m))?;
    bench::cluster::root_check(coord, check_outputs(args, root)).map_err(|e| match e {
        Some(e) => Failure::refused(format!("{e:#}")),
        None => Failure::Said(2),
    })?;
    let history = crate::history_run::Session::new(Some(&args.history), "ioscale", "sweep", root)?;
    let command: Vec<String> = std::env::args().collect();
    let mut rec = new_record(&plan, &command);
    // The handlers go in before the lock is taken: a Ctrl-C or SIGTERM
    // from here on (while --resume reads a large record, say) stops the
    // sweep before its first point with the lock removed and exit 130,
    // instead of killing it with the lock left behind.
    let stop = crate::launch::install_signals()?;
    let (journal, done) = open_journal(args, &plan, &mut rec, &command, coord)?;

    let (reps, phases_per_rep) = plan
        .points
        .first()
        .map_or((1, 1), |p| (p.work.reps(), p.work.phases()));
    // An adaptive sweep counts up to the most repetitions a point may
    // take, and only the points of the count running (adaptive.rs): how
    // many counts the search will measure is not known before.
    let searched = plan.config.threads_auto.is_some();
    let live = if root {
        Display::start_sweep(
            args.progress,
            plan.config.reps_auto.map_or(reps, |r| r.max),
            phases_per_rep,
            coord.size(),
            if searched {
                rec.points.len()
            } else {
                plan.points.len()
            },
            rec.points.len(),
        )
    } else {
        None
    };
    if let (Some(l), false) = (&live, searched) {
        // What each point still to run moves, in the order they run: the
        // ETA counts work left (a point of 16 workers does 16 times the
        // work of one at --scale per-thread).
        let order = run_order(&plan, &done);
        l.plan_work(
            order
                .iter()
                .flatten()
                .map(|&i| moved(&plan.points[i].work))
                .collect(),
        );
    }
    let mut points = Runner {
        args,
        sweep: &plan,
        coord,
        stop: &stop,
        command: &command,
        live: &live,
        journal: journal.as_ref(),
        history: &history,
        exit: 0,
        failure: None,
        cut: Vec::new(),
    };
    points.all(&done, &mut rec)?;
    let Runner {
        exit, failure, cut, ..
    } = points;
    drop(live);
    if !root {
        return Ok(exit);
    }
    let code = finish(
        &mut rec,
        (args, &cut),
        journal.as_ref(),
        exit,
        failure,
        crate::signals::name(),
    );
    Ok(history.finish(code))
}

/// Rank 0 settles where the sweep's journal (`--json FILE`) goes and
/// locks it before reading it back (another sweep writing the same record
/// is refused here), and with `--resume` reads the points already done
/// into `rec`; every rank learns which points are done. A refusal on rank
/// 0 stops every rank.
fn open_journal(
    args: &SweepArgs,
    plan: &Sweep,
    rec: &mut SweepRecord,
    command: &[String],
    coord: &dyn Coordinator,
) -> Result<(Option<crate::output::Journal>, Vec<usize>), Failure> {
    let root = coord.rank() == 0;
    let (journal, refused) = match (root, &args.json) {
        (true, Some(j)) => match crate::output::Journal::open("--json", j, &command.join(" ")) {
            Ok(j) => (Some(j), None),
            Err(e) => (None, Some(Failure::refused(format!("{e:#}")))),
        },
        _ => (None, None),
    };
    let refused = match refused {
        Some(r) => Some(r),
        None if root && args.resume => resume(args, plan, rec),
        None => None,
    };
    let ok = refused.is_none();
    let done: Option<Vec<usize>> = coord
        .broadcast_as(&ok.then(|| rec.points.iter().map(|q| q.index).collect::<Vec<_>>()))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    match done {
        Some(done) => Ok((journal, done)),
        None => Err(refused.unwrap_or(Failure::Said(2))),
    }
}

/// Rank 0 checks that every output file can be written before anything
/// runs; the other ranks have nothing to check.
fn check_outputs(args: &SweepArgs, root: bool) -> anyhow::Result<()> {
    let mut bad = Ok(());
    if root {
        bad = crate::output::check_output_set(
            &[
                ("--json", args.json.as_deref()),
                ("--csv", args.csv.as_deref()),
                ("--html", args.html.as_deref()),
                ("--series-csv", args.series_csv.as_deref()),
            ],
            &[],
        );
        if let Some(d) = &args.png {
            bad = bad.and_then(|()| crate::output::check_png_dir(d));
        }
    }
    bad
}

/// The sweep's record before its first point.
fn new_record(plan: &Sweep, command: &[String]) -> SweepRecord {
    let first_target = plan
        .points
        .first()
        .map(|p| PathBuf::from(&p.target))
        .unwrap_or_default();
    SweepRecord {
        schema: SWEEP_SCHEMA,
        tool: "ioscale".into(),
        kind: "sweep".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        command: command.to_vec(),
        started: bench::host::now_rfc3339(),
        host: bench::host::collect(&first_target),
        config: plan.config.clone(),
        interrupted: false,
        points_total: plan.points.len(),
        stop_reason: None,
        points: Vec::new(),
        analysis: Default::default(),
        search: None,
    }
}

/// The end of a sweep on rank 0: the analysis of what was measured, why
/// it stopped early if it did (`failure`, a refused point; or the signal
/// `sig`), the outputs, and the exit code.
fn finish(
    rec: &mut SweepRecord,
    (args, cut): (&SweepArgs, &[(usize, Vec<report::PhaseRecord>)]),
    journal: Option<&crate::output::Journal>,
    exit: i32,
    failure: Option<String>,
    sig: Option<&str>,
) -> i32 {
    analysis::reanalyse(rec, args.view.units.units());
    // A refused point leaves the sweep unfinished but not interrupted: the
    // record says so by its point count and its stop_reason, and the error
    // says what failed.
    if let Some(f) = &failure {
        rec.stop_reason = Some(format!("refused: {f}"));
    } else if rec.interrupted {
        let sig = sig.unwrap_or("a signal on another rank");
        rec.stop_reason = Some(format!("interrupted by {sig}"));
    }
    let wrote = emit_sweep(rec, args, journal, cut);
    if let Some(f) = failure {
        eprintln!("ioscale: error: {f}");
        if let Some(j) = &args.json {
            eprintln!(
                "ioscale: {} of {} points are saved in {}; fix the problem and add --resume to continue",
                rec.points.len(),
                rec.points_total,
                j.display()
            );
        }
        return 2;
    }
    if rec.interrupted {
        match &args.json {
            Some(j) => eprintln!(
                "ioscale: interrupted: {} of {} points finished and are saved in {}; the same command with --resume continues",
                rec.points.len(),
                rec.points_total,
                j.display()
            ),
            None => eprintln!(
                "ioscale: interrupted: {} of {} points finished (give --json FILE to be able to --resume)",
                rec.points.len(),
                rec.points_total
            ),
        }
        return 130;
    }
    if wrote {
        exit
    } else {
        exit.max(1)
    }
}

/// The order the points run in: groups, each of every point at one
/// thread count (in the order of `--threads`), the points of a group in
/// the plan's order. The points of a group are the ones the analysis
/// compares with each other (the series at one worker count), so they
/// are measured close together in time, their repetitions taking turns
/// (see [`Runner::group`]); a drift of the machine then moves all of
/// them alike instead of one series' block. Points in `done` (resumed)
/// are left out.
fn run_order(plan: &Sweep, done: &[usize]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(u32, Vec<usize>)> = Vec::new();
    for (i, p) in plan.points.iter().enumerate() {
        if done.contains(&i) {
            continue;
        }
        match groups.iter_mut().find(|(t, _)| *t == p.threads) {
            Some((_, g)) => g.push(i),
            None => groups.push((p.threads, vec![i])),
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// The points of a sweep as they run: a plan per group on the executor,
/// and on rank 0 the records they make and what is printed about them.
struct Runner<'a> {
    args: &'a SweepArgs,
    sweep: &'a Sweep,
    coord: &'a dyn Coordinator,
    stop: &'a Arc<AtomicBool>,
    command: &'a [String],
    live: &'a Option<Display>,
    /// Rank 0's `--json`, rewritten after every point.
    journal: Option<&'a crate::output::Journal>,
    /// The results history: each point is recorded when it is done.
    history: &'a crate::history_run::Session,
    /// The worst exit code so far.
    exit: i32,
    /// The point refused, and why: the sweep stops there.
    failure: Option<String>,
    /// Rank 0: the phases of the point's calls run but not yet recorded,
    /// by point index. A signal leaves the point out of the record
    /// (`--resume` runs it again), but its intervals go to
    /// `--series-csv`.
    cut: Vec<(usize, Vec<report::PhaseRecord>)>,
}

impl Runner<'_> {
    /// Runs every point not in `done`, group by group (see [`run_order`]),
    /// until the end, an interrupt or a refused point.
    fn all(&mut self, done: &[usize], rec: &mut SweepRecord) -> anyhow::Result<()> {
        if let Some(rule) = self.sweep.config.threads_auto {
            return self.searched(rule, rec);
        }
        for group in run_order(self.sweep, done) {
            // A signal between two groups: the next one does not start.
            if self.coord.any(self.stop.load(Ordering::Relaxed)) {
                rec.interrupted = true;
                break;
            }
            if !self.group(&group, rec)? {
                break;
            }
        }
        Ok(())
    }

    /// The plan of a group: a stage per point, their repetitions taking
    /// turns (A B, then B A, …, each a driver call under its own
    /// repetition number; not with `--reuse`, see
    /// [`Plan::interleaves`]). Each point measures what its phases used
    /// (for the limit the analysis names) and keeps going past a failed
    /// repetition (it is counted and left out of the figures, not the end
    /// of the point). Under MPI rank 0 receives one summary per node, not
    /// every worker's sample, unless the inner command asks for the rows
    /// (`--per-worker`): the point's figures are the same.
    fn plan_of(&self, group: &[usize]) -> Plan {
        let stages = group
            .iter()
            .map(|&i| Stage {
                steps: vec![Step::new(self.sweep.points[i].work.clone())],
            })
            .collect();
        let mut plan = Plan::of_stages(stages)
            .with_options(bench::plan::Options {
                probe: true,
                keep_going: true,
                node_summary: !self.sweep.per_worker,
                interval: self.sweep.interval,
                steady: self.sweep.steady,
                ..Default::default()
            })
            .rendered_by(bench::plan::Render::Sweep);
        plan.rules.interleave = true;
        plan
    }

    /// Runs one group on the executor; false when the sweep must stop (an
    /// interrupt, or a point that could not run). A point is recorded when
    /// its last repetition is done ([`Follow`]).
    fn group(&mut self, group: &[usize], rec: &mut SweepRecord) -> anyhow::Result<bool> {
        let plan = self.plan_of(group);
        if let (Some(l), true) = (self.live, plan.interleaves()) {
            l.group_started(group.len());
        }
        let env = Env::new(self.command.to_vec(), Arc::clone(self.stop), self.coord);
        // Under --reps auto a point is recorded once its repetitions are
        // judged enough (adaptive.rs), not when the plan's are done.
        let auto = self.sweep.config.reps_auto;
        let mut follow = Follow {
            runner: self,
            group,
            rec,
            current: None,
            error: None,
            hold: auto.is_some(),
        };
        let done = bench::exec::execute(&plan, env.with_hooks(&mut follow));
        let Follow { current, error, .. } = follow;
        if let Some(e) = error {
            return Err(e);
        }
        let refused = match done {
            Err(e) => Some(e),
            Ok(d) if d.refused.is_some() => d.refused.map(|(_, e)| e),
            Ok(d) => {
                rec.interrupted |= d.interrupted;
                return match auto {
                    Some(rule) if !d.interrupted => self.more_reps(rule, group, d.steps, rec),
                    _ => Ok(!d.interrupted),
                };
            }
        };
        let what = current.map(|i| self.name(i)).unwrap_or_default();
        self.failure = refused.map(|e| format!("point {what}: {e}"));
        Ok(false)
    }

    /// A point's name in progress and error lines; under MPI by its
    /// workers (ranks × threads). Each swept value is named by its axis,
    /// once: `threads=2 layout=shared xfer=1 MiB` (it read `threads=1 1
    /// MiB xfer=1 MiB`, the series label and the transfer size both).
    fn name(&self, index: usize) -> String {
        let p = &self.sweep.points[index];
        let c = &self.sweep.config;
        let size = self.coord.size();
        let mut name = if size > 1 {
            format!("workers={} ({size}×{})", size * p.threads, p.threads)
        } else {
            format!("threads={}", p.threads)
        };
        if c.targets.len() > 1 {
            name.push_str(&format!(" target={}", p.target));
        }
        if c.layout.len() > 1 {
            name.push_str(&format!(" layout={}", p.layout));
        }
        if p.xfer > 0 {
            name.push_str(&format!(" xfer={}", format_size(p.xfer)));
        }
        if c.iodepth.len() > 1 {
            let depth = match &p.work {
                Work::Data(w) => w.iodepth,
                Work::Meta(m) => m.iodepth,
                _ => 0,
            };
            name.push_str(&format!(" iodepth={depth}"));
        }
        name
    }

    /// Prints a driver call's cleanup notes and errors (rank 0) and
    /// keeps its exit code.
    fn told(&mut self, what: &str, outcome: &bench::run::Outcome) {
        for n in &outcome.notes {
            if n.starts_with("cleanup") {
                say(self.live, format!("point {what}: {n}"));
            }
        }
        self.exit = self.exit.max(outcome.exit_code());
        for line in crate::emit::error_lines(&outcome.results.errors) {
            say(self.live, format!("error: point {what}: {line}"));
        }
    }

    /// The analysis of the points so far, and the journal (rank 0).
    fn save(&mut self, rec: &mut SweepRecord) -> anyhow::Result<()> {
        analysis::reanalyse(rec, self.args.view.units.units());
        if let Some(j) = self.journal {
            if let Err(e) = j.write(&render_json(rec)?) {
                say(self.live, format!("error: {e:#}"));
                self.exit = self.exit.max(1);
            }
        }
        Ok(())
    }

    /// Records a finished point (rank 0): its statistics, the analysis so
    /// far, the journal, and its progress line.
    fn record(
        &mut self,
        index: usize,
        outcome: &bench::run::Outcome,
        rec: &mut SweepRecord,
    ) -> anyhow::Result<()> {
        self.cut.retain(|c| c.0 != index);
        let p = &self.sweep.points[index];
        // The record names the point's job with all its repetitions, as a
        // point run in one call does.
        let mut results = outcome.results.clone();
        // Under --reps auto the repetitions the point took.
        let took = results
            .phases
            .iter()
            .map(|ph| ph.rep)
            .chain(results.failed_phases.iter().map(|f| f.rep))
            .max()
            .map_or(0, |r| r + 1);
        results.spec = p.work.with_reps(took.max(p.work.reps())).job_spec();
        self.history.write(&results);
        let (ops, geomean_bw_mib_s, geomean_iops) =
            point_stats_probed(&results, p.threads, self.sweep.config.trim, &outcome.probes);
        let rate = ops
            .iter()
            .map(|o| {
                if o.reps == 0 {
                    // Nothing was measured: no rate, and no unit to guess
                    // from bytes it never moved ("write 0 files/s").
                    format!("{} every repetition failed", o.op)
                } else if o.rate_is_data() {
                    format!("{} {:.1} MiB/s", o.op, o.center_bw_mib_s())
                } else {
                    format!("{} {:.0} files/s", o.op, o.center_iops())
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        rec.points.push(SweepPoint {
            index,
            series: p.series.clone(),
            threads: p.threads,
            xfer: p.xfer,
            layout: p.layout.clone(),
            target: p.target.clone(),
            // Every worker of every rank (the topology's count) has its
            // own files, unless they share one.
            file_count: p
                .files_per_worker
                .map_or(1, |f| f * u64::from(outcome.workers)),
            dir_per_file: p.dir_per_file,
            bytes_per_thread: p.bytes_per_thread,
            ops,
            geomean_bw_mib_s,
            geomean_iops,
            result: results,
            probes: outcome.probes.clone(),
            reps_auto: None,
        });
        rec.points.sort_by_key(|q| q.index);
        self.save(rec)?;
        if let Some(l) = self.live {
            l.point_done(&rate);
        }
        test_hold(self.stop);
        Ok(())
    }
}

/// What a sweep follows while a group's plan runs: each driver call
/// named on the progress line, each call's problems said and its exit
/// code kept, each point recorded and journaled when its last repetition
/// is done (rank 0).
struct Follow<'r, 'a> {
    runner: &'r mut Runner<'a>,
    /// The group's points, by stage.
    group: &'r [usize],
    rec: &'r mut SweepRecord,
    /// The point of the call running (or last run).
    current: Option<usize>,
    /// A record that could not be written: the sweep ends with it.
    error: Option<anyhow::Error>,
    /// Records nothing: the caller records the points from the plan's
    /// outcomes (`--reps auto`).
    hold: bool,
}

impl bench::exec::Hooks for Follow<'_, '_> {
    fn starting(&mut self, stage: usize, rep: Option<u32>) {
        let index = self.group[stage];
        self.current = Some(index);
        if let Some(l) = self.runner.live {
            let what = self.runner.name(index);
            match rep {
                Some(_) => l.rep_started(&what, stage),
                None => l.point_started(&what),
            }
        }
    }

    fn ran(&mut self, stage: usize, _rep: Option<u32>, outcomes: &[bench::run::Outcome]) {
        // Rank 0 records the point; its exit code is the sweep's. An
        // interrupted call is not recorded: the sweep stops there.
        let Some(o) = outcomes.first() else { return };
        if self.runner.coord.rank() != 0 {
            return;
        }
        let index = self.group[stage];
        self.runner.cut.push((index, o.results.phases.clone()));
        if o.results.interrupted {
            return;
        }
        let what = self.runner.name(self.group[stage]);
        self.runner.told(&what, o);
    }

    fn stage_done(&mut self, stage: usize, outcomes: &[bench::run::Outcome]) {
        let Some(o) = outcomes.first() else { return };
        if self.runner.coord.rank() != 0 || self.error.is_some() || self.hold {
            return;
        }
        if let Err(e) = self.runner.record(self.group[stage], o, self.rec) {
            self.error = Some(e);
        }
    }
}

/// Test hook: with `IOSCALE_TEST_SWEEP_HOLD=FILE`, rank 0 makes
/// `FILE.held` after journaling a point and waits while `FILE` exists (at
/// most 120 s, and not past an interrupt), so a test can stop a sweep
/// between two points. Unset, it does nothing.
fn test_hold(stop: &AtomicBool) {
    let Some(f) = std::env::var_os("IOSCALE_TEST_SWEEP_HOLD").map(PathBuf::from) else {
        return;
    };
    if !f.exists() {
        return;
    }
    let mut held = f.clone().into_os_string();
    held.push(".held");
    let _ = std::fs::write(&held, b"");
    let t0 = std::time::Instant::now();
    while f.exists()
        && !stop.load(Ordering::Relaxed)
        && t0.elapsed() < std::time::Duration::from_secs(120)
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// `--resume`: the sweep record saved in `--json`, refused (with the
/// usage message) when it is missing, holds a single run, or was written
/// by a sweep with other arguments than `plan`'s.
fn saved_journal(args: &SweepArgs, plan: &Sweep) -> Result<SweepRecord, String> {
    let path = args
        .json
        .as_ref()
        .expect("clap requires --json with --resume");
    let saved = match crate::saved::load_record("--json", path) {
        Ok(analysis::Loaded::Sweep(s)) => *s,
        Ok(analysis::Loaded::Run(_)) => {
            return Err(format!(
                "--resume: {} holds a single run, not a sweep",
                path.display()
            ));
        }
        Err(e) => return Err(format!("--resume: {e}")),
    };
    let diff = config_diff(&saved.config, &plan.config);
    if !diff.is_empty() {
        return Err(format!(
            "--resume: {} was written by a sweep with different arguments ({}); \
             repeat the original arguments, or drop --resume (or use another --json file) to start over",
            path.display(),
            diff.join("; ")
        ));
    }
    Ok(saved)
}

/// `--resume`: reads the journal into `rec` (rank 0). `Some(failure)`
/// when it cannot be used.
fn resume(args: &SweepArgs, plan: &Sweep, rec: &mut SweepRecord) -> Option<Failure> {
    let saved = match saved_journal(args, plan) {
        Ok(s) => s,
        Err(why) => return Some(Failure::usage(why)),
    };
    rec.started = saved.started;
    rec.command = saved.command;
    rec.host = saved.host;
    // A search goes on from where it was: its path and times so far.
    rec.search = saved.search;
    // Keep only points that still match the plan at their index.
    rec.points = saved
        .points
        .into_iter()
        .filter(|p| {
            plan.points.get(p.index).is_some_and(|q| {
                q.threads == p.threads
                    && q.xfer == p.xfer
                    && q.layout == p.layout
                    && q.target == p.target
            })
        })
        .collect();
    let path = args.json.as_deref().unwrap_or(Path::new(""));
    match &rec.search {
        // Under --threads auto the total is the ladder the search may walk,
        // not what it will measure.
        Some(s) => eprintln!(
            "ioscale: resuming {}: {} points already done; the search goes on after the counts {}",
            path.display(),
            rec.points.len(),
            if s.path.is_empty() {
                "(none yet)".to_string()
            } else {
                s.path
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
        None => eprintln!(
            "ioscale: resuming {}: {} of {} points already done",
            path.display(),
            rec.points.len(),
            rec.points_total
        ),
    }
    None
}

/// Writes every requested output of a sweep record and prints the chosen
/// format; `--json` through `journal` (the place settled at the start)
/// when there is one; `cut` holds the phases of a point a signal cut
/// short, for `--series-csv` only. Returns false when a file could not be
/// written.
pub fn emit_sweep(
    rec: &SweepRecord,
    args: &SweepArgs,
    journal: Option<&crate::output::Journal>,
    cut: &[(usize, Vec<report::PhaseRecord>)],
) -> bool {
    let mut wrote = true;
    if let Some(j) = journal {
        if let Err(e) = render_json(rec)
            .map_err(anyhow::Error::from)
            .and_then(|b| j.write(&b))
        {
            eprintln!("ioscale: error: {e:#}");
            wrote = false;
        }
    }
    let outs = Outputs {
        json: if journal.is_some() {
            None
        } else {
            args.json.as_deref()
        },
        csv: args.csv.as_deref(),
        html: args.html.as_deref(),
        png: args.png.as_deref(),
        series_csv: args.series_csv.as_deref(),
        cut,
        format: args.view.format,
        quiet: args.quiet,
    };
    wrote & outs.emit(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(threads: &str, rest: &[&str], inner: &[&str]) -> SweepArgs {
        let mut argv = vec!["ioscale", "sweep", "--threads", threads];
        argv.extend_from_slice(rest);
        argv.push("--");
        argv.extend_from_slice(inner);
        match JobCli::try_parse_from(argv).unwrap().command {
            JobCommand::Sweep(a) => *a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn scale_total_is_ior_s_2048_over_n() {
        let a = args(
            "1..64x2",
            &["--layout", "shared,per-thread", "--scale", "total"],
            &[
                "run",
                "--op",
                "write",
                "--xfer",
                "1m",
                "--block",
                "1m",
                "--segments",
                "2048",
                "/tmp",
            ],
        );
        let p = plan(&a).ok().unwrap();
        assert_eq!(p.points.len(), 14);
        for pt in &p.points {
            let Work::Data(w) = &pt.work else { panic!() };
            assert_eq!(w.total_bytes(), 2 << 30, "{} threads", pt.threads);
            assert_eq!(w.block, 1 << 20);
            assert_eq!(w.segments, 2048 / pt.threads as u64);
        }
        assert_eq!(p.points[0].series, "shared");
        assert_eq!(p.points[7].series, "per-thread");
        assert_eq!(p.config.scale, "total");
    }

    #[test]
    fn total_flag_picks_total_scale_and_per_thread_keeps_share() {
        let a = args(
            "1,2,4",
            &[],
            &["run", "--op", "write", "--total", "64m", "/tmp"],
        );
        let p = plan(&a).ok().unwrap();
        assert_eq!(p.config.scale, "total");
        let sizes: Vec<u64> = p
            .points
            .iter()
            .map(|pt| match &pt.work {
                Work::Data(w) => w.bytes_per_worker(),
                _ => 0,
            })
            .collect();
        assert_eq!(sizes, vec![64 << 20, 32 << 20, 16 << 20]);
        let a = args(
            "2,4",
            &[],
            &["run", "--op", "write", "--size", "8m", "/tmp"],
        );
        let p = plan(&a).ok().unwrap();
        assert_eq!(p.config.scale, "per-thread");
        assert!(p.points.iter().all(|pt| pt.bytes_per_thread == 8 << 20));
    }

    #[test]
    fn targets_fill_a_missing_target_and_label_series() {
        let a = args(
            "1,2",
            &["--target", "/tmp,/", "--xfer", "4k,8k"],
            &["run", "--op", "write", "--size", "64k"],
        );
        let p = plan(&a).ok().unwrap();
        assert_eq!(p.points.len(), 8);
        assert_eq!(p.points[0].series, "/tmp 4 KiB");
        assert_eq!(p.points[7].series, "/ 8 KiB");
        assert_eq!(p.points[7].target, "/");
    }

    #[test]
    fn refusals_name_the_problem() {
        let bad = |t: &str, rest: &[&str], inner: &[&str], want: &str| {
            let msg = match plan(&args(t, rest, inner)) {
                Err(Usage(m)) => m,
                Ok(_) => panic!("accepted {t} {rest:?} {inner:?}"),
            };
            assert!(msg.contains(want), "{msg}");
        };
        bad(
            "1,3",
            &[],
            &["run", "--total", "64m", "/tmp"],
            "does not split evenly across 3",
        );
        bad("0,1", &[], &["run", "/tmp"], "0 is not a thread count");
        bad(
            "1",
            &["--layout", "diagonal"],
            &["run", "/tmp"],
            "unknown layout 'diagonal'",
        );
        bad(
            "1",
            &["--reps", "4", "--trim", "2"],
            &["run", "/tmp"],
            "drops all 4",
        );
        bad(
            "1",
            &[],
            &["run", "--json", "x.json", "/tmp"],
            "give --json",
        );
        bad("1", &[], &["clean", "/tmp"], "sweep runs `run` or `meta`");
        bad(
            "1",
            &["--xfer", "3k"],
            &["run", "--size", "64k", "/tmp"],
            "point threads=1 xfer=3 KiB",
        );
    }

    /// Fourth adversarial pass: `--reps` and `--trim` past u32 were cut
    /// to their low 32 bits (`--reps 4294967297` ran one repetition,
    /// `--trim 4294967296` trimmed none), silently.
    #[test]
    fn reps_and_trim_past_u32_are_refused_not_truncated() {
        for (rest, want) in [
            (&["--reps", "4294967297"][..], "--reps"),
            (&["--reps", "4294967296"][..], "--reps 4294967296"),
            (
                &["--reps", "4", "--trim", "4294967296"][..],
                "--trim 4294967296",
            ),
        ] {
            let a = args("1", rest, &["meta", "--files", "2", "/tmp"]);
            let e = plan(&a).err().map(|u| u.0).unwrap_or_default();
            assert!(e.starts_with(want), "{rest:?}: {e:?}");
        }
    }

    #[test]
    fn config_diff_lists_changes() {
        let a = SweepConfig {
            threads: vec![1, 2],
            reps: 2,
            ..Default::default()
        };
        let b = SweepConfig {
            threads: vec![1, 2, 4],
            reps: 2,
            ..Default::default()
        };
        let d = config_diff(&a, &b);
        assert_eq!(d, vec!["--threads: [1, 2] in the file, [1, 2, 4] now"]);
        assert!(config_diff(&a, &a).is_empty());
    }

    /// The inner command is typed once; each point sets the fields the
    /// sweep varies on that typed request: the inner `--threads`,
    /// `--reps` and (swept) `--xfer` and `--layout` never count, and the
    /// point's workload is checked as built, never re-parsed from words.
    #[test]
    fn points_set_the_typed_fields_they_vary() {
        let a = args(
            "1,2",
            &["--xfer", "4k,8k", "--layout", "shared", "--reps", "3"],
            &[
                "run",
                "--threads",
                "7",
                "--reps",
                "9",
                "--xfer",
                "3k",
                "--layout",
                "per-thread",
                "--op",
                "write",
                "--size",
                "64k",
                "/tmp",
            ],
        );
        let p = plan(&a).ok().unwrap();
        let got: Vec<(u32, u64, Layout, u32)> = p
            .points
            .iter()
            .map(|pt| match &pt.work {
                Work::Data(w) => (w.threads, w.xfer, w.layout, w.reps),
                _ => panic!("a data point"),
            })
            .collect();
        let l = Layout::Shared;
        assert_eq!(
            got,
            [
                (1, 4096, l, 3),
                (2, 4096, l, 3),
                (1, 8192, l, 3),
                (2, 8192, l, 3)
            ]
        );
        // A flag the sweep does not vary is the inner command's.
        let a = args("1", &[], &["run", "--xfer", "3k", "--size", "64k", "/tmp"]);
        let e = plan(&a).err().map(|u| u.0).unwrap_or_default();
        assert!(e.contains("--xfer 3 KiB"), "{e}");
    }
}
