//! `ioscale sweep --nodes 1,2,4`: the sweep once per node count, each as
//! MPI ranks that this process launches, put together into one record.
//!
//! For each node count N the sweep (without `--nodes` and its output
//! flags) runs as `N × --ranks-per-node` ranks: `mpirun --host
//! H1:R,…,HN:R` on the first N of `--hosts`, or, without `--hosts`, on N
//! simulated nodes of this machine (`scripts/mpi-nodes`, one Open MPI
//! daemon per node name in its own UTS namespace). Each launch journals
//! its points to a temporary JSON record; this process reads them back,
//! labels every point's series with its node count (its workers are the
//! ranks × threads its record holds), analyses and writes the whole as
//! one sweep, to `--json` again after every node count.
//!
//! `--ranks 1,2,4` does the same over the ranks of one node (`--host
//! H1:R`, or one simulated node), each point's series naming its rank
//! count. `--nodes auto` and `--ranks auto` ask the search
//! (`analysis::adapt`, the axis keyed by the launch's count) which count
//! to launch next, after each launch, from the points measured so far;
//! the record keeps the path and each count's time as `--threads auto`
//! does.
//!
//! `--resume` reads that record back: a node count whose points are all
//! in it is not launched again; one with some of them is launched with
//! `--resume` on a journal of those (so only its missing points run, and
//! a point an interrupt cut short, never recorded, is measured again);
//! one with none runs from the start.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use analysis::adapt::{Axis, ThreadsAuto};
use analysis::{SweepPoint, SweepRecord};
use spec::{parse_count, parse_list};

use super::{emit_sweep, plan, Scale, Sweep, SweepArgs, Usage};

/// Where the ranks of each node count run.
enum Placement {
    /// `mpirun --host` on these hosts.
    Hosts(Vec<String>),
    /// Simulated nodes through this launcher script.
    Simulated(PathBuf),
}

/// The most ranks simulated nodes run (all on this machine), as
/// `--threads` is at most 4096 workers.
const MAX_SIMULATED_RANKS: u64 = 4096;

/// The counts the launches take: listed, or searched.
enum Counts {
    /// `--nodes 1,2,4`: each in turn.
    List(Vec<u32>),
    /// `--nodes auto[:MAX]`: the count the search asks for next.
    Auto(ThreadsAuto),
}

/// The most simulated nodes `--nodes auto` tries without a MAX.
const AUTO_SIMULATED_NODES: u32 = 8;

/// What `--nodes` (or `--ranks`) asks for, checked.
struct NodesPlan {
    counts: Counts,
    /// What a count is: nodes of `ranks_per_node` ranks, or ranks on one
    /// node.
    axis: Axis,
    placement: Placement,
    /// The sweep each launch runs (the same for every node count).
    plan: Sweep,
    /// With `--resume`: the record saved before.
    saved: Option<SweepRecord>,
}

/// `ioscale sweep --nodes …` (not itself under mpirun). Returns the exit
/// code: the highest of the launches'.
pub(super) fn sweep_nodes(args: &SweepArgs) -> crate::exit::Exit {
    let np = check(args).map_err(|Usage(m)| crate::exit::Failure::Usage(m))?;
    // The record's place is settled now and locked while the launches run
    // (see `Journal`): another sweep on the same --json is refused here.
    // Ctrl-C reaches the launched ranks too, which save their points;
    // this process then merges them instead of dying first (a second
    // signal still ends it). The handlers go in before the lock is taken,
    // so no signal between the two leaves the lock behind.
    let stop = crate::launch::install_signals()?;
    let command: Vec<String> = std::env::args().collect();
    let journal = match &args.json {
        Some(j) => Some(
            crate::output::Journal::open("--json", j, &command.join(" "))
                .map_err(|e| crate::exit::Failure::refused(format!("{e:#}")))?,
        ),
        None => None,
    };
    // Each launch's record goes to a private scratch directory (made and
    // removed by the safe paths: output::Scratch), read back bounded.
    let scratch = crate::output::Scratch::new("ioscale-sweep-nodes")?;
    let result = launch_all(args, &np, &scratch, &stop, journal.as_ref());
    drop(scratch);
    let (launches, exit) = result?;
    let Some(mut rec) = merge(args, &np, &launches) else {
        eprintln!("ioscale: error: no node count finished a point");
        return Ok(exit.max(1));
    };
    // Stopped here, between two launches: no launch's record says so.
    if let Some(sig) = crate::signals::name() {
        rec.interrupted = true;
        rec.stop_reason
            .get_or_insert_with(|| format!("interrupted by {sig}"));
    }
    let wrote = emit_sweep(&rec, args, journal.as_ref(), &[]);
    if rec.points.len() < rec.points_total {
        let how = match &args.json {
            Some(j) => format!(
                "saved in {}; the same command with --resume continues",
                j.display()
            ),
            None => "give --json FILE to be able to --resume".into(),
        };
        eprintln!(
            "ioscale: {} of {} points finished ({how})",
            rec.points.len(),
            rec.points_total
        );
    }
    Ok(if wrote { exit } else { exit.max(1) })
}

/// Checks `--nodes`, `--ranks-per-node`, `--hosts` and the sweep itself
/// (its points, the output paths) before anything is launched.
fn check(args: &SweepArgs) -> Result<NodesPlan, Usage> {
    let (flag, spec) = match (&args.ranks, &args.nodes) {
        (Some(r), _) => ("--ranks", r.as_str()),
        (None, n) => ("--nodes", n.as_deref().unwrap_or_default()),
    };
    let hosts_given = args
        .hosts
        .as_deref()
        .map(|h| super::words(&Some(h.to_string())).len());
    let default_max = match (flag, hosts_given) {
        ("--nodes", Some(h)) => u32::try_from(h).unwrap_or(u32::MAX),
        ("--nodes", None) => AUTO_SIMULATED_NODES,
        _ => analysis::verdict::SEARCH_MAX,
    };
    let counts = match ThreadsAuto::parse_flag(flag, spec, default_max).map_err(Usage)? {
        Some(rule) => Counts::Auto(rule),
        None => Counts::List(count_list(flag, spec)?),
    };
    let per_node = match &args.ranks_per_node {
        Some(r) => match parse_count(r).map(u32::try_from) {
            Ok(Ok(r)) if r > 0 => r,
            _ => return Err(Usage(format!("--ranks-per-node: {r} is not a rank count"))),
        },
        None => 1,
    };
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some()
        || std::env::var_os("PMI_SIZE").is_some()
        || std::env::var_os("SLURM_STEP_NUM_TASKS").is_some()
    {
        return Err(Usage(
            "--nodes launches the ranks itself: run `ioscale sweep --nodes …` without mpirun or srun".into(),
        ));
    }
    let axis = if flag == "--ranks" {
        Axis::Ranks
    } else {
        Axis::Nodes {
            ranks_per_node: per_node,
        }
    };
    let most = match &counts {
        Counts::List(v) => v.iter().copied().max().unwrap_or(1),
        Counts::Auto(rule) => rule.max,
    };
    let (most, per_node) = shape(axis, most);
    // Every count's ranks must be ranks MPI can number (a C int), and
    // simulated nodes run all of theirs on this machine.
    let ranks = u64::from(most) * u64::from(per_node);
    let (limit, why) = if args.hosts.is_some() {
        (i32::MAX as u64, "MPI numbers ranks with a C int")
    } else {
        (
            MAX_SIMULATED_RANKS,
            "simulated nodes run every rank on this machine",
        )
    };
    if ranks > limit {
        let what = match axis {
            Axis::Nodes { .. } => format!(
                "{flag} {spec} with --ranks-per-node {per_node}: {most} node(s) × {per_node} rank(s)"
            ),
            _ => format!("{flag} {spec}: {per_node} rank(s) on one node"),
        };
        return Err(Usage(format!(
            "{what} is {ranks} ranks: at most {limit} ({why})"
        )));
    }
    let placement = match &args.hosts {
        Some(h) => {
            let hosts: Vec<String> = super::words(&Some(h.clone()));
            if hosts.len() < most as usize {
                return Err(Usage(format!(
                    "--hosts: {} host(s) for {flag} up to {most} node(s); name at least {most}",
                    hosts.len()
                )));
            }
            Placement::Hosts(hosts)
        }
        None => Placement::Simulated(sim_script(args)?),
    };
    let mut plan = plan(args)?;
    if let Counts::Auto(rule) = &counts {
        // The search keys a line's points by the count alone: one point
        // per count and series.
        if plan.config.threads.len() != 1 {
            return Err(Usage(format!(
                "{flag} auto searches the {} with one --threads count (give one, e.g. --threads 1)",
                if flag == "--ranks" { "ranks" } else { "nodes" }
            )));
        }
        plan.config.threads_auto = Some(*rule);
        plan.config.search_axis = axis;
    }
    crate::output::check_output_set(
        &[
            ("--json", args.json.as_deref()),
            ("--csv", args.csv.as_deref()),
            ("--html", args.html.as_deref()),
        ],
        &[],
    )
    .map_err(|e| Usage(format!("{e:#}")))?;
    let mut np = NodesPlan {
        counts,
        axis,
        placement,
        plan,
        saved: None,
    };
    if args.resume {
        np.saved = Some(load_saved(args, &np)?);
    }
    Ok(np)
}

/// `--nodes 1,2,4` or `--ranks 1,2,4`: each a count, once.
fn count_list(flag: &str, spec: &str) -> Result<Vec<u32>, Usage> {
    let v: Vec<u32> = parse_list(spec, parse_count)
        .map_err(|e| Usage(format!("{flag}: {e}")))?
        .into_iter()
        .map(|n| match u32::try_from(n) {
            Ok(0) => Err(Usage(format!("{flag}: 0 is not a count"))),
            Ok(n) => Ok(n),
            Err(_) => Err(Usage(format!("{flag}: {n} is too large"))),
        })
        .collect::<Result<_, _>>()?;
    let mut seen = std::collections::BTreeSet::new();
    if let Some(n) = v.iter().find(|&&n| !seen.insert(n)) {
        return Err(Usage(format!(
            "{flag}: {n} is given twice (each count runs once)"
        )));
    }
    Ok(v)
}

/// A launch in the progress lines: `nodes=2`, `ranks=4`.
fn tag(axis: Axis, n: u32) -> String {
    match axis {
        Axis::Nodes { .. } => format!("nodes={n}"),
        _ => format!("ranks={n}"),
    }
}

/// (nodes, ranks on each) of count `n` on `axis`.
fn shape(axis: Axis, n: u32) -> (u32, u32) {
    match axis {
        Axis::Nodes { ranks_per_node } => (n, ranks_per_node),
        _ => (1, n),
    }
}

impl NodesPlan {
    /// Whether count `n` is one this sweep may launch.
    fn may_launch(&self, n: u32) -> bool {
        match &self.counts {
            Counts::List(v) => v.contains(&n),
            Counts::Auto(rule) => (rule.start..=rule.max).contains(&n),
        }
    }

    /// The counts the saved record holds points of.
    fn saved_counts(&self) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        for p in self.saved.iter().flat_map(|s| s.points.iter()) {
            let n = p
                .series
                .split(' ')
                .next()
                .and_then(|w| w.parse::<u32>().ok());
            if let Some(n) = n.filter(|&n| unlabel(self.axis, n, &p.series).is_some()) {
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        }
        out
    }
}

/// `--resume`: the record the same `--nodes` sweep saved in `--json`;
/// refused when it holds a point of no node count in `nodes` (another
/// `--nodes` list, or a sweep without `--nodes`), which the merged record
/// would otherwise lose.
fn load_saved(args: &SweepArgs, np: &NodesPlan) -> Result<SweepRecord, Usage> {
    let plan = &np.plan;
    let path = args
        .json
        .as_ref()
        .expect("clap requires --json with --resume");
    let saved = super::saved_journal(args, plan).map_err(Usage)?;
    if let Some(p) = saved.points.iter().find(|p| {
        let n = p
            .series
            .split(' ')
            .next()
            .and_then(|w| w.parse::<u32>().ok());
        !n.is_some_and(|n| np.may_launch(n) && unlabel(np.axis, n, &p.series).is_some())
    }) {
        let flag = np.axis.flag();
        let count = flag.trim_start_matches("--").trim_end_matches('s');
        let point = if p.series.is_empty() {
            format!("a point at {} threads with no {count} count", p.threads)
        } else {
            format!(
                "point `{}` at {} threads, of no {count} count {flag} may launch",
                p.series, p.threads
            )
        };
        return Err(Usage(format!(
            "--resume: {} holds {point}; resume with the {flag} that wrote it",
            path.display(),
        )));
    }
    Ok(saved)
}

/// The series label of a point of count `n` ("2 nodes", "4 ranks").
fn label(axis: Axis, n: u32, series: &str) -> String {
    let nodes = axis.count_text(n);
    if series.is_empty() {
        nodes
    } else {
        format!("{nodes} {series}")
    }
}

/// The series a launch gave a point that [`label`] labelled with `n`
/// nodes; `None` for a point of another node count.
fn unlabel(axis: Axis, n: u32, series: &str) -> Option<&str> {
    let nodes = label(axis, n, "");
    let rest = series.strip_prefix(nodes.as_str())?;
    match rest.strip_prefix(' ') {
        Some(r) => Some(r),
        None => rest.is_empty().then_some(""),
    }
}

/// The points of `saved` that node count `n` measured, as its launch
/// recorded them: its own series and its own point numbers (those of
/// `plan`). A point that matches no point of the plan is dropped.
fn done_at(saved: &SweepRecord, axis: Axis, n: u32, plan: &Sweep) -> Vec<SweepPoint> {
    let mut out: Vec<SweepPoint> = saved
        .points
        .iter()
        .filter_map(|p| {
            let series = unlabel(axis, n, &p.series)?;
            let index = plan.points.iter().position(|q| {
                q.threads == p.threads
                    && q.xfer == p.xfer
                    && q.layout == p.layout
                    && q.target == p.target
                    && q.series == series
            })?;
            let mut p = p.clone();
            p.series = series.to_string();
            p.index = index;
            Some(p)
        })
        .collect();
    out.sort_by_key(|p| p.index);
    out.dedup_by_key(|p| p.index);
    out
}

/// A launch's record holding only `points` (those done before).
fn seed_record(saved: &SweepRecord, plan: &Sweep, points: Vec<SweepPoint>) -> SweepRecord {
    SweepRecord {
        interrupted: false,
        stop_reason: None,
        points_total: plan.points.len(),
        points,
        analysis: Default::default(),
        ..saved.clone()
    }
}

/// The simulated nodes' launcher: `--sim-nodes`, else `scripts/mpi-nodes`
/// of the source tree this binary was built in (or the current directory).
fn sim_script(args: &SweepArgs) -> Result<PathBuf, Usage> {
    if let Some(p) = &args.sim_nodes {
        if !p.is_file() {
            return Err(Usage(format!("--sim-nodes: {} is not a file", p.display())));
        }
        return Ok(p.clone());
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let found = exe
        .ancestors()
        .skip(1)
        .chain(std::iter::once(Path::new(".")))
        .map(|d| d.join("scripts/mpi-nodes"))
        .find(|p| p.is_file());
    found.ok_or_else(|| {
        Usage(
            "--nodes without --hosts runs simulated nodes on this machine through ioscale's \
             scripts/mpi-nodes, which was not found: give --sim-nodes PATH, or --hosts H1,H2,… \
             for real nodes"
                .into(),
        )
    })
}

fn record_name(n: u32) -> String {
    format!("nodes-{n}.json")
}

/// What the launches gave so far.
#[derive(Default)]
struct Launches {
    /// Each count's record, in launch order.
    records: Vec<(u32, SweepRecord)>,
    /// The counts launched (or taken from the saved record), in order.
    tried: Vec<u32>,
    /// The wall time of each count launched (count, seconds), the saved
    /// record's included.
    times: Vec<(u32, f64)>,
    /// The highest exit code.
    exit: i32,
    /// An interrupt or a refusal: nothing more is launched.
    stopped: bool,
}

/// Launches the sweep once per count (with `--resume`, only the counts
/// with points still missing, each resuming from the ones it had): the
/// listed counts in turn, or the counts the search asks for. After each
/// count the whole so far is written to `--json`, so a sweep stopped
/// later keeps it.
fn launch_all(
    args: &SweepArgs,
    np: &NodesPlan,
    scratch: &crate::output::Scratch,
    stop: &AtomicBool,
    journal: Option<&crate::output::Journal>,
) -> anyhow::Result<(Launches, i32)> {
    let exe = std::env::current_exe()?;
    let mut l = Launches {
        times: np
            .saved
            .as_ref()
            .and_then(|s| s.search.as_ref())
            .map(|s| s.times.clone())
            .unwrap_or_default(),
        ..Default::default()
    };
    loop {
        let n = match &np.counts {
            Counts::List(v) => match v.get(l.tried.len()) {
                Some(&n) => n,
                None => break,
            },
            Counts::Auto(_) if l.stopped => break,
            // A count asked for again (its launch wrote no record) ends
            // the search rather than launching it forever.
            Counts::Auto(_) => match next_count(args, np, &l) {
                Some(n) if !l.tried.contains(&n) => n,
                _ => break,
            },
        };
        l.tried.push(n);
        launch_one(args, np, n, scratch, stop, &exe, &mut l)?;
        write_journal(args, np, &l, journal);
    }
    if l.stopped {
        // The saved counts the search did not reach stay in the record.
        for n in np.saved_counts() {
            if !l.tried.contains(&n) {
                l.tried.push(n);
                let saved = np.saved.as_ref().expect("saved counts");
                let done = done_at(saved, np.axis, n, &np.plan);
                l.records.push((n, seed_record(saved, &np.plan, done)));
            }
        }
        write_journal(args, np, &l, journal);
    }
    let exit = l.exit;
    Ok((l, exit))
}

/// The count the search asks for next, from the points so far; `None`
/// when it has nothing left to measure.
fn next_count(args: &SweepArgs, np: &NodesPlan, l: &Launches) -> Option<u32> {
    let Counts::Auto(rule) = &np.counts else {
        return None;
    };
    let Some(rec) = merge(args, np, l) else {
        return rule.ladder().first().copied();
    };
    let s = rec.search?;
    s.lines.iter().filter_map(|x| x.next).min()
}

/// Launches count `n` (or takes its points from the saved record when
/// they are all there), adding its record, time and exit code to `l`.
fn launch_one(
    args: &SweepArgs,
    np: &NodesPlan,
    n: u32,
    scratch: &crate::output::Scratch,
    stop: &AtomicBool,
    exe: &Path,
    l: &mut Launches,
) -> anyhow::Result<()> {
    // A signal between two launches (while the last one's points were
    // merged and written) stops the sweep here, as one during a launch
    // does.
    if !l.stopped && stop.load(Ordering::Relaxed) {
        l.exit = l.exit.max(130);
        l.stopped = true;
    }
    let name = record_name(n);
    let json = scratch.file(&name);
    let mut resume = false;
    let done = np
        .saved
        .as_ref()
        .map(|s| (s, done_at(s, np.axis, n, &np.plan)))
        .filter(|(_, d)| !d.is_empty());
    if let Some((saved, done)) = done {
        let seed = seed_record(saved, &np.plan, done);
        if l.stopped {
            // Not launched, but what it had stays in the record.
            l.records.push((n, seed));
            return Ok(());
        }
        if seed.points.len() == np.plan.points.len() {
            eprintln!(
                "ioscale: {}: all {} points already done",
                tag(np.axis, n),
                seed.points.len()
            );
            l.records.push((n, seed));
            return Ok(());
        }
        crate::output::write_named("scratch", &json, &analysis::render::render_json(&seed)?)?;
        resume = true;
    }
    if l.stopped {
        return Ok(());
    }
    let (nodes, per) = shape(np.axis, n);
    let mut cmd = launcher(np, nodes, per);
    cmd.arg(exe).args(child_args(args, &json, resume));
    eprintln!(
        "ioscale: {}: {} ranks ({nodes}×{per})",
        tag(np.axis, n),
        nodes * per
    );
    let t0 = Instant::now();
    let status = cmd
        .status()
        .map_err(|e| anyhow::anyhow!("starting {:?}: {e}", cmd.get_program()))?;
    let secs = t0.elapsed().as_secs_f64();
    match l.times.iter_mut().find(|x| x.0 == n) {
        // A count resumed after an interrupt: its time adds up.
        Some(x) => x.1 += secs,
        None => l.times.push((n, secs)),
    }
    let code = status.code().unwrap_or(1);
    l.exit = l.exit.max(code);
    match scratch.read(&name) {
        Some(b) => l
            .records
            .push((n, serde_json::from_slice::<SweepRecord>(&b)?)),
        None => {
            eprintln!(
                "ioscale: error: {}: the ranks wrote no record (exit code {code})",
                tag(np.axis, n)
            );
            l.exit = l.exit.max(1);
        }
    }
    if code == 130 || code == 129 || code == 2 || stop.load(Ordering::Relaxed) {
        // Interrupted, or refused: the other counts would be too.
        l.exit = l.exit.max(if code == 2 { 2 } else { 130 });
        l.stopped = true;
    }
    Ok(())
}

/// Writes the counts done so far to `--json` (when given).
fn write_journal(
    args: &SweepArgs,
    np: &NodesPlan,
    l: &Launches,
    journal: Option<&crate::output::Journal>,
) {
    let Some(journal) = journal else {
        return;
    };
    let Some(rec) = merge(args, np, l) else {
        return;
    };
    let written = analysis::render::render_json(&rec)
        .map_err(anyhow::Error::from)
        .and_then(|b| journal.write(&b));
    if let Err(e) = written {
        eprintln!("ioscale: error: {e:#}");
    }
}

/// mpirun (or the simulated nodes' launcher) for `n` nodes of `per`
/// ranks, up to the program name.
fn launcher(np: &NodesPlan, n: u32, per: u32) -> Command {
    let per_node = per;
    let per = per.to_string();
    match &np.placement {
        Placement::Simulated(script) => {
            let mut c = Command::new(script);
            c.args(["run", &n.to_string(), &per, "--bind-to", "none", "--"]);
            c
        }
        Placement::Hosts(hosts) => {
            let list: Vec<String> = hosts[..n as usize]
                .iter()
                .map(|h| format!("{h}:{per}"))
                .collect();
            let mut c = Command::new("mpirun");
            // SAFETY: geteuid has no preconditions and cannot fail.
            if unsafe { libc::geteuid() } == 0 {
                c.arg("--allow-run-as-root");
            }
            c.arg("--host")
                .arg(list.join(","))
                .arg("-np")
                .arg((n * per_node).to_string());
            c
        }
    }
}

/// The words of the sweep each launch runs: this sweep's points and
/// statistics, its record to `json` (resumed from it with `resume`), one
/// progress line per phase.
fn child_args(args: &SweepArgs, json: &Path, resume: bool) -> Vec<String> {
    let mut a = vec![
        "sweep".to_string(),
        "--threads".into(),
        args.threads.clone(),
    ];
    let mut opt = |flag: &str, v: &Option<String>| {
        if let Some(v) = v {
            a.push(flag.into());
            a.push(v.clone());
        }
    };
    opt("--xfer", &args.xfer);
    opt("--layout", &args.layout);
    opt("--target", &args.target);
    opt("--iodepth", &args.iodepth);
    opt("--reps", &args.reps);
    opt("--max-reps", &args.max_reps);
    opt("--trim", &args.trim);
    if let Some(s) = args.scale {
        a.push("--scale".into());
        a.push(
            match s {
                Scale::Total => "total",
                Scale::PerThread => "per-thread",
            }
            .into(),
        );
    }
    a.extend(["--quiet".into(), "--progress".into(), "plain".into()]);
    a.extend(crate::history_run::child_flags(&args.history));
    a.push("--json".into());
    a.push(json.display().to_string());
    if resume {
        a.push("--resume".into());
    }
    a.push("--".into());
    a.extend(args.inner.iter().cloned());
    a
}

/// One sweep record of every count's points, in launch order, each
/// point's series led by its count, out of the points of every count
/// (under a search, of the counts measured, and one more while it goes
/// on); resumed, it keeps the saved record's start and command line.
/// Under `auto` the record says what was searched and keeps the path and
/// times, and the search is read from its points.
fn merge(args: &SweepArgs, np: &NodesPlan, l: &Launches) -> Option<SweepRecord> {
    let mut it = l.records.iter().cloned();
    let (n0, mut rec) = it.next()?;
    match &np.saved {
        Some(s) => {
            rec.started = s.started.clone();
            rec.command = s.command.clone();
        }
        None => rec.command = std::env::args().collect(),
    }
    for p in &mut rec.points {
        p.series = label(np.axis, n0, &p.series);
    }
    for (n, r) in it {
        rec.interrupted |= r.interrupted;
        rec.stop_reason = rec.stop_reason.or(r.stop_reason);
        for mut p in r.points {
            p.series = label(np.axis, n, &p.series);
            rec.points.push(p);
        }
    }
    for (i, p) in rec.points.iter_mut().enumerate() {
        p.index = i;
    }
    let per_count = np.plan.points.len();
    rec.points_total = per_count * l.records.len().max(1);
    match &np.counts {
        Counts::List(v) => {
            rec.points_total = per_count * v.len();
            rec.analysis = analysis::analyse_with(&rec, args.view.units.units());
        }
        Counts::Auto(rule) => {
            rec.config.threads_auto = Some(*rule);
            rec.config.search_axis = np.axis;
            let mut path: Vec<u32> = np
                .saved
                .as_ref()
                .and_then(|s| s.search.as_ref())
                .map(|s| s.path.clone())
                .unwrap_or_default();
            for &(n, _) in &l.records {
                if !path.contains(&n) {
                    path.push(n);
                }
            }
            rec.search = Some(analysis::adapt::search_report(
                rule,
                &[],
                &path,
                &l.times,
                false,
            ));
            analysis::findings::reanalyse(&mut rec, args.view.units.units());
            if rec.search.as_ref().is_some_and(|s| !s.done) {
                rec.points_total += per_count;
            }
        }
    }
    Some(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_come_off_only_for_their_node_count() {
        let nodes = Axis::Nodes { ranks_per_node: 2 };
        for axis in [nodes, Axis::Ranks] {
            for (n, series) in [(1, ""), (1, "shared"), (2, ""), (10, "64 KiB")] {
                let l = label(axis, n, series);
                assert_eq!(unlabel(axis, n, &l), Some(series), "{l}");
                assert_eq!(analysis::findings::without_nodes(&l), series, "{l}");
            }
        }
        assert_eq!(unlabel(nodes, 1, "10 nodes"), None);
        assert_eq!(unlabel(nodes, 1, "1 nodes"), None);
        assert_eq!(unlabel(nodes, 2, "1 node"), None);
        assert_eq!(unlabel(nodes, 2, "2 nodesx"), None);
        assert_eq!(unlabel(Axis::Ranks, 2, "2 nodes"), None);
        assert_eq!(unlabel(nodes, 4, "4 ranks"), None);
    }
}
