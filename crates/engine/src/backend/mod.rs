//! The storage backend table: every operation ioscale makes on storage,
//! behind one trait, so the guarantees of a backend (POSIX: never follow a
//! link, no devices or FIFOs, identities checked, only what a marker says is
//! ours removed) are written once and hold for every command.
//!
//! As IOR's aiori and fio's ioengines, a backend is a table of operations;
//! unlike them, it is a trait with associated types, resolved at compile
//! time: the loops are generic over the backend, so an operation costs what
//! the backend's call costs (a system call for [`posix::Posix`]) — no `dyn`
//! call, allocation or lock per I/O or per metadata operation.
//!
//! Two levels, with two handle types:
//!
//! - **Setup and cleanup** ([`Dir`], a *held directory*: it knows its path
//!   for messages and its identity for swap checks; errors are
//!   [`Error`]s naming the operation and the path, refusals apart from
//!   I/O failures). The data set's working directory, its marker, its lock,
//!   the files made before a run, the removal of what the run made.
//! - **The loops** ([`Backend`]'s associated functions on [`Backend::At`],
//!   a bare handle of a directory the loops name entries relative to, and on
//!   [`Backend::File`], an open data file; `io::Result`, names as
//!   NUL-terminated bytes, nothing allocated). The data worker's open and
//!   its queue, the metadata worker's operations.
//!
//! What a backend cannot do is said by its [`Capabilities`], checked
//! against a workload before anything is made, so a workload that needs a
//! rename or an O_DIRECT file is refused with one line naming the flag
//! instead of failing midway. See docs/architecture.md ("The backend
//! table") for a worked example of a second backend.

use std::ffi::{CStr, OsStr, OsString};
use std::fmt::Debug;
use std::io;
use std::path::{Path, PathBuf};

#[cfg(test)]
mod agnostic;
pub mod caps;
#[cfg(any(test, feature = "test-double"))]
pub mod mem;
pub mod posix;
pub mod s3;

pub use caps::{Capabilities, Unsupported};
pub use safefs::{
    Access, EntryInfo, Error, ErrorKind, FileId, Holder, Kind, Liveness, LockOptions, Refusal,
    RemovalReport, Removed,
};

/// The result of a setup or cleanup operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Whether an open makes the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Create {
    /// Never: the file must exist.
    #[default]
    No,
    /// When it is missing (a data file a write phase reuses).
    IfMissing,
    /// Only when it is missing: an existing name (a link included) fails.
    Exclusive,
}

/// How durable each write is before it returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// As the backend buffers it.
    #[default]
    Buffered,
    /// Its data stable (O_DSYNC).
    Data,
    /// Its data and metadata stable (O_SYNC).
    All,
}

/// How a file is opened, in the backend's own terms once per phase
/// ([`Backend::flags`]) so the loops pass a ready value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenHow {
    /// Reads.
    pub read: bool,
    /// Writes.
    pub write: bool,
    /// Whether the open makes the file.
    pub create: Create,
    /// Cut it to 0 bytes.
    pub truncate: bool,
    /// Every write goes to the end.
    pub append: bool,
    /// Bypass the cache (O_DIRECT).
    pub direct: bool,
    /// How durable each write is.
    pub durability: Durability,
}

/// A hint about a file's use ([`DataFile::advise`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    /// Drop its cached pages (POSIX_FADV_DONTNEED).
    DontNeed,
    /// It will be read in order (POSIX_FADV_SEQUENTIAL).
    Sequential,
    /// It will be read in no order (POSIX_FADV_RANDOM).
    Random,
}

/// What the loops' [`Backend::stat`] tells of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryStat {
    /// Its kind (a link is a link, never what it names).
    pub kind: Kind,
    /// Its size in bytes.
    pub size: u64,
    /// Its last modification (seconds and nanoseconds since the epoch).
    pub modified: (i64, u32),
}

/// The outcome of [`Dir::try_lock`].
#[derive(Debug)]
pub enum Locked<L> {
    /// The set is ours until the lock is released.
    Acquired(L),
    /// Someone else holds it.
    Held {
        /// Who, when the record could be read.
        holder: Option<Holder>,
        /// Whether that holder is known to be alive.
        liveness: Liveness,
    },
}

/// What a naming scheme made below a held directory, to be removed by
/// [`Dir::remove`]: the files, then the directories deepest first, each
/// refused when it is not the entry recorded for its name.
#[derive(Debug, Default, Clone)]
pub struct Removal {
    /// Identities recorded when ioscale made these entries.
    pub expected: Vec<(PathBuf, FileId)>,
    /// Files, relative to the held directory.
    pub files: Vec<PathBuf>,
    /// Directories, deepest first, removed only when empty.
    pub dirs: Vec<PathBuf>,
}

impl Removal {
    /// Nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the identity `rel` had when ioscale made it.
    pub fn expect(&mut self, rel: impl Into<PathBuf>, id: FileId) -> &mut Self {
        self.expected.push((rel.into(), id));
        self
    }

    /// Adds a file.
    pub fn file(&mut self, rel: impl Into<PathBuf>) -> &mut Self {
        self.files.push(rel.into());
        self
    }

    /// Adds a directory (after the ones below it).
    pub fn dir(&mut self, rel: impl Into<PathBuf>) -> &mut Self {
        self.dirs.push(rel.into());
        self
    }
}

/// A held set lock.
pub trait SetLock: Send + Debug {
    /// The earlier holder this lock took over from, and why it was stale.
    fn stale_holder(&self) -> Option<(&Holder, &'static str)>;
}

/// A held directory, for setup and cleanup: opened once (the user's target
/// with [`Backend::open_target`], everything below it relative to a held
/// one), it knows its path (for messages only: never used to reach it
/// again) and its identity (for the checks that a name was not swapped).
pub trait Dir: Sized + Send + Sync + Debug {
    /// The backend's open file.
    type File: DataFile;
    /// The backend's set lock.
    type Lock: SetLock;

    /// The path it was opened by, for messages.
    fn path(&self) -> &Path;
    /// Its identity, recorded when it was opened.
    fn id(&self) -> FileId;
    /// A path that reaches this very directory whatever has happened to
    /// its name since it was opened, for the callers that take a path (a
    /// set's cleaner run on a directory the caller holds). The backend's
    /// [`Dir::path`] where it has nothing better.
    fn reach_path(&self) -> PathBuf {
        self.path().to_path_buf()
    }
    /// [`Dir::path`] joined with `name`, for messages.
    fn child_path(&self, name: impl AsRef<OsStr>) -> PathBuf {
        self.path().join(name.as_ref())
    }
    /// A second handle on the same directory.
    fn try_clone(&self) -> Result<Self>;
    /// The subdirectory `name`, never through a link; with `expected`,
    /// any directory other than that one is refused.
    fn open_dir_at(&self, name: impl AsRef<OsStr>, expected: Option<FileId>) -> Result<Self>;
    /// A chain of subdirectories (`a/b`), each as [`Dir::open_dir_at`].
    fn open_dir_path(&self, rel: impl AsRef<Path>) -> Result<Self>;
    /// Makes the directory `name` and opens it; an existing name fails.
    fn mkdir_at(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<Self>;
    /// Makes the file `name` exclusively (an existing name, a link
    /// included, fails); the file, open for reading and writing, and its
    /// identity.
    fn create_at(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<(Self::File, FileId)>;
    /// As [`Dir::create_at`], with the open's extra flags (the O_DIRECT
    /// probe): `how.create` is always [`Create::Exclusive`].
    fn create_with(&self, name: impl AsRef<OsStr>, how: OpenHow) -> Result<(Self::File, FileId)>;
    /// An unnamed file in this directory, freed when closed (POSIX:
    /// `O_TMPFILE`), opened as `how` says; `Ok(None)` where the backend or
    /// the file system cannot make one.
    fn create_unnamed(&self, how: OpenHow) -> Result<Option<Self::File>>;
    /// Opens the existing regular file `name`, never through a link and
    /// never truncating; anything else is refused, and so is a file other
    /// than `expected`.
    fn open_file_at(
        &self,
        name: impl AsRef<OsStr>,
        access: Access,
        expected: Option<FileId>,
    ) -> Result<(Self::File, FileId)>;
    /// What is at `name`, never following a link; `None` when nothing.
    fn stat_at(&self, name: impl AsRef<OsStr>) -> Result<Option<EntryInfo>>;
    /// What is at `rel` below this directory (`a/b/name`), every
    /// directory on the way opened as [`Dir::open_dir_path`]; `None` when
    /// nothing is there.
    fn stat_below(&self, rel: &Path) -> Result<Option<EntryInfo>> {
        let Some(name) = rel.file_name() else {
            return Ok(None);
        };
        match rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(p) => self.open_dir_path(p)?.stat_at(name),
            None => self.stat_at(name),
        }
    }
    /// When `name` was made (its birth time: seconds, nanoseconds) with
    /// the inode it was read from, never following a link; `None` when
    /// nothing is there or the storage keeps no birth time for it. A file
    /// written in place keeps it; a file made, linked or renamed under the
    /// name later has a later one. The default keeps none.
    fn born_at(&self, name: impl AsRef<OsStr>) -> Result<Option<(u64, (i64, i64))>> {
        let _ = name;
        Ok(None)
    }
    /// [`Dir::born_at`] of `rel` below this directory, reached as
    /// [`Dir::stat_below`] reaches it.
    fn born_below(&self, rel: &Path) -> Result<Option<(u64, (i64, i64))>> {
        let Some(name) = rel.file_name() else {
            return Ok(None);
        };
        match rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(p) => self.open_dir_path(p)?.born_at(name),
            None => self.born_at(name),
        }
    }
    /// Removes the file `name` (and, with `expected`, only that very
    /// file); a link, a directory or a swapped file is refused.
    fn unlink_at(&self, name: impl AsRef<OsStr>, expected: Option<FileId>) -> Result<Removed>;
    /// Removes the empty directory `name` (and, with `expected`, only that
    /// very directory).
    fn rmdir_at(&self, name: impl AsRef<OsStr>, expected: Option<FileId>) -> Result<Removed>;
    /// Renames `from` to `to`, both in this directory.
    fn rename_at(&self, from: impl AsRef<OsStr>, to: impl AsRef<OsStr>) -> Result<()>;
    /// The names in it (no `.` or `..`), unsorted.
    fn list(&self) -> Result<Vec<OsString>>;
    /// Replaces the small file `name` with `bytes` as one step (a reader
    /// sees the old content or the new, never a mix); `durable`: stable
    /// before it returns.
    fn replace_at(&self, name: impl AsRef<OsStr>, bytes: &[u8], durable: bool) -> Result<()>;
    /// Reads the small file `name`, at most `limit` bytes, never through
    /// a link; `None` when it is missing or not a regular file.
    fn read_small(&self, name: impl AsRef<OsStr>, limit: u64) -> Option<Vec<u8>>;
    /// The name the temporary `name` of [`Dir::replace_at`] stands for,
    /// when `name` is one of this backend's temporaries (left by a
    /// replace cut short: cleanup removes them with the set).
    fn temp_of(name: &OsStr) -> Option<OsString>;
    /// Takes the set lock `name` in this directory for this process
    /// running `command`, or says who holds it. Never blocks.
    fn try_lock(
        &self,
        name: impl AsRef<OsStr>,
        command: &str,
        opts: LockOptions,
    ) -> Result<Locked<Self::Lock>>;
    /// Releases `lock` and removes its file `name`.
    fn unlock(&self, lock: Self::Lock, name: impl AsRef<OsStr>) -> Result<()>;
    /// Removes what `removal` names, relative to this directory: anything
    /// swapped, foreign or not empty is left and reported, never followed.
    fn remove(&self, removal: &Removal) -> RemovalReport;
    /// Whether this process may make and remove entries in it.
    fn writable(&self) -> bool;
}

/// An open data file.
pub trait DataFile: Send + Sized + Debug {
    /// Reads at the current position (EINTR retried).
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    /// Writes at the current position, or at the end when opened to
    /// append (EINTR retried).
    fn write(&mut self, buf: &[u8]) -> io::Result<usize>;
    /// Reads at `offset`.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// Writes at `offset`.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize>;
    /// Makes what was written stable.
    fn sync(&self) -> io::Result<()>;
    /// Makes the data written stable, not all metadata (POSIX
    /// `fdatasync`); a backend without the distinction syncs all.
    fn sync_data(&self) -> io::Result<()> {
        self.sync()
    }
    /// Tells the storage how `len` bytes from `offset` will be used
    /// (POSIX `posix_fadvise`); a backend without such hints ignores it.
    fn advise(&self, offset: u64, len: u64, advice: Advice) -> io::Result<()> {
        let _ = (offset, len, advice);
        Ok(())
    }
    /// Reserves storage for its first `len` bytes (POSIX `fallocate`);
    /// EOPNOTSUPP where the backend or file system has no such thing.
    fn allocate(&self, len: u64) -> io::Result<()>;
    /// Its size in bytes now.
    fn size(&self) -> io::Result<u64>;
    /// How many names it has (0: it was removed while open).
    fn links(&self) -> io::Result<u64>;
    /// Closes it, reporting what a drop would swallow (a deferred write
    /// error of a network file system).
    fn close(self) -> io::Result<()>;
}

/// A storage backend: the handles and every operation on them.
///
/// The value (`&self`) is what reaching the storage needs (an object
/// store's endpoint and credentials; nothing for POSIX); every other
/// operation works on a handle, which carries what it needs.
pub trait Backend: Clone + Debug + Send + Sync + 'static {
    /// A held directory (setup and cleanup).
    type Dir: Dir<File = Self::File>;
    /// A directory the loops work relative to: no path, no identity,
    /// nothing allocated to open one.
    type At: Send + Sync + Debug;
    /// An open data file.
    type File: DataFile;
    /// [`OpenHow`] in the backend's own terms.
    type Flags: Copy + Send + Sync + Debug;

    /// What it can do.
    fn capabilities() -> &'static Capabilities;

    /// Opens the user's target, following what the user's path follows (a
    /// target that is a link to a directory is the user's choice).
    fn open_target(&self, path: &Path) -> Result<Self::Dir>;

    /// The retried requests and the failed attempts (throttled, server
    /// errors, dropped connections) of every request made through this
    /// value so far, added up: a phase keeps the difference across it.
    /// `None` where the backend retries nothing (POSIX: a failed system
    /// call is an error, never tried again).
    fn retries(&self) -> Option<objstore::RetryTally> {
        None
    }

    /// What is at the user's path `path` (following a link when
    /// `follow`): the IOR front-end's and dd's files, named by the user,
    /// whose links the tools follow. `None` when nothing is there.
    fn stat_path(path: &Path, follow: bool) -> Result<Option<EntryInfo>>;
    /// Opens the user's file `path` as the tools do (following the user's
    /// links); only a regular file is accepted.
    fn open_path(path: &Path, how: OpenHow) -> io::Result<Self::File>;

    /// `how` in the backend's terms, once per phase.
    fn flags(how: OpenHow) -> Self::Flags;
    /// A loop handle on a held directory.
    fn at_of(dir: &Self::Dir) -> io::Result<Self::At>;
    /// A loop handle on the directory at the user's path `path`.
    fn at_path(path: &Path) -> io::Result<Self::At>;
    /// A second loop handle on the same directory.
    fn dup_at(at: &Self::At) -> io::Result<Self::At>;
    /// The directory `rel` below `at` (NUL-terminated; `a/b` allowed),
    /// never through a link at any component and never above `at`.
    fn open_beneath(at: &Self::At, rel: &[u8]) -> io::Result<Self::At>;
    /// Makes the directory `rel` below `at` (its parent must exist), never
    /// through a link.
    fn mkdir_beneath(at: &Self::At, rel: &[u8], mode: u32) -> io::Result<()>;
    /// Opens a data file for the whole of a phase: never through a link,
    /// never hanging on a FIFO, and refusing anything but a regular file
    /// with one name (a planted hard link is someone else's file).
    fn open_data(at: &Self::At, name: &CStr, how: OpenHow) -> io::Result<Self::File>;

    /// Opens `name` in `at` with `flags` (from [`Backend::flags`]), never
    /// through a link; `mode` for a file it makes.
    fn open(at: &Self::At, name: &[u8], flags: Self::Flags, mode: u32) -> io::Result<Self::File>;
    /// The kind of `name` in `at`, never following a link.
    fn lstat(at: &Self::At, name: &[u8]) -> io::Result<Kind>;
    /// When `name` in `at` (`b".\0"`: `at` itself) last changed status
    /// (`st_ctime`: seconds, nanoseconds, by the storage's clock), never
    /// following a link. A directory's changes with every entry made,
    /// removed or renamed in it.
    fn changed(at: &Self::At, name: &[u8]) -> io::Result<(i64, i64)>;
    /// The kind of the entry at the full path `path` (NUL-terminated),
    /// resolved from its start as mdtest's stat(2) resolves it, not
    /// following a link in its last component. Only a stat: nothing is
    /// opened, changed or read through the path. Backends without paths
    /// refuse it.
    fn lstat_full(path: &[u8]) -> io::Result<Kind> {
        let _ = path;
        Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
    }
    /// The kind, size and modification time of `name` in `at`, never
    /// following a link (the find walk's size and time criteria).
    fn stat(at: &Self::At, name: &[u8]) -> io::Result<EntryStat>;
    /// Sets the permission bits of `name`, never through a link.
    fn chmod(at: &Self::At, name: &[u8], mode: u32) -> io::Result<()>;
    /// Removes the file (or link) `name`.
    fn unlink(at: &Self::At, name: &[u8]) -> io::Result<()>;
    /// Removes the empty directory `name`.
    fn rmdir(at: &Self::At, name: &[u8]) -> io::Result<()>;
    /// Makes the directory `name`.
    fn mkdir(at: &Self::At, name: &[u8], mode: u32) -> io::Result<()>;
    /// Renames `from` to `to` within `at`.
    fn rename(at: &Self::At, from: &[u8], to: &[u8]) -> io::Result<()>;
    /// Makes `link` in `at`, a symbolic link to `target`.
    fn symlink(target: &[u8], at: &Self::At, link: &[u8]) -> io::Result<()>;
    /// Sets the extended attribute `key` of `name` (never through a link).
    fn set_xattr(at: &Self::At, name: &[u8], key: &CStr, value: &[u8]) -> io::Result<()>;
    /// Reads the extended attribute `key` of `name` into `out`; its length.
    fn get_xattr(at: &Self::At, name: &[u8], key: &CStr, out: &mut [u8]) -> io::Result<usize>;
    /// Calls `f` with each entry name of `at` (NUL-terminated; `.` and
    /// `..` included where the backend has them) until it returns false.
    fn read_dir(at: &Self::At, f: impl FnMut(&[u8]) -> bool) -> io::Result<()>;
    /// [`Backend::read_dir`] with each entry's kind where the listing
    /// gives it for free (POSIX: `d_type`), `None` where it does not (the
    /// caller asks [`Backend::lstat`] when it must know).
    fn read_dir_typed(
        at: &Self::At,
        mut f: impl FnMut(&[u8], Option<Kind>) -> bool,
    ) -> io::Result<()> {
        Self::read_dir(at, |name| f(name, None))
    }
    /// Makes everything written to the storage holding `at` stable.
    fn sync_all(at: &Self::At) -> io::Result<()>;
}
