//! `ioscale io500`: the IO500 benchmark's phases, score and output.
//!
//! io500 (tag io500-isc26_v2) runs IOR, mdtest and pfind with fixed
//! parameters in a fixed order, and ranks a storage system by the
//! geometric means of their figures. This front-end reads io500's `.ini`
//! ([`config`]), walks its phase table ([`phases`]) with the fixed
//! parameters, runs each phase on ioscale's tasks — threads, and MPI ranks
//! under mpirun or srun — with IOR's and mdtest's stonewall wear-out
//! ([`exec`], [`work`]), scores ([`score`]) and prints io500's lines and
//! results directory ([`output`]), plus ioscale's JSON record. Only the
//! files and directories this run created are removed.

pub mod config;
mod dispatch;
pub mod exec;
pub mod html;
pub mod output;
pub mod phases;
pub mod score;
pub mod sweep;
pub mod work;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use clap::Parser;
use coord::Coordinator;
use serde_json::json;

use config::Config;
use exec::{Ctx, PhaseRun};
use phases::{FindScope, Group, Kind, Phase, Step};
use score::Scored;
use work::Names;

use crate::exit::{Exit, Failure};

/// The io500 release whose phases, parameters and rules are followed.
pub const IO500_VERSION: &str = "io500-isc26_v2";

/// The examples and notes of `ioscale io500 --help` (and its man page).
pub const HELP: &str =
    "Examples:\n  ioscale io500 config.ini                      # an io500 config, unchanged\n  \
# a short trial (marked INVALID)\n  \
ioscale io500 --tasks 4 --stonewall 2s trial.ini /mnt/fs\n  \
# with the MPI build: one task per rank\n  \
mpirun -np 8 ioscale io500 config.ini\n\n\
The rules need a 300 s stonewall; a shorter one (--stonewall, or [debug]\n\
stonewall-time) makes the run INVALID, as in io500. Exit codes: 0 ran clean,\n\
1 I/O errors or failed data check, 2 usage or setup error, 130 interrupted\n\
(SIGINT, SIGTERM; 129 for SIGHUP: the phases done are kept, the score is\n\
INVALID). See docs/io500.md.";

/// `ioscale io500`'s command line.
#[derive(Parser, Debug)]
#[command(
    name = "ioscale io500",
    about = "Run the IO500 benchmark's phases (io500 isc26_v2) and print its [RESULT] and [SCORE ] lines",
    after_help = HELP
)]
struct Args {
    /// An io500 .ini file (a name ending in .ini) and/or the data directory (io500's datadir).
    #[arg(value_name = "CONFIG.ini|TARGET")]
    operands: Vec<String>,
    /// Tasks (threads) per process; under mpirun, per rank.
    #[arg(short = 't', long, default_value_t = 1, value_name = "N")]
    tasks: u32,
    /// Stonewall of the write phases (e.g. 300, 2s, 5m); overrides [debug] stonewall-time.
    #[arg(long, value_name = "DURATION")]
    stonewall: Option<String>,
    /// standard, or extended (adds the optional ior-rnd*/find-* phases and [SCOREX]).
    #[arg(long, default_value = "standard", value_parser = ["standard", "extended"])]
    mode: String,
    /// Where the results go (overrides [global] resultdir).
    #[arg(long, value_name = "DIR")]
    resultdir: Option<PathBuf>,
    /// Write ioscale's JSON record of the run here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the HTML report (score, charts, each phase's figures and what limited it) here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Internal (set by `ioscale sweep -- io500`): a subdirectory of the
    /// resultdir for this run, so the points of a sweep keep their results.
    #[arg(long, hide = true, value_name = "NAME")]
    resultdir_sub: Option<String>,
    /// Keep the data files at the end (io500 removes them), e.g. to inspect their layout.
    #[arg(long)]
    keep: bool,
}

fn parse_duration(v: &str) -> Result<u64, String> {
    let (num, mult) = match v.trim().chars().last() {
        Some('s') => (&v[..v.len() - 1], 1),
        Some('m') => (&v[..v.len() - 1], 60),
        Some('h') => (&v[..v.len() - 1], 3600),
        _ => (v, 1),
    };
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("--stonewall {v}: expected seconds (300, 2s, 5m)"))?;
    if n == 0 {
        return Err(format!("--stonewall {v}: must be at least 1 second"));
    }
    n.checked_mul(mult)
        .ok_or_else(|| format!("--stonewall {v}: more seconds than ioscale counts"))
}

/// Local time as io500's directory stamp, `YYYY.MM.DD-HH.MM.SS`.
fn stamp_now() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as libc::time_t)
        .unwrap_or(0);
    // SAFETY: `tm` is plain data that localtime_r fills in; both pointers
    // are valid for the duration of the call.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        tm
    };
    format!(
        "{:04}.{:02}.{:02}-{:02}.{:02}.{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

/// The settings a run uses once the command line is applied to the config.
struct Setup {
    cfg: Config,
    extended: bool,
    ini: Option<(PathBuf, String)>,
}

fn setup(a: &Args) -> Result<Setup, String> {
    let mut ini = None;
    let mut target = None;
    for op in &a.operands {
        if op.ends_with(".ini") {
            if ini.is_some() {
                return Err(format!("{op}: one config file only"));
            }
            let text = std::fs::read_to_string(op).map_err(|e| format!("config {op}: {e}"))?;
            ini = Some((PathBuf::from(op), text));
        } else if target.replace(PathBuf::from(op)).is_some() {
            return Err(format!(
                "{op}: one TARGET (data directory) only; name the config with a .ini file name"
            ));
        }
    }
    let mut cfg = match &ini {
        Some((p, text)) => config::parse(&p.display().to_string(), text)?,
        None => Config::default(),
    };
    if let Some(t) = target {
        cfg.datadir = t;
    }
    if let Some(r) = &a.resultdir {
        cfg.resultdir = r.clone();
    }
    if let Some(s) = &a.stonewall {
        cfg.stonewall_s = parse_duration(s)?;
    }
    if cfg.stonewall_s == 0 {
        return Err(
            "[debug] stonewall-time = 0: the write phases need a stonewall of at least 1 s".into(),
        );
    }
    if a.tasks == 0 {
        return Err("--tasks 0: at least one task".into());
    }
    // Each task is a thread of this process: the limit `--threads` has
    // (100000 tasks panicked when the system refused a thread).
    if a.tasks > MAX_TASKS {
        return Err(format!(
            "--tasks {} is out of range: at most {MAX_TASKS} a process (run more under mpirun)",
            a.tasks
        ));
    }
    // Each task holds one transfer in memory: the limit `run` and `ior`
    // put on a request (a 1 TiB transfer aborted the run on allocation).
    if cfg.easy_xfer > MAX_EASY_XFER {
        return Err(format!(
            "[ior-easy] transferSize {} is out of range: at most 2 GiB per request",
            cfg.easy_xfer
        ));
    }
    if cfg.easy_xfer == 0 || cfg.easy_block < cfg.easy_xfer || cfg.easy_block % cfg.easy_xfer != 0 {
        return Err(format!(
            "[ior-easy] blockSize {} must be a multiple of transferSize {} (as IOR requires)",
            cfg.easy_block, cfg.easy_xfer
        ));
    }
    for (name, block, xfer) in [
        ("ior-rnd4K", cfg.rnd4k_block, 4096u64),
        ("ior-rnd1MB", cfg.rnd1mb_block, 1 << 20),
    ] {
        if block < xfer.max(1024) || block % xfer != 0 {
            return Err(format!(
                "[{name}] blockSize {block} must be a multiple of the transfer size {xfer}"
            ));
        }
    }
    if cfg.hard_segments == 0 || cfg.md_easy_n == 0 || cfg.md_hard_n == 0 {
        return Err("[ior-hard] segmentCount and [mdtest-*] n must be at least 1".into());
    }
    Ok(Setup {
        cfg,
        extended: a.mode == "extended",
        ini,
    })
}

/// The most tasks (threads) one process runs, as `--threads` allows.
const MAX_TASKS: u32 = 4096;

/// The largest `[ior-easy] transferSize` (as `--xfer` takes).
const MAX_EASY_XFER: u64 = 2 << 30;

/// Runs `ioscale io500`; each task is a thread, and under mpirun or srun
/// each rank runs `--tasks` of them.
pub fn main(args: &[String]) -> Exit {
    crate::launch::as_ranks(|coord| ranks_main(args, coord))
}

/// What the phases left for the later ones and for cleanup.
#[derive(Default)]
struct State {
    easy: Option<Vec<u64>>,
    hard: Option<Vec<u64>>,
    rnd4k: Option<Vec<u64>>,
    rnd1mb: Option<Vec<u64>>,
    md_easy: Option<Vec<u64>>,
    md_hard: Option<Vec<u64>>,
    md_easy_gone: bool,
    md_hard_gone: bool,
    stamp_ns: Option<i128>,
}

/// A finished phase, as printed and recorded.
struct Done {
    phase: Phase,
    run: Option<PhaseRun>,
    score: f64,
    valid: bool,
    reasons: Vec<String>,
    t_start: String,
    t_end: String,
}

fn ranks_main(args: &[String], coord: &dyn Coordinator) -> Exit {
    ranks_main_quiet(args, coord, false)
}

/// One io500 run on every rank; with `quiet`, nothing on standard output
/// (the result files and `--json` are still written).
pub(crate) fn ranks_main_quiet(args: &[String], coord: &dyn Coordinator, quiet: bool) -> Exit {
    crate::history_run::check_env()?;
    let Some(start) = start(args, coord)? else {
        return Ok(0);
    };
    let stop = crate::launch::install_signals()?;
    let ctx = Ctx {
        coord,
        tasks: start.a.tasks,
        stop,
        datadir: start.cfg.datadir.clone(),
    };
    let root = coord.rank() == 0;
    if root {
        for n in &start.cfg.notes {
            eprintln!("io500: note: {n}");
        }
    }
    let mut log = Log {
        show: root && !quiet,
        lines: Vec::new(),
    };
    log.say(format!(
        "IO500 version {IO500_VERSION} ({}), run by ioscale {}",
        if start.extended {
            "extended"
        } else {
            "standard"
        },
        env!("CARGO_PKG_VERSION")
    ));
    let mut run = Phases::default();
    let required = start.cfg.required_stonewall();
    if start.cfg.stonewall_s != required {
        let r = format!("stonewall-time {}s != {required}s", start.cfg.stonewall_s);
        log.say(format!("ERROR INVALID {r}"));
        run.reasons.push(r);
    }
    run_phases(&start, &ctx, &mut run, &mut log);
    let verdict = verdict(&run, start.extended, &mut log);
    // Every rank has finished with the files before rank 0 removes them.
    coord.barrier();
    if !root {
        return Ok(exit_code(run.interrupted, run.errors));
    }
    finish(&start, coord, &run, verdict, log, quiet)
}

/// A run's settings once its command line, config and directories are
/// in place.
struct Start {
    a: Args,
    cfg: Config,
    extended: bool,
    names: Names,
    plan: Vec<Phase>,
    /// The directories rank 0 made (removed at the end).
    created: Made,
    /// Every rank's host, by rank.
    hosts: Vec<String>,
}

/// Parses the command line and config, and lets rank 0 make the
/// directories; `None` when `--help` (or `--version`) was printed instead.
fn start(args: &[String], coord: &dyn Coordinator) -> Result<Option<Start>, Failure> {
    let root = coord.rank() == 0;
    let mut argv = vec!["ioscale io500".to_string()];
    argv.extend(args.iter().cloned());
    let a = match Args::try_parse_from(&argv) {
        Ok(a) => a,
        Err(e) if e.use_stderr() => return Err(Failure::Clap(e)),
        Err(e) => {
            if root {
                let _ = e.print();
            }
            return Ok(None);
        }
    };
    let s = setup(&a).map_err(Failure::Usage)?;
    crate::launch::check_outputs(
        coord,
        &[("--json", a.json.as_deref()), ("--html", a.html.as_deref())],
    )?;
    let mut cfg = s.cfg;
    let stamp = coord.broadcast_as(&stamp_now())?;
    if cfg.timestamp_datadir {
        cfg.datadir = cfg.datadir.join(&stamp);
    }
    if cfg.timestamp_resultdir {
        cfg.resultdir = cfg.resultdir.join(&stamp);
    }
    if let Some(sub) = &a.resultdir_sub {
        cfg.resultdir = cfg.resultdir.join(sub);
    }
    let mut names = Names {
        d: cfg.datadir.clone(),
        workers: a.tasks * coord.size(),
        fpp: cfg.easy_fpp,
        unique: cfg.easy_unique_dir,
        dirs: Default::default(),
    };
    let plan: Vec<Phase> = phases::plan(s.extended)
        .into_iter()
        .filter(|p| cfg.runs(phases::sub_section(p), p.section))
        .collect();
    // Rank 0 makes the directories; the others start only when it did.
    let made = if root {
        prepare(&cfg, &names, &plan, s.ini.as_ref())
    } else {
        Ok(Made::default())
    };
    let failed = coord.any(made.is_err());
    let created = match made {
        Ok(c) if !failed => c,
        Ok(c) => {
            remove_dirs(&c);
            return Err(Failure::Said(2));
        }
        Err(e) => return Err(Failure::Refused(e)),
    };
    // Every rank checks the directories it works in against rank 0's record.
    let dirs = coord.broadcast_as(&created.dirs)?;
    names.dirs = std::sync::Arc::new(if root { dirs } else { dirs.on_other_rank() });
    Ok(Some(Start {
        a,
        cfg,
        extended: s.extended,
        names,
        plan,
        created,
        hosts: rank_hosts(coord),
    }))
}

/// The lines of io500's output: printed on rank 0 (unless quiet) and kept
/// for result.txt.
struct Log {
    show: bool,
    lines: Vec<String>,
}

impl Log {
    fn say(&mut self, line: String) {
        if self.show {
            println!("{line}");
        }
        self.lines.push(line);
    }
}

/// What the phases did.
#[derive(Default)]
struct Phases {
    st: State,
    done: Vec<Done>,
    interrupted: bool,
    errors: bool,
    /// Why the whole run is invalid.
    reasons: Vec<String>,
}

/// Runs the plan's phases in order until the end, an interrupt or a
/// failed phase.
fn run_phases(start: &Start, ctx: &Ctx, run: &mut Phases, log: &mut Log) {
    let coord = ctx.coord;
    let root = coord.rank() == 0;
    let shift = ior_shift(&start.hosts, start.a.tasks);
    let mut drop_warned = false;
    for p in &start.plan {
        // Every rank asks, whatever its own flag says (a collective call).
        if coord.any(ctx.stop.load(Ordering::Relaxed)) {
            run.interrupted = true;
            break;
        }
        if let Some(why) = missing_input(p, &run.st) {
            if root {
                eprintln!("io500: note: {}: not run: {why}", p.name);
            }
            if p.group != Group::None && !p.optional {
                run.reasons.push(format!("{} did not run ({why})", p.name));
            }
            continue;
        }
        if start.cfg.drop_caches && engine::sys::drop_caches().is_err() && root && !drop_warned {
            drop_warned = true;
            eprintln!("io500: warning: drop-caches: cannot write /proc/sys/vm/drop_caches (needs root); caches kept");
        }
        let t_start = bench::host::now_rfc3339();
        let r = dispatch::run_one(p, ctx, &start.cfg, &start.names, &mut run.st, shift);
        let t_end = bench::host::now_rfc3339();
        let d = judge(p, r, &start.cfg, t_start, t_end);
        for r in &d.reasons {
            log.say(format!("ERROR INVALID {r}"));
        }
        let elapsed = d.run.as_ref().map_or(0.0, |r| r.elapsed_s);
        log.say(output::result_line(p, d.score, elapsed, d.valid));
        let (stopped, failed) = d.run.as_ref().map_or((false, false), |r| {
            (
                r.interrupted,
                r.first_error().is_some() || r.sum(|t| t.bad_bytes) > 0,
            )
        });
        if root {
            say_failure(&d);
        }
        run.done.push(d);
        if stopped {
            run.interrupted = true;
            break;
        }
        if failed {
            run.errors = true;
            break;
        }
    }
    if run.interrupted {
        run.reasons.push("interrupted".into());
    }
    if run.errors {
        run.reasons.push("a phase failed".into());
    }
}

/// Names a phase's error and bad bytes on standard error.
fn say_failure(d: &Done) {
    let Some(r) = &d.run else { return };
    if let Some(e) = r.first_error() {
        eprintln!("io500: error: {}: {e}", d.phase.name);
    }
    let bad = r.sum(|t| t.bad_bytes);
    if bad > 0 {
        eprintln!(
            "io500: error: {}: {bad} bytes read differ from what was written",
            d.phase.name
        );
    }
}

/// Scores the phases done and prints the `[SCORE ]` (and `[SCOREX]`) lines.
fn verdict(run: &Phases, extended: bool, log: &mut Log) -> Verdict {
    let scored: Vec<Scored> = run
        .done
        .iter()
        .map(|d| Scored {
            phase: d.phase,
            score: d.score,
            valid: d.valid,
        })
        .collect();
    let std_score = score::score(&scored, false);
    let valid = run.reasons.is_empty()
        && scored
            .iter()
            .all(|s| s.valid || s.phase.optional || s.phase.group == Group::None);
    log.say(output::score_line(&std_score, valid, false));
    let ext_score = extended.then(|| score::score(&scored, true));
    let ext_valid = valid
        && scored
            .iter()
            .all(|s| s.valid || s.phase.group == Group::None);
    if let Some(x) = &ext_score {
        log.say(output::score_line(x, ext_valid, true));
    }
    Verdict {
        score: std_score,
        valid,
        ext: ext_score.map(|x| (x, ext_valid)),
        reasons: run.reasons.clone(),
        interrupted: run.interrupted,
    }
}

/// Rank 0's end: removes the files (unless `--keep`), writes the results
/// directory, `--json` and `--html`, and gives the exit code.
fn finish(
    start: &Start,
    coord: &dyn Coordinator,
    run: &Phases,
    verdict: Verdict,
    mut log: Log,
    quiet: bool,
) -> Exit {
    let (a, cfg) = (&start.a, &start.cfg);
    if a.keep {
        eprintln!(
            "io500: note: --keep: the data files stay in {}",
            start.names.d.display()
        );
    } else {
        for l in cleanup(&start.names, &run.st, &start.created) {
            eprintln!("io500: cleanup: could not remove {l}");
        }
    }
    let stored = format!(
        "The result files are stored in the directory: {}",
        cfg.resultdir.display()
    );
    if !quiet {
        println!();
        println!("{stored}");
    }
    log.lines.push(String::new());
    log.lines.push(stored);
    let mut write_err = None;
    let record = record(start, coord, &run.done, &verdict);
    if let Err(e) = write_results(
        &cfg.resultdir,
        &log.lines,
        &run.done,
        &verdict.score,
        verdict.valid,
        &start.names,
        &record,
    ) {
        write_err = Some(e);
    }
    if let Some(p) = &a.json {
        let text = serde_json::to_string_pretty(&record)?;
        if let Err(e) = crate::output::write_atomic(p, text.as_bytes()) {
            write_err = Some(e);
        }
    }
    if let Some(p) = &a.html {
        if let Err(e) = crate::output::write_atomic(p, html::render(&record).as_bytes()) {
            write_err = Some(e);
        }
    }
    let mut code = exit_code(run.interrupted, run.errors);
    if let Some(e) = write_err {
        eprintln!("io500: error: {e:#}");
        code = code.max(1);
    }
    Ok(crate::history_run::record_io500(&record, code))
}

fn exit_code(interrupted: bool, errors: bool) -> i32 {
    if interrupted {
        130
    } else if errors {
        1
    } else {
        0
    }
}

/// Every rank's host name, by rank (a collective call).
fn rank_hosts(coord: &dyn Coordinator) -> Vec<String> {
    if coord.size() == 1 {
        return vec![coord.hostname()];
    }
    coord.all_gather_as(&coord.hostname()).unwrap_or_default()
}

/// IOR's `-C -Q 1` shift: the tasks of one node, when there are several
/// nodes (on one node every task reads its own data, as in IOR).
fn ior_shift(hosts: &[String], tasks: u32) -> u32 {
    if hosts.len() <= 1 {
        return 0;
    }
    let mut distinct = hosts.to_vec();
    distinct.sort();
    distinct.dedup();
    if distinct.len() <= 1 {
        0
    } else {
        let first = hosts.first().cloned().unwrap_or_default();
        hosts.iter().filter(|h| **h == first).count() as u32 * tasks
    }
}

/// Why a phase cannot run: the write it reads was not run.
fn missing_input(p: &Phase, st: &State) -> Option<&'static str> {
    if p.step == Step::Write || matches!(p.kind, Kind::Timestamp) {
        return None;
    }
    let have = match p.kind {
        Kind::IorEasy | Kind::IorRndEasyRead => st.easy.is_some(),
        Kind::IorHard => st.hard.is_some(),
        Kind::IorRnd { xfer } => {
            if xfer == 4096 {
                st.rnd4k.is_some()
            } else {
                st.rnd1mb.is_some()
            }
        }
        Kind::MdEasy => st.md_easy.is_some() && !st.md_easy_gone,
        Kind::MdHard => st.md_hard.is_some() && !st.md_hard_gone,
        Kind::Find { .. } => {
            st.stamp_ns.is_some()
                || matches!(
                    p.kind,
                    Kind::Find {
                        scope: FindScope::Easy
                    }
                )
        }
        Kind::Timestamp => true,
    };
    (!have).then_some(match p.kind {
        Kind::Find { .. } => "the timestamp phase did not run",
        _ => "the write phase it reads did not run",
    })
}

/// Creates the data directory (when missing) and each phase family's
/// directories, all fresh; returns what it created, in creation order.
fn prepare(
    cfg: &Config,
    names: &Names,
    plan: &[Phase],
    ini: Option<&(PathBuf, String)>,
) -> Result<Made, String> {
    let mut made = Made::default();
    let d = &cfg.datadir;
    let result = (|| {
        // Like io500, make the data directory and any missing parents
        // (timestamp-datadir adds one); each is removed again at the end.
        let missing: Vec<&Path> = d
            .ancestors()
            .filter(|a| !a.as_os_str().is_empty())
            .take_while(|a| std::fs::symlink_metadata(a).is_err())
            .collect();
        for a in missing.iter().rev() {
            made.fresh(a)?;
        }
        check_datadir(d)?;
        phase_dirs(&mut made, d, names, plan)?;
        std::fs::create_dir_all(&cfg.resultdir)
            .map_err(|e| format!("resultdir {}: {e}", cfg.resultdir.display()))?;
        if let Some((p, text)) = ini {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let copy = cfg.resultdir.join(format!("config-orig-{name}"));
            crate::output::write_atomic(&copy, text.as_bytes())
                .map_err(|e| format!("resultdir {}: {e:#}", cfg.resultdir.display()))?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok(made),
        Err(e) => {
            remove_dirs(&made);
            Err(e)
        }
    }
}

/// The directories a run made, in the order made, and their identities.
#[derive(Default)]
struct Made {
    paths: Vec<PathBuf>,
    dirs: work::Dirs,
}

impl Made {
    /// Makes `p`, which must not exist yet, and records its identity.
    fn fresh(&mut self, p: &Path) -> Result<(), String> {
        match std::fs::create_dir(p) {
            Ok(()) => {
                self.paths.push(p.to_path_buf());
                let h = safefs::DirHandle::open(p).map_err(|e| e.to_string())?;
                self.dirs.insert(p.to_path_buf(), h.id());
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(format!(
                "{} already exists: ioscale io500 makes its phase directories fresh and removes only \
                 what it made; remove it, or choose another datadir (timestamp-datadir = TRUE makes a new one)",
                p.display()
            )),
            Err(e) => Err(format!("cannot create {}: {e}", p.display())),
        }
    }
}

/// The data directory is a writable directory.
fn check_datadir(d: &Path) -> Result<(), String> {
    if !d.is_dir() {
        return Err(format!("datadir {} is not a directory", d.display()));
    }
    if engine::sys::is_read_only(d).unwrap_or(false) {
        return Err(format!(
            "datadir {} is on a read-only file system (EROFS)",
            d.display()
        ));
    }
    if !engine::sys::can_write(d) {
        return Err(format!(
            "datadir {}: permission denied (EACCES)",
            d.display()
        ));
    }
    Ok(())
}

/// Makes the directories of the phases in the plan.
fn phase_dirs(made: &mut Made, d: &Path, names: &Names, plan: &[Phase]) -> Result<(), String> {
    let has = |k: &dyn Fn(&Kind) -> bool| plan.iter().any(|p| k(&p.kind));
    if has(&|k| matches!(k, Kind::IorEasy)) {
        made.fresh(&names.easy_dir())?;
        if names.fpp && names.unique {
            for w in 0..names.workers {
                made.fresh(&names.easy_dir().join(w.to_string()))?;
            }
        }
    }
    if has(&|k| matches!(k, Kind::IorHard)) {
        made.fresh(&d.join("ior-hard"))?;
    }
    for xfer in [4096u64, 1 << 20] {
        if has(&|k| *k == Kind::IorRnd { xfer }) {
            made.fresh(&d.join(work::rnd_dir(xfer)))?;
        }
    }
    for easy in [true, false] {
        let kind = if easy { Kind::MdEasy } else { Kind::MdHard };
        if has(&|k| *k == kind) {
            made.fresh(&d.join(if easy { "mdtest-easy" } else { "mdtest-hard" }))?;
            made.fresh(&names.md_test_dir(easy))?;
            if easy {
                for w in 0..names.workers {
                    made.fresh(&names.md_dir(true, w))?;
                }
            } else {
                made.fresh(&names.md_dir(false, 0))?;
            }
        }
    }
    Ok(())
}

/// Removes directories this run created, deepest first, with rmdir only,
/// each through its parent's handle and only if it is still the very
/// directory made.
fn remove_dirs(made: &Made) -> Vec<String> {
    let mut left = Vec::new();
    for d in made.paths.iter().rev() {
        let (Some(parent), Some(name)) = (d.parent(), d.file_name()) else {
            continue;
        };
        let Some(&id) = made.dirs.id(d) else {
            continue;
        };
        // The first directory made sits in the user's directory (not ours).
        let h = if made.dirs.id(parent).is_some() {
            made.dirs.open(parent)
        } else {
            safefs::DirHandle::open(parent).map_err(|e| e.to_string())
        };
        if let Err(e) = h.and_then(|h| h.rmdir_at(name, Some(id)).map_err(|e| e.to_string())) {
            left.push(format!("{} ({e})", d.display()));
        }
    }
    left
}

/// Removes the files this run made (by their exact names, relative to the
/// checked directories) and then the directories it created.
fn cleanup(names: &Names, st: &State, made: &Made) -> Vec<String> {
    let mut left = Vec::new();
    let mut rm_all = |dir: &Path, files: &mut dyn Iterator<Item = String>| {
        let h = match names.dirs.open(dir) {
            Ok(h) => h,
            Err(e) => return left.push(format!("the files in {} ({e})", dir.display())),
        };
        for f in files {
            if let Err(e) = h.unlink_at(&f, None) {
                left.push(format!("{} ({e})", dir.join(&f).display()));
            }
        }
    };
    let mut one = |file: PathBuf| {
        if let (Some(d), Some(n)) = (file.parent(), file.file_name()) {
            let n = n.to_string_lossy().into_owned();
            rm_all(d, &mut std::iter::once(n));
        }
    };
    if st.easy.is_some() {
        for w in 0..names.workers {
            one(names.easy_file(w));
        }
    }
    if st.hard.is_some() {
        one(names.hard_file());
    }
    if st.rnd4k.is_some() {
        one(names.rnd_file(4096));
    }
    if st.rnd1mb.is_some() {
        one(names.rnd_file(1 << 20));
    }
    for (easy, counts, gone) in [
        (true, &st.md_easy, st.md_easy_gone),
        (false, &st.md_hard, st.md_hard_gone),
    ] {
        let Some(counts) = counts.as_ref().filter(|_| !gone) else {
            continue;
        };
        for (w, &n) in counts.iter().enumerate() {
            let mut files = (0..n).map(|i| format!("file.mdtest.{w}.{i}"));
            rm_all(&names.md_dir(easy, w as u32), &mut files);
        }
    }
    left.extend(remove_dirs(made));
    left
}

/// Scores a phase and applies io500's validity rules to it.
fn judge(p: &Phase, run: Option<PhaseRun>, cfg: &Config, t_start: String, t_end: String) -> Done {
    let mut reasons = Vec::new();
    let (score, elapsed) = match &run {
        Some(r) if r.elapsed_s > 0.0 && p.kind != Kind::Timestamp => {
            let v = if p.is_bw() {
                r.sum(|t| t.bytes) as f64 / r.elapsed_s / (1u64 << 30) as f64
            } else {
                r.sum(|t| t.ops) as f64 / r.elapsed_s / 1000.0
            };
            (v, r.elapsed_s)
        }
        Some(r) => (0.0, r.elapsed_s),
        None => (0.0, 0.0),
    };
    if let Some(r) = &run {
        if p.checks_runtime() && p.is_bw() && elapsed < cfg.stonewall_s as f64 {
            // As io500's IOR phases say when the size, not the stonewall, ended the write.
            reasons.push(format!(
                "Write phase needed {elapsed:.6}s instead of stonewall {}s",
                cfg.stonewall_s
            ));
        }
        if p.checks_runtime() && elapsed < (cfg.stonewall_s.max(cfg.required_stonewall())) as f64 {
            reasons.push("Runtime is smaller than expected minimum runtime".to_string());
        }
        if r.first_error().is_some() {
            reasons.push(format!("{} failed", p.name));
        }
        if r.sum(|t| t.bad_bytes) > 0 {
            reasons.push(format!(
                "{} read data that differ from what was written",
                p.name
            ));
        }
        if r.interrupted {
            reasons.push(format!("{} was interrupted", p.name));
        }
        if matches!(p.kind, Kind::Find { .. }) && r.sum(|t| t.found) == 0 && !r.interrupted {
            reasons.push(format!("{} found no file", p.name));
        }
        if p.group != Group::None && score <= 0.0 && !r.interrupted {
            reasons.push(format!("{} scored 0", p.name));
        }
    } else {
        reasons.push(format!("{} did not run", p.name));
    }
    Done {
        phase: *p,
        valid: reasons.is_empty(),
        run,
        score,
        reasons,
        t_start,
        t_end,
    }
}

fn lat(h: &stats::LatencyHistogram) -> serde_json::Value {
    let s = h.summary();
    json!({"mean": s.mean, "p50": s.p50, "p99": s.p99, "p999": s.p999, "max": s.max, "min": s.min})
}

/// How the run ends: its score and whether it is valid.
struct Verdict {
    score: score::Score,
    valid: bool,
    ext: Option<(score::Score, bool)>,
    reasons: Vec<String>,
    interrupted: bool,
}

/// ioscale's JSON record of the run.
fn record(start: &Start, coord: &dyn Coordinator, done: &[Done], v: &Verdict) -> serde_json::Value {
    let (a, cfg, extended) = (&start.a, &start.cfg, start.extended);
    let workers = a.tasks * coord.size();
    let phases: Vec<serde_json::Value> = done
        .iter()
        .map(|d| {
            let r = d.run.as_ref();
            let sum = |f: &dyn Fn(&exec::TaskOut) -> u64| r.map_or(0, |r| r.sum(f));
            let elapsed = r.map_or(0.0, |r| r.elapsed_s);
            let rate = |x: u64| if elapsed > 0.0 { x as f64 / elapsed } else { 0.0 };
            let hist = r.map(|r| r.hist()).unwrap_or_default();
            json!({
                "name": d.phase.name,
                "op": d.phase.name,
                "group": match d.phase.group { Group::Bw => "BW", Group::Md => "MD", Group::None => "none" },
                "optional": d.phase.optional,
                "score": d.score,
                "unit": d.phase.unit(),
                "valid": d.valid,
                "invalid_reasons": d.reasons,
                "t_start": d.t_start,
                "t_end": d.t_end,
                "threads": workers,
                "bytes": sum(&|t| t.bytes),
                "ops": sum(&|t| t.ops),
                "elapsed_s": elapsed,
                "bw_mib_s": rate(sum(&|t| t.bytes)) / (1u64 << 20) as f64,
                "iops": rate(sum(&|t| t.ops)),
                "lat_us": lat(&hist),
                "cpu_user_s": r.map_or(0.0, |r| r.cpu.0),
                "cpu_sys_s": r.map_or(0.0, |r| r.cpu.1),
                "found": sum(&|t| t.found),
                "bad_bytes": sum(&|t| t.bad_bytes),
                "interrupted": r.is_some_and(|r| r.interrupted),
                "resources": r.and_then(|r| r.resources.clone()),
                "gathered_bytes": r.and_then(|r| r.gathered_bytes),
                "tasks": r.map(|r| r.tasks.iter().map(|t| json!({
                    "task": t.task, "items": t.items, "items_at_stonewall": t.items_at_stonewall,
                    "ops": t.ops, "bytes": t.bytes, "error": t.error,
                })).collect::<Vec<_>>()).unwrap_or_default(),
            })
        })
        .collect();
    json!({
        "schema": 1,
        "tool": "ioscale",
        "command": "io500",
        "version": env!("CARGO_PKG_VERSION"),
        "io500": IO500_VERSION,
        "mode": if extended { "extended" } else { "standard" },
        "argv": std::env::args().collect::<Vec<_>>(),
        "ranks": coord.size(),
        "rank_hosts": start.hosts,
        "tasks_per_rank": a.tasks,
        "tasks": workers,
        "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "stonewall_s": cfg.stonewall_s,
        "datadir": cfg.datadir,
        "resultdir": cfg.resultdir,
        "interrupted": v.interrupted,
        "phases": phases,
        "score": {"bw_gib_s": v.score.bw, "md_kiops": v.score.md, "total": v.score.total, "valid": v.valid, "invalid_reasons": v.reasons},
        "scorex": v.ext.map(|(x, ok)| json!({"bw_gib_s": x.bw, "md_kiops": x.md, "total": x.total, "valid": ok})),
    })
}

/// The equivalent io500 command of a phase (its `exe` in result.txt).
fn exe(p: &Phase, names: &Names) -> String {
    let d = names.d.display();
    match (p.kind, p.step) {
        (Kind::IorEasy, s) => format!(
            "ior -C -Q 1 -g -k -e -o {d}/ior-easy/ior_file_easy{} {}",
            if names.fpp { " -F" } else { "" },
            if s == Step::Write { "-w -D <stonewall> -O stoneWallingWearOut=1" } else { "-r -R" }
        ),
        (Kind::IorHard, s) => format!(
            "ior -C -Q 1 -g -k -e -o {d}/ior-hard/file -t 47008 -b 47008 {}",
            if s == Step::Write { "-w -D <stonewall> -O stoneWallingWearOut=1" } else { "-r -R" }
        ),
        (Kind::IorRnd { xfer }, s) => format!(
            "ior -Q 1 -g -z -e -k -o {d}/{}/file -t {xfer} {}",
            work::rnd_dir(xfer),
            if s == Step::Write { "-w -D <stonewall> -O stoneWallingWearOut=1" } else { "-r -R" }
        ),
        (Kind::IorRndEasyRead, _) => format!("ior -g -k -e -o {d}/ior-easy/ior_file_easy -r -D <stonewall> -z -z -t 4096 -b 4096 -C -Q 2"),
        (Kind::MdEasy, s) => format!("mdtest -u -L -F -N 1 -d {d}/mdtest-easy {}", md_flag(s)),
        (Kind::MdHard, s) => format!("mdtest -t -w 3901 -e 3901 -N 1 -F -d {d}/mdtest-hard {}", md_flag(s)),
        (Kind::Find { scope }, _) => match scope {
            FindScope::All => format!("pfind {d} -newer <resultdir>/timestampfile -size 3901c -name *01* -C"),
            FindScope::Easy => format!("pfind {d}/mdtest-easy/ -name *01* -C"),
            FindScope::Hard => format!("pfind {d}/mdtest-hard/ -newer <resultdir>/timestampfile -size 3901c -name *01* -C"),
        },
        (Kind::Timestamp, _) => "touch <resultdir>/timestampfile".into(),
    }
}

fn md_flag(s: Step) -> &'static str {
    match s {
        Step::Write => "-C -Y -W <stonewall>",
        Step::Stat => "-T",
        Step::Read => "-E -X",
        _ => "-r",
    }
}

/// Writes result_summary.txt, result.txt, each phase's `<phase>.txt` and
/// the stonewall files (the item count each write reached).
fn write_results(
    dir: &Path,
    summary: &[String],
    done: &[Done],
    sc: &score::Score,
    valid: bool,
    names: &Names,
    record: &serde_json::Value,
) -> anyhow::Result<()> {
    let w =
        |name: &str, text: String| crate::output::write_atomic(&dir.join(name), text.as_bytes());
    w("result_summary.txt", summary.join("\n") + "\n")?;
    let mut res = format!(
        "[run]\nversion = {IO500_VERSION} (ioscale {})\n",
        env!("CARGO_PKG_VERSION")
    );
    for (i, d) in done.iter().enumerate() {
        let elapsed = d.run.as_ref().map_or(0.0, |r| r.elapsed_s);
        res += &format!(
            "\n[{}]\nt_start = {}\nexe = {}\nscore = {:.6}\nt_delta = {elapsed:.4}\nt_end = {}\nvalid = {}\n",
            d.phase.name,
            d.t_start,
            exe(&d.phase, names),
            d.score,
            d.t_end,
            if d.valid { "YES" } else { "NO" }
        );
        let ph = &record["phases"][i];
        let Some(r) = &d.run else { continue };
        let mut t = format!(
            "phase: {}\nequivalent: {}\ntasks: {}\ntime_s: {elapsed:.6}\nscore: {:.6} {}\nops: {}\nbytes: {}\n\
             latency_us: mean {:.1} p50 {:.1} p99 {:.1} p99.9 {:.1} max {:.1}\ncpu_s: user {:.3} sys {:.3}\n",
            d.phase.name,
            exe(&d.phase, names),
            ph["threads"],
            d.score,
            d.phase.unit(),
            ph["ops"],
            ph["bytes"],
            ph["lat_us"]["mean"].as_f64().unwrap_or(0.0),
            ph["lat_us"]["p50"].as_f64().unwrap_or(0.0),
            ph["lat_us"]["p99"].as_f64().unwrap_or(0.0),
            ph["lat_us"]["p999"].as_f64().unwrap_or(0.0),
            ph["lat_us"]["max"].as_f64().unwrap_or(0.0),
            r.cpu.0,
            r.cpu.1,
        );
        if matches!(d.phase.kind, Kind::Find { .. }) {
            t += &format!(
                "found: {}\nscanned: {}\n",
                r.sum(|x| x.found),
                r.sum(|x| x.ops)
            );
        }
        t += "task items items_at_stonewall\n";
        for x in &r.tasks {
            t += &format!("{} {} {}\n", x.task, x.items, x.items_at_stonewall);
        }
        for reason in &d.reasons {
            t += &format!("INVALID: {reason}\n");
        }
        w(&format!("{}.txt", d.phase.name), t)?;
        if d.phase.step == Step::Write {
            let max = r.tasks.iter().map(|x| x.items).max().unwrap_or(0);
            w(
                &format!("{}.stonewall", d.phase.section),
                format!("{max}\n"),
            )?;
        }
    }
    res += &format!(
        "\n[SCORE]\nMD = {:.6}\nBW = {:.6}\nSCORE = {:.6}{}\n",
        sc.md,
        sc.bw,
        sc.total,
        if valid { "" } else { " [INVALID]" }
    );
    w("result.txt", res)
}
