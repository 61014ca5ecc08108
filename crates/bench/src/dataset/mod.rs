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
//! Every file-system mutation of a dataset lives in this module (the
//! metadata tree's in [`tree`]): directories made, the marker written and
//! removed, files created or truncated before a run, files unlinked and
//! directories removed after it, and the O_DIRECT probe file. The timed
//! I/O of the workload itself happens in the engine.

use std::fs;
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use spec::{format_size, FileNaming, Layout, WorkloadSpec};

use safefs::{lock_name, Access, DirHandle, Kind, Liveness, Remover, SetLock, TryLock};

use crate::error::Error;

pub mod tree;

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
}

fn pattern_default() -> bool {
    true
}

/// Which cleanup rules apply to a data set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetKind {
    /// `TARGET/ioscale.d` with the marker inside.
    Native,
    /// IOR names with a sidecar marker at this path.
    Sidecar(PathBuf),
    /// dd names: these files did not exist before this run.
    Dd(Vec<PathBuf>),
}

/// The data files of one run and what this run created.
#[derive(Debug)]
pub struct DataSet {
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
    pub guard: Option<Guard>,
}

/// What a native set's maker holds for the whole run: the target and the
/// working directory (every later step is relative to these handles, so a
/// name swapped under it is never followed) and the set's lock.
#[derive(Debug)]
pub struct Guard {
    target: DirHandle,
    root: DirHandle,
    lock: Option<SetLock>,
}

impl Drop for Guard {
    /// A kept set (or one left for `clean`) is released: its lock file goes
    /// too, so what is left is the data set and its marker alone.
    fn drop(&mut self) {
        if let Some(l) = self.lock.take() {
            let _ = l.remove(&self.root, lock_name(MARKER_NAME));
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
fn take_lock(root: &DirHandle, target: &Path) -> Result<SetLock, Error> {
    match SetLock::try_lock(root, lock_name(MARKER_NAME), &command_line()).map_err(fs_err)? {
        TryLock::Acquired(l) => Ok(l),
        TryLock::Held { holder, liveness } => Err(Error::Refused(format!(
            "{} is in use by {}{}; wait until it ends (or stop it) before using or cleaning {}",
            root.path().display(),
            holder
                .map(|h| h.describe())
                .unwrap_or_else(|| "another ioscale process".into()),
            if liveness == Liveness::Unknown {
                " on another host, which this host cannot check"
            } else {
                ""
            },
            target.display()
        ))),
    }
}

/// The marker in the held working directory, read without following a
/// link and at most 1 MiB.
fn read_marker_in(root: &DirHandle) -> Option<Marker> {
    use std::io::Read;
    let (f, _) = root.open_file_at(MARKER_NAME, Access::Read, None).ok()?;
    let mut text = Vec::new();
    f.take(1 << 20).read_to_end(&mut text).ok()?;
    let m: Marker = serde_json::from_slice(&text).ok()?;
    (m.tool == "ioscale").then_some(m)
}

fn write_marker_in(root: &DirHandle, m: &Marker) -> Result<(), safefs::Error> {
    let bytes = serde_json::to_vec_pretty(m).unwrap_or_default();
    safefs::replace_at(root, MARKER_NAME, &bytes).map(|_| ())
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
fn check_root_id(_m: &Marker, _root: &DirHandle) -> Result<(), Error> {
    Ok(())
}

/// Removes a native set through its held handles: the scheme's files,
/// ioscale's own temporary names, the per-worker directories (checked
/// against their recorded identities), then — when all of that is gone —
/// the marker, the lock and the working directory itself. Anything
/// swapped or foreign is left and named.
fn remove_native(mut g: Guard, m: &Marker) -> Vec<String> {
    let lock = g.lock.take();
    let (target, root) = (&g.target, &g.root);
    let (files, dirs) = names(Path::new(""), m.layout, m.threads);
    let mut r = Remover::new(root);
    for (d, id) in dirs.iter().zip(&m.dir_ids) {
        r.expect(d, *id);
    }
    for f in &files {
        r.file(f);
    }
    if let Ok(list) = root.list() {
        for n in list {
            if safefs::is_own_temp_name(&n) || n == OLD_MARKER_TEMP {
                r.file(n);
            }
        }
    }
    for d in dirs.iter().rev() {
        r.dir_entry(d);
    }
    let mut left: Vec<String>;
    let rep = r.finish();
    if rep.is_complete() {
        let mut r = Remover::new(root);
        r.file(MARKER_NAME);
        let rep = r.finish();
        left = rep.describe();
        if let Some(l) = lock {
            if let Err(e) = l.remove(root, lock_name(MARKER_NAME)) {
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
        left = rep.describe();
        left.push(format!(
            "the marker in {} is kept; `ioscale clean {}` removes the rest",
            root.path().display(),
            target.path().display()
        ));
        if let Some(l) = lock {
            let _ = l.remove(root, lock_name(MARKER_NAME));
        }
    }
    left
}

/// The marker's temporary name before ioscale used safefs.
const OLD_MARKER_TEMP: &str = ".ioscale-marker.tmp";

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

fn write_marker_at(path: &Path, m: &Marker) -> io::Result<()> {
    replace_file(
        path,
        &serde_json::to_vec_pretty(m).map_err(io::Error::other)?,
    )
}

/// Writes `bytes` as the file `path` (a meta tree's or IOR's marker): a
/// temporary file renamed over it, or — where the file system cannot
/// rename (some FUSE and object-store gateways: EROFS, ENOSYS, EPERM,
/// EXDEV, EOPNOTSUPP, EINVAL) — written in place and `fsync`ed. Unlike
/// [`safefs::replace_at`] the renamed file is not `fsync`ed, as these
/// markers never were (a target whose fsync fails is still one to test).
/// An existing `path` that is not a regular file is refused; no temporary
/// file is left, whatever fails.
pub(crate) fn replace_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let to_io = |e: safefs::Error| {
        let text = e.to_string();
        match e.kind {
            safefs::ErrorKind::Io(source) => source,
            _ => io::Error::other(text),
        }
    };
    let d = DirHandle::open(dir).map_err(to_io)?;
    if let Some(info) = d.stat_at(name).map_err(to_io)? {
        if info.kind != Kind::File {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} is a {}, not a regular file",
                    path.display(),
                    info.kind.name()
                ),
            ));
        }
    }
    let tmp = safefs::temp_name(name);
    let (mut f, _) = d.create_at(&tmp, 0o644).map_err(to_io)?;
    let written = io::Write::write_all(&mut f, bytes);
    drop(f);
    let result = match written {
        Ok(()) => match d.rename_at(&tmp, name) {
            Ok(()) => return Ok(()),
            Err(e) if e.raw_os_error().is_some_and(safefs::rename_unsupported) => {
                let _ = d.unlink_at(&tmp, None);
                return safefs::write_in_place(&d, name, bytes).map_err(to_io);
            }
            Err(e) => Err(to_io(e)),
        },
        Err(e) => Err(e),
    };
    let _ = d.unlink_at(&tmp, None);
    result
}

fn read_marker_at(path: &Path) -> Option<Marker> {
    let text = fs::read(path).ok()?;
    let m: Marker = serde_json::from_slice(&text).ok()?;
    (m.tool == "ioscale").then_some(m)
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

/// The sidecar marker of an IOR-named data set: `.NAME.ioscale-marker`
/// beside the `-o` path (hidden, so `ls` and `NAME.*` globs skip it).
pub fn ior_marker_path(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    parent_of(path).join(format!(".{name}.ioscale-marker"))
}

impl DataSet {
    /// Prepares the working directory for `spec`.
    ///
    /// A run that writes creates `ioscale.d` (or reuses one a kept run with
    /// the same layout left). A run that only reads needs such a kept data
    /// set with matching layout, worker count and size.
    pub fn prepare(spec: &WorkloadSpec, run_id: &str) -> Result<DataSet, Error> {
        match &spec.naming {
            FileNaming::Native => {}
            FileNaming::Ior { path } => return prepare_ior(spec, path, run_id),
            FileNaming::Dd { paths, notrunc } => return prepare_dd(spec, paths, *notrunc, run_id),
        }
        let root = spec.target.join(ROOT_NAME);
        let writes = spec.ops.iter().any(|o| o.writes());
        let (files, dirs) = names(&root, spec.layout, spec.threads);
        let mut want = Marker {
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
        };
        // Everything below TARGET goes through held handles: a name
        // swapped for a link or another directory is refused, never
        // followed.
        let target = DirHandle::open_target(&spec.target).map_err(fs_err)?;
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
                let rootd = target.open_dir_at(ROOT_NAME, None).map_err(fs_err)?;
                let Some(found) = read_marker_in(&rootd) else {
                    return Err(Error::Refused(format!(
                        "{} exists but has no ioscale marker, so ioscale did not make it; \
                         refusing to touch it (remove it yourself or choose another target)",
                        root.display()
                    )));
                };
                check_root_id(&found, &rootd)?;
                let lock = take_lock(&rootd, &spec.target)?;
                if !readable_by(&found, spec, writes) {
                    return Err(Error::Refused(format!(
                        "{} holds files kept by an earlier run with --layout {} and --threads {}; \
                         use the same flags to read them, or run `ioscale clean {}` first",
                        root.display(),
                        found.layout,
                        found.threads,
                        spec.target.display()
                    )));
                }
                let had_data = found.complete && found.file_size >= spec.file_size();
                if !writes && !had_data {
                    return Err(Error::Refused(format!(
                        "the kept files in {} are incomplete or smaller ({} bytes per file) than this run reads ({}); \
                         write them again with --keep and the same sizes",
                        root.display(),
                        found.file_size,
                        spec.file_size()
                    )));
                }
                // With --verify a file cut short is damaged data, which the
                // read phase reports (exit 1) at the offset where it ends.
                if !writes && !spec.verify {
                    for f in &files {
                        let len = fs::metadata(f).map(|m| m.len()).unwrap_or(0);
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
                let mut found = found;
                if writes && found.pattern && !(spec.verify && spec.seed == found.seed) {
                    // This run's writes replace the pattern: say so before
                    // the first byte, so a run cut short leaves no marker
                    // claiming a pattern the files no longer hold.
                    found.pattern = false;
                    write_marker_in(&rootd, &found).map_err(|e| {
                        io_err(format!("cannot write the marker in {}", root.display()), e)
                    })?;
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
                    guard: Some(Guard {
                        target,
                        root: rootd,
                        lock: Some(lock),
                    }),
                })
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
                let rootd = target.mkdir_at(ROOT_NAME, 0o755).map_err(fs_err)?;
                want.root_id = Some(rootd.id());
                // The marker goes down before anything else; a failed
                // write leaves no temporary file, and the directory this
                // run made goes again.
                if let Err(e) = write_marker_in(&rootd, &want) {
                    let _ = target.rmdir_at(ROOT_NAME, Some(rootd.id()));
                    return Err(io_err(
                        format!("cannot write the marker in {}", root.display()),
                        e,
                    ));
                }
                let lock = match take_lock(&rootd, &spec.target) {
                    Ok(l) => l,
                    Err(e) => {
                        // Another process locked the set we just made:
                        // it is no longer ours alone to remove.
                        return Err(e);
                    }
                };
                let mut ds = DataSet {
                    root: root.clone(),
                    created_root: true,
                    files,
                    dirs,
                    marker: want,
                    had_data: false,
                    kind: SetKind::Native,
                    guard: Some(Guard {
                        target,
                        root: rootd,
                        lock: Some(lock),
                    }),
                };
                let mut made = Ok(());
                if let Some(g) = &ds.guard {
                    for i in 0..ds.dirs.len() {
                        match g.root.mkdir_at(dir_name(i), 0o755) {
                            Ok(h) => ds.marker.dir_ids.push(h.id()),
                            Err(e) => {
                                made = Err(fs_err(e));
                                break;
                            }
                        }
                    }
                    if made.is_ok() && !ds.marker.dir_ids.is_empty() {
                        if let Err(e) = write_marker_in(&g.root, &ds.marker) {
                            made = Err(io_err(
                                format!("cannot write the marker in {}", root.display()),
                                e,
                            ));
                        }
                    }
                }
                if let Err(e) = made {
                    ds.remove();
                    return Err(e);
                }
                Ok(ds)
            }
        }
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
        match &self.kind {
            SetKind::Native => {
                // Only the rank that made the set holds it.
                if let Some(g) = &self.guard {
                    let _ = write_marker_in(&g.root, &self.marker);
                }
            }
            SetKind::Sidecar(p) => {
                let _ = write_marker_at(p, &self.marker);
            }
            SetKind::Dd(_) => {}
        }
    }

    /// Where the workers open each data file: the held working directory
    /// (or per-worker directory, opened now through it and checked against
    /// the identity recorded at its creation) and the file's name, so a
    /// path swapped for a link or another directory after setup is never
    /// followed. Empty where this process holds no handles (the other
    /// ranks of an MPI run, IOR and dd names): the workers open by path.
    pub fn anchors(&self) -> Result<Vec<Option<engine::FileAnchor>>, Error> {
        use std::os::fd::AsFd;
        let (SetKind::Native, Some(g)) = (&self.kind, &self.guard) else {
            return Ok(Vec::new());
        };
        let hold = |h: &DirHandle| -> Result<std::sync::Arc<std::os::fd::OwnedFd>, Error> {
            h.as_fd()
                .try_clone_to_owned()
                .map(std::sync::Arc::new)
                .map_err(|source| Error::Setup {
                    what: format!("cannot hold {} open", h.path().display()),
                    source,
                })
        };
        let root = hold(&g.root)?;
        let mut out = Vec::with_capacity(self.files.len());
        for (i, f) in self.files.iter().enumerate() {
            let name = {
                use std::os::unix::ffi::OsStrExt;
                std::ffi::CString::new(f.file_name().unwrap_or_default().as_bytes()).map_err(
                    |_| Error::Refused(format!("{}: a name with a NUL byte", f.display())),
                )?
            };
            let dir = if self.dirs.is_empty() {
                root.clone()
            } else {
                let expected = self.marker.dir_ids.get(i).copied();
                let d = g.root.open_dir_at(dir_name(i), expected).map_err(fs_err)?;
                hold(&d)?
            };
            out.push(Some(engine::FileAnchor { dir, name }));
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
        if self.marker.complete {
            self.marker.complete = false;
            match &self.kind {
                SetKind::Native => {
                    if let Some(g) = &self.guard {
                        let _ = write_marker_in(&g.root, &self.marker);
                    }
                }
                SetKind::Sidecar(p) => {
                    let _ = write_marker_at(p, &self.marker);
                }
                SetKind::Dd(_) => {}
            }
        }
        if let (SetKind::Native, Some(g)) = (&self.kind, &self.guard) {
            let mut r = Remover::new(&g.root);
            for (i, id) in self.marker.dir_ids.iter().enumerate() {
                r.expect(dir_name(i), *id);
            }
            for f in &self.files {
                r.file(f.strip_prefix(&self.root).unwrap_or(f));
            }
            return r.finish().describe();
        }
        remove_files(&self.files)
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
            SetKind::Sidecar(_) if spec.keep => Some(format!(
                "kept {} file(s) starting {} (an `ioscale ior` run with the same -o and without -k \
                 removes them)",
                self.files.len(),
                self.files.first().map(|f| f.display().to_string()).unwrap_or_default()
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
            SetKind::Sidecar(marker) => {
                let mut left = remove_files(&self.files);
                for d in &self.marker.dirs_created {
                    match fs::remove_dir(d) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                        Err(e) => left.push(format!(
                            "{}: {e} (it holds files ioscale did not create; they were left alone)",
                            d.display()
                        )),
                    }
                }
                let mut tmp = marker.as_os_str().to_owned();
                tmp.push(".tmp");
                let _ = fs::remove_file(PathBuf::from(tmp));
                if left.is_empty() {
                    let _ = fs::remove_file(marker);
                }
                left
            }
            SetKind::Dd(created) => remove_files(created),
        }
    }
}

/// Whether a kept set written as `found` serves a run of `spec`: the same
/// layout and worker count; a read may also use fewer workers (a shared
/// file read by fewer tasks, or the first of the per-task files), as IOR
/// reads what fewer tasks ask for. A write with another count replaces it.
fn readable_by(found: &Marker, spec: &WorkloadSpec, writes: bool) -> bool {
    found.layout == spec.layout
        && (found.threads == spec.threads || (!writes && found.threads > spec.threads))
}

fn remove_files(files: &[PathBuf]) -> Vec<String> {
    let mut left = Vec::new();
    for f in files {
        match fs::remove_file(f) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => left.push(format!("{}: {e}", f.display())),
        }
    }
    left
}

/// Checks that every file exists, is a regular file and holds at least
/// `size` bytes (what a read-only run needs).
fn check_readable(files: &[PathBuf], size: u64, hint: &str) -> Result<(), Error> {
    for f in files {
        match fs::metadata(f) {
            Ok(m) if m.is_file() => {
                if m.len() < size {
                    return Err(Error::Refused(format!(
                        "{} holds {} bytes but this run reads {size}; {hint}",
                        f.display(),
                        m.len()
                    )));
                }
            }
            Ok(_) => {
                return Err(Error::Refused(format!(
                    "{} is not a regular file; ioscale reads regular files only",
                    f.display()
                )))
            }
            Err(e) => {
                return Err(Error::Refused(format!(
                    "nothing to read at {}: {e}; {hint}",
                    f.display()
                )))
            }
        }
    }
    Ok(())
}

/// IOR naming: see [`ior_names`] and [`ior_marker_path`].
fn prepare_ior(spec: &WorkloadSpec, path: &Path, run_id: &str) -> Result<DataSet, Error> {
    let writes = spec.ops.iter().any(|o| o.writes());
    let (files, dirs) = ior_names(path, spec.layout, spec.threads);
    let marker_path = ior_marker_path(path);
    let root = parent_of(path);
    let hint = "write the files first with `ioscale ior -w -k` and the same -b/-s/-N/-F/-u";
    let mut found = read_marker_at(&marker_path);
    if let Some(old) = found
        .as_ref()
        .filter(|m| writes && (m.layout != spec.layout || m.threads != spec.threads))
    {
        // A write with another task count or layout replaces the kept set,
        // as IOR would overwrite it; the old names ioscale made go first so
        // none is left behind unrecognised.
        let (old_files, old_dirs) = ior_names(path, old.layout, old.threads);
        let mut old_set = DataSet {
            root: root.clone(),
            created_root: true,
            files: old_files,
            dirs: old_dirs,
            marker: old.clone(),
            had_data: false,
            kind: SetKind::Sidecar(marker_path.clone()),
            guard: None,
        };
        let left = old_set.remove();
        if !left.is_empty() {
            return Err(Error::Refused(format!(
                "cannot replace the files kept at {}: {}",
                path.display(),
                left.join("; ")
            )));
        }
        found = None;
    }
    if let Some(found) = found {
        if !readable_by(&found, spec, writes) {
            return Err(Error::Refused(format!(
                "{} were written by an earlier `ioscale ior -k` run with {} task(s) and {} files; \
                 use the same -N/-F/-u to read them (a run with those flags and no -k removes them)",
                path.display(),
                found.threads,
                found.layout
            )));
        }
        let had_data = found.complete
            && found.file_size >= spec.file_size()
            && check_readable(&files, spec.file_size(), hint).is_ok();
        if !writes && !had_data {
            check_readable(&files, spec.file_size(), hint)?;
            return Err(Error::Refused(format!(
                "the kept files at {} are incomplete or smaller than this run reads; {hint}",
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
        // Fewer readers than writers read the first files only; the set
        // still holds all of them, so a run without -k removes them all.
        let files = if found.threads > spec.threads && spec.layout != Layout::Shared {
            ior_names(path, found.layout, found.threads).0
        } else {
            files
        };
        let mut marker = found;
        if writes {
            // This run's writes replace the pattern unless they write the
            // same one: recorded before the first byte.
            marker.pattern &= spec.verify && spec.seed == marker.seed;
            make_ior_dirs(&dirs, &mut marker)?;
            let _ = write_marker_at(&marker_path, &marker);
        }
        return Ok(DataSet {
            root,
            created_root: true,
            files,
            dirs,
            marker,
            had_data,
            kind: SetKind::Sidecar(marker_path),
            guard: None,
        });
    }
    let mut marker = Marker {
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
    };
    if !writes {
        // Files another tool (or a real IOR) wrote: read them, never remove them.
        check_readable(&files, spec.file_size(), hint)?;
        return Ok(DataSet {
            root,
            created_root: false,
            files,
            dirs,
            marker,
            had_data: true,
            kind: SetKind::Sidecar(marker_path),
            guard: None,
        });
    }
    for f in &files {
        if fs::symlink_metadata(f).is_ok() {
            return Err(Error::Refused(format!(
                "{} exists and ioscale did not make it (no marker {}); refusing to overwrite it. \
                 Remove it yourself or choose another -o",
                f.display(),
                marker_path.display()
            )));
        }
    }
    if fs::symlink_metadata(&marker_path).is_ok() {
        return Err(Error::Refused(format!(
            "{} exists but is not a valid ioscale marker; refusing to touch it",
            marker_path.display()
        )));
    }
    // The marker goes down before any data file, so an interrupted run
    // still leaves files ioscale recognises.
    write_marker_at(&marker_path, &marker).map_err(|e| {
        Error::io(
            format!("cannot write the marker {}", marker_path.display()),
            e,
        )
    })?;
    let made = make_ior_dirs(&dirs, &mut marker);
    let mut ds = DataSet {
        root,
        created_root: true,
        files,
        dirs,
        marker,
        had_data: false,
        kind: SetKind::Sidecar(marker_path.clone()),
        guard: None,
    };
    if let Err(e) = made {
        ds.remove();
        return Err(e);
    }
    if !ds.marker.dirs_created.is_empty() {
        let _ = write_marker_at(&marker_path, &ds.marker);
    }
    Ok(ds)
}

/// Creates IOR's per-task directories that do not exist yet, recording
/// them in the marker; existing ones must be directories.
fn make_ior_dirs(dirs: &[PathBuf], marker: &mut Marker) -> Result<(), Error> {
    for d in dirs {
        match fs::create_dir(d) {
            Ok(()) => {
                if !marker.dirs_created.contains(d) {
                    marker.dirs_created.push(d.clone());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if !d.is_dir() {
                    return Err(Error::Refused(format!(
                        "{} exists and is not a directory; IOR -u needs it as the directory of task files",
                        d.display()
                    )));
                }
            }
            Err(e) => return Err(Error::io(format!("cannot create {}", d.display()), e)),
        }
    }
    Ok(())
}

/// dd naming: the user's own files, handled as dd handles them.
fn prepare_dd(
    spec: &WorkloadSpec,
    paths: &[PathBuf],
    notrunc: bool,
    run_id: &str,
) -> Result<DataSet, Error> {
    let writes = spec.ops.iter().any(|o| o.writes());
    let marker = Marker {
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
    };
    let root = paths.first().map(|p| parent_of(p)).unwrap_or_default();
    if !writes {
        check_readable(
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
            kind: SetKind::Dd(Vec::new()),
            guard: None,
        });
    }
    let mut created = Vec::new();
    for p in paths {
        match fs::metadata(p) {
            Ok(m) if m.is_file() => {
                if !notrunc {
                    // dd opens of= with O_TRUNC unless conv=notrunc.
                    fs::OpenOptions::new()
                        .write(true)
                        .truncate(true)
                        .open(p)
                        .map_err(|e| Error::io(format!("cannot truncate {}", p.display()), e))?;
                }
            }
            Ok(_) => {
                return Err(Error::Refused(format!(
                    "of={} is not a regular file; ioscale dd writes regular files only",
                    p.display()
                )))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => created.push(p.clone()),
            Err(e) => return Err(Error::io(format!("cannot inspect {}", p.display()), e)),
        }
    }
    Ok(DataSet {
        root,
        created_root: true,
        files: paths.to_vec(),
        dirs: Vec::new(),
        marker,
        had_data: false,
        kind: SetKind::Dd(created),
        guard: None,
    })
}

/// Removes what a kept run left in `target`, recognised by the marker.
///
/// A working directory that is a link, or not the one its marker
/// recorded, is refused; a set a live run holds is refused naming it; a
/// set whose holder is gone is taken over and removed.
pub fn clean(target: &Path) -> Result<Vec<String>, Error> {
    let root = target.join(ROOT_NAME);
    let t = DirHandle::open_target(target).map_err(fs_err)?;
    if t.stat_at(ROOT_NAME).map_err(fs_err)?.is_none() {
        return Err(Error::Refused(format!(
            "nothing to clean: {} does not exist",
            root.display()
        )));
    }
    let rootd = t
        .open_dir_at(ROOT_NAME, None)
        .map_err(|e| Error::Refused(format!("{e}; refusing to remove anything through it")))?;
    let Some(m) = read_marker_in(&rootd) else {
        return Err(Error::Refused(format!(
            "{} has no ioscale marker; refusing to remove anything in it",
            root.display()
        )));
    };
    check_root_id(&m, &rootd)?;
    let lock = take_lock(&rootd, target)?;
    // A stale holder (its process is gone) was taken over by take_lock.
    Ok(remove_native(
        Guard {
            target: t,
            root: rootd,
            lock: Some(lock),
        },
        &m,
    ))
}

/// Opens a scratch file with O_DIRECT and writes one transfer, so a file
/// system that refuses O_DIRECT or this alignment is named before the run.
pub(crate) fn probe_direct(dir: &Path, xfer: u64) -> Result<usize, Error> {
    let probe = dir.join(format!(".ioscale-probe-{}", std::process::id()));
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe);
    let file = match file {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            return Err(Error::Refused(format!(
                "--direct: the file system at {} refuses O_DIRECT; run without --direct \
                 (and mind the page cache) or test another file system",
                dir.display()
            )))
        }
        Err(e) => {
            return Err(Error::Refused(format!(
                "--direct: cannot create a probe file in {}: {e}",
                dir.display()
            )))
        }
    };
    let mut result = Ok(4096);
    let len = xfer.min(1 << 20) as usize;
    let mut buf = engine::buf::AlignedBuf::new(len, 4096);
    buf.as_mut_slice().fill(0x5a);
    if let Err(e) = file.write_at(buf.as_slice(), 0) {
        result = Err(Error::Refused(if e.raw_os_error() == Some(libc::EINVAL) {
            format!(
                "--direct: {} refuses O_DIRECT transfers of {}; use an --xfer that is a multiple of the \
                 device block size (4k is safe)",
                dir.display(),
                format_size(xfer)
            )
        } else {
            format!("--direct: probe write in {} failed: {e}", dir.display())
        }));
    }
    drop(file);
    let _ = std::fs::remove_file(&probe);
    result
}
