//! One worker's share of a parallel find ([`spec::FindSpec`]): the walk
//! of a directory tree, examining every worker-th entry of each directory
//! and counting those that match, as pfind does for io500's find phases.
//!
//! Every worker lists every directory (the walk itself is not divided),
//! and examines the entries whose position in the listing falls to it:
//! the files (not the directories) are counted as examined, a name that
//! fits the pattern is `lstat`ed when the size or time must be known, and
//! the matches are counted. Each directory is opened relative to its
//! parent's handle without following a link (a link swapped in for a
//! directory is refused, `ELOOP`), so the walk never leaves the tree; an
//! entry removed while the walk goes on is skipped. Every call goes
//! through the storage backend's loop level ([`Backend::open_beneath`],
//! [`Backend::read_dir_typed`], [`Backend::stat`]), generic, as the data
//! and metadata loops are. What it measures goes
//! into a [`MetaSample`]: `files` the entries examined, `matched` the
//! matches, one latency per examined entry.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use spec::FindSpec;

use crate::backend::{Backend, Kind};
use crate::meta::{describe, ns_since, should_stop, MetaSample};
use crate::worker::{IoFailure, PhaseControl};

/// What the workers of one find share, on storage backend `B`.
#[derive(Debug)]
pub struct FindPlan<'a, B: Backend> {
    /// The walk and its criteria.
    pub spec: &'a FindSpec,
    /// Workers in all (every rank's): worker `w` examines the entries at
    /// positions `w`, `w + workers`, … of each directory.
    pub workers: u32,
    /// The root, held open by the caller: the walk starts from a handle
    /// of its own on it and never resolves the root's name again. `None`:
    /// opened by its path.
    pub root: Option<Arc<B::At>>,
}

/// A directory the walk has still to list: its parent's handle, its
/// name there (NUL-terminated), and its path for messages.
struct Pending<A> {
    parent: Arc<A>,
    name: Vec<u8>,
    shown: PathBuf,
}

/// Why a worker's walk ended early.
enum Halt {
    /// Stopped (a signal, another worker's failure).
    Stopped,
    /// This worker failed.
    Failed,
}

/// Runs worker `w`'s share: opens the root, waits at `barrier`, walks.
pub fn run_find_worker<B: Backend>(
    w: u32,
    plan: &FindPlan<'_, B>,
    ctl: &PhaseControl,
    barrier: &Barrier,
) -> MetaSample {
    let mut s = MetaSample::new(w);
    let root = match &plan.root {
        // A handle of its own (POSIX: an open description; a `dup` would
        // share the listing's position with every other worker).
        Some(at) => B::open_beneath(at, b".\0"),
        None => B::at_path(&plan.spec.root),
    };
    barrier.wait();
    s.start_ns = ns_since(ctl.epoch, Instant::now());
    let mut walk = Walk {
        plan,
        w,
        ctl,
        s: &mut s,
        t: Instant::now(),
        pending: Vec::new(),
    };
    let done = match root {
        Ok(fd) => walk.run(fd),
        Err(e) => {
            walk.fail("open dir", &plan.spec.root, &e);
            false
        }
    };
    let end = ns_since(ctl.epoch, Instant::now());
    s.end_ns = end;
    s.touched = s.files;
    s.stonewall_files = s.files;
    if done
        && ctl
            .first_done
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    {
        ctl.first_done_ns.store(end, Ordering::Release);
    }
    s
}

/// A worker's walk in progress.
struct Walk<'w, 'p, B: Backend> {
    plan: &'w FindPlan<'p, B>,
    w: u32,
    ctl: &'w PhaseControl,
    s: &'w mut MetaSample,
    /// When the last examined entry was done.
    t: Instant,
    /// Directories to list, depth first.
    pending: Vec<Pending<B::At>>,
}

impl<B: Backend> Walk<'_, '_, B> {
    /// Walks the tree below `root`; whether it got to the end.
    fn run(&mut self, root: B::At) -> bool {
        let shown = self.plan.spec.root.clone();
        if self.list(root, &shown).is_err() {
            return false;
        }
        while let Some(p) = self.pending.pop() {
            let fd = match B::open_beneath(&p.parent, &p.name) {
                Ok(fd) => fd,
                // Removed since its parent was listed: nothing to walk.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                Err(e) => {
                    self.fail("open dir", &p.shown, &e);
                    return false;
                }
            };
            if self.list(fd, &p.shown).is_err() {
                return false;
            }
        }
        true
    }

    /// Lists the directory `at` (at `shown`): its subdirectories go on
    /// the pending list, this worker's share of the other entries is
    /// examined.
    fn list(&mut self, at: B::At, shown: &Path) -> Result<(), Halt> {
        let dir = Arc::new(at);
        let (w, workers) = (self.w as u64, self.plan.workers.max(1) as u64);
        let mut pos = 0u64;
        let mut halt = None;
        let r = B::read_dir_typed(&dir, |name, kind| {
            let bytes = name.strip_suffix(&[0]).unwrap_or(name);
            if bytes == b"." || bytes == b".." {
                return true;
            }
            let mine = pos % workers == w;
            pos += 1;
            // The listing's type where it gives one, else an lstat.
            let is_dir = match kind {
                Some(k) => k == Kind::Dir,
                None => B::lstat(&dir, name).is_ok_and(|k| k == Kind::Dir),
            };
            if is_dir {
                self.pending.push(Pending {
                    parent: Arc::clone(&dir),
                    name: name.to_vec(),
                    shown: shown.join(std::ffi::OsStr::from_bytes(bytes)),
                });
            } else if mine {
                if let Err(h) = self.examine(&dir, name, shown) {
                    halt = Some(h);
                    return false;
                }
            }
            if should_stop(self.ctl) {
                halt = Some(Halt::Stopped);
                return false;
            }
            true
        });
        if let Err(e) = r {
            // The listing's open (opendir) or a read of it (readdir).
            self.fail("readdir", shown, &e);
            return Err(Halt::Failed);
        }
        halt.map_or(Ok(()), Err)
    }

    /// Examines one entry (`name`, NUL-terminated) of the directory
    /// `dir`: counted, matched against the name and, when they are asked
    /// for, its size and time.
    fn examine(&mut self, dir: &B::At, name: &[u8], shown: &Path) -> Result<(), Halt> {
        let spec = self.plan.spec;
        let bare = name.strip_suffix(&[0]).unwrap_or(name);
        let mut hit = spec.name_matches(bare);
        if hit && spec.needs_stat() {
            hit = match B::stat(dir, name) {
                Ok(st) => spec.stat_matches(st.size, st.modified),
                // Removed since the listing: not a match.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => false,
                Err(e) => {
                    let p = shown.join(std::ffi::OsStr::from_bytes(bare));
                    self.fail("stat", &p, &e);
                    return Err(Halt::Failed);
                }
            };
        }
        let s = &mut *self.s;
        s.files += 1;
        s.matched += u64::from(hit);
        let now = Instant::now();
        s.hist
            .record(now.saturating_duration_since(self.t).as_nanos() as u64);
        crate::live::publish(self.w, s.files, 0);
        self.t = now;
        Ok(())
    }

    /// Records the walk's failure of `call` at `path` and stops the others.
    fn fail(&mut self, call: &str, path: &Path, e: &io::Error) {
        self.s.errors += 1;
        if self.s.failure.is_none() {
            self.s.failure = Some(IoFailure {
                op: call.into(),
                path: path.to_path_buf(),
                offset: None,
                errno: e.raw_os_error(),
                message: describe(e),
            });
        }
        self.ctl.abort.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    fn walk_all(spec: &FindSpec, workers: u32) -> Vec<MetaSample> {
        let plan = FindPlan::<crate::backend::posix::Posix> {
            spec,
            workers,
            root: None,
        };
        let ctl = PhaseControl::new(Arc::new(AtomicBool::new(false)));
        let barrier = Barrier::new(workers as usize);
        std::thread::scope(|sc| {
            let hs: Vec<_> = (0..workers)
                .map(|w| {
                    let (plan, ctl, barrier) = (&plan, &ctl, &barrier);
                    sc.spawn(move || run_find_worker(w, plan, ctl, barrier))
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn the_workers_share_the_entries_and_never_follow_a_link() {
        let d = std::env::temp_dir().join(format!(
            "ioscale-find-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        let t = d.join("t");
        std::fs::create_dir_all(t.join("a/b")).unwrap();
        for (p, size) in [("x01", 3), ("a/y01", 3), ("a/b/z01", 5), ("a/b/q", 3)] {
            std::fs::write(t.join(p), vec![0u8; size]).unwrap();
        }
        // A link to a directory outside, full of matches: never walked.
        let outside = d.join("outside");
        std::fs::create_dir(&outside).unwrap();
        for i in 0..50 {
            std::fs::write(outside.join(format!("f01.{i}")), b"abc").unwrap();
        }
        std::os::unix::fs::symlink(&outside, t.join("a/link01")).unwrap();
        let spec = spec::RawFind {
            root: Some(t.clone()),
            name: Some("*01*".into()),
            size: Some(3),
            ..Default::default()
        }
        .build()
        .unwrap();
        for workers in [1, 3] {
            let all = walk_all(&spec, workers);
            assert!(all.iter().all(|s| s.failure.is_none()));
            // Five entries that are not directories, each examined once;
            // x01 and y01 match (z01 is 5 bytes; the link is examined as
            // an entry of its own, 3 bytes of it or not, never walked).
            let examined: u64 = all.iter().map(|s| s.files).sum();
            assert_eq!(examined, 5, "{workers} workers");
            let matched: u64 = all.iter().map(|s| s.matched).sum();
            let link_len = std::fs::symlink_metadata(t.join("a/link01")).unwrap().len();
            assert_eq!(matched, 2 + u64::from(link_len == 3), "{workers} workers");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
