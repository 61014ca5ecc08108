//! `ioscale io500`: the IO500 benchmark's phases, score and output.
//!
//! io500 (tag io500-isc26_v2) runs IOR, mdtest and pfind with fixed
//! parameters in a fixed order, and ranks a storage system by the
//! geometric means of their figures. This front-end translates and
//! renders: it reads io500's `.ini` ([`config`]), walks its phase table
//! ([`phases`]), hands each phase to ioscale's executor as the workload
//! io500 would give IOR, mdtest or pfind ([`steps`], run by [`runner`]:
//! threads, and MPI ranks under mpirun or srun, with IOR's and mdtest's
//! stonewall wear-out), scores ([`score`]) and prints io500's lines
//! ([`output`]), its result directory ([`resultdir`]) and ioscale's JSON
//! record ([`record`]). It opens no data file and times nothing: the
//! directories its phases work in are the executor's scaffold, removed
//! with everything the run made (and only that) at the end, or by
//! `ioscale clean DATADIR` after a run that was stopped.

pub mod config;
pub mod html;
pub mod output;
pub mod phases;
mod record;
mod resultdir;
mod runner;
pub mod score;
mod steps;
pub mod sweep;

use std::path::{Path, PathBuf};

use bench::dataset::scaffold::Scaffold;
use clap::Parser;
use coord::Coordinator;

use config::Config;
use phases::{Group, Phase};
use runner::Phases;
use score::Scored;
use steps::{Carried, Where};

use crate::exit::{Exit, Failure};
use crate::output::ResultDir;

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
INVALID). What a stopped run left, `ioscale clean DATADIR` removes. See\n\
docs/io500.md.";

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

/// The local time now in `strftime`'s `format` (io500's stamps: the
/// directory's `%Y.%m.%d-%H.%M.%S`, result.txt's `%Y-%m-%d %H:%M:%S`).
fn local_time(format: &str) -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as libc::time_t)
        .unwrap_or(0);
    let fmt = std::ffi::CString::new(format).unwrap_or_default();
    let mut buf = [0u8; 64];
    // SAFETY: `tm` is plain data that localtime_r fills in; strftime
    // writes at most `buf.len()` bytes into `buf` and returns how many.
    let n = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        libc::strftime(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), &tm)
    };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// The settings a run uses once the command line is applied to the config.
struct Setup {
    cfg: Config,
    extended: bool,
    ini: Option<(PathBuf, String)>,
}

/// The most a config file may hold: io500's are a few KiB.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads the config file: a regular file of bounded size only (a FIFO is
/// not waited on, a device not read until memory runs out), as UTF-8.
fn read_config(path: &Path) -> Result<String, String> {
    let bytes =
        safefs::read_bounded("config", path, MAX_CONFIG_BYTES).map_err(|e| match &e.kind {
            safefs::FlagErrorKind::Io(io) => format!("config {}: {io}", path.display()),
            safefs::FlagErrorKind::Refused(_) => e.to_string(),
        })?;
    String::from_utf8(bytes).map_err(|_| {
        format!(
            "config {}: stream did not contain valid UTF-8",
            path.display()
        )
    })
}

fn setup(a: &Args) -> Result<Setup, String> {
    let mut ini = None;
    let mut target = None;
    for op in &a.operands {
        if op.ends_with(".ini") {
            if ini.is_some() {
                return Err(format!("{op}: one config file only"));
            }
            ini = Some((PathBuf::from(op), read_config(Path::new(op))?));
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
    // What the command line sets goes into config.ini and its hash too.
    if let Some(t) = target {
        cfg.set_value("global", "datadir", &t.display().to_string());
        cfg.datadir = t;
    }
    if let Some(r) = &a.resultdir {
        cfg.set_value("global", "resultdir", &r.display().to_string());
        cfg.resultdir = r.clone();
    }
    if let Some(s) = &a.stonewall {
        cfg.stonewall_s = parse_duration(s)?;
        cfg.set_value("debug", "stonewall-time", &cfg.stonewall_s.to_string());
    }
    check(a, &cfg)?;
    Ok(Setup {
        cfg,
        extended: a.mode == "extended",
        ini,
    })
}

/// The limits io500's options must keep before anything runs.
fn check(a: &Args, cfg: &Config) -> Result<(), String> {
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
    if cfg.easy_xfer == 0
        || cfg.easy_block < cfg.easy_xfer
        || !cfg.easy_block.is_multiple_of(cfg.easy_xfer)
    {
        return Err(format!(
            "[ior-easy] blockSize {} must be a multiple of transferSize {} (as IOR requires)",
            cfg.easy_block, cfg.easy_xfer
        ));
    }
    for (name, block, xfer) in [
        ("ior-rnd4K", cfg.rnd4k_block, 4096u64),
        ("ior-rnd1MB", cfg.rnd1mb_block, 1 << 20),
    ] {
        if block < xfer.max(1024) || !block.is_multiple_of(xfer) {
            return Err(format!(
                "[{name}] blockSize {block} must be a multiple of the transfer size {xfer}"
            ));
        }
    }
    if cfg.hard_segments == 0 || cfg.md_easy_n == 0 || cfg.md_hard_n == 0 {
        return Err("[ior-hard] segmentCount and [mdtest-*] n must be at least 1".into());
    }
    Ok(())
}

/// The most tasks (threads) one process runs, as `--threads` allows.
const MAX_TASKS: u32 = 4096;

/// The largest `[ior-easy] transferSize` (as `--xfer` takes).
const MAX_EASY_XFER: u64 = 2 << 30;

/// Runs `ioscale io500`; each task is a thread, and under mpirun or srun
/// each rank runs `--tasks` of them.
pub fn main(args: &[String]) -> Exit {
    crate::launch::as_ranks("io500", |coord| ranks_main(args, coord))
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
        start.mode(),
        env!("CARGO_PKG_VERSION")
    ));
    let mut run = Phases::default();
    if let Some(r) = start.stonewall_reason() {
        log.say(format!("ERROR INVALID {r}"));
        run.reasons.push(r);
    }
    runner::run_phases(&start, coord, &stop, &mut run, &mut log);
    let verdict = verdict(&run, start.extended, &mut log);
    // Every rank has finished with the files before rank 0 removes them.
    coord.barrier();
    if !root {
        return Ok(exit_code(run.interrupted, run.errors));
    }
    finish(start, coord, &run, verdict, log, quiet)
}

/// A run's settings once its command line, config and directories are
/// in place.
struct Start {
    a: Args,
    cfg: Config,
    extended: bool,
    plan: Vec<Phase>,
    /// Tasks of all ranks, and IOR's `-C -Q 1` shift.
    workers: u32,
    shift: u32,
    /// io500's run stamp (`YYYY.MM.DD-HH.MM.SS`), and the time result.txt
    /// says the run started.
    stamp: String,
    started: String,
    /// The config file as given.
    ini: Option<(PathBuf, String)>,
    /// Every rank's host, by rank.
    hosts: Vec<String>,
    /// Rank 0's: the phase directories, made through the executor's
    /// scaffold, and the result directory, checked before the run.
    scaffold: Option<Scaffold>,
    resdir: Option<ResultDir>,
}

impl Start {
    fn mode(&self) -> &'static str {
        if self.extended {
            "extended"
        } else {
            "standard"
        }
    }

    /// Where and how the phases run.
    fn place(&self) -> Where<'_> {
        Where {
            cfg: &self.cfg,
            tasks: self.a.tasks,
            workers: self.workers,
            shift: self.shift,
        }
    }

    /// Why the stonewall makes the run invalid, if it does.
    fn stonewall_reason(&self) -> Option<String> {
        let required = self.cfg.required_stonewall();
        (self.cfg.stonewall_s != required)
            .then(|| format!("stonewall-time {}s != {required}s", self.cfg.stonewall_s))
    }
}

/// Parses the command line and config and checks every phase's workload;
/// rank 0 checks the result directory and makes the phase directories.
/// `None` when `--help` (or `--version`) was printed instead. Nothing is
/// made when anything is refused.
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
    let stamp = coord.broadcast_as(&local_time("%Y.%m.%d-%H.%M.%S"))?;
    if cfg.timestamp_datadir {
        cfg.datadir = cfg.datadir.join(&stamp);
    }
    if cfg.timestamp_resultdir {
        cfg.resultdir = cfg.resultdir.join(&stamp);
    }
    if let Some(sub) = &a.resultdir_sub {
        cfg.resultdir = cfg.resultdir.join(sub);
    }
    let plan: Vec<Phase> = phases::plan(s.extended)
        .into_iter()
        .filter(|p| cfg.runs(phases::sub_section(p), p.section))
        .collect();
    let hosts = rank_hosts(coord);
    let mut start = Start {
        workers: a.tasks * coord.size(),
        shift: ior_shift(&hosts, a.tasks),
        a,
        cfg,
        extended: s.extended,
        plan,
        stamp,
        started: local_time("%Y-%m-%d %H:%M:%S"),
        ini: s.ini,
        hosts,
        scaffold: None,
        resdir: None,
    };
    check_steps(&start).map_err(Failure::Usage)?;
    // Rank 0 checks every result file's path and makes the phase
    // directories; the others start only when it did.
    let made = if root {
        prepare(&start).map(Some)
    } else {
        Ok(None)
    };
    let failed = coord.any(made.is_err());
    match made {
        Ok(Some((rd, sc))) if !failed => {
            start.resdir = Some(rd);
            start.scaffold = Some(sc);
        }
        Ok(Some((_, sc))) => {
            sc.remove();
            return Err(Failure::Said(2));
        }
        Ok(None) if failed => return Err(Failure::Said(2)),
        Ok(None) => {}
        Err(e) => return Err(Failure::Refused(e)),
    }
    Ok(Some(start))
}

/// Every phase's workload built with stand-in counts, so a config the
/// executor would refuse is refused before anything runs.
fn check_steps(start: &Start) -> Result<(), String> {
    let all = vec![1; start.workers as usize];
    let carried = Carried {
        easy: Some(all.clone()),
        hard: Some(all.clone()),
        rnd4k: Some(all.clone()),
        rnd1mb: Some(all.clone()),
        md_easy: Some(all.clone()),
        md_hard: Some(all),
        stamp: Some((0, 0)),
        ..Default::default()
    };
    let w = start.place();
    let config = start
        .ini
        .as_ref()
        .map(|(p, _)| format!("{}: ", p.display()))
        .unwrap_or_default();
    for p in &start.plan {
        steps::step_of(p, &w, &carried).map_err(|e| format!("{config}{}: {e}", p.name))?;
    }
    Ok(())
}

/// Rank 0's preparation: every file the run will write in the result
/// directory checked (a link, a device or a FIFO there is refused, exit
/// 2, nothing made), the phase directories made fresh in the data
/// directory through the executor's scaffold (whose marker lets `ioscale
/// clean` remove what a stopped run leaves), then the result directory
/// with io500's two copies of the config.
fn prepare(start: &Start) -> Result<(ResultDir, Scaffold), String> {
    let names = resultdir::names(&start.plan);
    let path = &start.cfg.resultdir;
    // Named as the user gave it.
    let flag = match (&start.a.resultdir, &start.ini) {
        (Some(_), _) | (None, None) => "--resultdir".to_string(),
        (None, Some((ini, _))) => format!("{}: [global] resultdir", ini.display()),
    };
    let flag = flag.as_str();
    ResultDir::check(flag, path, &names).map_err(|e| format!("{e:#}"))?;
    let dirs = steps::phase_dirs(&start.plan);
    let run_id = format!("io500-{}-{}", start.stamp, std::process::id());
    let sc = Scaffold::make(&start.cfg.datadir, &dirs, &run_id).map_err(|e| e.to_string())?;
    let orig = start.ini.as_ref().map_or("", |(_, t)| t.as_str());
    let rd = ResultDir::open(flag, path, &names).and_then(|rd| {
        rd.write("config-orig.ini", orig.as_bytes())?;
        rd.write("config.ini", start.cfg.expanded().as_bytes())?;
        Ok(rd)
    });
    match rd {
        Ok(rd) => Ok((rd, sc)),
        Err(e) => {
            for l in sc.remove() {
                eprintln!("io500: cleanup: could not remove {l}");
            }
            Err(format!("{e:#}"))
        }
    }
}

/// The lines of io500's output: printed on rank 0 (unless quiet) and kept
/// for result_summary.txt.
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

/// How the run ends: its score and whether it is valid.
struct Verdict {
    score: score::Score,
    valid: bool,
    ext: Option<(score::Score, bool)>,
    reasons: Vec<String>,
    interrupted: bool,
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

/// Rank 0's end: removes what the run made (unless `--keep`), writes the
/// result directory, `--json` and `--html`, and gives the exit code.
fn finish(
    mut start: Start,
    coord: &dyn Coordinator,
    run: &Phases,
    verdict: Verdict,
    mut log: Log,
    quiet: bool,
) -> Exit {
    if let Some(sc) = start.scaffold.take() {
        if start.a.keep {
            eprintln!(
                "io500: note: --keep: the data files stay in {} (`ioscale clean {}` removes them)",
                start.cfg.datadir.display(),
                start.cfg.datadir.display()
            );
            sc.keep();
        } else {
            for l in sc.remove() {
                eprintln!("io500: cleanup: could not remove {l}");
            }
        }
    }
    let stored = format!(
        "The result files are stored in the directory: {}",
        start.cfg.resultdir.display()
    );
    if !quiet {
        println!();
        println!("{stored}");
    }
    log.lines.push(String::new());
    log.lines.push(stored);
    let mut write_err = None;
    let rec = record::record(&start, coord, &run.done, &verdict);
    if let Some(rd) = &start.resdir {
        if let Err(e) = resultdir::write(rd, &start, &log.lines, &run.done, &verdict) {
            write_err = Some(e);
        }
    }
    if let Some(p) = &start.a.json {
        let text = serde_json::to_string_pretty(&rec)?;
        if let Err(e) = crate::output::write_named("--json", p, text.as_bytes()) {
            write_err = Some(e);
        }
    }
    if let Some(p) = &start.a.html {
        if let Err(e) = crate::output::write_named("--html", p, html::render(&rec).as_bytes()) {
            write_err = Some(e);
        }
    }
    let mut code = exit_code(run.interrupted, run.errors);
    if let Some(e) = write_err {
        eprintln!("io500: error: {e:#}");
        code = code.max(1);
    }
    Ok(crate::history_run::record_io500(&rec, code))
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
