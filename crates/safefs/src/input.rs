//! Reading a record the user named (`report FILE`, `compare A B`,
//! `sweep --resume FILE`) with a bound on memory.
//!
//! Only a regular file (or `-`, standard input) is read; a device, FIFO or
//! directory is refused before any read, without blocking (the open uses
//! `O_NONBLOCK`). A file larger than the limit — [`MAX_RECORD_BYTES`] unless
//! the caller gives another — is refused from its size, and reading stops
//! one byte past the limit if it grows meanwhile, so memory stays within
//! the limit whatever the file does.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use rustix::fs::{Mode, OFlags};

use crate::dir::Kind;
use crate::error::FlagError;

/// The largest record ioscale reads: 1 GiB. A record of a million-point
/// sweep is far below it; `/dev/zero` or a wrong file is refused.
pub const MAX_RECORD_BYTES: u64 = 1 << 30;

/// Opens the record `path` given with `flag` for a streaming parser: a
/// regular file of at most `limit` bytes (see the module docs). Returns a
/// reader that ends after `limit` bytes even if the file grows (a parser
/// then sees a truncated record and fails) and the file's size. `-` is
/// not accepted here (use [`read_bounded`]).
pub fn open_bounded(
    flag: &str,
    path: &Path,
    limit: u64,
) -> Result<(std::io::Take<File>, u64), FlagError> {
    let (f, size) = open_regular(flag, path, limit)?;
    Ok((f.take(limit), size))
}

fn open_regular(flag: &str, path: &Path, limit: u64) -> Result<(File, u64), FlagError> {
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    let fd =
        rustix::fs::open(path, flags, Mode::empty()).map_err(|e| FlagError::io(flag, path, e))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| FlagError::io(flag, path, e))?;
    let k = Kind::of(st.st_mode);
    if k != Kind::File {
        return Err(FlagError::refused(
            flag,
            path,
            format!(
                "is a {}; ioscale reads records only from regular files",
                k.name()
            ),
        ));
    }
    let size = st.st_size as u64;
    if size > limit {
        return Err(FlagError::refused(
            flag,
            path,
            format!("is {size} bytes, more than the {limit} bytes ioscale reads as a record"),
        ));
    }
    let fl = rustix::fs::fcntl_getfl(&fd).map_err(|e| FlagError::io(flag, path, e))?;
    rustix::fs::fcntl_setfl(&fd, fl - OFlags::NONBLOCK)
        .map_err(|e| FlagError::io(flag, path, e))?;
    Ok((File::from(fd), size))
}

/// Reads the whole record `path` (or standard input for `-`) into memory,
/// refusing anything but a regular file and more than `limit` bytes.
pub fn read_bounded(flag: &str, path: &Path, limit: u64) -> Result<Vec<u8>, FlagError> {
    let (reader, size): (Box<dyn Read>, u64) = if path.as_os_str() == "-" {
        (Box::new(std::io::stdin().lock()), 0)
    } else {
        let (f, size) = open_regular(flag, path, limit)?;
        (Box::new(f), size)
    };
    let mut buf = Vec::with_capacity(size.min(limit) as usize);
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| FlagError::io(flag, path, e))?;
    if buf.len() as u64 > limit {
        return Err(FlagError::refused(
            flag,
            path,
            format!("holds more than the {limit} bytes ioscale reads as a record"),
        ));
    }
    Ok(buf)
}
