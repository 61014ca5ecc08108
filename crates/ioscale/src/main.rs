//! ioscale: a parallel storage benchmark.
//!
//! This file is the edge of the program: it parses arguments, installs the
//! interrupt handler, calls the driver, and is the one place that writes
//! results to stdout and files. Exit codes are a contract: 0 ran clean,
//! 1 I/O errors or failed verification, 2 usage or setup error,
//! 130 interrupted (results so far kept); see [`exit`] for how a command
//! returns one and where a failure is printed.

mod args;
mod cli;
mod exit;
mod front;
mod meta_cmd;
mod output;
mod progress;
mod report_cmd;
mod slurm;
mod sweep;

use std::io::Write;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use report::{ExportType, ResultSet};

use crate::args::Format;
use crate::cli::{Cli, Command, RunArgs};
use crate::exit::{Exit, Failure};

fn main() {
    let (tool, result) = real_main();
    std::process::exit(exit::finish(tool, result));
}

/// Runs the command of argv; returns its result and the name its failure
/// is said under (`ioscale`, or the front-end's: `ior: error: …`).
fn real_main() -> (&'static str, Exit) {
    // The compatibility front-ends read their tools' own syntax, which clap
    // cannot: a binary called `ior`/`dd` (a symlink), or `ioscale ior|dd …`.
    let argv = match utf8_args() {
        Ok(a) => a,
        Err(f) => return ("ioscale", Err(f)),
    };
    let called = argv
        .first()
        .map(|a| {
            Path::new(a)
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    if let Some(f) = front::by_program(&called) {
        return (f.command, (f.main)(&argv[0], &argv[1..]));
    }
    if let Some(f) = argv.get(1).and_then(|a| front::by_command(a)) {
        return (f.command, (f.main)(f.shown_as, &argv[2..]));
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        // clap prints help/version with exit 0 and usage errors with 2.
        Err(e) if e.use_stderr() => return ("ioscale", Err(Failure::Clap(e))),
        Err(e) => {
            let _ = e.print();
            return ("ioscale", Ok(0));
        }
    };
    ("ioscale", run_command(cli.command))
}

/// The command line as text. An argument that is not UTF-8 (Linux allows
/// any bytes in a path) is refused naming it, exit 2: `std::env::args`
/// panicked on it (exit 101) before any command could say why, and every
/// front-end and record reads the words as text.
fn utf8_args() -> Result<Vec<String>, Failure> {
    std::env::args_os()
        .enumerate()
        .map(|(i, a)| {
            a.into_string().map_err(|a| {
                Failure::usage(format!(
                    "argument {i} {:?} is not UTF-8: ioscale takes its paths and values as \
                     text; rename the path or reach it through a link with a UTF-8 name",
                    a.to_string_lossy()
                ))
            })
        })
        .collect()
}

/// Runs a parsed `ioscale` command.
fn run_command(command: Command) -> Exit {
    match command {
        Command::Run(args) => cmd_run(&args),
        Command::Meta(args) => meta_cmd::cmd_meta(&args),
        Command::Sweep(args) => sweep::cmd_sweep(&args),
        Command::Slurm(args) => slurm::cmd_slurm(&args),
        Command::Report(args) => report_cmd::cmd_report(&args),
        Command::Compare(args) => report_cmd::cmd_compare(&args),
        Command::Ior { args } => front_main("ior", &args),
        Command::Dd { args } => front_main("dd", &args),
        Command::Fio { args } => front_main("fio", &args),
        Command::Mdtest { args } => front_main("mdtest", &args),
        Command::Smallfile { args } => front_main("smallfile", &args),
        Command::Io500 { args } => front_main("io500", &args),
        Command::Clean(args) => cmd_clean(&args.target, args.force),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "ioscale", &mut std::io::stdout());
            Ok(0)
        }
        Command::Man => {
            let cmd = <Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd.clone()).render(&mut out)?;
            for sub in cmd.get_subcommands() {
                let name = format!("ioscale-{}", sub.get_name());
                let sub = sub.clone().name(&*name.leak());
                clap_mangen::Man::new(sub).render(&mut out)?;
            }
            let _ = std::io::stdout().write_all(&out);
            Ok(0)
        }
    }
}

/// Runs the front-end registered as `command` (clap reached it: the
/// fast path in `real_main` normally does first); its failure is said in
/// its own name, as on the fast path.
fn front_main(command: &str, args: &[String]) -> Exit {
    let f = front::by_command(command).expect("every front-end subcommand is registered");
    (f.main)(f.shown_as, args).map_err(|e| Failure::Said(e.report(f.command)))
}

/// Installs Ctrl-C / SIGTERM handling: the first signal asks the run to
/// stop and keep its results; a second one exits at once with 130.
pub(crate) fn install_signals() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Before the second signal's exit: a FUSE trace instance in use is
        // turned off and removed, not left recording.
        let second = Arc::clone(&stop);
        // SAFETY: the action reads an atomic and makes only
        // async-signal-safe calls (probe::remove_live_instances).
        unsafe {
            signal_hook::low_level::register(sig, move || {
                if second.load(std::sync::atomic::Ordering::Relaxed) {
                    probe::remove_live_instances();
                }
            })
        }
        .context("installing the signal handler")?;
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&stop))
            .context("installing the signal handler")?;
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing the signal handler")?;
    }
    output::watch_signals(&stop);
    Ok(stop)
}

fn cmd_run(args: &RunArgs) -> Exit {
    let raw = args
        .to_raw()
        .map_err(|e| said_by_rank_0(Failure::usage(e)))?;
    as_ranks(|coord| run_ranks(args, raw, coord))
}

/// A failure found before MPI is up, the same on every task of the
/// launch: task 0 alone says it (see [`launched_as_rank_0`]).
fn said_by_rank_0(f: Failure) -> Failure {
    if launched_as_rank_0() {
        f
    } else {
        Failure::Said(f.code())
    }
}

/// `ioscale run` as one rank of `coord` (the only rank when alone): the
/// spec is checked for all `ranks × threads` workers, every rank runs its
/// threads, and rank 0 alone prints and writes; every rank exits with
/// rank 0's exit code (see [`as_ranks`]).
fn run_ranks(args: &RunArgs, mut raw: spec::RawWorkload, coord: &dyn coord::Coordinator) -> Exit {
    let ranks = coord.size();
    let root = coord.rank() == 0;
    let threads = raw.threads.unwrap_or(1);
    if ranks > 1 {
        if args.reorder && args.reorder_offset.is_none() {
            // IOR -C: with ranks on several hosts, read another host's data.
            let layout = bench::cluster::Layout::discover(coord, threads as u32)?;
            raw.reorder = Some(layout.default_reorder_offset() as u64);
        }
        // Sizes (--total), --reorder and layouts are checked for all workers.
        raw.threads = Some(threads.saturating_mul(ranks as u64));
    }
    let mut spec = raw.build().map_err(Failure::usage)?;
    spec.threads = threads as u32;
    let outputs = [
        ("--json", args.record.json.as_deref()),
        ("--csv", args.record.csv.as_deref()),
    ];
    check_outputs(coord, &outputs)?;
    let stop = install_signals()?;
    let command: Vec<String> = std::env::args().collect();
    let live = root
        .then(|| progress::Display::start(args.shown.progress, spec.reps, spec.ops.len(), ranks))
        .flatten();
    // An interrupted run's record is saved before its files are removed.
    let mut early = output::EarlySave::new(
        args.record.json.as_deref(),
        args.record.csv.as_deref(),
        "the files",
    );
    let outcome = bench::run::run_with_hook(
        &spec,
        command,
        stop,
        coord,
        run_options(args.per_worker),
        &mut |rs| early.save(rs),
    );
    drop(live);
    let outcome = outcome?;
    let (json, csv) = if early.saved {
        (None, None)
    } else {
        (args.record.json.as_deref(), args.record.csv.as_deref())
    };
    if root {
        emit(&outcome, json, csv, args.shown.format, args.shown.quiet)
    } else {
        Ok(0)
    }
}

/// The driver options of `run` and `meta`: `--per-worker` keeps every
/// worker's row, otherwise rank 0 receives one summary per node.
pub(crate) fn run_options(per_worker: bool) -> bench::run::Options {
    bench::run::Options {
        node_summary: !per_worker,
        ..Default::default()
    }
}

/// Whether this process is rank 0 of its launch (or was not launched as
/// one of several tasks), read from the launcher's environment: before MPI
/// is up, or when it cannot come up, only the launcher says which task
/// this is. A launch error is the same on every task, so task 0 alone
/// prints it instead of N copies.
pub(crate) fn launched_as_rank_0() -> bool {
    [
        "OMPI_COMM_WORLD_RANK",
        "PMIX_RANK",
        "PMI_RANK",
        "SLURM_PROCID",
    ]
    .iter()
    .find_map(|k| std::env::var(k).ok())
    .is_none_or(|r| r.trim() == "0")
}

/// Runs a command as one rank of its launch (the only one when started
/// alone; see [`coord::init`]): every rank exits with rank 0's exit code,
/// and MPI is finalised before the process exits. `body` makes the same
/// collective calls on every rank whatever happens, and prints only on
/// rank 0; a [`Failure`] it returns is said by rank 0 alone (by `main`).
pub(crate) fn as_ranks(body: impl FnOnce(&dyn coord::Coordinator) -> Exit) -> Exit {
    let coord = coord::init().map_err(|e| said_by_rank_0(Failure::refused(e)))?;
    let result = body(&*coord);
    let result = if coord.size() > 1 {
        let result = rank_0s(&*coord, result);
        // MPI_Finalize waits for every rank without a limit: a rank that
        // stopped answering after its last phase would hang the job there.
        // Meeting once more within the coordinator's limit names it.
        bench::cluster::test_freeze(&*coord, "exit");
        if let Err(e) = coord.barrier_within(None) {
            bench::cluster::give_up(&*coord, &e)
        }
        result
    } else {
        result
    };
    // Dropping the coordinator finalises MPI.
    drop(coord);
    result
}

/// Rank 0's result on every rank (a collective call): rank 0 keeps its
/// own; another rank takes its code, and is silent when it is a failure
/// (rank 0 says why).
fn rank_0s(coord: &dyn coord::Coordinator, result: Exit) -> Exit {
    let mine = match &result {
        Ok(code) => (false, *code),
        Err(f) => (true, f.code()),
    };
    let (failed, code) = coord.broadcast_as(&mine).unwrap_or(mine);
    if coord.rank() == 0 {
        result
    } else if failed {
        Err(Failure::Said(code))
    } else {
        Ok(code)
    }
}

/// Checks the `--json`/`--csv` paths on rank 0 and agrees on the outcome:
/// a failure on every rank when one is bad (rank 0's says which).
pub(crate) fn check_outputs(
    coord: &dyn coord::Coordinator,
    outputs: &[(&str, Option<&Path>)],
) -> Result<(), Failure> {
    check_outputs_beside(coord, outputs, &[])
}

/// [`check_outputs`] for a run that reads or writes the user's own files
/// `data` (each with the operand that names it, `if=`): an output naming
/// one of them is refused too.
pub(crate) fn check_outputs_beside(
    coord: &dyn coord::Coordinator,
    outputs: &[(&str, Option<&Path>)],
    data: &[(&str, &Path)],
) -> Result<(), Failure> {
    let bad = if coord.rank() == 0 {
        check_output_set(outputs, data)
    } else {
        Ok(())
    };
    bench::cluster::root_check(coord, bad).map_err(|e| match e {
        Some(e) => Failure::refused(format!("{e:#}")),
        None => Failure::Said(2),
    })
}

/// The edge of a finished run, shared by `run` and `meta`: errors and
/// warnings to stderr, the record to `--json`/`--csv`, the chosen format to
/// stdout, notes last. Returns the run's exit code (at least 1 when a
/// record could not be written).
pub(crate) fn emit(
    outcome: &bench::run::Outcome,
    json: Option<&Path>,
    csv: Option<&Path>,
    format: Format,
    quiet: bool,
) -> Exit {
    let rs = &outcome.results;
    for line in error_lines(&rs.errors) {
        eprintln!("ioscale: error: {line}");
    }
    // A failed data check is an error too: said on stderr even with -q.
    for p in &rs.phases {
        for m in p.verify.iter().flat_map(|v| &v.mismatches) {
            eprintln!(
                "ioscale: error: verify {} rep {}: {} at offset {}: data differs from what was written ({} bad byte(s))",
                p.op, p.rep, m.file, m.offset, m.bad_bytes
            );
        }
    }
    if format != Format::Text {
        for w in &rs.warnings {
            eprintln!("ioscale: warning: {w}");
        }
    }
    let mut write_err = None;
    if let Some(p) = json {
        if let Err(e) = write_output("--json", p, ExportType::Json, rs) {
            write_err = Some(e);
        }
    }
    if let Some(p) = csv {
        if let Err(e) = write_output("--csv", p, ExportType::Csv, rs) {
            write_err = Some(e);
        }
    }
    if !quiet {
        let kind = match format {
            Format::Text => ExportType::Text,
            Format::Json => ExportType::Json,
            Format::Csv => ExportType::Csv,
        };
        let bytes = kind.exporter().render(rs)?;
        let mut out = std::io::stdout().lock();
        // A closed pipe (ioscale … | head) is not worth a panic.
        let _ = out.write_all(&bytes);
        let _ = out.flush();
    }
    for n in &outcome.notes {
        eprintln!("ioscale: {n}");
    }
    if let Some(e) = write_err {
        eprintln!("ioscale: error: {e:#}");
        // A signal that ended the wait for a FIFO's reader is still an
        // interruption.
        let code = if output::interrupted() { 130 } else { 1 };
        return Ok(outcome.exit_code().max(code));
    }
    Ok(outcome.exit_code())
}

/// The error lines of a run: the first failure of each kind (errno) in
/// full — operation, file, offset — and, when many workers failed the same
/// way (64 workers out of descriptors), one line counting the others
/// instead of one line each. Every failure stays in the report and in the
/// JSON record's `errors[]`.
pub(crate) fn error_lines(errors: &[report::ErrorRecord]) -> Vec<String> {
    let mut shown: Vec<Option<i32>> = Vec::new();
    let mut lines = Vec::new();
    let mut more = 0usize;
    for e in errors {
        let kind = e.errno;
        if kind.is_some() && shown.contains(&kind) {
            more += 1;
            continue;
        }
        shown.push(kind);
        let at = e
            .offset
            .map(|o| format!(" at offset {o}"))
            .unwrap_or_default();
        lines.push(format!(
            "worker {}: {} {}{at}: {}",
            e.worker, e.op, e.file, e.message
        ));
    }
    if more > 0 {
        lines.push(format!(
            "{more} more failure(s) with the same error in other workers; all {} are listed in the report and in the JSON record's errors[]",
            errors.len()
        ));
    }
    lines
}

/// Refuses, before the run, an output path the results could not be
/// written to: a missing directory, a directory, a socket or block device
/// (see `safefs::check_output`), rather than losing the results after it.
pub(crate) fn check_output_path(flag: &str, p: &Path) -> anyhow::Result<()> {
    safefs::check_output(flag, p)?;
    Ok(())
}

/// Checks every output of one command ([`check_output_path`]) and that
/// no two replace the same file, nor one a file the run itself reads or
/// writes (`data`, each with the operand that names it): the later would
/// replace the earlier when the results are written, after the run.
/// Streams (a FIFO, a character device, `-`) take several outputs.
pub(crate) fn check_output_set(
    outputs: &[(&str, Option<&Path>)],
    data: &[(&str, &Path)],
) -> anyhow::Result<()> {
    let mut taken: Vec<(&str, safefs::Place)> = Vec::new();
    for &(flag, p) in outputs {
        let Some(p) = p else { continue };
        let Some(place) = safefs::check_output(flag, p)?.place() else {
            continue;
        };
        if let Some((first, _)) = taken.iter().find(|(_, q)| *q == place) {
            anyhow::bail!(
                "{flag} {}: the same file as {first}; each output needs a file of its own",
                p.display()
            );
        }
        if let Some((what, d)) = data
            .iter()
            .find(|(_, d)| safefs::place_of(d).as_ref() == Some(&place))
        {
            anyhow::bail!(
                "{flag} {}: the same file as {what}{}, which the run reads or writes; the record would replace it",
                p.display(),
                d.display()
            );
        }
        taken.push((flag, place));
    }
    Ok(())
}

/// Renders a record and writes it atomically.
fn write_output(flag: &str, p: &Path, kind: ExportType, rs: &ResultSet) -> anyhow::Result<()> {
    let bytes = kind.exporter().render(rs)?;
    output::write_named(flag, p, &bytes)
}

fn cmd_clean(target: &Path, force: bool) -> Exit {
    let opts = safefs::LockOptions {
        take_over_other_host: force,
    };
    let rep = bench::dataset::clean_all(target, opts)?;
    let mut code = 0;
    for c in &rep.cleaned {
        if let Some(t) = &c.took_over {
            eprintln!("ioscale: {t}");
        }
        if c.left.is_empty() {
            eprintln!("ioscale: removed {}", c.set);
        } else {
            eprintln!("ioscale: removed part of {}; left in place:", c.set);
            for l in &c.left {
                eprintln!("ioscale:   {l}");
            }
            code = 1;
        }
    }
    if !rep.refused.is_empty() {
        let lines = rep.refused.iter().map(|e| e.to_string()).collect();
        return Err(Failure::Refusals(lines));
    }
    Ok(code)
}
