//! The working tree of a metadata workload (`ioscale meta`, mdtest,
//! smallfile): its directory, its marker, and removing exactly what was made.
//!
//! Every file-system mutation of the tree's scaffolding happens here:
//! creating the working and thread directories, writing and removing the
//! marker, and the teardown (which drives the engine's cleanup walk and its
//! `rmdir`-only directory removal). The timed phases themselves create and
//! delete entries in the engine, as the workload under test.
//!
//! Rank 0 holds the tree open (never through a link) and locked
//! (`.ioscale-meta-marker.lock`, the backend's set lock) from its setup to
//! its end: another run, `--ops cleanup` or `ioscale clean` on a live tree
//! is refused naming the holder, and the teardown reaches the tree only
//! through the held handle, so a name swapped for a link is refused, never
//! followed. Every step goes through the storage backend
//! ([`engine::backend`]); the entry points without a backend argument are
//! POSIX's.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};

use engine::backend::posix::Posix;
use engine::backend::{Backend, Dir, Kind, Locked, SetLock as _};
use engine::meta::{remove_tree, MetaPlan};
use engine::runner::run_meta_worker;
use engine::PhaseControl;
use safefs::lock_name;
use serde::{Deserialize, Serialize};
use spec::{MetaNaming, MetaOp, MetaSpec, TreeState};

use super::{command_line, fs_err, Cleaned, LockOf};

use crate::error::Error;

/// Name of the working directory inside the target (with ioscale's own
/// names; mdtest's are in `spec::meta::MDTEST_ROOT_NAME`).
pub const ROOT_NAME: &str = spec::meta::ROOT_NAME;
/// Name of the marker file inside it.
pub const MARKER_NAME: &str = ".ioscale-meta-marker";

/// What the marker records: the shape of the names and what may exist.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Marker {
    /// Always "ioscale-meta".
    pub(crate) tool: String,
    /// Run that last wrote it.
    pub(crate) run_id: String,
    pub(crate) threads: u32,
    pub(crate) files: u64,
    pub(crate) same_dir: bool,
    pub(crate) files_per_dir: u64,
    pub(crate) dirs_per_dir: u64,
    pub(crate) prefix: String,
    /// Whether an ioscale run created the working directory itself.
    pub(crate) root_created: bool,
    /// Which kinds of entries may exist.
    pub(crate) state: TreeState,
    /// Indices per thread that may have entries.
    pub(crate) extent: u64,
    /// Entries only at this depth of the tree (`--leaf-depth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) leaf_depth: Option<u32>,
    /// When a run that made or changed the tree kept it (see [`seal`]):
    /// `clean` then leaves any entry whose status changed after it. Absent
    /// while a run works on the tree, and in markers written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kept_at: Option<KeptAt>,
    /// How the entries are named (mdtest's names, or ioscale's own).
    #[serde(default, skip_serializing_if = "MetaNaming::is_native")]
    pub(crate) naming: MetaNaming,
}

/// A moment by the file system's own clock: the status-change time of the
/// working directory right after the marker of a kept tree was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct KeptAt {
    /// `st_ctime` seconds.
    pub(crate) ctime: i64,
    /// `st_ctime_nsec`.
    pub(crate) ctime_nsec: i64,
}

impl KeptAt {
    /// As the engine's cleanup takes it.
    fn cut(self) -> (i64, i64) {
        (self.ctime, self.ctime_nsec)
    }
}

/// Whether a phase of `op` leaves every entry of a kept tree as it was
/// (status-change times included), or removes them (`cleanup`, which
/// honours [`Marker::kept_at`]): a run of only such phases keeps the
/// tree's seal.
fn keeps_seal(op: MetaOp) -> bool {
    matches!(
        op,
        MetaOp::Read
            | MetaOp::Stat
            | MetaOp::StatDir
            | MetaOp::Getxattr
            | MetaOp::Readdir
            | MetaOp::Cleanup
    )
}

impl Marker {
    /// `spec` with this marker's shape: what cleanup must use to
    /// recompute the names of the kept tree.
    pub(crate) fn shaped(&self, spec: &MetaSpec) -> MetaSpec {
        let mut s = spec.clone();
        s.threads = self.threads;
        s.files = self.files;
        s.same_dir = self.same_dir;
        s.files_per_dir = self.files_per_dir;
        s.dirs_per_dir = self.dirs_per_dir;
        s.prefix = self.prefix.clone();
        s.leaf_depth = self.leaf_depth;
        s.naming = self.naming;
        s
    }

    /// The working directory's name for this marker's naming.
    fn root_name(&self) -> &'static str {
        match self.naming {
            MetaNaming::Native => ROOT_NAME,
            MetaNaming::Mdtest => spec::meta::MDTEST_ROOT_NAME,
        }
    }

    /// Why this marker cannot describe a tree ioscale made, if it cannot.
    /// The names of every entry are computed from it, so a prefix holding
    /// `/` (`../../v/` reached files outside the tree) or counts no run
    /// can have are refused before anything is removed by it.
    pub(crate) fn problem(&self) -> Option<String> {
        if self.prefix.contains('/') || self.prefix.contains('\0') {
            return Some(format!(
                "its file-name prefix {:?} holds '/' or NUL",
                self.prefix
            ));
        }
        if self.threads == 0 || self.threads > super::MAX_MARKER_WORKERS {
            return Some(format!(
                "it names {} threads (a tree has 1 to {})",
                self.threads,
                super::MAX_MARKER_WORKERS
            ));
        }
        if self.files_per_dir == 0 {
            return Some("it names 0 files per directory".into());
        }
        if let Some(z) = self.leaf_depth {
            // The checks `--leaf-depth` passes: the tree's node numbers fit
            // in 64 bits (the engine's arithmetic assumes it).
            let b = self.dirs_per_dir;
            let leaves = if b <= 1 { Some(1) } else { b.checked_pow(z) };
            let fits = z <= 64
                && spec::meta::nodes_above(u64::from(z), b)
                    .zip(leaves)
                    .and_then(|(first, l)| first.checked_add(l))
                    .is_some();
            if !fits {
                return Some(format!(
                    "its leaf depth {z} with {b} directories a directory does not fit in 64 bits"
                ));
            }
        }
        if self.files.max(self.extent) > MAX_MARKER_FILES {
            return Some(format!(
                "it names {} files a thread, {} made (a run makes at most 2^40)",
                self.files, self.extent
            ));
        }
        None
    }

    pub(crate) fn same_shape(&self, spec: &MetaSpec) -> bool {
        self.threads == spec.threads
            && self.same_dir == spec.same_dir
            && self.files_per_dir == spec.files_per_dir
            && self.dirs_per_dir == spec.dirs_per_dir
            && self.prefix == spec.prefix
            && self.leaf_depth == spec.leaf_depth
            && self.naming == spec.naming
            && self.files >= spec.files
    }
}

/// The marker in the held working directory, read without following a
/// link and at most 1 MiB.
pub(crate) fn read_marker_in(root: &impl Dir) -> Option<Marker> {
    read_any_marker_in(root).filter(|m| m.problem().is_none())
}

/// The marker as written, unchecked: for `clean` to say what is wrong.
fn read_any_marker_in(root: &impl Dir) -> Option<Marker> {
    let m: Marker = super::read_json_in(root, MARKER_NAME)?;
    (m.tool == "ioscale-meta").then_some(m)
}

/// The most files a thread a marker may name (`--files` takes 2^40).
const MAX_MARKER_FILES: u64 = 1 << 40;

fn write_marker_in(root: &impl Dir, m: &Marker) -> Result<(), safefs::Error> {
    let bytes = serde_json::to_vec_pretty(m).unwrap_or_default();
    // Rewritten before every phase: atomic, not fsync'd (as before).
    root.replace_at(MARKER_NAME, &bytes, false)
}

/// What rank 0 holds for the whole run: the target and the working
/// directory (the marker and every teardown go through them, so a name
/// swapped under the tree is refused, never followed) and the tree's lock.
pub(crate) struct TreeGuard<B: Backend = Posix> {
    target: B::Dir,
    root: B::Dir,
    lock: Option<LockOf<B>>,
}

impl<B: Backend> Drop for TreeGuard<B> {
    /// A kept tree is released: its lock file goes, the tree and its
    /// marker stay.
    fn drop(&mut self) {
        if let Some(l) = self.lock.take() {
            let _ = self.root.unlock(l, lock_name(MARKER_NAME));
        }
    }
}

/// Takes the tree's lock, or says who holds it (exit 2): the data set's
/// rule, with the tree's lock file.
fn take_lock<D: Dir>(root: &D, target: &Path) -> Result<D::Lock, Error> {
    super::take_lock_named(
        root,
        &lock_name(MARKER_NAME),
        &root.path().display().to_string(),
        target,
        safefs::LockOptions::default(),
    )
}

/// The working directory as found or made, on backend `B`.
pub(crate) struct Tree<B: Backend = Posix> {
    pub(crate) root: PathBuf,
    pub(crate) marker: Marker,
    /// Whether the marker can be written (not a read-only tree).
    pub(crate) writable: bool,
    /// Why the last write of the marker failed, when it did.
    pub(crate) save_error: Option<String>,
    /// Whether this run made the entries (fresh tree, or one it emptied
    /// with --clean-existing), so it removes them unless --keep.
    pub(crate) ours: bool,
    /// The held handles and lock (rank 0 only).
    pub(crate) guard: Option<TreeGuard<B>>,
    /// The other ranks: the working directory they opened and checked
    /// against rank 0's (see [`share_on`]).
    pub(crate) held: Option<Arc<B::At>>,
}

impl<B: Backend> Tree<B> {
    /// A handle of the held working directory for the phases' plans:
    /// every thread directory is opened relative to it, never through the
    /// name `ioscale-meta.d` again. Rank 0's is the one it made; another
    /// rank's was opened and checked against it in [`share_on`].
    pub(crate) fn root_dir(&self) -> Option<Arc<B::At>> {
        if let Some(h) = &self.held {
            return Some(Arc::clone(h));
        }
        let g = self.guard.as_ref()?;
        B::at_of(&g.root).ok().map(Arc::new)
    }

    pub(crate) fn save(&mut self) {
        let r = match &self.guard {
            Some(g) if self.writable => write_marker_in(&g.root, &self.marker),
            _ => {
                self.writable = false;
                return;
            }
        };
        if let Err(e) = r {
            self.writable = false;
            self.save_error = Some(e.to_string());
        }
    }
}

/// Finds or makes the working directory on `backend` and decides what may
/// be reused. A workload the backend cannot run is refused first, naming
/// the flag. The working directory is opened without following a link and
/// held; a tree another live run holds is refused, naming that run.
pub(crate) fn prepare_on<B: Backend>(
    backend: &B,
    spec: &MetaSpec,
    run_id: &str,
    notes: &mut Vec<String>,
) -> Result<Tree<B>, Error> {
    check_caps::<B>(spec)?;
    let target = backend.open_target(&spec.target).map_err(fs_err)?;
    prepare_in(target, spec, run_id, notes)
}

/// Refuses a workload the backend cannot run, naming the flag.
fn check_caps<B: Backend>(spec: &MetaSpec) -> Result<(), Error> {
    B::capabilities()
        .check_meta(spec)
        .map_err(|e| Error::Usage(e.to_string()))
}

/// [`prepare_on`] in the target directory `target`, held already (mdtest's
/// test directory, opened or made by [`super::testdir::TestDir`]).
pub(crate) fn prepare_in<B: Backend>(
    target: B::Dir,
    spec: &MetaSpec,
    run_id: &str,
    notes: &mut Vec<String>,
) -> Result<Tree<B>, Error> {
    check_caps::<B>(spec)?;
    let p = Prep {
        spec,
        run_id,
        root: spec.target.join(spec.root_name()),
    };
    let mut tree = match target.stat_at(spec.root_name()).map_err(fs_err)? {
        None => p.make_new(target)?,
        Some(info) if info.kind != Kind::Dir => {
            return Err(Error::Refused(format!(
                "{} exists and is not a directory made by ioscale (it is a {}); remove it or \
                 choose another target",
                p.root.display(),
                info.kind.name()
            )))
        }
        Some(_) => p.open_existing(target, notes)?,
    };
    tree.save();
    if !tree.writable && tree.ours {
        // What this run made (marker, lock, directory) goes again.
        finish_root(&mut tree, &[], &mut Vec::new());
        return Err(Error::Refused(format!(
            "cannot write the marker in {}; choose a writable target",
            p.root.display()
        )));
    }
    make_thread_dirs(spec, &mut tree)?;
    Ok(tree)
}

/// What [`prepare_on`] works with: the run's spec and id, and the working
/// directory's path.
struct Prep<'a> {
    spec: &'a MetaSpec,
    run_id: &'a str,
    root: PathBuf,
}

impl Prep<'_> {
    /// The marker of a tree this run starts.
    fn fresh(&self, root_created: bool) -> Marker {
        let spec = self.spec;
        Marker {
            tool: "ioscale-meta".into(),
            run_id: self.run_id.into(),
            threads: spec.threads,
            files: spec.files,
            same_dir: spec.same_dir,
            files_per_dir: spec.files_per_dir,
            dirs_per_dir: spec.dirs_per_dir,
            prefix: spec.prefix.clone(),
            root_created,
            state: TreeState::default(),
            extent: 0,
            leaf_depth: spec.leaf_depth,
            kept_at: None,
            naming: spec.naming,
        }
    }

    /// A tree this run owns, held through `guard`.
    fn owned<B: Backend>(&self, marker: Marker, guard: TreeGuard<B>) -> Tree<B> {
        Tree {
            root: self.root.clone(),
            marker,
            writable: true,
            save_error: None,
            ours: true,
            guard: Some(guard),
            held: None,
        }
    }

    /// No working directory yet: make it, its marker, then the lock.
    fn make_new<B: Backend>(&self, target: B::Dir) -> Result<Tree<B>, Error> {
        let name = self.spec.root_name();
        let rootd = target.mkdir_at(name, 0o755).map_err(fs_err)?;
        let marker = self.fresh(true);
        // The marker goes down before the lock and anything else; a
        // failed write leaves no temporary file, and the directory this
        // run made goes again.
        if let Err(e) = write_marker_in(&rootd, &marker) {
            let _ = target.rmdir_at(name, Some(rootd.id()));
            return Err(fs_err(e));
        }
        self.lock_owned(marker, target, rootd, true)
    }

    /// Locks a working directory whose marker this run just wrote and
    /// returns the tree it owns. When no lock file can be made (EMFILE,
    /// ENOSPC) what this run made goes again: the marker, and the
    /// directory when `made_root`. A set another process locked meanwhile
    /// is theirs now, and stays.
    fn lock_owned<B: Backend>(
        &self,
        marker: Marker,
        target: B::Dir,
        rootd: B::Dir,
        made_root: bool,
    ) -> Result<Tree<B>, Error> {
        let lock = match take_lock(&rootd, &self.spec.target) {
            Ok(l) => l,
            Err(e @ Error::Setup { .. }) => {
                let _ = rootd.unlink_at(MARKER_NAME, None);
                if made_root {
                    let _ = target.rmdir_at(self.spec.root_name(), Some(rootd.id()));
                }
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        Ok(self.owned(
            marker,
            TreeGuard {
                target,
                root: rootd,
                lock: Some(lock),
            },
        ))
    }

    /// A working directory exists: use it when empty, adopt the tree its
    /// marker describes, or refuse what ioscale did not make.
    fn open_existing<B: Backend>(
        &self,
        target: B::Dir,
        notes: &mut Vec<String>,
    ) -> Result<Tree<B>, Error> {
        let rootd = target
            .open_dir_at(self.spec.root_name(), None)
            .map_err(fs_err)?;
        let Some(found) = read_marker_in(&rootd) else {
            if let Some(p) = read_any_marker_in(&rootd).and_then(|m| m.problem()) {
                return Err(super::bad_marker(&self.root.join(MARKER_NAME), &p));
            }
            return self.use_empty(target, rootd);
        };
        let writable = rootd.writable();
        let lock = match take_lock(&rootd, &self.spec.target) {
            Ok(l) => Some(l),
            // A kept tree on a read-only file system: nothing here can
            // change it, and no lock file can be made.
            Err(Error::Setup { .. }) if !writable => None,
            Err(e) => return Err(e),
        };
        let guard = TreeGuard {
            target,
            root: rootd,
            lock,
        };
        self.adopt_kept(found, notes, guard, writable)
    }

    /// A working directory without a marker: use it if empty, and leave
    /// it (not ours) at the end.
    fn use_empty<B: Backend>(&self, target: B::Dir, rootd: B::Dir) -> Result<Tree<B>, Error> {
        let empty = rootd.list().map_err(fs_err)?.is_empty();
        if !empty {
            return Err(Error::Refused(format!(
                "{} exists and holds files but no ioscale marker, so ioscale did not make them; \
                 refusing to touch it (remove it yourself or choose another target)",
                self.root.display()
            )));
        }
        let marker = self.fresh(false);
        write_marker_in(&rootd, &marker).map_err(fs_err)?;
        self.lock_owned(marker, target, rootd, false)
    }

    /// The working directory holds a tree an earlier run kept (`found` is
    /// its marker): remove it first with `--clean-existing`, or check that
    /// this run's phases can work on it as it is.
    fn adopt_kept<B: Backend>(
        &self,
        found: Marker,
        notes: &mut Vec<String>,
        guard: TreeGuard<B>,
        writable: bool,
    ) -> Result<Tree<B>, Error> {
        let (spec, root) = (self.spec, &self.root);
        if spec.clean_existing {
            let kept_spec = found.shaped(spec);
            let left = teardown(&kept_spec, &guard, &found);
            if !left.is_empty() {
                return Err(Error::Refused(format!(
                    "--clean-existing: could not remove the earlier run's tree in {}: {}",
                    root.display(),
                    left.join("; ")
                )));
            }
            notes.push(format!(
                "removed the tree an earlier run kept in {} (--clean-existing)",
                root.display()
            ));
            return Ok(self.owned(self.fresh(found.root_created), guard));
        }
        if !found.same_shape(spec) {
            return Err(other_shape(root, &found));
        }
        let mut st = found.state;
        for &op in &spec.ops {
            if let Some(pre) = st.prerequisite(op) {
                st = spec.state_after(st, pre).unwrap_or(st);
            }
            st = spec.state_after(st, op).map_err(|why| Error::KeptTree {
                message: format!(
                    "{} holds a tree an earlier run kept, and `{op}` cannot run on it: {why}; \
                     pass --clean-existing to remove it first, or run phases that use it \
                     (e.g. --ops stat,read,delete)",
                    root.display()
                ),
                conflict: why,
            })?;
        }
        Ok(Tree {
            root: root.clone(),
            marker: Marker {
                run_id: self.run_id.into(),
                // Phases that change entries end the seal: this run's
                // entries are its own, sealed again if it keeps them.
                kept_at: found
                    .kept_at
                    .filter(|_| spec.ops.iter().all(|&o| keeps_seal(o))),
                ..found
            },
            writable,
            save_error: None,
            ours: false,
            guard: Some(guard),
            held: None,
        })
    }
}

/// The refusal of a kept tree of another shape, naming the flags that
/// made it.
fn other_shape(root: &Path, found: &Marker) -> Error {
    Error::Refused(format!(
        "{} holds a tree kept by an earlier run with --threads {} --files {}{}{}{} \
         --prefix '{}'; use the same flags (and no more files) to work on it, or \
         pass --clean-existing to remove it first",
        root.display(),
        found.threads,
        found.files,
        if found.same_dir { " --same-dir" } else { "" },
        if found.files_per_dir != u64::MAX {
            format!(" --files-per-dir {}", found.files_per_dir)
        } else {
            String::new()
        },
        if found.files_per_dir != u64::MAX {
            format!(" --dirs-per-dir {}", found.dirs_per_dir)
        } else {
            String::new()
        },
        found.prefix
    ))
}

/// Thread directories, untimed, as `run` makes its per-worker ones, in the
/// held working directory; on a failure a tree this run made is removed
/// again.
fn make_thread_dirs<B: Backend>(spec: &MetaSpec, tree: &mut Tree<B>) -> Result<(), Error> {
    let Some(g) = &tree.guard else {
        return Ok(());
    };
    let mut made = Ok(());
    for w in 0..spec.threads {
        if let Some(d) = spec.thread_dir(w) {
            made = match g.root.stat_at(&d).map_err(fs_err) {
                Ok(Some(info)) if info.kind == Kind::Dir => Ok(()),
                Ok(Some(info)) => Err(Error::Refused(format!(
                    "{}: it is a {}, not the directory ioscale made; refusing to use it",
                    g.root.child_path(&d).display(),
                    info.kind.name()
                ))),
                Ok(None) => g.root.mkdir_at(&d, 0o755).map(|_| ()).map_err(fs_err),
                Err(e) => Err(e),
            };
            if made.is_err() {
                break;
            }
        }
    }
    if made.is_err() && tree.ours {
        let left = teardown(spec, g, &tree.marker);
        finish_root(tree, &left, &mut Vec::new());
    }
    made
}

/// Removes entries of every kind the marker `m`'s state allows for
/// indices below its extent (none put there after its `kept_at`), then the
/// hashed directories and thread directories — names recomputed, `rmdir`
/// only — relative to the held working directory, so a swapped name is
/// never followed. Returns what could not be removed.
pub(crate) fn teardown<B: Backend>(
    spec: &MetaSpec,
    guard: &TreeGuard<B>,
    m: &Marker,
) -> Vec<String> {
    let root = guard.root.path();
    match B::at_of(&guard.root) {
        Ok(at) => teardown_at::<B>(spec, Arc::new(at), root, m),
        Err(e) => vec![format!(
            "{}: cannot hold it open ({e}), so nothing below it was removed (ioscale never \
             removes through a path that may have been swapped)",
            root.display()
        )],
    }
}

fn teardown_at<B: Backend>(
    spec: &MetaSpec,
    at: Arc<B::At>,
    root: &Path,
    m: &Marker,
) -> Vec<String> {
    let (state, extent) = (m.state, m.extent);
    let mut left = Vec::new();
    if !state.is_empty() && extent > 0 {
        let plan = MetaPlan::<B> {
            spec,
            op: MetaOp::Cleanup,
            root: root.to_path_buf(),
            rep: 0,
            state: TreeState {
                renamed: true,
                ..state
            },
            limit: Some(vec![extent; spec.threads as usize]),
            timed: false,
            root_dir: Some(Arc::clone(&at)),
            kept_before: m.kept_at.map(KeptAt::cut),
            series: None,
        };
        // One thread at a time: few descriptors, so even after EMFILE the
        // cleanup can run.
        let stop = Arc::new(AtomicBool::new(false));
        for w in 0..spec.threads {
            let ctl = PhaseControl::new(stop.clone());
            let s = run_meta_worker(w, &plan, &ctl, &Barrier::new(1));
            if let Some(f) = &s.failure {
                left.push(format!("{}: {}", f.path.display(), f.message));
            }
            if let Some(p) = &s.first_left {
                left.push(format!(
                    "{} and {} more: {LEFT_WHY}",
                    p.display(),
                    s.left.saturating_sub(1)
                ));
            }
        }
    }
    let dirs_extent = extent.max(1);
    if spec.same_dir {
        left.extend(remove_tree::<B>(spec, &at, root, 0, dirs_extent));
    } else {
        for w in 0..spec.threads {
            left.extend(remove_tree::<B>(spec, &at, root, w, dirs_extent));
        }
    }
    left
}

/// Why a cleanup left entries of a tree in place.
pub(crate) const LEFT_WHY: &str = "left alone (directories holding entries ioscale did not \
     create, or entries put under ioscale's names after the tree was kept)";

/// Records in the marker of a tree that stays when it was kept
/// ([`Marker::kept_at`]), by the file system's clock: the marker is
/// written, then the working directory's status-change time (which that
/// write just set) is read and saved in it. Any entry made, replaced or
/// linked later has a later one. (Within one tick of a coarse clock, a few
/// milliseconds while this run still ends, a change may share the time;
/// kernels since 6.13 hand out finer times to a queried inode.)
fn seal<B: Backend>(tree: &mut Tree<B>) {
    tree.save();
    let Some(g) = tree.guard.as_ref().filter(|_| tree.writable) else {
        return;
    };
    let changed = B::at_of(&g.root).and_then(|at| B::changed(&at, b".\0"));
    if let Ok((ctime, ctime_nsec)) = changed {
        tree.marker.kept_at = Some(KeptAt { ctime, ctime_nsec });
        tree.save();
    }
}

/// After the last phase, on rank 0: removes the tree (when this run made
/// it, ran a cleanup, or left it empty, and not `--keep`), or saves its
/// marker and says how to remove it later. `spec` is the spec of all
/// workers; the marker holds the state and extent the phases left.
pub(crate) fn close<B: Backend>(
    spec: &MetaSpec,
    tree: &mut Tree<B>,
    ran_cleanup: bool,
    notes: &mut Vec<String>,
) {
    let remove = !spec.keep && (tree.ours || ran_cleanup || tree.marker.state.is_empty());
    if remove {
        let left = match &tree.guard {
            Some(g) => teardown(spec, g, &tree.marker),
            None => vec![format!(
                "{}: this process does not hold it",
                tree.root.display()
            )],
        };
        if left.is_empty() || tree.ours {
            finish_root(tree, &left, notes);
        } else {
            for l in &left {
                notes.push(format!("cleanup: could not remove {l}"));
            }
        }
    } else {
        if tree.ours || !spec.ops.iter().all(|&o| keeps_seal(o)) {
            // This run made or changed the entries it leaves.
            seal(tree);
        } else {
            tree.save();
        }
        let how = format!(
            "`ioscale clean {}` or `ioscale meta --ops cleanup --threads {} --files {}{}{}{} {}` \
             removes it",
            spec.target.display(),
            spec.threads,
            tree.marker.files,
            if spec.same_dir { " --same-dir" } else { "" },
            if spec.prefix.is_empty() {
                String::new()
            } else {
                format!(" --prefix {}", spec.prefix)
            },
            if spec.files_per_dir != u64::MAX {
                format!(
                    " --files-per-dir {} --dirs-per-dir {}",
                    spec.files_per_dir, spec.dirs_per_dir
                )
            } else {
                String::new()
            },
            spec.target.display()
        );
        if spec.keep {
            notes.push(format!("kept the tree in {} ({how})", tree.root.display()));
        } else {
            notes.push(format!(
                "the tree in {} was kept by an earlier run and is left in place ({how})",
                tree.root.display()
            ));
        }
        if !tree.writable {
            notes.push(format!(
                "could not update the marker in {} ({})",
                tree.root.display(),
                tree.save_error.as_deref().unwrap_or("no write permission")
            ));
        }
    }
}

/// Removes ioscale's temporary names, the marker, the lock and, when an
/// ioscale run made it, the working directory (rmdir, checked to be the
/// held one: only when nothing foreign is left), all through the held
/// handles.
pub(crate) fn finish_root<B: Backend>(
    tree: &mut Tree<B>,
    left: &[String],
    notes: &mut Vec<String>,
) {
    for l in left {
        notes.push(format!("cleanup: could not remove {l}"));
    }
    let Some(mut g) = tree.guard.take() else {
        return;
    };
    for n in super::own_temps(&g.root) {
        let _ = g.root.unlink_at(&n, None);
    }
    if let Err(e) = g.root.unlink_at(MARKER_NAME, None) {
        notes.push(format!("cleanup: could not remove {e}"));
    }
    if let Some(l) = g.lock.take() {
        if let Err(e) = g.root.unlock(l, lock_name(MARKER_NAME)) {
            notes.push(format!("cleanup: could not remove {e}"));
        }
    }
    if tree.marker.root_created {
        match g.target.rmdir_at(tree.marker.root_name(), Some(g.root.id())) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) => notes.push(format!(
                "cleanup: could not remove {e} (it holds files ioscale did not create; they were left alone)"
            )),
            Err(e) => notes.push(format!("cleanup: could not remove {e}")),
        }
    }
}

/// `ioscale clean TARGET` for a metadata tree: `None` when there is no
/// `TARGET/ioscale-meta.d`; else removes the tree a kept (or stopped) run
/// left, recognised by its marker, and returns what was left. A tree a
/// live run holds is refused naming it; one whose holder is gone is taken
/// over. On a POSIX file system ([`clean_on`]).
pub fn clean(target: &Path, opts: safefs::LockOptions) -> Result<Option<Cleaned>, Error> {
    clean_on(&Posix, target, opts)
}

/// [`clean`] on `backend`.
pub fn clean_on<B: Backend>(
    backend: &B,
    target: &Path,
    opts: safefs::LockOptions,
) -> Result<Option<Cleaned>, Error> {
    clean_named(backend, target, ROOT_NAME, opts)
}

/// [`clean`] of a tree with mdtest's names (`TARGET/test-dir.0-0`), as
/// io500's mdtest phases leave one: `None` when there is none, or when it
/// has no ioscale marker (a real mdtest's directory is not ioscale's to
/// remove, nor to complain about).
pub fn clean_mdtest(target: &Path, opts: safefs::LockOptions) -> Result<Option<Cleaned>, Error> {
    clean_mdtest_on(&Posix, target, opts)
}

/// [`clean_mdtest`] on `backend`.
pub fn clean_mdtest_on<B: Backend>(
    backend: &B,
    target: &Path,
    opts: safefs::LockOptions,
) -> Result<Option<Cleaned>, Error> {
    let name = spec::meta::MDTEST_ROOT_NAME;
    let Some((_, _, rootd)) = super::open_root_to_clean(backend, target, name)? else {
        return Ok(None);
    };
    if read_any_marker_in(&rootd).is_none() {
        return Ok(None);
    }
    drop(rootd);
    clean_named(backend, target, name, opts)
}

/// [`clean`] of the working directory called `name`.
fn clean_named<B: Backend>(
    backend: &B,
    target: &Path,
    name: &str,
    opts: safefs::LockOptions,
) -> Result<Option<Cleaned>, Error> {
    let Some((t, root, rootd)) = super::open_root_to_clean(backend, target, name)? else {
        return Ok(None);
    };
    let Some(m) = read_any_marker_in(&rootd) else {
        return Err(super::no_marker(&root));
    };
    if let Some(p) = m.problem() {
        return Err(super::bad_marker(&root.join(MARKER_NAME), &p));
    }
    let lock = match rootd
        .try_lock(lock_name(MARKER_NAME), &command_line(), opts)
        .map_err(fs_err)?
    {
        Locked::Acquired(l) => l,
        Locked::Held { .. } => return take_lock(&rootd, target).map(|_| None),
    };
    let took_over = lock
        .stale_holder()
        .map(|(h, why)| format!("took over {} from {} ({why})", root.display(), h.describe()));
    let spec = m.shaped(&MetaSpec {
        target: target.to_path_buf(),
        ops: vec![MetaOp::Cleanup],
        threads: m.threads,
        files: m.files,
        file_size: spec::FileSize::Fixed { bytes: 0 },
        record_size: 4096,
        same_dir: m.same_dir,
        files_per_dir: m.files_per_dir,
        dirs_per_dir: m.dirs_per_dir,
        fsync: false,
        direct: false,
        time_limit: None,
        reps: 1,
        seed: 0,
        prefix: m.prefix.clone(),
        keep: false,
        clean_existing: false,
        sync_phase: false,
        verify: false,
        stride: 0,
        leaf_depth: m.leaf_depth,
        stop_at_first: false,
        mdtest_calls: false,
        engine: "sync".into(),
        iodepth: 1,
        wearout: false,
        item_counts: Vec::new(),
        naming: m.naming,
        read_bytes: None,
    });
    let mut tree = Tree::<B> {
        root,
        marker: m,
        writable: true,
        save_error: None,
        ours: true,
        guard: Some(TreeGuard {
            target: t,
            root: rootd,
            lock: Some(lock),
        }),
        held: None,
    };
    let left = match &tree.guard {
        Some(g) => teardown(&spec, g, &tree.marker),
        None => Vec::new(),
    };
    let mut notes = Vec::new();
    finish_root(&mut tree, &left, &mut notes);
    let left = notes
        .into_iter()
        .map(|n| {
            n.trim_start_matches("cleanup: could not remove ")
                .to_string()
        })
        .collect();
    Ok(Some(Cleaned {
        set: format!("the metadata tree {}", tree.root.display()),
        took_over,
        left,
    }))
}

/// Merges what may exist before and after a phase that did not finish.
pub(crate) fn union(a: TreeState, b: TreeState) -> TreeState {
    TreeState {
        files: a.files || b.files,
        renamed: a.renamed || b.renamed,
        links: a.links || b.links,
        dirs: a.dirs || b.dirs,
        // Data half written by either side holds neither's pattern for sure.
        pattern: if a.pattern == b.pattern {
            a.pattern
        } else {
            None
        },
    }
}

/// Hands rank 0's tree to every rank, with the identity of the working
/// directory rank 0 holds. Each other rank opens TARGET (as the user named
/// it) and `ioscale-meta.d` below it on `backend` without following a
/// link, and compares its identity with rank 0's (the inode alone on
/// another node, see [`super::peer`]); a mismatch is exit 2 naming the
/// rank, agreed by all ranks. Their copy never writes the marker
/// (`writable` false) and is never removed by them. A collective call.
pub(crate) fn share_on<B: Backend>(
    backend: &B,
    coord: &dyn coord::Coordinator,
    made: Option<Tree<B>>,
    spec: &MetaSpec,
) -> Result<Tree<B>, Error> {
    if coord.size() == 1 {
        return made.ok_or_else(|| Error::Refused("rank 0 has no tree".into()));
    }
    let sent = made.as_ref().map(|t| {
        let id = t.guard.as_ref().map(|g| g.root.id());
        (t.marker.clone(), id, super::peer::node_id())
    });
    let got: Option<(Marker, Option<safefs::FileId>, String)> = coord
        .broadcast_as(&sent)
        .map_err(|e| Error::Refused(e.to_string()))?;
    let opened = match (&made, &got) {
        (Some(_), _) => Ok(None),
        (None, Some((_, id, node))) => open_peer_root(backend, spec, *id, node).map(Some),
        (None, None) => Err(Error::Refused("rank 0 sent no tree".into())),
    };
    let held = super::super::cluster::agree(coord, opened)?;
    if let Some(t) = made {
        return Ok(t);
    }
    let (marker, _, _) = got.ok_or_else(|| Error::Refused("rank 0 sent no tree".into()))?;
    Ok(Tree {
        root: spec.target.join(spec.root_name()),
        marker,
        writable: false,
        save_error: None,
        ours: false,
        guard: None,
        held,
    })
}

/// Another rank's `ioscale-meta.d`, opened with `O_NOFOLLOW` below the
/// user's TARGET and checked against rank 0's identity `want`.
fn open_peer_root<B: Backend>(
    backend: &B,
    spec: &MetaSpec,
    want: Option<safefs::FileId>,
    node: &str,
) -> Result<Arc<B::At>, Error> {
    super::peer::test_pause();
    let t = backend.open_target(&spec.target).map_err(fs_err)?;
    let d = t.open_dir_at(spec.root_name(), None).map_err(fs_err)?;
    if let Some(w) = want {
        let same_node = node == super::peer::node_id();
        if !super::peer::same_dir(w, d.id(), same_node) {
            return Err(super::peer::other_dir(d.path(), w, d.id()));
        }
    }
    B::at_of(&d).map(Arc::new).map_err(|source| Error::Setup {
        what: format!("cannot hold {} open", d.path().display()),
        source,
    })
}
