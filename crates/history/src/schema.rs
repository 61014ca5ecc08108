//! The database's layout and how it moves from one version to the next.
//!
//! The layout is a contract (docs/history.md): scripts read the file with
//! the `sqlite3` command line. Its version is SQLite's `user_version`;
//! `application_id` says the file is an ioscale history. Each entry of
//! [`MIGRATIONS`] takes the layout from version `i` to `i + 1` and runs in
//! one transaction with the version bump, so a database is always at one
//! version; a file of a later version than [`LATEST`] is refused before
//! anything is written to it. Every step ever shipped stays in the list
//! unchanged: a database of the first version is migrated through all of
//! them (tests/fixtures/history-v1.sql is a database of version 1).

use rusqlite::{Connection, TransactionBehavior};

/// `PRAGMA application_id` of an ioscale history: "iosc" in ASCII.
pub const APPLICATION_ID: i64 = 0x696f_7363;

/// Version 0 → 1: hosts, targets, runs and their figures.
const V1: &str = "
CREATE TABLE hosts (
    id INTEGER PRIMARY KEY,
    fingerprint TEXT NOT NULL UNIQUE,
    hostname TEXT NOT NULL,
    kernel TEXT NOT NULL,
    cpu_model TEXT NOT NULL,
    cpus INTEGER NOT NULL,
    mem_bytes INTEGER NOT NULL
);
CREATE TABLE targets (
    id INTEGER PRIMARY KEY,
    fingerprint TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    fs_type TEXT NOT NULL,
    fs_source TEXT NOT NULL,
    device_model TEXT NOT NULL,
    mount_options TEXT NOT NULL,
    size_bytes INTEGER
);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started TEXT NOT NULL,
    recorded TEXT NOT NULL,
    source TEXT NOT NULL,
    command TEXT NOT NULL,
    kind TEXT NOT NULL,
    workload TEXT NOT NULL,
    workload_text TEXT NOT NULL,
    target TEXT NOT NULL,
    host_id INTEGER NOT NULL REFERENCES hosts(id),
    target_id INTEGER NOT NULL REFERENCES targets(id),
    status TEXT NOT NULL CHECK (status IN ('ok', 'errors', 'interrupted')),
    batch TEXT,
    version TEXT NOT NULL,
    digest TEXT NOT NULL UNIQUE,
    record TEXT NOT NULL
);
CREATE INDEX runs_by_workload ON runs(workload, target, started);
CREATE INDEX runs_by_started ON runs(started);
CREATE TABLE figures (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    op TEXT NOT NULL,
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    value REAL NOT NULL,
    lo REAL,
    hi REAL,
    reps INTEGER NOT NULL,
    higher_is_better INTEGER NOT NULL,
    headline INTEGER NOT NULL,
    PRIMARY KEY (run_id, op, metric)
) WITHOUT ROWID;
";

/// Every step, in order: `MIGRATIONS[i]` takes version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[V1];

/// The version this ioscale writes and reads.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// What a database's header says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// An ioscale history (or a new, empty file) of this version.
    Ours(i64),
    /// Another application's SQLite database.
    Foreign,
}

/// Reads the header: an empty file (version 0, no tables) is ours to set
/// up; a file whose application id is another's, or that holds tables
/// without ours, is not. Reads only, in one read transaction: another
/// process may be setting up the same new file, and its tables seen
/// without its application id (read a moment before) would look foreign.
pub fn found(conn: &Connection) -> rusqlite::Result<Found> {
    let tx = conn.unchecked_transaction()?;
    let app: i64 = tx.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let tables: i64 = tx.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
    tx.commit()?;
    if app == APPLICATION_ID {
        return Ok(Found::Ours(version));
    }
    Ok(if app == 0 && version == 0 && tables == 0 {
        Found::Ours(0)
    } else {
        Found::Foreign
    })
}

/// Brings the database to the last of `steps`, each step in one
/// transaction with its version bump. The version is read again inside
/// the transaction, so two processes opening a new file at once apply
/// each step once. Returns the version found before.
pub fn migrate(conn: &mut Connection, steps: &[&str]) -> rusqlite::Result<i64> {
    let before: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let last = steps.len() as i64;
    let mut version = before;
    while version < last {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        version = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version < last {
            tx.execute_batch(steps[version as usize])?;
            version += 1;
            tx.pragma_update(None, "user_version", version)?;
            tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        }
        tx.commit()?;
    }
    Ok(before)
}
