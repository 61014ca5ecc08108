//! The validated description of a small-file / metadata workload.
//!
//! `ioscale meta` runs smallfile- and mdtest-style experiments: many small
//! files, one metadata operation per file per phase. As with data
//! workloads, front-ends only collect raw values into [`RawMeta`], and
//! [`RawMeta::build`] is the one place that checks them.
//!
//! The file layout lives here too, as pure functions of (thread, index):
//! the engine and the cleanup code recompute every name instead of keeping a
//! list, so memory stays flat at millions of files, and cleanup can only
//! ever touch names this scheme produces.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::check;
use crate::units::format_size;
use crate::workload::SpecError;

/// One metadata operation, run as a phase over every file of every thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MetaOp {
    /// Create (O_EXCL), write `--file-size` bytes, close.
    Create,
    /// Open, read to the end, close.
    Read,
    /// Open with O_APPEND, write `--file-size` bytes, close.
    Append,
    /// Open, write `--file-size` bytes from offset 0 (no truncation), close.
    Overwrite,
    /// Open with O_TRUNC, write `--file-size` bytes, close.
    TruncateOverwrite,
    /// lstat the file.
    Stat,
    /// lstat each `mkdir` directory (mdtest's "Directory stat").
    StatDir,
    /// Change the permission bits.
    Chmod,
    /// Rename the file within its directory (a second rename renames back).
    Rename,
    /// Rotate the names of the `mkdir` directories, as mdtest's `Directory
    /// rename` phase does, one rename per directory within each directory
    /// of the tree: the first to a temporary name, each next one to the
    /// name its predecessor had, the temporary one to the name the
    /// second-to-last had; every name exists again afterwards.
    RenameDir,
    /// Set a user extended attribute.
    Setxattr,
    /// Read the extended attribute back.
    Getxattr,
    /// Create a symbolic link to each file.
    Symlink,
    /// List each directory and lstat every entry, like `ls -l`.
    Readdir,
    /// Unlink each file.
    Delete,
    /// Create a directory per index (mdtest -D).
    Mkdir,
    /// Remove those directories.
    Rmdir,
    /// Remove everything of ioscale's names that exists: files, links,
    /// directories.
    Cleanup,
}

impl MetaOp {
    /// All operations, in the order `--help` lists them.
    pub const ALL: [MetaOp; 18] = [
        MetaOp::Create,
        MetaOp::Read,
        MetaOp::Append,
        MetaOp::Overwrite,
        MetaOp::TruncateOverwrite,
        MetaOp::Stat,
        MetaOp::StatDir,
        MetaOp::Chmod,
        MetaOp::Rename,
        MetaOp::RenameDir,
        MetaOp::Setxattr,
        MetaOp::Getxattr,
        MetaOp::Symlink,
        MetaOp::Readdir,
        MetaOp::Delete,
        MetaOp::Mkdir,
        MetaOp::Rmdir,
        MetaOp::Cleanup,
    ];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            MetaOp::Create => "create",
            MetaOp::Read => "read",
            MetaOp::Append => "append",
            MetaOp::Overwrite => "overwrite",
            MetaOp::TruncateOverwrite => "truncate-overwrite",
            MetaOp::Stat => "stat",
            MetaOp::StatDir => "stat-dir",
            MetaOp::Chmod => "chmod",
            MetaOp::Rename => "rename",
            MetaOp::RenameDir => "rename-dir",
            MetaOp::Setxattr => "setxattr",
            MetaOp::Getxattr => "getxattr",
            MetaOp::Symlink => "symlink",
            MetaOp::Readdir => "readdir",
            MetaOp::Delete => "delete",
            MetaOp::Mkdir => "mkdir",
            MetaOp::Rmdir => "rmdir",
            MetaOp::Cleanup => "cleanup",
        }
    }

    /// Parses a name as typed on the command line.
    pub fn parse(s: &str) -> Option<MetaOp> {
        let s = s.trim();
        MetaOp::ALL.into_iter().find(|o| o.name() == s).or(match s {
            "truncate_overwrite" | "truncate" => Some(MetaOp::TruncateOverwrite),
            "ls-l" | "ls" => Some(MetaOp::Readdir),
            "unlink" => Some(MetaOp::Delete),
            _ => None,
        })
    }

    /// Whether the phase writes file data (and so honours `--fsync`).
    pub fn writes_data(self) -> bool {
        matches!(
            self,
            MetaOp::Create | MetaOp::Append | MetaOp::Overwrite | MetaOp::TruncateOverwrite
        )
    }

    /// Whether the phase opens files for data (and so honours `--direct`).
    pub fn moves_data(self) -> bool {
        self.writes_data() || self == MetaOp::Read
    }

    /// Whether `--stride` applies: the phases that visit existing entries
    /// and that mdtest's -N redirects to another task's items (stat, read,
    /// removal of files and directories, and its directory rename, which
    /// renames the directories the stat phase stats).
    pub fn uses_stride(self) -> bool {
        matches!(
            self,
            MetaOp::Stat
                | MetaOp::StatDir
                | MetaOp::RenameDir
                | MetaOp::Read
                | MetaOp::Delete
                | MetaOp::Rmdir
        )
    }

    /// Whether the phase works on existing regular files.
    pub fn needs_files(self) -> bool {
        matches!(
            self,
            MetaOp::Read
                | MetaOp::Append
                | MetaOp::Overwrite
                | MetaOp::TruncateOverwrite
                | MetaOp::Stat
                | MetaOp::Chmod
                | MetaOp::Rename
                | MetaOp::Setxattr
                | MetaOp::Getxattr
                | MetaOp::Delete
        )
    }
}

impl fmt::Display for MetaOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Bytes per file: fixed, or drawn per file from a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum FileSize {
    /// Every file has this size.
    Fixed {
        /// Bytes.
        bytes: u64,
    },
    /// Each file's size is drawn, seeded, from `min..=max`.
    Range {
        /// Smallest size.
        min: u64,
        /// Largest size.
        max: u64,
    },
}

impl FileSize {
    /// Parses `4k`, `0`, or a range `1k..64k`.
    pub fn parse(text: &str) -> Result<FileSize, crate::units::UnitError> {
        match text.split_once("..") {
            Some((a, b)) => Ok(FileSize::Range {
                min: crate::units::parse_size(a)?,
                max: crate::units::parse_size(b)?,
            }),
            None => Ok(FileSize::Fixed {
                bytes: crate::units::parse_size(text)?,
            }),
        }
    }

    /// The largest size a file can have.
    pub fn max(self) -> u64 {
        match self {
            FileSize::Fixed { bytes } => bytes,
            FileSize::Range { max, .. } => max,
        }
    }

    /// As typed: `4 KiB` or `1 KiB..64 KiB`.
    pub fn label(self) -> String {
        match self {
            FileSize::Fixed { bytes } => format_size(bytes),
            FileSize::Range { min, max } => format!("{}..{}", format_size(min), format_size(max)),
        }
    }
}

/// The raw, unchecked values a front-end collected.
#[derive(Debug, Clone, Default)]
pub struct RawMeta {
    /// Directory the tree goes into.
    pub target: Option<PathBuf>,
    /// Phases in order.
    pub ops: Vec<MetaOp>,
    /// Threads.
    pub threads: Option<u64>,
    /// Files per thread.
    pub files: Option<u64>,
    /// Bytes per file.
    pub file_size: Option<FileSize>,
    /// Bytes per write/read call.
    pub record_size: Option<u64>,
    /// Every thread in one shared directory.
    pub same_dir: bool,
    /// Files per directory before a new directory is started.
    pub files_per_dir: Option<u64>,
    /// Subdirectories per directory in the hashed tree.
    pub dirs_per_dir: Option<u64>,
    /// fsync each file before close.
    pub fsync: bool,
    /// O_DIRECT for data.
    pub direct: bool,
    /// Per-phase deadline.
    pub time_limit: Option<Duration>,
    /// Repetitions of the whole sequence.
    pub reps: Option<u64>,
    /// Seed for random file sizes.
    pub seed: Option<u64>,
    /// Text at the start of every file name.
    pub prefix: Option<String>,
    /// Leave the tree behind.
    pub keep: bool,
    /// Remove an earlier run's kept tree first.
    pub clean_existing: bool,
    /// syncfs(2) the target at the end of every timed phase (mdtest -Y).
    pub sync_phase: bool,
    /// Write the verify pattern and check every byte read.
    pub verify: bool,
    /// Stat, read and remove the items of thread (t + stride) mod threads.
    pub stride: Option<u64>,
    /// Entries only in the directories at this depth of the tree (mdtest -L).
    pub leaf_depth: Option<u64>,
    /// Stop every thread once the first has processed all its files.
    pub stop_at_first: bool,
    /// Metadata engine, by its name in the engine registry (`sync` when
    /// not given).
    pub engine: Option<String>,
    /// Operations in flight per thread (1 when not given).
    pub iodepth: Option<u64>,
    /// Make mdtest's system calls where they differ from ioscale's own.
    pub mdtest_calls: bool,
    /// With a time limit: after it, every thread goes on until it has
    /// processed as many files as the busiest thread did by then
    /// (mdtest's stonewall wear-out).
    pub wearout: bool,
    /// Files of each thread (by owner) that an earlier create left;
    /// empty: `files` each. See [`MetaSpec::item_counts`].
    pub item_counts: Vec<u64>,
    /// How the tree's entries are named (ioscale's own unless given).
    pub naming: Option<MetaNaming>,
    /// Read phases read this many bytes of each file (mdtest's `-e`).
    pub read_bytes: Option<u64>,
}

/// How a metadata tree's directories and entries are named.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "scheme", rename_all = "kebab-case")]
pub enum MetaNaming {
    /// `TARGET/ioscale-meta.d/thr.007/…/{prefix}f7.12`.
    #[default]
    Native,
    /// mdtest's names for one iteration (its `-d TARGET`, iteration 0):
    /// `TARGET/test-dir.0-0/mdtest_tree.T.0/file.mdtest.T.I` with a
    /// directory per thread (mdtest `-u`), or
    /// `TARGET/test-dir.0-0/mdtest_tree.0/file.mdtest.T.I` with one
    /// shared directory (`same_dir`). Files only, all in one directory
    /// each (mdtest `-F -L` without `-b`/`-I`); a renamed file is
    /// `renamed.mdtest.T.I`, a link `link.mdtest.T.I`, a directory
    /// `dir.mdtest.T.I`.
    Mdtest,
}

impl MetaNaming {
    /// Whether this is ioscale's own scheme (left out of the JSON then).
    pub fn is_native(&self) -> bool {
        matches!(self, MetaNaming::Native)
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn sync_engine() -> String {
    "sync".into()
}

fn is_sync(e: &str) -> bool {
    e == "sync"
}

fn one() -> u32 {
    1
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

/// The deepest `--iodepth` a metadata spec accepts.
const MAX_META_IODEPTH: u64 = 4_096;

/// A complete, consistent metadata workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetaSpec {
    /// Directory the tree goes into.
    pub target: PathBuf,
    /// Phases in order.
    pub ops: Vec<MetaOp>,
    /// Threads.
    pub threads: u32,
    /// Files per thread.
    pub files: u64,
    /// Bytes per file.
    pub file_size: FileSize,
    /// Bytes per write/read call.
    pub record_size: u64,
    /// Every thread in one shared directory.
    pub same_dir: bool,
    /// Files of one thread per directory; `u64::MAX` = all in one.
    pub files_per_dir: u64,
    /// Subdirectories per directory in the hashed tree.
    pub dirs_per_dir: u64,
    /// fsync each file before close.
    pub fsync: bool,
    /// O_DIRECT for data.
    pub direct: bool,
    /// Stop each phase at this deadline.
    #[serde(with = "crate::units::opt_secs")]
    pub time_limit: Option<Duration>,
    /// Repetitions of the whole sequence.
    pub reps: u32,
    /// Seed for random file sizes.
    pub seed: u64,
    /// Text at the start of every file name.
    pub prefix: String,
    /// Leave the tree behind.
    pub keep: bool,
    /// Remove an earlier run's kept tree first.
    pub clean_existing: bool,
    /// syncfs(2) the target at the end of every timed phase, inside the
    /// phase's time (mdtest -Y).
    #[serde(default, skip_serializing_if = "is_false")]
    pub sync_phase: bool,
    /// Data phases write the verify pattern; `read` checks every byte.
    #[serde(default, skip_serializing_if = "is_false")]
    pub verify: bool,
    /// In stat, read and remove phases thread t works on the entries of
    /// thread (t + stride) mod threads (mdtest -N); 0 = its own.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stride: u64,
    /// Entries go only into the directories at this depth of the
    /// `--dirs-per-dir` tree, its leaves (mdtest -L with -z); `None` = the
    /// tree is filled from its root down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_depth: Option<u32>,
    /// Stop every thread of a phase as soon as the first one has processed
    /// all its files (smallfile --stonewall Y --finish N).
    #[serde(default, skip_serializing_if = "is_false")]
    pub stop_at_first: bool,
    /// The metadata engine of the timed phases, by its registry name
    /// (layout and teardown always run synchronously); records written
    /// before engines existed load as `sync`.
    #[serde(default = "sync_engine", skip_serializing_if = "is_sync")]
    pub engine: String,
    /// Operations in flight per thread (1 for the sync engine).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub iodepth: u32,
    /// Make mdtest's system calls where they differ from ioscale's own
    /// (the mdtest front-end): `stat` and `stat-dir` stat(2) the entry's
    /// full path, resolved from the start of the path as the tool does,
    /// in place of a lookup of one name in a held directory; `read`
    /// reads the bytes the file was written with and stops, without the
    /// read(2) that finds the end of the file (none at all for an empty
    /// file). Synchronous engine only.
    #[serde(default, skip_serializing_if = "is_false")]
    pub mdtest_calls: bool,
    /// With `time_limit`: at the limit every thread posts the files it
    /// processed, then goes on until it has processed as many as the
    /// busiest thread of any rank (capped at `files`), inside the phase's
    /// time, as mdtest's stonewall wear-out does.
    #[serde(default, skip_serializing_if = "is_false")]
    pub wearout: bool,
    /// The files of each thread (indexed by the thread that made them,
    /// over all ranks) that exist: what an earlier create left when it
    /// stopped at its time limit. A phase processes only those (indices
    /// below the count). Empty: `files` each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub item_counts: Vec<u64>,
    /// How the tree's entries are named; absent from the JSON when native.
    #[serde(default, skip_serializing_if = "MetaNaming::is_native")]
    pub naming: MetaNaming,
    /// A read phase reads this many bytes of each file (fewer if it ends
    /// first), as mdtest's `-e N` does, and no more (no read to find the
    /// end); `None`: each file to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes: Option<u64>,
}

/// What kind of entry a name is for; each kind has its own letter so a
/// rename or a link never collides with a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file (`f`).
    File,
    /// A regular file after `rename` (`r`).
    Renamed,
    /// A symbolic link (`l`).
    Link,
    /// A directory made by `mkdir` (`d`).
    Dir,
}

/// Why a phase cannot run on a tree in a given state: what a kept tree
/// or an order of `--ops` would have it find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    /// A verifying read over data written without `--verify` and this
    /// `--seed`.
    Unverifiable,
    /// Entries of this kind already exist where the phase would make them.
    Exists(EntryKind),
}

impl Conflict {
    /// The flags the message names.
    pub fn flags(&self) -> Vec<&'static str> {
        match self {
            Conflict::Unverifiable => vec!["--verify", "--seed"],
            Conflict::Exists(_) => Vec::new(),
        }
    }
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Conflict::Unverifiable => {
                "the files were not written with --verify and this --seed, so their data cannot \
                 be checked (create them with --verify, or read without it)"
            }
            Conflict::Exists(EntryKind::Link) => "the links already exist",
            Conflict::Exists(EntryKind::Dir) => "the directories already exist",
            Conflict::Exists(_) => "the files already exist",
        })
    }
}

/// Name of ioscale's own working directory inside the target.
pub const ROOT_NAME: &str = "ioscale-meta.d";
/// Name of mdtest's test directory of iteration 0 ([`MetaNaming::Mdtest`]).
pub const MDTEST_ROOT_NAME: &str = "test-dir.0-0";

impl EntryKind {
    /// mdtest's name of an entry of this kind, up to the thread number.
    fn mdtest_stem(self) -> &'static [u8] {
        match self {
            EntryKind::File => b"file.mdtest.",
            EntryKind::Renamed => b"renamed.mdtest.",
            EntryKind::Link => b"link.mdtest.",
            EntryKind::Dir => b"dir.mdtest.",
        }
    }

    fn letter(self) -> u8 {
        match self {
            EntryKind::File => b'f',
            EntryKind::Renamed => b'r',
            EntryKind::Link => b'l',
            EntryKind::Dir => b'd',
        }
    }
}

/// Longest file name Linux file systems accept.
pub const NAME_MAX: usize = 255;

/// Number of decimal digits of `v`.
pub fn digits(v: u64) -> usize {
    let mut n = 1;
    let mut x = v / 10;
    while x > 0 {
        n += 1;
        x /= 10;
    }
    n
}

/// Appends the decimal digits of `v` without formatting machinery.
#[inline]
pub fn push_u64(out: &mut Vec<u8>, v: u64) {
    // Two digits per step from a table: names are built for every file
    // operation, and this halves the divisions of the plain loop.
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    let mut x = v;
    while x >= 100 {
        let d = (x % 100) as usize * 2;
        x /= 100;
        i -= 2;
        tmp[i..i + 2].copy_from_slice(&PAIRS[d..d + 2]);
    }
    if x >= 10 {
        let d = x as usize * 2;
        i -= 2;
        tmp[i..i + 2].copy_from_slice(&PAIRS[d..d + 2]);
    } else {
        i -= 1;
        tmp[i] = b'0' + x as u8;
    }
    out.extend_from_slice(&tmp[i..]);
}

/// splitmix64 (Steele, Lea & Flood 2014): a full-period 64-bit mixer, used
/// to draw a file's size from (seed, thread, index) without state.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl MetaSpec {
    /// Name of a thread's directory under the root (`thr.007`), or `None`
    /// when every thread shares the root (`--same-dir`).
    pub fn thread_dir(&self, thread: u32) -> Option<String> {
        match self.naming {
            MetaNaming::Native => (!self.same_dir).then(|| format!("thr.{thread:03}")),
            MetaNaming::Mdtest if self.same_dir => Some("mdtest_tree.0".into()),
            MetaNaming::Mdtest => Some(format!("mdtest_tree.{thread}.0")),
        }
    }

    /// The name of the working directory inside the target:
    /// `ioscale-meta.d`, or mdtest's `test-dir.0-0`.
    pub fn root_name(&self) -> &'static str {
        match self.naming {
            MetaNaming::Native => ROOT_NAME,
            MetaNaming::Mdtest => MDTEST_ROOT_NAME,
        }
    }

    /// The files of each thread a phase processes: `item_counts[thread]`
    /// (at most `files`) when given, else `files`.
    pub fn files_of(&self, thread: u32) -> u64 {
        match self.item_counts.get(thread as usize) {
            Some(&c) => c.min(self.files),
            None if self.item_counts.is_empty() => self.files,
            None => 0,
        }
    }

    /// The first directory node that holds entries: 0 (the thread's
    /// directory) normally; with `leaf_depth` z, the first node at depth z
    /// — the nodes above it, (Bᶻ−1)/(B−1) of them, hold only directories.
    #[inline]
    pub fn first_node(&self) -> u64 {
        match self.leaf_depth {
            None | Some(0) => 0,
            Some(z) => nodes_above(z as u64, self.dirs_per_dir).unwrap_or(u64::MAX),
        }
    }

    /// Directory node (0 = the thread's base directory) holding index `i`.
    #[inline]
    pub fn node_of(&self, i: u64) -> u64 {
        self.first_node() + i / self.files_per_dir
    }

    /// Index of the first entry in node `node` (at least the first node).
    #[inline]
    pub fn first_index_of(&self, node: u64) -> u64 {
        (node.saturating_sub(self.first_node())).saturating_mul(self.files_per_dir)
    }

    /// Directory nodes (numbered from 0, including the ones above the
    /// leaves) needed for the first `n` indices of a thread.
    pub fn nodes_for(&self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.first_node() + (n - 1) / self.files_per_dir + 1
        }
    }

    /// The thread whose entries thread `w` works on in a phase of `op`:
    /// (w + stride) mod threads for the phases `--stride` applies to.
    #[inline]
    pub fn owner_of(&self, op: MetaOp, w: u32) -> u32 {
        if self.stride == 0 || !op.uses_stride() {
            w
        } else {
            ((w as u64 + self.stride) % self.threads as u64) as u32
        }
    }

    /// The identity of file (thread, index) in the verify pattern.
    #[inline]
    pub fn file_id(&self, thread: u32, i: u64) -> u64 {
        ((thread as u64) << 40) | i
    }

    /// The tree state after `op` ran to completion, with what the data
    /// holds: a create or truncate-overwrite with `--verify` leaves the
    /// pattern of this seed, a write without it leaves data that cannot be
    /// checked. A `read` with `--verify` over other data is refused
    /// (`Err` says why).
    pub fn state_after(&self, st: TreeState, op: MetaOp) -> Result<TreeState, Conflict> {
        if op == MetaOp::Read && self.verify && st.files && st.pattern != Some(self.seed) {
            return Err(Conflict::Unverifiable);
        }
        let mut after = st.after(op)?;
        if op.writes_data() {
            after.pattern = match op {
                _ if !self.verify => None,
                MetaOp::Create | MetaOp::TruncateOverwrite => Some(self.seed),
                _ if st.pattern == Some(self.seed) => Some(self.seed),
                _ => None,
            };
        }
        Ok(after)
    }

    /// Appends the path of directory node `node`, relative to the thread's
    /// base directory, to `out` (nothing for node 0).
    ///
    /// The nodes form a complete `dirs_per_dir`-ary tree numbered
    /// breadth-first (node n's children are n·B+1 … n·B+B), as mdtest's
    /// branching tree; a parent's number is always below its children's, so
    /// walking the indices in order creates parents first. Each node holds
    /// `files_per_dir` of a thread's files, as smallfile's hashed dirs do.
    pub fn push_node_path(&self, out: &mut Vec<u8>, node: u64) {
        let mut comps = [0u64; 64];
        let mut depth = 0;
        let mut n = node;
        let b = self.dirs_per_dir;
        while n > 0 {
            comps[depth] = (n - 1) % b;
            n = (n - 1) / b;
            depth += 1;
        }
        for k in (0..depth).rev() {
            if !out.is_empty() && out.last() != Some(&b'/') {
                out.push(b'/');
            }
            out.extend_from_slice(b"h");
            push_u64(out, comps[k]);
        }
    }

    /// Appends the entry name of (thread, index) of `kind`:
    /// `{prefix}{letter}{thread}.{index}`.
    #[inline]
    pub fn push_name(&self, out: &mut Vec<u8>, kind: EntryKind, thread: u32, i: u64) {
        out.extend_from_slice(self.prefix.as_bytes());
        match self.naming {
            MetaNaming::Native => out.push(kind.letter()),
            MetaNaming::Mdtest => out.extend_from_slice(kind.mdtest_stem()),
        }
        push_u64(out, thread as u64);
        out.push(b'.');
        push_u64(out, i);
    }

    /// Longest entry name the spec produces.
    pub fn max_name_len(&self) -> usize {
        let stem = match self.naming {
            MetaNaming::Native => 1,
            MetaNaming::Mdtest => EntryKind::Renamed.mdtest_stem().len(),
        };
        self.prefix.len()
            + stem
            + digits(self.threads.saturating_sub(1) as u64)
            + 1
            + digits(self.files.saturating_sub(1))
    }

    /// Size of file (thread, index).
    #[inline]
    pub fn size_of(&self, thread: u32, i: u64) -> u64 {
        match self.file_size {
            FileSize::Fixed { bytes } => bytes,
            FileSize::Range { min, max } => {
                let r = mix64(self.seed ^ ((thread as u64) << 40) ^ i);
                min + r % (max - min + 1)
            }
        }
    }

    /// Files all threads are asked to process in one phase.
    pub fn total_files(&self) -> u64 {
        self.files * self.threads as u64
    }

    /// One line that says what the run does.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "meta {} x {} thread(s), {} files each of {}, record {}, {}",
            crate::names(&self.ops, MetaOp::name),
            self.threads,
            self.files,
            self.file_size.label(),
            format_size(self.record_size),
            if self.same_dir {
                "one shared directory"
            } else {
                "a directory per thread"
            },
        );
        if self.files_per_dir != u64::MAX {
            s.push_str(&format!(
                ", {} files per dir, {} dirs per dir",
                self.files_per_dir, self.dirs_per_dir
            ));
        }
        if let Some(z) = self.leaf_depth {
            s.push_str(&format!(", entries at depth {z} only"));
        }
        if self.fsync {
            s.push_str(", fsync");
        }
        if self.sync_phase {
            s.push_str(", syncfs after each phase");
        }
        if self.verify {
            s.push_str(", verified");
        }
        if self.stride > 0 {
            s.push_str(&format!(", stride {}", self.stride));
        }
        if self.stop_at_first {
            s.push_str(", stop at the first finished thread");
        }
        s.push_str(if self.direct {
            ", O_DIRECT"
        } else {
            ", buffered"
        });
        s
    }
}

/// Directory nodes above depth `z` of a complete `b`-ary tree, i.e. the
/// number of the first node at depth z in breadth-first order; `None` when
/// it does not fit in 64 bits.
pub fn nodes_above(z: u64, b: u64) -> Option<u64> {
    let mut total: u64 = 0;
    let mut level: u64 = 1;
    for _ in 0..z {
        total = total.checked_add(level)?;
        level = level.checked_mul(b.max(1))?;
    }
    Some(total)
}

const MAX_FILES: u64 = 1 << 40;

/// What a sequence of phases leaves behind, to check it up front.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeState {
    /// Regular files exist (under their `f` names, or `r` after a rename).
    pub files: bool,
    /// The files carry their renamed (`r`) names.
    pub renamed: bool,
    /// Symbolic links exist.
    pub links: bool,
    /// `mkdir` directories exist.
    pub dirs: bool,
    /// The files hold the verify pattern of this seed (`--verify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<u64>,
}

impl TreeState {
    /// Whether nothing of the run's entries exists.
    pub fn is_empty(&self) -> bool {
        !self.files && !self.links && !self.dirs
    }

    /// The state after `op` ran to completion; `Err` names what the op
    /// would find already there.
    pub fn after(mut self, op: MetaOp) -> Result<TreeState, Conflict> {
        match op {
            MetaOp::Create => {
                if self.files {
                    return Err(Conflict::Exists(EntryKind::File));
                }
                self.files = true;
                self.renamed = false;
                self.pattern = None;
            }
            MetaOp::Rename => self.renamed = !self.renamed,
            MetaOp::Delete => {
                self.files = false;
                self.renamed = false;
                self.pattern = None;
            }
            MetaOp::Symlink => {
                if self.links {
                    return Err(Conflict::Exists(EntryKind::Link));
                }
                self.links = true;
            }
            MetaOp::Mkdir => {
                if self.dirs {
                    return Err(Conflict::Exists(EntryKind::Dir));
                }
                self.dirs = true;
            }
            MetaOp::Rmdir => self.dirs = false,
            MetaOp::Cleanup => self = TreeState::default(),
            _ => {}
        }
        Ok(self)
    }

    /// The untimed step that must run first so `op` finds what it works
    /// on: a create before a phase that needs files, a mkdir before rmdir
    /// or stat-dir.
    pub fn prerequisite(&self, op: MetaOp) -> Option<MetaOp> {
        if op.needs_files() && !self.files {
            Some(MetaOp::Create)
        } else if matches!(op, MetaOp::Rmdir | MetaOp::StatDir | MetaOp::RenameDir) && !self.dirs {
            Some(MetaOp::Mkdir)
        } else {
            None
        }
    }
}

impl RawMeta {
    /// Checks every value and the phase sequence.
    pub fn build(&self) -> Result<MetaSpec, SpecError> {
        let target = check::target(
            &self.target,
            "name the directory to test, e.g. `ioscale meta /mnt/fs`",
        )?;
        check::some_ops(&self.ops, "--ops", "e.g. --ops create,stat,read,delete")?;
        let threads = check::threads(self.threads)?;
        let files = check::count("--files", self.files, 1024, MAX_FILES, || {
            "at most 2^40 per thread".into()
        })?;
        let (file_size, record_size) = self.file_sizes()?;
        let (files_per_dir, dirs_per_dir) = self.tree_shape()?;
        let reps = check::reps(self.reps)?;
        check::time_limit(self.time_limit)?;
        let prefix = self.prefix.clone().unwrap_or_default();
        if prefix.contains('/') || prefix.contains('\0') {
            return Err(SpecError::range(
                "--prefix",
                prefix,
                "a file-name prefix may not hold '/' or NUL",
            ));
        }
        let stride = self.stride(threads)?;
        let leaf_depth = self.leaf_depth(files, files_per_dir, dirs_per_dir)?;
        let engine = self.engine.clone().unwrap_or_else(sync_engine);
        let iodepth = check::iodepth(self.iodepth, MAX_META_IODEPTH)?;
        let spec = MetaSpec {
            target,
            ops: self.ops.clone(),
            threads: threads as u32,
            files,
            file_size,
            record_size,
            same_dir: self.same_dir,
            files_per_dir,
            dirs_per_dir,
            fsync: self.fsync,
            direct: self.direct,
            time_limit: self.time_limit,
            reps: reps as u32,
            seed: self.seed.unwrap_or(0x10_5ca1e),
            prefix,
            keep: self.keep,
            clean_existing: self.clean_existing,
            sync_phase: self.sync_phase,
            verify: self.verify,
            stride,
            leaf_depth,
            stop_at_first: self.stop_at_first,
            mdtest_calls: self.mdtest_calls,
            engine,
            iodepth: iodepth as u32,
            wearout: self.wearout,
            item_counts: self.item_counts.clone(),
            naming: self.naming.unwrap_or_default(),
            read_bytes: self.read_bytes,
        };
        if spec.mdtest_calls && spec.engine != "sync" {
            return Err(SpecError::range(
                "--engine",
                spec.engine.clone(),
                "mdtest's system calls are made by the sync engine only",
            ));
        }
        check_wearout(&spec)?;
        check_names(&spec)?;
        check_sequence(&spec)?;
        Ok(spec)
    }

    /// `--file-size` and `--record-size` (smallfile's default record is
    /// the file size, up to 1 MiB), and what O_DIRECT needs of them.
    fn file_sizes(&self) -> Result<(FileSize, u64), SpecError> {
        let file_size = self.file_size.unwrap_or(FileSize::Fixed { bytes: 4096 });
        if let FileSize::Range { min, max } = file_size {
            if min > max {
                return Err(SpecError::range(
                    "--file-size",
                    format!("{}..{}", format_size(min), format_size(max)),
                    "write the range as SMALLEST..LARGEST",
                ));
            }
        }
        if file_size.max() > (1 << 40) {
            return Err(SpecError::range(
                "--file-size",
                format_size(file_size.max()),
                "at most 1 TiB per file; use `ioscale run` for large files",
            ));
        }
        let record_size = match self.record_size {
            Some(0) => {
                return Err(SpecError::Zero {
                    flag: "--record-size",
                })
            }
            Some(r) => r,
            // One call per file up to 1 MiB, as smallfile's default record
            // is the file size.
            None => file_size.max().clamp(4096, 1 << 20),
        };
        if record_size > (1 << 30) {
            return Err(SpecError::range(
                "--record-size",
                format_size(record_size),
                "at most 1 GiB",
            ));
        }
        if self.direct {
            let sizes = match file_size {
                FileSize::Fixed { bytes } => vec![bytes],
                FileSize::Range { min, max } => vec![min, max],
            };
            if !record_size.is_multiple_of(512)
                || sizes.iter().any(|s| !s.is_multiple_of(512))
                || matches!(file_size, FileSize::Range { min, max } if min != max)
            {
                return Err(SpecError::sizes(
                    "--direct needs a fixed --file-size and a --record-size that are multiples of \
                     512 bytes (4k is safe)",
                    &["--direct", "--file-size", "--record-size"],
                ));
            }
        }
        Ok((file_size, record_size))
    }

    /// `--files-per-dir` (unbounded unless given) and `--dirs-per-dir`
    /// (10 unless given), which only shapes the tree the first makes.
    fn tree_shape(&self) -> Result<(u64, u64), SpecError> {
        let files_per_dir = match self.files_per_dir {
            Some(0) => {
                return Err(SpecError::Zero {
                    flag: "--files-per-dir",
                })
            }
            Some(n) => n,
            None => u64::MAX,
        };
        let dirs_per_dir = match self.dirs_per_dir {
            Some(0) => {
                return Err(SpecError::Zero {
                    flag: "--dirs-per-dir",
                })
            }
            Some(n) => n,
            None => 10,
        };
        if self.dirs_per_dir.is_some() && self.files_per_dir.is_none() {
            return Err(SpecError::conflict(
                "--dirs-per-dir only shapes the tree that --files-per-dir makes; give \
                 --files-per-dir too",
                &["--dirs-per-dir", "--files-per-dir"],
            ));
        }
        Ok((files_per_dir, dirs_per_dir))
    }

    /// `--stride`: another thread's entries, 1 to threads − 1.
    fn stride(&self, threads: u64) -> Result<u64, SpecError> {
        let stride = self.stride.unwrap_or(0);
        if stride > 0 && stride >= threads {
            return Err(SpecError::range(
                "--stride",
                stride.to_string(),
                format!(
                    "thread t works on the entries of thread (t + stride) mod {threads}; give a \
                     stride from 1 to {} (with one thread there is no other thread's entries)",
                    threads - 1
                ),
            ));
        }
        Ok(stride)
    }

    /// `--leaf-depth`: entries only in the leaves of the tree, which must
    /// exist (within 64 bits) and hold every thread's files.
    fn leaf_depth(
        &self,
        files: u64,
        files_per_dir: u64,
        dirs_per_dir: u64,
    ) -> Result<Option<u32>, SpecError> {
        let Some(z) = self.leaf_depth else {
            return Ok(None);
        };
        if self.files_per_dir.is_none() {
            return Err(SpecError::conflict(
                "--leaf-depth places entries in the leaves of the tree that \
                 --files-per-dir and --dirs-per-dir make; give --files-per-dir too",
                &["--leaf-depth", "--files-per-dir", "--dirs-per-dir"],
            ));
        }
        let too_deep = || SpecError::Range {
            flag: "--leaf-depth",
            value: z.to_string(),
            hint: "the tree would have more directories than fit in 64 bits; use a \
                   smaller depth or --dirs-per-dir"
                .into(),
            also: vec!["--dirs-per-dir"],
        };
        if z > 64 {
            return Err(too_deep());
        }
        let first = nodes_above(z, dirs_per_dir).ok_or_else(too_deep)?;
        let leaves = if dirs_per_dir <= 1 {
            1
        } else {
            dirs_per_dir.checked_pow(z as u32).ok_or_else(too_deep)?
        };
        first.checked_add(leaves).ok_or_else(too_deep)?;
        let needed = (files - 1) / files_per_dir + 1;
        if needed > leaves {
            return Err(SpecError::Range {
                flag: "--leaf-depth",
                value: z.to_string(),
                hint: format!(
                    "{files} files per thread at {files_per_dir} per directory need {needed} \
                     directories, but depth {z} of a tree with {dirs_per_dir} dirs per dir \
                     has {leaves}; raise --files-per-dir or the depth"
                ),
                also: vec!["--files-per-dir"],
            });
        }
        Ok(Some(z as u32))
    }
}

/// The wear-out needs a time limit to wear out from, and the thread
/// loops of the synchronous engine (the queueing engines keep their own
/// order of completions); mdtest's names keep the files of a thread in
/// one directory.
fn check_wearout(spec: &MetaSpec) -> Result<(), SpecError> {
    if spec.wearout && spec.time_limit.is_none() {
        return Err(SpecError::conflict(
            "the stonewall wear-out needs a time limit (--time) to wear out from",
            &["--time"],
        ));
    }
    if (spec.wearout || spec.read_bytes.is_some()) && (spec.engine != "sync" || spec.iodepth > 1) {
        return Err(SpecError::conflict(
            "the stonewall wear-out and a read of a fixed size run on the sync metadata engine \
             only",
            &["--engine", "--iodepth"],
        ));
    }
    if spec.naming == MetaNaming::Mdtest
        && (spec.files_per_dir != u64::MAX || spec.leaf_depth.is_some())
    {
        return Err(SpecError::conflict(
            "mdtest's names keep each thread's files in one directory: no --files-per-dir              or --leaf-depth with them",
            &["--files-per-dir", "--leaf-depth"],
        ));
    }
    Ok(())
}

/// File names within the file system's limit.
fn check_names(spec: &MetaSpec) -> Result<(), SpecError> {
    if spec.max_name_len() > NAME_MAX {
        return Err(SpecError::range(
            "--prefix",
            format!("of {} bytes", spec.prefix.len()),
            format!(
                "file names would be {} bytes, over the {NAME_MAX}-byte limit of Linux file \
                 systems; use a shorter prefix",
                spec.max_name_len()
            ),
        ));
    }
    Ok(())
}

/// Walks the sequence once per repetition from an empty tree, so an
/// impossible order is refused before anything is created.
fn check_sequence(spec: &MetaSpec) -> Result<(), SpecError> {
    let reps = spec.reps;
    let mut st = TreeState::default();
    for rep in 0..reps.min(2) {
        for &op in &spec.ops {
            if let Some(pre) = st.prerequisite(op) {
                st = spec
                    .state_after(st, pre)
                    .expect("a prerequisite always applies");
            }
            st = spec.state_after(st, op).map_err(|why| {
                let (message, flag) = if rep == 0 {
                    let m = format!(
                        "--ops: `{op}` cannot run here: {why} (put a delete, rmdir or cleanup \
                         before it)"
                    );
                    (m, "--ops")
                } else {
                    let m = format!(
                        "--reps {reps}: the second repetition's `{op}` would fail: {why}; \
                         end the sequence with delete or cleanup"
                    );
                    (m, "--reps")
                };
                let flags: Vec<_> = std::iter::once(flag).chain(why.flags()).collect();
                SpecError::conflict(message, &flags)
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_u64_matches_format() {
        let mut v = Vec::new();
        for x in (0..2000u64).chain([9, 10, 99, 100, 101, 999_999, 1_000_000, u64::MAX]) {
            v.clear();
            push_u64(&mut v, x);
            assert_eq!(v, x.to_string().as_bytes(), "{x}");
        }
    }

    fn raw() -> RawMeta {
        RawMeta {
            target: Some("/tmp".into()),
            ops: vec![MetaOp::Create, MetaOp::Delete],
            ..Default::default()
        }
    }

    #[test]
    fn engine_and_depth_default_and_old_records_load() {
        let s = raw().build().unwrap();
        assert_eq!((s.engine.as_str(), s.iodepth), ("sync", 1));
        let v = serde_json::to_value(&s).unwrap();
        // The defaults are left out, so a record reads as it did before
        // engines existed, and such a record loads as sync, depth 1.
        assert!(v.get("engine").is_none() && v.get("iodepth").is_none());
        let back: MetaSpec = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
        let mut r = raw();
        r.engine = Some("io_uring".into());
        r.iodepth = Some(32);
        let s = r.build().unwrap();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            (&v["engine"], &v["iodepth"]),
            (&"io_uring".into(), &32.into())
        );
        r.iodepth = Some(0);
        assert_eq!(
            r.build().unwrap_err(),
            SpecError::Zero { flag: "--iodepth" }
        );
        r.iodepth = Some(5000);
        assert!(r.build().unwrap_err().to_string().contains("--iodepth"));
    }

    #[test]
    fn op_names_round_trip() {
        for o in MetaOp::ALL {
            assert_eq!(MetaOp::parse(o.name()), Some(o));
        }
        assert_eq!(MetaOp::parse("bogus"), None);
    }

    #[test]
    fn seed_003_shape() {
        let mut r = raw();
        r.ops = vec![MetaOp::Create];
        r.threads = Some(4);
        r.files = Some(256);
        r.file_size = Some(FileSize::Fixed { bytes: 4096 });
        r.same_dir = true;
        r.files_per_dir = Some(1024);
        r.dirs_per_dir = Some(1024);
        let s = r.build().unwrap();
        assert_eq!(s.total_files(), 1024);
        assert_eq!(s.nodes_for(256), 1);
        assert_eq!(s.record_size, 4096);
    }

    #[test]
    fn tree_paths_are_breadth_first() {
        let mut r = raw();
        r.files_per_dir = Some(10);
        r.dirs_per_dir = Some(3);
        let s = r.build().unwrap();
        let p = |n| {
            let mut v = Vec::new();
            s.push_node_path(&mut v, n);
            String::from_utf8(v).unwrap()
        };
        assert_eq!(p(0), "");
        assert_eq!(p(1), "h0");
        assert_eq!(p(3), "h2");
        assert_eq!(p(4), "h0/h0");
        assert_eq!(p(6), "h0/h2");
        assert_eq!(p(7), "h1/h0");
        assert_eq!(s.node_of(9), 0);
        assert_eq!(s.node_of(10), 1);
        assert_eq!(s.nodes_for(10), 1);
        assert_eq!(s.nodes_for(11), 2);
    }

    #[test]
    fn names_and_sizes() {
        let mut r = raw();
        r.prefix = Some("p_".into());
        r.file_size = Some(FileSize::parse("1k..2k").unwrap());
        let s = r.build().unwrap();
        let mut v = Vec::new();
        s.push_name(&mut v, EntryKind::File, 3, 1017);
        assert_eq!(v, b"p_f3.1017");
        for i in 0..1000 {
            let z = s.size_of(1, i);
            assert!((1024..=2048).contains(&z));
        }
        assert_eq!(s.size_of(1, 5), s.size_of(1, 5));
        let mut v = Vec::new();
        push_u64(&mut v, 0);
        push_u64(&mut v, u64::MAX);
        assert_eq!(v, b"018446744073709551615");
        assert_eq!(digits(0), 1);
        assert_eq!(digits(1023), 4);
    }

    #[test]
    fn bad_input_names_the_flag() {
        let mut r = raw();
        r.prefix = Some("x".repeat(300));
        assert!(r.build().unwrap_err().to_string().contains("--prefix"));
        let mut r = raw();
        r.files = Some(0);
        assert_eq!(r.build().unwrap_err(), SpecError::Zero { flag: "--files" });
        let mut r = raw();
        r.file_size = Some(FileSize::Range { min: 9, max: 1 });
        assert!(r.build().unwrap_err().to_string().contains("--file-size"));
        let mut r = raw();
        r.ops = vec![MetaOp::Create, MetaOp::Create];
        assert!(r.build().unwrap_err().to_string().contains("--ops"));
        let mut r = raw();
        r.ops = vec![MetaOp::Create];
        r.reps = Some(2);
        assert!(r.build().unwrap_err().to_string().contains("--reps"));
        let mut r = raw();
        r.direct = true;
        r.file_size = Some(FileSize::Fixed { bytes: 1000 });
        assert!(r.build().unwrap_err().to_string().contains("--direct"));
        let mut r = raw();
        r.dirs_per_dir = Some(4);
        assert!(r
            .build()
            .unwrap_err()
            .to_string()
            .contains("--files-per-dir"));
    }

    #[test]
    fn zero_size_files_are_allowed() {
        let mut r = raw();
        r.file_size = Some(FileSize::Fixed { bytes: 0 });
        let s = r.build().unwrap();
        assert_eq!(s.size_of(0, 0), 0);
    }
}
