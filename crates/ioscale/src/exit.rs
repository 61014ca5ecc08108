//! Exit codes: what a command returns, and the one place that says why it
//! failed.
//!
//! The codes are a contract (0 ran clean, 1 ran but saw I/O errors or
//! failed verification, 2 usage or setup error, 3 a clean run's figure
//! regressed against `--baseline`, [`REGRESSED`], 130 interrupted by
//! SIGINT or SIGTERM, 129 by SIGHUP). Inside the program an interrupted
//! command returns 130; the code of the signal that came replaces it as
//! the command ends ([`crate::signals::settle`]). A command returns an
//! [`Exit`]:
//!
//! - `Ok(code)` when the run *happened*: the code is its outcome (0, 1 or
//!   130, from [`bench::run::Outcome::exit_code`] and the outputs written),
//!   and whatever it found is already in its report;
//! - `Err(`[`Failure`]`)` when it could not start or stopped on an error:
//!   the failure carries both the message and the code, and `main` prints
//!   it once (`TOOL: error: MESSAGE`, on rank 0 only) and exits with
//!   [`Failure::code`]. Nothing matches message text to find a code.

/// The exit code of a clean run whose figure regressed against its
/// `--baseline` beyond the noise and the threshold (docs/history.md).
pub(crate) const REGRESSED: i32 = 3;

/// The exit code of a command a SIGINT or SIGTERM stopped.
pub(crate) const INTERRUPTED: i32 = 130;

/// What a command returns (see the module docs): the outcome code of a run
/// that happened, or why it could not run.
pub type Exit = Result<i32, Failure>;

/// Why a command could not do what it was asked, with its exit code.
#[derive(Debug)]
pub enum Failure {
    /// A command line that cannot run as given; the message names the flag
    /// (exit 2).
    Usage(String),
    /// A setup step refused before anything was measured: an output path,
    /// a target, a directory that cannot be made (exit 2).
    Refused(String),
    /// Several refusals, one line each, in order (`ioscale clean` over
    /// several data sets) (exit 2).
    Refusals(Vec<String>),
    /// clap's own usage error, printed in clap's layout (exit 2).
    Clap(clap::Error),
    /// The driver library's error: its code is
    /// [`bench::Error::exit_code`].
    Bench(bench::Error),
    /// The results were measured but could not be written (exit 1, as an
    /// I/O error).
    Output(anyhow::Error),
    /// Any other failure (a system call at setup, an exchange between
    /// ranks), printed with its context chain (exit 2).
    Other(anyhow::Error),
    /// A failure that came with a stop signal: said as the inner one,
    /// with the signal's exit code (129 or 130, see [`crate::signals`]).
    Signalled(Box<Failure>, i32),
    /// Already said on standard error (by this process, or by rank 0 when
    /// this is another rank of the launch): exit with the code, print
    /// nothing more.
    Said(i32),
}

/// A command line the front-end refuses: printed with exit code 2 (the
/// front-ends' parsers in `compat` return it).
pub use compat::Usage;

impl Failure {
    /// A command line that cannot run as given.
    pub fn usage(msg: impl std::fmt::Display) -> Failure {
        Failure::Usage(msg.to_string())
    }

    /// A setup step refused before anything was measured.
    pub fn refused(msg: impl std::fmt::Display) -> Failure {
        Failure::Refused(msg.to_string())
    }

    /// The process exit code.
    pub fn code(&self) -> i32 {
        match self {
            Failure::Usage(_)
            | Failure::Refused(_)
            | Failure::Refusals(_)
            | Failure::Clap(_)
            | Failure::Other(_) => 2,
            Failure::Bench(e) => e.exit_code(),
            Failure::Output(_) => 1,
            Failure::Said(code) | Failure::Signalled(_, code) => *code,
        }
    }

    /// The lines to print on standard error, each after `TOOL: error: `
    /// (clap's errors and [`Failure::Said`] have none).
    pub fn lines(&self) -> Vec<String> {
        match self {
            Failure::Usage(m) | Failure::Refused(m) => vec![m.clone()],
            Failure::Refusals(ms) => ms.clone(),
            Failure::Bench(e) => vec![e.to_string()],
            Failure::Output(e) | Failure::Other(e) => vec![format!("{e:#}")],
            Failure::Signalled(f, _) => f.lines(),
            Failure::Clap(_) | Failure::Said(_) => Vec::new(),
        }
    }

    /// Says why on standard error, as `tool` (`ioscale`, `ior`, …), and
    /// returns the exit code.
    pub fn report(&self, tool: &str) -> i32 {
        let mut inner = self;
        while let Failure::Signalled(f, _) = inner {
            inner = f;
        }
        if let Failure::Clap(e) = inner {
            let _ = e.print();
        }
        for line in self.lines() {
            eprintln!("{tool}: error: {line}");
        }
        self.code()
    }
}

impl From<bench::Error> for Failure {
    fn from(e: bench::Error) -> Failure {
        Failure::Bench(e)
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Failure {
        Failure::Other(e)
    }
}

impl From<Usage> for Failure {
    fn from(Usage(m): Usage) -> Failure {
        Failure::Usage(m)
    }
}

/// Errors of the layers below that end a command as exit 2 with their
/// message (and its causes).
macro_rules! other_failure {
    ($($t:ty),*) => {$(
        impl From<$t> for Failure {
            fn from(e: $t) -> Failure {
                Failure::Other(e.into())
            }
        }
    )*};
}

other_failure!(
    std::io::Error,
    serde_json::Error,
    coord::DecodeError,
    report::ExportError
);

/// `result` with its exit code settled by the stop signal that came, if
/// one did ([`crate::signals::settle`]).
pub fn settle(result: Exit) -> Exit {
    match result {
        Ok(code) => Ok(crate::signals::settle(code)),
        Err(Failure::Said(code)) => Err(Failure::Said(crate::signals::settle(code))),
        Err(f) => {
            let code = f.code();
            match crate::signals::settle(code) {
                c if c == code => Err(f),
                c => Err(Failure::Signalled(Box::new(f), c)),
            }
        }
    }
}

/// The exit code of a command's result, printing its failure (if any) as
/// `tool`: what `main` exits with.
pub fn finish(tool: &str, result: Exit) -> i32 {
    match settle(result) {
        Ok(code) => code,
        Err(f) => f.report(tool),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn usage_and_refusals_exit_2_with_their_message() {
        let u = Failure::usage("--xfer 0: must be greater than zero");
        assert_eq!(u.code(), 2);
        assert_eq!(u.lines(), ["--xfer 0: must be greater than zero"]);
        let r = Failure::refused("--json /nope/x.json: no such directory");
        assert_eq!(r.code(), 2);
        assert_eq!(r.lines(), ["--json /nope/x.json: no such directory"]);
        let many = Failure::Refusals(vec!["a: foreign".into(), "b: locked".into()]);
        assert_eq!(many.code(), 2);
        assert_eq!(many.lines(), ["a: foreign", "b: locked"]);
        let front: Failure = Usage("-t: needs a value".into()).into();
        assert_eq!(front.code(), 2);
        assert_eq!(front.lines(), ["-t: needs a value"]);
    }

    #[test]
    fn bench_errors_keep_their_own_code() {
        let cases: Vec<(bench::Error, i32)> = vec![
            (bench::Error::Usage("--threads 0".into()), 2),
            (bench::Error::Refused("/x: foreign directory".into()), 2),
            (
                bench::Error::io("creating /x", std::io::Error::from_raw_os_error(13)),
                2,
            ),
            (bench::Error::Interrupted, 130),
        ];
        for (e, code) in cases {
            let text = e.to_string();
            let f = Failure::from(e);
            assert_eq!(f.code(), code, "{text}");
            // Printed once, by its own words (no repeated cause).
            assert_eq!(f.lines(), [text]);
        }
    }

    #[test]
    fn interrupted_is_130_and_output_failures_are_1() {
        assert_eq!(Failure::from(bench::Error::Interrupted).code(), 130);
        assert_eq!(Failure::Said(130).code(), 130);
        assert!(Failure::Said(130).lines().is_empty());
        let o = Failure::Output(anyhow::anyhow!("disk full").context("writing out.json"));
        assert_eq!(o.code(), 1);
        assert_eq!(o.lines(), ["writing out.json: disk full"]);
    }

    #[test]
    fn other_errors_exit_2_with_their_context_chain() {
        let e = anyhow::anyhow!("permission denied").context("installing the signal handler");
        let f = Failure::from(e);
        assert_eq!(f.code(), 2);
        assert_eq!(
            f.lines(),
            ["installing the signal handler: permission denied"]
        );
    }

    #[test]
    fn clap_errors_exit_2_and_help_is_not_a_failure() {
        let bad = crate::cli::Cli::try_parse_from(["ioscale", "run", "--no-such-flag"])
            .expect_err("an unknown flag is refused");
        assert!(bad.use_stderr());
        let f = Failure::Clap(bad);
        assert_eq!(f.code(), 2);
        // clap prints its own layout; no `ioscale: error:` line is added.
        assert!(f.lines().is_empty());
        let help =
            crate::cli::Cli::try_parse_from(["ioscale", "--help"]).expect_err("help stops parsing");
        assert!(!help.use_stderr(), "help is printed to stdout, exit 0");
    }

    #[test]
    fn finish_passes_outcome_codes_through() {
        for code in [0, 1, 130] {
            assert_eq!(finish("ioscale", Ok(code)), code);
        }
        assert_eq!(finish("ioscale", Err(Failure::Said(2))), 2);
    }
}
