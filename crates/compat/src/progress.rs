//! The progress modes a front-end takes (`--progress MODE`, or the
//! `IOSCALE_PROGRESS` environment variable where the tool's syntax has no
//! room for one) and how an emulating front-end settles `auto`.
//!
//! The live display itself belongs to the binary; the front-ends' parsers
//! only need the mode's name and value.

use std::io::IsTerminal;

use clap::ValueEnum;

/// `--progress`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ProgressMode {
    /// `bar` when standard error is a terminal, `plain` otherwise.
    #[default]
    Auto,
    /// A live line redrawn on the terminal.
    Bar,
    /// One line per finished phase (and sweep point), for logs.
    Plain,
    /// Nothing.
    None,
}

/// The environment variable through which the front-ends that emulate
/// another tool (`ior`, `mdtest`, `smallfile`, `dd`, `fio`) take the
/// progress mode without a word in their tool's own syntax.
pub const ENV: &str = "IOSCALE_PROGRESS";

/// Parses a progress mode as `--progress` takes it.
pub fn parse_mode(v: &str) -> Option<ProgressMode> {
    ProgressMode::from_str(v, true).ok()
}

/// The progress mode of an emulating front-end: its own `--progress`
/// (`flag`, where its syntax has room for one) or else `IOSCALE_PROGRESS`,
/// or else `auto`. Unlike `run`'s, a front-end's `auto` is a live line when
/// standard error is a terminal and nothing otherwise, so the emulated
/// tool's standard error in a log stays as that tool's; `plain` must be
/// asked for. A bad `IOSCALE_PROGRESS` is an error naming it.
pub fn front_mode(flag: Option<ProgressMode>) -> Result<ProgressMode, String> {
    let mode = match flag {
        Some(m) => m,
        None => match std::env::var(ENV) {
            Ok(v) if v.is_empty() => ProgressMode::Auto,
            Ok(v) => {
                parse_mode(&v).ok_or_else(|| format!("{ENV}={v}: use auto, bar, plain or none"))?
            }
            Err(std::env::VarError::NotPresent) => ProgressMode::Auto,
            Err(std::env::VarError::NotUnicode(v)) => {
                return Err(format!(
                    "{ENV}={}: use auto, bar, plain or none",
                    v.to_string_lossy()
                ))
            }
        },
    };
    Ok(match mode {
        ProgressMode::Auto if std::io::stderr().is_terminal() => ProgressMode::Bar,
        ProgressMode::Auto => ProgressMode::None,
        m => m,
    })
}
