//! Where the data files live, and the rules for removing them.
//!
//! ioscale works inside `TARGET/ioscale.d`, and writes a marker file there
//! before creating any data file. Cleanup removes only the data files and
//! per-worker directories its own naming scheme produces, then the marker,
//! and removes directories with `rmdir` — never recursively — so anything a
//! user put there survives. A directory called `ioscale.d` without the
//! marker is refused, never reused.
//!
//! The compatibility front-ends name files as their tools do
//! ([`FileNaming`]). IOR's files sit next to a hidden sidecar marker
//! (`.NAME.ioscale-marker` beside the `-o` path) that records what ioscale
//! made, so a later run may read or remove them; a file there without it
//! is never overwritten or removed. dd's files belong to the user, as with
//! dd: written (and truncated) as dd would, and removed only on request and
//! only if this very run created them.
//!
//! Every storage mutation of a dataset lives in this module (the metadata
//! tree's in [`tree`]): directories made, the marker written and removed,
//! files created or truncated before a run, files unlinked and directories
//! removed after it, and the O_DIRECT probe file. The timed I/O of the
//! workload itself happens in the engine.
//!
//! Every one of them goes through the storage backend table
//! ([`engine::backend`]): the code here is generic over the [`Backend`],
//! and its guarantees (no link followed, nothing but a regular file
//! opened, identities checked, removals by name only) are the backend's.
//! The public entry points without a backend argument are POSIX's
//! ([`Posix`]); the `_on` forms take any backend.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use spec::{format_size, FileNaming, Layout, WorkloadSpec};

use engine::backend::posix::Posix;
use engine::backend::{
    Backend, Create, DataFile, Dir, EntryInfo, Kind, Locked, OpenHow, Removal, SetLock as _,
};
use safefs::{lock_name, Liveness};

use crate::error::Error;

#[cfg(test)]
mod agnostic;
pub mod peer;
pub mod scaffold;
pub mod testdir;
pub mod tree;
pub mod user;

/// Name of the working directory inside the target.
pub const ROOT_NAME: &str = "ioscale.d";
/// Name of the marker file inside the working directory.
pub const MARKER_NAME: &str = ".ioscale-marker";

/// What the marker records: enough to recognise the files and to check
/// that a later read run matches them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// Always "ioscale".
    pub tool: String,
    /// Run that made the files.
    pub run_id: String,
    /// Layout of the files.
    pub layout: Layout,
    /// Workers (one file each unless shared).
    pub threads: u32,
    /// Bytes per file the writer intended.
    pub file_size: u64,
    /// Whether the writing run finished its write phase.
    pub complete: bool,
    /// Seed of the verify pattern.
    pub seed: u64,
    /// Whether the files hold the verify pattern of `seed`: their last
    /// write ran with `--verify`. A write without it fills them with bytes
    /// no read can check, and a `--verify` read of them is refused rather
    /// than reported as corruption. Markers from before this field: true.
    #[serde(default = "pattern_default")]
    pub pattern: bool,
    /// Directories this marker's runs created (IOR -u), removed with rmdir.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirs_created: Vec<PathBuf>,
    /// Identity (device, inode) of the working directory when it was made:
    /// a directory swapped in under its name is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_id: Option<safefs::FileId>,
    /// Identities of the per-worker directories, by worker.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dir_ids: Vec<safefs::FileId>,
    /// A random token rank 0 of a multi-process run writes here, which
    /// every other rank reads back through the directory it opened: see
    /// [`peer`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Identities of the data files of a kept set (native or IOR
    /// front-end) when its last write ended, by file, in the order `clean`
    /// computes their names ([`FileStamp::ABSENT`] for a file that did
    /// not exist then): `clean` removes a file only while it is still the
    /// one ioscale wrote ([`FileStamp::is`]), so a user's file — or a hard
    /// link to one — put under an ioscale name is left alone. Cleared
    /// before a write over the set starts; empty in a set no kept run
    /// wrote, or of more than [`MAX_STAMPED_FILES`] files (removed by name
    /// then, as before).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_ids: Vec<FileStamp>,
}

/// A file as ioscale left it: its (device, inode), the time of its last
/// status change and, where the file system keeps one, its birth time.
/// The inode alone is not enough: a file system hands a deleted file's
/// inode number to the next file made (ext4 and tmpfs do), so a user's new
/// file under the old name can have the same one. And the (device, inode)
/// is not the same through every view of one file: NFS gives each client
/// its own device, a FUSE file system numbers inodes itself. The times are
/// the file's own, the same through every view, and no user can set them:
/// [`FileStamp::is`] compares those.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    /// Device and inode.
    #[serde(flatten)]
    pub id: safefs::FileId,
    /// `st_ctime` seconds.
    pub ctime: i64,
    /// `st_ctime_nsec`.
    pub ctime_nsec: i64,
    /// Birth time (`statx` `stx_btime`: seconds, nanoseconds), where the
    /// file system keeps one: a file written in place since (a flipped
    /// byte, a user's edit) keeps it and is still ioscale's file, while a
    /// new file that got the freed inode number has a later one. Absent in
    /// stamps written before it and where there is none (then any status
    /// change counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub btime: Option<[i64; 2]>,
}

/// The stamp of the regular file `rel` below `dir`, never through a link
/// (each directory on the way opened as the backend opens one below a
/// held directory), with its birth time where the storage keeps one;
/// `None` when it is missing, not a regular file, or cannot be read.
fn stamp_at(dir: &impl Dir, rel: &Path) -> Option<FileStamp> {
    let info = dir.stat_below(rel).ok()??;
    // The birth time of the very file stat saw (the same inode), or none.
    let btime = match dir.born_below(rel) {
        Ok(Some((ino, (s, ns)))) if ino == info.id.ino => Some([s, ns]),
        _ => None,
    };
    (info.kind == Kind::File).then_some(FileStamp {
        id: info.id,
        ctime: info.changed.0,
        ctime_nsec: info.changed.1,
        btime,
    })
}

impl FileStamp {
    /// The stamp of a file that did not exist when the set was kept: no
    /// file has inode 0, so any file found there later is not ioscale's.
    pub const ABSENT: FileStamp = FileStamp {
        id: safefs::FileId { dev: 0, ino: 0 },
        ctime: 0,
        ctime_nsec: 0,
        btime: None,
    };

    /// Whether `now` is the file this stamp recorded, seen through this
    /// view or another: born at the same moment (written in place since,
    /// it is still that file), or, where a view has no birth time, with
    /// its status unchanged since. A file made, linked or renamed there
    /// later has later times; an absent stamp is no file.
    pub fn is(&self, now: &FileStamp) -> bool {
        *self != FileStamp::ABSENT
            && match (self.btime, now.btime) {
                (Some(a), Some(b)) => a == b,
                _ => (self.ctime, self.ctime_nsec) == (now.ctime, now.ctime_nsec),
            }
    }
}

/// The most data files a marker records stamps of: 4096 of them take
/// about 470 KB of the marker, which is read up to 1 MiB.
pub const MAX_STAMPED_FILES: usize = 4096;

fn pattern_default() -> bool {
    true
}

/// The most workers a marker may name. A marker is a file in a directory
/// others may write to: a forged or damaged count must be refused before
/// any name is computed from it (2^32−1 workers made `clean` ask for 96 GiB
/// and abort). 2^20 is far past any run (4096 threads a process).
pub const MAX_MARKER_WORKERS: u32 = 1 << 20;

impl Marker {
    /// Why this marker cannot describe a set ioscale made, if it cannot:
    /// read markers are checked before anything is derived from them.
    pub fn problem(&self) -> Option<String> {
        if self.threads == 0 || self.threads > MAX_MARKER_WORKERS {
            return Some(format!(
                "it names {} workers (a set has 1 to {MAX_MARKER_WORKERS})",
                self.threads
            ));
        }
        None
    }
}

/// Which cleanup rules apply to a data set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetKind {
    /// `TARGET/ioscale.d` with the marker inside.
    Native,
    /// IOR names with a sidecar marker at this path.
    Sidecar(PathBuf),
    /// dd names, or fio's ([`DdSet::nofollow`]).
    Dd(DdSet),
}

/// The user-named files of a dd (or fio) set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DdSet {
    /// The files that did not exist before this run: this run made them
    /// (empty, exclusively, never through a link) with these identities,
    /// and `--rm` removes exactly those files.
    pub created: Vec<(PathBuf, safefs::FileId)>,
    /// `FileNaming::Dd`'s `nofollow`: the files were laid out before the
    /// run ([`user`]) and none is ever opened through a link: every one
    /// is opened in its directory with `O_NOFOLLOW`, so a link swapped in
    /// under a name is refused, never followed.
    pub nofollow: bool,
}

/// The data files of one run and what this run created, on backend `B`
/// (POSIX unless named).
#[derive(Debug)]
pub struct DataSet<B: Backend = Posix> {
    /// `TARGET/ioscale.d`.
    pub root: PathBuf,
    /// Whether this run created `root`.
    pub created_root: bool,
    /// Data file paths, by file index.
    pub files: Vec<PathBuf>,
    /// Per-worker directories (per-thread-dir layout).
    pub dirs: Vec<PathBuf>,
    /// The marker this run found or wrote.
    pub marker: Marker,
    /// Whether the files held a complete data set before this run.
    pub had_data: bool,
    /// Which cleanup rules apply.
    pub kind: SetKind,
    /// The held handles and lock of a native set (rank 0 only).
    pub guard: Option<Guard<B>>,
    /// On the ranks other than 0: what rank 0 sent to check the set's
    /// directory against ([`peer`]).
    pub peer: Option<peer::Peer>,
    /// The storage the set is on.
    pub backend: B,
}

/// A backend's set lock.
pub(crate) type LockOf<B> = <<B as Backend>::Dir as Dir>::Lock;

/// What a native set's maker holds for the whole run: the target and the
/// working directory (every later step is relative to these handles, so a
/// name swapped under it is never followed) and the set's lock.
#[derive(Debug)]
pub struct Guard<B: Backend = Posix> {
    target: B::Dir,
    root: B::Dir,
    lock: Option<LockOf<B>>,
    /// The lock file's name in `root`.
    lock_file: std::ffi::OsString,
}

impl<B: Backend> Guard<B> {
    /// The guard of `ioscale.d` (`root`, held through `target`) under
    /// `lock`, whose lock file is the marker's.
    fn native(target: B::Dir, root: B::Dir, lock: LockOf<B>) -> Guard<B> {
        Guard {
            target,
            root,
            lock: Some(lock),
            lock_file: lock_name(MARKER_NAME),
        }
    }
}

impl<B: Backend> Drop for Guard<B> {
    /// A kept set (or one left for `clean`) is released: its lock file goes
    /// too, so what is left is the data set and its marker alone.
    fn drop(&mut self) {
        if let Some(l) = self.lock.take() {
            let _ = self.root.unlock(l, &self.lock_file);
        }
    }
}

/// A refusal of safefs as a refusal here; a failed call as a setup error.
fn fs_err(e: safefs::Error) -> Error {
    let text = e.to_string();
    match e.kind {
        safefs::ErrorKind::Refused(_) => Error::Refused(format!(
            "{text}; remove it yourself or choose another target"
        )),
        safefs::ErrorKind::Io(source) => Error::Setup {
            what: format!("cannot {} {}", e.op, e.path.display()),
            source,
        },
    }
}

fn io_err(what: String, e: safefs::Error) -> Error {
    let text = e.to_string();
    match e.kind {
        safefs::ErrorKind::Io(source) => Error::Setup { what, source },
        safefs::ErrorKind::Refused(_) => Error::Refused(format!("{what}: {text}")),
    }
}

fn dir_name(i: usize) -> String {
    format!("dir.{i:08}")
}

/// The command line, for the lock's holder record.
fn command_line() -> String {
    let mut c: String = std::env::args().collect::<Vec<_>>().join(" ");
    if c.len() > 200 {
        let mut end = 200;
        while !c.is_char_boundary(end) {
            end -= 1;
        }
        c.truncate(end);
        c.push('…');
    }
    c
}

/// Takes the set's lock, or says who holds it.
fn take_lock<D: Dir>(root: &D, target: &Path) -> Result<D::Lock, Error> {
    take_lock_named(
        root,
        &lock_name(MARKER_NAME),
        &root.path().display().to_string(),
        target,
        safefs::LockOptions::default(),
    )
}

/// Why a set is refused: who holds it and what to do. A holder on another
/// host cannot be checked from here: the user is told how to take it over
/// once they know that run is over.
pub(crate) fn held_message(
    set: &str,
    holder: Option<safefs::Holder>,
    liveness: Liveness,
    target: &Path,
) -> String {
    let who = holder
        .map(|h| h.describe())
        .unwrap_or_else(|| "another ioscale process".into());
    if liveness == Liveness::Unknown {
        format!(
            "{set} is in use by {who}. That is another host, so this one cannot tell whether \
             the run still goes on: wait until it ends, or, once you know it is over, \
             `ioscale clean --force {}` takes the set over and removes it",
            target.display()
        )
    } else {
        format!(
            "{set} is in use by {who}; wait until it ends (or stop it) before using or \
             cleaning {}",
            target.display()
        )
    }
}

/// Takes the lock file `lock` in `dir` for the set called `set`, or says
/// who holds it (exit 2). A holder on another host is taken over only with
/// `opts` (`clean --force`).
fn take_lock_named<D: Dir>(
    dir: &D,
    lock: &std::ffi::OsStr,
    set: &str,
    target: &Path,
    opts: safefs::LockOptions,
) -> Result<D::Lock, Error> {
    match dir.try_lock(lock, &command_line(), opts).map_err(fs_err)? {
        Locked::Acquired(l) => Ok(l),
        Locked::Held { holder, liveness } => {
            Err(Error::Refused(held_message(set, holder, liveness, target)))
        }
    }
}

/// The marker in the held working directory, read without following a
/// link and at most 1 MiB.
fn read_marker_in(root: &impl Dir) -> Option<Marker> {
    read_sidecar_in(root, MARKER_NAME.as_ref())
}

/// The JSON file `name` in the held directory `root`, read without
/// following a link and at most 1 MiB; `None` when missing or malformed.
pub(crate) fn read_json_in<T: serde::de::DeserializeOwned>(
    root: &impl Dir,
    name: impl AsRef<std::ffi::OsStr>,
) -> Option<T> {
    let text = root.read_small(name, 1 << 20)?;
    serde_json::from_slice(&text).ok()
}

fn write_marker_in(root: &impl Dir, m: &Marker) -> Result<(), safefs::Error> {
    write_sidecar_in(root, MARKER_NAME.as_ref(), m)
}

/// Where a later run meets a kept set. The device and inode recorded in
/// the marker are not compared here: they are not stable across views of
/// one directory (NFS gives each client its own `st_dev`, a FUSE file
/// system numbers inodes itself, a remount may renumber the device), so a
/// set written through one view and read through another would be refused.
/// What protects a later run is that `ioscale.d` is opened with
/// `O_NOFOLLOW` (a symlink there is refused), the marker proves the set is
/// ioscale's, the lock proves no live run holds it, and from then on every
/// removal goes through the handle held for the whole run.
fn check_root_id(_m: &Marker, _root: &impl Dir) -> Result<(), Error> {
    Ok(())
}

/// Removes a native set through its held handles: the scheme's files,
/// ioscale's own temporary names, the per-worker directories (checked
/// against their recorded identities), then — when all of that is gone —
/// the marker, the lock and the working directory itself. Anything
/// swapped or foreign is left and named.
fn remove_native<B: Backend>(mut g: Guard<B>, m: &Marker) -> Vec<String> {
    let lock = g.lock.take();
    let (target, root) = (&g.target, &g.root);
    let (files, dirs) = names(Path::new(""), m.layout, m.threads);
    let mut r = Removal::new();
    for (d, id) in dirs.iter().zip(&m.dir_ids) {
        r.expect(d, *id);
    }
    let foreign = remove_stamped(&mut r, root, &files, &m.file_ids);
    for n in own_temps(root) {
        r.file(n);
    }
    for d in dirs.iter().rev() {
        r.dir(d);
    }
    let mut left: Vec<String>;
    let rep = root.remove(&r);
    if rep.is_complete() && foreign.is_empty() {
        let mut r = Removal::new();
        r.file(MARKER_NAME);
        let rep = root.remove(&r);
        left = rep.describe();
        if let Some(l) = lock {
            if let Err(e) = root.unlock(l, lock_name(MARKER_NAME)) {
                left.push(e.to_string());
            }
        }
        match target.rmdir_at(ROOT_NAME, Some(root.id())) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) => left.push(format!(
                "{} (it holds files ioscale did not create; they were left alone)",
                e
            )),
            Err(e) => left.push(e.to_string()),
        }
    } else {
        // Keep the marker, so `ioscale clean` can finish the job once the
        // entries named are dealt with.
        left = foreign;
        left.extend(rep.describe());
        left.push(format!(
            "the marker in {} is kept; `ioscale clean {}` removes the rest",
            root.path().display(),
            target.path().display()
        ));
        if let Some(l) = lock {
            let _ = root.unlock(l, lock_name(MARKER_NAME));
        }
    }
    left
}

/// The backend's own temporary names in `dir` (left by a marker replace
/// cut short), which a set's removal takes with it.
pub(crate) fn own_temps<D: Dir>(dir: &D) -> Vec<std::ffi::OsString> {
    dir.list()
        .map(|l| l.into_iter().filter(|n| D::temp_of(n).is_some()).collect())
        .unwrap_or_default()
}

fn names(root: &Path, layout: Layout, threads: u32) -> (Vec<PathBuf>, Vec<PathBuf>) {
    match layout {
        Layout::Shared => (vec![root.join("shared.dat")], Vec::new()),
        Layout::PerThread => (
            (0..threads)
                .map(|i| root.join(format!("file.{i:08}")))
                .collect(),
            Vec::new(),
        ),
        Layout::PerThreadDir => {
            let dirs: Vec<PathBuf> = (0..threads)
                .map(|i| root.join(format!("dir.{i:08}")))
                .collect();
            let files = dirs
                .iter()
                .enumerate()
                .map(|(i, d)| d.join(format!("file.{i:08}")))
                .collect();
            (files, dirs)
        }
    }
}

/// `path` with `.%08d` appended, as IOR names a task's file.
fn ior_suffixed(path: &Path, i: u32) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{i:08}"));
    PathBuf::from(s)
}

/// IOR's file and directory names for `path` (the `-o` value).
///
/// Shared: `path`. File per task (-F): `path.00000000`, … Directory per
/// task (-F -u): `dirname(path)/0/basename(path).00000000`, … (IOR's
/// `PrependDir`: the task number, unpadded, as a directory).
pub fn ior_names(path: &Path, layout: Layout, threads: u32) -> (Vec<PathBuf>, Vec<PathBuf>) {
    match layout {
        Layout::Shared => (vec![path.to_path_buf()], Vec::new()),
        Layout::PerThread => (
            (0..threads).map(|i| ior_suffixed(path, i)).collect(),
            Vec::new(),
        ),
        Layout::PerThreadDir => {
            let parent = parent_of(path);
            let name = path.file_name().unwrap_or_default();
            let dirs: Vec<PathBuf> = (0..threads).map(|i| parent.join(i.to_string())).collect();
            let files = dirs
                .iter()
                .enumerate()
                .map(|(i, d)| ior_suffixed(&d.join(name), i as u32))
                .collect();
            (files, dirs)
        }
    }
}

/// The directory holding `path` (`.` for a bare name).
pub fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// What is at a file the user named (dd's `if=` and `of=`), looked at
/// through the links the user's path follows (as dd's open follows them)
/// by the POSIX backend, never opened, so a FIFO cannot block it:
/// `Ok(None)` when nothing is there. See [`user_file_on`].
pub fn user_file(p: &Path) -> std::io::Result<Option<EntryInfo>> {
    user_file_on::<Posix>(p)
}

/// [`user_file`] on backend `B`. A front-end learns here what its plan
/// needs of the user's files (dd's read length, whether a name is a
/// regular file), never by a stat of its own; the executor checks them
/// again when it prepares the run.
pub fn user_file_on<B: Backend>(p: &Path) -> std::io::Result<Option<EntryInfo>> {
    B::stat_path(p, true).map_err(|e| match e.kind {
        safefs::ErrorKind::Io(e) => e,
        safefs::ErrorKind::Refused(r) => std::io::Error::other(r.to_string()),
    })
}

/// The sidecar marker of an IOR-named data set: `.NAME.ioscale-marker`
/// beside the `-o` path (hidden, so `ls` and `NAME.*` globs skip it).
pub fn ior_marker_path(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    parent_of(path).join(format!(".{name}.ioscale-marker"))
}

impl DataSet<Posix> {
    /// Prepares the working directory for `spec` on a POSIX file system
    /// ([`DataSet::prepare_on`]).
    pub fn prepare(spec: &WorkloadSpec, run_id: &str) -> Result<DataSet, Error> {
        DataSet::prepare_on(Posix, spec, run_id)
    }
}

impl<B: Backend> DataSet<B> {
    /// Prepares the working directory for `spec` on `backend`.
    ///
    /// A workload the backend cannot run is refused first, naming the flag
    /// ([`engine::backend::Capabilities::check_data`]). A run that writes
    /// creates `ioscale.d` (or reuses one a kept run with the same layout
    /// left). A run that only reads needs such a kept data set with
    /// matching layout, worker count and size.
    pub fn prepare_on(backend: B, spec: &WorkloadSpec, run_id: &str) -> Result<Self, Error> {
        B::capabilities()
            .check_data(spec)
            .map_err(|e| Error::Usage(e.to_string()))?;
        match &spec.naming {
            FileNaming::Native => {}
            FileNaming::Ior { path } => return prepare_ior(backend, spec, path, run_id),
            FileNaming::Dd {
                paths,
                notrunc,
                nofollow,
            } => {
                return if *nofollow {
                    user::prepare_laid(backend, spec, paths, run_id)
                } else {
                    prepare_dd(backend, spec, paths, *notrunc, run_id)
                }
            }
        }
        let root = spec.target.join(ROOT_NAME);
        let writes = spec.ops.iter().any(|o| o.writes());
        // Everything below TARGET goes through held handles: a name
        // swapped for a link or another directory is refused, never
        // followed.
        let target = backend.open_target(&spec.target).map_err(fs_err)?;
        match target.stat_at(ROOT_NAME).map_err(fs_err)? {
            Some(info) => {
                if info.kind != Kind::Dir {
                    return Err(Error::Refused(format!(
                        "{} exists and is not a directory made by ioscale (it is a {}); \
                         remove it or choose another target",
                        root.display(),
                        info.kind.name()
                    )));
                }
                adopt_native(backend, spec, target, writes)
            }
            None => {
                if !writes {
                    return Err(Error::Refused(format!(
                        "nothing to read in {}: no kept files there. Write them first with the same layout flags, e.g. \
                         `ioscale run --op write --keep --threads {} --layout {} ... {}`",
                        spec.target.display(),
                        spec.threads,
                        spec.layout,
                        spec.target.display()
                    )));
                }
                create_native(backend, spec, target, new_marker(spec, run_id))
            }
        }
    }

    /// Makes the per-worker directories of a new native set, recording
    /// their identities in the marker.
    fn make_worker_dirs(&mut self) -> Result<(), Error> {
        let Some(g) = &self.guard else {
            return Ok(());
        };
        for i in 0..self.dirs.len() {
            let h = g.root.mkdir_at(dir_name(i), 0o755).map_err(fs_err)?;
            self.marker.dir_ids.push(h.id());
        }
        if !self.marker.dir_ids.is_empty() {
            write_marker_in(&g.root, &self.marker).map_err(|e| {
                io_err(
                    format!("cannot write the marker in {}", self.root.display()),
                    e,
                )
            })?;
        }
        Ok(())
    }

    /// Records that the files now hold a complete data set (after a write
    /// phase finished without error), so a later read run may use them.
    /// `pattern`: the write ran with `--verify` (the files hold the
    /// pattern of `seed`).
    pub fn mark_complete(&mut self, run_id: &str, file_size: u64, seed: u64, pattern: bool) {
        self.marker.complete = true;
        self.marker.run_id = run_id.into();
        self.marker.file_size = file_size;
        self.marker.seed = seed;
        self.marker.pattern = pattern;
        self.had_data = true;
        self.seal();
    }

    /// Records the stamps of the set's data files as they are now (see
    /// [`Marker::file_ids`]): called when a run that wrote the set keeps
    /// it, whether its write finished or was cut short.
    pub fn seal(&mut self) {
        self.marker.file_ids = self.file_stamps();
        self.save_marker();
    }

    /// The stamps of the set's data files, in the order `clean` computes
    /// their names from the marker, looked up through the held directory;
    /// empty for dd's files, on a rank that does not hold the set, or for
    /// more than [`MAX_STAMPED_FILES`] files (`clean` goes by name then).
    fn file_stamps(&self) -> Vec<FileStamp> {
        let Some(g) = &self.guard else {
            return Vec::new();
        };
        let (layout, threads) = (self.marker.layout, self.marker.threads);
        let rel: Vec<PathBuf> = match &self.kind {
            SetKind::Native => names(Path::new(""), layout, threads).0,
            SetKind::Sidecar(mp) => {
                let Some(o) = mp.file_name().and_then(sidecar_data_name) else {
                    return Vec::new();
                };
                let o = parent_of(mp).join(o);
                let parent = parent_of(&o);
                let (files, _) = ior_names(&o, layout, threads);
                files.iter().map(|f| rel_to(&parent, f)).collect()
            }
            SetKind::Dd(_) => return Vec::new(),
        };
        if rel.len() > MAX_STAMPED_FILES {
            return Vec::new();
        }
        // A missing name, or a link or directory there (no file ioscale
        // wrote), is recorded as absent: `clean` leaves what it finds.
        rel.iter()
            .map(|f| stamp_at(&g.root, f).unwrap_or(FileStamp::ABSENT))
            .collect()
    }

    /// Writes the marker where the set keeps it (best effort). Only the
    /// rank that made the set holds it; dd's files have none.
    fn save_marker(&self) {
        let Some(g) = &self.guard else {
            return;
        };
        let _ = match &self.kind {
            SetKind::Native => write_marker_in(&g.root, &self.marker),
            SetKind::Sidecar(_) => {
                write_sidecar_in(&g.root, &safefs_marker_of(&g.lock_file), &self.marker)
            }
            SetKind::Dd(_) => Ok(()),
        };
    }

    /// Where the workers open each data file: a directory held open and
    /// the file's name in it, so a path swapped for a link or another
    /// directory after setup is never followed. Rank 0 uses the handle it
    /// holds; another rank of an MPI run opens the set's directory itself
    /// and checks it against what rank 0 sent ([`peer`]). Per-worker
    /// directories (`dir.00000000`, IOR's task directories) are opened
    /// through it with `O_NOFOLLOW` and checked against the identity
    /// recorded at their creation. `None` for a file opened by its path:
    /// the user's own link or hard-linked file in a set ioscale did not
    /// make (IOR reading foreign files, dd), which the tools follow too.
    pub fn anchors(&self) -> Result<Vec<Option<engine::FileAnchor<B>>>, Error> {
        use std::os::unix::ffi::OsStrExt;
        let held = self.held_dir()?;
        let by_path = self.user_named_files();
        let same_node = self.same_node();
        let mut out = Vec::with_capacity(self.files.len());
        let mut root_fd = None;
        for (i, f) in self.files.iter().enumerate() {
            if by_path.contains(&(i as u32)) {
                out.push(None);
                continue;
            }
            let (dir, name) = match &held {
                Some(h) => {
                    let rel = rel_to(&self.root, f);
                    let name = rel.file_name().unwrap_or_default().to_os_string();
                    match rel.parent().filter(|p| !p.as_os_str().is_empty()) {
                        None => {
                            let fd = match &root_fd {
                                Some(fd) => std::sync::Arc::clone(fd),
                                None => hold::<B>(h)?,
                            };
                            root_fd = Some(std::sync::Arc::clone(&fd));
                            (fd, name)
                        }
                        Some(d) => {
                            let want = self.recorded_dir_id(&self.root.join(d));
                            let sub = peer::open_dir_checked(h, d, want, same_node)?;
                            (hold::<B>(&sub)?, name)
                        }
                    }
                }
                None => {
                    // dd: each file in its own directory, the user's.
                    let (d, name) = peer::split_file(f);
                    let dir = self.backend.open_target(&d).map_err(fs_err)?;
                    (hold::<B>(&dir)?, name)
                }
            };
            let name = std::ffi::CString::new(name.as_bytes())
                .map_err(|_| Error::Refused(format!("{}: a name with a NUL byte", f.display())))?;
            out.push(Some(engine::FileAnchor::<B> { dir, name }));
        }
        Ok(out)
    }

    /// Removes the data files (not the directories or the marker) before a
    /// repetition writes them again, as IOR does before every write phase;
    /// the marker no longer says complete. dd's files are the user's and
    /// stay. A native set's go through its held handles (a swapped path is
    /// refused and named, never followed). Returns what could not be
    /// removed.
    pub fn remove_data_files(&mut self) -> Vec<String> {
        if matches!(self.kind, SetKind::Dd(_)) {
            return Vec::new();
        }
        self.had_data = false;
        if self.marker.complete || !self.marker.file_ids.is_empty() {
            self.marker.complete = false;
            self.marker.file_ids.clear();
            self.save_marker();
        }
        match (&self.kind, &self.guard) {
            (SetKind::Native, Some(g)) => {
                let mut r = Removal::new();
                for (i, id) in self.marker.dir_ids.iter().enumerate() {
                    r.expect(dir_name(i), *id);
                }
                for f in &self.files {
                    r.file(f.strip_prefix(&self.root).unwrap_or(f));
                }
                g.root.remove(&r).describe()
            }
            (SetKind::Sidecar(_), Some(g)) => {
                let mut r = Removal::new();
                for f in &self.files {
                    r.file(rel_to(&self.root, f));
                }
                g.root.remove(&r).describe()
            }
            // Another rank's copy (never called there) removes nothing,
            // and never by path.
            _ => Vec::new(),
        }
    }

    /// What to tell the user about files left in place, if anything.
    pub fn kept_note(&self, spec: &WorkloadSpec) -> Option<String> {
        match &self.kind {
            SetKind::Native if spec.keep => Some(format!(
                "kept the files in {} (`ioscale clean {}` removes them)",
                self.root.display(),
                spec.target.display()
            )),
            SetKind::Native => Some(format!(
                "the files in {} were kept by an earlier run and are left in place (`ioscale clean {}` removes them)",
                self.root.display(),
                spec.target.display()
            )),
            SetKind::Sidecar(_) if spec.keep && !self.created_root => Some(format!(
                "left {} file(s) starting {} in place: ioscale did not make them (no ioscale marker), \
                 so no ioscale run removes them",
                self.files.len(),
                self.files.first().map(|f| f.display().to_string()).unwrap_or_default()
            )),
            SetKind::Sidecar(m) if spec.keep => Some(format!(
                "kept {} file(s) starting {} (`ioscale clean {}` removes them and their marker, \
                 as does an `ioscale ior` run with the same -o and without -k)",
                self.files.len(),
                self.files.first().map(|f| f.display().to_string()).unwrap_or_default(),
                m.file_name()
                    .and_then(sidecar_data_name)
                    .map(|n| parent_of(m).join(n).display().to_string())
                    .unwrap_or_default()
            )),
            SetKind::Sidecar(_) => Some(format!(
                "{} has no ioscale marker: ioscale did not make it, so it is left in place",
                self.files.first().map(|f| f.display().to_string()).unwrap_or_default()
            )),
            SetKind::Dd(_) => None,
        }
    }

    /// Removes the data files, per-worker directories, marker and working
    /// directory — only by their exact names, directories only when empty.
    /// Returns what could not be removed.
    pub fn remove(&mut self) -> Vec<String> {
        match &self.kind {
            SetKind::Native => match self.guard.take() {
                Some(g) => remove_native(g, &self.marker),
                None => Vec::new(),
            },
            SetKind::Sidecar(_) => match self.guard.take() {
                Some(g) => remove_ior_set(g, &self.root, &self.marker, &self.files),
                None => Vec::new(),
            },
            SetKind::Dd(set) => remove_created(&self.backend, &set.created),
        }
    }
}

/// The marker of a set this run makes.
fn new_marker(spec: &WorkloadSpec, run_id: &str) -> Marker {
    Marker {
        tool: "ioscale".into(),
        run_id: run_id.into(),
        layout: spec.layout,
        threads: spec.threads,
        file_size: spec.file_size(),
        complete: false,
        seed: spec.seed,
        pattern: spec.verify,
        dirs_created: Vec::new(),
        root_id: None,
        dir_ids: Vec::new(),
        token: None,
        file_ids: Vec::new(),
    }
}

/// A native set found in TARGET: its marker proves it ioscale's, its lock
/// that no live run holds it; it must suit this run.
fn adopt_native<B: Backend>(
    backend: B,
    spec: &WorkloadSpec,
    target: B::Dir,
    writes: bool,
) -> Result<DataSet<B>, Error> {
    let root = spec.target.join(ROOT_NAME);
    let (files, dirs) = names(&root, spec.layout, spec.threads);
    let rootd = target.open_dir_at(ROOT_NAME, None).map_err(fs_err)?;
    let Some(mut found) = read_marker_in(&rootd) else {
        return Err(Error::Refused(format!(
            "{} exists but has no ioscale marker, so ioscale did not make it; \
             refusing to touch it (remove it yourself or choose another target)",
            root.display()
        )));
    };
    check_root_id(&found, &rootd)?;
    let lock = take_lock(&rootd, &spec.target)?;
    let had_data = check_kept_native(spec, &found, &rootd, &files, writes)?;
    let repattern = found.pattern && !(spec.verify && spec.seed == found.seed);
    if writes && (repattern || !found.file_ids.is_empty()) {
        // This run's writes replace the pattern and change the files: say
        // so before the first byte, so a run cut short leaves no marker
        // claiming a pattern the files no longer hold, nor stamps they no
        // longer have (recorded again if this run keeps them).
        found.pattern &= !repattern;
        found.file_ids.clear();
        write_marker_in(&rootd, &found)
            .map_err(|e| io_err(format!("cannot write the marker in {}", root.display()), e))?;
    }
    for i in 0..dirs.len() {
        let name = dir_name(i);
        match rootd.stat_at(&name).map_err(fs_err)? {
            Some(info) if info.kind == Kind::Dir => {}
            Some(info) => {
                return Err(Error::Refused(format!(
                    "{}: it is a {}, not the directory ioscale made; refusing to use it",
                    rootd.child_path(&name).display(),
                    info.kind.name()
                )))
            }
            None => {
                rootd.mkdir_at(&name, 0o755).map_err(fs_err)?;
            }
        }
    }
    Ok(DataSet {
        root,
        created_root: false,
        files,
        dirs,
        marker: found,
        had_data,
        kind: SetKind::Native,
        guard: Some(Guard::native(target, rootd, lock)),
        peer: None,
        backend,
    })
}

/// Whether a kept native set `found` (in the held `rootd`) serves this
/// run; `Ok(had_data)`: it held a complete data set of at least this
/// run's size.
fn check_kept_native(
    spec: &WorkloadSpec,
    found: &Marker,
    rootd: &impl Dir,
    files: &[PathBuf],
    writes: bool,
) -> Result<bool, Error> {
    let root = rootd.path();
    if !readable_by(found, spec, writes) {
        return Err(Error::Refused(format!(
            "{} holds files kept by an earlier run with --layout {} and --threads {}; \
             use the same flags to read them, or run `ioscale clean {}` first",
            root.display(),
            found.layout,
            found.threads,
            spec.target.display()
        )));
    }
    let size_of = |f: &PathBuf| {
        rootd
            .stat_below(&rel_to(root, f))
            .ok()
            .flatten()
            .map_or(0, |i| i.size)
    };
    // A write cut short at its time limit left the transfers its caller
    // carries in `item_counts`: those, not the whole size, must be there.
    let carried = !spec.item_counts.is_empty()
        && files
            .iter()
            .enumerate()
            .all(|(i, f)| size_of(f) >= spec.bytes_needed(i as u32));
    let had_data = carried || (found.complete && found.file_size >= spec.file_size());
    if !writes && !had_data {
        return Err(Error::Refused(format!(
            "the kept files in {} are incomplete or smaller ({} bytes per file) than this run reads ({}); \
             write them again with --keep and the same sizes",
            root.display(),
            found.file_size,
            spec.file_size()
        )));
    }
    // With --verify a file cut short is damaged data, which the read phase
    // reports (exit 1) at the offset where it ends.
    if !writes && !spec.verify && !carried {
        for f in files {
            let len = size_of(f);
            if len < spec.file_size() {
                return Err(Error::Refused(format!(
                    "{} holds {len} bytes but this run reads {}; write the files again with --keep",
                    f.display(),
                    spec.file_size()
                )));
            }
        }
    }
    if spec.verify && !writes && !found.pattern {
        return Err(Error::Refused(format!(
            "the kept files in {} were not written with a known pattern (their last write ran \
             without --verify), so there is nothing to check them against; write them again \
             with --verify --keep, or read them without --verify",
            root.display()
        )));
    }
    if spec.verify && found.seed != spec.seed && !writes {
        return Err(Error::Refused(format!(
            "the kept files were written with --seed {}; pass the same --seed to verify them",
            found.seed
        )));
    }
    Ok(had_data)
}

/// Makes `ioscale.d` in TARGET, its marker first, then its lock and its
/// per-worker directories; a failure removes what this run made.
fn create_native<B: Backend>(
    backend: B,
    spec: &WorkloadSpec,
    target: B::Dir,
    mut want: Marker,
) -> Result<DataSet<B>, Error> {
    let root = spec.target.join(ROOT_NAME);
    let (files, dirs) = names(&root, spec.layout, spec.threads);
    let rootd = target.mkdir_at(ROOT_NAME, 0o755).map_err(fs_err)?;
    want.root_id = Some(rootd.id());
    // The marker goes down before anything else; a failed write leaves no
    // temporary file, and the directory this run made goes again.
    if let Err(e) = write_marker_in(&rootd, &want) {
        let _ = target.rmdir_at(ROOT_NAME, Some(rootd.id()));
        return Err(io_err(
            format!("cannot write the marker in {}", root.display()),
            e,
        ));
    }
    let lock = match take_lock(&rootd, &spec.target) {
        Ok(l) => l,
        // No lock file could be made (EMFILE, ENOSPC): what this run made
        // goes again.
        Err(e @ Error::Setup { .. }) => {
            let _ = rootd.unlink_at(MARKER_NAME, None);
            let _ = target.rmdir_at(ROOT_NAME, Some(rootd.id()));
            return Err(e);
        }
        // Another process locked the set we just made: it is no longer
        // ours alone to remove.
        Err(e) => return Err(e),
    };
    let mut ds = DataSet {
        root: root.clone(),
        created_root: true,
        files,
        dirs,
        marker: want,
        had_data: false,
        kind: SetKind::Native,
        guard: Some(Guard::native(target, rootd, lock)),
        peer: None,
        backend,
    };
    if let Err(e) = ds.make_worker_dirs() {
        ds.remove();
        return Err(e);
    }
    Ok(ds)
}

/// Whether a kept set written as `found` serves a run of `spec`: the same
/// layout and worker count; a read may also use fewer workers (a shared
/// file read by fewer tasks, or the first of the per-task files), as IOR
/// reads what fewer tasks ask for. A write with another count replaces it.
fn readable_by(found: &Marker, spec: &WorkloadSpec, writes: bool) -> bool {
    found.layout == spec.layout
        && (found.threads == spec.threads || (!writes && found.threads > spec.threads))
}

/// A loop handle of `h` the workers share for the whole run.
fn hold<B: Backend>(h: &B::Dir) -> Result<std::sync::Arc<B::At>, Error> {
    B::at_of(h)
        .map(std::sync::Arc::new)
        .map_err(|source| Error::Setup {
            what: format!("cannot hold {} open", h.path().display()),
            source,
        })
}

/// Creates dd's output file `p` (it did not exist) exclusively, without
/// following a link, in its directory as the user named it; its identity.
fn create_dd_file<B: Backend>(backend: &B, p: &Path) -> Result<safefs::FileId, Error> {
    let (d, name) = peer::split_file(p);
    let dir = backend.open_target(&d).map_err(fs_err)?;
    let (f, id) = dir.create_at(&name, 0o666).map_err(fs_err)?;
    f.close()
        .map_err(|e| Error::io(format!("cannot close {}", p.display()), e))?;
    Ok(id)
}

/// Removes the files this run created, each only if it is still the very
/// file made (its recorded identity), relative to its directory: a file
/// swapped in under the name, or a directory swapped for another one
/// holding a file of that name, is refused and named.
fn remove_created<B: Backend>(backend: &B, created: &[(PathBuf, safefs::FileId)]) -> Vec<String> {
    let mut left = Vec::new();
    for (p, id) in created {
        let (d, name) = peer::split_file(p);
        let r = backend
            .open_target(&d)
            .and_then(|h| h.unlink_at(&name, Some(*id)));
        match r {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => left.push(e.to_string()),
        }
    }
    left
}

/// Checks that every file (the user's, through the user's links) exists,
/// is a regular file and holds at least `size` bytes (what a read-only
/// run needs).
fn check_readable<B: Backend>(files: &[PathBuf], size: u64, hint: &str) -> Result<(), Error> {
    check_extent::<B>(files, |_| size, hint)
}

/// [`check_readable`] with the bytes file `i` must hold given by `size`.
fn check_extent<B: Backend>(
    files: &[PathBuf],
    size: impl Fn(u32) -> u64,
    hint: &str,
) -> Result<(), Error> {
    for (i, f) in files.iter().enumerate() {
        let size = size(i as u32);
        match B::stat_path(f, true) {
            Ok(Some(m)) if m.kind == Kind::File => {
                if m.size < size {
                    return Err(Error::Refused(format!(
                        "{} holds {} bytes but this run reads {size}; {hint}",
                        f.display(),
                        m.size
                    )));
                }
            }
            Ok(Some(_)) => {
                return Err(Error::Refused(format!(
                    "{} is not a regular file; ioscale reads regular files only",
                    f.display()
                )))
            }
            Ok(None) => {
                return Err(Error::Refused(format!(
                    "nothing to read at {}: {}; {hint}",
                    f.display(),
                    std::io::Error::from_raw_os_error(libc::ENOENT)
                )))
            }
            Err(e) => {
                let why = match e.kind {
                    safefs::ErrorKind::Io(e) => e.to_string(),
                    safefs::ErrorKind::Refused(r) => r.to_string(),
                };
                return Err(Error::Refused(format!(
                    "nothing to read at {}: {why}; {hint}",
                    f.display()
                )));
            }
        }
    }
    Ok(())
}

/// `p` relative to `parent` (the held directory of an IOR set).
fn rel_to(parent: &Path, p: &Path) -> PathBuf {
    p.strip_prefix(parent).unwrap_or(p).to_path_buf()
}

/// The sidecar marker's and its lock file's names for the `-o` path.
fn sidecar_names(path: &Path) -> (std::ffi::OsString, std::ffi::OsString) {
    let m = ior_marker_path(path)
        .file_name()
        .unwrap_or_default()
        .to_os_string();
    let l = lock_name(&m);
    (m, l)
}

/// The sidecar marker in the held directory, read without following a
/// link; `None` also when it names impossible values ([`Marker::problem`]).
fn read_sidecar_in(dir: &impl Dir, name: &std::ffi::OsStr) -> Option<Marker> {
    read_any_marker_in(dir, name).filter(|m| m.problem().is_none())
}

/// The marker `name` in `dir` as written, unchecked: for `clean` to say
/// what is wrong with it.
fn read_any_marker_in(dir: &impl Dir, name: &std::ffi::OsStr) -> Option<Marker> {
    let m: Marker = read_json_in(dir, name)?;
    (m.tool == "ioscale").then_some(m)
}

/// `clean` refuses a marker that names impossible values.
pub(crate) fn bad_marker(marker: &Path, problem: &str) -> Error {
    Error::Refused(format!(
        "{} is not a valid ioscale marker: {problem}; refusing to remove anything by it",
        marker.display()
    ))
}

fn write_sidecar_in(
    dir: &impl Dir,
    name: &std::ffi::OsStr,
    m: &Marker,
) -> Result<(), safefs::Error> {
    let bytes = serde_json::to_vec_pretty(m).unwrap_or_default();
    dir.replace_at(name, &bytes, true)
}

/// Removes an IOR set's named files, its marker's temporary names and the
/// per-task directories it created (checked against their recorded
/// identities), relative to the held directory of the `-o` path: a
/// swapped name is refused and listed, never followed. The marker and the
/// lock are the caller's.
fn remove_ior_entries<D: Dir>(
    dir: &D,
    parent: &Path,
    m: &Marker,
    files: &[PathBuf],
    marker_name: &std::ffi::OsStr,
) -> Vec<String> {
    let mut r = Removal::new();
    for (d, id) in m.dirs_created.iter().zip(&m.dir_ids) {
        r.expect(rel_to(parent, d), *id);
    }
    let rel: Vec<PathBuf> = files.iter().map(|f| rel_to(parent, f)).collect();
    let mut foreign = remove_stamped(&mut r, dir, &rel, &m.file_ids);
    for n in own_temps(dir) {
        if D::temp_of(&n).as_deref() == Some(marker_name) {
            r.file(n);
        }
    }
    for d in m.dirs_created.iter().rev() {
        r.dir(rel_to(parent, d));
    }
    foreign.extend(dir.remove(&r).describe());
    foreign
}

/// Removes the data files `rel` (below the held `dir`) with `r`, each only
/// while it is the file its stamp in `stamps` recorded (when there is one
/// stamp per file; else by name, as a set no kept run wrote): a file put
/// there since — a user's, or a hard link to one — or a file where none
/// was is left alone and named. Returns those lines.
fn remove_stamped(
    r: &mut Removal,
    dir: &impl Dir,
    rel: &[PathBuf],
    stamps: &[FileStamp],
) -> Vec<String> {
    let stamps = (stamps.len() == rel.len()).then_some(stamps);
    let mut foreign = Vec::new();
    for (i, f) in rel.iter().enumerate() {
        if let Some(want) = stamps.map(|s| s[i]) {
            match stamp_at(dir, f) {
                Some(now) if !want.is(&now) => {
                    foreign.push(format!(
                        "{}: not the file ioscale left there (device {} inode {}, {}); left \
                         alone",
                        dir.child_path(f).display(),
                        now.id.dev,
                        now.id.ino,
                        if want == FileStamp::ABSENT {
                            "put there after the set was kept"
                        } else {
                            "put there in place of ioscale's since the set was kept"
                        }
                    ));
                    continue;
                }
                // The very file just compared is the one removed (a file
                // swapped in meanwhile is refused).
                Some(now) => {
                    r.expect(f, now.id);
                }
                // Missing, or no regular file (a link, a directory): never
                // ioscale's, refused unless it is gone.
                None => {
                    r.expect(f, want.id);
                }
            }
        }
        r.file(f);
    }
    foreign
}

/// Removes a whole IOR set through its guard: entries, then (when they
/// are all gone) the marker, then the lock file. With entries left the
/// marker stays, so `ioscale clean` can finish once they are dealt with.
fn remove_ior_set<B: Backend>(
    mut g: Guard<B>,
    parent: &Path,
    m: &Marker,
    files: &[PathBuf],
) -> Vec<String> {
    let marker_name = safefs_marker_of(&g.lock_file);
    let mut left = remove_ior_entries(&g.root, parent, m, files, &marker_name);
    if left.is_empty() {
        if let Err(e) = g.root.unlink_at(&marker_name, None) {
            left.push(e.to_string());
        }
    } else {
        let o = sidecar_data_name(&marker_name)
            .map(|n| parent.join(n))
            .unwrap_or_else(|| parent.to_path_buf());
        left.push(format!(
            "the marker {} is kept; `ioscale clean {}` removes the rest",
            g.root.child_path(&marker_name).display(),
            o.display()
        ));
    }
    if let Some(l) = g.lock.take() {
        if let Err(e) = g.root.unlock(l, &g.lock_file) {
            left.push(e.to_string());
        }
    }
    left
}

/// The marker's name for a lock file's name (`<marker>.lock`).
fn safefs_marker_of(lock: &std::ffi::OsStr) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStrExt;
    let b = lock.as_bytes();
    let b = b.strip_suffix(safefs::LOCK_SUFFIX.as_bytes()).unwrap_or(b);
    std::ffi::OsStr::from_bytes(b).to_os_string()
}

/// The names of an IOR front-end set for one `-o` path.
struct IorSet<'a> {
    /// The `-o` path.
    path: &'a Path,
    /// Its directory (held for the run).
    root: PathBuf,
    marker_path: PathBuf,
    marker_name: std::ffi::OsString,
    lock_file: std::ffi::OsString,
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
}

impl<'a> IorSet<'a> {
    fn new(path: &'a Path, spec: &WorkloadSpec) -> Self {
        let (files, dirs) = ior_names(path, spec.layout, spec.threads);
        let (marker_name, lock_file) = sidecar_names(path);
        IorSet {
            path,
            root: parent_of(path),
            marker_path: ior_marker_path(path),
            marker_name,
            lock_file,
            files,
            dirs,
        }
    }
}

const IOR_HINT: &str = "write the files first with `ioscale ior -w -k` and the same -b/-s/-N/-F/-u";

/// IOR naming: see [`ior_names`] and [`ior_marker_path`]. The directory of
/// the `-o` path is held for the whole run; a set with a marker (or one
/// this run writes) is locked, so a second run on the same `-o` is refused
/// naming the first, and every removal goes through the held handle.
fn prepare_ior<B: Backend>(
    backend: B,
    spec: &WorkloadSpec,
    path: &Path,
    run_id: &str,
) -> Result<DataSet<B>, Error> {
    let writes = spec.ops.iter().any(|o| o.writes());
    let n = IorSet::new(path, spec);
    let pd = backend.open_target(&n.root).map_err(fs_err)?;
    let has_marker = pd.stat_at(&n.marker_name).map_err(fs_err)?.is_some();
    // Files without a marker that this run only reads are someone else's:
    // no lock file is made beside them.
    let guard = if writes || has_marker {
        Some(lock_ior::<B>(&pd, &n)?)
    } else {
        None
    };
    let mut found = read_sidecar_in(&pd, &n.marker_name);
    if let Some(old) = found
        .as_ref()
        .filter(|m| writes && (m.layout != spec.layout || m.threads != spec.threads))
    {
        replace_ior_set(&pd, &n, old)?;
        found = None;
    }
    match found {
        Some(found) => adopt_ior(backend, spec, n, &pd, found, guard, writes),
        None if !writes => {
            // Files another tool (or a real IOR) wrote: read them, never
            // remove them.
            check_readable::<B>(&n.files, spec.file_size(), IOR_HINT)?;
            Ok(DataSet {
                root: n.root,
                created_root: false,
                files: n.files,
                dirs: n.dirs,
                marker: new_marker(spec, run_id),
                had_data: true,
                kind: SetKind::Sidecar(n.marker_path),
                guard: None,
                peer: None,
                backend,
            })
        }
        None => create_ior(backend, n, &pd, new_marker(spec, run_id), guard),
    }
}

/// Takes the lock of the IOR set `n` in its held directory `pd`.
fn lock_ior<B: Backend>(pd: &B::Dir, n: &IorSet) -> Result<Guard<B>, Error> {
    // The handles first: once the lock is taken, only the guard (which
    // removes the lock file again) may fail.
    let (target, held) = (
        pd.try_clone().map_err(fs_err)?,
        pd.try_clone().map_err(fs_err)?,
    );
    let lock = take_lock_named(
        pd,
        &n.lock_file,
        &n.path.display().to_string(),
        n.path,
        safefs::LockOptions::default(),
    )?;
    Ok(Guard {
        target,
        root: held,
        lock: Some(lock),
        lock_file: n.lock_file.clone(),
    })
}

/// A write with another task count or layout replaces the kept set `old`,
/// as IOR would overwrite it; the old names ioscale made go first so none
/// is left behind unrecognised, then its marker (the lock, ours, stays).
fn replace_ior_set(pd: &impl Dir, n: &IorSet, old: &Marker) -> Result<(), Error> {
    let (old_files, _) = ior_names(n.path, old.layout, old.threads);
    let mut left = remove_ior_entries(pd, &n.root, old, &old_files, &n.marker_name);
    if left.is_empty() {
        if let Err(e) = pd.unlink_at(&n.marker_name, None) {
            left.push(e.to_string());
        }
    }
    if !left.is_empty() {
        return Err(Error::Refused(format!(
            "cannot replace the files kept at {}: {}",
            n.path.display(),
            left.join("; ")
        )));
    }
    Ok(())
}

/// A kept IOR set (its sidecar marker `found`) used by this run.
fn adopt_ior<B: Backend>(
    backend: B,
    spec: &WorkloadSpec,
    n: IorSet,
    pd: &B::Dir,
    found: Marker,
    guard: Option<Guard<B>>,
    writes: bool,
) -> Result<DataSet<B>, Error> {
    let path = n.path;
    if !readable_by(&found, spec, writes) {
        return Err(Error::Refused(format!(
            "{} were written by an earlier `ioscale ior -k` run with {} task(s) and {} files; \
             use the same -N/-F/-u to read them (a run with those flags and no -k removes them)",
            path.display(),
            found.threads,
            found.layout
        )));
    }
    // A write cut short at its time limit left the transfers its caller
    // carries in `item_counts`: those, not the whole size, must be there.
    let carried = !spec.item_counts.is_empty();
    let had_data = (carried || (found.complete && found.file_size >= spec.file_size()))
        && check_extent::<B>(&n.files, |f| spec.bytes_needed(f), IOR_HINT).is_ok();
    if !writes && !had_data {
        check_extent::<B>(&n.files, |f| spec.bytes_needed(f), IOR_HINT)?;
        return Err(Error::Refused(format!(
            "the kept files at {} are incomplete or smaller than this run reads; {IOR_HINT}",
            path.display()
        )));
    }
    if spec.verify && !writes && !found.pattern {
        return Err(Error::Refused(format!(
            "the kept files at {} were not written with a known pattern (their last write ran \
             without -W), so there is nothing to check them against; write them again with -w -W -k, \
             or read them without -R",
            path.display()
        )));
    }
    if spec.verify && found.seed != spec.seed && !writes {
        return Err(Error::Refused(format!(
            "the kept files were written with -G {}; pass the same -G to check them",
            found.seed
        )));
    }
    // Fewer readers than writers read the first files only; the set still
    // holds all of them, so a run without -k removes them all.
    let files = if found.threads > spec.threads && spec.layout != Layout::Shared {
        ior_names(path, found.layout, found.threads).0
    } else {
        n.files
    };
    let mut marker = found;
    if writes {
        // This run's writes replace the pattern unless they write the same
        // one: recorded before the first byte.
        marker.pattern &= spec.verify && spec.seed == marker.seed;
        // The files change from here on: recorded again when the write
        // finishes (a run cut short leaves them to removal by name).
        marker.file_ids.clear();
        make_ior_dirs(pd, &n.root, &n.dirs, &mut marker)?;
        let _ = write_sidecar_in(pd, &n.marker_name, &marker);
    }
    Ok(DataSet {
        root: n.root,
        created_root: true,
        files,
        dirs: n.dirs,
        marker,
        had_data,
        kind: SetKind::Sidecar(n.marker_path),
        guard,
        peer: None,
        backend,
    })
}

/// A new IOR set: no file of its names may exist; the marker goes down
/// before any data file, then the task directories (`-u`).
fn create_ior<B: Backend>(
    backend: B,
    n: IorSet,
    pd: &B::Dir,
    mut marker: Marker,
    guard: Option<Guard<B>>,
) -> Result<DataSet<B>, Error> {
    for f in &n.files {
        if matches!(B::stat_path(f, false), Ok(Some(_))) {
            return Err(Error::Refused(format!(
                "{} exists and ioscale did not make it (no marker {}); refusing to overwrite it. \
                 Remove it yourself or choose another -o",
                f.display(),
                n.marker_path.display()
            )));
        }
    }
    if pd.stat_at(&n.marker_name).map_err(fs_err)?.is_some() {
        return Err(Error::Refused(format!(
            "{} exists but is not a valid ioscale marker; refusing to touch it",
            n.marker_path.display()
        )));
    }
    // An interrupted run still leaves files ioscale recognises; a failed
    // write leaves no temporary file (and the lock file goes with the
    // guard).
    write_sidecar_in(pd, &n.marker_name, &marker).map_err(|e| {
        io_err(
            format!("cannot write the marker {}", n.marker_path.display()),
            e,
        )
    })?;
    let made = make_ior_dirs(pd, &n.root, &n.dirs, &mut marker);
    let mut ds = DataSet {
        root: n.root,
        created_root: true,
        files: n.files,
        dirs: n.dirs,
        marker,
        had_data: false,
        kind: SetKind::Sidecar(n.marker_path),
        guard,
        peer: None,
        backend,
    };
    if let Err(e) = made {
        ds.remove();
        return Err(e);
    }
    if !ds.marker.dirs_created.is_empty() {
        let _ = write_sidecar_in(pd, &n.marker_name, &ds.marker);
    }
    Ok(ds)
}

/// Creates IOR's per-task directories that do not exist yet in the held
/// directory, recording them and their identities in the marker; existing
/// ones must be directories (a link there is refused).
fn make_ior_dirs(
    pd: &impl Dir,
    parent: &Path,
    dirs: &[PathBuf],
    marker: &mut Marker,
) -> Result<(), Error> {
    for d in dirs {
        let name = rel_to(parent, d);
        match pd.stat_at(&name).map_err(fs_err)? {
            Some(info) if info.kind == Kind::Dir => {}
            Some(info) => {
                return Err(Error::Refused(format!(
                    "{} exists and is a {}, not a directory; IOR -u needs it as the directory of task files",
                    d.display(),
                    info.kind.name()
                )))
            }
            None => {
                let h = pd.mkdir_at(&name, 0o755).map_err(fs_err)?;
                if !marker.dirs_created.contains(d) {
                    // Identities line up with the directories recorded (a
                    // marker from before identities has none).
                    if marker.dir_ids.len() == marker.dirs_created.len() {
                        marker.dir_ids.push(h.id());
                    }
                    marker.dirs_created.push(d.clone());
                }
            }
        }
    }
    Ok(())
}

/// dd naming: the user's own files, handled as dd handles them.
fn prepare_dd<B: Backend>(
    backend: B,
    spec: &WorkloadSpec,
    paths: &[PathBuf],
    notrunc: bool,
    run_id: &str,
) -> Result<DataSet<B>, Error> {
    let writes = spec.ops.iter().any(|o| o.writes());
    let marker = new_marker(spec, run_id);
    let root = paths.first().map(|p| parent_of(p)).unwrap_or_default();
    if !writes {
        check_readable::<B>(
            paths,
            spec.file_size(),
            "give a smaller count= or a larger file",
        )?;
        return Ok(DataSet {
            root,
            created_root: false,
            files: paths.to_vec(),
            dirs: Vec::new(),
            marker,
            had_data: true,
            kind: SetKind::Dd(DdSet::default()),
            guard: None,
            peer: None,
            backend,
        });
    }
    // Kept whole (conv=notrunc, as fio opens its files) and at least as
    // long as the run reads: the data a mixed phase reads is there, so no
    // untimed layout write is needed before it.
    let had_data = notrunc
        && paths.iter().all(|p| {
            B::stat_path(p, false).is_ok_and(|m| {
                m.is_some_and(|m| m.kind == Kind::File && m.size >= spec.file_size())
            })
        });
    let created = match open_dd_outputs(&backend, paths, notrunc) {
        Ok(c) => c,
        Err((made, e)) => {
            remove_created(&backend, &made);
            return Err(e);
        }
    };
    Ok(DataSet {
        root,
        created_root: true,
        files: paths.to_vec(),
        dirs: Vec::new(),
        marker,
        had_data,
        kind: SetKind::Dd(DdSet {
            created,
            nofollow: false,
        }),
        guard: None,
        peer: None,
        backend,
    })
}

/// dd's output files as dd's open leaves them: an existing regular file
/// (the user's, through the user's links) truncated unless `notrunc`, a
/// missing one made; anything else refused. The files this run made,
/// with their identities; on a failure, those made so far and the error.
type Made = Vec<(PathBuf, safefs::FileId)>;
fn open_dd_outputs<B: Backend>(
    backend: &B,
    paths: &[PathBuf],
    notrunc: bool,
) -> Result<Made, (Made, Error)> {
    let mut created = Vec::new();
    for p in paths {
        match B::stat_path(p, true) {
            Ok(Some(m)) if m.kind == Kind::File => {
                if !notrunc {
                    // dd opens of= with O_TRUNC unless conv=notrunc.
                    let how = OpenHow {
                        write: true,
                        truncate: true,
                        ..OpenHow::default()
                    };
                    let r = B::open_path(p, how).and_then(DataFile::close);
                    if let Err(e) = r {
                        let e = Error::io(format!("cannot truncate {}", p.display()), e);
                        return Err((created, e));
                    }
                }
            }
            Ok(Some(_)) => {
                let e = Error::Refused(format!(
                    "of={} is not a regular file; ioscale dd writes regular files only",
                    p.display()
                ));
                return Err((created, e));
            }
            Ok(None) => {
                // Made now, as dd's open would, and recorded: `--rm`
                // removes this very file, never one found later under
                // its name or through a swapped directory.
                match create_dd_file(backend, p) {
                    Ok(id) => created.push((p.clone(), id)),
                    Err(e) => return Err((created, e)),
                }
            }
            Err(e) => {
                let e = io_err(format!("cannot inspect {}", p.display()), e);
                return Err((created, e));
            }
        }
    }
    Ok(created)
}

/// One data set `ioscale clean` dealt with.
#[derive(Debug)]
pub struct Cleaned {
    /// Which set, in words ("the data set /t/ioscale.d").
    pub set: String,
    /// When the set's holder was gone (or on another host and `--force`
    /// was given): whose it was and why it was taken over.
    pub took_over: Option<String>,
    /// What could not be removed, with the reason (empty: all of it went).
    pub left: Vec<String>,
}

/// What `ioscale clean PATH` did: the sets removed and the sets refused.
#[derive(Debug, Default)]
pub struct CleanReport {
    /// Sets found and removed (or partly removed: see [`Cleaned::left`]).
    pub cleaned: Vec<Cleaned>,
    /// Sets found but refused (a live holder, a swapped path, no marker).
    pub refused: Vec<Error>,
}

/// Removes what a kept run left in `target`, recognised by the marker.
///
/// A working directory that is a link, or not the one its marker
/// recorded, is refused; a set a live run holds is refused naming it; a
/// set whose holder is gone is taken over and removed.
pub fn clean(target: &Path) -> Result<Vec<String>, Error> {
    match clean_native(&Posix, target, safefs::LockOptions::default())? {
        Some(c) => Ok(c.left),
        None => Err(Error::Refused(format!(
            "nothing to clean: {} does not exist",
            target.join(ROOT_NAME).display()
        ))),
    }
}

/// `ioscale clean PATH`: every set ioscale made that PATH names. For a
/// directory: its `ioscale.d` (run, dd-less data sets), its
/// `ioscale-meta.d` (meta, mdtest, smallfile trees) and every IOR
/// front-end set whose sidecar marker (`.NAME.ioscale-marker`) is in it.
/// For a file path: the IOR front-end set kept with that `-o`. Each set is
/// locked first (a live holder is refused), then removed through held
/// handles. `Err` only when PATH holds no ioscale set at all. On a POSIX
/// file system ([`clean_all_on`]).
pub fn clean_all(path: &Path, opts: safefs::LockOptions) -> Result<CleanReport, Error> {
    clean_all_on(&Posix, path, opts)
}

/// [`clean_all`] on `backend`.
pub fn clean_all_on<B: Backend>(
    backend: &B,
    path: &Path,
    opts: safefs::LockOptions,
) -> Result<CleanReport, Error> {
    let mut rep = CleanReport::default();
    let push = |r: Result<Option<Cleaned>, Error>, rep: &mut CleanReport| match r {
        Ok(Some(c)) => rep.cleaned.push(c),
        Ok(None) => {}
        Err(e) => rep.refused.push(e),
    };
    // PATH is a directory when it opens as one (through the user's
    // links); a missing path or another kind is an IOR `-o` path.
    let opened = match backend.open_target(path) {
        Ok(t) => Some(t),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTDIR) | Some(libc::ENOENT)) => None,
        Err(e) => return Err(fs_err(e)),
    };
    if let Some(t) = opened {
        push(clean_native(backend, path, opts), &mut rep);
        push(tree::clean_on(backend, path, opts), &mut rep);
        push(tree::clean_mdtest_on(backend, path, opts), &mut rep);
        push(scaffold::clean_on(backend, path, opts), &mut rep);
        let mut names: Vec<_> = t.list().map_err(fs_err)?;
        names.sort();
        for n in names {
            if let Some(data) = sidecar_data_name(&n) {
                // A look-alike that is no ioscale marker is not a set:
                // skipped here, refused only when named (`clean FILE`).
                let o = path.join(data);
                let (marker_name, _) = sidecar_names(&o);
                if read_sidecar_in(&t, &marker_name).is_some() {
                    push(clean_ior(backend, &o, opts), &mut rep);
                }
            }
        }
        if rep.cleaned.is_empty() && rep.refused.is_empty() {
            // `clean T/ioscale-meta.d` names the set itself, not where it is.
            let own = path
                .file_name()
                .is_some_and(|n| n == ROOT_NAME || n == tree::ROOT_NAME);
            let hint = if own {
                format!(
                    "; to remove it, name the directory that holds it: `ioscale clean {}`",
                    parent_of(path).display()
                )
            } else {
                String::new()
            };
            return Err(Error::Refused(format!(
                "nothing to clean: {} holds no data set ioscale made (no {ROOT_NAME}, no {}, \
                 no IOR front-end marker .NAME.ioscale-marker, no {}){hint}",
                path.display(),
                tree::ROOT_NAME,
                scaffold::MARKER_NAME
            )));
        }
    } else {
        push(clean_ior(backend, path, opts), &mut rep);
        if rep.cleaned.is_empty() && rep.refused.is_empty() {
            return Err(Error::Refused(format!(
                "nothing to clean: {} is not a directory and has no IOR front-end marker {} \
                 beside it",
                path.display(),
                ior_marker_path(path).display()
            )));
        }
    }
    Ok(rep)
}

/// `NAME` when `n` is an IOR sidecar marker's name, `.NAME.ioscale-marker`.
fn sidecar_data_name(n: &std::ffi::OsStr) -> Option<std::ffi::OsString> {
    use std::os::unix::ffi::OsStrExt;
    let b = n.as_bytes();
    let tail = b".ioscale-marker";
    (b.len() > tail.len() + 1 && b[0] == b'.' && b.ends_with(tail))
        .then(|| std::ffi::OsStr::from_bytes(&b[1..b.len() - tail.len()]).to_os_string())
}

/// The IOR front-end set kept with `-o path`: `None` when there is no
/// sidecar marker beside it.
fn clean_ior<B: Backend>(
    backend: &B,
    path: &Path,
    opts: safefs::LockOptions,
) -> Result<Option<Cleaned>, Error> {
    let parent = parent_of(path);
    let (marker_name, lock_file) = sidecar_names(path);
    let pd = backend.open_target(&parent).map_err(fs_err)?;
    if pd.stat_at(&marker_name).map_err(fs_err)?.is_none() {
        return Ok(None);
    }
    let Some(m) = read_any_marker_in(&pd, &marker_name) else {
        return Err(Error::Refused(format!(
            "{} is not a valid ioscale marker; refusing to remove anything by it",
            ior_marker_path(path).display()
        )));
    };
    if let Some(p) = m.problem() {
        return Err(bad_marker(&ior_marker_path(path), &p));
    }
    let target = pd.try_clone().map_err(fs_err)?;
    let lock = take_lock_named(&pd, &lock_file, &path.display().to_string(), path, opts)?;
    let took_over = lock
        .stale_holder()
        .map(|(h, why)| format!("took over {} from {} ({why})", path.display(), h.describe()));
    let (files, _) = ior_names(path, m.layout, m.threads);
    let g = Guard::<B> {
        target,
        root: pd,
        lock: Some(lock),
        lock_file,
    };
    let left = remove_ior_set(g, &parent, &m, &files);
    Ok(Some(Cleaned {
        set: format!(
            "the IOR front-end's {} file(s) {} and their marker",
            files.len(),
            if files.len() == 1 {
                path.display().to_string()
            } else {
                format!("{}…", files[0].display())
            }
        ),
        took_over,
        left,
    }))
}

/// For `clean`: TARGET, the working directory `TARGET/name` (`run`'s or
/// `meta`'s) and that directory held open, or `None` when there is none.
type Opened<B> = (<B as Backend>::Dir, PathBuf, <B as Backend>::Dir);
pub(crate) fn open_root_to_clean<B: Backend>(
    backend: &B,
    target: &Path,
    name: &str,
) -> Result<Option<Opened<B>>, Error> {
    let t = backend.open_target(target).map_err(fs_err)?;
    if t.stat_at(name).map_err(fs_err)?.is_none() {
        return Ok(None);
    }
    let rootd = t
        .open_dir_at(name, None)
        .map_err(|e| Error::Refused(format!("{e}; refusing to remove anything through it")))?;
    Ok(Some((t, target.join(name), rootd)))
}

/// `clean` refuses a working directory `root` without ioscale's marker.
pub(crate) fn no_marker(root: &Path) -> Error {
    Error::Refused(format!(
        "{} has no ioscale marker; refusing to remove anything in it",
        root.display()
    ))
}

/// The native set `target/ioscale.d`: `None` when it does not exist.
fn clean_native<B: Backend>(
    backend: &B,
    target: &Path,
    opts: safefs::LockOptions,
) -> Result<Option<Cleaned>, Error> {
    let Some((t, root, rootd)) = open_root_to_clean(backend, target, ROOT_NAME)? else {
        return Ok(None);
    };
    let Some(m) = read_any_marker_in(&rootd, MARKER_NAME.as_ref()) else {
        return Err(no_marker(&root));
    };
    if let Some(p) = m.problem() {
        return Err(bad_marker(&root.join(MARKER_NAME), &p));
    }
    check_root_id(&m, &rootd)?;
    let lock = take_lock_named(
        &rootd,
        &lock_name(MARKER_NAME),
        &root.display().to_string(),
        target,
        opts,
    )?;
    let took_over = lock
        .stale_holder()
        .map(|(h, why)| format!("took over {} from {} ({why})", root.display(), h.describe()));
    let left = remove_native(Guard::<B>::native(t, rootd, lock), &m);
    Ok(Some(Cleaned {
        set: format!("the data set {}", root.display()),
        took_over,
        left,
    }))
}

/// Checks, before the run, that the file system at `dir` takes O_DIRECT
/// transfers of `xfer` bytes, so a refusal is named before the run (on a
/// POSIX file system: [`probe_direct_on`]).
pub(crate) fn probe_direct(dir: &Path, xfer: u64) -> Result<usize, Error> {
    probe_direct_on(&Posix, dir, xfer)
}

/// [`probe_direct`] on `backend`: one transfer is written to an unnamed
/// file of the directory held open (`O_TMPFILE`: it never appears in the
/// directory and is freed when closed). A file system without one (FUSE,
/// NFS) gets a named scratch file instead (`.ioscale-probe-PID`, made
/// exclusively, so a name planted there, a link included, is never
/// written; removed only if it is still this very file).
pub(crate) fn probe_direct_on<B: Backend>(
    backend: &B,
    dir: &Path,
    xfer: u64,
) -> Result<usize, Error> {
    let d = open_to_probe(backend, dir)?;
    match probe_unnamed(&d, dir, xfer) {
        Some(r) => r,
        None => probe_named(&d, dir, xfer),
    }
}

/// [`probe_direct`] for a data run (on a POSIX file system:
/// [`probe_direct_for_on`]).
pub(crate) fn probe_direct_for(spec: &WorkloadSpec) -> Result<usize, Error> {
    probe_direct_for_on(&Posix, spec)
}

/// [`probe_direct_on`] for a data run. A run on files a front-end laid out
/// in the user's directory (fio's: `FileNaming::Dd` with `nofollow`) never
/// makes a name there: without an unnamed file it reads one transfer of
/// its own first file instead ([`user::probe_file`]).
pub(crate) fn probe_direct_for_on<B: Backend>(
    backend: &B,
    spec: &WorkloadSpec,
) -> Result<usize, Error> {
    let FileNaming::Dd {
        paths,
        nofollow: true,
        ..
    } = &spec.naming
    else {
        return probe_direct_on(backend, &spec.target, spec.xfer);
    };
    let d = open_to_probe(backend, &spec.target)?;
    if let Some(r) = probe_unnamed(&d, &spec.target, spec.xfer) {
        return r;
    }
    if let Some(first) = paths.first() {
        let at = spec.start_offsets.first().copied().unwrap_or(0);
        user::probe_file(backend, first, at, spec.xfer)?;
    }
    Ok(4096)
}

/// The directory a probe goes into, held; a backend without O_DIRECT is
/// refused first.
fn open_to_probe<B: Backend>(backend: &B, dir: &Path) -> Result<B::Dir, Error> {
    if !B::capabilities().direct {
        return Err(Error::Refused(format!(
            "--direct: the {} backend has no O_DIRECT",
            B::capabilities().name
        )));
    }
    backend
        .open_target(dir)
        .map_err(|e| direct_refused(dir, io_of(e)))
}

/// How a probe file is opened.
const PROBE: OpenHow = OpenHow {
    read: true,
    write: true,
    create: Create::Exclusive,
    truncate: false,
    append: false,
    direct: true,
    durability: engine::backend::Durability::Buffered,
};

/// The unnamed probe; `None` when the file system cannot make one.
fn probe_unnamed<D: Dir>(d: &D, dir: &Path, xfer: u64) -> Option<Result<usize, Error>> {
    match d.create_unnamed(PROBE) {
        Ok(None) => None,
        Ok(Some(file)) => {
            let r = probe_write(&file, dir, xfer);
            let _ = file.close();
            Some(r)
        }
        Err(e) => Some(Err(direct_refused(dir, io_of(e)))),
    }
}

/// The named probe of a file system without unnamed files.
fn probe_named<D: Dir>(d: &D, dir: &Path, xfer: u64) -> Result<usize, Error> {
    let name = format!(".ioscale-probe-{}", std::process::id());
    let (file, id) = d
        .create_with(&name, PROBE)
        .map_err(|e| direct_refused(dir, io_of(e)))?;
    let result = probe_write(&file, dir, xfer);
    let _ = file.close();
    let _ = d.unlink_at(&name, Some(id));
    result
}

/// The system's error of a backend error (a refusal as its text).
fn io_of(e: safefs::Error) -> std::io::Error {
    match e.kind {
        safefs::ErrorKind::Io(e) => e,
        safefs::ErrorKind::Refused(r) => std::io::Error::other(r.to_string()),
    }
}

/// Writes one transfer of the probe.
fn probe_write<F: DataFile>(file: &F, dir: &Path, xfer: u64) -> Result<usize, Error> {
    let len = xfer.min(1 << 20) as usize;
    let mut buf = engine::buf::AlignedBuf::new(len, 4096);
    buf.as_mut_slice().fill(0x5a);
    match file.write_at(buf.as_slice(), 0) {
        Ok(_) => Ok(4096),
        Err(e) => Err(transfer_refused(dir, xfer, e)),
    }
}

/// A probe file that could not be opened (or set) for O_DIRECT.
fn direct_refused(dir: &Path, e: std::io::Error) -> Error {
    Error::Refused(if e.raw_os_error() == Some(libc::EINVAL) {
        format!(
            "--direct: the file system at {} refuses O_DIRECT; run without --direct \
             (and mind the page cache) or test another file system",
            dir.display()
        )
    } else {
        format!(
            "--direct: cannot make a probe file in {}: {e}",
            dir.display()
        )
    })
}

/// A probe transfer the file system refused.
fn transfer_refused(dir: &Path, xfer: u64, e: std::io::Error) -> Error {
    Error::Refused(if e.raw_os_error() == Some(libc::EINVAL) {
        format!(
            "--direct: {} refuses O_DIRECT transfers of {}; use an --xfer that is a multiple of the \
             device block size (4k is safe)",
            dir.display(),
            format_size(xfer)
        )
    } else {
        format!("--direct: probe transfer in {} failed: {e}", dir.display())
    })
}
