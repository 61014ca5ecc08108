//! The S3 backend's held directory: a key prefix, its identity the
//! entity tag of the marker object ioscale put there, and the setup and
//! cleanup operations (conditional PUTs, HEADs, DELETEs checked against
//! the identity recorded, paginated LISTs).

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use objstore::{Conn, Target};

use super::file::S3File;
use super::{below, check_name, err, fnv, to_io, S3At, Shared, DIR_MARK};
use crate::backend::{
    Access, Dir, EntryInfo, Error, FileId, Holder, Kind, Liveness, LockOptions, Locked, OpenHow,
    Refusal, Removal, RemovalReport, Removed, Result, SetLock,
};

/// A held prefix.
#[derive(Debug)]
pub struct S3Dir {
    shared: Arc<Shared>,
    /// Empty (the bucket's top) or ending with `/`.
    prefix: String,
    path: PathBuf,
    id: FileId,
}

/// The set lock: a lock object put only where none was.
#[derive(Debug)]
pub struct S3Lock(());

impl SetLock for S3Lock {
    fn stale_holder(&self) -> Option<(&Holder, &'static str)> {
        None
    }
}

static NONCE: AtomicU64 = AtomicU64::new(0);

/// Puts the marker of `prefix` where none is; its identity. An existing
/// marker is EEXIST.
pub(crate) fn make_marker(shared: &Arc<Shared>, prefix: &str) -> io::Result<FileId> {
    let key = format!("{prefix}{DIR_MARK}");
    // Unique content, so the entity tag (a digest of it) tells this
    // marker from any other.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let body = format!(
        "ioscale directory {} {} {}\n",
        std::process::id(),
        now.as_nanos(),
        NONCE.fetch_add(1, Ordering::Relaxed)
    );
    let mut conn = shared.lease();
    if !conn
        .put_if_absent(&key, body.as_bytes())
        .map_err(to_io)?
        .value
    {
        return Err(err(libc::EEXIST));
    }
    marker_id(shared, &mut conn, prefix)?.ok_or_else(|| err(libc::ENOENT))
}

/// The identity of `prefix`'s marker; `None` without one.
fn marker_id(shared: &Shared, conn: &mut Conn, prefix: &str) -> io::Result<Option<FileId>> {
    let head = conn.head(&format!("{prefix}{DIR_MARK}")).map_err(to_io)?;
    Ok(head.value.map(|i| FileId {
        dev: shared.dev(),
        ino: fnv(&[prefix.as_bytes(), i.etag.unwrap_or_default().as_bytes()]),
    }))
}

/// Whether any object but the marker lies below `prefix`.
fn holds_objects(conn: &mut Conn, prefix: &str) -> io::Result<bool> {
    let page = conn.list(prefix, None, None, Some(2)).map_err(to_io)?.value;
    let marker = format!("{prefix}{DIR_MARK}");
    Ok(page.objects.iter().any(|o| o.key != marker) || !page.prefixes.is_empty())
}

/// Removes `prefix`'s marker when nothing else is below it.
pub(crate) fn remove_marker(shared: &Arc<Shared>, prefix: &str) -> io::Result<()> {
    let mut conn = shared.lease();
    if holds_objects(&mut conn, prefix)? {
        return Err(err(libc::ENOTEMPTY));
    }
    if marker_id(shared, &mut conn, prefix)?.is_none() {
        return Err(err(libc::ENOENT));
    }
    conn.delete(&format!("{prefix}{DIR_MARK}"))
        .map_err(to_io)
        .map(drop)
}

/// Calls `f` with each name directly below `prefix` (objects as files,
/// common prefixes as directories; markers left out), every page of the
/// LIST, until it returns false.
pub(crate) fn list_names(
    conn: &mut Conn,
    prefix: &str,
    mut f: impl FnMut(&str, Kind) -> bool,
) -> io::Result<()> {
    let mut token: Option<String> = None;
    loop {
        let page = conn
            .list(prefix, Some("/"), token.as_deref(), None)
            .map_err(to_io)?
            .value;
        let files = page.objects.iter().map(|o| (o.key.as_str(), Kind::File));
        let dirs = page.prefixes.iter().map(|p| (p.as_str(), Kind::Dir));
        for (key, kind) in files.chain(dirs) {
            let name = key.strip_prefix(prefix).unwrap_or(key);
            let name = name.strip_suffix('/').unwrap_or(name);
            if name.is_empty() || name == DIR_MARK {
                continue;
            }
            if !f(name, kind) {
                return Ok(());
            }
        }
        match page.next {
            Some(t) => token = Some(t),
            None => return Ok(()),
        }
    }
}

fn name_of(name: &OsStr) -> io::Result<&str> {
    use std::os::unix::ffi::OsStrExt;
    check_name(name.as_bytes())
}

impl S3Dir {
    /// Opens the target `s3://BUCKET/PREFIX` (the backend's bucket): one
    /// LIST of the prefix, so wrong credentials or a missing bucket fail
    /// here, before anything is made.
    pub(crate) fn open_target(shared: &Arc<Shared>, path: &Path) -> Result<S3Dir> {
        let fail = |e: io::Error| Error::io("open", path, e);
        let text = path.to_str().ok_or_else(|| fail(err(libc::EINVAL)))?;
        let t = Target::parse(text).map_err(|e| fail(io::Error::other(e.to_string())))?;
        if t.bucket() != shared.bucket() {
            let msg = format!("not the bucket {} the client reaches", shared.bucket());
            return Err(fail(io::Error::other(msg)));
        }
        let prefix = match t.prefix().trim_end_matches('/') {
            "" => String::new(),
            p => format!("{p}/"),
        };
        let mut conn = shared.lease();
        conn.list(&prefix, Some("/"), None, Some(1))
            .map_err(|e| Error::io("open", path, io::Error::other(e.to_string())))?;
        Ok(S3Dir {
            id: FileId {
                dev: shared.dev(),
                ino: fnv(&[prefix.as_bytes()]),
            },
            shared: Arc::clone(shared),
            path: PathBuf::from(format!("s3://{}/{prefix}", t.bucket())),
            prefix,
        })
    }

    pub(crate) fn at(&self) -> S3At {
        S3At {
            shared: Arc::clone(&self.shared),
            prefix: self.prefix.clone(),
        }
    }

    fn fail(&self, op: &'static str, name: &OsStr, e: io::Error) -> Error {
        Error::io(op, self.path.join(name), e)
    }

    fn child(&self, name: &str, id: FileId) -> S3Dir {
        S3Dir {
            shared: Arc::clone(&self.shared),
            prefix: format!("{}{name}/", self.prefix),
            path: self.path.join(name),
            id,
        }
    }

    /// An object's identity: its key and entity tag (a rewrite or a
    /// replacement under the key is another object).
    fn file_id(&self, key: &str, etag: Option<&str>) -> FileId {
        FileId {
            dev: self.shared.dev(),
            ino: fnv(&[key.as_bytes(), etag.unwrap_or_default().as_bytes()]),
        }
    }

    fn check_id(
        &self,
        op: &'static str,
        name: &OsStr,
        want: Option<FileId>,
        found: FileId,
    ) -> Result<()> {
        match want {
            Some(expected) if expected != found => Err(Error::refused(
                op,
                self.path.join(name),
                Refusal::Replaced { expected, found },
            )),
            _ => Ok(()),
        }
    }

    fn stat_name(&self, name: &str) -> io::Result<Option<EntryInfo>> {
        let mut conn = self.shared.lease();
        let key = format!("{}{name}", self.prefix);
        let info = |id, kind, size| EntryInfo {
            id,
            kind,
            size,
            links: 1,
            changed: (0, 0),
        };
        let sub = format!("{key}/");
        if let Some(id) = marker_id(&self.shared, &mut conn, &sub)? {
            return Ok(Some(info(id, Kind::Dir, 0)));
        }
        // A prefix someone else's objects make: a directory that is not
        // ioscale's (its identity the prefix alone).
        if holds_objects(&mut conn, &sub)? {
            return Ok(Some(info(self.file_id(&sub, None), Kind::Dir, 0)));
        }
        // The object itself: the first key of a LIST from it is the key
        // when it exists (every other key with it as a prefix sorts
        // after it). Not a HEAD: a file-backed store (s3s-fs) answers a
        // HEAD of a name that is also a prefix with an error.
        let page = conn.list(&key, None, None, Some(1)).map_err(to_io)?.value;
        if page.objects.iter().any(|o| o.key == key) {
            // Its entity tag from a HEAD (a LIST may leave it out).
            if let Some(o) = conn.head(&key).map_err(to_io)?.value {
                let id = self.file_id(&key, o.etag.as_deref());
                return Ok(Some(info(id, Kind::File, o.size)));
            }
        }
        Ok(None)
    }

    fn remove_rel(&self, rel: &Path, dir: bool, expected: Option<FileId>, rep: &mut RemovalReport) {
        let parent = rel.parent().filter(|p| !p.as_os_str().is_empty());
        let name = rel.file_name().unwrap_or_default();
        let holder = match parent {
            Some(p) => self.open_dir_path(p),
            None => self.try_clone(),
        };
        let r = holder.and_then(|d| match dir {
            true => d.rmdir_at(name, expected),
            false => d.unlink_at(name, expected),
        });
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

impl Dir for S3Dir {
    type File = S3File;
    type Lock = S3Lock;

    fn path(&self) -> &Path {
        &self.path
    }
    fn id(&self) -> FileId {
        self.id
    }
    fn try_clone(&self) -> Result<Self> {
        Ok(S3Dir {
            shared: Arc::clone(&self.shared),
            prefix: self.prefix.clone(),
            path: self.path.clone(),
            id: self.id,
        })
    }
    fn open_dir_at(&self, name: impl AsRef<OsStr>, expected: Option<FileId>) -> Result<Self> {
        let name = name.as_ref();
        let n = name_of(name).map_err(|e| self.fail("open", name, e))?;
        match self.stat_name(n).map_err(|e| self.fail("open", name, e))? {
            Some(i) if i.kind == Kind::Dir => {
                self.check_id("open", name, expected, i.id)?;
                Ok(self.child(n, i.id))
            }
            Some(i) => Err(Error::refused(
                "open",
                self.path.join(name),
                Refusal::WrongKind {
                    expected: Kind::Dir.name(),
                    found: i.kind.name(),
                },
            )),
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
    fn mkdir_at(&self, name: impl AsRef<OsStr>, _mode: u32) -> Result<Self> {
        let name = name.as_ref();
        let n = name_of(name).map_err(|e| self.fail("mkdir", name, e))?;
        let prefix = below(&self.prefix, n.as_bytes()).map_err(|e| self.fail("mkdir", name, e))?;
        let id = make_marker(&self.shared, &prefix).map_err(|e| self.fail("mkdir", name, e))?;
        Ok(self.child(n, id))
    }
    fn create_at(&self, name: impl AsRef<OsStr>, _mode: u32) -> Result<(S3File, FileId)> {
        self.create_with(
            name,
            OpenHow {
                read: true,
                write: true,
                create: crate::backend::Create::Exclusive,
                ..OpenHow::default()
            },
        )
    }
    fn create_with(&self, name: impl AsRef<OsStr>, how: OpenHow) -> Result<(S3File, FileId)> {
        let name = name.as_ref();
        let fail = |e| self.fail("create", name, e);
        if how.direct {
            return Err(fail(err(libc::EINVAL)));
        }
        let key = format!("{}{}", self.prefix, name_of(name).map_err(fail)?);
        // The name is taken now, as an exclusive open takes it.
        let mut conn = self.shared.lease();
        if !conn
            .put_if_absent(&key, b"")
            .map_err(to_io)
            .map_err(fail)?
            .value
        {
            return Err(fail(err(libc::EEXIST)));
        }
        drop(conn);
        let n = name_of(name).map_err(fail)?;
        let id = match self.stat_name(n).map_err(fail)? {
            Some(i) => i.id,
            None => return Err(fail(err(libc::ENOENT))),
        };
        let how = OpenHow {
            create: crate::backend::Create::IfMissing,
            ..how
        };
        let f = S3File::open(&self.shared, key, how).map_err(fail)?;
        Ok((f, id))
    }
    fn create_unnamed(&self, _how: OpenHow) -> Result<Option<S3File>> {
        Ok(None)
    }
    fn open_file_at(
        &self,
        name: impl AsRef<OsStr>,
        access: Access,
        expected: Option<FileId>,
    ) -> Result<(S3File, FileId)> {
        let name = name.as_ref();
        let n = name_of(name).map_err(|e| self.fail("open", name, e))?;
        let info = match self.stat_name(n).map_err(|e| self.fail("open", name, e))? {
            Some(i) if i.kind == Kind::File => i,
            Some(i) => {
                return Err(Error::refused(
                    "open",
                    self.path.join(name),
                    Refusal::WrongKind {
                        expected: Kind::File.name(),
                        found: i.kind.name(),
                    },
                ))
            }
            None => return Err(self.fail("open", name, err(libc::ENOENT))),
        };
        self.check_id("open", name, expected, info.id)?;
        let how = OpenHow {
            read: access != Access::Write,
            write: access != Access::Read,
            ..OpenHow::default()
        };
        let key = format!("{}{n}", self.prefix);
        let f = S3File::open(&self.shared, key, how).map_err(|e| self.fail("open", name, e))?;
        Ok((f, info.id))
    }
    fn stat_at(&self, name: impl AsRef<OsStr>) -> Result<Option<EntryInfo>> {
        let name = name.as_ref();
        let n = name_of(name).map_err(|e| self.fail("stat", name, e))?;
        self.stat_name(n).map_err(|e| self.fail("stat", name, e))
    }
    fn unlink_at(&self, name: impl AsRef<OsStr>, expected: Option<FileId>) -> Result<Removed> {
        let name = name.as_ref();
        let n = name_of(name).map_err(|e| self.fail("unlink", name, e))?;
        let info = match self
            .stat_name(n)
            .map_err(|e| self.fail("unlink", name, e))?
        {
            None => return Ok(Removed::Absent),
            Some(i) => i,
        };
        if info.kind != Kind::File {
            let found = info.kind.name();
            let r = Refusal::WrongKind {
                expected: Kind::File.name(),
                found,
            };
            return Err(Error::refused("unlink", self.path.join(name), r));
        }
        self.check_id("unlink", name, expected, info.id)?;
        let key = format!("{}{n}", self.prefix);
        self.shared
            .lease()
            .delete(&key)
            .map_err(|e| self.fail("unlink", name, to_io(e)))?;
        Ok(Removed::Removed)
    }
    fn rmdir_at(&self, name: impl AsRef<OsStr>, expected: Option<FileId>) -> Result<Removed> {
        let name = name.as_ref();
        let n = name_of(name).map_err(|e| self.fail("rmdir", name, e))?;
        let prefix = format!("{}{n}/", self.prefix);
        let mut conn = self.shared.lease();
        let id = marker_id(&self.shared, &mut conn, &prefix);
        let Some(id) = id.map_err(|e| self.fail("rmdir", name, e))? else {
            return match holds_objects(&mut conn, &prefix) {
                Ok(false) => Ok(Removed::Absent),
                // Someone else's prefix: never ioscale's to remove.
                Ok(true) => Err(self.fail("rmdir", name, err(libc::ENOTEMPTY))),
                Err(e) => Err(self.fail("rmdir", name, e)),
            };
        };
        drop(conn);
        self.check_id("rmdir", name, expected, id)?;
        remove_marker(&self.shared, &prefix).map_err(|e| self.fail("rmdir", name, e))?;
        Ok(Removed::Removed)
    }
    fn rename_at(&self, _from: impl AsRef<OsStr>, to: impl AsRef<OsStr>) -> Result<()> {
        Err(self.fail("rename", to.as_ref(), err(libc::EOPNOTSUPP)))
    }
    fn list(&self) -> Result<Vec<OsString>> {
        let mut out = Vec::new();
        let mut conn = self.shared.lease();
        list_names(&mut conn, &self.prefix, |n, _| {
            out.push(OsString::from(n));
            true
        })
        .map_err(|e| Error::io("list", &self.path, e))?;
        Ok(out)
    }
    fn replace_at(&self, name: impl AsRef<OsStr>, bytes: &[u8], _durable: bool) -> Result<()> {
        let name = name.as_ref();
        let n = name_of(name).map_err(|e| self.fail("replace", name, e))?;
        // A PUT replaces an object as one step: readers see the old or
        // the new, never a mix.
        let key = format!("{}{n}", self.prefix);
        self.shared
            .lease()
            .put(&key, bytes)
            .map_err(|e| self.fail("replace", name, to_io(e)))
            .map(drop)
    }
    fn read_small(&self, name: impl AsRef<OsStr>, limit: u64) -> Option<Vec<u8>> {
        let n = name_of(name.as_ref()).ok()?;
        let key = format!("{}{n}", self.prefix);
        let mut conn = self.shared.lease();
        let size = conn.head(&key).ok()?.value?.size;
        let mut out = vec![0u8; size.min(limit).min(1 << 20) as usize];
        if out.is_empty() {
            return Some(out);
        }
        let len = out.len() as u64;
        let got = conn.get(&key, Some((0, len)), &mut out).ok()?.value;
        out.truncate(got);
        Some(out)
    }
    fn temp_of(_name: &OsStr) -> Option<OsString> {
        // A PUT is one step: there are no temporaries.
        None
    }
    fn try_lock(
        &self,
        name: impl AsRef<OsStr>,
        command: &str,
        _opts: LockOptions,
    ) -> Result<Locked<S3Lock>> {
        let name = name.as_ref();
        let n = name_of(name).map_err(|e| self.fail("lock", name, e))?;
        let key = format!("{}{n}", self.prefix);
        let body = format!("pid {}\ncommand {command}\n", std::process::id());
        let put = self.shared.lease().put_if_absent(&key, body.as_bytes());
        match put.map_err(|e| self.fail("lock", name, to_io(e)))?.value {
            true => Ok(Locked::Acquired(S3Lock(()))),
            // Another host's process, perhaps: nothing here can tell.
            false => Ok(Locked::Held {
                holder: None,
                liveness: Liveness::Unknown,
            }),
        }
    }
    fn unlock(&self, lock: S3Lock, name: impl AsRef<OsStr>) -> Result<()> {
        let S3Lock(()) = lock;
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
            self.remove_rel(f, false, want(f), &mut rep);
        }
        for d in &removal.dirs {
            self.remove_rel(d, true, want(d), &mut rep);
        }
        rep
    }
    fn writable(&self) -> bool {
        true
    }
}
