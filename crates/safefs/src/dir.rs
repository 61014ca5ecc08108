//! A directory handle that never follows a symbolic link in ioscale's own
//! path.
//!
//! ioscale opens the user's TARGET once ([`DirHandle::open_target`]), and
//! everything below it — `ioscale.d`, `dir.00000000`, `thr.000`, IOR's task
//! directories — relative to a held handle with `openat(O_NOFOLLOW)`,
//! recording each directory's (device, inode). A later open or remove of
//! the same name checks that pair, so a name swapped for a symlink or for
//! another directory is refused, never followed.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::error::{Error, ErrorKind, Refusal, Result};
pub use crate::id::FileId;

/// What `lstat` (never following a link) found at a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryInfo {
    /// Its identity.
    pub id: FileId,
    /// Its kind.
    pub kind: Kind,
    /// Its size in bytes.
    pub size: u64,
    /// How many names it has (a file with more than one is not ioscale's
    /// alone).
    pub links: u64,
    /// Its last status change (`st_ctime`, seconds and nanoseconds): with
    /// the identity, what tells the file ioscale left from a new one that
    /// was given the freed inode number.
    pub changed: (i64, i64),
}

impl EntryInfo {
    // The field types differ between targets; the casts are for portability.
    #[allow(clippy::unnecessary_cast)]
    fn of(st: &rustix::fs::Stat) -> EntryInfo {
        EntryInfo {
            id: FileId::of(st),
            kind: Kind::of(st.st_mode),
            size: st.st_size as u64,
            links: st.st_nlink as u64,
            changed: (st.st_ctime as i64, st.st_ctime_nsec as i64),
        }
    }
}

/// What is at the user's path `path`, following a link there when
/// `follow` (the IOR front-end's and dd's files, whose links the tools
/// follow); `None` when nothing is there.
pub fn stat_path(path: &Path, follow: bool) -> Result<Option<EntryInfo>> {
    let r = if follow {
        rustix::fs::stat(path)
    } else {
        rustix::fs::lstat(path)
    };
    match r {
        Ok(st) => Ok(Some(EntryInfo::of(&st))),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(Error::io("stat", path, e)),
    }
}

/// The kind of a directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A FIFO.
    Fifo,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A socket.
    Socket,
    /// Anything else.
    Other,
}

impl Kind {
    /// The kind a `st_mode` names.
    #[inline]
    pub fn of(mode: u32) -> Kind {
        match FileType::from_raw_mode(mode) {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Symlink,
            FileType::Fifo => Kind::Fifo,
            FileType::CharacterDevice => Kind::CharDevice,
            FileType::BlockDevice => Kind::BlockDevice,
            FileType::Socket => Kind::Socket,
            _ => Kind::Other,
        }
    }

    /// The kind in words, as error messages use it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::File => "regular file",
            Kind::Dir => "directory",
            Kind::Symlink => "symbolic link",
            Kind::Fifo => "FIFO",
            Kind::CharDevice => "character device",
            Kind::BlockDevice => "block device",
            Kind::Socket => "socket",
            Kind::Other => "special file",
        }
    }
}

/// What a remove call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removed {
    /// The entry was removed.
    Removed,
    /// There was nothing at that name.
    Absent,
}

/// How [`DirHandle::open_file_at`] opens an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read only.
    Read,
    /// Write only (never truncating).
    Write,
    /// Read and write (never truncating).
    ReadWrite,
}

/// An open directory with its recorded (device, inode), for work relative
/// to it that never follows a symbolic link.
#[derive(Debug)]
pub struct DirHandle {
    fd: OwnedFd,
    path: PathBuf,
    id: FileId,
}

fn check_name(op: &'static str, base: &Path, name: &OsStr) -> Result<()> {
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') || b.contains(&0) {
        return Err(Error::refused(op, base.join(name), Refusal::BadName));
    }
    Ok(())
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

impl DirHandle {
    fn from_fd(fd: OwnedFd, path: PathBuf) -> Result<Self> {
        let st = rustix::fs::fstat(&fd).map_err(|e| Error::io("stat", &path, e))?;
        Ok(DirHandle {
            id: FileId::of(&st),
            fd,
            path,
        })
    }

    /// Opens `path` as a directory without following a symbolic link at
    /// its last component (earlier components are resolved as usual: they
    /// are the user's choice, not ioscale's).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        match rustix::fs::open(path, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => Self::from_fd(fd, path.to_path_buf()),
            Err(e) => Err(Self::explain_open_failure(
                "open",
                path,
                e,
                rustix::fs::lstat(path).ok(),
                "directory",
            )),
        }
    }

    /// Opens the user's TARGET directory, following symbolic links in it
    /// (a TARGET that is a link to a directory is the user's choice). Use
    /// [`DirHandle::open_dir_at`] or [`DirHandle::mkdir_at`] for everything
    /// below it.
    pub fn open_target(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd =
            rustix::fs::open(path, flags, Mode::empty()).map_err(|e| Error::io("open", path, e))?;
        Self::from_fd(fd, path.to_path_buf())
    }

    fn explain_open_failure(
        op: &'static str,
        path: &Path,
        e: Errno,
        st: Option<rustix::fs::Stat>,
        expected: &'static str,
    ) -> Error {
        if e == Errno::LOOP || e == Errno::NOTDIR {
            if let Some(st) = st {
                let kind = Kind::of(st.st_mode);
                if kind == Kind::Symlink {
                    return Error::refused(op, path, Refusal::Symlink);
                }
                return Error::refused(
                    op,
                    path,
                    Refusal::WrongKind {
                        expected,
                        found: kind.name(),
                    },
                );
            }
        }
        Error::io(op, path, e)
    }

    /// The directory's (device, inode), recorded when it was opened.
    pub fn id(&self) -> FileId {
        self.id
    }

    /// The path this handle was opened by (for messages; never used to
    /// reach the directory again).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `self.path()` joined with `name`, for messages.
    pub fn child_path(&self, name: impl AsRef<OsStr>) -> PathBuf {
        self.path.join(name.as_ref())
    }

    /// Makes the directory `name` (mode `mode`, less the umask) and opens
    /// it, recording its identity. Fails with EEXIST when the name exists.
    pub fn mkdir_at(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<DirHandle> {
        let name = name.as_ref();
        check_name("mkdir", &self.path, name)?;
        let p = self.child_path(name);
        rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(mode))
            .map_err(|e| Error::io("mkdir", &p, e))?;
        // Between mkdirat and openat the name can be swapped. A link is
        // refused by O_NOFOLLOW; another directory put there is refused
        // unless it is empty as ours is (an empty directory is the one
        // case this cannot tell apart, and it holds nothing to lose).
        // A failure to open or list what was just made (EMFILE, ENOMEM)
        // removes it again with rmdir, which removes only an empty
        // directory: a failed call leaves nothing behind.
        let h = match self.open_dir_at(name, None) {
            Ok(h) => h,
            Err(e) => {
                if matches!(e.kind, ErrorKind::Io(_)) {
                    let _ = rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR);
                }
                return Err(e);
            }
        };
        match h.list() {
            Ok(l) if l.is_empty() => Ok(h),
            Ok(_) => Err(Error::refused("mkdir", p, Refusal::NotFresh)),
            Err(e) => {
                let _ = self.rmdir_at(name, Some(h.id()));
                Err(e)
            }
        }
    }

    /// Creates the regular file `name` exclusively (`O_CREAT|O_EXCL|
    /// O_NOFOLLOW`): an existing name, a symbolic link included, fails with
    /// EEXIST. Returns the file (open read-write) and its identity.
    pub fn create_at(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<(File, FileId)> {
        self.create_at_with(name, mode, false)
    }

    /// [`DirHandle::create_at`], with `O_DIRECT` when `direct` (the probe
    /// of whether the file system takes it: EINVAL when it does not).
    pub fn create_at_with(
        &self,
        name: impl AsRef<OsStr>,
        mode: u32,
        direct: bool,
    ) -> Result<(File, FileId)> {
        let name = name.as_ref();
        check_name("create", &self.path, name)?;
        let p = self.child_path(name);
        let mut flags =
            OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if direct {
            flags |= OFlags::DIRECT;
        }
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(mode))
            .map_err(|e| Error::io("create", &p, e))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| Error::io("stat", &p, e))?;
        Ok((File::from(fd), FileId::of(&st)))
    }

    /// An unnamed regular file in this directory (`O_TMPFILE`, read-write,
    /// mode 0600): it never appears in the directory and is freed when
    /// closed. With `direct`, switched to `O_DIRECT` once made (EINVAL:
    /// the file system refuses it). `Ok(None)` when the file system cannot
    /// make one (FUSE, NFS: EOPNOTSUPP, EISDIR or ENOSYS).
    pub fn create_unnamed(&self, direct: bool) -> Result<Option<File>> {
        let flags = OFlags::RDWR | OFlags::TMPFILE | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.fd, ".", flags, Mode::from_raw_mode(0o600)) {
            Ok(fd) => fd,
            Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::NOSYS) => return Ok(None),
            Err(e) => return Err(Error::io("create", &self.path, e)),
        };
        if direct {
            let fl = rustix::fs::fcntl_getfl(&fd).map_err(|e| Error::io("open", &self.path, e))?;
            rustix::fs::fcntl_setfl(&fd, fl | OFlags::DIRECT)
                .map_err(|e| Error::io("open", &self.path, e))?;
        }
        Ok(Some(File::from(fd)))
    }

    /// Opens the existing regular file `name` without following a link and
    /// without truncating it; anything but a regular file is refused, and
    /// so is a file other than `expected` when given.
    pub fn open_file_at(
        &self,
        name: impl AsRef<OsStr>,
        access: Access,
        expected: Option<FileId>,
    ) -> Result<(File, FileId)> {
        let name = name.as_ref();
        check_name("open", &self.path, name)?;
        let p = self.child_path(name);
        let acc = match access {
            Access::Read => OFlags::RDONLY,
            Access::Write => OFlags::WRONLY,
            Access::ReadWrite => OFlags::RDWR,
        };
        // O_NONBLOCK: opening a FIFO planted under our name must not hang.
        let flags = acc | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(e) => {
                let st = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok();
                return Err(Self::explain_open_failure(
                    "open",
                    &p,
                    e,
                    st,
                    "regular file",
                ));
            }
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| Error::io("stat", &p, e))?;
        let kind = Kind::of(st.st_mode);
        if kind != Kind::File {
            return Err(Error::refused(
                "open",
                &p,
                Refusal::WrongKind {
                    expected: "regular file",
                    found: kind.name(),
                },
            ));
        }
        let id = FileId::of(&st);
        if let Some(want) = expected {
            if want != id {
                return Err(Error::refused(
                    "open",
                    &p,
                    Refusal::Replaced {
                        expected: want,
                        found: id,
                    },
                ));
            }
        }
        // Back to blocking mode for ordinary I/O.
        let fl = rustix::fs::fcntl_getfl(&fd).map_err(|e| Error::io("open", &p, e))?;
        rustix::fs::fcntl_setfl(&fd, fl - OFlags::NONBLOCK)
            .map_err(|e| Error::io("open", &p, e))?;
        Ok((File::from(fd), id))
    }

    /// Opens the subdirectory `name` without following a link. With
    /// `expected`, a directory other than the recorded one is refused
    /// ([`Refusal::Replaced`]).
    pub fn open_dir_at(
        &self,
        name: impl AsRef<OsStr>,
        expected: Option<FileId>,
    ) -> Result<DirHandle> {
        let name = name.as_ref();
        check_name("open", &self.path, name)?;
        let p = self.child_path(name);
        let fd = match rustix::fs::openat(&self.fd, name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => fd,
            Err(e) => {
                let st = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok();
                return Err(Self::explain_open_failure("open", &p, e, st, "directory"));
            }
        };
        let h = Self::from_fd(fd, p)?;
        if let Some(want) = expected {
            if want != h.id {
                return Err(Error::refused(
                    "open",
                    h.path,
                    Refusal::Replaced {
                        expected: want,
                        found: h.id,
                    },
                ));
            }
        }
        Ok(h)
    }

    /// Opens a chain of subdirectories (`a/b/c`), each with
    /// [`DirHandle::open_dir_at`].
    pub fn open_dir_path(&self, rel: impl AsRef<Path>) -> Result<DirHandle> {
        let mut cur: Option<DirHandle> = None;
        for c in rel.as_ref().components() {
            let base = cur.as_ref().unwrap_or(self);
            let next = base.open_dir_at(c.as_os_str(), None)?;
            cur = Some(next);
        }
        match cur {
            Some(h) => Ok(h),
            None => self.try_clone(),
        }
    }

    /// A second handle on the same directory.
    pub fn try_clone(&self) -> Result<DirHandle> {
        let fd = self
            .fd
            .try_clone()
            .map_err(|e| Error::io("dup", &self.path, e))?;
        Ok(DirHandle {
            fd,
            path: self.path.clone(),
            id: self.id,
        })
    }

    /// `lstat` of `name`: `None` when it does not exist.
    pub fn stat_at(&self, name: impl AsRef<OsStr>) -> Result<Option<EntryInfo>> {
        let name = name.as_ref();
        check_name("stat", &self.path, name)?;
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(EntryInfo::of(&st))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(Error::io("stat", self.child_path(name), e)),
        }
    }

    fn check_entry(
        &self,
        op: &'static str,
        name: &OsStr,
        want: Kind,
        expected: Option<FileId>,
    ) -> Result<Option<EntryInfo>> {
        let Some(info) = self.stat_at(name).map_err(|mut e| {
            e.op = op;
            e
        })?
        else {
            return Ok(None);
        };
        let p = || self.child_path(name);
        if info.kind == Kind::Symlink {
            return Err(Error::refused(op, p(), Refusal::Symlink));
        }
        if info.kind != want {
            return Err(Error::refused(
                op,
                p(),
                Refusal::WrongKind {
                    expected: want.name(),
                    found: info.kind.name(),
                },
            ));
        }
        if let Some(e) = expected {
            if e != info.id {
                return Err(Error::refused(
                    op,
                    p(),
                    Refusal::Replaced {
                        expected: e,
                        found: info.id,
                    },
                ));
            }
        }
        Ok(Some(info))
    }

    /// Removes `name` if it is a regular file (and, with `expected`, that
    /// very file). A symbolic link, a directory, a device or a swapped file
    /// is refused; a missing name is [`Removed::Absent`]. `unlinkat`
    /// never follows a link, so the worst a swap between the check and the
    /// unlink can do is remove a name planted in this (ioscale's own)
    /// directory — never a file elsewhere.
    pub fn unlink_at(&self, name: impl AsRef<OsStr>, expected: Option<FileId>) -> Result<Removed> {
        self.remove_at("unlink", name.as_ref(), Kind::File, expected)
    }

    /// Removes the empty directory `name` if it is a directory (and, with
    /// `expected`, that very directory). `rmdir` never removes contents;
    /// a link or a swapped directory is refused; a missing name is
    /// [`Removed::Absent`].
    pub fn rmdir_at(&self, name: impl AsRef<OsStr>, expected: Option<FileId>) -> Result<Removed> {
        self.remove_at("rmdir", name.as_ref(), Kind::Dir, expected)
    }

    /// [`Self::unlink_at`] (`kind` a file) and [`Self::rmdir_at`] (a
    /// directory, removed with `AT_REMOVEDIR`): `op` names the call in
    /// refusals and errors.
    fn remove_at(
        &self,
        op: &'static str,
        name: &OsStr,
        kind: Kind,
        expected: Option<FileId>,
    ) -> Result<Removed> {
        check_name(op, &self.path, name)?;
        if self.check_entry(op, name, kind, expected)?.is_none() {
            return Ok(Removed::Absent);
        }
        let flags = if kind == Kind::Dir {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        match rustix::fs::unlinkat(&self.fd, name, flags) {
            Ok(()) => Ok(Removed::Removed),
            Err(Errno::NOENT) => Ok(Removed::Absent),
            Err(e) => Err(Error::io(op, self.child_path(name), e)),
        }
    }

    /// Renames `from` to `to`, both in this directory (replacing `to`).
    pub fn rename_at(&self, from: impl AsRef<OsStr>, to: impl AsRef<OsStr>) -> Result<()> {
        let (from, to) = (from.as_ref(), to.as_ref());
        check_name("rename", &self.path, from)?;
        check_name("rename", &self.path, to)?;
        rustix::fs::renameat(&self.fd, from, &self.fd, to)
            .map_err(|e| Error::io("rename", self.child_path(to), e))
    }

    /// The names in the directory (without `.` and `..`), unsorted.
    pub fn list(&self) -> Result<Vec<OsString>> {
        let dup = rustix::fs::openat(&self.fd, ".", DIR_FLAGS, Mode::empty())
            .map_err(|e| Error::io("list", &self.path, e))?;
        let mut dir = rustix::fs::Dir::new(dup).map_err(|e| Error::io("list", &self.path, e))?;
        let mut out = Vec::new();
        for ent in dir.by_ref() {
            let ent = ent.map_err(|e| Error::io("list", &self.path, e))?;
            let n = ent.file_name().to_bytes();
            if n != b"." && n != b".." {
                out.push(OsStr::from_bytes(n).to_os_string());
            }
        }
        Ok(out)
    }

    /// Whether the effective user may make and remove entries here
    /// (`faccessat` of the held directory: write and search).
    pub fn writable(&self) -> bool {
        rustix::fs::accessat(
            &self.fd,
            ".",
            rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
            AtFlags::EACCESS,
        )
        .is_ok()
    }

    /// `fsync` of the directory (makes created and removed names durable).
    pub fn sync(&self) -> Result<()> {
        rustix::fs::fsync(&self.fd).map_err(|e| Error::io("fsync", &self.path, e))
    }
}

impl AsFd for DirHandle {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
