//! The S3 backend: an object store behind the same table as POSIX, so the
//! loops, the data set and the metadata tree run on a bucket unchanged.
//!
//! What maps to what (docs/s3.md has the whole table):
//!
//! - a directory is a key prefix; one ioscale made holds a marker object
//!   ([`DIR_MARK`]) whose entity tag is its identity, so a prefix
//!   replaced by someone else's is refused as a swapped directory;
//! - a file is an object: [`Dir::create_at`] a conditional PUT
//!   (`If-None-Match: *`), a stat a HEAD, an unlink a DELETE, a listing a
//!   paginated LIST with the `/` delimiter;
//! - an open file is an upload (one PUT, or a multipart upload of the
//!   writes' parts completed at close) or a download (a ranged GET per
//!   read);
//! - what an object store cannot do is said by [`CAPABILITIES`] (no
//!   directories of their own, no rename, no O_DIRECT, no flush, no
//!   symbolic links, permission bits or extended attributes, no writes in
//!   place, multipart parts of at least 5 MiB), so such a workload is
//!   refused before anything is made.
//!
//! Connections: every handle shares one pool of [`objstore::Conn`]s; an
//! open file holds one for its life and gives it back when dropped, so a
//! worker's requests reuse one connection and workers never share one.

use std::ffi::CStr;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use objstore::{Client, Conn};

use super::{Backend, Capabilities, EntryInfo, EntryStat, Kind, OpenHow, Result};
use crate::registry::{DataEngine, Engines, MetaEngine, SyncEngine, SyncMeta};

mod dir;
mod file;
#[cfg(test)]
mod tests;

pub use dir::{S3Dir, S3Lock};
pub use file::S3File;

/// The marker object of a prefix ioscale made (`PREFIX/NAME/.ioscale-dir`):
/// what makes the prefix a directory of ioscale's, and whose entity tag
/// is the directory's identity. Listings leave it out.
pub const DIR_MARK: &str = ".ioscale-dir";

/// The smallest multipart part S3 takes (all but the last).
pub const MIN_PART: u64 = 5 << 20;

/// What an object store can do.
pub static CAPABILITIES: Capabilities = Capabilities {
    name: "s3",
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
    min_part: MIN_PART,
    page_cache: false,
};

/// The S3 backend: a bucket's client and the pool of its connections.
#[derive(Debug, Clone)]
pub struct S3 {
    shared: Arc<Shared>,
}

#[derive(Debug)]
pub(crate) struct Shared {
    client: Client,
    pool: Mutex<Vec<Conn>>,
    /// The store's "device" number: a hash of the endpoint and bucket.
    dev: u64,
    seeds: AtomicU64,
}

/// A connection taken from the pool, given back when dropped.
#[derive(Debug)]
pub(crate) struct Lease {
    shared: Arc<Shared>,
    conn: Option<Conn>,
}

impl std::ops::Deref for Lease {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn.as_ref().expect("a leased connection")
    }
}

impl std::ops::DerefMut for Lease {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().expect("a leased connection")
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let (Some(c), Ok(mut pool)) = (self.conn.take(), self.shared.pool.lock()) {
            pool.push(c);
        }
    }
}

impl Shared {
    pub(crate) fn lease(self: &Arc<Self>) -> Lease {
        let pooled = self.pool.lock().ok().and_then(|mut p| p.pop());
        let conn = pooled.unwrap_or_else(|| {
            self.client
                .connect(self.seeds.fetch_add(1, Ordering::Relaxed))
        });
        Lease {
            shared: Arc::clone(self),
            conn: Some(conn),
        }
    }

    pub(crate) fn dev(&self) -> u64 {
        self.dev
    }

    pub(crate) fn bucket(&self) -> &str {
        self.client.bucket()
    }
}

impl S3 {
    /// The backend of `client`'s bucket.
    pub fn new(client: Client) -> S3 {
        let dev = fnv(&[client.describe().as_bytes(), client.bucket().as_bytes()]);
        S3 {
            shared: Arc::new(Shared {
                client,
                pool: Mutex::new(Vec::new()),
                dev,
                seeds: AtomicU64::new(1),
            }),
        }
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.shared.client
    }
}

/// FNV-1a over `parts`: identities from keys and entity tags.
pub(crate) fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

pub(crate) fn err(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

/// A store's failure as the loops see it: a missing object is ENOENT, a
/// failed condition EEXIST, a refused signature EACCES (each with the
/// store's line where the errno has none), anything else the line itself.
pub(crate) fn to_io(e: objstore::Error) -> io::Error {
    if e.is_not_found() && !e.is_missing_bucket() {
        err(libc::ENOENT)
    } else if e.is_precondition_failed() {
        err(libc::EEXIST)
    } else if e.is_auth() {
        io::Error::new(io::ErrorKind::PermissionDenied, e.to_string())
    } else {
        io::Error::other(e.to_string())
    }
}

/// One name of a key: not empty, no `/`, not `.` or `..`, no NUL.
pub(crate) fn check_name(name: &[u8]) -> io::Result<&str> {
    let name = name.strip_suffix(&[0]).unwrap_or(name);
    let s = std::str::from_utf8(name).map_err(|_| err(libc::EINVAL))?;
    if s.is_empty() || s == "." || s == ".." || s.contains('/') || s.contains('\0') {
        return Err(err(libc::EINVAL));
    }
    Ok(s)
}

/// `prefix` with the relative path `rel` (`a/b`, `.` components skipped)
/// appended as a prefix (ending with `/`); `..` refused.
pub(crate) fn below(prefix: &str, rel: &[u8]) -> io::Result<String> {
    let rel = rel.strip_suffix(&[0]).unwrap_or(rel);
    let mut out = prefix.to_string();
    for c in rel
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
    {
        out.push_str(check_name(c)?);
        out.push('/');
    }
    Ok(out)
}

/// A loop handle: a key prefix of the bucket (empty or ending with `/`).
#[derive(Debug)]
pub struct S3At {
    shared: Arc<Shared>,
    prefix: String,
}

impl S3At {
    fn key(&self, name: &[u8]) -> io::Result<String> {
        Ok(format!("{}{}", self.prefix, check_name(name)?))
    }
}

impl Backend for S3 {
    type Dir = S3Dir;
    type At = S3At;
    type File = S3File;
    type Flags = OpenHow;

    fn capabilities() -> &'static Capabilities {
        &CAPABILITIES
    }

    fn open_target(&self, path: &Path) -> Result<S3Dir> {
        S3Dir::open_target(&self.shared, path)
    }
    fn retries(&self) -> Option<objstore::RetryTally> {
        Some(self.shared.client.tally())
    }
    fn stat_path(path: &Path, _follow: bool) -> Result<Option<EntryInfo>> {
        Err(super::Error::io("stat", path, err(libc::EOPNOTSUPP)))
    }
    fn open_path(_path: &Path, _how: OpenHow) -> io::Result<S3File> {
        Err(err(libc::EOPNOTSUPP))
    }
    fn flags(how: OpenHow) -> OpenHow {
        how
    }
    fn at_of(dir: &S3Dir) -> io::Result<S3At> {
        Ok(dir.at())
    }
    fn at_path(_path: &Path) -> io::Result<S3At> {
        Err(err(libc::EOPNOTSUPP))
    }
    fn dup_at(at: &S3At) -> io::Result<S3At> {
        Ok(S3At {
            shared: Arc::clone(&at.shared),
            prefix: at.prefix.clone(),
        })
    }
    fn open_beneath(at: &S3At, rel: &[u8]) -> io::Result<S3At> {
        Ok(S3At {
            shared: Arc::clone(&at.shared),
            prefix: below(&at.prefix, rel)?,
        })
    }
    fn mkdir_beneath(at: &S3At, rel: &[u8], _mode: u32) -> io::Result<()> {
        let prefix = below(&at.prefix, rel)?;
        dir::make_marker(&at.shared, &prefix).map(drop)
    }
    fn open_data(at: &S3At, name: &CStr, how: OpenHow) -> io::Result<S3File> {
        S3File::open(&at.shared, at.key(name.to_bytes())?, how)
    }
    fn open(at: &S3At, name: &[u8], flags: OpenHow, _mode: u32) -> io::Result<S3File> {
        S3File::open(&at.shared, at.key(name)?, flags)
    }
    fn lstat(at: &S3At, name: &[u8]) -> io::Result<Kind> {
        Self::stat(at, name).map(|s| s.kind)
    }
    fn changed(_at: &S3At, _name: &[u8]) -> io::Result<(i64, i64)> {
        // An object has no status-change time ioscale reads.
        Err(err(libc::EOPNOTSUPP))
    }
    fn stat(at: &S3At, name: &[u8]) -> io::Result<EntryStat> {
        let key = at.key(name)?;
        let info = at.shared.lease().head(&key).map_err(to_io)?.value;
        let info = info.ok_or_else(|| err(libc::ENOENT))?;
        // The store's Last-Modified (whole seconds); a store that sends
        // none has no time to give, and a made-up one would be believed.
        let modified = info.modified.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{key}: the store's HEAD answer has no Last-Modified date"),
            )
        })?;
        Ok(EntryStat {
            kind: Kind::File,
            size: info.size,
            modified: (modified, 0),
        })
    }
    fn chmod(_at: &S3At, _name: &[u8], _mode: u32) -> io::Result<()> {
        Err(err(libc::EOPNOTSUPP))
    }
    fn unlink(at: &S3At, name: &[u8]) -> io::Result<()> {
        let key = at.key(name)?;
        at.shared.lease().delete(&key).map_err(to_io).map(drop)
    }
    fn rmdir(at: &S3At, name: &[u8]) -> io::Result<()> {
        let prefix = below(&at.prefix, name)?;
        dir::remove_marker(&at.shared, &prefix)
    }
    fn mkdir(at: &S3At, name: &[u8], _mode: u32) -> io::Result<()> {
        let prefix = below(&at.prefix, name)?;
        dir::make_marker(&at.shared, &prefix).map(drop)
    }
    fn rename(_at: &S3At, _from: &[u8], _to: &[u8]) -> io::Result<()> {
        // A copy and a delete is not an atomic rename.
        Err(err(libc::EOPNOTSUPP))
    }
    fn symlink(_target: &[u8], _at: &S3At, _link: &[u8]) -> io::Result<()> {
        Err(err(libc::EOPNOTSUPP))
    }
    fn set_xattr(_at: &S3At, _name: &[u8], _key: &CStr, _value: &[u8]) -> io::Result<()> {
        Err(err(libc::EOPNOTSUPP))
    }
    fn get_xattr(_at: &S3At, _name: &[u8], _key: &CStr, _out: &mut [u8]) -> io::Result<usize> {
        Err(err(libc::EOPNOTSUPP))
    }
    fn read_dir(at: &S3At, mut f: impl FnMut(&[u8]) -> bool) -> io::Result<()> {
        Self::read_dir_typed(at, |name, _| f(name))
    }
    fn read_dir_typed(at: &S3At, mut f: impl FnMut(&[u8], Option<Kind>) -> bool) -> io::Result<()> {
        let mut conn = at.shared.lease();
        dir::list_names(&mut conn, &at.prefix, |name, kind| {
            let mut n = Vec::with_capacity(name.len() + 1);
            n.extend_from_slice(name.as_bytes());
            n.push(0);
            f(&n, Some(kind))
        })
    }
    fn sync_all(_at: &S3At) -> io::Result<()> {
        // Every object is stable when its PUT or upload completes.
        Ok(())
    }
}

static S3_DATA: &[&dyn DataEngine<S3>] = &[&SyncEngine];
static S3_META: &[&dyn MetaEngine<S3>] = &[&SyncMeta];

impl Engines for S3 {
    fn data_engines() -> &'static [&'static dyn DataEngine<S3>] {
        S3_DATA
    }
    fn meta_engines() -> &'static [&'static dyn MetaEngine<S3>] {
        S3_META
    }
}
