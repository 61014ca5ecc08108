//! How every rank of a multi-process run reaches the data set rank 0
//! prepared without following anything swapped in after rank 0 checked it.
//!
//! Rank 0 makes (or checks) the set and holds its directory open. The
//! other ranks open it themselves, later, by name: between the two a
//! directory renamed into `ioscale.d`'s place, or a link, would send their
//! workers elsewhere. So rank 0 sends, with the set, what identifies the
//! directory it holds ([`Peer`]): its (device, inode), a random token it
//! has just written into the marker, and its node. Each other rank opens
//! `ioscale.d` with `O_NOFOLLOW` (a link is refused), then compares:
//!
//! - on rank 0's node, the (device, inode): one kernel, one mount, so the
//!   pair names exactly one directory;
//! - on another node, the inode only: a network file system gives each
//!   client its own `st_dev` for the same export, but the inode number is
//!   the server's (NFS's fileid, Lustre's FID-derived number, GPFS, Ceph,
//!   BeeGFS); a FUSE file system numbering inodes per client would be
//!   refused here, and says so;
//! - everywhere, the token in the marker read through the opened handle:
//!   a directory someone made or renamed there holds no marker with this
//!   run's token (a copy of the marker carries it, which is why the inode
//!   is compared too: a copy is another inode).
//!
//! A mismatch is a refusal (exit 2) naming the rank and its host, agreed by
//! all ranks before any file is opened.
//!
//! The IOR front-end's and dd's files sit in the user's directories: each
//! rank holds the directory (following the user's own links to it, as the
//! tools do; on rank 0's node it must be the directory rank 0 holds, on
//! another node it may be node-local storage) and opens the file name in
//! it with `O_NOFOLLOW`, IOR's task
//! directories (`-F -u`) with `O_NOFOLLOW` too, checked against the
//! identities the marker recorded. A data file name that is a link (or a
//! file with other hard links) when rank 0 sets up is the user's own and
//! is opened by its path, as IOR and dd would; rank 0 sends that list, so
//! no rank decides it later, when a swap may have happened.

use std::io::Read;
use std::path::{Path, PathBuf};

use engine::backend::posix::Posix;
use engine::backend::{Backend, Dir, Kind};
use safefs::FileId;
use serde::{Deserialize, Serialize};

use super::{fs_err, read_marker_in, DataSet, Marker, SetKind, ROOT_NAME};
use crate::error::Error;

/// What rank 0 tells the other ranks about the set it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Peer {
    /// (device, inode) of the directory rank 0 holds: `ioscale.d`, or the
    /// directory of IOR's `-o` path; `None` for dd.
    pub root: Option<FileId>,
    /// The random token rank 0 wrote into `ioscale.d`'s marker for this
    /// run (native sets only).
    pub token: Option<String>,
    /// Rank 0's node: host name and boot id.
    pub node: String,
    /// Indices of the data files opened by path: the user's own links or
    /// hard-linked files (IOR's reads of files it did not make, dd).
    pub by_path: Vec<u32>,
}

/// This node: host name and boot id (two containers with one host name on
/// two machines differ in the boot id).
pub fn node_id() -> String {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    format!(
        "{}/{}",
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/random/boot_id")
    )
}

/// 128 random bits from the kernel, in hex.
fn new_token() -> Result<String, Error> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|source| Error::Setup {
            what: "cannot read /dev/urandom for the run's token".into(),
            source,
        })?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Test hook: with `IOSCALE_TEST_PEER_PAUSE=FILE`, a rank other than 0
/// makes `FILE.waiting` right before it opens the set rank 0 prepared and
/// waits (at most 120 s) until `FILE` exists, so a test can swap a path in
/// exactly that window. Unset, it does nothing.
pub(crate) fn test_pause() {
    let Some(f) = std::env::var_os("IOSCALE_TEST_PEER_PAUSE") else {
        return;
    };
    let f = PathBuf::from(f);
    let mut waiting = f.clone().into_os_string();
    waiting.push(".waiting");
    let _ = std::fs::write(&waiting, b"");
    let t0 = std::time::Instant::now();
    while !f.exists() && t0.elapsed() < std::time::Duration::from_secs(120) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Whether `found` is the directory recorded as `want`, as far as this
/// node can tell (see the module docs).
pub fn same_dir(want: FileId, found: FileId, same_node: bool) -> bool {
    if same_node {
        want == found
    } else {
        want.ino == found.ino
    }
}

fn describe(id: FileId) -> String {
    format!("device {} inode {}", id.dev, id.ino)
}

/// [`replaced`]: rank 0 held directory `want`, this rank opened `found`.
pub(crate) fn other_dir(what: &Path, want: FileId, found: FileId) -> Error {
    replaced(
        what,
        format!(
            "rank 0 holds {}, this rank found {}",
            describe(want),
            describe(found)
        ),
    )
}

/// Why `what` is refused: it is not what rank 0 recorded.
pub(crate) fn replaced(what: &Path, why: String) -> Error {
    Error::Refused(format!(
        "on host {}: {} is not the directory rank 0 prepared ({why}); it was renamed or \
         replaced after rank 0 opened it, so this rank refuses to use it. Nothing was \
         written; check who else works in that directory, then run again",
        host_name(),
        what.display()
    ))
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Opens the directory `rel` below `base` one component at a time with
/// `O_NOFOLLOW`, and, when its identity was recorded, checks it.
pub(crate) fn open_dir_checked<D: Dir>(
    base: &D,
    rel: &Path,
    want: Option<FileId>,
    same_node: bool,
) -> Result<D, Error> {
    let d = base.open_dir_path(rel).map_err(fs_err)?;
    if let Some(w) = want {
        if !same_dir(w, d.id(), same_node) {
            return Err(replaced(
                d.path(),
                format!("recorded as {}, found {}", describe(w), describe(d.id())),
            ));
        }
    }
    Ok(d)
}

impl<B: Backend> DataSet<B> {
    /// Rank 0, before it sends the set to the other ranks: what they check
    /// the directory they open against. A native set gets a fresh token in
    /// its marker.
    pub fn stamp_peer(&mut self) -> Result<Peer, Error> {
        let by_path = self.user_named_files();
        let mut peer = Peer {
            root: None,
            token: None,
            node: node_id(),
            by_path,
        };
        match (&self.kind, &self.guard) {
            (SetKind::Native, Some(g)) => {
                let token = new_token()?;
                self.marker.token = Some(token.clone());
                super::write_marker_in(&g.root, &self.marker).map_err(|e| {
                    super::io_err(
                        format!("cannot write the marker in {}", self.root.display()),
                        e,
                    )
                })?;
                peer.root = Some(g.root.id());
                peer.token = Some(token);
            }
            (SetKind::Sidecar(_), Some(g)) => peer.root = Some(g.root.id()),
            (SetKind::Sidecar(_), None) => {
                let d = self.backend.open_target(&self.root).map_err(fs_err)?;
                peer.root = Some(d.id());
            }
            _ => {}
        }
        Ok(peer)
    }

    /// Files that are the user's own links or hard-linked files, opened by
    /// path: only in sets ioscale did not make (IOR's reads of foreign
    /// files, dd). ioscale's own names are always opened with `O_NOFOLLOW`.
    pub(crate) fn user_named_files(&self) -> Vec<u32> {
        if let Some(p) = &self.peer {
            return p.by_path.clone();
        }
        let ours = match self.kind {
            SetKind::Native => true,
            SetKind::Sidecar(_) => self.guard.is_some(),
            SetKind::Dd(ref set) => set.nofollow,
        };
        if ours {
            return Vec::new();
        }
        (0..self.files.len() as u32)
            .filter(|&i| {
                B::stat_path(&self.files[i as usize], false)
                    .is_ok_and(|m| m.is_some_and(|m| m.kind == Kind::Symlink || m.links > 1))
            })
            .collect()
    }

    /// Whether this rank runs on rank 0's node (always, in one process).
    pub(crate) fn same_node(&self) -> bool {
        self.peer.as_ref().is_none_or(|p| p.node == node_id())
    }

    /// The directory the workers open files in: rank 0's held handle, or
    /// (another rank) opened now and checked against what rank 0 sent.
    /// `None` for dd, whose files each sit in their own directory.
    pub(crate) fn held_dir(&self) -> Result<Option<B::Dir>, Error> {
        if let Some(g) = &self.guard {
            return g.root.try_clone().map(Some).map_err(fs_err);
        }
        if self.peer.is_some() {
            test_pause();
        }
        match &self.kind {
            SetKind::Native => self.open_native_root().map(Some),
            SetKind::Sidecar(_) => {
                // The user's directory: compared on rank 0's node only. On
                // another node it may rightly be another directory (IOR's
                // file per process on node-local storage).
                let d = self.backend.open_target(&self.root).map_err(fs_err)?;
                if let (Some(p), Some(want)) = (&self.peer, self.peer.as_ref().and_then(|p| p.root))
                {
                    if p.node == node_id() && want != d.id() {
                        return Err(other_dir(&self.root, want, d.id()));
                    }
                }
                Ok(Some(d))
            }
            SetKind::Dd(_) => Ok(None),
        }
    }

    /// Another rank's `ioscale.d`: TARGET opened as the user named it,
    /// `ioscale.d` below it with `O_NOFOLLOW`, then its identity and the
    /// token in its marker compared with rank 0's.
    fn open_native_root(&self) -> Result<B::Dir, Error> {
        let target = self.root.parent().unwrap_or(Path::new("."));
        let t = self.backend.open_target(target).map_err(fs_err)?;
        let d = t.open_dir_at(ROOT_NAME, None).map_err(fs_err)?;
        let Some(p) = &self.peer else {
            return Ok(d);
        };
        if let Some(want) = p.root {
            if !same_dir(want, d.id(), p.node == node_id()) {
                return Err(other_dir(&self.root, want, d.id()));
            }
        }
        if let Some(token) = &p.token {
            let found: Option<Marker> = read_marker_in(&d);
            if found.as_ref().and_then(|m| m.token.as_ref()) != Some(token) {
                return Err(replaced(
                    &self.root,
                    "its marker does not hold the token rank 0 wrote for this run".into(),
                ));
            }
        }
        Ok(d)
    }

    /// The identity recorded when this run (or the kept set's) made the
    /// directory `dir`, if any.
    pub(crate) fn recorded_dir_id(&self, dir: &Path) -> Option<FileId> {
        match self.kind {
            SetKind::Native => {
                let k = self.dirs.iter().position(|d| d == dir)?;
                self.marker.dir_ids.get(k).copied()
            }
            SetKind::Sidecar(_) => {
                let m = &self.marker;
                if m.dir_ids.len() != m.dirs_created.len() {
                    return None;
                }
                let k = m.dirs_created.iter().position(|d| d == dir)?;
                m.dir_ids.get(k).copied()
            }
            SetKind::Dd(_) => None,
        }
    }
}

/// `p`'s directory and name, for dd's files (each in its own directory).
pub(crate) fn split_file(p: &Path) -> (PathBuf, std::ffi::OsString) {
    (
        super::parent_of(p),
        p.file_name().unwrap_or_default().to_os_string(),
    )
}

/// What the ranks other than 0 need of the data set rank 0 prepared.
#[derive(Serialize, Deserialize)]
struct SharedSet {
    root: PathBuf,
    files: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
    marker: Marker,
    had_data: bool,
    /// 0 native (`TARGET/ioscale.d`), 1 IOR's names, 2 dd's.
    kind: u8,
    peer: Peer,
}

/// Hands rank 0's data set to every rank, with what identifies the
/// directory rank 0 holds ([`DataSet::stamp_peer`]). The other ranks' copy
/// never removes anything (`created_root` false) and never writes the
/// marker; it opens the set in [`DataSet::anchors`], checked against
/// [`Peer`]. A collective call: every rank makes it once, in order. On a
/// POSIX file system ([`share_on`]).
pub fn share(coord: &dyn coord::Coordinator, made: Option<DataSet>) -> Result<DataSet, Error> {
    share_on(Posix, coord, made)
}

/// [`share`] on `backend` (what the other ranks reach the set through).
pub fn share_on<B: Backend>(
    backend: B,
    coord: &dyn coord::Coordinator,
    made: Option<DataSet<B>>,
) -> Result<DataSet<B>, Error> {
    if coord.size() == 1 {
        return made.ok_or_else(|| Error::Refused("rank 0 has no data set".into()));
    }
    let mut made = made;
    let stamped = made.as_mut().map(|d| {
        d.stamp_peer().map(|peer| SharedSet {
            root: d.root.clone(),
            files: d.files.clone(),
            dirs: d.dirs.clone(),
            marker: d.marker.clone(),
            had_data: d.had_data,
            kind: match d.kind {
                SetKind::Native => 0,
                SetKind::Sidecar(_) => 1,
                SetKind::Dd(_) => 2,
            },
            peer,
        })
    });
    let stamped = match stamped {
        Some(Err(e)) => {
            if let Some(d) = made.as_mut().filter(|d| d.created_root) {
                d.remove();
            }
            Err(e)
        }
        Some(Ok(s)) => Ok(Some(s)),
        None => Ok(None),
    };
    let shared = super::super::cluster::agree(coord, stamped)?;
    let got: Option<SharedSet> = coord
        .broadcast_as(&shared)
        .map_err(|e| Error::Refused(e.to_string()))?;
    if let Some(d) = made {
        return Ok(d);
    }
    let s = got.ok_or_else(|| Error::Refused("rank 0 sent no data set".into()))?;
    Ok(DataSet {
        root: s.root,
        created_root: false,
        files: s.files,
        dirs: s.dirs,
        marker: s.marker,
        had_data: s.had_data,
        kind: match s.kind {
            0 => SetKind::Native,
            1 => SetKind::Sidecar(PathBuf::new()),
            _ => SetKind::Dd(super::DdSet::default()),
        },
        guard: None,
        peer: Some(s.peer),
        backend,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_node_compares_the_inode_only() {
        let a = FileId { dev: 1, ino: 7 };
        let other_dev = FileId { dev: 2, ino: 7 };
        let other_ino = FileId { dev: 1, ino: 8 };
        assert!(same_dir(a, a, true));
        assert!(!same_dir(a, other_dev, true));
        assert!(!same_dir(a, other_ino, true));
        assert!(same_dir(a, other_dev, false));
        assert!(!same_dir(a, other_ino, false));
    }

    #[test]
    fn tokens_are_random_and_long() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
