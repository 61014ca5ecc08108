//! The one error type of the driver library, with the exit code in it.
//!
//! Exit codes are a contract (0 clean, 1 I/O errors or failed verification,
//! 2 usage or setup error, 130 interrupted): a caller maps an [`Error`] to
//! its code with [`Error::exit_code`] instead of matching message text.

use std::io;

/// Why a benchmark could not run (or stopped).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request that cannot be run as given (a bad flag value or a
    /// combination the target cannot serve); the message names the flag.
    #[error("{0}")]
    Usage(String),
    /// A setup step refused before any data was written: a bad target, a
    /// foreign directory, an engine the kernel lacks.
    #[error("{0}")]
    Refused(String),
    /// A tree an earlier run kept, on which a requested phase cannot run.
    #[error("{message}")]
    KeptTree {
        /// The whole message, naming the tree, the phase and the fix.
        message: String,
        /// What the phase would find.
        conflict: spec::Conflict,
    },
    /// The file system refused a setup step; `what` says which.
    #[error("{what}: {source}")]
    Setup {
        /// The step, with the path it concerned.
        what: String,
        /// The system's reason.
        source: io::Error,
    },
    /// Data from another rank could not be decoded: ranks run different
    /// ioscale builds, or the transport broke.
    #[error("ranks could not exchange {what}: {source}")]
    Rank {
        /// What was being exchanged.
        what: &'static str,
        /// The decoder's reason.
        source: coord::DecodeError,
    },
    /// Stopped by a signal before the step finished.
    #[error("interrupted")]
    Interrupted,
}

impl Error {
    /// A setup step that the file system refused.
    pub fn io(what: impl Into<String>, source: io::Error) -> Error {
        Error::Setup {
            what: what.into(),
            source,
        }
    }

    /// A failed exchange between ranks.
    pub fn rank(what: &'static str) -> impl FnOnce(coord::DecodeError) -> Error {
        move |source| Error::Rank { what, source }
    }

    /// The process exit code this error means: 2 for usage, setup and
    /// exchange failures, 130 when interrupted.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_)
            | Error::Refused(_)
            | Error::KeptTree { .. }
            | Error::Setup { .. }
            | Error::Rank { .. } => 2,
            Error::Interrupted => 130,
        }
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
