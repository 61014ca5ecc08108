//! The directory a command works in when it makes it itself: mdtest's
//! `-d`, made (one level) when it is missing and removed at the end when
//! this run made it and nothing is left in it.
//!
//! It goes through the backend table like every other storage call. Its
//! parent is the user's (opened as the user named it, links followed);
//! the directory itself is opened or made below the held parent without
//! following a link, so a symbolic link, FIFO, device or other non-directory
//! planted under the name is refused (exit 2) before anything is made or
//! written. The run then works in the held handle, and the removal is an
//! `rmdir` checked against the identity it was made with: a directory
//! that existed before the run, or one swapped in under its name, is never
//! removed.

use std::ffi::OsString;
use std::path::Path;

use engine::backend::{Backend, Dir, FileId};

use super::{fs_err, parent_of};
use crate::error::Error;

/// The test directory, held, with whether this run made it.
#[derive(Debug)]
pub struct TestDir<B: Backend> {
    /// Its parent, held: the removal's directory.
    parent: B::Dir,
    /// Its name in the parent.
    name: OsString,
    /// The directory itself.
    held: B::Dir,
    /// Whether this run made it (and so may remove it).
    made: bool,
}

impl<B: Backend> TestDir<B> {
    /// Opens `path` as a directory without following a link at its last
    /// component, or makes it when nothing is there. A name that is not a
    /// directory (a link to one included) is refused.
    pub fn open_or_make(backend: &B, path: &Path) -> Result<TestDir<B>, Error> {
        let refuse = |e: String| {
            Error::Refused(format!(
                "{}: unable to use it as the test directory: {e}",
                path.display()
            ))
        };
        let Some(name) = path.file_name().map(OsString::from) else {
            // `/`, `.`, `..`: the user's own directory, never ours to make.
            let held = backend.open_target(path).map_err(fs_err)?;
            let parent = held.try_clone().map_err(fs_err)?;
            return Ok(TestDir {
                parent,
                name: OsString::new(),
                held,
                made: false,
            });
        };
        let parent = backend
            .open_target(&parent_of(path))
            .map_err(|e| refuse(e.to_string()))?;
        let (held, made) = match parent.stat_at(&name).map_err(|e| refuse(e.to_string()))? {
            None => (
                parent
                    .mkdir_at(&name, 0o755)
                    .map_err(|e| refuse(e.to_string()))?,
                true,
            ),
            Some(_) => (
                parent
                    .open_dir_at(&name, None)
                    .map_err(|e| refuse(e.to_string()))?,
                false,
            ),
        };
        Ok(TestDir {
            parent,
            name,
            held,
            made,
        })
    }

    /// Whether this run made it.
    pub fn made(&self) -> bool {
        self.made
    }

    /// Its identity: the directory the run must find at the name.
    pub fn id(&self) -> FileId {
        self.held.id()
    }

    /// A second handle on the held directory.
    pub fn handle(&self) -> Result<B::Dir, Error> {
        self.held.try_clone().map_err(fs_err)
    }

    /// Removes it when this run made it and it is empty (what a kept tree
    /// or a foreign file is in stays, with it); `rmdir` by name, checked
    /// against the identity it was made with.
    pub fn remove_if_made(self) {
        if self.made {
            let _ = self.parent.rmdir_at(&self.name, Some(self.held.id()));
        }
    }
}
