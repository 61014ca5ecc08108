//! The pass-through file system: every request is served by the matching
//! system call on a SOURCE directory, with the [`Injector`]'s delays, cap
//! and faults applied on the way back.
//!
//! Inode numbers are our own, mapped to paths under SOURCE (a map behind a
//! mutex: this is a test tool, and the lock is never held across I/O or a
//! sleep). File handles map to real open files, so reads and writes are
//! pread/pwrite on the real file and never touch a shared lock for longer
//! than a map lookup. Every handler runs on the fuser service thread that
//! received the request and sleeps there, so N service threads serve N
//! requests at once.

use std::collections::HashMap;
use std::ffi::{CString, OsStr, OsString};
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr,
    Request, TimeOrNow, WriteFlags,
};

use crate::inject::{Dir, Injector};

/// Options of the file system itself (the injector holds the rest).
#[derive(Debug, Clone)]
pub struct FsOptions {
    /// Open files with FOPEN_DIRECT_IO, so every read and write reaches us.
    pub direct_io: bool,
    /// Open files with FOPEN_KEEP_CACHE (without direct I/O): the kernel
    /// keeps their cached pages across opens.
    pub keep_cache: bool,
    /// How long the kernel may cache attributes and names.
    pub attr_ttl: Duration,
    /// Largest write request to ask the kernel for (it may give less).
    pub max_write: u32,
    /// Print one line per data request to stderr (for debugging a client).
    pub trace: bool,
    /// Refuse every rename with ENOSYS, as some FUSE and object-store
    /// gateways do.
    pub no_rename: bool,
}

/// An open file.
struct Handle {
    file: File,
    /// Whether faults apply to this file (path filter decided at open).
    faulty: bool,
}

/// A directory listing taken at opendir, so entries removed while a
/// client iterates (ioscale's cleanup does exactly that) are not skipped.
struct DirList {
    entries: Vec<(u64, FileType, OsString)>,
}

#[derive(Default)]
struct Inodes {
    paths: HashMap<u64, PathBuf>,
    inos: HashMap<PathBuf, u64>,
    next: u64,
}

/// The pass-through file system.
pub struct PassFs {
    root: PathBuf,
    opts: FsOptions,
    inj: Arc<Injector>,
    inodes: Mutex<Inodes>,
    files: RwLock<HashMap<u64, Arc<Handle>>>,
    dirs: Mutex<HashMap<u64, Arc<DirList>>>,
    next_fh: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn errno(e: io::Error) -> Errno {
    Errno::from(e)
}

fn last_errno() -> Errno {
    errno(io::Error::last_os_error())
}

fn cstr(p: &Path) -> Result<CString, Errno> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| Errno::EINVAL)
}

fn time_of(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + Duration::from_nanos(nsecs as u64)
    }
}

fn kind_of(m: &Metadata) -> FileType {
    FileType::from_std(m.file_type()).unwrap_or(FileType::RegularFile)
}

fn timespec(t: Option<TimeOrNow>) -> libc::timespec {
    match t {
        None => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        Some(TimeOrNow::Now) => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_NOW,
        },
        Some(TimeOrNow::SpecificTime(t)) => {
            let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
            libc::timespec {
                tv_sec: d.as_secs() as libc::time_t,
                tv_nsec: d.subsec_nanos() as libc::c_long,
            }
        }
    }
}

impl PassFs {
    /// A file system serving `root` (which must be an existing directory).
    pub fn new(root: PathBuf, opts: FsOptions, inj: Arc<Injector>) -> PassFs {
        let mut inodes = Inodes {
            next: 2,
            ..Inodes::default()
        };
        inodes.paths.insert(1, root.clone());
        inodes.inos.insert(root.clone(), 1);
        PassFs {
            root,
            opts,
            inj,
            inodes: Mutex::new(inodes),
            files: RwLock::new(HashMap::new()),
            dirs: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
        }
    }

    fn path_of(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
        lock(&self.inodes)
            .paths
            .get(&ino.0)
            .cloned()
            .ok_or(Errno::ENOENT)
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<PathBuf, Errno> {
        if name.as_bytes().contains(&b'/') || name == ".." || name == "." {
            return Err(Errno::EINVAL);
        }
        Ok(self.path_of(parent)?.join(name))
    }

    /// mknod and mkdir: counts the call, runs `make` on the new child's
    /// path (a libc call returning 0 or -1 with errno) and replies with
    /// its entry.
    fn make_child(
        &self,
        parent: INodeNo,
        name: &OsStr,
        reply: ReplyEntry,
        make: impl FnOnce(&CString) -> libc::c_int,
    ) {
        self.meta_child(parent, name);
        let (p, c) = match self
            .child(parent, name)
            .and_then(|p| cstr(&p).map(|c| (p, c)))
        {
            Ok(x) => x,
            Err(e) => return reply.error(e),
        };
        if make(&c) != 0 {
            return reply.error(last_errno());
        }
        self.entry(&p, reply);
    }

    /// unlink and rmdir: `remove` on the child's path, then forgets its
    /// inode.
    fn remove_child(
        &self,
        parent: INodeNo,
        name: &OsStr,
        reply: ReplyEmpty,
        remove: fn(&Path) -> io::Result<()>,
    ) {
        match self.child(parent, name) {
            Ok(p) => match remove(&p) {
                Ok(()) => {
                    self.forget_path(&p);
                    reply.ok()
                }
                Err(e) => reply.error(errno(e)),
            },
            Err(e) => reply.error(e),
        }
    }

    /// The path of `ino` and an attribute `name`, both as C strings.
    fn path_and_name(&self, ino: INodeNo, name: &OsStr) -> Result<(CString, CString), Errno> {
        let p = self.path_of(ino).and_then(|p| cstr(&p))?;
        let n = CString::new(name.as_bytes()).map_err(|_| Errno::EINVAL)?;
        Ok((p, n))
    }

    /// A read or write of `asked` bytes at `offset` on handle `fh`: counts
    /// it, lets the injector refuse or shorten it, runs `io` on the file
    /// with the bytes admitted, counts what it served and holds the reply
    /// until the injected latency and bandwidth allow.
    fn data_request(
        &self,
        dir: Dir,
        fh: FileHandle,
        offset: u64,
        asked: usize,
        io: impl FnOnce(&File, usize) -> io::Result<usize>,
    ) -> Result<usize, Errno> {
        let arrived = Instant::now();
        let c = &self.inj.counters;
        let (calls, bytes, what) = match dir {
            Dir::Read => (&c.reads, &c.read_bytes, "read"),
            Dir::Write => (&c.writes, &c.write_bytes, "write"),
        };
        calls.fetch_add(1, Ordering::Relaxed);
        let h = self.handle(fh)?;
        let take = match self.inj.admit(dir, asked, h.faulty) {
            Ok(n) => n,
            Err(r) => {
                self.inj.serve_data(arrived, 0);
                return Err(Errno::from_i32(r.errno()));
            }
        };
        match io(&h.file, take) {
            Ok(n) => {
                if self.opts.trace {
                    eprintln!(
                        "{what} fh {} offset {offset} asked {asked} served {n}",
                        fh.0
                    );
                }
                bytes.fetch_add(n as u64, Ordering::Relaxed);
                self.inj.serve_data(arrived, n as u64);
                Ok(n)
            }
            Err(e) => {
                self.inj.serve_data(arrived, 0);
                Err(errno(e))
            }
        }
    }

    fn ino_for(&self, path: &Path) -> u64 {
        let mut i = lock(&self.inodes);
        if let Some(&n) = i.inos.get(path) {
            return n;
        }
        let n = i.next;
        i.next += 1;
        i.paths.insert(n, path.to_path_buf());
        i.inos.insert(path.to_path_buf(), n);
        n
    }

    fn forget_path(&self, path: &Path) {
        let mut i = lock(&self.inodes);
        if let Some(n) = i.inos.remove(path) {
            i.paths.remove(&n);
        }
    }

    /// Moves the mapping of `from` (and of everything below it) to `to`.
    fn moved(&self, from: &Path, to: &Path) {
        let mut i = lock(&self.inodes);
        if let Some(n) = i.inos.remove(to) {
            i.paths.remove(&n);
        }
        let affected: Vec<(PathBuf, u64)> = i
            .inos
            .iter()
            .filter(|(p, _)| p.starts_with(from))
            .map(|(p, &n)| (p.clone(), n))
            .collect();
        for (p, n) in affected {
            let rest = p.strip_prefix(from).unwrap_or(Path::new(""));
            let np = if rest.as_os_str().is_empty() {
                to.to_path_buf()
            } else {
                to.join(rest)
            };
            i.inos.remove(&p);
            i.inos.insert(np.clone(), n);
            i.paths.insert(n, np);
        }
    }

    fn attr(&self, ino: u64, m: &Metadata) -> FileAttr {
        FileAttr {
            ino: INodeNo(ino),
            size: m.size(),
            blocks: m.blocks(),
            atime: time_of(m.atime(), m.atime_nsec()),
            mtime: time_of(m.mtime(), m.mtime_nsec()),
            ctime: time_of(m.ctime(), m.ctime_nsec()),
            crtime: UNIX_EPOCH,
            kind: kind_of(m),
            perm: (m.mode() & 0o7777) as u16,
            nlink: m.nlink() as u32,
            uid: m.uid(),
            gid: m.gid(),
            rdev: m.rdev() as u32,
            blksize: m.blksize() as u32,
            flags: 0,
        }
    }

    fn handle(&self, fh: FileHandle) -> Result<Arc<Handle>, Errno> {
        self.files
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&fh.0)
            .cloned()
            .ok_or(Errno::EBADF)
    }

    fn faulty(&self, path: &Path) -> bool {
        if !self.inj.faults.any() {
            return false;
        }
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        self.inj.faults.applies_to(&rel.to_string_lossy())
    }

    fn add_handle(&self, file: File, path: &Path) -> u64 {
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let h = Arc::new(Handle {
            file,
            faulty: self.faulty(path),
        });
        self.files
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(fh, h);
        fh
    }

    fn fopen_flags(&self) -> FopenFlags {
        if self.opts.direct_io {
            // Parallel direct writes: the kernel would otherwise take the
            // inode lock per write and serialise writers of one file.
            FopenFlags::FOPEN_DIRECT_IO | FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES
        } else if self.opts.keep_cache {
            FopenFlags::FOPEN_KEEP_CACHE
        } else {
            FopenFlags::empty()
        }
    }

    /// Applies the metadata delay and counts the request (a request with
    /// no name pays no delay when the delay is for some paths only).
    fn meta(&self) {
        self.meta_on(None);
    }

    /// [`Self::meta`] for a request on the name at `path`, or on no name.
    fn meta_on(&self, path: Option<&Path>) {
        self.inj.counters.meta.fetch_add(1, Ordering::Relaxed);
        let d = self.inj.timing.meta_delay;
        let applies = match (&self.inj.timing.meta_delay_path_substr, path) {
            (None, _) => true,
            (Some(s), Some(p)) => p
                .strip_prefix(&self.root)
                .unwrap_or(p)
                .to_string_lossy()
                .contains(s.as_str()),
            (Some(_), None) => false,
        };
        if applies && !d.is_zero() {
            std::thread::sleep(d);
        }
    }

    /// The injected service time of an fsync, of a file or a directory.
    fn fsync_delay(&self) {
        let d = self.inj.timing.fsync_delay;
        if !d.is_zero() {
            std::thread::sleep(d);
        }
    }

    /// [`Self::meta_on`] for the name `name` in directory `parent`.
    fn meta_child(&self, parent: INodeNo, name: &OsStr) {
        let p = self.child(parent, name).ok();
        self.meta_on(p.as_deref());
    }

    fn entry(&self, path: &Path, reply: ReplyEntry) {
        match std::fs::symlink_metadata(path) {
            Ok(m) => {
                let ino = self.ino_for(path);
                reply.entry(&self.opts.attr_ttl, &self.attr(ino, &m), Generation(0));
            }
            Err(e) => reply.error(errno(e)),
        }
    }

    /// Open flags as passed on to the real open(2): the client's flags
    /// without O_DIRECT (our buffers are not aligned, and the point is to
    /// pass data through, not to test SOURCE's O_DIRECT support).
    fn open_options(flags: i32) -> OpenOptions {
        let acc = flags & libc::O_ACCMODE;
        let mut o = OpenOptions::new();
        o.read(acc == libc::O_RDONLY || acc == libc::O_RDWR)
            .write(acc == libc::O_WRONLY || acc == libc::O_RDWR)
            .custom_flags(
                flags & !(libc::O_ACCMODE | libc::O_DIRECT | libc::O_NOCTTY | libc::O_CREAT),
            );
        o
    }

    fn xattr_reply(r: isize, size: u32, buf: &[u8], reply: ReplyXattr) {
        if r < 0 {
            reply.error(last_errno());
        } else if size == 0 {
            reply.size(r as u32);
        } else {
            reply.data(&buf[..r as usize]);
        }
    }
}

impl Filesystem for PassFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        if let Err(nearest) = config.set_max_write(self.opts.max_write) {
            let _ = config.set_max_write(nearest);
        }
        // Allow many asynchronous requests (reads with FUSE_ASYNC_READ) in
        // flight at once, so the kernel's background limit does not cap
        // the concurrency this file system exists to show.
        let _ = config.set_max_background(256);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        self.inj.counters.request("FUSE_LOOKUP");
        self.meta_child(parent, name);
        match self.child(parent, name) {
            Ok(p) => self.entry(&p, reply),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        self.inj.counters.request("FUSE_GETATTR");
        self.meta();
        let m = match fh.map(|f| self.handle(f)) {
            Some(Ok(h)) => h.file.metadata(),
            _ => match self.path_of(ino) {
                Ok(p) => std::fs::symlink_metadata(p),
                Err(e) => return reply.error(e),
            },
        };
        match m {
            Ok(m) => reply.attr(&self.opts.attr_ttl, &self.attr(ino.0, &m)),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        self.inj.counters.request("FUSE_SETATTR");
        self.meta();
        let path = match self.path_of(ino) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let c = match cstr(&path) {
            Ok(c) => c,
            Err(e) => return reply.error(e),
        };
        if let Some(mode) = mode {
            // SAFETY: `c` is a valid NUL-terminated path.
            if unsafe { libc::chmod(c.as_ptr(), mode & 0o7777) } != 0 {
                return reply.error(last_errno());
            }
        }
        if uid.is_some() || gid.is_some() {
            let u = uid.unwrap_or(u32::MAX);
            let g = gid.unwrap_or(u32::MAX);
            // SAFETY: as above; -1 (u32::MAX) leaves an id unchanged.
            if unsafe { libc::lchown(c.as_ptr(), u, g) } != 0 {
                return reply.error(last_errno());
            }
        }
        if let Some(size) = size {
            let r = match fh.map(|f| self.handle(f)) {
                Some(Ok(h)) => h.file.set_len(size),
                _ => OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .and_then(|f| f.set_len(size)),
            };
            if let Err(e) = r {
                return reply.error(errno(e));
            }
        }
        if atime.is_some() || mtime.is_some() {
            let ts = [timespec(atime), timespec(mtime)];
            // SAFETY: `c` is valid and `ts` holds two timespecs.
            let r = unsafe {
                libc::utimensat(
                    libc::AT_FDCWD,
                    c.as_ptr(),
                    ts.as_ptr(),
                    libc::AT_SYMLINK_NOFOLLOW,
                )
            };
            if r != 0 {
                return reply.error(last_errno());
            }
        }
        match std::fs::symlink_metadata(&path) {
            Ok(m) => reply.attr(&self.opts.attr_ttl, &self.attr(ino.0, &m)),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        self.inj.counters.request("FUSE_READLINK");
        self.meta();
        match self.path_of(ino).map(std::fs::read_link) {
            Ok(Ok(t)) => reply.data(t.as_os_str().as_bytes()),
            Ok(Err(e)) => reply.error(errno(e)),
            Err(e) => reply.error(e),
        }
    }

    fn mknod(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        self.inj.counters.request("FUSE_MKNOD");
        // SAFETY: valid path; mode and rdev come from the kernel.
        self.make_child(parent, name, reply, |c| unsafe {
            libc::mknod(c.as_ptr(), mode & !umask, rdev as libc::dev_t)
        });
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        self.inj.counters.request("FUSE_MKDIR");
        // SAFETY: valid path.
        self.make_child(parent, name, reply, |c| unsafe {
            libc::mkdir(c.as_ptr(), (mode & !umask) as libc::mode_t)
        });
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.inj.counters.request("FUSE_UNLINK");
        self.meta_child(parent, name);
        self.remove_child(parent, name, reply, |p| std::fs::remove_file(p));
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.inj.counters.request("FUSE_RMDIR");
        self.meta();
        self.remove_child(parent, name, reply, |p| std::fs::remove_dir(p));
    }

    fn symlink(
        &self,
        _req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        self.inj.counters.request("FUSE_SYMLINK");
        self.meta();
        match self.child(parent, link_name) {
            Ok(p) => match std::os::unix::fs::symlink(target, &p) {
                Ok(()) => self.entry(&p, reply),
                Err(e) => reply.error(errno(e)),
            },
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        // The kernel sends RENAME2 only for a rename with flags.
        self.inj.counters.request(if flags.is_empty() {
            "FUSE_RENAME"
        } else {
            "FUSE_RENAME2"
        });
        self.meta();
        if self.opts.no_rename {
            return reply.error(Errno::ENOSYS);
        }
        let (from, to) = match (self.child(parent, name), self.child(newparent, newname)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return reply.error(e),
        };
        let (cf, ct) = match (cstr(&from), cstr(&to)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return reply.error(e),
        };
        // SAFETY: both paths are valid; flags come from the kernel.
        let r = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                cf.as_ptr(),
                libc::AT_FDCWD,
                ct.as_ptr(),
                flags.bits(),
            )
        };
        if r != 0 {
            return reply.error(last_errno());
        }
        if flags.contains(RenameFlags::RENAME_EXCHANGE) {
            // Swap the two mappings through a name that cannot exist.
            let tmp = from.with_file_name(".ioscale-testfs-exchange\0");
            self.moved(&from, &tmp);
            self.moved(&to, &from);
            self.moved(&tmp, &to);
        } else {
            self.moved(&from, &to);
        }
        reply.ok();
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        self.inj.counters.request("FUSE_LINK");
        self.meta();
        let (src, dst) = match (self.path_of(ino), self.child(newparent, newname)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return reply.error(e),
        };
        match std::fs::hard_link(&src, &dst) {
            Ok(()) => self.entry(&dst, reply),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        self.inj.counters.request("FUSE_OPEN");
        self.meta();
        let path = match self.path_of(ino) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        match Self::open_options(flags.0).open(&path) {
            Ok(f) => {
                let fh = self.add_handle(f, &path);
                reply.opened(FileHandle(fh), self.fopen_flags());
            }
            Err(e) => reply.error(errno(e)),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.inj.counters.request("FUSE_READ");
        let mut buf = Vec::new();
        let r = self.data_request(Dir::Read, fh, offset, size as usize, |f, take| {
            buf.resize(take, 0);
            f.read_at(&mut buf, offset)
        });
        match r {
            Ok(n) => reply.data(&buf[..n]),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        self.inj.counters.request("FUSE_WRITE");
        let r = self.data_request(Dir::Write, fh, offset, data.len(), |f, take| {
            f.write_at(&data[..take], offset)
        });
        match r {
            Ok(n) => reply.written(n as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        self.inj.counters.request("FUSE_FLUSH");
        // Data is written through on every request; close(2) has nothing
        // left to push, only the metadata delay to pay.
        self.meta();
        match self.handle(fh) {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.inj.counters.request("FUSE_RELEASE");
        self.files
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&fh.0);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.inj.counters.request("FUSE_FSYNC");
        self.inj.counters.fsyncs.fetch_add(1, Ordering::Relaxed);
        let h = match self.handle(fh) {
            Ok(h) => h,
            Err(e) => return reply.error(e),
        };
        self.fsync_delay();
        if self.inj.fsync_fails(h.faulty) {
            return reply.error(Errno::EIO);
        }
        let r = if datasync {
            h.file.sync_data()
        } else {
            h.file.sync_all()
        };
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.inj.counters.request("FUSE_OPENDIR");
        self.meta();
        let path = match self.path_of(ino) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let rd = match std::fs::read_dir(&path) {
            Ok(rd) => rd,
            Err(e) => return reply.error(errno(e)),
        };
        let parent_ino = match path.parent() {
            Some(pp) if path != self.root => self.ino_for(pp),
            _ => 1,
        };
        let mut entries = vec![
            (ino.0, FileType::Directory, OsString::from(".")),
            (parent_ino, FileType::Directory, OsString::from("..")),
        ];
        for e in rd.flatten() {
            let kind = e
                .file_type()
                .ok()
                .and_then(FileType::from_std)
                .unwrap_or(FileType::RegularFile);
            let n = self.ino_for(&e.path());
            entries.push((n, kind, e.file_name()));
        }
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        lock(&self.dirs).insert(fh, Arc::new(DirList { entries }));
        reply.opened(FileHandle(fh), FopenFlags::empty());
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        self.inj.counters.request("FUSE_READDIR");
        self.meta();
        let Some(list) = lock(&self.dirs).get(&fh.0).cloned() else {
            return reply.error(Errno::EBADF);
        };
        for (i, (n, kind, name)) in list.entries.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*n), (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.inj.counters.request("FUSE_RELEASEDIR");
        lock(&self.dirs).remove(&fh.0);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.inj.counters.request("FUSE_FSYNCDIR");
        self.inj.counters.fsyncs.fetch_add(1, Ordering::Relaxed);
        self.fsync_delay();
        match self.path_of(ino).map(File::open) {
            Ok(Ok(f)) => match f.sync_all() {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(errno(e)),
            },
            Ok(Err(e)) => reply.error(errno(e)),
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        self.inj.counters.request("FUSE_STATFS");
        self.meta();
        let c = match cstr(&self.root) {
            Ok(c) => c,
            Err(e) => return reply.error(e),
        };
        // SAFETY: zeroed statvfs is a valid out-parameter; `c` is valid.
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
            return reply.error(last_errno());
        }
        reply.statfs(
            s.f_blocks,
            s.f_bfree,
            s.f_bavail,
            s.f_files,
            s.f_ffree,
            s.f_bsize as u32,
            s.f_namemax as u32,
            s.f_frsize as u32,
        );
    }

    fn setxattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        self.inj.counters.request("FUSE_SETXATTR");
        self.meta();
        let (p, n) = match self.path_and_name(ino, name) {
            Ok(x) => x,
            Err(e) => return reply.error(e),
        };
        // SAFETY: valid strings; `value` is a live slice of its length.
        let r = unsafe {
            libc::lsetxattr(
                p.as_ptr(),
                n.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
                flags,
            )
        };
        if r != 0 {
            reply.error(last_errno());
        } else {
            reply.ok();
        }
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        self.inj.counters.request("FUSE_GETXATTR");
        self.meta();
        let (p, n) = match self.path_and_name(ino, name) {
            Ok(x) => x,
            Err(e) => return reply.error(e),
        };
        let mut buf = vec![0u8; size as usize];
        // SAFETY: valid strings; `buf` has `size` bytes (0 asks for the size).
        let r = unsafe {
            libc::lgetxattr(
                p.as_ptr(),
                n.as_ptr(),
                buf.as_mut_ptr().cast(),
                size as usize,
            )
        };
        Self::xattr_reply(r, size, &buf, reply);
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        self.inj.counters.request("FUSE_LISTXATTR");
        self.meta();
        let p = match self.path_of(ino).and_then(|p| cstr(&p)) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let mut buf = vec![0u8; size as usize];
        // SAFETY: valid path; `buf` has `size` bytes.
        let r = unsafe { libc::llistxattr(p.as_ptr(), buf.as_mut_ptr().cast(), size as usize) };
        Self::xattr_reply(r, size, &buf, reply);
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.inj.counters.request("FUSE_REMOVEXATTR");
        self.meta();
        let (p, n) = match self.path_and_name(ino, name) {
            Ok(x) => x,
            Err(e) => return reply.error(e),
        };
        // SAFETY: valid strings.
        if unsafe { libc::lremovexattr(p.as_ptr(), n.as_ptr()) } != 0 {
            reply.error(last_errno());
        } else {
            reply.ok();
        }
    }

    fn access(&self, _req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        self.inj.counters.request("FUSE_ACCESS");
        self.meta();
        let p = match self.path_of(ino).and_then(|p| cstr(&p)) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        // SAFETY: valid path.
        if unsafe { libc::access(p.as_ptr(), mask.bits()) } != 0 {
            reply.error(last_errno());
        } else {
            reply.ok();
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        self.inj.counters.request("FUSE_CREATE");
        self.meta_child(parent, name);
        let path = match self.child(parent, name) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let mut o = Self::open_options(flags);
        o.create(true).mode(mode & !umask & 0o7777);
        let file = match o.open(&path) {
            Ok(f) => f,
            Err(e) => return reply.error(errno(e)),
        };
        let m = match file.metadata() {
            Ok(m) => m,
            Err(e) => return reply.error(errno(e)),
        };
        let ino = self.ino_for(&path);
        let attr = self.attr(ino, &m);
        let fh = self.add_handle(file, &path);
        reply.created(
            &self.opts.attr_ttl,
            &attr,
            Generation(0),
            FileHandle(fh),
            self.fopen_flags(),
        );
    }
}
