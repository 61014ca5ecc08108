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
//! `--resume` reads that record back: a node count whose points are all
//! in it is not launched again; one with some of them is launched with
//! `--resume` on a journal of those (so only its missing points run, and
//! a point an interrupt cut short, never recorded, is measured again);
//! one with none runs from the start.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// What `--nodes` asks for, checked.
struct NodesPlan {
    nodes: Vec<u32>,
    per_node: u32,
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
    let (records, exit) = result?;
    let Some(mut rec) = merge(args, &np, records) else {
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
    let list = args.nodes.as_deref().unwrap_or_default();
    let nodes: Vec<u32> = parse_list(list, parse_count)
        .map_err(|e| Usage(format!("--nodes: {e}")))?
        .into_iter()
        .map(|n| match u32::try_from(n) {
            Ok(0) => Err(Usage("--nodes: 0 is not a node count".into())),
            Ok(n) => Ok(n),
            Err(_) => Err(Usage(format!("--nodes: {n} is too large"))),
        })
        .collect::<Result<_, _>>()?;
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
    let mut seen = std::collections::BTreeSet::new();
    if let Some(n) = nodes.iter().find(|&&n| !seen.insert(n)) {
        return Err(Usage(format!(
            "--nodes: {n} is given twice (each node count runs once)"
        )));
    }
    let most = nodes.iter().copied().max().unwrap_or(1);
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
        return Err(Usage(format!(
            "--nodes {most} × --ranks-per-node {per_node} is {ranks} ranks: at most {limit} ({why})"
        )));
    }
    let placement = match &args.hosts {
        Some(h) => {
            let hosts: Vec<String> = super::words(&Some(h.clone()));
            if hosts.len() < most as usize {
                return Err(Usage(format!(
                    "--hosts: {} host(s) for --nodes up to {most}; name at least {most}",
                    hosts.len()
                )));
            }
            Placement::Hosts(hosts)
        }
        None => Placement::Simulated(sim_script(args)?),
    };
    let plan = plan(args)?;
    crate::output::check_output_set(
        &[
            ("--json", args.json.as_deref()),
            ("--csv", args.csv.as_deref()),
            ("--html", args.html.as_deref()),
        ],
        &[],
    )
    .map_err(|e| Usage(format!("{e:#}")))?;
    let saved = if args.resume {
        Some(load_saved(args, &plan, &nodes)?)
    } else {
        None
    };
    Ok(NodesPlan {
        nodes,
        per_node,
        placement,
        plan,
        saved,
    })
}

/// `--resume`: the record the same `--nodes` sweep saved in `--json`;
/// refused when it holds a point of no node count in `nodes` (another
/// `--nodes` list, or a sweep without `--nodes`), which the merged record
/// would otherwise lose.
fn load_saved(args: &SweepArgs, plan: &Sweep, nodes: &[u32]) -> Result<SweepRecord, Usage> {
    let path = args
        .json
        .as_ref()
        .expect("clap requires --json with --resume");
    let saved = super::saved_journal(args, plan).map_err(Usage)?;
    if let Some(p) = saved
        .points
        .iter()
        .find(|p| !nodes.iter().any(|&n| unlabel(n, &p.series).is_some()))
    {
        return Err(Usage(format!(
            "--resume: {} holds point `{}` at {} threads, of no node count in --nodes; \
             resume with the --nodes list that wrote it",
            path.display(),
            p.series,
            p.threads
        )));
    }
    Ok(saved)
}

/// The series label of a point of node count `n`.
fn label(n: u32, series: &str) -> String {
    let nodes = if n == 1 {
        "1 node".to_string()
    } else {
        format!("{n} nodes")
    };
    if series.is_empty() {
        nodes
    } else {
        format!("{nodes} {series}")
    }
}

/// The series a launch gave a point that [`label`] labelled with `n`
/// nodes; `None` for a point of another node count.
fn unlabel(n: u32, series: &str) -> Option<&str> {
    let nodes = label(n, "");
    let rest = series.strip_prefix(nodes.as_str())?;
    match rest.strip_prefix(' ') {
        Some(r) => Some(r),
        None => rest.is_empty().then_some(""),
    }
}

/// The points of `saved` that node count `n` measured, as its launch
/// recorded them: its own series and its own point numbers (those of
/// `plan`). A point that matches no point of the plan is dropped.
fn done_at(saved: &SweepRecord, n: u32, plan: &Sweep) -> Vec<SweepPoint> {
    let mut out: Vec<SweepPoint> = saved
        .points
        .iter()
        .filter_map(|p| {
            let series = unlabel(n, &p.series)?;
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

/// Launches the sweep once per node count (with `--resume`, only the
/// counts with points still missing, each resuming from the ones it had);
/// returns each count's record and the highest exit code. After each
/// count the whole so far is written to `--json`, so a sweep stopped
/// later keeps it.
fn launch_all(
    args: &SweepArgs,
    np: &NodesPlan,
    scratch: &crate::output::Scratch,
    stop: &AtomicBool,
    journal: Option<&crate::output::Journal>,
) -> anyhow::Result<(Vec<(u32, SweepRecord)>, i32)> {
    let exe = std::env::current_exe()?;
    let mut records = Vec::new();
    let mut exit = 0;
    let mut stopped = false;
    for &n in &np.nodes {
        // A signal between two launches (while the last one's points were
        // merged and written) stops the sweep here, as one during a launch
        // does.
        if !stopped && stop.load(Ordering::Relaxed) {
            exit = exit.max(130);
            stopped = true;
        }
        let name = record_name(n);
        let json = scratch.file(&name);
        let mut resume = false;
        let done = np
            .saved
            .as_ref()
            .map(|s| (s, done_at(s, n, &np.plan)))
            .filter(|(_, d)| !d.is_empty());
        if let Some((saved, done)) = done {
            let seed = seed_record(saved, &np.plan, done);
            if stopped {
                // Not launched, but what it had stays in the record.
                records.push((n, seed));
                continue;
            }
            if seed.points.len() == np.plan.points.len() {
                eprintln!(
                    "ioscale: nodes={n}: all {} points already done",
                    seed.points.len()
                );
                records.push((n, seed));
                continue;
            }
            crate::output::write_named("scratch", &json, &analysis::render::render_json(&seed)?)?;
            resume = true;
        }
        if stopped {
            continue;
        }
        let mut cmd = launcher(np, n);
        cmd.arg(&exe).args(child_args(args, &json, resume));
        eprintln!(
            "ioscale: nodes={n}: {} ranks ({n}×{})",
            n * np.per_node,
            np.per_node
        );
        let status = cmd
            .status()
            .map_err(|e| anyhow::anyhow!("starting {:?}: {e}", cmd.get_program()))?;
        let code = status.code().unwrap_or(1);
        exit = exit.max(code);
        match scratch.read(&name) {
            Some(b) => records.push((n, serde_json::from_slice::<SweepRecord>(&b)?)),
            None => {
                eprintln!(
                    "ioscale: error: nodes={n}: the ranks wrote no record (exit code {code})"
                );
                exit = exit.max(1);
            }
        }
        if code == 130 || code == 129 || code == 2 || stop.load(Ordering::Relaxed) {
            // Interrupted, or refused: the other node counts would be too.
            exit = exit.max(if code == 2 { 2 } else { 130 });
            stopped = true;
        }
        write_journal(args, np, &records, journal);
    }
    if stopped {
        write_journal(args, np, &records, journal);
    }
    Ok((records, exit))
}

/// Writes the node counts done so far to `--json` (when given).
fn write_journal(
    args: &SweepArgs,
    np: &NodesPlan,
    records: &[(u32, SweepRecord)],
    journal: Option<&crate::output::Journal>,
) {
    let Some(journal) = journal else {
        return;
    };
    let Some(rec) = merge(args, np, records.to_vec()) else {
        return;
    };
    let written = analysis::render::render_json(&rec)
        .map_err(anyhow::Error::from)
        .and_then(|b| journal.write(&b));
    if let Err(e) = written {
        eprintln!("ioscale: error: {e:#}");
    }
}

/// mpirun (or the simulated nodes' launcher) for `n` nodes, up to the
/// program name.
fn launcher(np: &NodesPlan, n: u32) -> Command {
    let per = np.per_node.to_string();
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
                .arg((n * np.per_node).to_string());
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

/// One sweep record of every node count's points, in launch order, each
/// point's series led by its node count, out of the points of every
/// node count; resumed, it keeps the saved record's start and command
/// line.
fn merge(
    args: &SweepArgs,
    np: &NodesPlan,
    records: Vec<(u32, SweepRecord)>,
) -> Option<SweepRecord> {
    let mut it = records.into_iter();
    let (n0, mut rec) = it.next()?;
    rec.points_total = np.plan.points.len() * np.nodes.len();
    match &np.saved {
        Some(s) => {
            rec.started = s.started.clone();
            rec.command = s.command.clone();
        }
        None => rec.command = std::env::args().collect(),
    }
    for p in &mut rec.points {
        p.series = label(n0, &p.series);
    }
    for (n, r) in it {
        rec.interrupted |= r.interrupted;
        rec.stop_reason = rec.stop_reason.or(r.stop_reason);
        for mut p in r.points {
            p.series = label(n, &p.series);
            rec.points.push(p);
        }
    }
    for (i, p) in rec.points.iter_mut().enumerate() {
        p.index = i;
    }
    rec.analysis = analysis::analyse_with(&rec, args.view.units.units());
    Some(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_come_off_only_for_their_node_count() {
        for (n, series) in [(1, ""), (1, "shared"), (2, ""), (10, "64 KiB")] {
            let l = label(n, series);
            assert_eq!(unlabel(n, &l), Some(series), "{l}");
        }
        assert_eq!(unlabel(1, "10 nodes"), None);
        assert_eq!(unlabel(1, "1 nodes"), None);
        assert_eq!(unlabel(2, "1 node"), None);
        assert_eq!(unlabel(2, "2 nodesx"), None);
    }
}
