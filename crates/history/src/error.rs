//! Why the history could not be read or written, in words that say what
//! to do. A recording run turns any of these into one warning and goes
//! on; `ioscale history` turns them into its error (exit 2).

use std::path::PathBuf;

use rusqlite::ffi::ErrorCode;

/// A failure of the history.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No history file at the path (a read found nothing to read).
    #[error("{}: no history yet (a measuring command records its run there)", path.display())]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// The file is of a later layout than this ioscale knows.
    #[error(
        "{}: written by a newer ioscale (history schema {found}; this one knows up to {known}); \
         nothing was changed: use that ioscale, or another file (--history FILE)",
        path.display()
    )]
    Newer {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// The latest this build knows.
        known: i64,
    },
    /// An SQLite database of another application.
    #[error(
        "{}: not an ioscale history (an SQLite database of another application); nothing was changed",
        path.display()
    )]
    Foreign {
        /// The file.
        path: PathBuf,
    },
    /// The path is not a regular file (a link, a directory, a device, a
    /// FIFO), or its directory is missing.
    #[error("{}: {why}", path.display())]
    Refused {
        /// The path.
        path: PathBuf,
        /// Why, and what to do.
        why: String,
    },
    /// SQLite failed.
    #[error("{}: {}", path.display(), explain(source))]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// A run the command named is not in the history.
    #[error("no run {0} in the history (`ioscale history list` shows the ids)")]
    NoRun(i64),
    /// A record could not be turned into a row (it is not JSON of a known
    /// kind).
    #[error("{0}")]
    Record(String),
}

/// SQLite's error with what it means for the user.
fn explain(e: &rusqlite::Error) -> String {
    let code = match e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.code),
        _ => None,
    };
    let why = match code {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) if crate::wait::stopped() => {
            "interrupted while another process held the database locked"
        }
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            "another process kept the database locked for more than 5 s"
        }
        Some(ErrorCode::DiskFull) => "the file system is full",
        Some(ErrorCode::ReadOnly) => "the database or its directory is read-only",
        Some(ErrorCode::NotADatabase) => "not an SQLite database",
        Some(ErrorCode::DatabaseCorrupt) => "the database is corrupt",
        Some(ErrorCode::CannotOpen) => "cannot open the file",
        Some(ErrorCode::PermissionDenied) => "permission denied",
        _ => return e.to_string(),
    };
    format!("{why} ({e})")
}

impl Error {
    /// The error of an SQLite call on `path`.
    pub fn sqlite(path: &std::path::Path, source: rusqlite::Error) -> Error {
        Error::Sqlite {
            path: path.to_path_buf(),
            source,
        }
    }
}
