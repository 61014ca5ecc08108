//! Test support: a fresh tmpfs per test.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A directory on a tmpfs: its own mount (size `size`) when this process
/// may mount, else a fresh directory in /dev/shm (a tmpfs too).
pub struct Tmpfs {
    dir: tempfile::TempDir,
    mounted: bool,
}

impl Tmpfs {
    pub fn new(size: &str) -> Tmpfs {
        let dir = tempfile::Builder::new()
            .prefix("safefs-mnt-")
            .tempdir()
            .unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if mounted {
            return Tmpfs { dir, mounted };
        }
        let dir = tempfile::Builder::new()
            .prefix("safefs-")
            .tempdir_in("/dev/shm")
            .unwrap();
        Tmpfs {
            dir,
            mounted: false,
        }
    }

    /// A small tmpfs of its own, or `None` (with a note) without the right
    /// to mount.
    pub fn small(size: &str) -> Option<Tmpfs> {
        let t = Tmpfs::new(size);
        if t.mounted {
            Some(t)
        } else {
            eprintln!(
                "note: cannot mount a tmpfs (needs root); skipping the full-file-system part"
            );
            None
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn join(&self, p: impl AsRef<Path>) -> PathBuf {
        self.dir.path().join(p)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        if self.mounted {
            // A file still open in it (a test that failed midway) makes it
            // busy: detach it lazily then, rather than leave a mount
            // behind for every failed run.
            let ok = Command::new("umount")
                .arg(self.dir.path())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                let _ = Command::new("umount")
                    .arg("-l")
                    .arg(self.dir.path())
                    .status();
            }
        }
    }
}

/// Every entry under `dir` (relative, sorted), without following links.
pub fn listing(dir: &Path) -> Vec<String> {
    fn walk(d: &Path, rel: &Path, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let r = rel.join(e.file_name());
            out.push(r.display().to_string());
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                walk(&e.path(), &r, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, Path::new(""), &mut out);
    out.sort();
    out
}
