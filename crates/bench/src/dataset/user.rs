//! Files a compatibility front-end names in the user's own directory and
//! lays out before its runs: fio's `DIRECTORY/JOB.CLONE.FILE` and
//! `filename=`.
//!
//! fio creates, extends, opens and unlinks these files by name, so a name
//! planted in a shared directory steers its writes: a symbolic link at a
//! job's file name sends them to the link's target (a block device, a file
//! outside the directory), a FIFO blocks the open for ever, a device node
//! is written into. ioscale takes the same names, but every step goes
//! through a directory opened once ([`UserFiles`]) and held, by the storage
//! backend ([`engine::backend`]): a file is looked at without following a
//! link, made exclusively (never through a link), reopened without
//! following a link or blocking on a FIFO, and anything but a regular file
//! with one link is refused before a byte is written. What this run made
//! is recorded by identity, and only that very file is removed (fio's
//! `unlink=1`). The timed I/O then runs on the same names as a
//! [`FileNaming::Dd`](spec::FileNaming::Dd) set with `nofollow`
//! ([`prepare_laid`]), whose files are all opened in their directory
//! without following a link. The entry points without a backend argument
//! are POSIX's.

use std::ffi::{CString, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use engine::backend::posix::Posix;
use engine::backend::{Access, Advice, Backend, DataFile, Dir, EntryInfo, FileId, Kind, OpenHow};
use spec::WorkloadSpec;

use super::{fs_err, new_marker, parent_of, DataSet, DdSet, SetKind};
use crate::error::Error;

/// The bytes a layout writes per system call.
const CHUNK: usize = 1 << 20;

/// The directories of a command's job files, each opened once and held
/// for the whole command, and the files laid out in them, on backend `B`
/// (POSIX unless named).
#[derive(Debug)]
pub struct UserFiles<B: Backend = Posix> {
    backend: B,
    dirs: Vec<B::Dir>,
}

impl Default for UserFiles<Posix> {
    fn default() -> Self {
        UserFiles::new_on(Posix)
    }
}

/// A file this command made (see [`UserFiles::remove`]). It is held open
/// until it is removed or dropped: a file system hands a deleted file's
/// inode number to the next file made (ext4, tmpfs), so (device, inode)
/// alone cannot tell this file from one made under its name after it was
/// deleted; while this descriptor holds the inode, no other file can have
/// its number.
#[derive(Debug)]
pub struct Made<B: Backend = Posix> {
    /// The path, as the job names it (for messages).
    pub path: PathBuf,
    dir: usize,
    name: OsString,
    id: FileId,
    _held: B::File,
}

/// What [`UserFiles::lay_out`] did.
#[derive(Debug)]
pub struct Laid<B: Backend = Posix> {
    /// Whether the file was short and was laid out (fio's `Laying out IO
    /// file` line).
    pub extended: bool,
    /// The file, when this call made it.
    pub made: Option<Made<B>>,
}

/// What is at `name` in `dir`, never following a link.
fn lstat_at<D: Dir>(
    dir: &D,
    name: &std::ffi::OsStr,
    path: &Path,
) -> Result<Option<EntryInfo>, Error> {
    dir.stat_at(name).map_err(|e| match e.kind {
        safefs::ErrorKind::Io(source) => Error::Setup {
            what: format!("cannot inspect {}", path.display()),
            source,
        },
        safefs::ErrorKind::Refused(_) => fs_err(e),
    })
}

/// Why the entry `info` at `path` cannot be a job's file, if it cannot.
fn refusal(info: &EntryInfo, path: &Path) -> Option<Error> {
    if info.kind != Kind::File {
        let why = match info.kind {
            Kind::Symlink => "ioscale never follows a link at a job's file name",
            Kind::Dir => "a job's file must be a regular file",
            _ => "ioscale works on regular files only, never devices, FIFOs or sockets",
        };
        return Some(Error::Refused(format!(
            "{} is a {}: {why}; remove it or choose another directory",
            path.display(),
            info.kind.name()
        )));
    }
    (info.links > 1).then(|| {
        Error::Refused(format!(
            "{} has {} hard links: writing it would change another name's file too; \
             remove it or choose another directory",
            path.display(),
            info.links
        ))
    })
}

/// `p`'s directory and its name in it.
fn split(p: &Path) -> Result<(PathBuf, OsString), Error> {
    let name = p.file_name().map(|n| n.to_os_string());
    match name {
        Some(n) if n != "." && n != ".." => Ok((parent_of(p), n)),
        _ => Err(Error::Refused(format!(
            "{}: not a file name (it ends in `..`, `.` or `/`)",
            p.display()
        ))),
    }
}

impl UserFiles<Posix> {
    /// No directory held yet, on a POSIX file system.
    pub fn new() -> Self {
        UserFiles::new_on(Posix)
    }
}

impl<B: Backend> UserFiles<B> {
    /// No directory held yet, on `backend`.
    pub fn new_on(backend: B) -> Self {
        UserFiles {
            backend,
            dirs: Vec::new(),
        }
    }

    /// The held handle of directory `d`, opened now if this is its first
    /// file (a link in the path the user gave is followed: the directory
    /// is the user's choice, as TARGET is).
    fn held(&mut self, d: &Path) -> Result<usize, Error> {
        if let Some(i) = self.dirs.iter().position(|h| h.path() == d) {
            return Ok(i);
        }
        let h = self.backend.open_target(d).map_err(|e| match e.kind {
            safefs::ErrorKind::Io(source) => Error::Setup {
                what: format!("directory {}", d.display()),
                source,
            },
            safefs::ErrorKind::Refused(_) => fs_err(e),
        })?;
        self.dirs.push(h);
        Ok(self.dirs.len() - 1)
    }

    /// Looks at a job's file before anything is written: `Ok(Some(size))`
    /// for a regular file with one link, `Ok(None)` when the name is free;
    /// a link (dangling or not), a directory, a device, a FIFO, a socket
    /// or a hard-linked file is refused ([`Error::Refused`]) without being
    /// opened.
    pub fn check(&mut self, p: &Path) -> Result<Option<u64>, Error> {
        let (d, name) = split(p)?;
        let i = self.held(&d)?;
        match lstat_at(&self.dirs[i], &name, p)? {
            None => Ok(None),
            Some(info) => match refusal(&info, p) {
                Some(e) => Err(e),
                None => Ok(Some(info.size)),
            },
        }
    }

    /// Makes `p` hold at least `size` bytes, as fio lays out a job's file:
    /// a file that is long enough is left alone; otherwise its blocks are
    /// allocated (`fallocate`, where the file system has it) and, with
    /// `fill` (a job that reads), the missing bytes are written and synced.
    /// A missing file is made exclusively and recorded; an existing one
    /// must be a regular file with one link (checked again on the open
    /// file, so a swap after [`UserFiles::check`] is refused, never
    /// followed). `stop` (a signal) ends a long fill with
    /// [`Error::Interrupted`]. A failed write is an [`Error::Setup`]
    /// naming the file. A file this call made is handed back only when it
    /// succeeds ([`Laid::made`]); on any error it is removed here (by
    /// identity), so a failed layout leaves none of its own bytes behind.
    pub fn lay_out(
        &mut self,
        p: &Path,
        size: u64,
        fill: bool,
        stop: &AtomicBool,
    ) -> Result<Laid<B>, Error> {
        if i64::try_from(size).is_err() {
            return Err(Error::Refused(format!(
                "{}: {size} bytes is past the largest file offset (2^63-1)",
                p.display()
            )));
        }
        let (d, name) = split(p)?;
        let i = self.held(&d)?;
        let dir = &self.dirs[i];
        if let Some(info) = lstat_at(dir, &name, p)? {
            if let Some(e) = refusal(&info, p) {
                return Err(e);
            }
            if info.size >= size {
                return Ok(Laid {
                    extended: false,
                    made: None,
                });
            }
        }
        let (file, id) = open_to_lay_out(dir, &name, p)?;
        if let Err(e) = extend(&file, size, fill, stop) {
            if let Some(id) = id {
                let _ = dir.unlink_at(&name, Some(id));
            }
            return Err(e.named(p));
        }
        Ok(Laid {
            extended: true,
            made: id.map(|id| Made {
                path: p.to_path_buf(),
                dir: i,
                name,
                id,
                _held: file,
            }),
        })
    }

    /// Checks that each held directory is still the one at its path: a
    /// directory renamed away and replaced (or removed) since the command
    /// opened it is refused, naming it, before the next step opens
    /// anything by path.
    pub fn check_dirs(&self) -> Result<(), Error> {
        for h in &self.dirs {
            let now = self.backend.open_target(h.path()).map(|d| d.id());
            if now.as_ref().ok() != Some(&h.id()) {
                return Err(Error::Refused(format!(
                    "directory {} was replaced or removed while the command ran (it is no longer \
                     the directory opened at the start); nothing more is written there",
                    h.path().display()
                )));
            }
        }
        Ok(())
    }

    /// Removes the files this command made (fio's `unlink=1`), each only
    /// while it is still that very file, through the directory held since
    /// the start (never a directory swapped in under its path). Returns
    /// what could not be removed.
    pub fn remove(&self, made: &[Made<B>]) -> Vec<String> {
        let mut left = Vec::new();
        for m in made {
            match self.dirs[m.dir].unlink_at(&m.name, Some(m.id)) {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => left.push(e.to_string()),
            }
        }
        left
    }
}

/// The file `name` of `dir` to lay out: made exclusively (its identity
/// then recorded), or the existing one opened to write, refused when it
/// has other hard links.
fn open_to_lay_out<D: Dir>(
    dir: &D,
    name: &std::ffi::OsStr,
    p: &Path,
) -> Result<(D::File, Option<FileId>), Error> {
    match dir.create_at(name, 0o644) {
        Ok((f, id)) => Ok((f, Some(id))),
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
            let (f, _) = dir
                .open_file_at(name, Access::Write, None)
                .map_err(fs_err)?;
            let links = f
                .links()
                .map_err(|e| Error::io(format!("cannot inspect {}", p.display()), e))?;
            if links > 1 {
                return Err(Error::Refused(format!(
                    "{} has other hard links: writing it would change another name's file \
                     too; remove it or choose another directory",
                    p.display()
                )));
            }
            Ok((f, None))
        }
        Err(e) => Err(fs_err(e)),
    }
}

/// Why extending a file stopped.
enum Stopped {
    Io(&'static str, io::Error),
    Signal,
}

impl Stopped {
    fn named(self, p: &Path) -> Error {
        match self {
            Stopped::Io(what, source) => Error::Setup {
                what: format!("laying out {} ({what})", p.display()),
                source,
            },
            Stopped::Signal => Error::Interrupted,
        }
    }
}

/// Allocates `file` up to `end` and, with `fill`, writes its missing
/// bytes and syncs it.
fn extend<F: DataFile>(file: &F, end: u64, fill: bool, stop: &AtomicBool) -> Result<(), Stopped> {
    let have = file.size().map_err(|e| Stopped::Io("fstat", e))?;
    // fio's default fallocate=native: fallocate(2) itself, mode 0. A file
    // system without it gets its blocks from the writes (fio goes on too).
    if let Err(e) = file.allocate(end) {
        if !matches!(
            e.raw_os_error(),
            Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS)
        ) {
            return Err(Stopped::Io("fallocate", e));
        }
    }
    if !fill {
        return drop_extended(file, have, end);
    }
    let chunk = vec![0xa5u8; CHUNK];
    let mut at = have;
    // Sequential writes from the end of what is there, as fio's layout.
    while at < end {
        if stop.load(Ordering::Relaxed) {
            return Err(Stopped::Signal);
        }
        let n = (end - at).min(CHUNK as u64) as usize;
        let done = file
            .write_at(&chunk[..n], at)
            .map_err(|e| Stopped::Io("write", e))?;
        if done == 0 {
            let e = io::Error::from_raw_os_error(libc::ENOSPC);
            return Err(Stopped::Io("write", e));
        }
        at += done as u64;
    }
    file.sync().map_err(|e| Stopped::Io("fsync", e))?;
    drop_extended(file, have, end)
}

/// Drops the cached pages of the part a layout added, as fio does after
/// laying out a file whatever its `invalidate=`.
fn drop_extended<F: DataFile>(file: &F, have: u64, end: u64) -> Result<(), Stopped> {
    file.advise(have, end.saturating_sub(have), Advice::DontNeed)
        .map_err(|e| Stopped::Io("posix_fadvise", e))
}

/// The data set of a run on files [`UserFiles`] laid out (`FileNaming::Dd`
/// with `nofollow`): each must still be a regular file (a read run's at
/// least as long as it reads), looked at without following a link; none
/// is made or removed here, and the workers open every one in its
/// directory with `O_NOFOLLOW` ([`DdSet::nofollow`]).
pub(super) fn prepare_laid<B: Backend>(
    backend: B,
    spec: &WorkloadSpec,
    paths: &[PathBuf],
    run_id: &str,
) -> Result<DataSet<B>, Error> {
    let writes = spec.ops.iter().any(|o| o.writes());
    let mut files = UserFiles::new_on(backend.clone());
    let mut had_data = true;
    for p in paths {
        match files.check(p)? {
            Some(len) if len >= spec.file_size() => {}
            Some(_) if writes => had_data = false,
            Some(len) => {
                return Err(Error::Refused(format!(
                    "{} holds {len} bytes but this run reads {}; it was laid out before the run, \
                     so it was changed since",
                    p.display(),
                    spec.file_size()
                )))
            }
            None => {
                return Err(Error::Refused(format!(
                    "{} is gone: it was laid out before the run, so it was removed or its \
                     directory replaced since",
                    p.display()
                )))
            }
        }
    }
    Ok(DataSet {
        root: paths.first().map(|p| parent_of(p)).unwrap_or_default(),
        created_root: false,
        files: paths.to_vec(),
        dirs: Vec::new(),
        marker: new_marker(spec, run_id),
        had_data,
        kind: SetKind::Dd(DdSet {
            created: Vec::new(),
            nofollow: true,
        }),
        guard: None,
        peer: None,
        backend,
    })
}

/// O_DIRECT checked on a job's own file, for a file system without
/// unnamed files ([`super::probe_direct_for_on`]): the file is opened as a
/// data file (never through a link, never a FIFO, device or hard-linked
/// file) with O_DIRECT, and one transfer is read at `offset` (rounded down
/// to 4 KiB). Nothing is written and nothing is made. A region that was
/// never written (a hole) may be served without the alignment check; the
/// job then names the misalignment itself.
pub(super) fn probe_file<B: Backend>(
    backend: &B,
    p: &Path,
    offset: u64,
    xfer: u64,
) -> Result<(), Error> {
    let (d, name) = split(p)?;
    let dir = backend.open_target(&d).map_err(fs_err)?;
    let at = B::at_of(&dir).map_err(|e| Error::io(format!("cannot hold {}", d.display()), e))?;
    let name = CString::new(std::os::unix::ffi::OsStrExt::as_bytes(name.as_os_str()))
        .map_err(|_| Error::Refused(format!("{}: a name with a NUL byte", p.display())))?;
    let how = OpenHow {
        read: true,
        direct: true,
        ..OpenHow::default()
    };
    let file = B::open_data(&at, &name, how).map_err(|e| {
        if e.raw_os_error() == Some(libc::EINVAL) {
            super::direct_refused(&d, e)
        } else {
            Error::Refused(format!(
                "cannot open {} for the O_DIRECT check: {e}",
                p.display()
            ))
        }
    })?;
    let len = xfer.min(1 << 20) as usize;
    let mut buf = engine::buf::AlignedBuf::new(len, 4096);
    let r = file.read_at(buf.as_mut_slice(), offset / 4096 * 4096);
    let _ = file.close();
    match r {
        Ok(_) => Ok(()),
        Err(e) => Err(super::transfer_refused(&d, xfer, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    fn never() -> AtomicBool {
        AtomicBool::new(false)
    }

    #[test]
    fn check_refuses_what_is_not_one_regular_file_without_opening_it() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let mut u = UserFiles::new();
        assert_eq!(u.check(&d.join("free")).unwrap(), None);
        std::fs::write(d.join("f"), b"12345").unwrap();
        assert_eq!(u.check(&d.join("f")).unwrap(), Some(5));
        std::os::unix::fs::symlink(d.join("nowhere"), d.join("dangling")).unwrap();
        std::os::unix::fs::symlink(d.join("f"), d.join("link")).unwrap();
        std::fs::create_dir(d.join("dir")).unwrap();
        std::fs::hard_link(d.join("f"), d.join("hard")).unwrap();
        let fifo = std::ffi::CString::new(d.join("fifo").as_os_str().as_bytes()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path of the test's own.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        for (name, says) in [
            ("dangling", "symbolic link"),
            ("link", "symbolic link"),
            ("dir", "directory"),
            ("hard", "hard links"),
            ("fifo", "FIFO"),
        ] {
            let e = u.check(&d.join(name)).unwrap_err();
            assert!(matches!(e, Error::Refused(_)), "{name}: {e}");
            assert!(e.to_string().contains(says), "{name}: {e}");
        }
        assert_eq!(u.dirs.len(), 1, "one held handle per directory");
        assert!(u.check(&d.join("..")).is_err());
    }

    #[test]
    fn lay_out_makes_fills_extends_and_removes_only_what_it_made() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let mut u = UserFiles::new();
        let a = d.join("a");
        let laid = u.lay_out(&a, 3 << 20, true, &never()).unwrap();
        assert!(laid.extended);
        let made = laid.made.expect("made");
        let bytes = std::fs::read(&a).unwrap();
        assert_eq!(bytes.len(), 3 << 20);
        assert!(bytes.iter().all(|&b| b == 0xa5));
        // Long enough: left alone, not made again.
        let again = u.lay_out(&a, 1 << 20, true, &never()).unwrap();
        assert!(!again.extended && again.made.is_none());
        // A user's short file is extended from its end, never truncated.
        let b = d.join("b");
        std::fs::write(&b, b"user").unwrap();
        let laid = u.lay_out(&b, 8192, true, &never()).unwrap();
        assert!(laid.extended && laid.made.is_none());
        let bb = std::fs::read(&b).unwrap();
        assert_eq!((&bb[..4], bb.len()), (&b"user"[..], 8192));
        // A write job's file is allocated, not written.
        let w = d.join("w");
        u.lay_out(&w, 1 << 20, false, &never()).unwrap();
        assert_eq!(std::fs::metadata(&w).unwrap().len(), 1 << 20);
        // `a` replaced by another file under its name: not removed.
        std::fs::remove_file(&a).unwrap();
        std::fs::write(&a, b"someone else's").unwrap();
        let left = u.remove(std::slice::from_ref(&made));
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(std::fs::read(&a).unwrap(), b"someone else's");
    }

    #[test]
    fn a_stop_ends_a_fill_and_removes_the_file_it_made() {
        let t = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(true);
        let mut u = UserFiles::new();
        let e = u
            .lay_out(&t.path().join("s"), 4 << 20, true, &stop)
            .unwrap_err();
        assert!(matches!(e, Error::Interrupted));
        assert!(!t.path().join("s").exists());
    }

    #[test]
    fn a_link_planted_after_the_check_is_refused_at_layout() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let mut u = UserFiles::new();
        let p = d.join("j.0.0");
        assert_eq!(u.check(&p).unwrap(), None);
        let victim = d.join("victim");
        std::fs::write(&victim, b"v").unwrap();
        std::os::unix::fs::symlink(&victim, &p).unwrap();
        let e = u.lay_out(&p, 4096, true, &never()).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"v");
    }

    #[test]
    fn a_replaced_directory_is_named_and_removal_goes_through_the_held_one() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("jobs");
        std::fs::create_dir(&d).unwrap();
        let mut u = UserFiles::new();
        let made = u
            .lay_out(&d.join("f"), 4096, false, &never())
            .unwrap()
            .made
            .unwrap();
        u.check_dirs().unwrap();
        let old = t.path().join("jobs.old");
        std::fs::rename(&d, &old).unwrap();
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("f"), b"foreign").unwrap();
        let e = u.check_dirs().unwrap_err();
        assert!(e.to_string().contains("replaced"), "{e}");
        assert!(u.remove(&[made]).is_empty());
        assert!(!old.join("f").exists());
        assert_eq!(std::fs::read(d.join("f")).unwrap(), b"foreign");
    }
}
