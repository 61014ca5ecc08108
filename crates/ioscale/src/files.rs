//! Where the data files live, and the rules for removing them.
//!
//! ioscale works inside `TARGET/ioscale.d`, and writes a marker file there
//! before creating any data file. Cleanup removes only the data files and
//! per-worker directories its own naming scheme produces, then the marker,
//! and removes directories with `rmdir` — never recursively — so anything a
//! user put there survives. A directory called `ioscale.d` without the
//! marker is refused, never reused.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use spec::{Layout, WorkloadSpec};

/// Name of the working directory inside the target.
pub const ROOT_NAME: &str = "ioscale.d";
/// Name of the marker file inside the working directory.
pub const MARKER_NAME: &str = ".ioscale-marker";

/// What the marker records: enough to recognise the files and to check
/// that a later read run matches them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// Always "ioscale".
    pub tool: String,
    /// Run that made the files.
    pub run_id: String,
    /// Layout of the files.
    pub layout: Layout,
    /// Workers (one file each unless shared).
    pub threads: u32,
    /// Bytes per file the writer intended.
    pub file_size: u64,
    /// Whether the writing run finished its write phase.
    pub complete: bool,
    /// Seed of the verify pattern.
    pub seed: u64,
}

/// The data files of one run and what this run created.
#[derive(Debug)]
pub struct DataSet {
    /// `TARGET/ioscale.d`.
    pub root: PathBuf,
    /// Whether this run created `root`.
    pub created_root: bool,
    /// Data file paths, by file index.
    pub files: Vec<PathBuf>,
    /// Per-worker directories (per-thread-dir layout).
    pub dirs: Vec<PathBuf>,
    /// The marker this run found or wrote.
    pub marker: Marker,
    /// Whether the files held a complete data set before this run.
    pub had_data: bool,
}

/// Why a data set could not be used.
#[derive(Debug)]
pub enum SetupError {
    /// Bad target or foreign directory: a usage/setup error (exit 2).
    Usage(String),
    /// The file system refused something: exit 2 as well, with the cause.
    Io(String, io::Error),
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetupError::Usage(m) => f.write_str(m),
            SetupError::Io(m, e) => write!(f, "{m}: {e}"),
        }
    }
}

fn names(root: &Path, layout: Layout, threads: u32) -> (Vec<PathBuf>, Vec<PathBuf>) {
    match layout {
        Layout::Shared => (vec![root.join("shared.dat")], Vec::new()),
        Layout::PerThread => (
            (0..threads)
                .map(|i| root.join(format!("file.{i:08}")))
                .collect(),
            Vec::new(),
        ),
        Layout::PerThreadDir => {
            let dirs: Vec<PathBuf> = (0..threads)
                .map(|i| root.join(format!("dir.{i:08}")))
                .collect();
            let files = dirs
                .iter()
                .enumerate()
                .map(|(i, d)| d.join(format!("file.{i:08}")))
                .collect();
            (files, dirs)
        }
    }
}

fn read_marker(root: &Path) -> Option<Marker> {
    let text = fs::read(root.join(MARKER_NAME)).ok()?;
    let m: Marker = serde_json::from_slice(&text).ok()?;
    (m.tool == "ioscale").then_some(m)
}

fn write_marker(root: &Path, m: &Marker) -> io::Result<()> {
    let tmp = root.join(format!("{MARKER_NAME}.tmp"));
    fs::write(
        &tmp,
        serde_json::to_vec_pretty(m).map_err(io::Error::other)?,
    )?;
    fs::rename(&tmp, root.join(MARKER_NAME))
}

impl DataSet {
    /// Prepares the working directory for `spec`.
    ///
    /// A run that writes creates `ioscale.d` (or reuses one a kept run with
    /// the same layout left). A run that only reads needs such a kept data
    /// set with matching layout, worker count and size.
    pub fn prepare(spec: &WorkloadSpec, run_id: &str) -> Result<DataSet, SetupError> {
        let root = spec.target.join(ROOT_NAME);
        let writes = spec.ops.iter().any(|o| o.writes());
        let (files, dirs) = names(&root, spec.layout, spec.threads);
        let want = Marker {
            tool: "ioscale".into(),
            run_id: run_id.into(),
            layout: spec.layout,
            threads: spec.threads,
            file_size: spec.file_size(),
            complete: false,
            seed: spec.seed,
        };
        match fs::symlink_metadata(&root) {
            Ok(meta) => {
                if !meta.is_dir() {
                    return Err(SetupError::Usage(format!(
                        "{} exists and is not a directory made by ioscale; remove it or choose another target",
                        root.display()
                    )));
                }
                let Some(found) = read_marker(&root) else {
                    return Err(SetupError::Usage(format!(
                        "{} exists but has no ioscale marker, so ioscale did not make it; \
                         refusing to touch it (remove it yourself or choose another target)",
                        root.display()
                    )));
                };
                let same = found.layout == spec.layout && found.threads == spec.threads;
                if !same {
                    return Err(SetupError::Usage(format!(
                        "{} holds files kept by an earlier run with --layout {} and --threads {}; \
                         use the same flags to read them, or run `ioscale clean {}` first",
                        root.display(),
                        found.layout,
                        found.threads,
                        spec.target.display()
                    )));
                }
                let had_data = found.complete && found.file_size >= spec.file_size();
                if !writes && !had_data {
                    return Err(SetupError::Usage(format!(
                        "the kept files in {} are incomplete or smaller ({} bytes per file) than this run reads ({}); \
                         write them again with --keep and the same sizes",
                        root.display(),
                        found.file_size,
                        spec.file_size()
                    )));
                }
                if !writes {
                    for f in &files {
                        let len = fs::metadata(f).map(|m| m.len()).unwrap_or(0);
                        if len < spec.file_size() {
                            return Err(SetupError::Usage(format!(
                                "{} holds {len} bytes but this run reads {}; write the files again with --keep",
                                f.display(),
                                spec.file_size()
                            )));
                        }
                    }
                }
                if spec.verify && found.seed != spec.seed && !writes {
                    return Err(SetupError::Usage(format!(
                        "the kept files were written with --seed {}; pass the same --seed to verify them",
                        found.seed
                    )));
                }
                for d in &dirs {
                    match fs::create_dir(d) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(e) => {
                            return Err(SetupError::Io(format!("cannot create {}", d.display()), e))
                        }
                    }
                }
                Ok(DataSet {
                    root,
                    created_root: false,
                    files,
                    dirs,
                    marker: found,
                    had_data,
                })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if !writes {
                    return Err(SetupError::Usage(format!(
                        "nothing to read in {}: no kept files there. Write them first with the same layout flags, e.g. \
                         `ioscale run --op write --keep --threads {} --layout {} ... {}`",
                        spec.target.display(),
                        spec.threads,
                        spec.layout,
                        spec.target.display()
                    )));
                }
                fs::create_dir(&root)
                    .map_err(|e| SetupError::Io(format!("cannot create {}", root.display()), e))?;
                let ds = DataSet {
                    root: root.clone(),
                    created_root: true,
                    files,
                    dirs,
                    marker: want,
                    had_data: false,
                };
                if let Err(e) = write_marker(&root, &ds.marker) {
                    let _ = fs::remove_dir(&root);
                    return Err(SetupError::Io(
                        format!("cannot write the marker in {}", root.display()),
                        e,
                    ));
                }
                for d in &ds.dirs {
                    if let Err(e) = fs::create_dir(d) {
                        ds.remove();
                        return Err(SetupError::Io(format!("cannot create {}", d.display()), e));
                    }
                }
                Ok(ds)
            }
            Err(e) => Err(SetupError::Io(
                format!("cannot inspect {}", root.display()),
                e,
            )),
        }
    }

    /// Records that the files now hold a complete data set (after a write
    /// phase finished without error), so a later read run may use them.
    pub fn mark_complete(&mut self, run_id: &str, file_size: u64, seed: u64) {
        self.marker.complete = true;
        self.marker.run_id = run_id.into();
        self.marker.file_size = file_size;
        self.marker.seed = seed;
        self.had_data = true;
        let _ = write_marker(&self.root, &self.marker);
    }

    /// Removes the data files, per-worker directories, marker and working
    /// directory — only by their exact names, directories only when empty.
    /// Returns what could not be removed.
    pub fn remove(&self) -> Vec<String> {
        remove_set(&self.root, &self.files, &self.dirs)
    }
}

fn remove_set(root: &Path, files: &[PathBuf], dirs: &[PathBuf]) -> Vec<String> {
    let mut left = Vec::new();
    for f in files {
        match fs::remove_file(f) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => left.push(format!("{}: {e}", f.display())),
        }
    }
    for d in dirs {
        match fs::remove_dir(d) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => left.push(format!("{}: {e}", d.display())),
        }
    }
    let _ = fs::remove_file(root.join(format!("{MARKER_NAME}.tmp")));
    // The marker goes last but one: if anything foreign is left, the
    // directory survives, and without a marker ioscale will not reuse it.
    match fs::remove_dir(root) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(_) => {
            let _ = fs::remove_file(root.join(MARKER_NAME));
            match fs::remove_dir(root) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => left.push(format!(
                    "{}: {e} (it holds files ioscale did not create; they were left alone)",
                    root.display()
                )),
            }
        }
    }
    left
}

/// Removes what a kept run left in `target`, recognised by the marker.
pub fn clean(target: &Path) -> Result<Vec<String>, SetupError> {
    let root = target.join(ROOT_NAME);
    if !root.exists() {
        return Err(SetupError::Usage(format!(
            "nothing to clean: {} does not exist",
            root.display()
        )));
    }
    let Some(m) = read_marker(&root) else {
        return Err(SetupError::Usage(format!(
            "{} has no ioscale marker; refusing to remove anything in it",
            root.display()
        )));
    };
    let (files, dirs) = names(&root, m.layout, m.threads);
    Ok(remove_set(&root, &files, &dirs))
}
