//! One thread's share of one metadata phase: a system call or a few per
//! file, timed one by one.
//!
//! The loop never holds a list of files: names are recomputed from
//! (thread, index) into one reusable buffer, and every call is made
//! relative to a held directory of the storage backend (POSIX: `openat`,
//! `fstatat`, `unlinkat`, … on a descriptor), so one component is resolved
//! per operation and memory does not grow with the file count. The
//! directory changes only when the index crosses into the next hashed
//! directory. The loop is generic over the backend ([`Backend`]): each
//! operation is the backend's call, resolved at compile time. State is
//! owned by the worker; peers learn about it only through the relaxed
//! atomics of [`PhaseControl`].

use std::ffi::CStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use spec::{EntryKind, MetaOp, MetaSpec, TreeState};
use stats::LatencyHistogram;

use crate::backend::posix::Posix;
use crate::backend::{Backend, Create, DataFile, Kind, OpenHow};
use crate::buf::AlignedBuf;
use crate::pattern;
use crate::series::Recorder;
use crate::worker::{IoFailure, PhaseControl};

/// Name of the extended attribute `setxattr` writes and `getxattr` reads.
pub const XATTR_NAME: &CStr = c"user.ioscale";
/// Bytes of the extended attribute's value.
pub const XATTR_LEN: usize = 32;

/// Everything the threads of one metadata phase share, on backend `B`
/// (POSIX unless named).
#[derive(Debug, Clone)]
pub struct MetaPlan<'a, B: Backend = Posix> {
    /// Shape and names.
    pub spec: &'a MetaSpec,
    /// The operation.
    pub op: MetaOp,
    /// The working root (`TARGET/ioscale-meta.d`).
    pub root: PathBuf,
    /// Repetition number.
    pub rep: u32,
    /// Which entries may exist (decides the names `delete` and `cleanup`
    /// use, and which kinds `cleanup` tries).
    pub state: TreeState,
    /// Indices to process per thread; `None` = `spec.files` each.
    pub limit: Option<Vec<u64>>,
    /// Whether `--time` applies (not for untimed layout and teardown).
    pub timed: bool,
    /// The working root, held open by the caller for the whole run. When
    /// set, each thread's directory is opened relative to it, never
    /// through a link ([`Backend::open_beneath`]), so the root's name is
    /// never resolved again: a link swapped in for it between phases is
    /// not followed. `root` then only names paths in messages; without it
    /// the root is opened by that path ([`Backend::at_path`]).
    pub root_dir: Option<Arc<B::At>>,
    /// For the cleanup of a kept tree: when it was kept (`st_ctime`,
    /// `st_ctime_nsec`, by the file system's clock). An entry whose status
    /// changed after it — a file a user put under an ioscale name, a hard
    /// link to one — is left alone and counted in `left`. A directory
    /// whose own status has not changed since holds exactly the entries
    /// it held then (every entry made, removed or renamed in it changes
    /// it), so only the entries of changed directories are looked at one
    /// by one: a stat per directory, not per file.
    pub kept_before: Option<(i64, i64)>,
    /// The intervals each thread records its share of the phase's series
    /// on ([`MetaSample::series`]); `None`: no series.
    pub series: Option<crate::series::SeriesGrid>,
}

impl<B: Backend> MetaPlan<'_, B> {
    /// Indices thread `w` processes.
    pub fn count_for(&self, w: u32) -> u64 {
        match &self.limit {
            Some(l) => l.get(w as usize).copied().unwrap_or(0),
            None => self.spec.files,
        }
    }

    /// The base directory of thread `w`.
    pub fn base_dir(&self, w: u32) -> PathBuf {
        match self.spec.thread_dir(w) {
            Some(d) => self.root.join(d),
            None => self.root.clone(),
        }
    }
}

/// What one thread measured in one metadata phase. Times are nanoseconds
/// since the phase's common epoch.
#[derive(Debug, Clone)]
pub struct MetaSample {
    /// Thread index.
    pub worker: u32,
    /// Files (entries) processed successfully.
    pub files: u64,
    /// Indices attempted, including a failed one: what cleanup must cover.
    pub touched: u64,
    /// Data system calls (reads and writes that moved bytes).
    pub records: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Operations that failed.
    pub errors: u64,
    /// Entries cleanup had to leave: a directory holding foreign files, or
    /// an entry put under an ioscale name after the tree was kept.
    pub left: u64,
    /// First entry left, for the note.
    pub first_left: Option<PathBuf>,
    /// Latency of every processed file.
    pub hist: LatencyHistogram,
    /// Before the first operation.
    pub start_ns: u64,
    /// After the last.
    pub end_ns: u64,
    /// Files done when the first thread finished (or the deadline struck).
    pub stonewall_files: u64,
    /// Bytes done by then.
    pub stonewall_bytes: u64,
    /// Stopped by the time limit.
    pub hit_deadline: bool,
    /// The error that stopped it.
    pub failure: Option<IoFailure>,
    /// Stopped because the first thread had finished (`stop_at_first`).
    pub stonewalled: bool,
    /// Time this thread spent in the phase's closing syncfs (the one
    /// thread that made it), ns.
    pub sync_ns: u64,
    /// Bytes read and compared with the verify pattern.
    pub checked_bytes: u64,
    /// Bytes that differed from it (or were missing: a short file).
    pub bad_bytes: u64,
    /// Files with a mismatch: path, first bad offset, bad bytes (the first
    /// [`MAX_MISMATCHES`] files of this thread).
    pub mismatches: Vec<(PathBuf, u64, u64)>,
    /// Entries that matched a find's criteria (0 in other phases).
    pub matched: u64,
    /// This thread's share of the phase's per-interval series, when the
    /// plan has a grid ([`MetaPlan::series`]).
    pub series: Option<stats::Series>,
}

/// Files with a data mismatch listed per thread; the rest are counted.
pub const MAX_MISMATCHES: usize = 16;

impl MetaSample {
    pub(crate) fn new(worker: u32) -> Self {
        MetaSample {
            worker,
            files: 0,
            touched: 0,
            records: 0,
            read_bytes: 0,
            write_bytes: 0,
            errors: 0,
            left: 0,
            first_left: None,
            hist: LatencyHistogram::new(),
            start_ns: 0,
            end_ns: 0,
            stonewall_files: 0,
            stonewall_bytes: 0,
            hit_deadline: false,
            failure: None,
            stonewalled: false,
            sync_ns: 0,
            checked_bytes: 0,
            bad_bytes: 0,
            mismatches: Vec::new(),
            matched: 0,
            series: None,
        }
    }

    /// Bytes moved either way.
    pub fn bytes(&self) -> u64 {
        self.read_bytes + self.write_bytes
    }
}

pub(crate) fn ns_since(epoch: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(epoch).as_nanos() as u64
}

/// Whether an error number means "stop: the system, not this file, is the
/// problem" — named in the error so the user knows what ran out.
pub fn errno_hint(errno: i32) -> Option<&'static str> {
    match errno {
        libc::ENOSPC => Some("the file system is out of space or inodes"),
        libc::EDQUOT => Some("a disk quota is exhausted"),
        libc::EMFILE => Some("the process ran out of file descriptors (raise `ulimit -n`)"),
        libc::ENFILE => Some("the system ran out of file descriptors"),
        libc::ENAMETOOLONG => {
            Some("a name is longer than this file system allows (shorten --prefix)")
        }
        libc::EACCES | libc::EPERM => Some("permission denied"),
        libc::EROFS => Some("the file system is read-only"),
        libc::ENOTSUP => Some("this file system does not support the operation (user xattrs?)"),
        _ => None,
    }
}

/// How the phase's operation opens a file (`None`: it opens none).
pub(crate) fn open_how(op: MetaOp, spec: &MetaSpec) -> Option<OpenHow> {
    let write = OpenHow {
        write: true,
        direct: spec.direct,
        ..OpenHow::default()
    };
    Some(match op {
        MetaOp::Create => OpenHow {
            create: Create::Exclusive,
            ..write
        },
        MetaOp::Append => OpenHow {
            append: true,
            ..write
        },
        MetaOp::Overwrite => write,
        MetaOp::TruncateOverwrite => OpenHow {
            truncate: true,
            ..write
        },
        MetaOp::Read => OpenHow {
            read: true,
            direct: spec.direct,
            ..OpenHow::default()
        },
        _ => return None,
    })
}

/// The worker's reusable buffers and open directories.
pub(crate) struct Cursor<'p, 'a, B: Backend = Posix> {
    pub(crate) plan: &'p MetaPlan<'a, B>,
    /// The thread whose entries this one works on (itself unless
    /// `--stride` redirects the phase).
    pub(crate) w: u32,
    pub(crate) base: B::At,
    /// Full path of the base directory, with a trailing '/'.
    pub(crate) base_path: Vec<u8>,
    /// Directory node the `dir` descriptor is open on.
    pub(crate) node: u64,
    pub(crate) dir: Option<B::At>,
    /// Path of `node` relative to base, NUL-terminated when used.
    pub(crate) node_rel: Vec<u8>,
    /// Entry name, NUL-terminated.
    pub(crate) name: Vec<u8>,
    /// Length of `name`'s stem (everything before the index) for
    /// `stem_kind`, so the next name only rewrites the digits.
    pub(crate) stem_len: usize,
    /// The entry kind whose stem `name` holds.
    pub(crate) stem_kind: Option<EntryKind>,
    /// Second entry name (rename target, link name), NUL-terminated.
    pub(crate) name2: Vec<u8>,
    /// Full path of `name` (mdtest's calls), NUL-terminated.
    pub(crate) full: Vec<u8>,
    /// The backend's flags for the phase's opens (made once).
    pub(crate) flags: B::Flags,
    pub(crate) buf: AlignedBuf,
    /// The node whose directory was last compared with
    /// [`MetaPlan::kept_before`], and whether it changed since.
    pub(crate) sealed: Option<(u64, bool)>,
    /// The thread's share of the phase's series.
    pub(crate) series: Recorder,
}

/// Failure of one call: which call and its error.
pub(crate) struct OpErr {
    pub(crate) call: &'static str,
    pub(crate) err: io::Error,
    /// Whether the second name was the one involved.
    pub(crate) second: bool,
    /// File offset of a failed read or write, when known.
    pub(crate) offset: Option<u64>,
}

type OpResult = Result<(), OpErr>;

pub(crate) fn fail(call: &'static str) -> impl FnOnce(io::Error) -> OpErr {
    move |err| OpErr {
        call,
        err,
        second: false,
        offset: None,
    }
}

impl<B: Backend> Cursor<'_, '_, B> {
    /// The directory the current node's entries are named in.
    #[inline]
    pub(crate) fn at(&self) -> &B::At {
        self.dir.as_ref().unwrap_or(&self.base)
    }

    /// Full path of the current directory joined with `name` (without NUL).
    pub(crate) fn path_of(&self, name: &[u8]) -> PathBuf {
        let mut p = self.base_path.clone();
        if !self.node_rel.is_empty() {
            p.extend_from_slice(self.node_rel.strip_suffix(b"\0").unwrap_or(&self.node_rel));
            p.push(b'/');
        }
        p.extend_from_slice(name.strip_suffix(b"\0").unwrap_or(name));
        PathBuf::from(std::ffi::OsStr::from_bytes(&p))
    }

    /// The kind of `name`: by its full path from the start with mdtest's
    /// calls (stat(2) of `base/node/name`, as mdtest stats), else looked
    /// up in the held directory. The path is built in a reused buffer.
    fn stat_name(&mut self) -> OpResult {
        if !self.plan.spec.mdtest_calls {
            return B::lstat(self.at(), &self.name)
                .map(|_| ())
                .map_err(fail("stat"));
        }
        self.full.clear();
        self.full.extend_from_slice(&self.base_path);
        if !self.node_rel.is_empty() {
            let node = self.node_rel.strip_suffix(b"\0").unwrap_or(&self.node_rel);
            self.full.extend_from_slice(node);
            self.full.push(b'/');
        }
        self.full.extend_from_slice(&self.name);
        B::lstat_full(&self.full).map(|_| ()).map_err(fail("stat"))
    }

    /// Sets `node_rel` to the path of `node` (empty for the base node).
    pub(crate) fn set_node_rel(&mut self, node: u64) {
        self.node_rel.clear();
        if node != 0 {
            self.plan.spec.push_node_path(&mut self.node_rel, node);
            self.node_rel.push(0);
        }
    }

    /// Runs `f` with `node_rel` naming `node` (for a path to report about a
    /// request in another directory than the current one), then puts the
    /// current one back.
    pub(crate) fn in_node<R>(&mut self, node: u64, f: impl FnOnce(&mut Self) -> R) -> R {
        if node == self.node {
            return f(self);
        }
        let here = std::mem::take(&mut self.node_rel);
        self.set_node_rel(node);
        let r = f(self);
        self.node_rel = here;
        r
    }

    /// Makes `node`, whose descriptor is `dir` (`None` for the base node),
    /// the current directory, returning the one it replaces.
    pub(crate) fn swap_dir(&mut self, node: u64, dir: Option<B::At>) -> (u64, Option<B::At>) {
        let old = (self.node, std::mem::replace(&mut self.dir, dir));
        self.node = node;
        self.set_node_rel(node);
        old
    }

    /// Moves the directory descriptor to `node`, creating it first when the
    /// phase creates entries. Returns `Ok(false)` when the node does not
    /// exist and `missing_ok`.
    pub(crate) fn enter(
        &mut self,
        node: u64,
        create: bool,
        missing_ok: bool,
    ) -> Result<bool, OpErr> {
        self.dir = None;
        self.node = node;
        self.node_rel.clear();
        if node == 0 {
            return Ok(true);
        }
        self.plan.spec.push_node_path(&mut self.node_rel, node);
        self.node_rel.push(0);
        let base = &self.base;
        if create {
            match B::mkdir_beneath(base, &self.node_rel, 0o755) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
                // With --leaf-depth the nodes above the leaves hold no
                // entries, so nothing made them yet: make them, top down.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                    let mut part = Vec::with_capacity(self.node_rel.len());
                    for (k, &c) in self.node_rel.iter().enumerate() {
                        if c == b'/' || c == 0 {
                            part.clear();
                            part.extend_from_slice(&self.node_rel[..k]);
                            part.push(0);
                            match B::mkdir_beneath(base, &part, 0o755) {
                                Ok(()) => {}
                                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
                                Err(e) => return Err(fail("mkdir")(e)),
                            }
                        }
                    }
                }
                Err(e) => return Err(fail("mkdir")(e)),
            }
        }
        match B::open_beneath(base, &self.node_rel) {
            Ok(fd) => {
                self.dir = Some(fd);
                Ok(true)
            }
            Err(e) if missing_ok && e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
            Err(e) => Err(fail("open dir")(e)),
        }
    }

    pub(crate) fn set_name(&mut self, kind: EntryKind, i: u64) {
        // Only the index changes from one file to the next: keep the stem
        // (`{prefix}{letter}{thread}.`) and rewrite the digits.
        if self.stem_kind != Some(kind) {
            self.name.clear();
            self.plan.spec.push_name(&mut self.name, kind, self.w, 0);
            let digits = 1; // the `0` just written
            self.stem_len = self.name.len() - digits;
            self.stem_kind = Some(kind);
        }
        self.name.truncate(self.stem_len);
        spec::meta::push_u64(&mut self.name, i);
        self.name.push(0);
    }

    pub(crate) fn set_name2(&mut self, kind: EntryKind, i: u64) {
        self.name2.clear();
        self.plan.spec.push_name(&mut self.name2, kind, self.w, i);
        self.name2.push(0);
    }

    /// Writes `size` bytes in records; counts records and bytes. A failed
    /// write names its file offset unless the file was opened to append
    /// (`append`), where the offset is wherever the file ended.
    /// With `--verify` each record carries the pattern of (file, offset),
    /// `start` being the file offset of the first byte (the end of the
    /// file for an append).
    fn write_all(
        &mut self,
        file: &mut B::File,
        size: u64,
        append: bool,
        start: u64,
        i: u64,
        s: &mut MetaSample,
    ) -> OpResult {
        let rec = self.buf.len() as u64;
        let spec = self.plan.spec;
        let id = spec.file_id(self.w, i);
        let mut left = size;
        while left > 0 {
            let n = left.min(rec) as usize;
            if spec.verify {
                pattern::fill(
                    &mut self.buf.as_mut_slice()[..n],
                    spec.seed,
                    id,
                    start + size - left,
                );
            }
            let at_off = (!append).then_some(size - left);
            let failed = |err| OpErr {
                offset: at_off,
                ..fail("write")(err)
            };
            let done = file.write(&self.buf.as_slice()[..n]).map_err(failed)?;
            if done == 0 {
                return Err(failed(io::Error::from_raw_os_error(libc::ENOSPC)));
            }
            s.records += 1;
            s.write_bytes += done as u64;
            left -= done as u64;
        }
        Ok(())
    }

    /// Opens (as the phase's operation opens: made exclusively, to
    /// append, to overwrite or truncated), writes, optionally fsyncs, and
    /// closes; closes on error too.
    fn write_file(&mut self, size: u64, i: u64, s: &mut MetaSample) -> OpResult {
        let spec = self.plan.spec;
        let (call, append) = match self.plan.op {
            MetaOp::Create => ("create", false),
            MetaOp::Append => ("open", true),
            _ => ("open", false),
        };
        let mut file = B::open(self.at(), &self.name, self.flags, 0o644).map_err(fail(call))?;
        let mut r = Ok(());
        let mut start = 0;
        if append && spec.verify {
            match file.size() {
                Ok(len) => start = len,
                Err(e) => r = Err(fail("stat")(e)),
            }
        }
        if r.is_ok() {
            r = self.write_all(&mut file, size, append, start, i, s);
        }
        if r.is_ok() && spec.fsync {
            r = file.sync().map_err(fail("fsync"));
        }
        let c = file.close().map_err(fail("close"));
        r.and(c)
    }

    /// Reads the file to its end; with `--verify` checks every byte against
    /// the pattern, and a file shorter than it was written counts its
    /// missing bytes as bad.
    fn read_file(&mut self, i: u64, s: &mut MetaSample) -> OpResult {
        let spec = self.plan.spec;
        let id = spec.file_id(self.w, i);
        let mut bad = 0u64;
        let mut first_bad = None;
        let mut file = B::open(self.at(), &self.name, self.flags, 0).map_err(fail("open"))?;
        let mut r = Ok(());
        let mut pos = 0u64;
        // mdtest reads the bytes it asks for (its -e N, else what it
        // wrote) and stops: no read(2) to find the end of the file.
        let limit = spec.read_bytes.unwrap_or(u64::MAX);
        let exact = spec
            .read_bytes
            .or_else(|| spec.mdtest_calls.then(|| spec.size_of(self.w, i)));
        loop {
            let mut len = self.buf.len();
            if let Some(want) = exact {
                if pos >= want {
                    break;
                }
                len = len.min((want - pos).min(usize::MAX as u64) as usize);
            }
            match file.read(&mut self.buf.as_mut_slice()[..len]) {
                Ok(0) => break,
                Ok(n) => {
                    s.records += 1;
                    s.read_bytes += n as u64;
                    if spec.verify {
                        let c = pattern::check(&self.buf.as_slice()[..n], spec.seed, id, pos);
                        s.checked_bytes += n as u64;
                        bad += c.bad_bytes;
                        if first_bad.is_none() {
                            first_bad = c.first_bad;
                        }
                    }
                    pos += n as u64;
                }
                Err(e) => {
                    r = Err(OpErr {
                        offset: Some(pos),
                        ..fail("read")(e)
                    });
                    break;
                }
            }
        }
        let c = file.close().map_err(fail("close"));
        if spec.verify && r.is_ok() {
            let want = spec.size_of(self.w, i).min(limit);
            if pos < want {
                bad += want - pos;
                first_bad.get_or_insert(pos);
            }
            if bad > 0 {
                s.bad_bytes += bad;
                if s.mismatches.len() < MAX_MISMATCHES {
                    let path = self.path_of(&self.name);
                    s.mismatches.push((path, first_bad.unwrap_or(0), bad));
                }
            }
        }
        r.and(c)
    }

    /// Runs the phase's operation on index `i` of this thread.
    fn op(&mut self, i: u64, s: &mut MetaSample) -> OpResult {
        let file_kind = if self.plan.state.renamed {
            EntryKind::Renamed
        } else {
            EntryKind::File
        };
        match self.plan.op {
            MetaOp::Create
            | MetaOp::Read
            | MetaOp::Append
            | MetaOp::Overwrite
            | MetaOp::TruncateOverwrite => self.data_op(file_kind, i, s),
            MetaOp::Stat | MetaOp::Chmod | MetaOp::Delete => self.file_op(file_kind, i),
            MetaOp::Mkdir | MetaOp::StatDir | MetaOp::Rmdir => self.dir_op(i),
            MetaOp::RenameDir => self.rotate_dir(i),
            MetaOp::Rename => {
                let to = if self.plan.state.renamed {
                    EntryKind::File
                } else {
                    EntryKind::Renamed
                };
                self.set_name(file_kind, i);
                self.set_name2(to, i);
                B::rename(self.at(), &self.name, &self.name2).map_err(fail("rename"))
            }
            MetaOp::Setxattr | MetaOp::Getxattr => self.xattr_op(file_kind, i),
            MetaOp::Symlink => {
                self.set_name(file_kind, i);
                self.set_name2(EntryKind::Link, i);
                B::symlink(&self.name, self.at(), &self.name2).map_err(|err| OpErr {
                    call: "symlink",
                    err,
                    second: true,
                    offset: None,
                })
            }
            MetaOp::Cleanup => self.cleanup(i, s),
            MetaOp::Readdir => unreachable!("readdir walks directories, not indices"),
        }
    }

    /// The operations that write or read a file's data: create, read,
    /// append, overwrite, truncate-overwrite of file `i`.
    fn data_op(&mut self, file_kind: EntryKind, i: u64, s: &mut MetaSample) -> OpResult {
        let (spec, w) = (self.plan.spec, self.w);
        let size = || spec.size_of(w, i);
        match self.plan.op {
            MetaOp::Create => {
                self.set_name(EntryKind::File, i);
                self.write_file(size(), i, s)
            }
            MetaOp::Read => {
                self.set_name(file_kind, i);
                self.read_file(i, s)
            }
            MetaOp::Append | MetaOp::Overwrite | MetaOp::TruncateOverwrite => {
                self.set_name(file_kind, i);
                self.write_file(size(), i, s)
            }
            op => unreachable!("{op} moves no file data"),
        }
    }

    /// stat, chmod or delete of file `i`.
    fn file_op(&mut self, file_kind: EntryKind, i: u64) -> OpResult {
        self.set_name(file_kind, i);
        match self.plan.op {
            MetaOp::Stat => self.stat_name(),
            MetaOp::Chmod => {
                // Alternate so a repeated chmod still changes the inode.
                let mode = if (self.plan.rep & 1) == 0 {
                    0o640
                } else {
                    0o644
                };
                B::chmod(self.at(), &self.name, mode).map_err(fail("chmod"))
            }
            MetaOp::Delete => B::unlink(self.at(), &self.name).map_err(fail("unlink")),
            op => unreachable!("{op} is not a file operation"),
        }
    }

    /// mkdir, stat or rmdir of directory `i`.
    fn dir_op(&mut self, i: u64) -> OpResult {
        self.set_name(EntryKind::Dir, i);
        match self.plan.op {
            MetaOp::Mkdir => B::mkdir(self.at(), &self.name, 0o755).map_err(fail("mkdir")),
            MetaOp::StatDir => self.stat_name(),
            MetaOp::Rmdir => B::rmdir(self.at(), &self.name).map_err(fail("rmdir")),
            op => unreachable!("{op} is not a directory operation"),
        }
    }

    /// mdtest's directory rename, within the directory node holding
    /// directory `i`: the node's first directory goes to a temporary name,
    /// each next one to its predecessor's name, and at the node's last
    /// index the temporary one to the second-to-last's name (a node of one
    /// directory renames it away and back). One rename per index, as
    /// mdtest's `rename_dir_test` makes, except that mdtest's rotation
    /// runs over all of a task's items, across directories.
    fn rotate_dir(&mut self, i: u64) -> OpResult {
        let spec = self.plan.spec;
        let node = spec.node_of(i);
        let first = spec.first_index_of(node);
        let end = spec
            .first_index_of(node + 1)
            .min(self.plan.count_for(self.w));
        let last = i + 1 >= end;
        let rename = |c: &Self| {
            B::rename(c.at(), &c.name, &c.name2).map_err(|err| OpErr {
                second: err.raw_os_error() == Some(libc::EEXIST),
                ..fail("rename")(err)
            })
        };
        if i == first {
            self.set_name(EntryKind::Dir, i);
            self.set_rotation_name(first);
            rename(self)?;
            if last {
                std::mem::swap(&mut self.name, &mut self.name2);
                self.stem_kind = None;
                rename(self)?;
            }
            return Ok(());
        }
        self.set_name2(EntryKind::Dir, i - 1);
        if last {
            self.set_rotation_name(first);
            std::mem::swap(&mut self.name, &mut self.name2);
            self.stem_kind = None;
            self.set_name2(EntryKind::Dir, i - 1);
        } else {
            self.set_name(EntryKind::Dir, i);
        }
        rename(self)
    }

    /// `name2` := the temporary name of the node whose first directory is
    /// `first` (mdtest's `-XX` suffix).
    fn set_rotation_name(&mut self, first: u64) {
        self.set_name2(EntryKind::Dir, first);
        self.name2.pop();
        self.name2.extend_from_slice(b"-XX\0");
    }

    /// setxattr, or getxattr and its check, on file `i`.
    fn xattr_op(&mut self, file_kind: EntryKind, i: u64) -> OpResult {
        self.set_name(file_kind, i);
        if self.plan.op == MetaOp::Setxattr {
            let mut v = [0u8; XATTR_LEN];
            v[..8].copy_from_slice(&i.to_le_bytes());
            return B::set_xattr(self.at(), &self.name, XATTR_NAME, &v).map_err(fail("setxattr"));
        }
        let mut v = [0u8; XATTR_LEN + 8];
        let n =
            B::get_xattr(self.at(), &self.name, XATTR_NAME, &mut v).map_err(fail("getxattr"))?;
        if n != XATTR_LEN || v[..8] != i.to_le_bytes() {
            return Err(fail("getxattr")(io::Error::new(
                io::ErrorKind::InvalidData,
                "the attribute's value is not the one setxattr wrote",
            )));
        }
        Ok(())
    }

    /// Removes every entry of index `i` that may exist; absent ones are
    /// fine, a directory holding foreign files is left and counted.
    fn cleanup(&mut self, i: u64, s: &mut MetaSample) -> OpResult {
        let st = self.plan.state;
        let changed = self.changed_since_kept();
        let kinds = [
            (EntryKind::File, st.files, false),
            (EntryKind::Renamed, st.files, false),
            (EntryKind::Link, st.links, false),
            (EntryKind::Dir, st.dirs, true),
        ];
        for (kind, maybe, is_dir) in kinds {
            if !maybe {
                continue;
            }
            self.set_name(kind, i);
            if let Some(cut) = changed {
                if B::changed(self.at(), &self.name).is_ok_and(|c| c > cut) {
                    // Put there (or changed) after the tree was kept: not
                    // ioscale's to remove.
                    s.left += 1;
                    if s.first_left.is_none() {
                        s.first_left = Some(self.path_of(&self.name));
                    }
                    continue;
                }
            }
            let r = if is_dir {
                B::rmdir(self.at(), &self.name)
            } else {
                B::unlink(self.at(), &self.name)
            };
            let r = match r {
                // A directory rename cut short leaves the node's first
                // directory under its temporary name.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) && is_dir => {
                    self.rmdir_rotation_name(i)
                }
                r => r,
            };
            match r {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) => {
                    s.left += 1;
                    if s.first_left.is_none() {
                        s.first_left = Some(self.path_of(&self.name));
                    }
                }
                Err(e) => return Err(fail(if is_dir { "rmdir" } else { "unlink" })(e)),
            }
        }
        Ok(())
    }
}

impl<B: Backend> Cursor<'_, '_, B> {
    /// Removes the temporary name of a directory rename cut short when `i`
    /// is its node's first index and the run renames directories; ENOENT
    /// otherwise. Leaves `name` naming it, for a message.
    fn rmdir_rotation_name(&mut self, i: u64) -> io::Result<()> {
        let spec = self.plan.spec;
        if !spec.ops.contains(&MetaOp::RenameDir) || spec.first_index_of(spec.node_of(i)) != i {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        self.set_rotation_name(i);
        std::mem::swap(&mut self.name, &mut self.name2);
        self.stem_kind = None;
        B::rmdir(self.at(), &self.name)
    }
}

impl<'p, 'a, B: Backend> Cursor<'p, 'a, B> {
    /// Opens thread `owner`'s base directory and makes the buffers; `w` is
    /// the calling thread (it seeds the buffer).
    pub(crate) fn open(
        plan: &'p MetaPlan<'a, B>,
        owner: u32,
        w: u32,
        buf_len: usize,
    ) -> io::Result<Self> {
        let base_dir = plan.base_dir(owner);
        let mut bp = Vec::with_capacity(base_dir.as_os_str().len() + 1);
        bp.extend_from_slice(base_dir.as_os_str().as_bytes());
        let base = match &plan.root_dir {
            Some(root) => match plan.spec.thread_dir(owner) {
                Some(mut rel) => {
                    rel.push('\0');
                    B::open_beneath(root, rel.as_bytes())?
                }
                None => B::dup_at(root)?,
            },
            None => B::at_path(&base_dir)?,
        };
        // The flags of the phase's opens, made once (a phase without
        // opens never uses them).
        let flags = B::flags(open_how(plan.op, plan.spec).unwrap_or_default());
        bp.push(b'/');
        let mut buf = AlignedBuf::new(buf_len.max(1), 4096);
        pattern::fill_random(buf.as_mut_slice(), plan.spec.seed ^ ((w as u64) << 20));
        Ok(Cursor {
            plan,
            w: owner,
            base,
            base_path: bp,
            node: 0,
            dir: None,
            node_rel: Vec::with_capacity(256),
            name: Vec::with_capacity(320),
            stem_len: 0,
            stem_kind: None,
            name2: Vec::with_capacity(320),
            full: Vec::new(),
            flags,
            buf,
            sealed: None,
            series: Recorder::off(),
        })
    }

    /// For the cleanup of a kept tree: the moment it was kept, when the
    /// current directory changed since (its entries are then looked at one
    /// by one); `None` when it did not, or for any other phase.
    fn changed_since_kept(&mut self) -> Option<(i64, i64)> {
        let cut = self.plan.kept_before?;
        let changed = match self.sealed {
            Some((node, changed)) if node == self.node => changed,
            _ => {
                // Unreadable counts as changed: each entry is looked at.
                let changed = B::changed(self.at(), b".\0").map_or(true, |c| c > cut);
                self.sealed = Some((self.node, changed));
                changed
            }
        };
        changed.then_some(cut)
    }
}

/// The synchronous engine's worker.
pub(crate) fn run_sync_worker<B: Backend>(
    w: u32,
    plan: &MetaPlan<'_, B>,
    ctl: &PhaseControl,
    barrier: &Barrier,
) -> MetaSample {
    let rec = plan.spec.record_size.max(1) as usize;
    run_thread(w, plan, rec, ctl, barrier, &mut index_loop)
}

/// Thread `w`'s share of a phase, whatever the engine: opens its base
/// directory (with a buffer of `rec` bytes), waits at `barrier`, runs the
/// phase with `indices` as the loop over its indices and, with mdtest -Y,
/// the closing syncfs.
pub(crate) fn run_thread<B: Backend>(
    w: u32,
    plan: &MetaPlan<'_, B>,
    rec: usize,
    ctl: &PhaseControl,
    barrier: &Barrier,
    indices: IndexLoop<'_, B>,
) -> MetaSample {
    let mut s = MetaSample::new(w);
    let owner = plan.spec.owner_of(plan.op, w);
    let base_dir = plan.base_dir(owner);
    let setup = Cursor::open(plan, owner, w, rec).map(|mut c| {
        c.series = Recorder::new(plan.series, ctl.epoch).shown(w);
        c
    });
    barrier.wait();
    let t_start = Instant::now();
    s.start_ns = ns_since(ctl.epoch, t_start);
    run_body(&mut s, setup, base_dir, plan, ctl, indices);
    if plan.timed && plan.spec.sync_phase {
        sync_phase(&mut s, plan, ctl, barrier);
    }
    s
}

/// mdtest -Y: once every thread is done, one of them calls syncfs(2) on
/// the working root; its end time, and so the phase's time, includes it.
pub(crate) fn sync_phase<B: Backend>(
    s: &mut MetaSample,
    plan: &MetaPlan<'_, B>,
    ctl: &PhaseControl,
    barrier: &Barrier,
) {
    if !barrier.wait().is_leader() {
        return;
    }
    let t = Instant::now();
    let r = match &plan.root_dir {
        Some(root) => B::sync_all(root),
        None => B::at_path(&plan.root).and_then(|at| B::sync_all(&at)),
    };
    let now = Instant::now();
    s.sync_ns = now.saturating_duration_since(t).as_nanos() as u64;
    s.end_ns = s.end_ns.max(ns_since(ctl.epoch, now));
    if let Err(e) = r {
        s.errors += 1;
        if s.failure.is_none() {
            s.failure = Some(IoFailure {
                op: "syncfs".into(),
                path: plan.root.clone(),
                offset: None,
                errno: e.raw_os_error(),
                message: describe(&e),
            });
        }
    }
}

/// The phase proper for one thread, after the start barrier.
pub(crate) fn run_body<B: Backend>(
    s: &mut MetaSample,
    setup: io::Result<Cursor<'_, '_, B>>,
    base_dir: PathBuf,
    plan: &MetaPlan<'_, B>,
    ctl: &PhaseControl,
    indices: IndexLoop<'_, B>,
) {
    let w = s.worker;
    let mut cur = match setup {
        Ok(c) => c,
        Err(e) => {
            let tolerable = plan.op == MetaOp::Cleanup && e.raw_os_error() == Some(libc::ENOENT);
            if !tolerable {
                s.errors += 1;
                s.failure = Some(IoFailure {
                    op: "open dir".into(),
                    path: base_dir,
                    offset: None,
                    errno: e.raw_os_error(),
                    message: describe(&e),
                });
                ctl.abort.store(true, Ordering::Relaxed);
            } else {
                s.files = plan.count_for(w);
            }
            s.end_ns = ns_since(ctl.epoch, Instant::now());
            return;
        }
    };
    let deadline = if plan.timed {
        ctl.deadline(plan.spec.time_limit)
    } else {
        None
    };
    cur.series.start(s.start_ns);
    let finished = if plan.op == MetaOp::Readdir {
        readdir_loop(&mut cur, ctl, deadline, s)
    } else {
        indices(&mut cur, ctl, deadline, s)
    };
    let now = Instant::now();
    s.end_ns = ns_since(ctl.epoch, now);
    let rec = std::mem::replace(&mut cur.series, Recorder::off());
    s.series = rec.finish(s.end_ns);
    if finished
        && s.failure.is_none()
        && ctl
            .first_done
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    {
        ctl.first_done_ns.store(s.end_ns, Ordering::Release);
    }
    if s.hit_deadline {
        ctl.first_done.store(true, Ordering::Relaxed);
        let _ =
            ctl.first_done_ns
                .compare_exchange(0, s.end_ns, Ordering::AcqRel, Ordering::Relaxed);
    }
}

pub(crate) fn describe(e: &io::Error) -> String {
    match e.raw_os_error().and_then(errno_hint) {
        Some(h) => format!("{e}: {h}"),
        None => e.to_string(),
    }
}

#[inline]
pub(crate) fn should_stop(ctl: &PhaseControl) -> bool {
    ctl.stop.load(Ordering::Relaxed) || ctl.abort.load(Ordering::Relaxed)
}

/// Records the first failure with its full path; stops the phase unless
/// it is a best-effort cleanup.
pub(crate) fn record_failure<B: Backend>(
    cur: &Cursor<'_, '_, B>,
    e: OpErr,
    ctl: &PhaseControl,
    s: &mut MetaSample,
) -> bool {
    s.errors += 1;
    if s.failure.is_none() {
        let name: &[u8] = if e.call == "mkdir" && cur.dir.is_none() && !cur.node_rel.is_empty() {
            &cur.node_rel
        } else if e.second {
            &cur.name2
        } else {
            &cur.name
        };
        let path = if e.call == "open dir" || (e.call == "mkdir" && name == cur.node_rel.as_slice())
        {
            let mut p = cur.base_path.clone();
            p.extend_from_slice(name.strip_suffix(b"\0").unwrap_or(name));
            PathBuf::from(std::ffi::OsStr::from_bytes(&p))
        } else {
            cur.path_of(name)
        };
        s.failure = Some(IoFailure {
            op: e.call.into(),
            path,
            offset: e.offset,
            errno: e.err.raw_os_error(),
            message: describe(&e.err),
        });
    }
    if cur.plan.op == MetaOp::Cleanup && !cur.plan.timed {
        // Untimed teardown: remove what can be removed, report the rest.
        return false;
    }
    ctl.abort.store(true, Ordering::Relaxed);
    true
}

/// A loop over a thread's indices; returns whether every index was
/// processed.
pub(crate) type IndexLoop<'l, B> = &'l mut dyn FnMut(
    &mut Cursor<'_, '_, B>,
    &PhaseControl,
    Option<Instant>,
    &mut MetaSample,
) -> bool;

/// The loop over indices; returns whether every index was processed.
fn index_loop<B: Backend>(
    cur: &mut Cursor<'_, '_, B>,
    ctl: &PhaseControl,
    deadline: Option<Instant>,
    s: &mut MetaSample,
) -> bool {
    let plan = cur.plan;
    let spec = plan.spec;
    let mut n = plan.count_for(cur.w);
    let mut deadline = deadline;
    let creates = matches!(plan.op, MetaOp::Create | MetaOp::Mkdir | MetaOp::Symlink);
    let missing_ok = plan.op == MetaOp::Cleanup;
    let mut sw_taken = false;
    let mut t = Instant::now();
    let mut i = 0u64;
    while i < n {
        if should_stop(ctl) {
            return false;
        }
        if deadline.is_some_and(|d| ctl.past(d, t)) {
            // The stonewall wear-out: on to the busiest thread's count.
            match at_limit(ctl, s, i, t, &mut sw_taken) {
                Some(goal) => {
                    n = n.min(goal);
                    deadline = None;
                    continue;
                }
                None => return false,
            }
        }
        if !sw_taken && ctl.first_done.load(Ordering::Relaxed) {
            sw_taken = true;
            s.stonewall_files = s.files;
            s.stonewall_bytes = s.bytes();
            // Not for cleanup: what it left, the teardown removes anyway.
            if spec.stop_at_first && plan.timed && plan.op != MetaOp::Cleanup {
                s.stonewalled = true;
                return false;
            }
        }
        let node = spec.node_of(i);
        if node != cur.node {
            match cur.enter(node, creates, missing_ok) {
                Ok(true) => {}
                Ok(false) => {
                    // A directory cleanup finds absent holds nothing of ours.
                    let next = spec.first_index_of(node + 1).min(n);
                    s.files += next - i;
                    s.touched = next;
                    i = next;
                    continue;
                }
                Err(e) => {
                    s.touched = i + 1;
                    if record_failure(cur, e, ctl, s) {
                        return false;
                    }
                    i += 1;
                    continue;
                }
            }
        }
        s.touched = i + 1;
        let before = (s.read_bytes, s.write_bytes);
        match cur.op(i, s) {
            Ok(()) => {
                let now = Instant::now();
                let lat = now.saturating_duration_since(t).as_nanos() as u64;
                s.hist.record(lat);
                let (r, w) = (s.read_bytes - before.0, s.write_bytes - before.1);
                cur.series.file(now, r, w, lat);
                s.files += 1;
                crate::live::publish(cur.w, s.files, s.bytes());
                t = now;
            }
            Err(e) => {
                let stop = record_failure(cur, e, ctl, s);
                t = Instant::now();
                cur.series.error(t);
                if stop {
                    return false;
                }
            }
        }
        i += 1;
    }
    // Done without seeing another thread finish first: all of this
    // thread's work lies before the stonewall. (A thread that saw it kept
    // its count from then, zero for one that started after it.)
    if !sw_taken {
        s.stonewall_files = s.files;
        s.stonewall_bytes = s.bytes();
    }
    if deadline.is_some() {
        // Done before the limit: the others may wear out to this count.
        let _ = ctl.wear_out(s.worker, i);
    }
    true
}

/// The time limit struck at `t` with `i` indices done: the thread's
/// stonewall figures, and in a phase with the wear-out the goal it goes
/// on to (`None`: it stops here).
fn at_limit(
    ctl: &PhaseControl,
    s: &mut MetaSample,
    i: u64,
    t: Instant,
    sw_taken: &mut bool,
) -> Option<u64> {
    s.hit_deadline = true;
    if !*sw_taken {
        // The limit is the stonewall: the files done by then.
        *sw_taken = true;
        s.stonewall_files = s.files;
        s.stonewall_bytes = s.bytes();
        ctl.mark_stonewall(t);
    }
    ctl.wear_out(s.worker, i)
        .filter(|&goal| goal > i && !should_stop(ctl))
}

/// `ls -l`: lists each directory node of the thread (in `--same-dir`, the
/// shared nodes are dealt out round-robin) and lstats every entry. Counts
/// entries that are not directories and not dot files.
fn readdir_loop<B: Backend>(
    cur: &mut Cursor<'_, '_, B>,
    ctl: &PhaseControl,
    deadline: Option<Instant>,
    s: &mut MetaSample,
) -> bool {
    let plan = cur.plan;
    let spec = plan.spec;
    let nodes = spec.nodes_for(plan.count_for(cur.w));
    let (first, step) = if spec.same_dir {
        (cur.w as u64, plan.spec.threads as u64)
    } else {
        (0, 1)
    };
    let first = first + spec.first_node();
    let mut sw_taken = false;
    let mut t = Instant::now();
    let mut node = first;
    while node < nodes {
        if let Err(e) = cur.enter(node, false, false) {
            record_failure(cur, e, ctl, s);
            return false;
        }
        let w = cur.w;
        // The fields apart, so the walk can record while it holds the
        // directory.
        let at = cur.dir.as_ref().unwrap_or(&cur.base);
        let rec = &mut cur.series;
        let mut stopped = false;
        // A failed stat, with the entry's name: recorded after the walk.
        let mut failed: Option<(io::Error, Vec<u8>)> = None;
        let r = B::read_dir(at, |name| {
            if name.first() == Some(&b'.') {
                return true;
            }
            match B::lstat(at, name) {
                Ok(kind) => {
                    let now = Instant::now();
                    if kind != Kind::Dir {
                        let lat = now.saturating_duration_since(t).as_nanos() as u64;
                        s.hist.record(lat);
                        rec.file(now, 0, 0, lat);
                        s.files += 1;
                        crate::live::publish(w, s.files, s.bytes());
                    }
                    t = now;
                }
                // Gone between readdir and stat: a peer's business.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                Err(e) => {
                    failed = Some((e, name.to_vec()));
                    stopped = true;
                    return false;
                }
            }
            if !sw_taken && ctl.first_done.load(Ordering::Relaxed) {
                sw_taken = true;
                s.stonewall_files = s.files;
            }
            if should_stop(ctl) {
                stopped = true;
                return false;
            }
            if let Some(d) = deadline {
                if ctl.past(d, t) {
                    s.hit_deadline = true;
                    stopped = true;
                    return false;
                }
            }
            true
        });
        if let Some((e, name)) = failed {
            cur.name = name;
            record_failure(cur, fail("stat")(e), ctl, s);
            return false;
        }
        if let Err(e) = r {
            record_failure(cur, fail("readdir")(e), ctl, s);
            return false;
        }
        if stopped {
            return false;
        }
        node += step;
    }
    s.touched = plan.count_for(cur.w);
    if !sw_taken {
        s.stonewall_files = s.files;
        s.stonewall_bytes = s.bytes();
    }
    true
}

/// Removes the hashed directory nodes of thread `w` (deepest first), then
/// its thread directory, by `rmdir` only, each relative to its parent
/// opened below the held working root `root` (whose path, for messages,
/// is `root_path`) without following a link ([`Backend::open_beneath`]).
/// Returns directories that could not be removed (they hold entries
/// ioscale did not create, or a link was swapped in on the way).
pub fn remove_tree<B: Backend>(
    spec: &MetaSpec,
    root: &B::At,
    root_path: &Path,
    w: u32,
    indices: u64,
) -> Vec<String> {
    let mut left = Vec::new();
    let thread_dir = spec.thread_dir(w).map(|mut d| {
        d.push('\0');
        d.into_bytes()
    });
    let base = match spec.thread_dir(w) {
        Some(d) => root_path.join(d),
        None => root_path.to_path_buf(),
    };
    let nodes = spec.nodes_for(indices);
    // With --leaf-depth only the leaves in use and their ancestors exist:
    // walking every node number below the last leaf (2^40 of them at depth
    // 40) never ended. Each leaf goes, then its ancestors up to the first
    // one still holding another leaf.
    let first = spec.first_node().max(1);
    let deep = first > 1;
    if nodes > first {
        let opened = match &thread_dir {
            Some(d) => B::open_beneath(root, d),
            None => B::dup_at(root),
        };
        match opened {
            Ok(bat) => {
                let mut rel = Vec::with_capacity(256);
                for node in (first..nodes).rev() {
                    rel.clear();
                    spec.push_node_path(&mut rel, node);
                    let mut end = rel.len();
                    loop {
                        let ancestor = end < rel.len();
                        let gone = rmdir_rel::<B>(&bat, &base, &rel[..end], ancestor, &mut left);
                        // An ancestor still holding another leaf stays.
                        match rel[..end].iter().rposition(|&b| b == b'/') {
                            Some(i) if deep && gone => end = i,
                            _ => break,
                        }
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => left.push(format!("{}: {e}", base.display())),
        }
    }
    if let Some(d) = &thread_dir {
        // rmdir does not follow a link at the last component.
        match B::rmdir(root, d) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => left.push(format!("{}: {e}", base.display())),
        }
    }
    left
}

/// `rmdir` of the node directory `rel` below `bat` (whose path is `base`),
/// relative to its parent opened without following a link. Whether it is
/// gone (removed, or missing); an `ancestor` of leaves that is not empty
/// (another leaf below it) is not gone and not an error here; any other
/// failure is listed in `left`.
fn rmdir_rel<B: Backend>(
    bat: &B::At,
    base: &Path,
    rel: &[u8],
    ancestor: bool,
    left: &mut Vec<String>,
) -> bool {
    let (parent, name) = match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (rel[..i].to_vec(), rel[i + 1..].to_vec()),
        None => (Vec::new(), rel.to_vec()),
    };
    let pat = if parent.is_empty() {
        B::dup_at(bat)
    } else {
        let mut c = parent;
        c.push(0);
        B::open_beneath(bat, &c)
    };
    let mut n = name;
    n.push(0);
    match pat.and_then(|at| B::rmdir(&at, &n)) {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::NotFound => true,
        Err(e) if ancestor && e.raw_os_error() == Some(libc::ENOTEMPTY) => false,
        Err(e) => {
            let p = base.join(std::ffi::OsStr::from_bytes(rel));
            left.push(format!("{}: {e}", p.display()));
            false
        }
    }
}
