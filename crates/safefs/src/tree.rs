//! Removing a data set by its naming scheme, relative to held handles.
//!
//! The caller names what its scheme produced — files first, then
//! directories deepest first — and [`Remover`] removes each relative to a
//! held [`DirHandle`], opening intermediate directories with `O_NOFOLLOW`
//! and checking recorded identities. Anything swapped is left in place and
//! reported with the reason; a name that is already gone is counted, not
//! reported. Names stream through, so a million-file tree needs no list in
//! memory.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::dir::{DirHandle, FileId, Removed};
use crate::error::Error;

/// Most entries a [`RemovalReport`] lists one by one; the rest are counted.
pub const MAX_LISTED: usize = 1000;

/// Most directories a [`Remover`] keeps open at once; beyond it the cache
/// is emptied and directories are opened again, checked against the
/// identity they had when first opened.
pub const MAX_OPEN_DIRS: usize = 64;

/// One entry that was not removed, and why.
#[derive(Debug)]
pub struct Left {
    /// The path (held root's path joined with the relative name).
    pub path: PathBuf,
    /// Why it was left: a refusal (symlink, swapped, wrong kind) or an
    /// I/O error (ENOTEMPTY for a directory holding foreign files, EIO…).
    pub error: Error,
    /// How many named entries below it were not tried because this
    /// directory could not be opened safely.
    pub below: u64,
}

/// What a removal did.
#[derive(Debug, Default)]
pub struct RemovalReport {
    /// Entries removed.
    pub removed: u64,
    /// Names that did not exist.
    pub absent: u64,
    /// Entries left, with the reason (at most [`MAX_LISTED`]).
    pub left: Vec<Left>,
    /// All entries left, including those not listed and those below a
    /// refused directory.
    pub left_total: u64,
}

impl RemovalReport {
    /// Whether everything named was removed or already gone.
    pub fn is_complete(&self) -> bool {
        self.left_total == 0
    }

    /// One line per listed entry left, for the user.
    pub fn describe(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .left
            .iter()
            .map(|l| {
                if l.below > 0 {
                    format!(
                        "{} (and {} entries below it left in place)",
                        l.error, l.below
                    )
                } else {
                    l.error.to_string()
                }
            })
            .collect();
        let listed: u64 = self.left.iter().map(|l| 1 + l.below).sum();
        if self.left_total > listed {
            out.push(format!(
                "… and {} more entries left in place",
                self.left_total - listed
            ));
        }
        out
    }
}

/// Removes named entries below a held root directory. See the module docs.
#[derive(Debug)]
pub struct Remover<'a> {
    root: &'a DirHandle,
    open: HashMap<PathBuf, DirHandle>,
    seen: HashMap<PathBuf, FileId>,
    refused: HashMap<PathBuf, usize>,
    expected: HashMap<PathBuf, FileId>,
    report: RemovalReport,
}

impl<'a> Remover<'a> {
    /// A remover below `root` (the held handle of, e.g., `ioscale.d`).
    pub fn new(root: &'a DirHandle) -> Self {
        Remover {
            root,
            open: HashMap::new(),
            seen: HashMap::new(),
            refused: HashMap::new(),
            expected: HashMap::new(),
            report: RemovalReport::default(),
        }
    }

    /// Records the identity `rel` had when ioscale made it: opening or
    /// removing it later refuses any other file or directory.
    pub fn expect(&mut self, rel: impl AsRef<Path>, id: FileId) {
        self.expected.insert(rel.as_ref().to_path_buf(), id);
    }

    fn leave(&mut self, error: Error, below: u64) -> Option<usize> {
        self.report.left_total += 1 + below;
        if self.report.left.len() < MAX_LISTED {
            self.report.left.push(Left {
                path: error.path.clone(),
                error,
                below,
            });
            Some(self.report.left.len() - 1)
        } else {
            None
        }
    }

    /// The held handle of directory `rel` ("" is the root); `Err(())` when
    /// it (or a parent) is missing or refused — already accounted for.
    fn dir(&mut self, rel: &Path) -> Result<Option<&DirHandle>, ()> {
        if rel.as_os_str().is_empty() {
            return Ok(Some(self.root));
        }
        if let Some(&i) = self.refused.get(rel) {
            // Count the entry against the refused directory.
            self.report.left_total += 1;
            if i < self.report.left.len() {
                self.report.left[i].below += 1;
            }
            return Err(());
        }
        if !self.open.contains_key(rel) {
            let parent = rel.parent().unwrap_or(Path::new(""));
            let name = rel.file_name().unwrap_or(OsStr::new("")).to_os_string();
            let want = self
                .expected
                .get(rel)
                .or_else(|| self.seen.get(rel))
                .copied();
            let opened = match self.dir(parent)? {
                None => return Ok(None),
                Some(p) => p.open_dir_at(&name, want),
            };
            match opened {
                Ok(h) => {
                    if self.open.len() >= MAX_OPEN_DIRS {
                        self.open.clear();
                    }
                    self.seen.insert(rel.to_path_buf(), h.id());
                    self.open.insert(rel.to_path_buf(), h);
                }
                Err(e) if e.is_not_found() => return Ok(None),
                Err(e) => {
                    let i = self.leave(e, 0).unwrap_or(usize::MAX);
                    self.refused.insert(rel.to_path_buf(), i);
                    // This entry itself is below the refused directory.
                    self.report.left_total += 1;
                    if i < self.report.left.len() {
                        self.report.left[i].below += 1;
                    }
                    return Err(());
                }
            }
        }
        Ok(self.open.get(rel))
    }

    fn split(rel: &Path) -> (PathBuf, std::ffi::OsString) {
        let parent = rel.parent().unwrap_or(Path::new("")).to_path_buf();
        let name = rel.file_name().unwrap_or(OsStr::new("")).to_os_string();
        (parent, name)
    }

    fn account(&mut self, r: Result<Removed, Error>) {
        match r {
            Ok(Removed::Removed) => self.report.removed += 1,
            Ok(Removed::Absent) => self.report.absent += 1,
            Err(e) if e.is_not_found() => self.report.absent += 1,
            Err(e) => {
                self.leave(e, 0);
            }
        }
    }

    /// Removes the regular file `rel` (relative to the root).
    pub fn file(&mut self, rel: impl AsRef<Path>) {
        let rel = rel.as_ref();
        let (parent, name) = Self::split(rel);
        let want = self.expected.get(rel).copied();
        let r = match self.dir(&parent) {
            Err(()) => return,
            Ok(None) => Ok(Removed::Absent),
            Ok(Some(d)) => d.unlink_at(&name, want),
        };
        self.account(r);
    }

    /// Removes the empty directory `rel` (relative to the root) with
    /// `rmdir`: a directory still holding anything stays, reported.
    pub fn dir_entry(&mut self, rel: impl AsRef<Path>) {
        let rel = rel.as_ref();
        let (parent, name) = Self::split(rel);
        // The identity to check: recorded by the caller, else the one of
        // the handle this remover opened (and used) for it.
        let want = self
            .expected
            .get(rel)
            .copied()
            .or_else(|| self.seen.get(rel).copied());
        self.open.remove(rel);
        self.seen.remove(rel);
        if self.refused.contains_key(rel) {
            return;
        }
        let r = match self.dir(&parent) {
            Err(()) => return,
            Ok(None) => Ok(Removed::Absent),
            Ok(Some(d)) => d.rmdir_at(&name, want),
        };
        self.account(r);
    }

    /// What was removed and what was left.
    pub fn finish(self) -> RemovalReport {
        self.report
    }
}

/// Removes `files`, then `dirs` (give them deepest first), relative to
/// `root`; see [`Remover`].
pub fn remove_tree<F, D>(root: &DirHandle, files: F, dirs: D) -> RemovalReport
where
    F: IntoIterator,
    F::Item: AsRef<Path>,
    D: IntoIterator,
    D::Item: AsRef<Path>,
{
    let mut r = Remover::new(root);
    for f in files {
        r.file(f);
    }
    for d in dirs {
        r.dir_entry(d);
    }
    r.finish()
}
