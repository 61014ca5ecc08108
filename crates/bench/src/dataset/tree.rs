//! The working tree of a metadata workload (`ioscale meta`, mdtest,
//! smallfile): its directory, its marker, and removing exactly what was made.
//!
//! Every file-system mutation of the tree's scaffolding happens here:
//! creating the working and thread directories, writing and removing the
//! marker, and the teardown (which drives the engine's cleanup walk and its
//! `rmdir`-only directory removal). The timed phases themselves create and
//! delete entries in the engine, as the workload under test.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};

use engine::meta::{remove_tree, run_meta_worker, MetaPlan};
use engine::PhaseControl;
use serde::{Deserialize, Serialize};
use spec::{MetaOp, MetaSpec, TreeState};

use crate::error::Error;

/// Name of the working directory inside the target.
pub const ROOT_NAME: &str = "ioscale-meta.d";
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
        s
    }

    pub(crate) fn same_shape(&self, spec: &MetaSpec) -> bool {
        self.threads == spec.threads
            && self.same_dir == spec.same_dir
            && self.files_per_dir == spec.files_per_dir
            && self.dirs_per_dir == spec.dirs_per_dir
            && self.prefix == spec.prefix
            && self.leaf_depth == spec.leaf_depth
            && self.files >= spec.files
    }
}

pub(crate) fn read_marker(root: &Path) -> Option<Marker> {
    let text = fs::read(root.join(MARKER_NAME)).ok()?;
    let m: Marker = serde_json::from_slice(&text).ok()?;
    (m.tool == "ioscale-meta").then_some(m)
}

/// Replaces the marker (in place where the file system cannot rename).
pub(crate) fn write_marker(root: &Path, m: &Marker) -> io::Result<()> {
    super::replace_file(
        &root.join(MARKER_NAME),
        &serde_json::to_vec_pretty(m).map_err(io::Error::other)?,
    )
}

/// The working directory as found or made.
pub(crate) struct Tree {
    pub(crate) root: PathBuf,
    pub(crate) marker: Marker,
    /// Whether the marker can be written (not a read-only tree).
    pub(crate) writable: bool,
    /// Whether this run made the entries (fresh tree, or one it emptied
    /// with --clean-existing), so it removes them unless --keep.
    pub(crate) ours: bool,
}

impl Tree {
    pub(crate) fn save(&mut self) {
        if self.writable && write_marker(&self.root, &self.marker).is_err() {
            self.writable = false;
        }
    }
}

/// Finds or makes the working directory and decides what may be reused.
pub(crate) fn prepare(
    spec: &MetaSpec,
    run_id: &str,
    notes: &mut Vec<String>,
) -> Result<Tree, Error> {
    let root = spec.target.join(ROOT_NAME);
    let fresh = |root_created: bool| Marker {
        tool: "ioscale-meta".into(),
        run_id: run_id.into(),
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
    };
    let mut tree = match fs::symlink_metadata(&root) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir(&root)
                .map_err(|e| Error::Refused(format!("cannot create {}: {}", root.display(), e)))?;
            Tree {
                root: root.clone(),
                marker: fresh(true),
                writable: true,
                ours: true,
            }
        }
        Err(e) => {
            return Err(Error::Refused(format!(
                "cannot inspect {}: {e}",
                root.display()
            )))
        }
        Ok(m) if !m.is_dir() => {
            return Err(Error::Refused(format!(
            "{} exists and is not a directory made by ioscale; remove it or choose another target",
            root.display()
        )))
        }
        Ok(_) => match read_marker(&root) {
            None => {
                let empty = fs::read_dir(&root)
                    .map_err(|e| Error::Refused(format!("cannot read {}: {e}", root.display())))?
                    .next()
                    .is_none();
                if !empty {
                    return Err(Error::Refused(format!(
                        "{} exists and holds files but no ioscale marker, so ioscale did not make them; \
                         refusing to touch it (remove it yourself or choose another target)",
                        root.display()
                    )));
                }
                // An empty directory: use it, and leave it (not ours) at the end.
                Tree {
                    root: root.clone(),
                    marker: fresh(false),
                    writable: true,
                    ours: true,
                }
            }
            Some(found) => adopt_kept(spec, &root, run_id, found, notes, fresh)?,
        },
    };
    tree.save();
    if !tree.writable && tree.ours {
        // A failed setup leaves nothing behind: the directory this run
        // made goes again (rmdir: only while it is empty).
        if tree.marker.root_created {
            let _ = fs::remove_dir(&root);
        }
        return Err(Error::Refused(format!(
            "cannot write the marker in {}; choose a writable target",
            root.display()
        )));
    }
    make_thread_dirs(spec, &root, &tree)?;
    Ok(tree)
}

/// The working directory holds a tree an earlier run kept (`found` is its
/// marker): remove it first with `--clean-existing`, or check that this
/// run's phases can work on it as it is.
fn adopt_kept(
    spec: &MetaSpec,
    root: &Path,
    run_id: &str,
    found: Marker,
    notes: &mut Vec<String>,
    fresh: impl Fn(bool) -> Marker,
) -> Result<Tree, Error> {
    let root = root.to_path_buf();
    if spec.clean_existing {
        let kept_spec = found.shaped(spec);
        let left = teardown(&kept_spec, &root, found.state, found.extent);
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
        Ok(Tree {
            root,
            marker: fresh(found.root_created),
            writable: true,
            ours: true,
        })
    } else {
        if !found.same_shape(spec) {
            return Err(Error::Refused(format!(
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
            )));
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
        let writable = engine::sys::can_write(&root);
        Ok(Tree {
            root,
            marker: Marker {
                run_id: run_id.into(),
                ..found
            },
            writable,
            ours: false,
        })
    }
}

/// Thread directories, untimed, as `run` makes its per-worker ones; on a
/// failure a tree this run made is removed again.
fn make_thread_dirs(spec: &MetaSpec, root: &Path, tree: &Tree) -> Result<(), Error> {
    for w in 0..spec.threads {
        if let Some(d) = spec.thread_dir(w) {
            let p = root.join(d);
            match fs::create_dir(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    let msg = format!("cannot create {}: {e}", p.display());
                    if tree.ours {
                        let left = teardown(spec, root, TreeState::default(), 0);
                        finish_root(tree, &left, &mut Vec::new());
                    }
                    return Err(Error::Refused(msg));
                }
            }
        }
    }
    Ok(())
}

/// Removes entries of every kind `state` allows for indices below
/// `extent`, then the hashed directories and thread directories — names
/// recomputed, `rmdir` only. Returns what could not be removed.
pub(crate) fn teardown(spec: &MetaSpec, root: &Path, state: TreeState, extent: u64) -> Vec<String> {
    let mut left = Vec::new();
    if !state.is_empty() && extent > 0 {
        let plan = MetaPlan {
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
                    "{} and {} more: not empty (they hold entries ioscale did not create; left alone)",
                    p.display(),
                    s.left.saturating_sub(1)
                ));
            }
        }
    }
    let dirs_extent = extent.max(1);
    if spec.same_dir {
        left.extend(remove_tree(spec, root, 0, dirs_extent));
    } else {
        for w in 0..spec.threads {
            left.extend(remove_tree(spec, root, w, dirs_extent));
        }
    }
    left
}

/// After the last phase, on rank 0: removes the tree (when this run made
/// it, ran a cleanup, or left it empty, and not `--keep`), or saves its
/// marker and says how to remove it later. `spec` is the spec of all
/// workers; the marker holds the state and extent the phases left.
pub(crate) fn close(spec: &MetaSpec, tree: &mut Tree, ran_cleanup: bool, notes: &mut Vec<String>) {
    let remove = !spec.keep && (tree.ours || ran_cleanup || tree.marker.state.is_empty());
    if remove {
        let left = teardown(spec, &tree.root, tree.marker.state, tree.marker.extent);
        if left.is_empty() || tree.ours {
            finish_root(tree, &left, notes);
        } else {
            for l in &left {
                notes.push(format!("cleanup: could not remove {l}"));
            }
        }
    } else {
        tree.save();
        let how = format!(
            "`ioscale meta --ops cleanup --threads {} --files {}{}{}{} {}` removes it",
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
                "could not update the marker in {} (no write permission)",
                tree.root.display()
            ));
        }
    }
}

/// Removes the marker and, when an ioscale run made it, the working
/// directory (rmdir: only when nothing foreign is left).
pub(crate) fn finish_root(tree: &Tree, left: &[String], notes: &mut Vec<String>) {
    for l in left {
        notes.push(format!("cleanup: could not remove {l}"));
    }
    let _ = fs::remove_file(tree.root.join(format!("{MARKER_NAME}.tmp")));
    let _ = fs::remove_file(tree.root.join(MARKER_NAME));
    if tree.marker.root_created {
        match fs::remove_dir(&tree.root) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => notes.push(format!(
                "cleanup: could not remove {}: {e} (it holds files ioscale did not create; they were left alone)",
                tree.root.display()
            )),
        }
    }
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
