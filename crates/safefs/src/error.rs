//! The one error type of the crate: what was done, to which path, and
//! whether it was refused on purpose or failed in the kernel.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::id::FileId;

/// Why a path was refused rather than used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The name is a symbolic link where ioscale expects its own entry.
    Symlink,
    /// The name is of another kind than expected (`found` names it).
    WrongKind {
        /// What the caller expected: "directory", "regular file".
        expected: &'static str,
        /// What is there: "symlink", "directory", "FIFO", ….
        found: &'static str,
    },
    /// The name is the expected kind but a different file than the one
    /// recorded when ioscale made or opened it: it was swapped.
    Replaced {
        /// The (device, inode) ioscale recorded.
        expected: FileId,
        /// The (device, inode) that is there now.
        found: FileId,
    },
    /// A directory ioscale just made already holds entries: the name was
    /// swapped for another directory between `mkdir` and `open`.
    NotFresh,
    /// The name is not one plain path component (empty, `.`, `..`, or
    /// holding a `/`).
    BadName,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Symlink => write!(
                f,
                "it is a symbolic link, which ioscale never follows in its own paths"
            ),
            Refusal::WrongKind { expected, found } => {
                write!(f, "it is a {found}, not the {expected} ioscale made")
            }
            Refusal::Replaced { expected, found } => write!(
                f,
                "it was replaced (device {} inode {} is now device {} inode {})",
                expected.dev, expected.ino, found.dev, found.ino
            ),
            Refusal::BadName => write!(f, "it is not a single path component"),
            Refusal::NotFresh => write!(
                f,
                "the directory ioscale just made holds entries, so it was swapped"
            ),
        }
    }
}

/// What went wrong.
#[derive(Debug)]
pub enum ErrorKind {
    /// Refused on purpose: using the path could touch something ioscale did
    /// not make.
    Refused(Refusal),
    /// The system call failed.
    Io(io::Error),
}

/// An operation on a path that was refused or failed.
#[derive(Debug)]
pub struct Error {
    /// The operation: "open", "create", "unlink", "rmdir", "mkdir", ….
    pub op: &'static str,
    /// The full path the operation was about (the held directory's path
    /// joined with the name).
    pub path: PathBuf,
    /// Refused or failed.
    pub kind: ErrorKind,
}

impl Error {
    /// `op` on `path` failed with `e` (for a storage backend's own
    /// operations as for this crate's).
    pub fn io(op: &'static str, path: impl Into<PathBuf>, e: impl Into<io::Error>) -> Self {
        Error {
            op,
            path: path.into(),
            kind: ErrorKind::Io(e.into()),
        }
    }

    /// `op` on `path` was refused for `r`.
    pub fn refused(op: &'static str, path: impl Into<PathBuf>, r: Refusal) -> Self {
        Error {
            op,
            path: path.into(),
            kind: ErrorKind::Refused(r),
        }
    }

    /// The refusal, when this was one.
    pub fn refusal(&self) -> Option<&Refusal> {
        match &self.kind {
            ErrorKind::Refused(r) => Some(r),
            ErrorKind::Io(_) => None,
        }
    }

    /// The OS error number, when the system call failed.
    pub fn raw_os_error(&self) -> Option<i32> {
        match &self.kind {
            ErrorKind::Io(e) => e.raw_os_error(),
            ErrorKind::Refused(_) => None,
        }
    }

    /// Whether the path did not exist (ENOENT).
    pub fn is_not_found(&self) -> bool {
        matches!(&self.kind, ErrorKind::Io(e) if e.kind() == io::ErrorKind::NotFound)
    }

    /// The path the error is about.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Refused(r) => write!(f, "{} {}: refused: {r}", self.op, self.path.display()),
            ErrorKind::Io(e) => write!(f, "{} {}: {e}", self.op, self.path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) => Some(e),
            ErrorKind::Refused(_) => None,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error about a path the user named with a flag (`--json`, `--csv`,
/// `report FILE`…): either refused before any write or read (exit 2,
/// [`FlagError::exit_code`]) or failed while writing or reading (exit 1).
#[derive(Debug)]
pub struct FlagError {
    /// The flag or operand, as the user wrote it: `--json`, `summaryFile`,
    /// `RECORD`.
    pub flag: String,
    /// The path given.
    pub path: PathBuf,
    /// Refused (with the reason in words) or failed.
    pub kind: FlagErrorKind,
}

/// See [`FlagError`].
#[derive(Debug)]
pub enum FlagErrorKind {
    /// Refused before any I/O: the reason in words.
    Refused(String),
    /// Reading or writing failed.
    Io(io::Error),
}

impl FlagError {
    pub(crate) fn refused(flag: &str, path: &Path, why: impl Into<String>) -> Self {
        FlagError {
            flag: flag.into(),
            path: path.to_path_buf(),
            kind: FlagErrorKind::Refused(why.into()),
        }
    }

    pub(crate) fn io(flag: &str, path: &Path, e: impl Into<io::Error>) -> Self {
        FlagError {
            flag: flag.into(),
            path: path.to_path_buf(),
            kind: FlagErrorKind::Io(e.into()),
        }
    }

    /// The error `e` of an operation on `path`, given with `flag`: a
    /// refusal stays a refusal, anything else is an I/O error.
    pub fn of(flag: &str, path: &Path, e: Error) -> Self {
        FlagError {
            flag: flag.into(),
            path: path.to_path_buf(),
            kind: FlagErrorKind::from(e),
        }
    }

    /// The exit code ioscale's contract gives it: 2 for a refusal (bad
    /// input, nothing done), 1 for an I/O error.
    pub fn exit_code(&self) -> i32 {
        match self.kind {
            FlagErrorKind::Refused(_) => 2,
            FlagErrorKind::Io(_) => 1,
        }
    }

    /// The OS error number of an I/O error.
    pub fn raw_os_error(&self) -> Option<i32> {
        match &self.kind {
            FlagErrorKind::Io(e) => e.raw_os_error(),
            FlagErrorKind::Refused(_) => None,
        }
    }
}

impl fmt::Display for FlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            FlagErrorKind::Refused(why) => {
                write!(f, "{} {}: {why}", self.flag, self.path.display())
            }
            FlagErrorKind::Io(e) => write!(f, "{} {}: {e}", self.flag, self.path.display()),
        }
    }
}

impl std::error::Error for FlagError {}

impl From<Error> for FlagErrorKind {
    fn from(e: Error) -> Self {
        match e.kind {
            ErrorKind::Refused(r) => FlagErrorKind::Refused(r.to_string()),
            ErrorKind::Io(io) => FlagErrorKind::Io(io),
        }
    }
}
