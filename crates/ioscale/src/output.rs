//! The one way ioscale writes a result file.
//!
//! A regular file (or a new name) is written to a temporary file beside it
//! and renamed over it, so a reader (or a resumed sweep) never sees half a
//! record and an interrupted write leaves the previous file intact; a FIFO,
//! a character device (`/dev/null`) or `-` (standard output) is written
//! into, never replaced; anything else is refused (exit 2). See
//! `safefs::write_output`. A path the results could not be written to is
//! refused before the run ([`check_output_set`]), not after it.

use std::path::Path;
use std::sync::atomic::AtomicBool;

/// Whether a stop signal has arrived (see [`crate::signals`]).
pub fn interrupted() -> bool {
    crate::signals::received()
}

/// Writes `bytes` to `p` (see the module docs).
pub fn write_atomic(p: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    write_named("output", p, bytes)
}

/// [`write_atomic`], an error naming the option `flag` gave `p` with.
pub fn write_named(flag: &str, p: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    // A FIFO without a reader is waited for only until a signal arrives.
    let never = AtomicBool::new(false);
    let stop = crate::signals::stop_flag().map_or(&never, |s| s.as_ref());
    safefs::write_output_until(flag, p, bytes, stop)?;
    Ok(())
}

/// Saves an interrupted run's record (`--json`, `--csv`) before its files
/// are removed: a second Ctrl-C during a long cleanup then cuts the
/// cleanup short, never the record. `saved` tells the caller not to
/// write them again.
pub struct EarlySave<'a> {
    json: Option<&'a Path>,
    csv: Option<&'a Path>,
    /// What the cleanup removes, for the message ("the tree", "the files").
    what: &'static str,
    /// The record was written here.
    pub saved: bool,
}

impl<'a> EarlySave<'a> {
    /// For the outputs `json` and `csv` of a run whose cleanup removes
    /// `what`.
    pub fn new(json: Option<&'a Path>, csv: Option<&'a Path>, what: &'static str) -> Self {
        EarlySave {
            json,
            csv,
            what,
            saved: false,
        }
    }

    /// Writes the record and says that the cleanup starts.
    pub fn save(&mut self, rs: &report::ResultSet) {
        for (p, kind, flag) in [
            (self.json, report::ExportType::Json, "--json"),
            (self.csv, report::ExportType::Csv, "--csv"),
        ] {
            if let Some(p) = p {
                match kind.exporter().render(rs) {
                    Ok(bytes) => {
                        if let Err(e) = write_named(flag, p, &bytes) {
                            eprintln!("ioscale: error: {e:#}");
                        }
                    }
                    Err(e) => eprintln!("ioscale: error: {e:#}"),
                }
            }
        }
        self.saved = true;
        eprintln!(
            "ioscale: interrupted: the record is saved; removing {w} now \
             (a second Ctrl-C stops that and leaves {w}; \
             `ioscale clean TARGET` removes it)",
            w = self.what
        );
    }
}

/// Refuses, before the run, an output path the results could not be
/// written to: a missing directory, a directory, a socket or block device
/// (see `safefs::check_output`), rather than losing the results after it.
pub(crate) fn check_output_path(flag: &str, p: &Path) -> anyhow::Result<()> {
    safefs::check_output(flag, p)?;
    Ok(())
}

/// Checks every output of one command ([`check_output_path`]) and that
/// no two replace the same file, nor one a file the run itself reads or
/// writes (`data`, each with the operand that names it): the later would
/// replace the earlier when the results are written, after the run.
/// Streams (a FIFO, a character device, `-`) take several outputs.
pub(crate) fn check_output_set(
    outputs: &[(&str, Option<&Path>)],
    data: &[(&str, &Path)],
) -> anyhow::Result<()> {
    let mut taken: Vec<(&str, safefs::Place)> = Vec::new();
    for &(flag, p) in outputs {
        let Some(p) = p else { continue };
        let Some(place) = safefs::check_output(flag, p)?.place() else {
            continue;
        };
        if history::db::is_history(p) {
            anyhow::bail!(
                "{flag} {}: an ioscale results history (docs/history.md); {flag} would replace every run in it",
                p.display()
            );
        }
        if let Some((first, _)) = taken.iter().find(|(_, q)| *q == place) {
            anyhow::bail!(
                "{flag} {}: the same file as {first}; each output needs a file of its own",
                p.display()
            );
        }
        if let Some((what, d)) = data
            .iter()
            .find(|(_, d)| safefs::place_of(d).as_ref() == Some(&place))
        {
            anyhow::bail!(
                "{flag} {}: the same file as {what}{}, which this command reads or writes; {flag} would replace it",
                p.display(),
                d.display()
            );
        }
        taken.push((flag, place));
    }
    Ok(())
}

/// A directory of result files a command writes by name (io500's result
/// directory: `result.txt`, `config.ini`, a `.txt` and `.csv` per phase,
/// the timestamp file), through the one safe way of [`write_named`]'s:
///
/// - [`ResultDir::check`], before the run, checks every name the command
///   will write: an entry there that is not a regular file — a symbolic
///   link (to a foreign file or a device), a FIFO, a device, a directory —
///   is refused (exit 2), nothing written; [`ResultDir::open`] then makes
///   the directory (and its missing parents) unless it exists;
/// - every file is then written through the directory held open since,
///   to a temporary name and renamed over its own (safefs `replace_at`):
///   a link planted at a name later is replaced as a name, never followed,
///   and a file's other hard links keep their content.
pub(crate) struct ResultDir {
    flag: String,
    dir: safefs::DirHandle,
}

impl ResultDir {
    /// Checks, before the run, every one of `names` in the directory
    /// `path` (given with `flag`) when it exists; creates nothing.
    pub(crate) fn check(flag: &str, path: &Path, names: &[String]) -> anyhow::Result<()> {
        match safefs::DirHandle::open_target(path) {
            Ok(dir) => check_names(flag, &dir, names),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(safefs::FlagError::of(flag, path, e).into()),
        }
    }

    /// Makes the directory `path` (and its missing parents) unless it
    /// exists, opens it, and checks `names` in it as [`ResultDir::check`].
    pub(crate) fn open(flag: &str, path: &Path, names: &[String]) -> anyhow::Result<ResultDir> {
        let dir = make_dir_all(flag, path)?;
        check_names(flag, &dir, names)?;
        Ok(ResultDir {
            flag: flag.to_string(),
            dir,
        })
    }

    /// Writes `bytes` as `name` (see the type).
    pub(crate) fn write(&self, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
        safefs::replace_at(&self.dir, name, bytes)
            .map_err(|e| safefs::FlagError::of(&self.flag, &self.dir.child_path(name), e))?;
        Ok(())
    }

    /// The held directory, for the driver library's steps that make a
    /// file in it (io500's timestamp file: `bench::stamp`).
    pub(crate) fn held(&self) -> &safefs::DirHandle {
        &self.dir
    }
}

/// Refuses `dir` when one of `names` in it is not a regular file.
fn check_names(flag: &str, dir: &safefs::DirHandle, names: &[String]) -> anyhow::Result<()> {
    for n in names {
        let at = dir.child_path(n);
        let found = dir
            .stat_at(n)
            .map_err(|e| safefs::FlagError::of(flag, &at, e))?;
        if let Some(info) = found.filter(|i| i.kind != safefs::Kind::File) {
            anyhow::bail!(
                "{flag} {}: {} is a {}, not a result file; refusing to write through it \
                 (remove it, or choose another {flag})",
                dir.path().display(),
                at.display(),
                info.kind.name()
            );
        }
    }
    Ok(())
}

/// Opens the directory `path`, making it and its missing parents first
/// (each made with `mkdir` below its parent as the user named it).
fn make_dir_all(flag: &str, path: &Path) -> anyhow::Result<safefs::DirHandle> {
    let missing: Vec<&Path> = path
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .take_while(|a| std::fs::symlink_metadata(a).is_err())
        .collect();
    for a in missing.iter().rev() {
        let parent = match a.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = a.file_name().unwrap_or_default();
        match safefs::DirHandle::open_target(parent).and_then(|p| p.mkdir_at(name, 0o755)) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
            Err(e) => return Err(safefs::FlagError::of(flag, a, e).into()),
        }
    }
    safefs::DirHandle::open_target(path).map_err(|e| safefs::FlagError::of(flag, path, e).into())
}

/// A record written again and again while a command runs (a sweep's
/// `--json`, after every point). Where it goes is settled once, when the
/// command starts, and kept:
///
/// - a regular file (or a new name; a link at the start is followed, as
///   for every output) is replaced by rename through the directory opened
///   then, under the name found then: a symbolic link put at that name
///   later is refused, never followed (before, the next rewrite replaced
///   whatever file the link named);
/// - while the command runs it holds a lock beside the record
///   (`NAME.lock`, removed at the end), so a second command writing the
///   same record at the same time is refused at its start instead of the
///   two replacing each other's points;
/// - a FIFO, a character device or standard output is written into, as
///   [`write_named`] does.
pub(crate) struct Journal {
    flag: &'static str,
    path: std::path::PathBuf,
    file: Option<JournalFile>,
}

struct JournalFile {
    dir: safefs::DirHandle,
    name: std::ffi::OsString,
    lock: Option<safefs::SetLock>,
}

impl Journal {
    /// Settles where `path` (given with `flag`) goes and takes its lock
    /// for `command`. Refused (exit 2) when it cannot take a record or
    /// another live process holds the lock.
    pub(crate) fn open(flag: &'static str, path: &Path, command: &str) -> anyhow::Result<Journal> {
        let file = match safefs::check_output(flag, path)? {
            safefs::OutputTarget::Replace { dir, name } => {
                let d = safefs::DirHandle::open_target(&dir)
                    .map_err(|e| safefs::FlagError::of(flag, path, e))?;
                let lock_name = safefs::lock_name(&name);
                let lock = match safefs::SetLock::try_lock(&d, &lock_name, command) {
                    Ok(safefs::TryLock::Acquired(l)) => Some(l),
                    Ok(safefs::TryLock::Held { holder, .. }) => {
                        let who = holder
                            .map(|h| h.describe())
                            .unwrap_or_else(|| "a process whose record cannot be read".into());
                        anyhow::bail!(
                            "{flag} {}: another command is writing this record ({who}; lock {}); \
                             wait for it to end, or give another {flag}",
                            path.display(),
                            d.child_path(&lock_name).display()
                        );
                    }
                    // About the lock, not the record: "--json j.json: it
                    // is a symbolic link" sent the user to a j.json that
                    // was a regular file.
                    Err(e) => anyhow::bail!(
                        "{flag} {}: the lock beside it, {}: {}",
                        path.display(),
                        d.child_path(&lock_name).display(),
                        match safefs::FlagErrorKind::from(e) {
                            safefs::FlagErrorKind::Refused(why) => why,
                            safefs::FlagErrorKind::Io(e) => e.to_string(),
                        }
                    ),
                };
                Some(JournalFile { dir: d, name, lock })
            }
            _ => None,
        };
        Ok(Journal {
            flag,
            path: path.to_path_buf(),
            file,
        })
    }

    /// Writes `bytes` where [`Journal::open`] settled.
    pub(crate) fn write(&self, bytes: &[u8]) -> anyhow::Result<()> {
        let Some(f) = &self.file else {
            return write_named(self.flag, &self.path, bytes);
        };
        safefs::replace_at(&f.dir, &f.name, bytes)
            .map_err(|e| safefs::FlagError::of(self.flag, &self.path, e))?;
        Ok(())
    }
}

impl Drop for Journal {
    /// Removes the lock: the command is done with the record (however it
    /// ends, short of a second signal's immediate exit, which leaves a
    /// stale lock the next command takes over).
    fn drop(&mut self) {
        if let Some(f) = self.file.as_mut() {
            if let Some(l) = f.lock.take() {
                let _ = l.remove(&f.dir, safefs::lock_name(&f.name));
            }
        }
    }
}

/// Refuses a `--png` directory whose parent does not exist.
pub(crate) fn check_png_dir(d: &Path) -> anyhow::Result<()> {
    if d.exists() && !d.is_dir() {
        anyhow::bail!("--png {}: is not a directory", d.display());
    }
    let parent = d
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        anyhow::bail!(
            "--png {}: directory {} does not exist",
            d.display(),
            parent.display()
        );
    }
    Ok(())
}

/// A private scratch directory of result files a command hands between
/// its own steps (io500's sweep: each point's record), made fresh under
/// the temporary directory and removed at the end, by the safe paths:
/// made with `mkdir` below the held temporary directory (never through a
/// link, never an existing name), mode 0700; its files written by
/// [`write_named`] and read by `safefs::read_bounded` (a regular file of
/// bounded size only); removed by name through the held handle — only the
/// names handed out by [`Scratch::file`] — and then `rmdir`, checked
/// against the identity it was made with.
pub(crate) struct Scratch {
    parent: safefs::DirHandle,
    name: String,
    held: safefs::DirHandle,
    files: std::cell::RefCell<Vec<String>>,
}

impl Scratch {
    /// A new directory `PREFIX-PID-N` under the temporary directory.
    pub(crate) fn new(prefix: &str) -> anyhow::Result<Scratch> {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = std::env::temp_dir();
        let parent = safefs::DirHandle::open_target(&tmp)?;
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut last = None;
        for n in 0..16u32 {
            let name = format!("{prefix}-{}-{stamp}-{n}", std::process::id());
            match parent.mkdir_at(&name, 0o700) {
                Ok(held) => {
                    // mkdir's mode is masked by the umask; the records are
                    // the run's own.
                    let _ = std::fs::set_permissions(
                        held.path(),
                        std::fs::Permissions::from_mode(0o700),
                    );
                    return Ok(Scratch {
                        parent,
                        name,
                        held,
                        files: Default::default(),
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.map_or_else(|| anyhow::anyhow!("no scratch directory"), Into::into))
    }

    /// The path of the scratch file `name` (a single path component),
    /// removed with the directory.
    pub(crate) fn file(&self, name: &str) -> std::path::PathBuf {
        let mut files = self.files.borrow_mut();
        if !files.iter().any(|f| f == name) {
            files.push(name.to_string());
        }
        self.held.child_path(name)
    }

    /// The bytes of scratch file `name`, when it was written: a regular
    /// file of at most `safefs::MAX_RECORD_BYTES` only.
    pub(crate) fn read(&self, name: &str) -> Option<Vec<u8>> {
        safefs::read_bounded("scratch", &self.file(name), safefs::MAX_RECORD_BYTES).ok()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let files = self.files.borrow();
        for f in files.iter() {
            let _ = self.held.unlink_at(f, None);
        }
        // A write cut short leaves its temporary name beside the file.
        for t in self.held.list().unwrap_or_default() {
            if safefs::temp_base(&t).is_some_and(|b| files.iter().any(|f| b == f.as_str())) {
                let _ = self.held.unlink_at(&t, None);
            }
        }
        let _ = self.parent.rmdir_at(&self.name, Some(self.held.id()));
    }
}

/// Refuses, before the run, a symbolic link at `p`: a result file written
/// under a name anyone can predict (fio's `NAME_bw.N.log`), where a link
/// planted there would have the results written over the file it names.
pub(crate) fn check_not_link(flag: &str, p: &Path) -> anyhow::Result<()> {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.file_type().is_symlink() => anyhow::bail!(
            "{flag} {}: it is a symbolic link, which ioscale never writes through \
             for this file; remove it, or choose another name",
            p.display()
        ),
        _ => Ok(()),
    }
}

/// [`write_named`] for a result file checked by [`check_not_link`]: a FIFO
/// or character device there is written into; anything else is replaced
/// by name through its held directory (`safefs::replace_at`), so a link
/// planted at the name after the check is refused, never followed, and a
/// directory or device is refused.
pub(crate) fn write_named_nofollow(flag: &str, p: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::FileTypeExt as _;
    if let Ok(m) = std::fs::symlink_metadata(p) {
        let t = m.file_type();
        if t.is_fifo() || t.is_char_device() {
            return write_named(flag, p, bytes);
        }
    }
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Some(name) = p.file_name() else {
        anyhow::bail!("{flag} {}: not a file name", p.display());
    };
    safefs::DirHandle::open_target(dir)
        .and_then(|d| safefs::replace_at(&d, name, bytes))
        .map_err(|e| safefs::FlagError::of(flag, p, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link planted at the name after the check is refused, its target
    /// kept; a regular file there is replaced.
    #[test]
    fn write_named_nofollow_never_writes_through_a_link() {
        let d = tempfile::tempdir().unwrap();
        let foreign = d.path().join("foreign");
        std::fs::write(&foreign, b"theirs").unwrap();
        let log = d.path().join("x_bw.1.log");
        std::fs::write(&log, b"old").unwrap();
        write_named_nofollow("write_bw_log", &log, b"new").unwrap();
        assert_eq!(std::fs::read(&log).unwrap(), b"new");
        std::fs::remove_file(&log).unwrap();
        std::os::unix::fs::symlink(&foreign, &log).unwrap();
        assert!(check_not_link("write_bw_log", &log).is_err());
        let e = write_named_nofollow("write_bw_log", &log, b"log").unwrap_err();
        assert!(format!("{e:#}").contains("write_bw_log"), "{e:#}");
        assert_eq!(std::fs::read(&foreign).unwrap(), b"theirs");
        assert!(std::fs::symlink_metadata(&log)
            .unwrap()
            .file_type()
            .is_symlink());
    }
}
