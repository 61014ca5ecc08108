//! **A test double, not a file system ioscale offers**: an in-memory
//! storage backend behind feature `test-double` (and this crate's own unit
//! tests), so the tests can show that the loops and the driver library
//! reach storage through [`Backend`] only — the same metadata loop, data
//! loop, data set and tree code runs on it and on [`super::posix::Posix`].
//!
//! It keeps a tree of directories, files and links behind one lock per
//! store (a test's concern, not a speed's), with the error numbers a POSIX
//! file system gives, counts every call by name ([`Mem::calls`]), and
//! lists everything it holds ([`Mem::entries`]) so a test can check that
//! nothing was left. [`MemObjects`] declares what an object store can do
//! (no rename, no directories of their own, no writes in place…), for the
//! refusals of [`super::Capabilities`].

use std::collections::{BTreeMap, HashMap};
use std::ffi::{CStr, OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{
    Access, Backend, Capabilities, Create, DataFile, Dir, EntryInfo, EntryStat, Error, FileId,
    Holder, Kind, Liveness, LockOptions, Locked, OpenHow, Refusal, Removal, RemovalReport, Removed,
    Result, SetLock,
};
use crate::registry::{DataEngine, Engines, MetaEngine, SyncEngine, SyncMeta};

/// What the double does: everything a POSIX file system does but O_DIRECT
/// and the user's own paths.
static FULL: Capabilities = Capabilities {
    name: "mem",
    directories: true,
    rename: true,
    symlinks: true,
    chmod: true,
    xattrs: true,
    append: true,
    write_in_place: true,
    direct: false,
    sync: true,
    user_paths: false,
    min_part: 0,
    page_cache: true,
};

/// What [`MemObjects`] declares: an object store's abilities.
static OBJECTS: Capabilities = Capabilities {
    name: "mem-objects",
    directories: false,
    rename: false,
    symlinks: false,
    chmod: false,
    xattrs: false,
    append: false,
    write_in_place: false,
    direct: false,
    sync: false,
    user_paths: false,
    min_part: 0,
    page_cache: false,
};

/// One node of the tree.
#[derive(Debug, Clone)]
enum Body {
    File(Vec<u8>),
    Dir(BTreeMap<Vec<u8>, u64>),
    Link(Vec<u8>),
}

#[derive(Debug, Clone)]
struct Node {
    body: Body,
    mode: u32,
    links: u64,
    changed: i64,
    xattrs: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl Node {
    fn kind(&self) -> Kind {
        match self.body {
            Body::File(_) => Kind::File,
            Body::Dir(_) => Kind::Dir,
            Body::Link(_) => Kind::Symlink,
        }
    }
}

#[derive(Debug, Default)]
struct Tree {
    nodes: HashMap<u64, Node>,
    next: u64,
    clock: i64,
    locks: HashMap<(u64, Vec<u8>), ()>,
    calls: BTreeMap<&'static str, u64>,
}

const ROOT: u64 = 1;

fn err(n: i32) -> io::Error {
    io::Error::from_raw_os_error(n)
}

/// A name without its trailing NUL; a name that is not one component is
/// refused as the kernel refuses it.
fn plain(name: &[u8]) -> io::Result<&[u8]> {
    let n = name.strip_suffix(&[0]).unwrap_or(name);
    if n.is_empty() || n.contains(&0) || n.contains(&b'/') || n == b"." || n == b".." {
        return Err(err(libc::EINVAL));
    }
    Ok(n)
}

impl Tree {
    fn new() -> Tree {
        let mut t = Tree {
            next: ROOT + 1,
            ..Tree::default()
        };
        let root = t.fresh(Body::Dir(BTreeMap::new()), 0o755);
        t.nodes.insert(ROOT, root);
        t
    }

    fn fresh(&mut self, body: Body, mode: u32) -> Node {
        self.clock += 1;
        Node {
            body,
            mode,
            links: 1,
            changed: self.clock,
            xattrs: BTreeMap::new(),
        }
    }

    fn count(&mut self, call: &'static str) {
        *self.calls.entry(call).or_default() += 1;
    }

    fn node(&self, ino: u64) -> io::Result<&Node> {
        self.nodes.get(&ino).ok_or_else(|| err(libc::ESTALE))
    }

    fn entries(&self, dir: u64) -> io::Result<&BTreeMap<Vec<u8>, u64>> {
        match &self.node(dir)?.body {
            Body::Dir(e) => Ok(e),
            _ => Err(err(libc::ENOTDIR)),
        }
    }

    fn entries_mut(&mut self, dir: u64) -> io::Result<&mut BTreeMap<Vec<u8>, u64>> {
        match self.nodes.get_mut(&dir).map(|n| &mut n.body) {
            Some(Body::Dir(e)) => Ok(e),
            Some(_) => Err(err(libc::ENOTDIR)),
            None => Err(err(libc::ESTALE)),
        }
    }

    fn lookup(&self, dir: u64, name: &[u8]) -> io::Result<Option<u64>> {
        Ok(self.entries(dir)?.get(plain(name)?).copied())
    }

    /// The directory `rel` below `dir`, never through a link (ELOOP) and
    /// never above it (`..` is EINVAL).
    fn walk(&self, dir: u64, rel: &[u8]) -> io::Result<u64> {
        let rel = rel.strip_suffix(&[0]).unwrap_or(rel);
        let mut cur = dir;
        for c in rel.split(|&b| b == b'/') {
            if c.is_empty() || c == b"." {
                continue;
            }
            let ino = self.lookup(cur, c)?.ok_or_else(|| err(libc::ENOENT))?;
            cur = match self.node(ino)?.body {
                Body::Dir(_) => ino,
                Body::Link(_) => return Err(err(libc::ELOOP)),
                Body::File(_) => return Err(err(libc::ENOTDIR)),
            };
        }
        Ok(cur)
    }

    fn insert(&mut self, dir: u64, name: &[u8], body: Body, mode: u32) -> io::Result<u64> {
        let name = plain(name)?.to_vec();
        if self.entries(dir)?.contains_key(&name) {
            return Err(err(libc::EEXIST));
        }
        let ino = self.next;
        self.next += 1;
        let node = self.fresh(body, mode);
        self.nodes.insert(ino, node);
        self.entries_mut(dir)?.insert(name, ino);
        self.touch(dir);
        Ok(ino)
    }

    /// Marks `dir` (and, as a POSIX file system does, nothing else)
    /// changed now: an entry was made, removed or renamed in it.
    fn touch(&mut self, dir: u64) {
        let clock = self.clock;
        if let Some(n) = self.nodes.get_mut(&dir) {
            n.changed = clock;
        }
    }

    /// Marks `ino`, just put under a name in `dir` by a rename, and `dir`
    /// changed now.
    fn renamed(&mut self, dir: u64, ino: u64) {
        self.clock += 1;
        self.touch(dir);
        let clock = self.clock;
        if let Some(n) = self.nodes.get_mut(&ino) {
            n.changed = clock;
        }
    }

    /// Drops the name `name` of `ino` from `dir`, and the node with its
    /// last name.
    fn unname(&mut self, dir: u64, name: &[u8], ino: u64) -> io::Result<()> {
        self.entries_mut(dir)?.remove(plain(name)?);
        self.clock += 1;
        let clock = self.clock;
        self.touch(dir);
        if let Some(n) = self.nodes.get_mut(&ino) {
            n.links -= 1;
            n.changed = clock;
            if n.links == 0 {
                self.nodes.remove(&ino);
            }
        }
        Ok(())
    }

    fn remove(&mut self, dir: u64, name: &[u8], want_dir: bool) -> io::Result<()> {
        let ino = self.lookup(dir, name)?.ok_or_else(|| err(libc::ENOENT))?;
        match (&self.node(ino)?.body, want_dir) {
            (Body::Dir(e), true) if !e.is_empty() => return Err(err(libc::ENOTEMPTY)),
            (Body::Dir(_), true) => {}
            (Body::Dir(_), false) => return Err(err(libc::EISDIR)),
            (_, true) => return Err(err(libc::ENOTDIR)),
            (_, false) => {}
        }
        self.unname(dir, name, ino)
    }

    fn info(&self, dev: u64, ino: u64) -> io::Result<EntryInfo> {
        let n = self.node(ino)?;
        Ok(EntryInfo {
            id: FileId { dev, ino },
            kind: n.kind(),
            size: match &n.body {
                Body::File(d) => d.len() as u64,
                Body::Link(t) => t.len() as u64,
                Body::Dir(e) => e.len() as u64,
            },
            links: n.links,
            changed: (n.changed, 0),
        })
    }

    fn data_mut(&mut self, ino: u64) -> io::Result<&mut Vec<u8>> {
        match self.nodes.get_mut(&ino).map(|n| &mut n.body) {
            Some(Body::File(d)) => Ok(d),
            Some(_) => Err(err(libc::EISDIR)),
            None => Err(err(libc::ESTALE)),
        }
    }
}

/// One store: its tree and a device number of its own.
#[derive(Debug)]
struct Store {
    tree: Mutex<Tree>,
    dev: u64,
}

impl Store {
    fn lock(&self, call: &'static str) -> MutexGuard<'_, Tree> {
        let mut t = self.tree.lock().unwrap_or_else(|e| e.into_inner());
        t.count(call);
        t
    }
}

static DEVS: AtomicU64 = AtomicU64::new(0x6d65_6d00);

/// The in-memory backend (a test double: see the module docs). `OBJECTS`
/// makes it declare an object store's abilities ([`MemObjects`]).
#[derive(Debug, Clone)]
pub struct MemStore<const OBJECTS: bool> {
    store: Arc<Store>,
}

/// The double with a file system's abilities.
pub type Mem = MemStore<false>;
/// The double declaring an object store's abilities.
pub type MemObjects = MemStore<true>;

impl<const O: bool> Default for MemStore<O> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const O: bool> MemStore<O> {
    /// An empty store holding one directory, `/`.
    pub fn new() -> Self {
        MemStore {
            store: Arc::new(Store {
                tree: Mutex::new(Tree::new()),
                dev: DEVS.fetch_add(1, Ordering::Relaxed),
            }),
        }
    }

    /// Makes the directory `path` (and its parents) in the store, as a
    /// test's fixture.
    pub fn mkdir_all(&self, path: &Path) {
        let mut t = self.store.lock("fixture");
        let mut cur = ROOT;
        for c in path.iter().filter(|c| *c != "/") {
            let name = c.as_bytes();
            cur = match t.lookup(cur, name) {
                Ok(Some(ino)) => ino,
                _ => t
                    .insert(cur, name, Body::Dir(BTreeMap::new()), 0o755)
                    .expect("a fixture directory"),
            };
        }
    }

    /// Every path the store holds below `/` (directories with a trailing
    /// `/`), sorted.
    pub fn entries(&self) -> Vec<String> {
        let t = self.store.lock("fixture");
        let mut out = Vec::new();
        let mut stack = vec![(ROOT, String::new())];
        while let Some((dir, at)) = stack.pop() {
            for (name, &ino) in t.entries(dir).into_iter().flatten() {
                let p = format!("{at}/{}", String::from_utf8_lossy(name));
                match t.node(ino).map(|n| &n.body) {
                    Ok(Body::Dir(_)) => {
                        out.push(format!("{p}/"));
                        stack.push((ino, p));
                    }
                    _ => out.push(p),
                }
            }
        }
        out.sort();
        out
    }

    /// The contents of the file `path`, if it is one.
    pub fn read(&self, path: &Path) -> Option<Vec<u8>> {
        let t = self.store.lock("fixture");
        let rel = path.as_os_str().as_bytes();
        let (parent, name) = match rel.iter().rposition(|&b| b == b'/') {
            Some(i) => (&rel[..i], &rel[i + 1..]),
            None => (&b""[..], rel),
        };
        let dir = t.walk(ROOT, parent).ok()?;
        match &t.node(t.lookup(dir, name).ok()??).ok()?.body {
            Body::File(d) => Some(d.clone()),
            _ => None,
        }
    }

    /// How many times each call was made, by name.
    pub fn calls(&self) -> BTreeMap<&'static str, u64> {
        self.store.lock("fixture").calls.clone()
    }
}

/// A held directory of the double.
#[derive(Debug)]
pub struct MemDir {
    store: Arc<Store>,
    ino: u64,
    path: PathBuf,
}

/// A directory the loops work in.
#[derive(Debug)]
pub struct MemAt {
    store: Arc<Store>,
    ino: u64,
}

/// An open file of the double.
#[derive(Debug)]
pub struct MemFile {
    store: Arc<Store>,
    ino: u64,
    pos: u64,
    how: OpenHow,
}

/// A set lock of the double: held in its store's lock table.
#[derive(Debug)]
pub struct MemLock {
    store: Arc<Store>,
    key: (u64, Vec<u8>),
}

impl Drop for MemLock {
    fn drop(&mut self) {
        self.store.lock("release").locks.remove(&self.key);
    }
}

impl SetLock for MemLock {
    fn stale_holder(&self) -> Option<(&Holder, &'static str)> {
        None
    }
}

impl MemDir {
    fn fail(&self, op: &'static str, name: &OsStr, e: io::Error) -> Error {
        Error::io(op, self.path.join(name), e)
    }

    fn child(&self, ino: u64, name: &OsStr) -> MemDir {
        MemDir {
            store: Arc::clone(&self.store),
            ino,
            path: self.path.join(name),
        }
    }

    /// Refuses what is at `name` unless it is `want` (and `expected`).
    fn check(
        &self,
        op: &'static str,
        name: &OsStr,
        want: Kind,
        expected: Option<FileId>,
    ) -> Result<Option<EntryInfo>> {
        let Some(info) = self.stat_at(name)? else {
            return Ok(None);
        };
        let p = self.path.join(name);
        if info.kind == Kind::Symlink && want != Kind::Symlink {
            return Err(Error::refused(op, p, Refusal::Symlink));
        }
        if info.kind != want {
            return Err(Error::refused(
                op,
                p,
                Refusal::WrongKind {
                    expected: want.name(),
                    found: info.kind.name(),
                },
            ));
        }
        match expected {
            Some(e) if e != info.id => Err(Error::refused(
                op,
                p,
                Refusal::Replaced {
                    expected: e,
                    found: info.id,
                },
            )),
            _ => Ok(Some(info)),
        }
    }

    fn remove_one(
        &self,
        op: &'static str,
        name: &OsStr,
        kind: Kind,
        expected: Option<FileId>,
    ) -> Result<Removed> {
        if self.check(op, name, kind, expected)?.is_none() {
            return Ok(Removed::Absent);
        }
        let mut t = self.store.lock(op);
        match t.remove(self.ino, name.as_bytes(), kind == Kind::Dir) {
            Ok(()) => Ok(Removed::Removed),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(Removed::Absent),
            Err(e) => Err(self.fail(op, name, e)),
        }
    }

    /// Removes the entry `rel` (below this directory) as [`Dir::remove`]
    /// does, into `rep`.
    fn remove_rel(
        &self,
        rel: &Path,
        kind: Kind,
        expected: Option<FileId>,
        rep: &mut RemovalReport,
    ) {
        let parent = rel.parent().filter(|p| !p.as_os_str().is_empty());
        let name = rel.file_name().unwrap_or_default();
        let r = match parent {
            Some(p) => self.open_dir_path(p).and_then(|d| {
                let op = if kind == Kind::Dir { "rmdir" } else { "unlink" };
                d.remove_one(op, name, kind, expected)
            }),
            None => {
                let op = if kind == Kind::Dir { "rmdir" } else { "unlink" };
                self.remove_one(op, name, kind, expected)
            }
        };
        match r {
            Ok(Removed::Removed) => rep.removed += 1,
            Ok(Removed::Absent) => rep.absent += 1,
            Err(e) if e.is_not_found() => rep.absent += 1,
            Err(error) => {
                rep.left_total += 1;
                rep.left.push(safefs::Left {
                    path: error.path.clone(),
                    error,
                    below: 0,
                });
            }
        }
    }
}

impl Dir for MemDir {
    type File = MemFile;
    type Lock = MemLock;

    fn path(&self) -> &Path {
        &self.path
    }
    fn id(&self) -> FileId {
        FileId {
            dev: self.store.dev,
            ino: self.ino,
        }
    }
    fn try_clone(&self) -> Result<Self> {
        Ok(MemDir {
            store: Arc::clone(&self.store),
            ino: self.ino,
            path: self.path.clone(),
        })
    }
    fn open_dir_at(&self, name: impl AsRef<OsStr>, expected: Option<FileId>) -> Result<Self> {
        let name = name.as_ref();
        let info = self.check("open", name, Kind::Dir, expected)?;
        match info {
            Some(i) => Ok(self.child(i.id.ino, name)),
            None => Err(self.fail("open", name, err(libc::ENOENT))),
        }
    }
    fn open_dir_path(&self, rel: impl AsRef<Path>) -> Result<Self> {
        let mut cur = self.try_clone()?;
        for c in rel.as_ref().iter() {
            cur = cur.open_dir_at(c, None)?;
        }
        Ok(cur)
    }
    fn mkdir_at(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<Self> {
        let name = name.as_ref();
        let mut t = self.store.lock("mkdir");
        let ino = t
            .insert(self.ino, name.as_bytes(), Body::Dir(BTreeMap::new()), mode)
            .map_err(|e| self.fail("mkdir", name, e))?;
        Ok(self.child(ino, name))
    }
    fn create_at(&self, name: impl AsRef<OsStr>, mode: u32) -> Result<(MemFile, FileId)> {
        let name = name.as_ref();
        let mut t = self.store.lock("create");
        let ino = t
            .insert(self.ino, name.as_bytes(), Body::File(Vec::new()), mode)
            .map_err(|e| self.fail("create", name, e))?;
        let how = OpenHow {
            read: true,
            write: true,
            ..OpenHow::default()
        };
        let f = MemFile {
            store: Arc::clone(&self.store),
            ino,
            pos: 0,
            how,
        };
        Ok((f, self.id_of(ino)))
    }
    fn create_unnamed(&self, _how: OpenHow) -> Result<Option<MemFile>> {
        // The double has no unnamed files (as FUSE and NFS have none).
        Ok(None)
    }
    fn create_with(&self, name: impl AsRef<OsStr>, how: OpenHow) -> Result<(MemFile, FileId)> {
        if how.direct {
            return Err(self.fail("create", name.as_ref(), err(libc::EINVAL)));
        }
        self.create_at(name, 0o644)
    }
    fn open_file_at(
        &self,
        name: impl AsRef<OsStr>,
        access: Access,
        expected: Option<FileId>,
    ) -> Result<(MemFile, FileId)> {
        let name = name.as_ref();
        let Some(info) = self.check("open", name, Kind::File, expected)? else {
            return Err(self.fail("open", name, err(libc::ENOENT)));
        };
        let how = OpenHow {
            read: access != Access::Write,
            write: access != Access::Read,
            ..OpenHow::default()
        };
        let f = MemFile {
            store: Arc::clone(&self.store),
            ino: info.id.ino,
            pos: 0,
            how,
        };
        Ok((f, info.id))
    }
    fn stat_at(&self, name: impl AsRef<OsStr>) -> Result<Option<EntryInfo>> {
        let name = name.as_ref();
        let t = self.store.lock("stat");
        match t.lookup(self.ino, name.as_bytes()) {
            Ok(Some(ino)) => t
                .info(self.store.dev, ino)
                .map(Some)
                .map_err(|e| self.fail("stat", name, e)),
            Ok(None) => Ok(None),
            Err(e) => Err(self.fail("stat", name, e)),
        }
    }
    fn unlink_at(&self, name: impl AsRef<OsStr>, expected: Option<FileId>) -> Result<Removed> {
        self.remove_one("unlink", name.as_ref(), Kind::File, expected)
    }
    fn rmdir_at(&self, name: impl AsRef<OsStr>, expected: Option<FileId>) -> Result<Removed> {
        self.remove_one("rmdir", name.as_ref(), Kind::Dir, expected)
    }
    fn rename_at(&self, from: impl AsRef<OsStr>, to: impl AsRef<OsStr>) -> Result<()> {
        let (from, to) = (from.as_ref(), to.as_ref());
        let at = self.at();
        Mem::rename(&at, &nul(from), &nul(to)).map_err(|e| self.fail("rename", to, e))
    }
    fn list(&self) -> Result<Vec<OsString>> {
        let t = self.store.lock("list");
        let e = t
            .entries(self.ino)
            .map_err(|e| Error::io("list", &self.path, e))?;
        Ok(e.keys()
            .map(|k| OsStr::from_bytes(k).to_os_string())
            .collect())
    }
    fn replace_at(&self, name: impl AsRef<OsStr>, bytes: &[u8], _durable: bool) -> Result<()> {
        let name = name.as_ref();
        self.check("replace", name, Kind::File, None)?;
        let mut t = self.store.lock("replace");
        let ino = match t.lookup(self.ino, name.as_bytes()) {
            Ok(Some(ino)) => ino,
            _ => t
                .insert(self.ino, name.as_bytes(), Body::File(Vec::new()), 0o644)
                .map_err(|e| self.fail("replace", name, e))?,
        };
        let d = t.data_mut(ino).map_err(|e| self.fail("replace", name, e))?;
        *d = bytes.to_vec();
        // A replace puts a new entry under the name, as POSIX's rename of
        // a temporary over it does: the directory and the file change.
        t.renamed(self.ino, ino);
        Ok(())
    }
    fn read_small(&self, name: impl AsRef<OsStr>, limit: u64) -> Option<Vec<u8>> {
        let (mut f, _) = self.open_file_at(name, Access::Read, None).ok()?;
        let mut out = vec![0u8; limit.min(1 << 20) as usize];
        let n = f.read(&mut out).ok()?;
        out.truncate(n);
        Some(out)
    }
    fn temp_of(_name: &OsStr) -> Option<OsString> {
        // A replace is one step here: there are no temporaries.
        None
    }
    fn try_lock(
        &self,
        name: impl AsRef<OsStr>,
        _command: &str,
        _opts: LockOptions,
    ) -> Result<Locked<MemLock>> {
        let name = name.as_ref();
        let key = (self.ino, name.as_bytes().to_vec());
        {
            let mut t = self.store.lock("lock");
            if t.locks.contains_key(&key) {
                return Ok(Locked::Held {
                    holder: None,
                    liveness: Liveness::Live,
                });
            }
            t.locks.insert(key.clone(), ());
            if let Ok(None) = t.lookup(self.ino, name.as_bytes()) {
                t.insert(self.ino, name.as_bytes(), Body::File(Vec::new()), 0o644)
                    .map_err(|e| self.fail("lock", name, e))?;
            }
        }
        Ok(Locked::Acquired(MemLock {
            store: Arc::clone(&self.store),
            key,
        }))
    }
    fn unlock(&self, lock: MemLock, name: impl AsRef<OsStr>) -> Result<()> {
        drop(lock);
        self.unlink_at(name, None).map(drop)
    }
    fn remove(&self, removal: &Removal) -> RemovalReport {
        let mut rep = RemovalReport::default();
        let want = |rel: &Path| {
            removal
                .expected
                .iter()
                .find(|(p, _)| p == rel)
                .map(|(_, id)| *id)
        };
        for f in &removal.files {
            self.remove_rel(f, Kind::File, want(f), &mut rep);
        }
        for d in &removal.dirs {
            self.remove_rel(d, Kind::Dir, want(d), &mut rep);
        }
        rep
    }
    fn writable(&self) -> bool {
        true
    }
}

impl MemDir {
    fn id_of(&self, ino: u64) -> FileId {
        FileId {
            dev: self.store.dev,
            ino,
        }
    }

    fn at(&self) -> MemAt {
        MemAt {
            store: Arc::clone(&self.store),
            ino: self.ino,
        }
    }
}

fn nul(name: &OsStr) -> Vec<u8> {
    let mut v = name.as_bytes().to_vec();
    v.push(0);
    v
}

impl DataFile for MemFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.how.append {
            self.pos = self.size()?;
        }
        let n = self.write_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        if !self.how.read {
            return Err(err(libc::EBADF));
        }
        let mut t = self.store.lock("read");
        let d = t.data_mut(self.ino)?;
        let start = (offset as usize).min(d.len());
        let n = buf.len().min(d.len() - start);
        buf[..n].copy_from_slice(&d[start..start + n]);
        Ok(n)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        if !self.how.write {
            return Err(err(libc::EBADF));
        }
        let mut t = self.store.lock("write");
        let d = t.data_mut(self.ino)?;
        let end = offset as usize + buf.len();
        if d.len() < end {
            d.resize(end, 0);
        }
        d[offset as usize..end].copy_from_slice(buf);
        Ok(buf.len())
    }
    fn sync(&self) -> io::Result<()> {
        drop(self.store.lock("fsync"));
        Ok(())
    }
    fn allocate(&self, _len: u64) -> io::Result<()> {
        Err(err(libc::EOPNOTSUPP))
    }
    fn size(&self) -> io::Result<u64> {
        let mut t = self.store.lock("fstat");
        Ok(t.data_mut(self.ino)?.len() as u64)
    }
    fn links(&self) -> io::Result<u64> {
        let t = self.store.lock("fstat");
        Ok(t.nodes.get(&self.ino).map_or(0, |n| n.links))
    }
    fn close(self) -> io::Result<()> {
        drop(self.store.lock("close"));
        Ok(())
    }
}

impl<const O: bool> MemStore<O> {
    fn at<'a>(at: &'a MemAt, call: &'static str) -> MutexGuard<'a, Tree> {
        at.store.lock(call)
    }

    fn open_in(at: &MemAt, name: &[u8], how: OpenHow, mode: u32) -> io::Result<MemFile> {
        let mut t = Self::at(at, "open");
        let ino = match t.lookup(at.ino, name)? {
            Some(_) if how.create == Create::Exclusive => return Err(err(libc::EEXIST)),
            Some(ino) => ino,
            None if how.create == Create::No => return Err(err(libc::ENOENT)),
            None => t.insert(at.ino, name, Body::File(Vec::new()), mode)?,
        };
        match t.node(ino)?.body {
            Body::Link(_) => return Err(err(libc::ELOOP)),
            Body::Dir(_) => return Err(err(libc::EISDIR)),
            Body::File(_) => {}
        }
        if how.truncate {
            t.data_mut(ino)?.clear();
        }
        Ok(MemFile {
            store: Arc::clone(&at.store),
            ino,
            pos: 0,
            how,
        })
    }
}

impl<const O: bool> Backend for MemStore<O> {
    type Dir = MemDir;
    type At = MemAt;
    type File = MemFile;
    type Flags = OpenHow;

    fn capabilities() -> &'static Capabilities {
        if O {
            &OBJECTS
        } else {
            &FULL
        }
    }

    fn open_target(&self, path: &Path) -> Result<MemDir> {
        let t = self.store.lock("open");
        let rel = path.as_os_str().as_bytes();
        let ino = t.walk(ROOT, rel).map_err(|e| Error::io("open", path, e))?;
        Ok(MemDir {
            store: Arc::clone(&self.store),
            ino,
            path: path.to_path_buf(),
        })
    }

    fn stat_path(_path: &Path, _follow: bool) -> Result<Option<EntryInfo>> {
        Err(Error::io("stat", _path, err(libc::EOPNOTSUPP)))
    }
    fn open_path(_path: &Path, _how: OpenHow) -> io::Result<MemFile> {
        Err(err(libc::EOPNOTSUPP))
    }
    fn flags(how: OpenHow) -> OpenHow {
        how
    }
    fn at_of(dir: &MemDir) -> io::Result<MemAt> {
        Ok(dir.at())
    }
    fn at_path(_path: &Path) -> io::Result<MemAt> {
        Err(err(libc::EOPNOTSUPP))
    }
    fn dup_at(at: &MemAt) -> io::Result<MemAt> {
        Ok(MemAt {
            store: Arc::clone(&at.store),
            ino: at.ino,
        })
    }
    fn open_beneath(at: &MemAt, rel: &[u8]) -> io::Result<MemAt> {
        let t = Self::at(at, "open dir");
        if rel
            .split(|&b| b == b'/')
            .any(|c| c == b".." || c == b"..\0")
        {
            return Err(err(libc::EINVAL));
        }
        let ino = t.walk(at.ino, rel)?;
        Ok(MemAt {
            store: Arc::clone(&at.store),
            ino,
        })
    }
    fn mkdir_beneath(at: &MemAt, rel: &[u8], mode: u32) -> io::Result<()> {
        let rel = rel.strip_suffix(&[0]).unwrap_or(rel);
        let (parent, name) = match rel.iter().rposition(|&b| b == b'/') {
            Some(i) => (&rel[..i], &rel[i + 1..]),
            None => (&b""[..], rel),
        };
        let mut t = Self::at(at, "mkdir");
        let dir = t.walk(at.ino, parent)?;
        t.insert(dir, name, Body::Dir(BTreeMap::new()), mode)
            .map(drop)
    }
    fn open_data(at: &MemAt, name: &CStr, how: OpenHow) -> io::Result<MemFile> {
        let f = Self::open_in(at, name.to_bytes(), how, 0o644)?;
        if f.links()? > 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the file has other hard links, so it is not ioscale's data file alone",
            ));
        }
        Ok(f)
    }
    fn open(at: &MemAt, name: &[u8], flags: OpenHow, mode: u32) -> io::Result<MemFile> {
        Self::open_in(at, name, flags, mode)
    }
    fn lstat(at: &MemAt, name: &[u8]) -> io::Result<Kind> {
        let t = Self::at(at, "stat");
        let ino = t.lookup(at.ino, name)?.ok_or_else(|| err(libc::ENOENT))?;
        Ok(t.node(ino)?.kind())
    }
    fn changed(at: &MemAt, name: &[u8]) -> io::Result<(i64, i64)> {
        let t = Self::at(at, "stat");
        let ino = if name.strip_suffix(&[0]).unwrap_or(name) == b"." {
            at.ino
        } else {
            t.lookup(at.ino, name)?.ok_or_else(|| err(libc::ENOENT))?
        };
        Ok((t.node(ino)?.changed, 0))
    }

    fn stat(at: &MemAt, name: &[u8]) -> io::Result<EntryStat> {
        let t = Self::at(at, "stat");
        let ino = t.lookup(at.ino, name)?.ok_or_else(|| err(libc::ENOENT))?;
        // The double keeps one clock: a change is its modification.
        let info = t.info(0, ino)?;
        Ok(EntryStat {
            kind: info.kind,
            size: info.size,
            modified: (info.changed.0, 0),
        })
    }
    fn chmod(at: &MemAt, name: &[u8], mode: u32) -> io::Result<()> {
        let mut t = Self::at(at, "chmod");
        let ino = t.lookup(at.ino, name)?.ok_or_else(|| err(libc::ENOENT))?;
        let n = t.nodes.get_mut(&ino).ok_or_else(|| err(libc::ESTALE))?;
        if matches!(n.body, Body::Link(_)) {
            return Err(err(libc::EOPNOTSUPP));
        }
        n.mode = mode;
        Ok(())
    }
    fn unlink(at: &MemAt, name: &[u8]) -> io::Result<()> {
        Self::at(at, "unlink").remove(at.ino, name, false)
    }
    fn rmdir(at: &MemAt, name: &[u8]) -> io::Result<()> {
        Self::at(at, "rmdir").remove(at.ino, name, true)
    }
    fn mkdir(at: &MemAt, name: &[u8], mode: u32) -> io::Result<()> {
        let mut t = Self::at(at, "mkdir");
        t.insert(at.ino, name, Body::Dir(BTreeMap::new()), mode)
            .map(drop)
    }
    fn rename(at: &MemAt, from: &[u8], to: &[u8]) -> io::Result<()> {
        let mut t = Self::at(at, "rename");
        let ino = t.lookup(at.ino, from)?.ok_or_else(|| err(libc::ENOENT))?;
        if let Some(old) = t.lookup(at.ino, to)? {
            if old == ino {
                return Ok(());
            }
            let is_dir = matches!(t.node(old)?.body, Body::Dir(_));
            t.remove(at.ino, to, is_dir)?;
        }
        let e = t.entries_mut(at.ino)?;
        e.remove(plain(from)?);
        e.insert(plain(to)?.to_vec(), ino);
        t.renamed(at.ino, ino);
        Ok(())
    }
    fn symlink(target: &[u8], at: &MemAt, link: &[u8]) -> io::Result<()> {
        let target = target.strip_suffix(&[0]).unwrap_or(target).to_vec();
        let mut t = Self::at(at, "symlink");
        t.insert(at.ino, link, Body::Link(target), 0o777).map(drop)
    }
    fn set_xattr(at: &MemAt, name: &[u8], key: &CStr, value: &[u8]) -> io::Result<()> {
        let mut t = Self::at(at, "setxattr");
        let ino = t.lookup(at.ino, name)?.ok_or_else(|| err(libc::ENOENT))?;
        let n = t.nodes.get_mut(&ino).ok_or_else(|| err(libc::ESTALE))?;
        n.xattrs.insert(key.to_bytes().to_vec(), value.to_vec());
        Ok(())
    }
    fn get_xattr(at: &MemAt, name: &[u8], key: &CStr, out: &mut [u8]) -> io::Result<usize> {
        let t = Self::at(at, "getxattr");
        let ino = t.lookup(at.ino, name)?.ok_or_else(|| err(libc::ENOENT))?;
        let v = t
            .node(ino)?
            .xattrs
            .get(key.to_bytes())
            .ok_or_else(|| err(libc::ENODATA))?;
        if v.len() > out.len() {
            return Err(err(libc::ERANGE));
        }
        out[..v.len()].copy_from_slice(v);
        Ok(v.len())
    }
    fn read_dir(at: &MemAt, mut f: impl FnMut(&[u8]) -> bool) -> io::Result<()> {
        let names: Vec<Vec<u8>> = {
            let t = Self::at(at, "readdir");
            t.entries(at.ino)?.keys().cloned().collect()
        };
        for mut n in names {
            n.push(0);
            if !f(&n) {
                break;
            }
        }
        Ok(())
    }
    fn sync_all(at: &MemAt) -> io::Result<()> {
        drop(Self::at(at, "syncfs"));
        Ok(())
    }
}

/// The double's engines: the synchronous ones, which run on any backend.
static MEM_DATA: &[&dyn DataEngine<Mem>] = &[&SyncEngine];
static MEM_META: &[&dyn MetaEngine<Mem>] = &[&SyncMeta];
static OBJ_DATA: &[&dyn DataEngine<MemObjects>] = &[&SyncEngine];
static OBJ_META: &[&dyn MetaEngine<MemObjects>] = &[&SyncMeta];

impl Engines for Mem {
    fn data_engines() -> &'static [&'static dyn DataEngine<Mem>] {
        MEM_DATA
    }
    fn meta_engines() -> &'static [&'static dyn MetaEngine<Mem>] {
        MEM_META
    }
}

impl Engines for MemObjects {
    fn data_engines() -> &'static [&'static dyn DataEngine<MemObjects>] {
        OBJ_DATA
    }
    fn meta_engines() -> &'static [&'static dyn MetaEngine<MemObjects>] {
        OBJ_META
    }
}
