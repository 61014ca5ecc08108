//! ioscale: a parallel storage benchmark.
//!
//! This file is the edge of the program: it parses arguments, installs the
//! interrupt handler, calls the driver, and is the one place that writes
//! results to stdout and files. Exit codes are a contract: 0 ran clean,
//! 1 I/O errors or failed verification, 2 usage or setup error,
//! 130 interrupted (results so far kept).

mod cli;
mod files;
mod host;
mod run;

use std::io::Write;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use report::{ExportType, ResultSet};

use crate::cli::{Cli, Command, Format, RunArgs};

fn main() {
    let code = match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ioscale: error: {e:#}");
            2
        }
    };
    std::process::exit(code);
}

fn real_main() -> anyhow::Result<i32> {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap prints help/version with exit 0 and usage errors with 2.
            let _ = e.print();
            return Ok(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match cli.command {
        Command::Run(args) => cmd_run(&args),
        Command::Clean(args) => cmd_clean(&args.target),
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

/// Installs Ctrl-C / SIGTERM handling: the first signal asks the run to
/// stop and keep its results; a second one exits at once with 130.
fn install_signals() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&stop))
            .context("installing the signal handler")?;
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing the signal handler")?;
    }
    Ok(stop)
}

fn cmd_run(args: &RunArgs) -> anyhow::Result<i32> {
    let raw = match args.to_raw() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ioscale: error: {e}");
            return Ok(2);
        }
    };
    let spec = match raw.build() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ioscale: error: {e}");
            return Ok(2);
        }
    };
    for (flag, p) in [("--json", &args.json), ("--csv", &args.csv)] {
        if let Some(p) = p {
            check_output_path(flag, p)?;
        }
    }
    let stop = install_signals()?;
    let command: Vec<String> = std::env::args().collect();
    let outcome = match run::run(&spec, command, stop) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ioscale: error: {e}");
            return Ok(2);
        }
    };
    let rs = &outcome.results;
    for e in &rs.errors {
        let at = e
            .offset
            .map(|o| format!(" at offset {o}"))
            .unwrap_or_default();
        eprintln!(
            "ioscale: error: worker {}: {} {}{at}: {}",
            e.worker, e.op, e.file, e.message
        );
    }
    if args.format != Format::Text {
        for w in &rs.warnings {
            eprintln!("ioscale: warning: {w}");
        }
    }
    let mut write_err = None;
    if let Some(p) = &args.json {
        if let Err(e) = write_output(p, ExportType::Json, rs) {
            write_err = Some(e);
        }
    }
    if let Some(p) = &args.csv {
        if let Err(e) = write_output(p, ExportType::Csv, rs) {
            write_err = Some(e);
        }
    }
    if !args.quiet {
        let kind = match args.format {
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
        return Ok(outcome.exit_code().max(1));
    }
    Ok(outcome.exit_code())
}

/// Refuses an output path whose directory does not exist before the run,
/// rather than losing the results after it.
fn check_output_path(flag: &str, p: &Path) -> anyhow::Result<()> {
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        anyhow::bail!(
            "{flag} {}: directory {} does not exist",
            p.display(),
            dir.display()
        );
    }
    if p.is_dir() {
        anyhow::bail!("{flag} {}: is a directory; name a file", p.display());
    }
    Ok(())
}

/// Writes a rendered record atomically: a temporary file, then rename.
fn write_output(p: &Path, kind: ExportType, rs: &ResultSet) -> anyhow::Result<()> {
    let bytes = kind.exporter().render(rs)?;
    let tmp = p.with_extension(format!(
        "{}.tmp",
        p.extension().and_then(|e| e.to_str()).unwrap_or("out")
    ));
    std::fs::write(&tmp, &bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, p).with_context(|| format!("writing {}", p.display()))?;
    Ok(())
}

fn cmd_clean(target: &Path) -> anyhow::Result<i32> {
    match files::clean(target) {
        Ok(left) => {
            for l in &left {
                eprintln!("ioscale: could not remove {l}");
            }
            Ok(if left.is_empty() { 0 } else { 1 })
        }
        Err(e) => {
            eprintln!("ioscale: error: {e}");
            Ok(2)
        }
    }
}
