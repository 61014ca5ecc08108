//! The file names each phase uses, as io500's IOR, mdtest and pfind
//! calls name them, and the work of one task in each phase.
//!
//! Names (D = the data directory, W = tasks, w = a task):
//! - ior-easy: `D/ior-easy/ior_file_easy.%08d` (one file per task; with
//!   `uniqueDir`, `D/ior-easy/w/ior_file_easy.%08d`; without `filePerProc`,
//!   the shared file `D/ior-easy/ior_file_easy`).
//! - ior-hard: `D/ior-hard/file`, task w's transfer i at (i × W + w) × 47,008.
//! - ior-rnd4K / ior-rnd1MB: `D/ior-rnd4K/file`, `D/ior-rnd1MB/file`.
//! - mdtest-easy: `D/mdtest-easy/test-dir.0-0/mdtest_tree.w.0/file.mdtest.w.i`.
//! - mdtest-hard: `D/mdtest-hard/test-dir.0-0/mdtest_tree.0/file.mdtest.w.i`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, Mode, OFlags};
use safefs::{Access, DirHandle, FileId};

use super::exec::{Acc, Work};

/// ior-hard's fixed transfer and block size.
pub const HARD_XFER: u64 = 47_008;
/// mdtest-hard's fixed file size (written with -w, read with -e).
pub const MD_HARD_BYTES: u64 = 3_901;
/// The data-pattern seed of every phase.
pub const SEED: u64 = 0x10_500;

/// Where the phases' files live.
#[derive(Debug, Clone)]
pub struct Names {
    /// The data directory.
    pub d: PathBuf,
    /// Tasks in all.
    pub workers: u32,
    /// ior-easy's filePerProc.
    pub fpp: bool,
    /// ior-easy's uniqueDir.
    pub unique: bool,
    /// The directories this run made, with their identities.
    pub dirs: Arc<Dirs>,
}

/// The directories a run made, each with the (device, inode) it had when
/// made. Every file of a phase is opened, created and removed relative to
/// one of them, opened again and checked: a directory swapped for a link
/// or for another directory during the run is refused, never followed.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Dirs {
    made: BTreeMap<PathBuf, FileId>,
    /// Compare devices too (rank 0, which made them; another node may see
    /// the same network file system under another device number).
    same_node: bool,
}

impl Dirs {
    /// Records a directory just made.
    pub fn insert(&mut self, path: PathBuf, id: FileId) {
        self.made.insert(path, id);
        self.same_node = true;
    }

    /// The identity `path` had when made, if this run made it.
    pub fn id(&self, path: &Path) -> Option<&FileId> {
        self.made.get(path)
    }

    /// The same record as another rank uses it (inodes compared only).
    pub fn on_other_rank(mut self) -> Dirs {
        self.same_node = false;
        self
    }

    /// Opens the directory `path` this run made, refusing anything else.
    pub fn open(&self, path: &Path) -> Result<DirHandle, String> {
        let want = self
            .made
            .get(path)
            .ok_or_else(|| format!("{}: not a directory this run made; refused", path.display()))?;
        let h = DirHandle::open(path).map_err(|e| e.to_string())?;
        let got = h.id();
        if !bench::dataset::peer::same_dir(*want, got, self.same_node) {
            return Err(format!(
                "{} is no longer the directory this run made (device:inode {}:{} when made, {}:{} now): \
                 refused, nothing followed",
                path.display(),
                want.dev,
                want.ino,
                got.dev,
                got.ino
            ));
        }
        Ok(h)
    }

    /// Opens the directory of `file` (checked as [`Dirs::open`]) and gives
    /// the file's name in it.
    pub fn open_parent<'p>(
        &self,
        file: &'p Path,
    ) -> Result<(DirHandle, &'p std::ffi::OsStr), String> {
        let (Some(dir), Some(name)) = (file.parent(), file.file_name()) else {
            return Err(format!("{}: no directory and name", file.display()));
        };
        Ok((self.open(dir)?, name))
    }
}

impl Names {
    /// `D/ior-easy`.
    pub fn easy_dir(&self) -> PathBuf {
        self.d.join("ior-easy")
    }
    /// The ior-easy file task `w` writes.
    pub fn easy_file(&self, w: u32) -> PathBuf {
        match (self.fpp, self.unique) {
            (false, _) => self.easy_dir().join("ior_file_easy"),
            (true, false) => self.easy_dir().join(format!("ior_file_easy.{w:08}")),
            (true, true) => self
                .easy_dir()
                .join(w.to_string())
                .join(format!("ior_file_easy.{w:08}")),
        }
    }
    /// `D/ior-hard/file`.
    pub fn hard_file(&self) -> PathBuf {
        self.d.join("ior-hard").join("file")
    }
    /// The shared file of a random phase.
    pub fn rnd_file(&self, xfer: u64) -> PathBuf {
        self.d.join(rnd_dir(xfer)).join("file")
    }
    /// mdtest's test directory of a family (`D/mdtest-easy/test-dir.0-0`).
    pub fn md_test_dir(&self, easy: bool) -> PathBuf {
        self.d
            .join(if easy { "mdtest-easy" } else { "mdtest-hard" })
            .join("test-dir.0-0")
    }
    /// The directory task `w`'s files go in.
    pub fn md_dir(&self, easy: bool, w: u32) -> PathBuf {
        if easy {
            self.md_test_dir(true).join(format!("mdtest_tree.{w}.0"))
        } else {
            self.md_test_dir(false).join("mdtest_tree.0")
        }
    }
}

/// The directory of a random phase.
pub fn rnd_dir(xfer: u64) -> &'static str {
    if xfer == 4096 {
        "ior-rnd4K"
    } else {
        "ior-rnd1MB"
    }
}

fn io_err(what: &str, p: &Path, e: std::io::Error) -> String {
    format!("{what} {}: {e}", p.display())
}

/// An IOR-style task: transfers at `offset(i)` of one file.
pub struct IorWork {
    /// The file.
    pub file: File,
    /// Its path, for messages.
    pub path: PathBuf,
    /// Transfer buffer.
    pub buf: Vec<u8>,
    /// Write (else read).
    pub write: bool,
    /// Check what is read against the pattern (IOR -R).
    pub check: bool,
    /// Pattern file id.
    pub file_id: u64,
    /// Offset of item i.
    pub offset: Box<dyn Fn(u64) -> u64 + Send>,
}

impl IorWork {
    /// Opens `path` for a write (created if missing, never truncated) or a read.
    pub fn open(dirs: &Dirs, path: &Path, write: bool) -> Result<File, String> {
        let (dir, name) = dirs.open_parent(path)?;
        if !write {
            return dir
                .open_file_at(name, Access::Read, None)
                .map(|(f, _)| f)
                .map_err(|e| e.to_string());
        }
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        rustix::fs::openat(&dir, name, flags, Mode::from_raw_mode(0o644))
            .map(File::from)
            .map_err(|e| io_err("open", path, e.into()))
    }
}

impl Work for IorWork {
    fn item(&mut self, i: u64, acc: &mut Acc) -> Result<(), String> {
        let off = (self.offset)(i);
        if self.write {
            engine::pattern::fill(&mut self.buf, SEED, self.file_id, off);
            self.file
                .write_all_at(&self.buf, off)
                .map_err(|e| format!("write {} at offset {off}: {e}", self.path.display()))?;
        } else {
            self.file
                .read_exact_at(&mut self.buf, off)
                .map_err(|e| format!("read {} at offset {off}: {e}", self.path.display()))?;
            if self.check {
                acc.bad_bytes +=
                    engine::pattern::check(&self.buf, SEED, self.file_id, off).bad_bytes;
            }
        }
        acc.ops += 1;
        acc.bytes += self.buf.len() as u64;
        Ok(())
    }
    fn finish(&mut self, _acc: &mut Acc) -> Result<(), String> {
        if self.write {
            // IOR -e: fsync at the end of the write, inside the timing.
            self.file
                .sync_all()
                .map_err(|e| io_err("fsync", &self.path, e))?;
        }
        Ok(())
    }
}

/// A stream of seeded 64-bit numbers (splitmix64).
pub fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Position of transfer `j` of a block of `n` transfers in a shuffled
/// order that visits each once: a multiplication by a prime larger than
/// any block, so it is a permutation of 0..n.
pub fn shuffled(j: u64, n: u64, seed: u64) -> u64 {
    const P: u128 = 4_294_967_311; // prime > 2^32
    ((j as u128 * P + seed as u128) % n as u128) as u64
}

/// What an mdtest task does to its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MdOp {
    /// Create (and write `bytes`).
    Create,
    /// stat.
    Stat,
    /// Open, read `bytes`, check.
    Read,
    /// unlink.
    Delete,
}

/// An mdtest-style task over `dir/file.mdtest.OWNER.i`.
pub struct MdWork {
    /// Directory of the files (for messages).
    pub dir: PathBuf,
    /// The same directory, opened and checked ([`Dirs::open`]).
    pub handle: DirHandle,
    /// Whose files (mdtest -N 1: the neighbour's for stat/read/delete).
    pub owner: u32,
    /// The operation.
    pub op: MdOp,
    /// Bytes written at create / read back (0 for mdtest-easy).
    pub bytes: usize,
    /// Scratch buffer.
    pub buf: Vec<u8>,
}

impl MdWork {
    fn file_id(&self, i: u64) -> u64 {
        ((self.owner as u64) << 40) | i
    }
}

impl Work for MdWork {
    fn item(&mut self, i: u64, acc: &mut Acc) -> Result<(), String> {
        let name = format!("file.mdtest.{}.{i}", self.owner);
        let id = self.file_id(i);
        let h = &self.handle;
        let err = |op: &str, e: rustix::io::Errno| io_err(op, &self.dir.join(&name), e.into());
        // Relative to the checked directory, never following a link.
        let nofollow = OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match self.op {
            MdOp::Create => {
                let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | nofollow;
                let fd = rustix::fs::openat(h, name.as_str(), flags, Mode::from_raw_mode(0o644))
                    .map_err(|e| err("create", e))?;
                if self.bytes > 0 {
                    engine::pattern::fill(&mut self.buf, SEED, id, 0);
                    File::from(fd)
                        .write_all(&self.buf)
                        .map_err(|e| io_err("write", &self.dir.join(&name), e))?;
                    acc.bytes += self.bytes as u64;
                }
            }
            MdOp::Stat => {
                rustix::fs::statat(h, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(|e| err("stat", e))?;
            }
            MdOp::Read => {
                let fd =
                    rustix::fs::openat(h, name.as_str(), OFlags::RDONLY | nofollow, Mode::empty())
                        .map_err(|e| err("open", e))?;
                File::from(fd)
                    .read_exact(&mut self.buf)
                    .map_err(|e| io_err("read", &self.dir.join(&name), e))?;
                acc.bytes += self.bytes as u64;
                acc.bad_bytes += engine::pattern::check(&self.buf, SEED, id, 0).bad_bytes;
            }
            MdOp::Delete => {
                rustix::fs::unlinkat(h, name.as_str(), AtFlags::empty())
                    .map_err(|e| err("unlink", e))?;
            }
        }
        acc.ops += 1;
        Ok(())
    }
    fn finish(&mut self, _acc: &mut Acc) -> Result<(), String> {
        if self.op == MdOp::Create {
            // mdtest -Y: sync the file system after the phase, inside the timing.
            rustix::fs::syncfs(&self.handle).map_err(|e| io_err("syncfs", &self.dir, e.into()))?;
        }
        Ok(())
    }
}

/// A task of the parallel find: it walks every directory under `root`
/// and examines every W-th entry of each (its share), counting the files
/// it examined (as pfind's total, directories not counted) and the matches: a name containing "01" and, when
/// asked, exactly `size` bytes and modified after `newer` (ns).
pub struct FindWork {
    /// Where the walk starts.
    pub root: PathBuf,
    /// This task.
    pub w: u32,
    /// Tasks in all.
    pub workers: u32,
    /// `-size 3901c`.
    pub size: Option<u64>,
    /// `-newer timestampfile`: its mtime, ns since the epoch.
    pub newer_ns: Option<i128>,
}

impl FindWork {
    fn walk(&self, dir: &Path, acc: &mut Acc) -> Result<(), String> {
        let mut subdirs = Vec::new();
        let rd = std::fs::read_dir(dir).map_err(|e| io_err("opendir", dir, e))?;
        for (idx, ent) in rd.enumerate() {
            let ent = ent.map_err(|e| io_err("readdir", dir, e))?;
            let is_dir = ent.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if is_dir {
                subdirs.push(ent.path());
            }
            if idx as u64 % self.workers as u64 != self.w as u64 {
                continue;
            }
            if is_dir {
                // pfind counts the files it examines, not the directories.
                continue;
            }
            let t = std::time::Instant::now();
            acc.ops += 1;
            let name = ent.file_name();
            if name.as_encoded_bytes().windows(2).any(|w| w == b"01") {
                let hit = if self.size.is_some() || self.newer_ns.is_some() {
                    match std::fs::symlink_metadata(ent.path()) {
                        Ok(m) => {
                            let mtime = m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128;
                            self.size.is_none_or(|s| m.len() == s)
                                && self.newer_ns.is_none_or(|n| mtime > n)
                        }
                        // Removed since the listing: not a match.
                        Err(_) => false,
                    }
                } else {
                    true
                };
                if hit {
                    acc.found += 1;
                }
            }
            acc.hist.record(t.elapsed().as_nanos() as u64);
        }
        for d in subdirs {
            self.walk(&d, acc)?;
        }
        Ok(())
    }
}

impl Work for FindWork {
    fn item(&mut self, _i: u64, acc: &mut Acc) -> Result<(), String> {
        let root = self.root.clone();
        self.walk(&root, acc)
    }
    fn own_latency(&self) -> bool {
        true
    }
}

/// 4 KiB reads at random offsets of a file of `size` bytes (IOR -z -z:
/// random, possibly repeated, offsets inside the real file).
pub struct RandReadWork {
    /// The file.
    pub file: File,
    /// Its path.
    pub path: PathBuf,
    /// Its size.
    pub size: u64,
    /// Read buffer (4 KiB).
    pub buf: Vec<u8>,
    /// Offset stream.
    pub rng: u64,
}

impl Work for RandReadWork {
    fn item(&mut self, _i: u64, acc: &mut Acc) -> Result<(), String> {
        let xfer = self.buf.len() as u64;
        let slots = (self.size / xfer).max(1);
        let off = splitmix(&mut self.rng) % slots * xfer;
        self.file
            .read_exact_at(&mut self.buf, off)
            .map_err(|e| format!("read {} at offset {off}: {e}", self.path.display()))?;
        acc.ops += 1;
        acc.bytes += xfer;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffled_visits_each_transfer_once() {
        for n in [1u64, 7, 256, 262_144] {
            let mut seen = vec![false; n as usize];
            for j in 0..n {
                let k = shuffled(j, n, 123) as usize;
                assert!(!seen[k], "n={n} j={j}");
                seen[k] = true;
            }
        }
    }

    #[test]
    fn names_are_io500s() {
        let n = Names {
            d: PathBuf::from("/d"),
            workers: 2,
            fpp: true,
            unique: false,
            dirs: Default::default(),
        };
        assert_eq!(
            n.easy_file(1),
            PathBuf::from("/d/ior-easy/ior_file_easy.00000001")
        );
        assert_eq!(n.hard_file(), PathBuf::from("/d/ior-hard/file"));
        assert_eq!(
            n.md_dir(true, 3),
            PathBuf::from("/d/mdtest-easy/test-dir.0-0/mdtest_tree.3.0")
        );
        assert_eq!(
            n.md_dir(false, 3),
            PathBuf::from("/d/mdtest-hard/test-dir.0-0/mdtest_tree.0")
        );
        let u = Names {
            unique: true,
            ..n.clone()
        };
        assert_eq!(
            u.easy_file(1),
            PathBuf::from("/d/ior-easy/1/ior_file_easy.00000001")
        );
    }
}
