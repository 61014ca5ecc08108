//! `ioscale sweep`: one job at many thread counts (× transfer sizes ×
//! layouts × targets), with statistics per point and the analysis.
//!
//! The inner command (`-- run …` or `-- meta …`) is parsed by the very clap
//! definitions of `ioscale run`/`meta` and run in-process, point by point,
//! through the same drivers, so a sweep point is exactly the run a user
//! would have typed. After every finished point the whole record is written
//! to `--json` again (temporary file, then rename), which is what makes an
//! interrupted sweep resumable: `--resume` reads it back, checks that the
//! arguments are the same, and runs only the points that are missing.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use analysis::model::{default_trim, point_stats_probed};
use analysis::render::render_json;
use analysis::{SweepConfig, SweepPoint, SweepRecord, SWEEP_SCHEMA};
use clap::Parser;
use coord::Coordinator;
use spec::{format_size, parse_count, parse_list, parse_size, Layout, MetaSpec, WorkloadSpec};

use crate::args::Format;
use crate::emit::Outputs;
use crate::exit::{Exit, Failure};
use crate::job::{JobCli, JobCommand, Scale, SweepArgs};
use crate::progress::{Display, ProgressMode};

mod nodes;

/// Examples for `ioscale sweep --help`.
pub const SWEEP_EXAMPLES: &str = "Examples:
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

/// The job of one point, validated.
enum Job {
    Run(Box<WorkloadSpec>),
    Meta(Box<MetaSpec>),
}

impl Job {
    /// What the point moves in all its timed phases and repetitions:
    /// bytes for `run`, files for `meta` (one unit per sweep, whose
    /// points are all one kind).
    fn work(&self) -> f64 {
        match self {
            Job::Run(w) => w.total_bytes() as f64 * w.ops.len() as f64 * f64::from(w.reps),
            Job::Meta(m) => {
                m.files as f64 * f64::from(m.threads) * m.ops.len() as f64 * f64::from(m.reps)
            }
        }
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
    file_count: u64,
    dir_per_file: bool,
    bytes_per_thread: u64,
    job: Job,
}

/// The sweep's parameters after parsing.
struct Plan {
    config: SweepConfig,
    points: Vec<Planned>,
    /// The inner command asked for every worker's row (`--per-worker`):
    /// under MPI each point gathers every worker's sample to rank 0;
    /// otherwise one merged summary per node (and per rank) reaches it.
    per_worker: bool,
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
            usage(format!(
                "the command after -- ({}): {}",
                inner.join(" "),
                e.to_string().lines().next().unwrap_or("invalid")
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
            Some(x) => parse_list(x, parse_size).map_err(|e| Usage(format!("--xfer: {e}")))?,
            None => Vec::new(),
        };
        let depths = match &args.iodepth {
            Some(d) => counts("--iodepth", "queue depth", d)?,
            None => Vec::new(),
        };
        let lists = Lists {
            threads: counts("--threads", "thread count", &args.threads)?,
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
    inner: &str,
) -> Result<(), Usage> {
    if record.json.is_some() || record.csv.is_some() || shown.quiet || shown.format != Format::Text
    {
        return usage(format!(
            "give --json, --csv, --format and --quiet to sweep (before --), not to the inner {inner}"
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
            sweeps_own(&r.record, &r.shown, "run")?;
            Ok(("run", r.reps.clone(), r.total.is_some()))
        }
        JobCommand::Meta(m) => {
            sweeps_own(&m.record, &m.shown, "meta")?;
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

/// `--reps` (or the inner command's) and `--trim`, checked together.
fn reps_and_trim(args: &SweepArgs, inner_reps: &str) -> Result<(u32, u32), Usage> {
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

fn plan(args: &SweepArgs) -> Result<Plan, Usage> {
    let lists = Lists::parse(args)?;
    let first_target = lists.targets.first().map(String::as_str);
    let mut inner = parse_inner(&args.inner, first_target)?;
    let (kind, inner_reps, has_total) = inner_kind(&inner, &lists, args)?;
    let per_worker = match &inner {
        JobCommand::Run(r) => r.per_worker,
        JobCommand::Meta(m) => m.per_worker,
        _ => false,
    };
    check_layouts(kind, &lists.layouts)?;
    let (reps, trim) = reps_and_trim(args, &inner_reps)?;
    let scale = args.scale.unwrap_or(if has_total {
        Scale::Total
    } else {
        Scale::PerThread
    });
    let config = SweepConfig {
        command: kind.into(),
        threads: lists.threads.clone(),
        xfer: lists.xfers.clone(),
        layout: lists.layouts.clone(),
        targets: lists.targets.clone(),
        iodepth: lists.depths.clone(),
        reps,
        scale: scale.name().into(),
        trim,
        inner: args.inner.clone(),
    };
    let typed = typed_inner(
        &mut inner,
        !lists.xfers.is_empty(),
        !lists.layouts.is_empty(),
    );
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
    let grid = Grid {
        typed: &typed,
        lists: &lists,
        kind,
        scale,
        reps,
        base_amount,
    };
    let points = grid.points()?;
    Ok(Plan {
        config,
        points,
        per_worker,
    })
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
        Job::Run(w) => w.bytes_per_worker(),
        Job::Meta(m) => m.files,
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
}

impl Grid<'_> {
    /// Every point, series by series (target × layout × xfer × depth),
    /// each over the thread counts; each point's job is built and checked.
    fn points(&self) -> Result<Vec<Planned>, Usage> {
        let l = self.lists;
        let mut points = Vec::new();
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
                        let job = self.job(target.as_deref(), n, axes)?;
                        points.push(planned(job, n, series.clone()));
                    }
                }
            }
        }
        Ok(points)
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
    fn job(&self, target: Option<&str>, n: u32, axes: Axes<'_>) -> Result<Job, Usage> {
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

/// A planned point from its checked job.
fn planned(job: Job, threads: u32, series: String) -> Planned {
    let (xfer, layout, target, file_count, dir_per_file, bytes_per_thread) = match &job {
        Job::Run(w) => (
            w.xfer,
            w.layout.name().to_string(),
            w.target.display().to_string(),
            w.file_count() as u64,
            w.layout == Layout::PerThreadDir,
            w.bytes_per_worker(),
        ),
        Job::Meta(m) => (
            0,
            if m.same_dir {
                "same-dir"
            } else {
                "per-thread-dir"
            }
            .to_string(),
            m.target.display().to_string(),
            m.total_files(),
            !m.same_dir,
            m.files * m.file_size.max(),
        ),
    };
    Planned {
        threads,
        xfer,
        layout,
        target,
        series,
        file_count,
        dir_per_file,
        bytes_per_thread,
        job,
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

/// Types the inner command's flags once. The flags every point sets
/// itself — `--threads`, `--reps`, and `--xfer` or `--layout` when the
/// sweep varies them — are not read from the inner command: each point
/// replaces them, so they are blanked to a neutral value first (an inner
/// `-t 4` under `sweep --threads 1,2` never counted).
fn typed_inner(
    inner: &mut JobCommand,
    swept_xfer: bool,
    swept_layout: bool,
) -> Result<Inner, Usage> {
    let set_by_points = |v: &mut String| *v = "1".into();
    match inner {
        JobCommand::Run(r) => {
            set_by_points(&mut r.threads);
            set_by_points(&mut r.reps);
            if swept_xfer {
                set_by_points(&mut r.xfer);
            }
            if swept_layout {
                r.layout = "per-thread".into();
            }
            r.to_raw().map(Inner::Run).map_err(|e| Usage(e.to_string()))
        }
        JobCommand::Meta(m) => {
            set_by_points(&mut m.threads);
            set_by_points(&mut m.reps);
            m.to_raw()
                .map(Inner::Meta)
                .map_err(|e| Usage(e.to_string()))
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
) -> Result<Job, Usage> {
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
            Ok(Job::Run(Box::new(spec)))
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
            Ok(Job::Meta(Box::new(spec)))
        }
        Inner::Fio(args) => {
            let mut spec = crate::front::fio::sweep_point(args, threads).map_err(|e| Usage(e.0))?;
            spec.reps = reps;
            Ok(Job::Run(Box::new(spec)))
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
    if args.nodes.is_some() {
        return nodes::sweep_nodes(&args);
    }
    crate::launch::as_ranks(|coord| sweep_ranks(&args, coord))
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

fn sweep_ranks(args: &SweepArgs, coord: &dyn Coordinator) -> Exit {
    if args.inner.first().map(String::as_str) == Some("io500") {
        return crate::front::io500::sweep::sweep(args, coord);
    }
    let root = coord.rank() == 0;
    let plan = plan(args).map_err(|Usage(m)| Failure::Usage(m))?;
    bench::cluster::root_check(coord, check_outputs(args, root)).map_err(|e| match e {
        Some(e) => Failure::refused(format!("{e:#}")),
        None => Failure::Said(2),
    })?;
    let command: Vec<String> = std::env::args().collect();
    let mut rec = new_record(&plan, &command);
    // The handlers go in before the lock is taken: a Ctrl-C or SIGTERM
    // from here on (while --resume reads a large record, say) stops the
    // sweep before its first point with the lock removed and exit 130,
    // instead of killing it with the lock left behind.
    let stop = crate::launch::install_signals()?;
    let by_signal = signal_flags()?;
    // Rank 0 settles where the journal goes and locks it before reading
    // it back: another sweep writing the same record is refused here.
    let (journal, refused) = match (root, &args.json) {
        (true, Some(j)) => match crate::output::Journal::open("--json", j, &command.join(" ")) {
            Ok(j) => (Some(j), None),
            Err(e) => (None, Some(Failure::refused(format!("{e:#}")))),
        },
        _ => (None, None),
    };
    // Rank 0 reads the journal; every rank learns which points are done.
    let refused = match refused {
        Some(r) => Some(r),
        None if root && args.resume => resume(args, &plan, &mut rec),
        None => None,
    };
    let ok = refused.is_none();
    let done: Option<Vec<usize>> = coord
        .broadcast_as(&ok.then(|| rec.points.iter().map(|q| q.index).collect::<Vec<_>>()))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let Some(done) = done else {
        return Err(refused.unwrap_or(Failure::Said(2)));
    };

    let (reps, phases_per_rep) = match plan.points.first().map(|p| &p.job) {
        Some(Job::Run(w)) => (w.reps, w.ops.len()),
        Some(Job::Meta(m)) => (m.reps, m.ops.len()),
        None => (1, 1),
    };
    let live = if root {
        Display::start_sweep(
            args.progress,
            reps,
            phases_per_rep,
            coord.size(),
            plan.points.len(),
            rec.points.len(),
        )
    } else {
        None
    };
    if let Some(l) = &live {
        // What each point still to run moves, in the order they run: the
        // ETA counts work left (a point of 16 workers does 16 times the
        // work of one at --scale per-thread).
        let order = run_order(&plan, &done);
        l.plan_work(
            order
                .iter()
                .flatten()
                .map(|&i| plan.points[i].job.work())
                .collect(),
        );
    }
    let mut points = Runner {
        args,
        plan: &plan,
        coord,
        stop: &stop,
        command: &command,
        live: &live,
        journal: journal.as_ref(),
        exit: 0,
        failure: None,
    };
    points.all(&done, &mut rec)?;
    let Runner { exit, failure, .. } = points;
    drop(live);
    if !root {
        return Ok(exit);
    }
    let sig = by_signal
        .iter()
        .find(|(_, f)| f.load(Ordering::Relaxed))
        .map(|(n, _)| *n);
    Ok(finish(&mut rec, args, journal.as_ref(), exit, failure, sig))
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
fn new_record(plan: &Plan, command: &[String]) -> SweepRecord {
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
    }
}

/// One flag per signal that stops a sweep (SIGINT, SIGTERM), by name:
/// which one stopped it, for the record and the report.
pub(crate) fn signal_flags() -> anyhow::Result<Vec<(&'static str, Arc<AtomicBool>)>> {
    [
        ("SIGINT", signal_hook::consts::SIGINT),
        ("SIGTERM", signal_hook::consts::SIGTERM),
    ]
    .into_iter()
    .map(|(name, sig)| {
        let f = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(sig, Arc::clone(&f))
            .map(|_| (name, f))
            .map_err(|e| anyhow::anyhow!("installing the signal handler: {e}"))
    })
    .collect()
}

/// The end of a sweep on rank 0: the analysis of what was measured, why
/// it stopped early if it did (`failure`, a refused point; or the signal
/// `sig`), the outputs, and the exit code.
fn finish(
    rec: &mut SweepRecord,
    args: &SweepArgs,
    journal: Option<&crate::output::Journal>,
    exit: i32,
    failure: Option<String>,
    sig: Option<&str>,
) -> i32 {
    rec.analysis = analysis::analyse_with(rec, args.view.units.units());
    // A refused point leaves the sweep unfinished but not interrupted: the
    // record says so by its point count and its stop_reason, and the error
    // says what failed.
    if let Some(f) = &failure {
        rec.stop_reason = Some(format!("refused: {f}"));
    } else if rec.interrupted {
        let sig = sig.unwrap_or("a signal on another rank");
        rec.stop_reason = Some(format!("interrupted by {sig}"));
    }
    let wrote = emit_sweep(rec, args, journal);
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
fn run_order(plan: &Plan, done: &[usize]) -> Vec<Vec<usize>> {
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

/// The points of a sweep as they run: the driver calls, and on rank 0
/// the records they make and what is printed about them.
struct Runner<'a> {
    args: &'a SweepArgs,
    plan: &'a Plan,
    coord: &'a dyn Coordinator,
    stop: &'a Arc<AtomicBool>,
    command: &'a [String],
    live: &'a Option<Display>,
    /// Rank 0's `--json`, rewritten after every point.
    journal: Option<&'a crate::output::Journal>,
    /// The worst exit code so far.
    exit: i32,
    /// The point refused, and why: the sweep stops there.
    failure: Option<String>,
}

impl Runner<'_> {
    /// Runs every point not in `done`, group by group (see [`run_order`]),
    /// until the end, an interrupt or a refused point.
    fn all(&mut self, done: &[usize], rec: &mut SweepRecord) -> anyhow::Result<()> {
        for group in run_order(self.plan, done) {
            if !self.group(&group, rec)? {
                break;
            }
        }
        Ok(())
    }

    /// Whether the repetitions of `group` take turns: rep 1 of each point,
    /// then rep 2 of each (in reverse), … Not for one point, one repetition, or
    /// `--reuse` (each repetition writes over the files the one before
    /// left, so they must run in one driver call).
    fn interleaves(&self, group: &[usize]) -> bool {
        let reuse = group.iter().any(|&i| match &self.plan.points[i].job {
            Job::Run(w) => w.reuse_files,
            Job::Meta(_) => false,
        });
        group.len() > 1 && self.plan.config.reps > 1 && !reuse
    }

    /// Runs one group; false when the sweep must stop. Interleaved, each
    /// repetition is a driver call of its own under its own number
    /// ([`bench::run::Options::first_rep`]), the points in plan order in
    /// even rounds and in reverse in odd ones (A B B A A B …), and a
    /// point is recorded when its last repetition is done.
    fn group(&mut self, group: &[usize], rec: &mut SweepRecord) -> anyhow::Result<bool> {
        let reps = self.plan.config.reps;
        let turns = self.interleaves(group);
        let n = group.len();
        let calls: Vec<(usize, Option<u32>)> = if turns {
            // A B, then B A, …: a drift within a round favours neither.
            (0..reps)
                .flat_map(|r| {
                    (0..n).map(move |j| (if r % 2 == 0 { j } else { n - 1 - j }, Some(r)))
                })
                .collect()
        } else {
            (0..group.len()).map(|j| (j, None)).collect()
        };
        if let (Some(l), true) = (self.live, turns) {
            l.group_started(group.len());
        }
        let mut got: Vec<Option<bench::run::Outcome>> = (0..n).map(|_| None).collect();
        for (j, rep) in calls {
            let index = group[j];
            if self.coord.any(self.stop.load(Ordering::Relaxed)) {
                rec.interrupted = true;
                return Ok(false);
            }
            let what = self.name(index);
            if let Some(l) = self.live {
                match rep {
                    Some(_) => l.rep_started(&what, j),
                    None => l.point_started(&what),
                }
            }
            let outcome = match self.call(index, rep) {
                Ok(o) => o,
                Err(e) => {
                    self.failure = Some(format!("point {what}: {e}"));
                    return Ok(false);
                }
            };
            if outcome.results.interrupted {
                rec.interrupted = true;
                return Ok(false);
            }
            if self.coord.rank() != 0 {
                // Rank 0 records the point; its exit code is the sweep's.
                continue;
            }
            self.told(&what, &outcome);
            match &mut got[j] {
                Some(earlier) => earlier.merge(outcome),
                slot => *slot = Some(outcome),
            }
            if rep.is_none_or(|r| r + 1 == reps) {
                if let Some(o) = got[j].take() {
                    self.record(index, o, rec)?;
                }
            }
        }
        Ok(true)
    }

    /// A point's name in progress and error lines; under MPI by its
    /// workers (ranks × threads). Each swept value is named by its axis,
    /// once: `threads=2 layout=shared xfer=1 MiB` (it read `threads=1 1
    /// MiB xfer=1 MiB`, the series label and the transfer size both).
    fn name(&self, index: usize) -> String {
        let p = &self.plan.points[index];
        let c = &self.plan.config;
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
            let depth = match &p.job {
                Job::Run(w) => w.iodepth,
                Job::Meta(m) => m.iodepth,
            };
            name.push_str(&format!(" iodepth={depth}"));
        }
        name
    }

    /// Runs point `index`: all its repetitions (`rep` None), or one.
    fn call(&self, index: usize, rep: Option<u32>) -> Result<bench::run::Outcome, bench::Error> {
        // Each point measures what its phases used (for the limit the
        // analysis names) and keeps going past a failed repetition (it is
        // counted and left out of the figures, not the end of the point).
        let opts = bench::plan::Options {
            probe: true,
            keep_going: true,
            first_rep: rep.unwrap_or(0),
            // Under MPI rank 0 receives one summary per node, not every
            // worker's sample, unless the inner command asks for the rows
            // (`--per-worker`): the point's figures are the same.
            node_summary: !self.plan.per_worker,
            ..Default::default()
        };
        let work: bench::plan::Work = match &self.plan.points[index].job {
            Job::Run(w) => (**w).clone().into(),
            Job::Meta(m) => (**m).clone().into(),
        };
        let work = if rep.is_some() {
            work.with_reps(1)
        } else {
            work
        };
        let plan = bench::plan::Plan::single(work).with_options(opts);
        let env = bench::exec::Env::new(self.command.to_vec(), Arc::clone(self.stop), self.coord);
        bench::exec::execute(&plan, env).map(bench::exec::Executed::into_single)
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

    /// Records a finished point (rank 0): its statistics, the analysis so
    /// far, the journal, and its progress line.
    fn record(
        &mut self,
        index: usize,
        mut outcome: bench::run::Outcome,
        rec: &mut SweepRecord,
    ) -> anyhow::Result<()> {
        let p = &self.plan.points[index];
        // The record names the point's job with all its repetitions, as a
        // point run in one call does.
        outcome.results.spec = match &p.job {
            Job::Run(w) => report::JobSpec::Run((**w).clone()),
            Job::Meta(m) => report::JobSpec::Meta((**m).clone()),
        };
        let (ops, geomean_bw_mib_s, geomean_iops) = point_stats_probed(
            &outcome.results,
            p.threads,
            self.plan.config.trim,
            &outcome.probes,
        );
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
            // Planned for one rank: every rank has its own files unless
            // they share one.
            file_count: if p.layout == "shared" {
                p.file_count
            } else {
                p.file_count * u64::from(self.coord.size())
            },
            dir_per_file: p.dir_per_file,
            bytes_per_thread: p.bytes_per_thread,
            ops,
            geomean_bw_mib_s,
            geomean_iops,
            result: outcome.results,
            probes: outcome.probes,
        });
        rec.points.sort_by_key(|q| q.index);
        rec.analysis = analysis::analyse_with(rec, self.args.view.units.units());
        if let Some(j) = self.journal {
            if let Err(e) = j.write(&render_json(rec)?) {
                say(self.live, format!("error: {e:#}"));
                self.exit = self.exit.max(1);
            }
        }
        if let Some(l) = self.live {
            l.point_done(&rate);
        }
        test_hold(self.stop);
        Ok(())
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
fn saved_journal(args: &SweepArgs, plan: &Plan) -> Result<SweepRecord, String> {
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
fn resume(args: &SweepArgs, plan: &Plan, rec: &mut SweepRecord) -> Option<Failure> {
    let saved = match saved_journal(args, plan) {
        Ok(s) => s,
        Err(why) => return Some(Failure::usage(why)),
    };
    rec.started = saved.started;
    rec.command = saved.command;
    rec.host = saved.host;
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
    eprintln!(
        "ioscale: resuming {}: {} of {} points already done",
        path.display(),
        rec.points.len(),
        rec.points_total
    );
    None
}

/// Writes every requested output of a sweep record and prints the chosen
/// format; `--json` through `journal` (the place settled at the start)
/// when there is one. Returns false when a file could not be written.
pub fn emit_sweep(
    rec: &SweepRecord,
    args: &SweepArgs,
    journal: Option<&crate::output::Journal>,
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
            let Job::Run(w) = &pt.job else { panic!() };
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
            .map(|pt| match &pt.job {
                Job::Run(w) => w.bytes_per_worker(),
                Job::Meta(_) => 0,
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

    /// One repetition's driver call on 2 ranks: its phases, and per phase
    /// a per-node row, two per-rank rows and the gather's cost.
    fn one_rep() -> bench::run::Outcome {
        let bytes = include_bytes!("../../report/tests/golden/results.json");
        let mut results = report::from_json(bytes).unwrap();
        let n = results.phases.len();
        let mut c = report::ClusterInfo {
            ranks: 2,
            ..Default::default()
        };
        for phase in 0..n {
            c.node_phases.push(report::NodePhase {
                phase,
                ..Default::default()
            });
            for rank in 0..2 {
                c.rank_phases.push(report::RankPhase {
                    phase,
                    rank,
                    ..Default::default()
                });
            }
            c.gathers.push(report::PhaseGather {
                phase,
                bytes: 100,
                per_worker: false,
                ..Default::default()
            });
        }
        results.host.cluster = Some(c);
        bench::run::Outcome {
            results,
            notes: Vec::new(),
            probes: Vec::new(),
            latency: Vec::new(),
            spans: Vec::new(),
        }
    }

    #[test]
    fn repetitions_run_one_by_one_keep_every_per_rank_row() {
        let mut all = one_rep();
        let n = all.results.phases.len();
        all.merge(one_rep());
        assert_eq!(all.results.phases.len(), 2 * n);
        let c = all.results.host.cluster.unwrap();
        let each: Vec<usize> = (0..2 * n).collect();
        let ranks: Vec<usize> = c.rank_phases.iter().map(|r| r.phase).collect();
        let twice: Vec<usize> = each.iter().flat_map(|&p| [p, p]).collect();
        assert_eq!(ranks, twice);
        let gathers: Vec<usize> = c.gathers.iter().map(|g| g.phase).collect();
        assert_eq!(gathers, each);
        let nodes: Vec<usize> = c.node_phases.iter().map(|g| g.phase).collect();
        assert_eq!(nodes, each);
    }
}
