//! The few system calls std does not wrap.
//!
//! Kept in one small module so every `unsafe` outside the io_uring engine is
//! in one place, each with its reason.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, IntoRawFd};
use std::path::Path;

/// Closes `file` and reports the error that `drop` would swallow (NFS and
/// FUSE file systems report deferred write errors at close).
pub fn close_checked(file: File) -> io::Result<()> {
    let fd = file.into_raw_fd();
    // SAFETY: `fd` was just released from an owned `File`, so nothing else
    // closes it, and it is not used after this call.
    let r = unsafe { libc::close(fd) };
    if r == 0 {
        Ok(())
    } else {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            // Linux has closed the descriptor even when close is interrupted.
            Ok(())
        } else {
            Err(e)
        }
    }
}

/// Asks the kernel to drop this file's clean cached pages.
pub fn fadvise_dontneed(file: &File) -> io::Result<()> {
    // SAFETY: a plain advisory call on a descriptor we own; no memory is
    // passed.
    let r = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(r))
    }
}

/// CPU time this process has used so far: (user, system) seconds.
pub fn cpu_times() -> (f64, f64) {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a `rusage` into the pointer we give it, which
    // points at properly sized, writable memory.
    let r = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    if r != 0 {
        return (0.0, 0.0);
    }
    // SAFETY: getrusage succeeded, so the struct is initialised (it was also
    // zeroed to begin with).
    let ru = unsafe { ru.assume_init() };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// Peak resident set size of this process in bytes.
pub fn peak_rss_bytes() -> u64 {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: as in `cpu_times`.
    let r = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    if r != 0 {
        return 0;
    }
    // SAFETY: as in `cpu_times`.
    let ru = unsafe { ru.assume_init() };
    ru.ru_maxrss as u64 * 1024
}

/// Writes dirty pages and drops the whole page cache (needs root).
pub fn drop_caches() -> io::Result<()> {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", b"3\n")
}

/// Whether the file system holding `path` is mounted read-only.
pub fn is_read_only(path: &Path) -> io::Result<bool> {
    let st = statvfs(path)?;
    Ok(st.f_flag & libc::ST_RDONLY != 0)
}

/// statvfs(3) of the file system holding `path` (the one place ioscale
/// calls it: read-only checks, the history's target size, IOR's and
/// mdtest's `FS` line).
pub fn statvfs(path: &Path) -> io::Result<libc::statvfs> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `c` is a valid NUL-terminated string and `st` points at
    // writable memory of the right size.
    let r = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: statvfs succeeded.
    Ok(unsafe { st.assume_init() })
}

/// Free bytes for unprivileged users on the file system holding `path`.
pub fn free_bytes(path: &Path) -> io::Result<u64> {
    let st = statvfs(path)?;
    // The field types differ between targets; the casts are for portability.
    #[allow(clippy::unnecessary_cast)]
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Whether the effective user may write into `path`.
pub fn can_write(path: &Path) -> bool {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string.
    unsafe {
        libc::faccessat(
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::W_OK | libc::X_OK,
            libc::AT_EACCESS,
        ) == 0
    }
}
