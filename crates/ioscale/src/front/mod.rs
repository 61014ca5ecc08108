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
//! This file holds what the front-ends share, below them: the [`Front`]
//! trait and the helpers of their parsers and drivers. [`registry`], above
//! them, names every one.

pub mod dd;
pub mod fio;
pub mod io500;
pub mod ior;
pub mod mdtest;
pub mod registry;
pub mod smallfile;

#[cfg(test)]
mod layouts;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use coord::Coordinator;
use report::ResultSet;

use crate::exit::{Exit, Failure};
use serde::{Deserialize, Serialize};

// A front-end's usage error is the binary's (`exit`); named here for the
// front-ends' parsers.
pub use crate::exit::Usage;

/// A compatibility front-end: a tool's command line in, the tool's own
/// layout out. Each one is a folder here — `mod.rs` (the driver, and this
/// trait's impl), `parse.rs` (the tool's syntax into [`Front::Request`]) and
/// `render.rs` (its layout) — plus one line in [`registry::REGISTRY`] (and its clap
/// subcommand in `cli.rs`, for `--help` and completions).
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
    type Request;
    /// What its layout shows beyond the record (the command line as typed,
    /// its version, …).
    type Info;
    /// Reads the tool's own syntax (the arguments after the program name);
    /// `Ok(None)` when it asks for `--help`. An `Err` is a usage error.
    fn parse(args: &[String]) -> Result<Option<Self::Request>, Usage>;
    /// Runs a request as one rank of `coord` (every rank calls it; rank 0
    /// alone prints, with [`Front::render`]): the outcome code of the run,
    /// or why it could not run (said by `main` as `COMMAND: error: …`).
    fn run(call: &Call<'_>, req: Self::Request, coord: &dyn Coordinator) -> Exit;
    /// A finished run in the tool's own layout.
    fn render(info: &Self::Info, rs: &ResultSet) -> anyhow::Result<Vec<u8>>;
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

/// A tool's single-letter options, as its getopt string would list them,
/// and how they set the tool's parsed command line `A`.
pub struct ShortOpts<A> {
    /// The tool's name in messages ("IOR", "mdtest").
    pub tool: &'static str,
    /// The subcommand named in `--help` hints ("ior", "mdtest").
    pub cmd: &'static str,
    /// Letters that take a value (`-t 1m`, `-t1m`, `-t=1m`).
    pub value: &'static str,
    /// Letters that are flags and may be bundled (`-wrk`).
    pub flags: &'static str,
    /// Why a letter ioscale knows of is refused, naming the nearest native option.
    pub unsupported: fn(&str) -> Option<&'static str>,
    /// Said of a word that is not an option (where the tool names its path).
    pub operand_hint: &'static str,
    /// Records `-h`.
    pub help: fn(&mut A),
    /// Applies a letter of `value` with its value.
    pub apply_value: fn(&mut A, char, &str) -> Result<(), Usage>,
    /// Applies a letter of `flags`.
    pub apply_flag: fn(&mut A, char),
}

/// What one short-option word held.
pub enum Short {
    /// `-h`.
    Help,
    /// A letter that takes a value, and the value.
    Value(char, String),
    /// One or more flag letters, all known and supported.
    Flags(String),
}

/// Reads one getopt-style word into `a` (see [`short_option`]) with the
/// tool's own appliers: help, a letter's value, or each bundled flag.
pub fn read_short<A>(
    o: &ShortOpts<A>,
    a: &mut A,
    arg: &str,
    args: &[String],
    i: &mut usize,
) -> Result<(), Usage> {
    match short_option(o, arg, args, i)? {
        Short::Help => (o.help)(a),
        Short::Value(c, v) => (o.apply_value)(a, c, &v)?,
        Short::Flags(fs) => fs.chars().for_each(|f| (o.apply_flag)(a, f)),
    }
    Ok(())
}

/// Reads one getopt-style word (`args[*i - 1]` is `arg`), taking the next
/// word as the value where the letter needs one. IOR and mdtest share this
/// syntax; only their letters differ. Every refusal names the option, and
/// the whole word when it was part of a bundle.
pub fn short_option<A>(
    o: &ShortOpts<A>,
    arg: &str,
    args: &[String],
    i: &mut usize,
) -> Result<Short, Usage> {
    let usage = |m: String| Usage(m);
    let Some(body) = arg.strip_prefix('-').filter(|b| !b.is_empty()) else {
        return Err(usage(format!(
            "unexpected argument '{arg}': {} takes options only ({})",
            o.tool, o.operand_hint
        )));
    };
    let mut chars = body.chars();
    let c = chars.next().expect("body is not empty");
    if c == 'h' {
        return Ok(Short::Help);
    }
    if o.value.contains(c) {
        let rest = chars.as_str();
        let rest = rest.strip_prefix('=').unwrap_or(rest);
        let v = if rest.is_empty() {
            let v = args
                .get(*i)
                .ok_or_else(|| usage(format!("-{c} needs a value")))?;
            *i += 1;
            v.clone()
        } else {
            rest.to_string()
        };
        return Ok(Short::Value(c, v));
    }
    let within = if body.chars().count() > 1 {
        format!(" (in {arg})")
    } else {
        String::new()
    };
    for f in body.chars() {
        let opt = format!("-{f}");
        if let Some(hint) = (o.unsupported)(&opt) {
            return Err(usage(format!("{opt}{within}: {hint}")));
        }
        if o.flags.contains(f) {
            continue;
        }
        return Err(usage(if o.value.contains(f) {
            format!("{opt} takes a value; give it as its own option (e.g. `{opt} VALUE`), not bundled in {arg}")
        } else if f == '=' {
            format!(
                "{arg}: a flag takes no value; give the flag alone (see `ioscale {} --help`)",
                o.cmd
            )
        } else {
            format!(
                "{opt}{within}: not an {} option ioscale supports; see `ioscale {} --help` and docs/compat.md",
                o.tool, o.cmd
            )
        }));
    }
    Ok(Short::Flags(body.to_string()))
}

/// Now in C's `ctime` form in local time (`Mon Jun  1 19:21:30 2020`),
/// as IOR prints its time stamps.
pub fn ctime_now() -> String {
    bench::host::local_now("%a %b %e %H:%M:%S %Y")
}

/// File-system capacity figures for IOR's `FS` line (from statvfs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FsStats {
    /// Size in bytes.
    pub total_bytes: u64,
    /// Bytes in use.
    pub used_bytes: u64,
    /// Inodes in all.
    pub inodes: u64,
    /// Inodes in use.
    pub used_inodes: u64,
}

/// Capacity of the file system holding `dir`, for IOR's `FS` line.
pub fn fs_stats(dir: &Path) -> Option<FsStats> {
    let st = rustix::fs::statvfs(dir).ok()?;
    Some(FsStats {
        total_bytes: st.f_blocks * st.f_frsize,
        used_bytes: st.f_blocks.saturating_sub(st.f_bfree) * st.f_frsize,
        inodes: st.f_files,
        used_inodes: st.f_files.saturating_sub(st.f_ffree),
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

/// A workload check's message in the front-end's own terms: the spec
/// names ioscale's native flags (`--xfer`), which a user of the tool never
/// typed, so the flags the refusal carries ([`spec::SpecError::flags`])
/// are followed by the tool's option for each (`map`: native flag → tool
/// option, in `map`'s order), e.g. "(in IOR's terms: -t is --xfer)".
pub fn in_tool_terms(tool: &str, msg: &str, flags: &[&str], map: &[(&str, &str)]) -> String {
    let terms: Vec<String> = map
        .iter()
        .filter(|(native, _)| flags.contains(native))
        .map(|(native, theirs)| format!("{theirs} is {native}"))
        .collect();
    if terms.is_empty() {
        msg.to_string()
    } else {
        format!("{msg} (in {tool}'s terms: {})", terms.join(", "))
    }
}

/// The value of a front-end's own `--progress MODE` (IOR, mdtest,
/// smallfile and fio have no option of that name, so it clashes with
/// nothing of theirs).
pub fn progress_value(v: &str) -> Result<crate::progress::ProgressMode, Usage> {
    crate::progress::parse_mode(v)
        .ok_or_else(|| Usage(format!("--progress {v}: use auto, bar, plain or none")))
}

/// `-a API` of IOR and mdtest: ioscale issues POSIX calls only; any other
/// API is refused with `instead`, what ioscale issues and the way to ask
/// for it.
pub fn posix_api(v: &str, instead: &str) -> Result<(), Usage> {
    if v.eq_ignore_ascii_case("POSIX") {
        Ok(())
    } else {
        Err(Usage(format!(
            "-a {v}: not supported: ioscale issues POSIX {instead}"
        )))
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
