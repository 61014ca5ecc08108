//! The `*at` system calls and xattr calls std does not wrap: the POSIX
//! backend's system-call layer, and every `unsafe` of its loops. Names are
//! NUL-terminated byte slices, checked in O(1) before use.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A NUL-terminated name as the kernel takes it.
struct CName<'a>(&'a [u8]);

impl CName<'_> {
    fn as_ptr(&self) -> *const libc::c_char {
        self.0.as_ptr().cast()
    }
}

/// Checks that `b` ends in NUL, so the kernel's read of the name stops
/// inside the slice. O(1), unlike `CStr::from_bytes_with_nul`, which
/// scans for interior NULs on every file operation (about 45
/// instructions per name, callgrind); names are built from the prefix
/// (checked for NUL when the spec was built) and decimal digits.
fn cstr(b: &[u8]) -> io::Result<CName<'_>> {
    if b.last() == Some(&0) {
        Ok(CName(b))
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "name is not NUL-terminated",
        ))
    }
}

fn check(r: libc::c_int) -> io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether `openat2` is known to be missing (ENOSYS, or refused by a
/// seccomp filter): then [`open_dir`] walks the path itself.
static NO_OPENAT2: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Test hook: `IOSCALE_NO_OPENAT2=1` makes this layer take the paths of
/// kernels before 5.6: [`open_dir`] walks the path itself (no
/// `openat2`), [`chmod`] uses `fchmodat` (no `fchmodat2`) and the xattr
/// calls go through `/proc/self/fd` (no `setxattrat`), so the tests run
/// them on any kernel.
fn old_kernel_forced() -> bool {
    static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| std::env::var_os("IOSCALE_NO_OPENAT2").is_some_and(|v| v == "1"))
}

fn openat2_disabled() -> bool {
    old_kernel_forced() || NO_OPENAT2.load(std::sync::atomic::Ordering::Relaxed)
}

const DIR_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NOFOLLOW;

/// The `open_how` flags and resolve bits [`open_dir`] gives `openat2`
/// relative to a descriptor, for a caller that submits the same open
/// another way (an io_uring `OPENAT2`); `None` where [`open_dir`]
/// walks the path instead (no `openat2`, or `IOSCALE_NO_OPENAT2`).
pub fn dir_open_how() -> Option<(u64, u64)> {
    (!openat2_disabled()).then_some((
        DIR_FLAGS as u64,
        libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_BENEATH,
    ))
}

/// `openat(dir, name)` of one directory component, never following a
/// link (`ELOOP`) and refusing anything but a directory (`ENOTDIR`).
fn open_component(dir: RawFd, name: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: `name` is a valid NUL-terminated string; openat does not
    // keep the pointer.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), DIR_FLAGS) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The path below `dir` opened one component at a time, each with
/// `O_NOFOLLOW|O_DIRECTORY` relative to the one before: what
/// `RESOLVE_NO_SYMLINKS` does, for kernels without `openat2`. A `..`
/// (never in ioscale's own names) is refused with `EINVAL`.
fn walk(dir: RawFd, path: &[u8]) -> io::Result<OwnedFd> {
    let path = path.strip_suffix(&[0]).unwrap_or(path);
    let mut cur: Option<OwnedFd> = None;
    let mut name = Vec::with_capacity(64);
    for comp in path.split(|&b| b == b'/') {
        if comp.is_empty() || comp == b"." {
            continue;
        }
        if comp == b".." {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        name.clear();
        name.extend_from_slice(comp);
        name.push(0);
        let c = CStr::from_bytes_with_nul(&name)
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let base = cur.as_ref().map_or(dir, |f| f.as_raw_fd());
        cur = Some(open_component(base, c)?);
    }
    match cur {
        Some(fd) => Ok(fd),
        None => dup(dir),
    }
}

/// Opens a directory relative to `dir` (or `AT_FDCWD`). A symbolic
/// link as the last component is refused (`ELOOP`), never followed:
/// every directory of a tree is ioscale's own, so a link there was
/// swapped in by someone else. Relative to a descriptor, a link at any
/// component of a multi-component path (the hashed `h0/h3` nodes) is
/// refused too: `openat2` with `RESOLVE_NO_SYMLINKS` where the kernel
/// has it, else a walk that opens one component at a time with
/// `O_NOFOLLOW` (`walk`). `RESOLVE_BENEATH` keeps a `..` from
/// leaving `dir`, as the walk refuses `..`: a damaged marker's prefix
/// (`../../v/`) made the cleanup unlink files outside the tree.
pub fn open_dir(dir: RawFd, path: &[u8]) -> io::Result<OwnedFd> {
    use std::sync::atomic::Ordering;
    let c = cstr(path)?;
    if dir != libc::AT_FDCWD {
        if openat2_disabled() {
            return walk(dir, path);
        }
        // SAFETY: open_how is plain data; zeroed is a valid value.
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = DIR_FLAGS as u64;
        how.resolve = libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_BENEATH;
        // SAFETY: `c` is a valid NUL-terminated string and `how` a
        // valid open_how of the size passed; the kernel keeps neither.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir,
                c.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd >= 0 {
            // SAFETY: `fd` was just returned by openat2 and is owned by
            // no one else.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENOSYS) | Some(libc::EPERM) => {
                NO_OPENAT2.store(true, Ordering::Relaxed);
                return walk(dir, path);
            }
            _ => return Err(e),
        }
    }
    // SAFETY: `c` is a valid NUL-terminated string; openat does not
    // keep the pointer.
    let fd = unsafe { libc::openat(dir, c.as_ptr(), DIR_FLAGS) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A second descriptor for the same directory.
pub fn dup(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: fcntl on a descriptor the caller keeps open; no memory.
    let r = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `r` is a new descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(r) })
}

/// openat; returns a raw descriptor the caller must [`close`].
pub fn open(dir: RawFd, name: &[u8], flags: i32, mode: u32) -> io::Result<RawFd> {
    let c = cstr(name)?;
    // SAFETY: valid C string; mode is passed as the variadic argument
    // openat reads when O_CREAT is set.
    let fd = unsafe { libc::openat(dir, c.as_ptr(), flags, mode as libc::c_uint) };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd)
    }
}

/// Clears `O_NONBLOCK` (set while opening, so a FIFO does not hang the
/// open) for ordinary blocking I/O.
pub fn set_blocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller owns; no memory is passed.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if fl < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, fl & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// write(2), retried on EINTR.
pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
    retry_eintr(|| unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) })
}

/// read(2), retried on EINTR.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    retry_eintr(|| unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) })
}

/// Calls `call` (a read(2) or write(2)) again while it fails with EINTR.
fn retry_eintr(mut call: impl FnMut() -> isize) -> io::Result<usize> {
    loop {
        let r = call();
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// syncfs(2): flushes the whole file system holding `fd` (mdtest -Y).
pub fn syncfs(fd: RawFd) -> io::Result<()> {
    // SAFETY: no memory is passed; `fd` is an open descriptor the
    // caller keeps open for the duration of the call.
    check(unsafe { libc::syncfs(fd) })
}

/// The size of an open file (fstat's `st_size`).
pub fn file_size(fd: RawFd) -> io::Result<u64> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` points at writable memory of the right size; no
    // other memory is passed.
    check(unsafe { libc::fstat(fd, st.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded, so it filled the struct.
    Ok(unsafe { st.assume_init() }.st_size as u64)
}

/// fallocate(2) of the first `len` bytes, mode 0 (fio's default
/// `fallocate=native`).
pub fn fallocate(fd: RawFd, len: u64) -> io::Result<()> {
    let len = libc::off_t::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    // SAFETY: a descriptor and a range; no memory is passed.
    check(unsafe { libc::fallocate(fd, 0, 0, len) })
}

/// fsync(2).
pub fn fsync(fd: RawFd) -> io::Result<()> {
    // SAFETY: no memory is passed.
    check(unsafe { libc::fsync(fd) })
}

/// fdatasync(2).
pub fn fdatasync(fd: RawFd) -> io::Result<()> {
    // SAFETY: no memory is passed.
    check(unsafe { libc::fdatasync(fd) })
}

/// posix_fadvise(2) of `len` bytes from `offset` (0: to the end).
pub fn fadvise(fd: RawFd, offset: u64, len: u64, advice: crate::backend::Advice) -> io::Result<()> {
    use crate::backend::Advice;
    let a = match advice {
        Advice::DontNeed => libc::POSIX_FADV_DONTNEED,
        Advice::Sequential => libc::POSIX_FADV_SEQUENTIAL,
        Advice::Random => libc::POSIX_FADV_RANDOM,
    };
    let off =
        libc::off_t::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let len = libc::off_t::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a descriptor and a range; no memory is passed. It returns
    // the error number instead of setting errno.
    match unsafe { libc::posix_fadvise(fd, off, len, a) } {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// fstatat with AT_SYMLINK_NOFOLLOW; returns `st_mode`.
pub fn lstat(dir: RawFd, name: &[u8]) -> io::Result<u32> {
    let c = cstr(name)?;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: valid C string; `st` points at writable memory of the
    // right size.
    let r = unsafe { libc::fstatat(dir, c.as_ptr(), st.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW) };
    check(r)?;
    // SAFETY: fstatat succeeded, so it filled the struct.
    Ok(unsafe { st.assume_init() }.st_mode)
}

/// fstatat with AT_SYMLINK_NOFOLLOW: the whole `stat` (mode, size,
/// times) of the entry itself, never of what a link names.
pub fn lstat_full(dir: RawFd, name: &[u8]) -> io::Result<libc::stat> {
    let c = cstr(name)?;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: valid C string; `st` points at writable memory of the
    // right size.
    let r = unsafe { libc::fstatat(dir, c.as_ptr(), st.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW) };
    check(r)?;
    // SAFETY: fstatat succeeded, so it filled the struct.
    Ok(unsafe { st.assume_init() })
}

/// fstatat with AT_SYMLINK_NOFOLLOW; returns the status-change time
/// (`st_ctime`, `st_ctime_nsec`). `b".\0"` is the directory `dir` itself.
// The field types differ between targets; the casts are for portability.
#[allow(clippy::unnecessary_cast)]
pub fn ctime(dir: RawFd, name: &[u8]) -> io::Result<(i64, i64)> {
    let st = lstat_full(dir, name)?;
    Ok((st.st_ctime as i64, st.st_ctime_nsec as i64))
}

/// statx with AT_SYMLINK_NOFOLLOW; returns the inode it read and the
/// birth time (`stx_btime`: seconds, nanoseconds), or `None` where the
/// file system keeps none (a view that has none may say 0: FUSE does).
pub fn btime(dir: RawFd, name: &[u8]) -> io::Result<Option<(u64, (i64, i64))>> {
    let c = cstr(name)?;
    // SAFETY: `statx` is plain data; zeroed is a valid value to be written.
    let mut sx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: valid C string; `sx` is a writable statx buffer the kernel
    // does not keep.
    let r = unsafe {
        libc::statx(
            dir,
            c.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_INO | libc::STATX_BTIME,
            &mut sx,
        )
    };
    check(r)?;
    let born = (sx.stx_btime.tv_sec, i64::from(sx.stx_btime.tv_nsec));
    let kept = sx.stx_mask & libc::STATX_BTIME != 0 && born != (0, 0);
    Ok(kept.then_some((sx.stx_ino, born)))
}

/// System call numbers newer than the `libc` crate's tables: one number
/// on every architecture with the unified table (Linux 5.1 and later);
/// `None` elsewhere, where the older call is used.
#[cfg(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64",
    target_arch = "loongarch64"
))]
mod nr {
    pub const FCHMODAT2: Option<libc::c_long> = Some(452);
    pub const SETXATTRAT: Option<libc::c_long> = Some(463);
    pub const GETXATTRAT: Option<libc::c_long> = Some(464);
}
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64",
    target_arch = "loongarch64"
)))]
mod nr {
    pub const FCHMODAT2: Option<libc::c_long> = None;
    pub const SETXATTRAT: Option<libc::c_long> = None;
    pub const GETXATTRAT: Option<libc::c_long> = None;
}

/// Whether a newer system call is known to be missing (ENOSYS; not EPERM,
/// which these calls return for a denied change): then the older one is
/// used. One relaxed load a call once known.
struct Missing(std::sync::atomic::AtomicU8);

const UNKNOWN: u8 = 0;
const PRESENT: u8 = 1;
const GONE: u8 = 2;

impl Missing {
    const fn new() -> Self {
        Missing(std::sync::atomic::AtomicU8::new(UNKNOWN))
    }

    /// The call's number, unless it is known (or made, for the tests:
    /// [`old_kernel_forced`]) to be missing.
    #[inline]
    fn nr(&self, nr: Option<libc::c_long>) -> Option<libc::c_long> {
        use std::sync::atomic::Ordering;
        match self.0.load(Ordering::Relaxed) {
            PRESENT => nr,
            GONE => None,
            _ => {
                let forced = old_kernel_forced() || nr.is_none();
                self.0
                    .store(if forced { GONE } else { PRESENT }, Ordering::Relaxed);
                nr.filter(|_| !forced)
            }
        }
    }

    /// Whether `e` says the call is missing (and remembers it).
    fn missing(&self, e: &io::Error) -> bool {
        let gone = e.raw_os_error() == Some(libc::ENOSYS);
        if gone {
            self.0.store(GONE, std::sync::atomic::Ordering::Relaxed);
        }
        gone
    }
}

static NO_FCHMODAT2: Missing = Missing::new();
static NO_XATTRAT: Missing = Missing::new();

/// chmod of `name` in `dir`, never through a link: `fchmodat2` with
/// `AT_SYMLINK_NOFOLLOW` (Linux 6.6; a link there fails with EOPNOTSUPP),
/// else `fchmodat`, which follows a link at the name (the kernel has no
/// other way to refuse it).
pub fn chmod(dir: RawFd, name: &[u8], mode: u32) -> io::Result<()> {
    let c = cstr(name)?;
    if let Some(nr) = NO_FCHMODAT2.nr(nr::FCHMODAT2) {
        // SAFETY: valid C string; no other memory is passed.
        let r = unsafe {
            libc::syscall(
                nr,
                dir,
                c.as_ptr(),
                mode as libc::mode_t,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if !NO_FCHMODAT2.missing(&e) {
            return Err(e);
        }
    }
    // SAFETY: valid C string.
    check(unsafe { libc::fchmodat(dir, c.as_ptr(), mode as libc::mode_t, 0) })
}

/// renameat within one directory.
pub fn rename(dir: RawFd, from: &[u8], to: &[u8]) -> io::Result<()> {
    let (a, b) = (cstr(from)?, cstr(to)?);
    // SAFETY: valid C strings.
    check(unsafe { libc::renameat(dir, a.as_ptr(), dir, b.as_ptr()) })
}

/// symlinkat: `link` in `dir` points at `target`.
pub fn symlink(target: &[u8], dir: RawFd, link: &[u8]) -> io::Result<()> {
    let (a, b) = (cstr(target)?, cstr(link)?);
    // SAFETY: valid C strings.
    check(unsafe { libc::symlinkat(a.as_ptr(), dir, b.as_ptr()) })
}

/// unlinkat; `dir_entry` removes a directory (rmdir semantics: only
/// when empty).
pub fn unlink(dir: RawFd, name: &[u8], dir_entry: bool) -> io::Result<()> {
    let c = cstr(name)?;
    let flags = if dir_entry { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: valid C string.
    check(unsafe { libc::unlinkat(dir, c.as_ptr(), flags) })
}

/// mkdirat.
pub fn mkdir(dir: RawFd, name: &[u8], mode: u32) -> io::Result<()> {
    let c = cstr(name)?;
    // SAFETY: valid C string.
    check(unsafe { libc::mkdirat(dir, c.as_ptr(), mode as libc::mode_t) })
}

/// mkdir of a path below `dir` (`h0/h3/h1`) without following a link
/// anywhere in it: the parent is opened with [`open_dir`] (no link at
/// any component), then the last name is made relative to it.
/// `mkdirat` with the whole path would follow a link swapped in for
/// an intermediate directory and make the directory wherever it
/// points.
pub fn mkdir_beneath(dir: RawFd, path: &[u8], mode: u32) -> io::Result<()> {
    let p = path.strip_suffix(&[0]).unwrap_or(path);
    match p.iter().rposition(|&b| b == b'/') {
        None => mkdir(dir, path, mode),
        Some(i) => {
            let mut parent = p[..i].to_vec();
            parent.push(0);
            let mut name = p[i + 1..].to_vec();
            name.push(0);
            let pfd = open_dir(dir, &parent)?;
            mkdir(pfd.as_raw_fd(), &name, mode)
        }
    }
}

/// The `struct xattr_args` of `setxattrat`/`getxattrat`.
#[repr(C)]
struct XattrArgs {
    value: u64,
    size: u32,
    flags: u32,
}

/// `/proc/self/fd/DIR/NAME` in `out` (NUL-terminated): the entry reached
/// through the held directory itself, whatever happened to the names
/// above it, for the path-only xattr calls of kernels before 6.13. Built
/// by hand: `write!` costs some 400 instructions a call.
fn proc_path<'a>(out: &'a mut [u8; 352], dir: RawFd, name: &[u8]) -> io::Result<CName<'a>> {
    const PREFIX: &[u8] = b"/proc/self/fd/";
    let mut digits = [0u8; 10];
    let (mut k, mut v) = (digits.len(), dir.max(0) as u32);
    loop {
        k -= 1;
        digits[k] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let digits = &digits[k..];
    let end = PREFIX.len() + digits.len() + 1 + name.len();
    if end > out.len() {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    out[..PREFIX.len()].copy_from_slice(PREFIX);
    out[PREFIX.len()..PREFIX.len() + digits.len()].copy_from_slice(digits);
    out[PREFIX.len() + digits.len()] = b'/';
    out[end - name.len()..end].copy_from_slice(name);
    cstr(&out[..end])
}

/// Sets the xattr `key` of `name` in `dir`, never through a link:
/// `setxattrat` with `AT_SYMLINK_NOFOLLOW` relative to the held directory
/// (Linux 6.13), else `lsetxattr` on the entry reached through
/// `/proc/self/fd` (see [`proc_path`]). A full path would follow a link
/// swapped in for any directory above the entry.
pub fn set_xattr(dir: RawFd, name: &[u8], key: &CStr, value: &[u8]) -> io::Result<()> {
    let c = cstr(name)?;
    if let Some(nr) = NO_XATTRAT.nr(nr::SETXATTRAT) {
        let args = XattrArgs {
            value: value.as_ptr() as u64,
            size: value.len() as u32,
            flags: 0,
        };
        // SAFETY: valid C strings; `args` points at `value`, valid for
        // reads of its length; the kernel keeps none of them.
        let r = unsafe {
            libc::syscall(
                nr,
                dir,
                c.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
                key.as_ptr(),
                &args as *const XattrArgs,
                std::mem::size_of::<XattrArgs>(),
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if !NO_XATTRAT.missing(&e) {
            return Err(e);
        }
    }
    let mut buf = [0u8; 352];
    let p = proc_path(&mut buf, dir, name)?;
    // SAFETY: valid C strings; `value` is valid for `value.len()` bytes.
    check(unsafe {
        libc::lsetxattr(
            p.as_ptr(),
            key.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    })
}

/// Reads the xattr `key` of `name` in `dir` into `out`, never through a
/// link (as [`set_xattr`]); the value's length.
pub fn get_xattr(dir: RawFd, name: &[u8], key: &CStr, out: &mut [u8]) -> io::Result<usize> {
    let c = cstr(name)?;
    if let Some(nr) = NO_XATTRAT.nr(nr::GETXATTRAT) {
        let mut args = XattrArgs {
            value: out.as_mut_ptr() as u64,
            size: out.len() as u32,
            flags: 0,
        };
        // SAFETY: valid C strings; `args` points at `out`, valid for
        // writes of its length; the kernel keeps none of them.
        let r = unsafe {
            libc::syscall(
                nr,
                dir,
                c.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
                key.as_ptr(),
                &mut args as *mut XattrArgs,
                std::mem::size_of::<XattrArgs>(),
            )
        };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        if !NO_XATTRAT.missing(&e) {
            return Err(e);
        }
    }
    let mut buf = [0u8; 352];
    let p = proc_path(&mut buf, dir, name)?;
    // SAFETY: valid C strings; `out` is writable for `out.len()` bytes.
    let r =
        unsafe { libc::lgetxattr(p.as_ptr(), key.as_ptr(), out.as_mut_ptr().cast(), out.len()) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// An open directory stream (opendir/readdir/closedir).
pub struct DirStream {
    dir: *mut libc::DIR,
}

impl DirStream {
    /// Takes ownership of `fd` (closed with the stream).
    pub fn new(fd: OwnedFd) -> io::Result<DirStream> {
        use std::os::fd::IntoRawFd;
        let raw = fd.into_raw_fd();
        // SAFETY: `raw` is an open directory descriptor we own; on
        // success fdopendir owns it, on failure we close it.
        let dir = unsafe { libc::fdopendir(raw) };
        if dir.is_null() {
            let e = io::Error::last_os_error();
            // SAFETY: fdopendir failed, so `raw` is still ours.
            unsafe { libc::close(raw) };
            return Err(e);
        }
        Ok(DirStream { dir })
    }

    /// The stream's descriptor, for `*at` calls on its entries.
    pub fn fd(&self) -> RawFd {
        // SAFETY: `self.dir` is a live stream.
        unsafe { libc::dirfd(self.dir) }
    }

    /// Calls `f` with each entry name until it returns false or the
    /// directory ends.
    pub fn for_each(&mut self, mut f: impl FnMut(&CStr) -> bool) -> io::Result<()> {
        self.for_each_typed(|name, _| f(name))
    }

    /// [`DirStream::for_each`] with each entry's type as readdir gives it
    /// (`DT_DIR`, `DT_REG`, `DT_LNK`…; `DT_UNKNOWN` where the file system
    /// does not say, and an `lstat` must).
    pub fn for_each_typed(&mut self, mut f: impl FnMut(&CStr, u8) -> bool) -> io::Result<()> {
        loop {
            // readdir signals errors only through errno.
            // SAFETY: __errno_location returns this thread's errno.
            unsafe { *libc::__errno_location() = 0 };
            // SAFETY: `self.dir` is a live stream used by this thread only.
            let ent = unsafe { libc::readdir(self.dir) };
            if ent.is_null() {
                let e = io::Error::last_os_error();
                return if e.raw_os_error().unwrap_or(0) == 0 {
                    Ok(())
                } else {
                    Err(e)
                };
            }
            // SAFETY: readdir returned a valid entry whose d_name is a
            // NUL-terminated string, valid until the next readdir.
            let (name, kind) = unsafe { (CStr::from_ptr((*ent).d_name.as_ptr()), (*ent).d_type) };
            if !f(name, kind) {
                return Ok(());
            }
        }
    }
}

impl Drop for DirStream {
    fn drop(&mut self) {
        // SAFETY: `self.dir` is live and closed exactly once here.
        unsafe { libc::closedir(self.dir) };
    }
}

impl AsRawFd for DirStream {
    fn as_raw_fd(&self) -> RawFd {
        self.fd()
    }
}
