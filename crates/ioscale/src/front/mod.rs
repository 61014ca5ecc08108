//! Compatibility front-ends: `ioscale ior`, `ioscale dd`, `ioscale mdtest`,
//! `ioscale smallfile` and `ioscale fio`.
//!
//! People arrive with IOR and dd command lines they already trust. Each
//! front-end parses its tool's syntax into a [`spec::RawWorkload`], lets
//! [`spec::RawWorkload::build`] check it like any native command line,
//! makes it a [`bench::plan::Plan`] (with its tool's renderer, options and
//! rules) and runs it on the one executor ([`bench::exec::execute`], see
//! [`run_plan`]), and renders the result in the tool's own layout with an
//! exporter. An option the front-end does not support is an error that
//! names it and the nearest native equivalent — never silently ignored.
//! The mdtest and smallfile front-ends build a [`spec::RawMeta`] instead:
//! a plan of one metadata step.
//!
//! Each tool's syntax and layouts live in the `compat` crate
//! (`compat::NAME::{parse, render}`, re-exported here as `NAME::parse` and
//! `NAME::render`); what stays here is the driver of each. This file holds
//! what the drivers share, below them: the [`Front`] trait and their
//! helpers. [`registry`], above them, names every one.

pub mod dd;
pub mod fio;
pub mod io500;
pub mod ior;
pub mod mdtest;
pub mod registry;
pub mod smallfile;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use coord::Coordinator;
use report::ResultSet;

use crate::exit::{Exit, Failure};
use serde::Serialize;

// What the front-ends' parsers share lives in the `compat` crate beside
// their parsers and renderers; named here for the drivers.
pub use compat::args::{in_tool_terms, Usage};
pub use compat::FsStats;

/// A compatibility front-end: a tool's command line in, the tool's own
/// layout out. Each one is a folder here, `mod.rs` (the driver, and this
/// trait's impl), and one in the `compat` crate, `parse.rs` (the tool's
/// syntax into [`Front::Request`]) and `render.rs` (its layout), plus one
/// line in [`registry::REGISTRY`] (and its clap subcommand in `cli.rs`, for
/// `--help` and completions).
pub trait Front {
    /// The subcommand (`ioscale NAME …`), also the prefix of its messages
    /// (`NAME: error: …`).
    const COMMAND: &'static str;
    /// The program name it answers to when the binary is started under it
    /// (a symlink called `ior`, `mdtest`, …).
    const PROGRAM: &'static str;
    /// The program name its header shows when run as a subcommand.
    const SHOWN_AS: &'static str;
    /// Its `--help` text.
    const HELP: &'static str;
    /// What the tool's command line asked for, typed.
    type Request: AsksHelp;
    /// What its layout shows beyond the record (the command line as typed,
    /// its version, …).
    type Info;
    /// The tool's parser (in the `compat` crate): its own syntax (the
    /// arguments after the program name) into a request. An `Err` is a
    /// usage error.
    const PARSE: fn(&[String]) -> Result<Self::Request, Usage>;
    /// Reads the tool's own syntax with [`Front::PARSE`]; `Ok(None)` when
    /// it asks for `--help`.
    fn parse(args: &[String]) -> Result<Option<Self::Request>, Usage> {
        (Self::PARSE)(args).map(|r| (!r.asks_help()).then_some(r))
    }
    /// Runs a request as one rank of `coord` (every rank calls it; rank 0
    /// alone prints, with [`Front::render`]): the outcome code of the run,
    /// or why it could not run (said by `main` as `COMMAND: error: …`).
    fn run(call: &Call<'_>, req: Self::Request, coord: &dyn Coordinator) -> Exit;
    /// A finished run in the tool's own layout.
    fn render(info: &Self::Info, rs: &ResultSet) -> anyhow::Result<Vec<u8>>;
}

/// A tool's parsed command line, which may ask for its `--help` alone.
pub trait AsksHelp {
    /// It asks for `--help` (`-h`): the help is printed, nothing run.
    fn asks_help(&self) -> bool;
}

impl AsksHelp for compat::dd::parse::DdArgs {
    fn asks_help(&self) -> bool {
        self.help
    }
}

impl AsksHelp for compat::ior::parse::IorArgs {
    fn asks_help(&self) -> bool {
        self.help
    }
}

impl AsksHelp for compat::mdtest::parse::MdArgs {
    fn asks_help(&self) -> bool {
        self.help
    }
}

impl AsksHelp for compat::smallfile::parse::SfArgs {
    fn asks_help(&self) -> bool {
        self.help
    }
}

/// How a front-end was started: the program name to show and the
/// arguments after it, as typed.
pub struct Call<'a> {
    /// `ior` when started as a symlink, `ioscale ior` as a subcommand.
    pub prog: &'a str,
    /// The arguments after the program name.
    pub args: &'a [String],
    /// The results history the finished run is recorded in.
    pub history: &'a crate::history_run::Session,
}

/// `--record FILE` (ioscale's option of the dd and smallfile front-ends):
/// writes the run's canonical JSON record there, the one `ioscale run
/// --json` writes (per-node totals, per-rank rows and what rank 0 received
/// per phase under MPI). Returns 1 when it could not be written (said as
/// `COMMAND: error: …`), 0 otherwise.
pub(crate) fn write_record(command: &str, p: Option<&Path>, rs: &ResultSet) -> i32 {
    let Some(p) = p else {
        return 0;
    };
    let written = report::ExportType::Json
        .exporter()
        .render(rs)
        .map_err(anyhow::Error::from)
        .and_then(|b| crate::output::write_named("--record", p, &b));
    match written {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{command}: error: {e:#}");
            1
        }
    }
}

/// Now in C's `ctime` form in local time (`Mon Jun  1 19:21:30 2020`),
/// as IOR prints its time stamps.
pub fn ctime_now() -> String {
    bench::host::local_now("%a %b %e %H:%M:%S %Y")
}

/// Capacity of the file system holding `dir`, for IOR's `FS` line.
pub fn fs_stats(dir: &Path) -> Option<FsStats> {
    let c = bench::host::fs_capacity(dir)?;
    Some(FsStats {
        total_bytes: c.total_bytes,
        used_bytes: c.used_bytes,
        inodes: c.inodes,
        used_inodes: c.used_inodes,
    })
}

/// Prints the errors that stopped workers, as `ioscale run` does.
pub fn print_errors(prefix: &str, rs: &report::ResultSet) {
    for line in crate::emit::error_lines(&rs.errors) {
        eprintln!("{prefix}: error: {line}");
    }
}

/// Prints the data-check failures of `--verify` reads (mdtest -X,
/// smallfile --verify-read Y): each file with its first bad offset.
pub fn print_mismatches(prefix: &str, rs: &report::ResultSet) {
    for p in &rs.phases {
        let Some(v) = &p.verify else { continue };
        if v.bad_bytes == 0 {
            continue;
        }
        eprintln!(
            "{prefix}: error: {} (iteration {}): {} of {} bytes checked differ from what was written",
            p.op, p.rep, v.bad_bytes, v.checked_bytes
        );
        for m in &v.mismatches {
            eprintln!(
                "{prefix}: error: MISMATCH {} first bad offset {} ({} bytes)",
                m.file, m.offset, m.bad_bytes
            );
        }
    }
}

/// A run's problems on standard error as the record words them: the
/// errors, the data-check failures, then the warnings.
pub fn print_problems(prefix: &str, rs: &report::ResultSet) {
    print_errors(prefix, rs);
    print_mismatches(prefix, rs);
    for w in &rs.warnings {
        eprintln!("{prefix}: warning: {w}");
    }
}

/// A front-end's progress mode (see [`crate::progress::front_mode`]),
/// settled right after its command line is parsed, before anything is
/// made; a usage failure when `IOSCALE_PROGRESS` is bad.
pub fn progress_mode(
    flag: Option<crate::progress::ProgressMode>,
) -> Result<crate::progress::ProgressMode, Failure> {
    crate::progress::front_mode(flag).map_err(Failure::usage)
}

/// `--print-spec`: rank 0 prints the checked spec as JSON; nothing runs.
pub(crate) fn print_spec(root: bool, spec: &impl Serialize) -> Exit {
    if root {
        println!("{}", serde_json::to_string_pretty(spec)?);
    }
    Ok(0)
}

/// Runs `plan` on the executor as one rank of `coord` while `live` (rank
/// 0's progress display) shows it; the record's command line is `program`
/// and the front-end's arguments as typed.
pub(crate) fn run_plan(
    call: &Call<'_>,
    program: &str,
    plan: &bench::plan::Plan,
    live: Option<crate::progress::Display>,
    coord: &dyn Coordinator,
    stop: Arc<AtomicBool>,
) -> Result<bench::exec::Executed, bench::Error> {
    let mut argv = vec![program.to_string()];
    argv.extend(call.args.iter().cloned());
    let outcome = bench::exec::execute(plan, bench::exec::Env::new(argv, stop, coord));
    drop(live);
    if let Ok(o) = &outcome {
        o.steps
            .iter()
            .flatten()
            .for_each(|s| call.history.keep(&s.results));
    }
    outcome
}

/// Starts the live progress of a plan on rank 0: its first step's
/// repetitions and phases.
pub fn live_plan(
    mode: crate::progress::ProgressMode,
    root: bool,
    plan: &bench::plan::Plan,
    ranks: u32,
) -> Option<crate::progress::Display> {
    let (reps, phases) = plan.first().map_or((1, 1), |w| (w.reps(), w.phases()));
    live(mode, root, reps, phases, ranks)
}

/// Starts the live progress of a front-end's job on rank 0.
pub fn live(
    mode: crate::progress::ProgressMode,
    root: bool,
    reps: u32,
    phases_per_rep: usize,
    ranks: u32,
) -> Option<crate::progress::Display> {
    root.then(|| crate::progress::Display::start(mode, reps, phases_per_rep, ranks))
        .flatten()
}
