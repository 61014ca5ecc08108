//! Writing a result file the user named (`--json`, `--csv`, `--html`,
//! IOR's `summaryFile=`, smallfile's `--output-json`, `report --csv`).
//!
//! | the path is | ioscale |
//! |---|---|
//! | `-`, `/dev/stdout`, `/dev/stderr`, `/dev/fd/1`, `/dev/fd/2` | writes to standard output (error) through the open descriptor |
//! | a FIFO or a character device (`/dev/null`, `/dev/stdout`, a tty), or a link to one | opens it for writing without creating or truncating it and writes straight into it; never renames over it |
//! | a regular file, a link to one, or a missing name in an existing directory | replaces it atomically: a temporary file beside it (beside the link's target for a link), `fsync`, rename; in place when the file system cannot rename; the temporary file removed on any failure |
//! | anything else: a directory, a block device, a socket, a dangling link, a missing directory | refuses before writing ([`FlagError::exit_code`] 2, naming the flag) |
//!
//! Two outputs of one command must not take one [`Place`] (the later would
//! replace the earlier), nor an output the place of a file the run reads
//! or writes: the binary checks both with [`OutputTarget::place`] and
//! [`place_of`].
//!
//! Call [`check_output`] for every output flag before the run starts (so a
//! bad path costs no benchmark time), and [`write_output`] when the bytes
//! are ready. A write error (ENOSPC from `/dev/full`, EPIPE) is an I/O
//! error: exit 1, never 0.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{Mode, OFlags};

use crate::dir::{DirHandle, Kind};
use crate::error::FlagError;
use crate::replace::{replace_at, Written};

/// Where a result goes, as [`check_output`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputTarget {
    /// `-`, `/dev/stdout`, `/dev/fd/1`: standard output.
    Stdout,
    /// `/dev/stderr`, `/dev/fd/2`: standard error.
    Stderr,
    /// A FIFO or character device, written straight into.
    Stream {
        /// The path as given.
        path: PathBuf,
        /// [`Kind::Fifo`] or [`Kind::CharDevice`].
        kind: Kind,
    },
    /// A regular file (or a missing name) replaced atomically.
    Replace {
        /// The directory the file is (or will be) in, links resolved.
        dir: PathBuf,
        /// The file's name in it.
        name: std::ffi::OsString,
    },
}

/// Where a file is named: its directory's (device, inode) and its name
/// in it. Two paths with one place name one file however they are
/// spelled (`d/x`, `d/./x`, `e/../d/x`, a link to `d/x`); replacing one
/// replaces the other. (Hard links are two places: replacing one name
/// leaves the other's data.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    dev: u64,
    ino: u64,
    name: std::ffi::OsString,
}

impl OutputTarget {
    /// The place a replaced file takes ([`OutputTarget::Replace`]); `None`
    /// for a stream, which is written into and takes any number of
    /// outputs one after another.
    pub fn place(&self) -> Option<Place> {
        match self {
            OutputTarget::Replace { dir, name } => place_in(dir, name),
            _ => None,
        }
    }
}

/// The place of `path` (a file read or written, or about to be made),
/// a symbolic link followed to its target as an output's would be;
/// `None` when its directory cannot be found or it names no file.
pub fn place_of(path: &Path) -> Option<Place> {
    let resolved = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).ok()?,
        _ => path.to_path_buf(),
    };
    let (dir, name) = split(&resolved);
    place_in(&dir, name?)
}

fn place_in(dir: &Path, name: &OsStr) -> Option<Place> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(dir).ok()?;
    Some(Place {
        dev: m.dev(),
        ino: m.ino(),
        name: name.to_os_string(),
    })
}

fn kind_of(m: &std::fs::Metadata) -> Kind {
    use std::os::unix::fs::MetadataExt;
    Kind::of(m.mode())
}

/// Checks that `path`, given with `flag`, can take a result (see the
/// module docs), without writing anything.
pub fn check_output(flag: &str, path: &Path) -> Result<OutputTarget, FlagError> {
    if path.as_os_str() == "-" {
        return Ok(OutputTarget::Stdout);
    }
    // The process's own descriptors: write to them, never resolve them to
    // the file behind (`--json /dev/stdout > out.txt` must not replace
    // out.txt by rename, nor rewrite it from offset 0).
    for (names, t) in [
        (
            ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"],
            OutputTarget::Stdout,
        ),
        (
            ["/dev/stderr", "/dev/fd/2", "/proc/self/fd/2"],
            OutputTarget::Stderr,
        ),
    ] {
        if names.iter().any(|n| path.as_os_str() == *n) {
            return Ok(t);
        }
    }
    let refuse = |why: String| Err(FlagError::refused(flag, path, why));
    let lmeta = match std::fs::symlink_metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(FlagError::io(flag, path, e)),
    };
    let Some(lmeta) = lmeta else {
        let (dir, name) = split(path);
        let Some(name) = name else {
            return refuse("names no file".into());
        };
        return match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => Ok(OutputTarget::Replace {
                dir,
                name: name.to_os_string(),
            }),
            Ok(_) => refuse(format!("{} is not a directory", dir.display())),
            Err(_) => refuse(format!("the directory {} does not exist", dir.display())),
        };
    };
    let (meta, resolved) = if lmeta.file_type().is_symlink() {
        match (std::fs::metadata(path), std::fs::canonicalize(path)) {
            (Ok(m), Ok(r)) => (m, r),
            _ => {
                return refuse(
                    "is a symbolic link to nothing; ioscale does not create a link's target".into(),
                )
            }
        }
    } else {
        (lmeta, path.to_path_buf())
    };
    match kind_of(&meta) {
        Kind::File => {
            let (dir, name) = split(&resolved);
            let name = name.expect("a regular file has a name").to_os_string();
            Ok(OutputTarget::Replace { dir, name })
        }
        k @ (Kind::Fifo | Kind::CharDevice) => Ok(OutputTarget::Stream {
            path: path.to_path_buf(),
            kind: k,
        }),
        k => refuse(format!(
            "is a {}; results go to a regular file, a FIFO, a character device or - (standard output)",
            k.name()
        )),
    }
}

/// Opens a FIFO or character device for writing, never creating or
/// truncating it. Non-blocking, so a FIFO without a reader (ENXIO) is
/// waited for in slices that look at `stop`; blocking again once open.
fn open_stream(
    flag: &str,
    shown: &Path,
    p: &Path,
    stop: &AtomicBool,
) -> Result<rustix::fd::OwnedFd, FlagError> {
    let flags = OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
    let was_stopped = stop.load(Ordering::Relaxed);
    loop {
        match rustix::fs::open(p, flags, Mode::empty()) {
            Ok(fd) => {
                let fl = rustix::fs::fcntl_getfl(&fd).map_err(|e| FlagError::io(flag, shown, e))?;
                rustix::fs::fcntl_setfl(&fd, fl - OFlags::NONBLOCK)
                    .map_err(|e| FlagError::io(flag, shown, e))?;
                return Ok(fd);
            }
            Err(rustix::io::Errno::NXIO) => {
                if !was_stopped && stop.load(Ordering::Relaxed) {
                    return Err(FlagError::refused(
                        flag,
                        shown,
                        "is a FIFO no reader opened before ioscale was interrupted; not written",
                    ));
                }
                std::thread::sleep(crate::sleep::SLICE);
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(FlagError::io(flag, shown, e)),
        }
    }
}

fn split(p: &Path) -> (PathBuf, Option<&OsStr>) {
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    (dir, p.file_name())
}

/// How [`write_output`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputWritten {
    /// To standard output or standard error.
    Stdout,
    /// Straight into a FIFO or character device.
    Stream,
    /// A regular file, replaced atomically or in place.
    File(Written),
}

/// Writes `bytes` to the output `path` given with `flag` (see the module
/// docs).
pub fn write_output(flag: &str, path: &Path, bytes: &[u8]) -> Result<OutputWritten, FlagError> {
    write_output_until(flag, path, bytes, &AtomicBool::new(false))
}

/// Writes `bytes` to `out` (standard output or standard error, locked)
/// and flushes it: [`OutputWritten::Stdout`] either way.
fn write_std(
    flag: &str,
    path: &Path,
    mut out: impl Write,
    bytes: &[u8],
) -> Result<OutputWritten, FlagError> {
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|e| FlagError::io(flag, path, e))?;
    Ok(OutputWritten::Stdout)
}

/// As [`write_output`]; a FIFO that no reader has opened is waited for
/// in slices of [`crate::sleep::SLICE`] until one does or `stop` goes from
/// clear to set (a signal arrived while waiting): then nothing is written
/// and the error says so. A blocking `open` would restart after the
/// signal handler and wait for ever.
pub fn write_output_until(
    flag: &str,
    path: &Path,
    bytes: &[u8],
    stop: &AtomicBool,
) -> Result<OutputWritten, FlagError> {
    match check_output(flag, path)? {
        OutputTarget::Stdout => write_std(flag, path, std::io::stdout().lock(), bytes),
        OutputTarget::Stderr => write_std(flag, path, std::io::stderr().lock(), bytes),
        OutputTarget::Stream { path: p, .. } => {
            let fd = open_stream(flag, path, &p, stop)?;
            let st = rustix::fs::fstat(&fd).map_err(|e| FlagError::io(flag, path, e))?;
            let k = Kind::of(st.st_mode);
            if !matches!(k, Kind::Fifo | Kind::CharDevice) {
                return Err(FlagError::refused(
                    flag,
                    path,
                    format!("changed into a {} while ioscale ran; not written", k.name()),
                ));
            }
            let mut f = File::from(fd);
            f.write_all(bytes)
                .and_then(|()| f.flush())
                .map_err(|e| FlagError::io(flag, path, e))?;
            Ok(OutputWritten::Stream)
        }
        OutputTarget::Replace { dir, name } => {
            let d = DirHandle::open_target(&dir).map_err(|e| FlagError::of(flag, path, e))?;
            replace_at(&d, &name, bytes)
                .map(OutputWritten::File)
                .map_err(|e| FlagError::of(flag, path, e))
        }
    }
}
