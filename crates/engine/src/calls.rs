//! The system calls a synchronous request is made of, one style per engine.
//!
//! fio has four synchronous engines that move the same bytes with different
//! calls: `psync` (pread/pwrite), `sync` (lseek, then read/write), `pvsync`
//! (preadv/pwritev with one iovec) and `pvsync2` (preadv2/pwritev2, flags
//! 0). A trace of an emulated job file must show the calls fio makes, so the
//! synchronous queue ([`crate::queue::SyncQueue`]) is generic over a
//! [`SyncCalls`] style: the style is a type chosen once, when the engine
//! runs a phase, and each style's calls inline into the queue's loop. The
//! pread/pwrite style ([`Positioned`]) compiles to exactly the calls the
//! queue made before styles existed: no branch is added per request.
//!
//! The styles other than [`Positioned`] use a descriptor, so they are
//! styles of the POSIX backend only.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use crate::backend::DataFile;

/// How one synchronous read or write of a whole buffer at an offset
/// reaches the kernel. A call may move fewer bytes; the queue issues the
/// rest again.
pub trait SyncCalls<F> {
    /// The calls, named in `--help` and failures.
    const NAME: &'static str;
    /// Reads into `buf` at `offset` of `file`.
    fn read(&mut self, file: &F, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// Writes `buf` at `offset` of `file`.
    fn write(&mut self, file: &F, buf: &[u8], offset: u64) -> io::Result<usize>;
}

/// pread/pwrite (fio's `psync`; ioscale's `sync` engine): works on every
/// backend through its positioned calls.
#[derive(Debug, Default, Clone, Copy)]
pub struct Positioned;

impl<F: DataFile> SyncCalls<F> for Positioned {
    const NAME: &'static str = "pread/pwrite";
    #[inline(always)]
    fn read(&mut self, file: &F, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        file.read_at(buf, offset)
    }
    #[inline(always)]
    fn write(&mut self, file: &F, buf: &[u8], offset: u64) -> io::Result<usize> {
        file.write_at(buf, offset)
    }
}

/// lseek, then read/write at the file position (fio's `sync`). As fio,
/// the lseek is left out when the position is already the request's
/// offset: the file is opened for the phase, so it starts at 0, and each
/// call that moved `n` bytes leaves it `n` further on.
#[derive(Debug, Clone, Copy)]
pub struct SeekThen {
    /// Where the descriptor's position is; `None` after a failed call,
    /// which may have left it anywhere.
    pos: Option<u64>,
}

impl SeekThen {
    /// The style for a descriptor just opened (position 0).
    pub fn at_open() -> Self {
        SeekThen { pos: Some(0) }
    }

    /// Moves the position to `offset` unless it is there already.
    #[inline(always)]
    fn seek(&mut self, fd: i32, offset: u64) -> io::Result<()> {
        if self.pos == Some(offset) {
            return Ok(());
        }
        self.pos = None;
        let at = libc::off_t::try_from(offset)
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: lseek takes no memory; `fd` is the open file's descriptor.
        if unsafe { libc::lseek(fd, at, libc::SEEK_SET) } < 0 {
            return Err(io::Error::last_os_error());
        }
        self.pos = Some(offset);
        Ok(())
    }

    /// Notes where a call that started at `offset` left the position.
    #[inline(always)]
    fn moved(&mut self, offset: u64, r: isize) -> io::Result<usize> {
        if r >= 0 {
            self.pos = Some(offset + r as u64);
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            // An interrupted call moved nothing; any other failure is not
            // relied on.
            self.pos = None;
        }
        Err(e)
    }
}

impl SyncCalls<File> for SeekThen {
    const NAME: &'static str = "lseek+read/write";
    #[inline(always)]
    fn read(&mut self, file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let fd = file.as_raw_fd();
        self.seek(fd, offset)?;
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
        let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        self.moved(offset, r)
    }
    #[inline(always)]
    fn write(&mut self, file: &File, buf: &[u8], offset: u64) -> io::Result<usize> {
        let fd = file.as_raw_fd();
        self.seek(fd, offset)?;
        // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
        let r = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        self.moved(offset, r)
    }
}

/// preadv/pwritev with one iovec (fio's `pvsync`) when `V2` is false;
/// preadv2/pwritev2 with one iovec and flags 0 (fio's `pvsync2` without
/// `hipri`/`uncached`/`nowait`) when it is true.
#[derive(Debug, Default, Clone, Copy)]
pub struct Vectored<const V2: bool>;

/// The offset as the vector calls take it.
#[inline(always)]
fn off(offset: u64) -> io::Result<libc::off_t> {
    libc::off_t::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// A call's return as a count or the errno.
#[inline(always)]
fn done(r: isize) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

impl<const V2: bool> SyncCalls<File> for Vectored<V2> {
    const NAME: &'static str = if V2 {
        "preadv2/pwritev2"
    } else {
        "preadv/pwritev"
    };
    #[inline(always)]
    fn read(&mut self, file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let (fd, at) = (file.as_raw_fd(), off(offset)?);
        // SAFETY: one iovec over `buf`, valid for writes of its length,
        // alive across the call. `V2` is a constant: one call is compiled.
        let r = unsafe {
            if V2 {
                libc::preadv2(fd, &iov, 1, at, 0)
            } else {
                libc::preadv(fd, &iov, 1, at)
            }
        };
        done(r)
    }
    #[inline(always)]
    fn write(&mut self, file: &File, buf: &[u8], offset: u64) -> io::Result<usize> {
        let iov = libc::iovec {
            iov_base: buf.as_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let (fd, at) = (file.as_raw_fd(), off(offset)?);
        // SAFETY: one iovec over `buf`, valid for reads of its length (the
        // kernel only reads through it), alive across the call.
        let r = unsafe {
            if V2 {
                libc::pwritev2(fd, &iov, 1, at, 0)
            } else {
                libc::pwritev(fd, &iov, 1, at)
            }
        };
        done(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom};

    /// A scratch file of 64 KiB whose byte i is i / 4096 (its block).
    fn scratch(tag: &str) -> (std::path::PathBuf, File) {
        let p = std::env::temp_dir().join(format!("ioscale-calls-{tag}-{}", std::process::id()));
        let data: Vec<u8> = (0..65536u32).map(|i| (i / 4096) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        (p, f)
    }

    /// Each style reads the block at the offset asked for, in any order,
    /// and writes where it is told.
    fn round_trip<C: SyncCalls<File>>(mut c: C, tag: &str) {
        let (p, f) = scratch(tag);
        let mut buf = vec![0u8; 4096];
        for blk in [3u64, 4, 0, 15, 15, 7] {
            assert_eq!(c.read(&f, &mut buf, blk * 4096).unwrap(), 4096);
            assert!(
                buf.iter().all(|&b| u64::from(b) == blk),
                "{tag} block {blk}"
            );
        }
        let w = vec![0xAB; 4096];
        assert_eq!(c.write(&f, &w, 9 * 4096).unwrap(), 4096);
        assert_eq!(c.read(&f, &mut buf, 9 * 4096).unwrap(), 4096);
        assert!(buf.iter().all(|&b| b == 0xAB));
        // At the end of the file a read moves nothing.
        assert_eq!(c.read(&f, &mut buf, 65536).unwrap(), 0);
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn every_style_moves_the_asked_bytes() {
        round_trip(Positioned, "pos");
        round_trip(SeekThen::at_open(), "seek");
        round_trip(Vectored::<false>, "v");
        round_trip(Vectored::<true>, "v2");
    }

    #[test]
    fn seek_style_follows_the_position_it_left() {
        let (p, mut f) = scratch("pos-track");
        let mut c = SeekThen::at_open();
        let mut buf = vec![0u8; 4096];
        c.read(&f, &mut buf, 4096).unwrap();
        assert_eq!(c.pos, Some(8192));
        assert_eq!(f.stream_position().unwrap(), 8192);
        // Moved behind its back: the tracked position is what it relies
        // on, so a failure forgets it and the next call seeks.
        f.seek(SeekFrom::Start(0)).unwrap();
        c.pos = None;
        c.read(&f, &mut buf, 8192).unwrap();
        assert!(buf.iter().all(|&b| b == 2));
        // An offset past what off_t holds is refused, not wrapped.
        let e = c.read(&f, &mut buf, u64::MAX).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
        assert_eq!(c.pos, None);
        std::fs::remove_file(p).unwrap();
    }
}
