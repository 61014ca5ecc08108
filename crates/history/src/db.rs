//! The history file: where it is, how it is opened, and how a run is
//! written to it.
//!
//! Several ioscale processes may write the same file at once (two runs in
//! two terminals, the ranks of many jobs sharing a home directory): the
//! database runs in WAL mode, each writer waits up to [`BUSY_TIMEOUT`] for
//! another's transaction, and a run's rows go in one transaction, so none
//! is lost or half-written. A file that is not an ioscale history, or is
//! of a later version, is refused before anything is written to it.

use std::path::{Path, PathBuf};

use rusqlite::config::DbConfig;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};

use crate::entry::Entry;
use crate::error::Error;
use crate::schema::{self, Found, MIGRATIONS};

pub use crate::wait::BUSY_TIMEOUT;

/// The file's name under the data directory.
pub const FILE: &str = "ioscale/history.db";

/// What the caller means to do with the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Record runs: the file and its directory are made when missing.
    Write,
    /// Read (or prune): a missing file is [`Error::Missing`].
    Read,
}

/// The default history file: `$XDG_DATA_HOME/ioscale/history.db` when
/// `xdg_data_home` is an absolute path (the XDG rule: a relative one is
/// ignored), else `$HOME/.local/share/ioscale/history.db`; `None` without
/// either.
pub fn default_path(xdg_data_home: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
    let xdg = xdg_data_home.filter(|x| Path::new(x).is_absolute());
    match (xdg, home.filter(|h| !h.is_empty())) {
        (Some(x), _) => Some(Path::new(x).join(FILE)),
        (None, Some(h)) => Some(Path::new(h).join(".local/share").join(FILE)),
        (None, None) => None,
    }
}

/// An open history.
pub struct History {
    conn: Connection,
    path: PathBuf,
}

/// Where a run went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inserted {
    /// Its id.
    pub id: i64,
    /// False when the same record was there already (under `id`).
    pub new: bool,
}

/// Refuses a path that is not a regular file: a symbolic link (SQLite
/// would not follow it either), a directory, a device or a FIFO (which
/// would block the first read). The database's `-wal` and `-shm`
/// companions are checked the same way.
fn check_path(path: &Path, access: Access) -> Result<(), Error> {
    let refused = |why: String| Error::Refused {
        path: path.to_path_buf(),
        why,
    };
    for (p, what) in [
        (path.to_path_buf(), "the history"),
        (companion(path, "-wal"), "its -wal file"),
        (companion(path, "-shm"), "its -shm file"),
    ] {
        match std::fs::symlink_metadata(&p) {
            Ok(md) if md.file_type().is_symlink() => {
                return Err(refused(format!(
                    "{what} {} is a symbolic link; name the file itself",
                    p.display()
                )))
            }
            Ok(md) if !md.is_file() => {
                return Err(refused(format!(
                    "{what} {} is not a regular file (a directory, device or FIFO)",
                    p.display()
                )))
            }
            Ok(_) if p == path && access == Access::Write => {
                // SQLite would open it read-only and fail at the first
                // write, after making its -wal and -shm files beside it
                // (owned by this user, in another user's directory).
                if let Err(e) = access_ok(&p, libc::W_OK) {
                    let who = if e.raw_os_error() == Some(libc::EROFS) {
                        "the file system is read-only"
                    } else {
                        "the history is read-only to this user"
                    };
                    return Err(refused(format!("{who} ({e}); nothing was changed")));
                }
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if p == path && access == Access::Read {
                    return Err(Error::Missing {
                        path: path.to_path_buf(),
                    });
                }
            }
            Err(e) => return Err(refused(format!("{e}"))),
        }
    }
    if access == Access::Write {
        // SQLite makes its -wal and -shm files beside the database: a
        // directory it cannot write is said as such, not as "unable to
        // open database file".
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if let Err(e) = access_ok(dir, libc::W_OK | libc::X_OK) {
            return Err(refused(format!(
                "its directory {} cannot be written ({e}){}",
                dir.display(),
                if e.raw_os_error() == Some(libc::EROFS) {
                    ": the file system is read-only"
                } else {
                    ""
                }
            )));
        }
    }
    Ok(())
}

/// The file SQLite is given for `path`: the directories on its way
/// resolved, its last component as named. SQLite, told not to follow
/// links, refuses a link anywhere in the path, and a home or data
/// directory is often a link to another file system; the last component
/// is still never followed ([`check_path`], and SQLite's `O_NOFOLLOW`),
/// and a directory swapped for a link after this is refused by SQLite. A
/// path that names no file (`dir/`, `..`) is refused.
fn resolved(path: &Path) -> Result<PathBuf, Error> {
    use std::os::unix::ffi::OsStrExt;
    // The last word as typed: Path would read `dir/.` as `dir`.
    let last = path.as_os_str().as_bytes().rsplit(|&b| b == b'/').next();
    let name = path
        .file_name()
        .filter(|_| !matches!(last, None | Some(b"" | b"." | b"..")));
    let Some(name) = name else {
        return Err(Error::Refused {
            path: path.to_path_buf(),
            why: "names a directory, not a file: give the history file's name".into(),
        });
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // A directory that is not there is said by check_path.
    Ok(std::fs::canonicalize(dir).map_or_else(|_| path.to_path_buf(), |d| d.join(name)))
}

/// Whether this process may use `path` as `mode` says (access(2): `W_OK
/// | X_OK` on a directory to create files in it; it says EROFS for a
/// read-only file system, even to root).
fn access_ok(path: &Path, mode: libc::c_int) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    if unsafe { libc::access(c.as_ptr(), mode) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Whether `path` is an ioscale history: a regular file (not followed
/// through a link) whose header is SQLite's with ioscale's application
/// id. An output about to replace it is refused (`--json` naming the
/// history would wipe every run).
pub fn is_history(path: &Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = [0u8; 72];
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| {
            head.starts_with(b"SQLite format 3\0")
                && i64::from(u32::from_be_bytes([head[68], head[69], head[70], head[71]]))
                    == schema::APPLICATION_ID
        })
}

/// Makes the directory of `path` (and its parents), for the default file.
pub fn make_dir(path: &Path) -> Result<(), Error> {
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::Refused {
        path: path.to_path_buf(),
        why: format!("cannot make its directory {}: {e}", dir.display()),
    })
}

/// Puts the file in WAL mode (kept in the file) and says the mode it is
/// in after. SQLite does not call the busy handler when the switch meets
/// another connection's lock (eight runs opening one new file at once
/// failed with "database is locked" in about half of the tries under
/// load), so the switch is retried here on the busy handler's own
/// schedule: up to its timeout, ended early by the caller's signal flag.
fn wal_mode(conn: &Connection) -> rusqlite::Result<String> {
    let mut tries = 0;
    loop {
        let now: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
        if now.eq_ignore_ascii_case("wal") {
            return Ok(now);
        }
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && crate::wait::busy(tries) =>
            {
                tries += 1;
            }
            other => return other,
        }
    }
}

impl History {
    /// Opens (for [`Access::Write`], creating) the history at `path` and
    /// brings it to the current version.
    pub fn open(path: &Path, access: Access) -> Result<History, Error> {
        Self::open_with(path, access, MIGRATIONS)
    }

    /// [`History::open`] with the migrations `steps` (tests add one to
    /// check the upgrade of a database made by the current version).
    pub fn open_with(path: &Path, access: Access, steps: &[&str]) -> Result<History, Error> {
        let real = resolved(path)?;
        check_path(&real, access)?;
        let sq = |e| Error::sqlite(path, e);
        let base = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NOFOLLOW
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let flags = match access {
            Access::Write => base | OpenFlags::SQLITE_OPEN_CREATE,
            Access::Read => base,
        };
        let mut conn = Connection::open_with_flags(&real, flags).map_err(sq)?;
        // No checkpoint when this connection closes until the file is
        // known to be ours and of a version this build writes: a refused
        // file (a newer one, another application's) is left byte for byte
        // as it was, its WAL not copied into it.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .map_err(sq)?;
        // Up to BUSY_TIMEOUT, cut short by the caller's signal flag.
        conn.busy_handler(Some(crate::wait::busy)).map_err(sq)?;
        let known = steps.len() as i64;
        match schema::found(&conn).map_err(sq)? {
            Found::Foreign => {
                return Err(Error::Foreign {
                    path: path.to_path_buf(),
                })
            }
            Found::Ours(v) if v > known => {
                return Err(Error::Newer {
                    path: path.to_path_buf(),
                    found: v,
                    known,
                })
            }
            Found::Ours(_) => {}
        }
        // Only now is anything written: WAL mode (kept in the file), then
        // the layout.
        let mode = wal_mode(&conn).map_err(sq)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::Refused {
                path: path.to_path_buf(),
                why: format!("the file system does not support SQLite's WAL mode ({mode})"),
            });
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sq)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(sq)?;
        schema::migrate(&mut conn, steps).map_err(sq)?;
        // Once the file is accepted, the last connection to close copies
        // the WAL back into the file and removes it, so a copy of
        // history.db alone holds every run. Leaving it (no checkpoint on
        // close) saves that copy's fsyncs but makes the next process read
        // the WAL back, which cost more CPU than the copy in
        // crates/history/examples/record_cost.rs (docs/performance.md).
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, false)
            .map_err(sq)?;
        Ok(History {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The layout version of the file (the latest, once open).
    pub fn version(&self) -> Result<i64, Error> {
        self.conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    /// The connection, for the queries of this crate.
    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The connection, to write in a transaction.
    pub(crate) fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// The error of an SQLite call on this file.
    pub(crate) fn err(&self, e: rusqlite::Error) -> Error {
        Error::sqlite(&self.path, e)
    }

    /// Writes one run (its host and target prints, its row and figures)
    /// in one transaction; `batch` names the command invocation it came
    /// from. A record already in the history is not added again.
    pub fn insert(&mut self, e: &Entry, batch: Option<&str>) -> Result<Inserted, Error> {
        let path = self.path.clone();
        let sq = |err| Error::sqlite(&path, err);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sq)?;
        if let Some(id) = tx
            .query_row("SELECT id FROM runs WHERE digest = ?1", [&e.digest], |r| {
                r.get::<_, i64>(0)
            })
            .optional()
            .map_err(sq)?
        {
            return Ok(Inserted { id, new: false });
        }
        insert_prints(&tx, e).map_err(sq)?;
        let (h, t) = (&e.host, &e.target);
        tx.execute(
            "INSERT INTO runs (started, recorded, source, command, kind, workload, workload_text,
             target, host_id, target_id, status, batch, version, digest, record)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,
                 (SELECT id FROM hosts WHERE fingerprint = ?9),
                 (SELECT id FROM targets WHERE fingerprint = ?10),
                 ?11, ?12, ?13, ?14, ?15)",
            params![
                e.started,
                crate::when::now(),
                e.source,
                serde_json::to_string(&e.command).unwrap_or_else(|_| "[]".into()),
                e.kind,
                e.workload.key,
                e.workload.text,
                t.path,
                h.fingerprint(),
                t.fingerprint(),
                e.status.as_str(),
                batch,
                e.version,
                e.digest,
                e.record,
            ],
        )
        .map_err(sq)?;
        let id = tx.last_insert_rowid();
        insert_figures(&tx, id, e).map_err(sq)?;
        tx.commit().map_err(sq)?;
        Ok(Inserted { id, new: true })
    }
}

/// The run's host and target prints, each kept once.
fn insert_prints(tx: &Connection, e: &Entry) -> rusqlite::Result<()> {
    let h = &e.host;
    tx.execute(
        "INSERT OR IGNORE INTO hosts (fingerprint, hostname, kernel, cpu_model, cpus, mem_bytes)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            h.fingerprint(),
            h.hostname,
            h.kernel,
            h.cpu_model,
            h.cpus,
            i64::try_from(h.mem_bytes).unwrap_or(i64::MAX)
        ],
    )?;
    let t = &e.target;
    tx.execute(
        "INSERT OR IGNORE INTO targets (fingerprint, path, fs_type, fs_source, device_model,
         mount_options, size_bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            t.fingerprint(),
            t.path,
            t.fs_type,
            t.fs_source,
            t.device_model,
            t.mount_options,
            t.size_bytes.and_then(|s| i64::try_from(s).ok())
        ],
    )?;
    Ok(())
}

/// The figures of run `id`, in the order of the entry. SQLite keeps no
/// NaN (it would be NULL): a figure that is not a number is left out, an
/// interval end that is not is NULL.
fn insert_figures(tx: &Connection, id: i64, e: &Entry) -> rusqlite::Result<()> {
    let mut st = tx.prepare(
        "INSERT OR REPLACE INTO figures (run_id, position, op, metric, unit, value, lo,
         hi, reps, higher_is_better, headline)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    let finite = |x: Option<f64>| x.filter(|v| v.is_finite());
    let good = e.figures.iter().filter(|f| f.value.is_finite());
    for (position, f) in good.enumerate() {
        st.execute(params![
            id,
            position as i64,
            f.op,
            f.metric,
            f.unit,
            f.value,
            finite(f.lo),
            finite(f.hi),
            f.reps,
            f.higher_is_better,
            f.headline
        ])?;
    }
    Ok(())
}
