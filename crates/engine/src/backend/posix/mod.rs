//! POSIX through safefs: the first backend, and where the POSIX guarantees
//! live once.
//!
//! - Setup and cleanup go through [`safefs::DirHandle`] (the [`Dir`] of
//!   this backend): the user's target opened once, everything below it
//!   with `O_NOFOLLOW` relative to a held descriptor, identities recorded
//!   and checked, removals by name only, directories by `rmdir` only,
//!   markers replaced atomically, sets locked with [`safefs::SetLock`].
//! - The loops go through the `*at` calls of `at.rs` relative to a held
//!   descriptor ([`Backend::At`] is an `OwnedFd`): every open carries
//!   `O_NOFOLLOW`, directories below a held one are opened with `openat2`
//!   `RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH` (or a component-by-component
//!   `O_NOFOLLOW` walk), chmod and xattrs use the calls that refuse a link
//!   (`fchmodat2`, `setxattrat`) where the kernel has them, and a data
//!   file is opened without hanging on a FIFO and refused unless it is a
//!   regular file with one name.
//!
//! Each loop operation is one system call, as before the table existed:
//! the methods are `#[inline]` wrappers, resolved at compile time.

use std::ffi::{CStr, OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use safefs::DirHandle;

use super::{
    Access, Backend, Capabilities, Create, DataFile, Dir, Durability, EntryInfo, EntryStat, FileId,
    Kind, LockOptions, Locked, OpenHow, Removal, RemovalReport, Removed, Result, SetLock,
};

pub(crate) mod at;

/// What POSIX file systems do: everything a workload may ask for.
pub static CAPABILITIES: Capabilities = Capabilities {
    name: "posix",
    directories: true,
    rename: true,
    symlinks: true,
    chmod: true,
    xattrs: true,
    append: true,
    write_in_place: true,
    direct: true,
    sync: true,
    user_paths: true,
    min_part: 0,
    page_cache: true,
};

/// The POSIX backend (a local or network file system through the kernel).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Posix;

/// The `open_how` flags and resolve bits [`Posix::open_beneath`] gives
/// `openat2`, for a caller that submits the same open another way (the
/// io_uring metadata engine's `OPENAT2`); `None` where it walks the path
/// instead.
pub fn dir_open_how() -> Option<(u64, u64)> {
    at::dir_open_how()
}

/// The flags of [`OpenHow`] as `open(2)` takes them, without the ones
/// every open of this backend adds.
fn raw_flags(how: OpenHow) -> i32 {
    let mut f = match (how.read, how.write) {
        (true, true) => libc::O_RDWR,
        (false, true) => libc::O_WRONLY,
        _ => libc::O_RDONLY,
    };
    f |= match how.create {
        Create::No => 0,
        Create::IfMissing => libc::O_CREAT,
        Create::Exclusive => libc::O_CREAT | libc::O_EXCL,
    };
    if how.truncate {
        f |= libc::O_TRUNC;
    }
    if how.append {
        f |= libc::O_APPEND;
    }
    if how.direct {
        f |= libc::O_DIRECT;
    }
    f | match how.durability {
        Durability::Buffered => 0,
        Durability::Data => libc::O_DSYNC,
        Durability::All => libc::O_SYNC,
    }
}

/// Opens the data file `name` in `dir` for a phase: `openat` with
/// `O_NOFOLLOW` (a link fails with ELOOP) and `O_NONBLOCK` while opening
/// (a FIFO planted under the name does not hang the worker), then refuses
/// anything but a regular file with one name. `flags` are the access mode
/// and extra flags (`O_CREAT`, `O_DIRECT`, `O_SYNC`…); an `O_TRUNC` is
/// done only after those checks (`ftruncate`): at the open it would cut a
/// foreign file hard-linked under the name before it could be refused.
pub fn open_data_flags(dir: &OwnedFd, name: &CStr, flags: i32, mode: u32) -> io::Result<File> {
    let fd = at::open(
        dir.as_raw_fd(),
        name.to_bytes_with_nul(),
        (flags & !libc::O_TRUNC) | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK,
        mode,
    )?;
    // SAFETY: `fd` was just returned by openat and nobody else owns it.
    let file = unsafe { File::from_raw_fd(fd) };
    check_regular(&file)?;
    at::set_blocking(file.as_raw_fd())?;
    if flags & libc::O_TRUNC != 0 {
        file.set_len(0)?;
    }
    Ok(file)
}

/// Refuses an open file that is not a regular file of its own: a
/// directory (EISDIR), a device, FIFO or socket, or a file with other hard
/// links (someone else's file too: writing or reading it as ioscale's data
/// is refused).
fn check_regular(file: &File) -> io::Result<()> {
    let md = file.metadata()?;
    if md.file_type().is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    if !md.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (something other than ioscale's data file is under its name)",
        ));
    }
    if md.nlink() > 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the file has other hard links, so it is not ioscale's data file alone",
        ));
    }
    Ok(())
}

impl SetLock for safefs::SetLock {
    fn stale_holder(&self) -> Option<(&safefs::Holder, &'static str)> {
        safefs::SetLock::stale_holder(self)
    }
}

impl Dir for DirHandle {
    type File = File;
    type Lock = safefs::SetLock;

    fn path(&self) -> &Path {
        DirHandle::path(self)
    }
    fn id(&self) -> FileId {
        DirHandle::id(self)
    }
    fn try_clone(&self) -> Result<Self> {
        DirHandle::try_clone(self)
    }
    fn open_dir_at(&self, name: impl AsRef<OsStr>, expected: Option<FileId>) -> Result<Self> {
        DirHandle::open_dir_at(self, name, expected)
    }
    fn open_dir_path(&self, rel: impl AsRef<Path>) -> Result<Self> {
        DirHandle::open_dir_path(self, rel)
    }
    fn mkdir_at(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<Self> {
        DirHandle::mkdir_at(self, name, mode)
    }
    fn create_at(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<(File, FileId)> {
        DirHandle::create_at(self, name, mode)
    }
    fn create_with(&self, name: impl AsRef<OsStr>, how: OpenHow) -> Result<(File, FileId)> {
        DirHandle::create_at_with(self, name, 0o644, how.direct)
    }
    fn create_unnamed(&self, how: OpenHow) -> Result<Option<File>> {
        DirHandle::create_unnamed(self, how.direct)
    }
    fn open_file_at(
        &self,
        name: impl AsRef<OsStr>,
        access: Access,
        expected: Option<FileId>,
    ) -> Result<(File, FileId)> {
        DirHandle::open_file_at(self, name, access, expected)
    }
    fn stat_at(&self, name: impl AsRef<OsStr>) -> Result<Option<EntryInfo>> {
        DirHandle::stat_at(self, name)
    }
    fn born_at(&self, name: impl AsRef<OsStr>) -> Result<Option<(u64, (i64, i64))>> {
        use std::os::unix::ffi::OsStrExt;
        let name = name.as_ref();
        if name.as_bytes().contains(&b'/') {
            return Ok(None);
        }
        let mut c = name.as_bytes().to_vec();
        c.push(0);
        match at::btime(self.as_fd().as_raw_fd(), &c) {
            Ok(b) => Ok(b),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(super::Error::io("statx", self.child_path(name), e)),
        }
    }
    fn unlink_at(&self, name: impl AsRef<OsStr>, expected: Option<FileId>) -> Result<Removed> {
        DirHandle::unlink_at(self, name, expected)
    }
    fn rmdir_at(&self, name: impl AsRef<OsStr>, expected: Option<FileId>) -> Result<Removed> {
        DirHandle::rmdir_at(self, name, expected)
    }
    fn rename_at(&self, from: impl AsRef<OsStr>, to: impl AsRef<OsStr>) -> Result<()> {
        DirHandle::rename_at(self, from, to)
    }
    fn list(&self) -> Result<Vec<OsString>> {
        DirHandle::list(self)
    }
    fn reach_path(&self) -> PathBuf {
        // The held descriptor itself, through /proc: a name swapped for a
        // link after the open is never followed.
        PathBuf::from(format!("/proc/self/fd/{}/.", self.as_fd().as_raw_fd()))
    }
    fn replace_at(&self, name: impl AsRef<OsStr>, bytes: &[u8], durable: bool) -> Result<()> {
        if durable {
            safefs::replace_at(self, name, bytes).map(drop)
        } else {
            safefs::replace_at_unsynced(self, name, bytes).map(drop)
        }
    }
    fn read_small(&self, name: impl AsRef<OsStr>, limit: u64) -> Option<Vec<u8>> {
        let (f, _) = DirHandle::open_file_at(self, name, Access::Read, None).ok()?;
        let mut out = Vec::new();
        f.take(limit).read_to_end(&mut out).ok()?;
        Some(out)
    }
    fn temp_of(name: &OsStr) -> Option<OsString> {
        safefs::temp_base(name)
    }
    fn try_lock(
        &self,
        name: impl AsRef<OsStr>,
        command: &str,
        opts: LockOptions,
    ) -> Result<Locked<safefs::SetLock>> {
        Ok(
            match safefs::SetLock::try_lock_with(self, name, command, opts)? {
                safefs::TryLock::Acquired(l) => Locked::Acquired(l),
                safefs::TryLock::Held { holder, liveness } => Locked::Held { holder, liveness },
            },
        )
    }
    fn unlock(&self, lock: safefs::SetLock, name: impl AsRef<OsStr>) -> Result<()> {
        lock.remove(self, name)
    }
    fn remove(&self, removal: &Removal) -> RemovalReport {
        let mut r = safefs::Remover::new(self);
        for (rel, id) in &removal.expected {
            r.expect(rel, *id);
        }
        for f in &removal.files {
            r.file(f);
        }
        for d in &removal.dirs {
            r.dir_entry(d);
        }
        r.finish()
    }
    fn writable(&self) -> bool {
        DirHandle::writable(self)
    }
}

impl DataFile for File {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        at::read(self.as_raw_fd(), buf)
    }
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        at::write(self.as_raw_fd(), buf)
    }
    #[inline]
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        FileExt::read_at(self, buf, offset)
    }
    #[inline]
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        FileExt::write_at(self, buf, offset)
    }
    #[inline]
    fn sync(&self) -> io::Result<()> {
        at::fsync(self.as_raw_fd())
    }
    #[inline]
    fn sync_data(&self) -> io::Result<()> {
        at::fdatasync(self.as_raw_fd())
    }
    fn advise(&self, offset: u64, len: u64, advice: crate::backend::Advice) -> io::Result<()> {
        at::fadvise(self.as_raw_fd(), offset, len, advice)
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        at::fallocate(self.as_raw_fd(), len)
    }
    fn size(&self) -> io::Result<u64> {
        at::file_size(self.as_raw_fd())
    }
    fn links(&self) -> io::Result<u64> {
        Ok(self.metadata()?.nlink())
    }
    #[inline]
    fn close(self) -> io::Result<()> {
        crate::sys::close_checked(self)
    }
}

impl Backend for Posix {
    type Dir = DirHandle;
    type At = OwnedFd;
    type File = File;
    type Flags = i32;

    fn capabilities() -> &'static Capabilities {
        &CAPABILITIES
    }

    fn open_target(&self, path: &Path) -> Result<DirHandle> {
        DirHandle::open_target(path)
    }

    fn stat_path(path: &Path, follow: bool) -> Result<Option<EntryInfo>> {
        safefs::stat_path(path, follow)
    }

    fn open_path(path: &Path, how: OpenHow) -> io::Result<File> {
        let file = std::fs::OpenOptions::new()
            .read(how.read || !how.write)
            .write(how.write)
            .custom_flags(
                (raw_flags(how) & !(libc::O_ACCMODE | libc::O_CREAT | libc::O_EXCL))
                    | libc::O_NONBLOCK,
            )
            .create(how.create == Create::IfMissing)
            .create_new(how.create == Create::Exclusive)
            .mode(0o644)
            .open(path)?;
        // The user's file, through the user's links, as the tools open
        // it; but never a device, FIFO or socket swapped in after setup.
        let md = file.metadata()?;
        if !md.file_type().is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file (ioscale reads and writes regular files only)",
            ));
        }
        at::set_blocking(file.as_raw_fd())?;
        Ok(file)
    }

    /// `how`, plus what every open of the loops carries: `O_NOFOLLOW` (a
    /// link planted under a name fails with ELOOP), `O_NONBLOCK` (a FIFO
    /// planted under a name neither hangs the open nor a read or write;
    /// it has no effect on a regular file, open(2)) and `O_CLOEXEC`.
    #[inline]
    fn flags(how: OpenHow) -> i32 {
        raw_flags(how) | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC
    }

    fn at_of(dir: &DirHandle) -> io::Result<OwnedFd> {
        dir.as_fd().try_clone_to_owned()
    }

    fn at_path(path: &Path) -> io::Result<OwnedFd> {
        use std::os::unix::ffi::OsStrExt;
        let mut p = path.as_os_str().as_bytes().to_vec();
        p.push(0);
        at::open_dir(libc::AT_FDCWD, &p)
    }

    fn dup_at(at: &OwnedFd) -> io::Result<OwnedFd> {
        at::dup(at.as_raw_fd())
    }

    #[inline]
    fn open_beneath(at: &OwnedFd, rel: &[u8]) -> io::Result<OwnedFd> {
        at::open_dir(at.as_raw_fd(), rel)
    }

    #[inline]
    fn mkdir_beneath(at: &OwnedFd, rel: &[u8], mode: u32) -> io::Result<()> {
        at::mkdir_beneath(at.as_raw_fd(), rel, mode)
    }

    fn open_data(at: &OwnedFd, name: &CStr, how: OpenHow) -> io::Result<File> {
        open_data_flags(at, name, raw_flags(how), 0o644)
    }

    #[inline]
    fn open(at: &OwnedFd, name: &[u8], flags: i32, mode: u32) -> io::Result<File> {
        let fd = at::open(at.as_raw_fd(), name, flags, mode)?;
        // SAFETY: `fd` was just returned by openat and nobody else owns it.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    #[inline]
    fn lstat(at: &OwnedFd, name: &[u8]) -> io::Result<Kind> {
        at::lstat(at.as_raw_fd(), name).map(Kind::of)
    }

    fn changed(at: &OwnedFd, name: &[u8]) -> io::Result<(i64, i64)> {
        at::ctime(at.as_raw_fd(), name)
    }

    // The field types differ between targets; the casts are for portability.
    #[allow(clippy::unnecessary_cast)]
    fn stat(at: &OwnedFd, name: &[u8]) -> io::Result<EntryStat> {
        let st = at::lstat_full(at.as_raw_fd(), name)?;
        Ok(EntryStat {
            kind: Kind::of(st.st_mode),
            size: st.st_size as u64,
            modified: (st.st_mtime as i64, st.st_mtime_nsec as u32),
        })
    }

    #[inline]
    fn lstat_full(path: &[u8]) -> io::Result<Kind> {
        at::lstat(libc::AT_FDCWD, path).map(Kind::of)
    }

    #[inline]
    fn chmod(at: &OwnedFd, name: &[u8], mode: u32) -> io::Result<()> {
        at::chmod(at.as_raw_fd(), name, mode)
    }

    #[inline]
    fn unlink(at: &OwnedFd, name: &[u8]) -> io::Result<()> {
        at::unlink(at.as_raw_fd(), name, false)
    }

    #[inline]
    fn rmdir(at: &OwnedFd, name: &[u8]) -> io::Result<()> {
        at::unlink(at.as_raw_fd(), name, true)
    }

    #[inline]
    fn mkdir(at: &OwnedFd, name: &[u8], mode: u32) -> io::Result<()> {
        at::mkdir(at.as_raw_fd(), name, mode)
    }

    #[inline]
    fn rename(at: &OwnedFd, from: &[u8], to: &[u8]) -> io::Result<()> {
        at::rename(at.as_raw_fd(), from, to)
    }

    #[inline]
    fn symlink(target: &[u8], at: &OwnedFd, link: &[u8]) -> io::Result<()> {
        at::symlink(target, at.as_raw_fd(), link)
    }

    #[inline]
    fn set_xattr(at: &OwnedFd, name: &[u8], key: &CStr, value: &[u8]) -> io::Result<()> {
        at::set_xattr(at.as_raw_fd(), name, key, value)
    }

    #[inline]
    fn get_xattr(at: &OwnedFd, name: &[u8], key: &CStr, out: &mut [u8]) -> io::Result<usize> {
        at::get_xattr(at.as_raw_fd(), name, key, out)
    }

    fn read_dir(at: &OwnedFd, mut f: impl FnMut(&[u8]) -> bool) -> io::Result<()> {
        let mut stream = at::DirStream::new(at::dup(at.as_raw_fd())?)?;
        stream.for_each(|name| f(name.to_bytes_with_nul()))
    }

    fn read_dir_typed(
        at: &OwnedFd,
        mut f: impl FnMut(&[u8], Option<Kind>) -> bool,
    ) -> io::Result<()> {
        let mut stream = at::DirStream::new(at::dup(at.as_raw_fd())?)?;
        stream.for_each_typed(|name, t| {
            let kind = match t {
                libc::DT_REG => Some(Kind::File),
                libc::DT_DIR => Some(Kind::Dir),
                libc::DT_LNK => Some(Kind::Symlink),
                libc::DT_FIFO => Some(Kind::Fifo),
                libc::DT_CHR => Some(Kind::CharDevice),
                libc::DT_BLK => Some(Kind::BlockDevice),
                libc::DT_SOCK => Some(Kind::Socket),
                _ => None,
            };
            f(name.to_bytes_with_nul(), kind)
        })
    }

    fn sync_all(at: &OwnedFd) -> io::Result<()> {
        at::syncfs(at.as_raw_fd())
    }
}
