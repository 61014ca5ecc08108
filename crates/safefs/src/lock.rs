//! The lock a run holds on its data set for its whole lifetime.
//!
//! A lock file beside the marker (the marker's name + [`LOCK_SUFFIX`], e.g.
//! `ioscale.d/.ioscale-marker.lock`) is opened without following links and
//! locked with `flock(LOCK_EX|LOCK_NB)`; the holder writes who it is into
//! that same file ([`Holder`]: pid, host, boot id, process start time,
//! command). The lock is a separate file, not the marker itself, because
//! the marker is replaced by rename whenever it is rewritten, and a rename
//! would silently drop a `flock` held on the old inode.
//!
//! `flock` is the whole answer where the file system shares it between
//! every process that can reach the set (local file systems, and NFS or
//! Lustre/GPFS mounted with cluster-wide locks). Where it is not shared —
//! another node on a file system with node-local `flock` — the holder
//! record still is: a lock won by `flock` is still refused while the
//! record names a live holder on this host, or any holder on another host
//! (whose liveness cannot be checked from here) unless the caller takes it
//! over explicitly ([`LockOptions::take_over_other_host`]). A holder on this
//! host that is gone — its pid no longer exists, or the pid now belongs to
//! a process with another start time, or the machine rebooted — is stale:
//! the lock is taken and [`SetLock::stale_holder`] says whose it was.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};

use rustix::fs::FlockOperation;
use rustix::io::Errno;
use serde::{Deserialize, Serialize};
use std::os::unix::fs::MetadataExt;

use crate::dir::{Access, DirHandle, FileId};
use crate::error::{Error, Refusal, Result};

/// Appended to the marker's name to name its lock file.
pub const LOCK_SUFFIX: &str = ".lock";

/// The lock file's name for a marker name: `<marker>.lock`.
pub fn lock_name(marker_name: impl AsRef<OsStr>) -> OsString {
    let mut n = marker_name.as_ref().to_os_string();
    n.push(LOCK_SUFFIX);
    n
}

/// Who holds (or held) a set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// Process id.
    pub pid: u32,
    /// Host name (`uname -n`).
    pub host: String,
    /// `/proc/sys/kernel/random/boot_id`, when readable.
    pub boot_id: Option<String>,
    /// The process's start time in clock ticks after boot (field 22 of
    /// `/proc/PID/stat`), which tells a reused pid from the holder.
    pub start_ticks: Option<u64>,
    /// Seconds since the Unix epoch when the lock was taken.
    pub since_unix: u64,
    /// The command line (or a summary of it) of the holder.
    pub command: String,
}

impl Holder {
    /// This process, running `command`.
    pub fn current(command: &str) -> Holder {
        let pid = std::process::id();
        Holder {
            pid,
            host: host_name(),
            boot_id: boot_id(),
            start_ticks: start_ticks(pid),
            since_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            command: command.to_string(),
        }
    }

    /// `pid 1234 on host node7 (ioscale run /mnt/t), since 2026-11-23
    /// 04:31:45 UTC`.
    pub fn describe(&self) -> String {
        format!(
            "pid {} on host {} ({}), since {}",
            self.pid,
            self.host,
            self.command,
            utc(self.since_unix)
        )
    }

    /// Whether this holder is alive, as far as this host can tell.
    pub fn liveness(&self) -> Liveness {
        if self.host != host_name() {
            return Liveness::Unknown;
        }
        if let (Some(theirs), Some(ours)) = (&self.boot_id, boot_id()) {
            if *theirs != ours {
                return Liveness::Stale("the host rebooted since");
            }
        }
        let Some(pid) = i32::try_from(self.pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        else {
            return Liveness::Stale("its pid is not a valid process id");
        };
        // EPERM means it exists (owned by another user): alive.
        if let Err(Errno::SRCH) = rustix::process::test_kill_process(pid) {
            return Liveness::Stale("its process is gone");
        }
        match (self.start_ticks, start_ticks(self.pid)) {
            (Some(a), Some(b)) if a != b => {
                Liveness::Stale("its pid now belongs to another process")
            }
            (_, None) => Liveness::Stale("its process is gone"),
            _ => Liveness::Live,
        }
    }
}

/// Whether a recorded holder still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// It runs (the lock is held, or the holder is a live process here).
    Live,
    /// It is gone; the reason in words.
    Stale(&'static str),
    /// It is on another host: this host cannot tell.
    Unknown,
}

/// How [`SetLock::try_lock_with`] treats a holder it cannot check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LockOptions {
    /// Take the lock even though the record names a holder on another host
    /// (the user said that run is over, e.g. `clean --force`).
    pub take_over_other_host: bool,
}

/// The outcome of [`SetLock::try_lock`].
#[derive(Debug)]
pub enum TryLock {
    /// The lock is ours until the [`SetLock`] is dropped.
    Acquired(SetLock),
    /// Someone else holds it.
    Held {
        /// Who, when the record could be read.
        holder: Option<Holder>,
        /// [`Liveness::Live`] (its `flock` is held, or a live process on
        /// this host) or [`Liveness::Unknown`] (a holder on another host).
        liveness: Liveness,
    },
}

/// A held lock on a data set. Dropping it clears the holder record and
/// releases the `flock`.
#[derive(Debug)]
pub struct SetLock {
    file: File,
    id: FileId,
    holder: Holder,
    stale: Option<(Holder, &'static str)>,
}

const MAX_RECORD: u64 = 64 * 1024;

fn read_record(f: &mut File) -> Option<Holder> {
    f.seek(SeekFrom::Start(0)).ok()?;
    let mut buf = Vec::new();
    Read::by_ref(f)
        .take(MAX_RECORD)
        .read_to_end(&mut buf)
        .ok()?;
    if buf.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    serde_json::from_slice(&buf).ok()
}

fn open_or_create(dir: &DirHandle, name: &OsStr) -> Result<(File, FileId)> {
    for _ in 0..8 {
        match dir.open_file_at(name, Access::ReadWrite, None) {
            Ok((f, id)) => {
                // A hard link planted under the lock's name is someone
                // else's file too: writing the holder record would
                // truncate it.
                let links = f
                    .metadata()
                    .map_err(|e| Error::io("stat", dir.child_path(name), e))?
                    .nlink();
                if links > 1 {
                    return Err(Error::refused(
                        "open",
                        dir.child_path(name),
                        Refusal::WrongKind {
                            expected: "lock file",
                            found: "file with other hard links",
                        },
                    ));
                }
                return Ok((f, id));
            }
            Err(e) if e.is_not_found() => match dir.create_at(name, 0o644) {
                Ok(f) => return Ok(f),
                Err(e) if e.raw_os_error() == Some(Errno::EXIST.raw_os_error()) => continue,
                Err(e) => return Err(e),
            },
            Err(e) => return Err(e),
        }
    }
    Err(Error::io("open", dir.child_path(name), Errno::AGAIN))
}

impl SetLock {
    /// Tries to lock the set in `dir` through the lock file `name` (see
    /// [`lock_name`]) for this process running `command`. Never blocks.
    pub fn try_lock(dir: &DirHandle, name: impl AsRef<OsStr>, command: &str) -> Result<TryLock> {
        Self::try_lock_with(dir, name, command, LockOptions::default())
    }

    /// [`SetLock::try_lock`] with options.
    pub fn try_lock_with(
        dir: &DirHandle,
        name: impl AsRef<OsStr>,
        command: &str,
        opts: LockOptions,
    ) -> Result<TryLock> {
        let name = name.as_ref();
        let p = dir.child_path(name);
        let mut tries = 0;
        let (mut file, id) = loop {
            let (mut file, id) = open_or_create(dir, name)?;
            match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => {}
                Err(Errno::WOULDBLOCK) => {
                    return Ok(TryLock::Held {
                        holder: read_record(&mut file),
                        liveness: Liveness::Live,
                    })
                }
                // No flock on this file system: the record alone decides.
                Err(Errno::NOLCK) | Err(Errno::OPNOTSUPP) | Err(Errno::NOSYS) => {}
                Err(e) => return Err(Error::io("flock", &p, e)),
            }
            // The holder may have removed the lock file (its set is gone)
            // between our open and our flock: a lock on an unlinked file
            // guards nothing, so check the name still leads to it.
            match dir.stat_at(name)? {
                Some(info) if info.id == id => break (file, id),
                _ if tries < 8 => {
                    let _ = rustix::fs::flock(&file, FlockOperation::Unlock);
                    tries += 1
                }
                _ => return Err(Error::io("flock", &p, Errno::AGAIN)),
            }
        };
        let mut stale = None;
        // Giving the flock back before the file closes: a child forked by
        // another thread (between its fork and its exec) shares the open
        // file and would keep it locked after our close (seen in CI: the
        // next try_lock of the same test found it still held).
        let held = |file: &File, holder: Holder, liveness: Liveness| {
            let _ = rustix::fs::flock(file, FlockOperation::Unlock);
            Ok(TryLock::Held {
                holder: Some(holder),
                liveness,
            })
        };
        if let Some(h) = read_record(&mut file) {
            match h.liveness() {
                Liveness::Live => return held(&file, h, Liveness::Live),
                Liveness::Unknown if !opts.take_over_other_host => {
                    return held(&file, h, Liveness::Unknown)
                }
                Liveness::Unknown => stale = Some((h, "taken over on request")),
                Liveness::Stale(why) => stale = Some((h, why)),
            }
        }
        let holder = Holder::current(command);
        let text = serde_json::to_vec(&holder).map_err(|e| Error::io("write", &p, e))?;
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)).map(|_| ()))
            .and_then(|()| file.write_all(&text))
            .map_err(|e| Error::io("write", &p, e))?;
        // Best effort: it pushes the record to a shared server sooner, but
        // a file system whose fsync fails must still let the run reach
        // (and report) the phase under test; the flock is the lock.
        let _ = file.sync_data();
        Ok(TryLock::Acquired(SetLock {
            file,
            id,
            holder,
            stale,
        }))
    }

    /// Who holds it: this process.
    pub fn holder(&self) -> &Holder {
        &self.holder
    }

    /// The identity of the lock file (for a [`crate::Remover::expect`]).
    pub fn file_id(&self) -> FileId {
        self.id
    }

    /// When the lock was taken from a holder that is gone: who, and why it
    /// counts as gone.
    pub fn stale_holder(&self) -> Option<(&Holder, &'static str)> {
        self.stale.as_ref().map(|(h, w)| (h, *w))
    }

    /// Removes the lock file (while still holding it) and releases the
    /// lock: the last step of removing a set, before `rmdir` of its
    /// directory.
    pub fn remove(self, dir: &DirHandle, name: impl AsRef<OsStr>) -> Result<()> {
        let r = dir.unlink_at(name, Some(self.id)).map(|_| ());
        drop(self);
        r
    }
}

impl Drop for SetLock {
    fn drop(&mut self) {
        // Clear the record so nobody reads a released lock as held, then
        // unlock explicitly: closing only drops our descriptor, and a
        // child forked by another thread (between its fork and its exec)
        // shares the open file and would keep the flock alive.
        let _ = self.file.set_len(0);
        let _ = rustix::fs::flock(&self.file, FlockOperation::Unlock);
    }
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM:SS UTC` (the civil date
/// from a day count, after Howard Hinnant's `civil_from_days`).
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

fn host_name() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
}

/// The start time of `pid` in clock ticks after boot, from
/// `/proc/PID/stat` (field 22); `None` when there is no such process.
pub fn start_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields
    // after it start after the last ')'.
    let rest = &s[s.rfind(')')? + 1..];
    // rest starts with field 3 (state); field 22 is the 20th from there.
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates_are_civil() {
        assert_eq!(super::utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(super::utc(1_795_408_305), "2026-11-23 04:31:45 UTC");
    }
}
