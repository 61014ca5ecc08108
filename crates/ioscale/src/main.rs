//! ioscale: a parallel storage benchmark.
//!
//! This file is the top of the program: it parses arguments and runs the
//! command they name, each through [`launch`] (the ranks of the launch,
//! the interrupt handler) and [`mod@emit`] and [`output`] (the one way results
//! reach stdout and files). Exit codes are a contract: 0 ran clean, 1 I/O
//! errors or failed verification, 2 usage or setup error, 130 interrupted
//! by SIGINT or SIGTERM, 129 by SIGHUP (results so far kept); see [`exit`]
//! for how a command returns one and where a failure is printed, and
//! [`signals`] for the stop signals.

// First: its print macros shadow the standard ones in every module below.
#[macro_use]
mod term;

mod args;
mod cli;
mod emit;
mod exit;
mod front;
mod history_cmd;
mod history_run;
mod history_view;
mod job;
mod launch;
mod manpage;
mod meta_cmd;
mod output;
mod progress;
mod report_cmd;
mod saved;
mod signals;
mod slurm;
mod sweep;

use std::path::Path;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::emit::emit;
use crate::exit::{Exit, Failure};
use crate::job::{run_options, RunArgs};
use crate::launch::{as_ranks, check_outputs, install_signals, said_by_rank_0};

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
    if let Some(f) = front::registry::by_program(&called) {
        return (f.command, (f.main)(&argv[0], &argv[1..]));
    }
    if let Some(f) = argv.get(1).and_then(|a| front::registry::by_command(a)) {
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
        Command::Run(args) => args
            .s3
            .apply()
            .map_err(Into::into)
            .and_then(|()| cmd_run(&args)),
        Command::Meta(args) => args
            .s3
            .apply()
            .map_err(Into::into)
            .and_then(|()| meta_cmd::cmd_meta(&args)),
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
        Command::History(args) => history_cmd::cmd_history(&args),
        Command::Clean(args) => args
            .s3
            .apply()
            .map_err(Into::into)
            .and_then(|()| cmd_clean(&args.target, args.force)),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            // Into memory first: clap_complete panics on a closed pipe
            // (`ioscale completions bash | head`), where a write is
            // simply cut short.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "ioscale", &mut script);
            let _ = std::io::Write::write_all(&mut std::io::stdout(), &script);
            Ok(0)
        }
        Command::Man(args) => manpage::cmd_man(&args, &<Cli as clap::CommandFactory>::command()),
    }
}

/// Runs the front-end registered as `command` (clap reached it: the
/// fast path in `real_main` normally does first); its failure is said in
/// its own name, as on the fast path.
fn front_main(command: &str, args: &[String]) -> Exit {
    let f = front::registry::by_command(command).expect("every front-end subcommand is registered");
    (f.main)(f.shown_as, args).map_err(|e| Failure::Said(e.report(f.command)))
}

fn cmd_run(args: &RunArgs) -> Exit {
    let raw = args
        .to_raw()
        .map_err(|e| said_by_rank_0(Failure::usage(e)))?;
    as_ranks("ioscale", |coord| run_ranks(args, raw, coord))
}

/// `ioscale run` as one rank of `coord` (the only rank when alone): the
/// spec is checked for all `ranks × threads` workers, every rank runs its
/// threads, and rank 0 alone prints and writes; every rank exits with
/// rank 0's exit code (see [`as_ranks`]).
fn run_ranks(args: &RunArgs, mut raw: spec::RawWorkload, coord: &dyn coord::Coordinator) -> Exit {
    let ranks = coord.size();
    let root = coord.rank() == 0;
    if ranks > 1 && args.reorder && args.reorder_offset.is_none() {
        // IOR -C: with ranks on several hosts, read another host's data.
        let threads = raw.threads.unwrap_or(1) as u32;
        let layout = bench::cluster::Layout::discover(coord, threads)?;
        raw.reorder = Some(layout.default_reorder_offset() as u64);
    }
    // Sizes (--total), --reorder and layouts are checked for all workers.
    let spec = raw.build_across(ranks).map_err(Failure::usage)?;
    let interval = args.record.over_time.interval().map_err(Failure::usage)?;
    let mut opts = run_options(args.per_worker, interval);
    opts.steady = (args.record.over_time)
        .steady(spec.time_limit, ranks)
        .map_err(Failure::usage)?;
    let plan = bench::plan::Plan::single(spec).with_options(opts);
    let outputs = [
        ("--json", args.record.json.as_deref()),
        ("--csv", args.record.csv.as_deref()),
        ("--series-csv", args.record.over_time.series_csv.as_deref()),
    ];
    check_outputs(coord, &outputs)?;
    let history = history_run::Session::new(Some(&args.history), "ioscale", "run", root)?;
    let stop = install_signals()?;
    let command: Vec<String> = std::env::args().collect();
    let live = front::live_plan(args.shown.progress, root, &plan, ranks);
    // An interrupted run's record is saved before its files are removed.
    let mut early = output::EarlySave::new(
        args.record.json.as_deref(),
        args.record.csv.as_deref(),
        "the files",
    );
    let mut hooks = bench::exec::OnCleanup(|rs: &report::ResultSet| early.save(rs));
    let env = bench::exec::Env::new(command, stop, coord).with_hooks(&mut hooks);
    let outcome = bench::exec::execute(&plan, env);
    drop(live);
    let outcome = outcome?.into_single();
    let (json, csv) = if early.saved {
        (None, None)
    } else {
        (args.record.json.as_deref(), args.record.csv.as_deref())
    };
    if root {
        let series_csv = args.record.over_time.series_csv.as_deref();
        let code = emit(
            &outcome,
            [json, csv, series_csv],
            args.shown.format,
            args.shown.quiet,
        )?;
        Ok(history.finish_with(&outcome.results, code))
    } else {
        Ok(0)
    }
}

fn cmd_clean(target: &Path, force: bool) -> Exit {
    let opts = safefs::LockOptions {
        take_over_other_host: force,
    };
    let rep = bench::objects::clean(target, opts)?;
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
