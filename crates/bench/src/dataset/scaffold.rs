//! A run's directory scaffold: the directories a command makes to hold
//! several data sets and trees of its own (io500's `ior-easy/`,
//! `mdtest-hard/`, … under its data directory, and the data directory
//! itself when it did not exist), recorded in a marker so that what a
//! stopped run leaves is recognised and removed by `ioscale clean`.
//!
//! The marker (`.ioscale-scaffold` in the top directory) is written before
//! any directory is made and names every one the run makes, each with its
//! (device, inode) once made; a lock beside it tells other commands the
//! scaffold is in use. Removal — at the end of the run, or by `clean` —
//! goes through the held top directory only: each recorded directory is
//! opened without following a link and checked against its identity, the
//! sets inside it are removed by their own markers (through the held
//! descriptor, never a path that may have been swapped), then the
//! directories with `rmdir` (never anything foreign), the marker, the
//! lock, and the top and its made ancestors when the run made them.

use std::path::{Path, PathBuf};

use engine::backend::posix::Posix;
use engine::backend::{Backend, Dir, FileId, Locked, SetLock};
use safefs::lock_name;
use serde::{Deserialize, Serialize};

use super::{command_line, fs_err, read_json_in, take_lock_named, Cleaned};
use crate::error::Error;

/// Name of the marker in the top directory.
pub const MARKER_NAME: &str = ".ioscale-scaffold";

/// What the marker records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Marker {
    /// Always "ioscale-scaffold".
    tool: String,
    /// Run that made it.
    run_id: String,
    /// The directories made inside the top one (relative, parents before
    /// children) with their identity once made.
    dirs: Vec<(PathBuf, Option<FileId>)>,
    /// Directories made above the contents, innermost (the top itself)
    /// first: absolute paths with their identities.
    made_top: Vec<(PathBuf, FileId)>,
}

impl Marker {
    /// Why this marker cannot describe a scaffold ioscale made.
    fn problem(&self) -> Option<String> {
        let bad = |p: &Path| {
            p.components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        };
        if let Some((p, _)) = self.dirs.iter().find(|(p, _)| bad(p)) {
            return Some(format!(
                "it names {}, which is not a path below its directory",
                p.display()
            ));
        }
        // The made directories above the contents are the top and its
        // parents, each the one above the one before: nothing elsewhere.
        for pair in self.made_top.windows(2) {
            if pair[1].0 != super::parent_of(&pair[0].0) {
                return Some(format!(
                    "it names {} as made above {}, which is not its parent",
                    pair[1].0.display(),
                    pair[0].0.display()
                ));
            }
        }
        None
    }
}

/// The scaffold of a running command: the held top directory, its marker
/// and lock, on storage backend `B`.
#[derive(Debug)]
pub struct Scaffold<B: Backend = Posix> {
    backend: B,
    top: PathBuf,
    held: B::Dir,
    marker: Marker,
    lock: Option<<B::Dir as Dir>::Lock>,
}

impl Scaffold<Posix> {
    /// [`Scaffold::make_on`] on a POSIX file system.
    pub fn make(top: &Path, dirs: &[PathBuf], run_id: &str) -> Result<Scaffold, Error> {
        Scaffold::make_on(&Posix, top, dirs, run_id)
    }
}

impl<B: Backend> Scaffold<B> {
    /// Makes `top` (with its missing ancestors) unless it exists, writes
    /// the marker naming `dirs` (relative to `top`, parents first), then
    /// makes each of them fresh: one that exists already is refused,
    /// never reused, and what this call made goes again.
    pub fn make_on(
        backend: &B,
        top: &Path,
        dirs: &[PathBuf],
        run_id: &str,
    ) -> Result<Scaffold<B>, Error> {
        let mut made_top = Vec::new();
        let held = make_top(backend, top, &mut made_top)?;
        let marker = Marker {
            tool: "ioscale-scaffold".into(),
            run_id: run_id.into(),
            dirs: dirs.iter().map(|d| (d.clone(), None)).collect(),
            made_top,
        };
        if let Some(p) = marker.problem() {
            return Err(Error::Usage(format!(
                "a scaffold in {}: {p}",
                top.display()
            )));
        }
        // The lock first: a live run's scaffold is named as in use.
        let lock = match take_lock_named(
            &held,
            &lock_name(MARKER_NAME),
            &top.display().to_string(),
            top,
            safefs::LockOptions::default(),
        ) {
            Ok(l) => l,
            Err(e) => {
                undo(backend, &marker.made_top);
                return Err(e);
            }
        };
        if held.stat_at(MARKER_NAME).map_err(fs_err)?.is_some() {
            let _ = held.unlock(lock, lock_name(MARKER_NAME));
            undo(backend, &marker.made_top);
            return Err(Error::Refused(format!(
                "{} holds the directories of an earlier run (its marker {MARKER_NAME}); \
                 `ioscale clean {}` removes them",
                top.display(),
                top.display()
            )));
        }
        let mut s = Scaffold {
            backend: backend.clone(),
            top: top.to_path_buf(),
            held,
            marker,
            lock: Some(lock),
        };
        if let Err(e) = s.save().and_then(|()| s.make_dirs()) {
            let left = s.remove();
            if left.is_empty() {
                return Err(e);
            }
            return Err(Error::Refused(format!(
                "{e}; and could not remove what was made: {}",
                left.join("; ")
            )));
        }
        Ok(s)
    }

    fn save(&self) -> Result<(), Error> {
        let bytes = serde_json::to_vec_pretty(&self.marker).unwrap_or_default();
        self.held
            .replace_at(MARKER_NAME, &bytes, true)
            .map_err(fs_err)
    }

    /// Makes the recorded directories, each fresh, and records their
    /// identities.
    fn make_dirs(&mut self) -> Result<(), Error> {
        for i in 0..self.marker.dirs.len() {
            let rel = self.marker.dirs[i].0.clone();
            let (parent, name) = split(&rel);
            let p = self.held.open_dir_path(parent).map_err(fs_err)?;
            let h = p.mkdir_at(name, 0o755).map_err(|e| {
                if e.raw_os_error() == Some(libc::EEXIST) {
                    Error::Refused(format!(
                        "{} already exists: the run makes its directories fresh and removes \
                         only what it made; remove it, or choose another directory",
                        self.top.join(&rel).display()
                    ))
                } else {
                    fs_err(e)
                }
            })?;
            // Recorded at once: only a directory with an identity in the
            // marker is ever removed by it.
            self.marker.dirs[i].1 = Some(h.id());
            self.save()?;
        }
        Ok(())
    }

    /// The path of recorded directory `rel` (as given to [`Scaffold::make`]).
    pub fn path(&self, rel: &Path) -> PathBuf {
        self.top.join(rel)
    }

    /// Checks that every recorded directory is still the one made: opened
    /// below the held top without following a link, its identity the
    /// recorded one. A swapped directory (a link, another directory) is
    /// refused, naming it.
    pub fn verify(&self) -> Result<(), Error> {
        for (rel, id) in &self.marker.dirs {
            open_recorded(&self.held, rel, *id).map_err(|e| {
                Error::Refused(format!(
                    "{e}: {} is no longer the directory this run made; refused, nothing followed",
                    self.top.join(rel).display()
                ))
            })?;
        }
        Ok(())
    }

    /// Removes the sets in the recorded directories (by their own
    /// markers), the directories, the marker, the lock and the top
    /// directories this run made. Returns what was left, with the reason.
    pub fn remove(mut self) -> Vec<String> {
        let lock = self.lock.take();
        remove_all(&self.backend, &self.held, &self.top, &self.marker, lock)
    }

    /// Leaves the directories and the marker in place (their sets are
    /// kept): releases the lock, so `ioscale clean` may remove them later.
    pub fn keep(mut self) {
        if let Some(l) = self.lock.take() {
            let _ = self.held.unlock(l, lock_name(MARKER_NAME));
        }
    }
}

impl<B: Backend> Drop for Scaffold<B> {
    /// A scaffold neither removed nor kept (a panic, an early return) is
    /// released like a kept one: its marker stays for `clean`.
    fn drop(&mut self) {
        if let Some(l) = self.lock.take() {
            let _ = self.held.unlock(l, lock_name(MARKER_NAME));
        }
    }
}

/// `rel`'s parent (empty for a top-level name) and its last component.
fn split(rel: &Path) -> (&Path, &std::ffi::OsStr) {
    (
        rel.parent().unwrap_or(Path::new("")),
        rel.file_name().unwrap_or_default(),
    )
}

/// Opens recorded directory `rel` below `held`, each component without
/// following a link, checked against `id` when it was recorded.
fn open_recorded<D: Dir>(held: &D, rel: &Path, id: Option<FileId>) -> Result<D, safefs::Error> {
    let (parent, name) = split(rel);
    held.open_dir_path(parent)?.open_dir_at(name, id)
}

/// Opens `top`, making it and its missing ancestors first (recorded in
/// `made`, innermost first).
fn make_top<B: Backend>(
    backend: &B,
    top: &Path,
    made: &mut Vec<(PathBuf, FileId)>,
) -> Result<B::Dir, Error> {
    // Missing: nothing at the name, a link included (one that cannot be
    // looked at is not made over).
    let missing: Vec<&Path> = top
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .take_while(|a| matches!(B::stat_path(a, false), Ok(None)))
        .collect();
    let mut chain = Vec::new();
    for a in missing.iter().rev() {
        let parent = super::parent_of(a);
        let name = a.file_name().unwrap_or_default();
        let made_dir = backend
            .open_target(&parent)
            .and_then(|p| p.mkdir_at(name, 0o755))
            .map_err(|e| {
                undo(backend, &chain);
                Error::Refused(format!("cannot create {}: {e}", a.display()))
            })?;
        chain.push((a.to_path_buf(), made_dir.id()));
    }
    chain.reverse();
    *made = chain;
    backend.open_target(top).map_err(|e| {
        undo(backend, made);
        Error::Refused(format!("{}: {e}", top.display()))
    })
}

/// Removes the top directories a failed start made (innermost first).
fn undo<B: Backend>(backend: &B, made: &[(PathBuf, FileId)]) {
    for (p, id) in made {
        let name = p.file_name().unwrap_or_default();
        if let Ok(parent) = backend.open_target(&super::parent_of(p)) {
            let _ = parent.rmdir_at(name, Some(*id));
        }
    }
}

/// The removal of a scaffold through its held top directory `held`
/// (shown as `top`), deepest directory first; `lock` is removed with the
/// marker. Returns what was left.
fn remove_all<B: Backend>(
    backend: &B,
    held: &B::Dir,
    top: &Path,
    m: &Marker,
    lock: Option<<B::Dir as Dir>::Lock>,
) -> Vec<String> {
    let mut left = Vec::new();
    for (rel, id) in m.dirs.iter().rev() {
        // A name the run never made (it stopped first, or found it there).
        let Some(id) = id else { continue };
        let id = Some(*id);
        let shown = top.join(rel);
        let h = match open_recorded(held, rel, id) {
            Ok(h) => h,
            Err(e) if e.is_not_found() => continue,
            Err(e) => {
                left.push(format!("{} ({e}; left alone)", shown.display()));
                continue;
            }
        };
        // The sets inside, by their own markers, through this very
        // directory.
        let via = h.reach_path();
        let via_s = via.display().to_string();
        let shown_s = shown.display().to_string();
        if let Ok(rep) = super::clean_all_on(backend, &via, safefs::LockOptions::default()) {
            for c in rep.cleaned {
                left.extend(c.left.into_iter().map(|l| l.replace(&via_s, &shown_s)));
            }
            left.extend(
                rep.refused
                    .into_iter()
                    .map(|e| e.to_string().replace(&via_s, &shown_s)),
            );
        }
        let (parent, name) = split(rel);
        let r = held
            .open_dir_path(parent)
            .and_then(|p| p.rmdir_at(name, id));
        match r {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) => left.push(format!(
                "{} (it holds entries that are not the run's data sets; left alone)",
                shown.display()
            )),
            Err(e) => left.push(e.to_string()),
        }
    }
    if !left.is_empty() {
        left.push(format!(
            "the marker in {} is kept; `ioscale clean {}` removes the rest",
            top.display(),
            top.display()
        ));
        if let Some(l) = lock {
            let _ = held.unlock(l, lock_name(MARKER_NAME));
        }
        return left;
    }
    for n in super::own_temps(held) {
        let _ = held.unlink_at(&n, None);
    }
    if let Err(e) = held.unlink_at(MARKER_NAME, None) {
        left.push(e.to_string());
    }
    if let Some(l) = lock {
        if let Err(e) = held.unlock(l, lock_name(MARKER_NAME)) {
            left.push(e.to_string());
        }
    }
    for (p, id) in &m.made_top {
        let name = p.file_name().unwrap_or_default();
        let r = backend
            .open_target(&super::parent_of(p))
            .and_then(|d| d.rmdir_at(name, Some(*id)));
        match r {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) => {
                left.push(format!(
                    "{} (it holds entries that are not the run's data sets; left alone)",
                    p.display()
                ));
                break;
            }
            Err(e) => {
                left.push(e.to_string());
                break;
            }
        }
    }
    left
}

/// `ioscale clean PATH` for a scaffold: `None` when PATH has no scaffold
/// marker; else removes what the run that made it left (see the module
/// docs). A scaffold a live run holds is refused naming it.
pub(crate) fn clean_on<B: Backend>(
    backend: &B,
    path: &Path,
    opts: safefs::LockOptions,
) -> Result<Option<Cleaned>, Error> {
    let held = backend.open_target(path).map_err(fs_err)?;
    if held.stat_at(MARKER_NAME).map_err(fs_err)?.is_none() {
        return Ok(None);
    }
    let m: Marker = read_json_in(&held, MARKER_NAME)
        .filter(|m: &Marker| m.tool == "ioscale-scaffold")
        .ok_or_else(|| {
            Error::Refused(format!(
                "{} is not a valid ioscale marker; refusing to remove anything by it",
                path.join(MARKER_NAME).display()
            ))
        })?;
    if let Some(p) = m.problem() {
        return Err(super::bad_marker(&path.join(MARKER_NAME), &p));
    }
    let lock = match held
        .try_lock(lock_name(MARKER_NAME), &command_line(), opts)
        .map_err(fs_err)?
    {
        Locked::Acquired(l) => l,
        Locked::Held { .. } => {
            return take_lock_named(
                &held,
                &lock_name(MARKER_NAME),
                &path.display().to_string(),
                path,
                opts,
            )
            .map(|_| None)
        }
    };
    let took_over = lock
        .stale_holder()
        .map(|(h, why)| format!("took over {} from {} ({why})", path.display(), h.describe()));
    let left = remove_all(backend, &held, path, &m, Some(lock));
    Ok(Some(Cleaned {
        set: format!(
            "the {} directories a run made in {} and what is in them",
            m.dirs.len(),
            path.display()
        ),
        took_over,
        left,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    #[test]
    fn a_scaffold_is_made_fresh_verified_and_removed_with_what_is_in_it() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path().join("a/b");
        let dirs = [PathBuf::from("x"), PathBuf::from("x/y"), PathBuf::from("z")];
        let s = Scaffold::make(&top, &dirs, "r1").unwrap();
        assert!(top.join("x/y").is_dir() && top.join(MARKER_NAME).is_file());
        s.verify().unwrap();
        // A directory swapped for a link to the user's: refused by name.
        let victim = d.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        std::fs::write(victim.join("keep"), b"mine").unwrap();
        std::fs::rename(top.join("z"), d.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&victim, top.join("z")).unwrap();
        let e = s.verify().unwrap_err().to_string();
        assert!(e.contains("no longer the directory this run made"), "{e}");
        let left = s.remove();
        assert!(left.iter().any(|l| l.contains("z")), "{left:?}");
        assert_eq!(std::fs::read(victim.join("keep")).unwrap(), b"mine");
        // The rest was removed; the marker stays for `clean`, which still
        // leaves the link alone.
        assert!(!top.join("x").exists() && top.join(MARKER_NAME).is_file());
        std::fs::remove_file(top.join("z")).unwrap();
        let c = clean_on(&Posix, &top, Default::default()).unwrap().unwrap();
        assert!(c.left.is_empty(), "{:?}", c.left);
        assert!(
            !d.path().join("a").exists(),
            "the top and its made parent go"
        );
        assert_eq!(std::fs::read(victim.join("keep")).unwrap(), b"mine");
    }

    #[test]
    fn a_live_scaffold_is_named_in_use_and_a_left_one_sends_to_clean() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path().join("t");
        let s = Scaffold::make(&top, &[PathBuf::from("x")], "r1").unwrap();
        let e = Scaffold::make(&top, &[PathBuf::from("y")], "r2").unwrap_err();
        assert!(e.to_string().contains("in use by"), "{e}");
        s.keep();
        let e = Scaffold::make(&top, &[PathBuf::from("y")], "r2").unwrap_err();
        assert!(e.to_string().contains("ioscale clean"), "{e}");
        assert!(!top.join("y").exists() && top.join("x").is_dir());
        assert!(
            !top.join(lock_name(MARKER_NAME)).exists(),
            "the refused run's lock is gone"
        );
    }

    #[test]
    fn a_marker_naming_directories_elsewhere_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path().join("t");
        let s = Scaffold::make(&top, &[PathBuf::from("x")], "r").unwrap();
        s.keep();
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let id = Posix.open_target(&elsewhere).unwrap().id();
        let held = Posix.open_target(&top).unwrap();
        for (dirs, made_top) in [
            (vec![(PathBuf::from("../elsewhere"), Some(id))], Vec::new()),
            (
                Vec::new(),
                vec![(top.clone(), held.id()), (elsewhere.clone(), id)],
            ),
        ] {
            let m = Marker {
                tool: "ioscale-scaffold".into(),
                run_id: "forged".into(),
                dirs,
                made_top,
            };
            let bytes = serde_json::to_vec(&m).unwrap();
            held.replace_at(MARKER_NAME, &bytes, true).unwrap();
            let e = clean_on(&Posix, &top, Default::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains("not a valid ioscale marker"), "{e}");
            assert!(elsewhere.is_dir());
        }
    }

    #[test]
    fn an_existing_directory_is_refused_and_nothing_made_stays() {
        let d = tempfile::tempdir().unwrap();
        let top = d.path().join("t");
        std::fs::create_dir_all(top.join("z")).unwrap();
        let e = Scaffold::make(&top, &[PathBuf::from("x"), PathBuf::from("z")], "r")
            .unwrap_err()
            .to_string();
        assert!(e.contains("already exists"), "{e}");
        let mut left: Vec<OsString> = std::fs::read_dir(&top)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        left.sort();
        assert_eq!(left, [OsString::from("z")]);
    }
}
