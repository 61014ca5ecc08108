//! The io_uring metadata engine: one thread keeps `iodepth` metadata
//! operations in flight.
//!
//! Each file's operation is one request or one linked chain of requests:
//!
//! - create / overwrite / truncate-overwrite: `openat` into a direct
//!   descriptor (the ring's file slot of the request's slot, no fd table
//!   entry) → one `write` per record → `fsync` (with `--fsync`) → `close`;
//! - read: `openat` → one `read` of the file's size → `close`;
//! - stat / stat-dir: `statx`; delete / rmdir: `unlinkat`; mkdir:
//!   `mkdirat`; rename: `renameat`; symlink: `symlinkat`.
//!
//! The `openat` is soft-linked to the rest, so a failed open cancels the
//! chain (there is nothing to close); every later link is a hard link, so
//! `close` runs after a failed write too. If a `close` is still cancelled,
//! a standalone one is issued before the slot is reused. Names, buffers and
//! `statx` results live in the slot until its last completion.
//!
//! On Linux 6.x the kernel runs `openat` with `O_CREAT`, `statx`,
//! `unlinkat`, `renameat`, `mkdirat` and `symlinkat` in an io-wq worker
//! thread, never inline: the queue depth is served by those workers
//! (process threads, so their CPU time is in the process's rusage), and
//! each request pays a hand-off that the synchronous engine does not.
//!
//! The directory node a request names stays open until it completes, so
//! the window of requests in flight may span several hashed directories
//! (up to `iodepth` of them); where a thread's files span several, it goes
//! round robin over them (see `Order`). Untimed phases (layout, teardown) and operations without an
//! opcode here run on the synchronous engine (see the registry).

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Barrier;
use std::time::Instant;

use io_uring::{opcode, squeue, types, IoUring};
use spec::{EntryKind, MetaOp};

use crate::backend::posix::Posix;
use crate::backend::{Backend, OpenHow};
use crate::buf::AlignedBuf;
use crate::meta::{
    fail, open_how, record_failure, run_thread, should_stop, Cursor, MetaPlan, MetaSample, OpErr,
    MAX_MISMATCHES,
};
use crate::pattern;
use crate::worker::PhaseControl;

/// The timed operations this engine runs.
pub const OPS: &[MetaOp] = &[
    MetaOp::Create,
    MetaOp::Read,
    MetaOp::Overwrite,
    MetaOp::TruncateOverwrite,
    MetaOp::Stat,
    MetaOp::StatDir,
    MetaOp::Rename,
    MetaOp::Symlink,
    MetaOp::Delete,
    MetaOp::Mkdir,
    MetaOp::Rmdir,
];

/// Largest file a write or read chain handles (one slot buffer each).
pub const MAX_FILE: u64 = 1 << 20;
/// Most write records in one chain.
pub const MAX_RECORDS: u64 = 64;

const OPEN: u64 = 1;
const WRITE: u64 = 2;
const FSYNC: u64 = 3;
const CLOSE: u64 = 4;
const READ: u64 = 5;
const SINGLE: u64 = 6;
const LATE_CLOSE: u64 = 7;

fn tag(slot: usize, kind: u64, k: u64) -> u64 {
    (slot as u64) << 32 | kind << 24 | k
}

struct MSlot {
    i: u64,
    name: Vec<u8>,
    name2: Vec<u8>,
    stx: Box<MaybeUninit<libc::statx>>,
    buf: AlignedBuf,
    t0: Instant,
    pending: u32,
    err: Option<OpErr>,
    opened: bool,
    closed: bool,
    /// Bytes read so far, and by the last read; whether it hit EOF.
    read_len: u64,
    last_read: u64,
    eof: bool,
    want: u64,
    /// (offset, length) of each write of the current chain.
    writes: Vec<(u64, u64)>,
    /// What short writes of the current chain left to write.
    holes: Vec<(u64, u64)>,
    /// The current chain continues a short transfer.
    cont: bool,
    /// In flight.
    busy: bool,
    /// The directory the request names, and its generation (see
    /// [`Queue::old_dirs`]).
    dfd: i32,
    gen: u64,
}

impl MSlot {
    /// An idle slot with its buffer.
    fn new(buf: AlignedBuf) -> MSlot {
        MSlot {
            i: 0,
            name: Vec::with_capacity(320),
            name2: Vec::with_capacity(320),
            stx: Box::new(MaybeUninit::zeroed()),
            buf,
            t0: Instant::now(),
            pending: 0,
            err: None,
            opened: false,
            closed: false,
            read_len: 0,
            last_read: 0,
            eof: false,
            want: 0,
            writes: Vec::with_capacity(MAX_RECORDS as usize),
            holes: Vec::with_capacity(MAX_RECORDS as usize),
            cont: false,
            busy: false,
            dfd: -1,
            gen: 0,
        }
    }

    /// Keeps the first real error; a cancellation counts only if nothing
    /// else failed (it is the echo of another request's failure).
    fn set_err(&mut self, e: OpErr) {
        let cancelled = |e: &OpErr| e.err.raw_os_error() == Some(libc::ECANCELED);
        match &self.err {
            None => self.err = Some(e),
            Some(old) if cancelled(old) && !cancelled(&e) => self.err = Some(e),
            _ => {}
        }
    }
}

/// The ring, its slots, and how to build each request.
struct Queue {
    ring: IoUring,
    slots: Vec<MSlot>,
    free: Vec<usize>,
    inflight: usize,
    rec: u64,
    flags: i32,
    fsync: bool,
    /// Flags of each operation's first request (`IOSQE_ASYNC` or none).
    first: squeue::Flags,
    /// Generation of the cursor's current directory descriptor.
    gen: u64,
    /// Directories the cursor has moved on from while requests naming them
    /// were in flight: kept open until those requests complete, so the
    /// window of in-flight requests may span several directories.
    old_dirs: Vec<(u64, OwnedFd)>,
}

/// The io-wq worker cap to set for a ring of `depth` slots, or None to
/// keep the kernel's: the CPU count (at most `depth`) on a `local` file
/// system, `depth` elsewhere. `IOSCALE_URING_IOWQ` overrides it (a
/// measurement knob): `depth`, `kernel` (the kernel's own cap), or a
/// number.
fn iowq_cap(depth: u32, local: bool) -> Option<u32> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    match std::env::var("IOSCALE_URING_IOWQ").as_deref() {
        Ok("kernel") => None,
        Ok("depth") => Some(depth),
        Ok(n) if n.parse::<u32>().is_ok() => n.parse::<u32>().ok().map(|c| c.max(1)),
        _ if local => Some(cpus.min(depth).max(1)),
        _ => Some(depth),
    }
}

/// Whether the working root of `plan` is on a local file system
/// ([`local_fs`]): asked of the held root when there is one (its name may
/// have been swapped since), else of its path.
fn plan_on_local_fs(plan: &MetaPlan<'_>) -> bool {
    match &plan.root_dir {
        Some(root) => {
            // SAFETY: fstatfs fills the struct it is given; all-zero is a
            // valid statfs, and the descriptor is open for the call.
            let mut st: libc::statfs = unsafe { std::mem::zeroed() };
            // SAFETY: as above.
            let r = unsafe { libc::fstatfs(root.as_raw_fd(), &mut st) };
            r == 0 && is_local(&st)
        }
        None => local_fs(&plan.root),
    }
}

/// Whether `path` is on a file system whose metadata operations run on
/// the CPU without waiting on a server: memory and local disk file
/// systems, by `statfs` magic. Anything else (FUSE, NFS, SMB, Ceph,
/// Lustre, an unknown type, or a failed `statfs`) counts as remote.
fn local_fs(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs fills the struct it is given; all-zero is a valid
    // statfs, and `c` is a NUL-terminated path.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return false;
    }
    is_local(&st)
}

/// Whether a `statfs` result names a memory or local disk file system.
// `f_type`'s type differs between targets; the cast is for portability.
#[allow(clippy::unnecessary_cast)]
fn is_local(st: &libc::statfs) -> bool {
    const LOCAL: &[i64] = &[
        0x0102_1994, // tmpfs
        0x8584_58f6, // ramfs
        0xEF53,      // ext2, ext3, ext4
        0x5846_5342, // xfs
        0x9123_683E, // btrfs
        0xF2F5_2010, // f2fs
        0xca45_1a4e, // bcachefs
    ];
    LOCAL.contains(&(st.f_type as i64))
}

/// Whether the first request of each operation carries `IOSQE_ASYNC`
/// (straight to an io-wq worker, without the nonblocking attempt first).
/// `IOSCALE_URING_ASYNC=1` (a measurement knob).
fn force_async() -> bool {
    std::env::var("IOSCALE_URING_ASYNC").is_ok_and(|v| v == "1")
}

/// The flags of an `OPENAT` of this engine: as the synchronous engine
/// opens (never through a link), but a direct descriptor takes no
/// `O_CLOEXEC` (EINVAL: it is in no fd table) and no `O_NONBLOCK` (the
/// ring would fail a read or write that has to wait with EAGAIN instead
/// of handing it to a worker).
fn uring_flags(how: OpenHow) -> i32 {
    Posix::flags(how) & !(libc::O_CLOEXEC | libc::O_NONBLOCK)
}

fn errno(res: i32) -> io::Error {
    io::Error::from_raw_os_error(-res)
}

fn push(ring: &mut IoUring, e: &squeue::Entry) {
    loop {
        // SAFETY: every pointer in the entry (names, buffer, statx result)
        // points into an `MSlot` owned by the `Queue`, whose heap parts are
        // neither moved nor freed until the slot's last completion is
        // reaped (the queue drains before it is dropped, and leaks itself
        // if it cannot); the directory descriptor stays open until the
        // queue is drained (it drains before changing directory).
        if unsafe { ring.submission().push(e) }.is_ok() {
            return;
        }
        let _ = ring.submit();
    }
}

impl Queue {
    fn new(plan: &MetaPlan<'_>, depth: u32) -> io::Result<Queue> {
        let spec = plan.spec;
        let max = spec.file_size.max();
        let rec = spec.record_size.max(1);
        let data = matches!(
            plan.op,
            MetaOp::Create | MetaOp::Read | MetaOp::Overwrite | MetaOp::TruncateOverwrite
        );
        if data && (max > MAX_FILE || max.div_ceil(rec) > MAX_RECORDS) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the io_uring metadata engine handles files up to {} KiB in up to {MAX_RECORDS} records",
                    MAX_FILE >> 10
                ),
            ));
        }
        let chain = if data { max.div_ceil(rec) + 3 } else { 1 };
        let entries = (depth as u64 * chain).next_power_of_two().min(32768) as u32;
        let mut b = IoUring::builder();
        b.setup_cqsize(entries * 2)
            .setup_coop_taskrun()
            .setup_single_issuer()
            .setup_defer_taskrun();
        let ring = match b.build(entries) {
            Ok(r) => r,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => IoUring::builder()
                .setup_cqsize(entries * 2)
                .build(entries)?,
            Err(e) => return Err(e),
        };
        // The kernel serves these opcodes in io-wq worker threads, and caps
        // the workers for file work at 4 per CPU: on a 2-CPU machine at most
        // 8 requests of the window would be served at once. Where requests
        // wait on something other than the CPU (FUSE, NFS), allow one worker
        // per slot; on a local file system the work is CPU-bound and more
        // workers than CPUs only contend (best effort: a kernel without the
        // call keeps its cap).
        if let Some(cap) = iowq_cap(depth, plan_on_local_fs(plan)) {
            let _ = ring.submitter().register_iowq_max_workers(&mut [cap, cap]);
        }
        let buf_len = if data {
            max.max(1).next_multiple_of(4096)
        } else {
            1
        };
        if data {
            ring.submitter().register_files_sparse(depth)?;
        }
        let slots = (0..depth)
            .map(|k| {
                let mut buf = AlignedBuf::new(buf_len as usize, 4096);
                pattern::fill_random(buf.as_mut_slice(), spec.seed ^ (k as u64) << 28);
                MSlot::new(buf)
            })
            .collect();
        let flags = uring_flags(open_how(plan.op, spec).unwrap_or_default());
        Ok(Queue {
            ring,
            slots,
            free: (0..depth as usize).rev().collect(),
            inflight: 0,
            rec,
            flags,
            fsync: spec.fsync,
            first: if force_async() {
                squeue::Flags::ASYNC
            } else {
                squeue::Flags::empty()
            },
            gen: 0,
            old_dirs: Vec::new(),
        })
    }

    /// Queues the operation on the current name of `cur` (index `i`).
    fn start(&mut self, cur: &Cursor<'_, '_>, i: u64) {
        let slot = self.free.pop().expect("a free slot while inflight < depth");
        let plan = cur.plan;
        let spec = plan.spec;
        let s = &mut self.slots[slot];
        s.i = i;
        s.name.clear();
        s.name.extend_from_slice(&cur.name);
        s.name2.clear();
        s.name2.extend_from_slice(&cur.name2);
        s.err = None;
        s.read_len = 0;
        s.eof = false;
        s.want = spec.size_of(cur.w, i);
        s.t0 = Instant::now();
        s.writes.clear();
        s.holes.clear();
        s.cont = false;
        s.busy = true;
        s.dfd = cur.at().as_raw_fd();
        s.gen = self.gen;
        if matches!(
            plan.op,
            MetaOp::Create | MetaOp::Overwrite | MetaOp::TruncateOverwrite
        ) {
            let id = spec.file_id(cur.w, i);
            let mut off = 0u64;
            while off < s.want {
                let len = (s.want - off).min(self.rec);
                if spec.verify {
                    let b = &mut s.buf.as_mut_slice()[off as usize..(off + len) as usize];
                    pattern::fill(b, spec.seed, id, off);
                }
                s.writes.push((off, len));
                off += len;
            }
        }
        self.inflight += 1;
        let dfd = s.dfd;
        self.chain(slot, dfd, plan.op, self.flags);
    }

    /// Pushes the requests of `slot`'s operation: the first chain, or a
    /// continuation (open without O_CREAT/O_TRUNC → the missing writes or
    /// the rest of the read → close) after a short transfer.
    fn chain(&mut self, slot: usize, dfd: i32, op: MetaOp, flags: i32) {
        let dfd = types::Fd(dfd);
        let s = &mut self.slots[slot];
        s.opened = false;
        s.closed = false;
        s.last_read = 0;
        let name = s.name.as_ptr().cast::<libc::c_char>();
        let name2 = s.name2.as_ptr().cast::<libc::c_char>();
        let fixed = types::Fixed(slot as u32);
        let mut n = 0u32;
        let first = self.first;
        let ring = &mut self.ring;
        let mut add = |e: squeue::Entry| {
            push(ring, &e);
            n += 1;
        };
        match op {
            MetaOp::Create | MetaOp::Overwrite | MetaOp::TruncateOverwrite | MetaOp::Read => {
                let dest = types::DestinationSlot::try_from_slot_target(slot as u32).ok();
                add(opcode::OpenAt::new(dfd, name)
                    .flags(flags)
                    .mode(0o644)
                    .file_index(dest)
                    .build()
                    .flags(squeue::Flags::IO_LINK | first)
                    .user_data(tag(slot, OPEN, 0)));
                if op == MetaOp::Read {
                    // Ask for the file's size, not the whole buffer: an
                    // asynchronous read through FUSE reports the length
                    // asked for even where the file ends before it.
                    let at = s.read_len as usize;
                    let b = &mut s.buf.as_mut_slice()[at..];
                    let len = (b.len() as u64).min(s.want.saturating_sub(at as u64)) as u32;
                    add(opcode::Read::new(fixed, b.as_mut_ptr(), len)
                        .offset(at as u64)
                        .build()
                        .flags(squeue::Flags::IO_HARDLINK)
                        .user_data(tag(slot, READ, 0)));
                } else {
                    for (k, &(off, len)) in s.writes.iter().enumerate() {
                        let p = s.buf.as_slice()[off as usize..].as_ptr();
                        add(opcode::Write::new(fixed, p, len as u32)
                            .offset(off)
                            .build()
                            .flags(squeue::Flags::IO_HARDLINK)
                            .user_data(tag(slot, WRITE, k as u64)));
                    }
                    if self.fsync {
                        add(opcode::Fsync::new(fixed)
                            .build()
                            .flags(squeue::Flags::IO_HARDLINK)
                            .user_data(tag(slot, FSYNC, 0)));
                    }
                }
                add(opcode::Close::new(fixed)
                    .build()
                    .user_data(tag(slot, CLOSE, 0)));
            }
            MetaOp::Stat | MetaOp::StatDir => {
                let stx = s.stx.as_mut_ptr().cast::<types::statx>();
                add(opcode::Statx::new(dfd, name, stx)
                    .flags(libc::AT_SYMLINK_NOFOLLOW)
                    .mask(libc::STATX_BASIC_STATS)
                    .build()
                    .flags(first)
                    .user_data(tag(slot, SINGLE, 0)));
            }
            MetaOp::Delete | MetaOp::Rmdir => {
                let f = if op == MetaOp::Rmdir {
                    libc::AT_REMOVEDIR
                } else {
                    0
                };
                add(opcode::UnlinkAt::new(dfd, name)
                    .flags(f)
                    .build()
                    .flags(first)
                    .user_data(tag(slot, SINGLE, 0)));
            }
            MetaOp::Mkdir => add(opcode::MkDirAt::new(dfd, name)
                .mode(0o755)
                .build()
                .flags(first)
                .user_data(tag(slot, SINGLE, 0))),
            MetaOp::Rename => add(opcode::RenameAt::new(dfd, name, dfd, name2)
                .build()
                .flags(first)
                .user_data(tag(slot, SINGLE, 0))),
            MetaOp::Symlink => add(opcode::SymlinkAt::new(dfd, name, name2)
                .build()
                .flags(first)
                .user_data(tag(slot, SINGLE, 0))),
            _ => unreachable!("the registry sends only OPS here"),
        }
        s.pending = n;
    }

    /// After a chain ended without error: whether a short transfer left
    /// work, and if so queues the continuation (as the synchronous engine
    /// loops on a short write or read).
    fn continue_short(&mut self, slot: usize, op: MetaOp) -> bool {
        let m = &mut self.slots[slot];
        let dfd = m.dfd;
        m.cont = true;
        // The continuation opens the file as it is now: no O_CREAT,
        // no O_TRUNC.
        let cont = |write: bool| {
            let how = OpenHow {
                read: !write,
                write,
                direct: self.flags & libc::O_DIRECT != 0,
                ..OpenHow::default()
            };
            uring_flags(how)
        };
        let more_read = op == MetaOp::Read
            && !m.eof
            && m.last_read > 0
            && m.read_len < m.want
            && (m.read_len as usize) < m.buf.len();
        if more_read {
            self.chain(slot, dfd, op, cont(false));
            return true;
        }
        if !m.holes.is_empty() {
            std::mem::swap(&mut m.writes, &mut m.holes);
            m.holes.clear();
            self.chain(slot, dfd, op, cont(true));
            return true;
        }
        false
    }

    /// Handles one completion; returns the slot if its chain is over.
    fn complete(&mut self, ud: u64, res: i32, op: MetaOp, s: &mut MetaSample) -> Option<usize> {
        let slot = (ud >> 32) as usize;
        let kind = (ud >> 24) & 0xff;
        let k = (ud & 0xff_ffff) as usize;
        let m = &mut self.slots[slot];
        m.pending -= 1;
        match kind {
            OPEN if res < 0 => {
                let call = if op == MetaOp::Create && !m.cont {
                    "create"
                } else {
                    "open"
                };
                m.set_err(fail(call)(errno(res)));
            }
            OPEN => m.opened = true,
            WRITE => {
                let (off, len) = m.writes[k];
                if res < 0 {
                    m.set_err(OpErr {
                        offset: Some(off),
                        ..fail("write")(errno(res))
                    });
                } else if res == 0 {
                    m.set_err(OpErr {
                        offset: Some(off),
                        ..fail("write")(io::Error::other("write returned 0 bytes"))
                    });
                } else {
                    s.records += 1;
                    s.write_bytes += res as u64;
                    if (res as u64) < len {
                        m.holes.push((off + res as u64, len - res as u64));
                    }
                }
            }
            READ if res < 0 => m.set_err(OpErr {
                offset: Some(m.read_len),
                ..fail("read")(errno(res))
            }),
            READ => {
                if res > 0 {
                    s.records += 1;
                } else {
                    m.eof = true;
                }
                s.read_bytes += res as u64;
                m.read_len += res as u64;
                m.last_read = res as u64;
            }
            FSYNC if res < 0 => m.set_err(fail("fsync")(errno(res))),
            CLOSE | LATE_CLOSE if res == -libc::ECANCELED => {}
            CLOSE | LATE_CLOSE => {
                m.closed = true;
                if res < 0 {
                    m.set_err(fail("close")(errno(res)));
                }
            }
            SINGLE if res < 0 => {
                let call = match op {
                    MetaOp::Stat | MetaOp::StatDir => "stat",
                    MetaOp::Delete => "unlink",
                    MetaOp::Rmdir => "rmdir",
                    MetaOp::Mkdir => "mkdir",
                    MetaOp::Rename => "rename",
                    _ => "symlink",
                };
                let mut e = fail(call)(errno(res));
                e.second = op == MetaOp::Symlink;
                m.set_err(e);
            }
            _ => {}
        }
        if m.pending > 0 {
            return None;
        }
        if m.opened && !m.closed {
            // The chain's close was cancelled: close the direct descriptor
            // before the slot (and its file slot) is reused.
            m.pending = 1;
            let e = opcode::Close::new(types::Fixed(slot as u32))
                .build()
                .user_data(tag(slot, LATE_CLOSE, 0));
            push(&mut self.ring, &e);
            return None;
        }
        Some(slot)
    }

    /// Waits for at least one completion (submitting what was queued) and
    /// hands every finished slot to `done`.
    fn reap(
        &mut self,
        op: MetaOp,
        s: &mut MetaSample,
        mut done: impl FnMut(&mut Queue, usize, &mut MetaSample) -> bool,
    ) -> io::Result<()> {
        loop {
            match self.ring.submit_and_wait(1) {
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => break,
                Err(e) => return Err(e),
            }
        }
        let mut cqes: [(u64, i32); 64] = [(0, 0); 64];
        loop {
            let mut n = 0;
            {
                let mut cq = self.ring.completion();
                cq.sync();
                for c in &mut cq {
                    cqes[n] = (c.user_data(), c.result());
                    n += 1;
                    if n == cqes.len() {
                        break;
                    }
                }
            }
            if n == 0 {
                if !self.old_dirs.is_empty() {
                    let slots = &self.slots;
                    self.old_dirs
                        .retain(|(g, _)| slots.iter().any(|m| m.busy && m.gen == *g));
                }
                return Ok(());
            }
            for &(ud, res) in &cqes[..n] {
                if let Some(slot) = self.complete(ud, res, op, s) {
                    if done(self, slot, s) {
                        self.inflight -= 1;
                        self.slots[slot].busy = false;
                        self.free.push(slot);
                    }
                }
            }
        }
    }

    /// Waits for everything in flight. Returns false if the ring failed
    /// with requests outstanding.
    fn drain(
        &mut self,
        op: MetaOp,
        s: &mut MetaSample,
        mut done: impl FnMut(&mut Queue, usize, &mut MetaSample) -> bool,
    ) -> bool {
        let mut tries = 0;
        while self.inflight > 0 {
            if self.reap(op, s, &mut done).is_err() {
                tries += 1;
                if tries > 100 {
                    return false;
                }
            }
        }
        true
    }
}

/// Per-loop state the completion handler needs.
struct Tally {
    stopping: bool,
    t_last: Instant,
    /// Bytes read and written at the last file's end: the series credits
    /// each file with what completed since (requests of several files
    /// overlap; the totals stay exact).
    bytes_seen: (u64, u64),
}

/// Accounts a slot whose chain ended: queues the continuation of a short
/// transfer (returns false: still in flight), or records latency, files,
/// verify, or the failure (returns true).
fn finish(
    q: &mut Queue,
    slot: usize,
    cur: &mut Cursor<'_, '_>,
    ctl: &PhaseControl,
    s: &mut MetaSample,
    tally: &mut Tally,
) -> bool {
    let op = cur.plan.op;
    if q.slots[slot].err.is_none() && q.continue_short(slot, op) {
        return false;
    }
    let now = Instant::now();
    tally.t_last = now;
    let m = &mut q.slots[slot];
    // The request may name another directory than the cursor's current
    // one (the window spans several): a path is reported in the request's
    // own, built only when there is something to report.
    let node = cur.plan.spec.node_of(m.i);
    if let Some(e) = m.err.take() {
        cur.name.clear();
        cur.name.extend_from_slice(&m.name);
        cur.name2.clear();
        cur.name2.extend_from_slice(&m.name2);
        if cur.in_node(node, |cur| record_failure(cur, e, ctl, s)) {
            tally.stopping = true;
        }
        cur.series.error(now);
        return true;
    }
    let spec = cur.plan.spec;
    if cur.plan.op == MetaOp::Read && spec.verify {
        let id = spec.file_id(cur.w, m.i);
        let got = m.read_len.min(m.want) as usize;
        let c = pattern::check(&m.buf.as_slice()[..got], spec.seed, id, 0);
        s.checked_bytes += got as u64;
        let mut bad = c.bad_bytes;
        let mut first = c.first_bad;
        if m.read_len < m.want {
            bad += m.want - m.read_len;
            first.get_or_insert(m.read_len);
        }
        if bad > 0 {
            s.bad_bytes += bad;
            if s.mismatches.len() < MAX_MISMATCHES {
                let path = cur.in_node(node, |cur| cur.path_of(&m.name));
                s.mismatches.push((path, first.unwrap_or(0), bad));
            }
        }
    }
    let lat = now.saturating_duration_since(m.t0).as_nanos() as u64;
    s.hist.record(lat);
    let seen = std::mem::replace(&mut tally.bytes_seen, (s.read_bytes, s.write_bytes));
    cur.series
        .file(now, s.read_bytes - seen.0, s.write_bytes - seen.1, lat);
    s.files += 1;
    crate::live::publish(cur.w, s.files, s.bytes());
    true
}

/// Sets the names of index `i` in `cur` for the phase's operation.
fn names(cur: &mut Cursor<'_, '_>, i: u64) {
    let plan = cur.plan;
    let file_kind = if plan.state.renamed {
        EntryKind::Renamed
    } else {
        EntryKind::File
    };
    match plan.op {
        MetaOp::Create => cur.set_name(EntryKind::File, i),
        MetaOp::Mkdir | MetaOp::StatDir | MetaOp::Rmdir => cur.set_name(EntryKind::Dir, i),
        MetaOp::Rename => {
            let to = if plan.state.renamed {
                EntryKind::File
            } else {
                EntryKind::Renamed
            };
            cur.set_name(file_kind, i);
            cur.set_name2(to, i);
        }
        MetaOp::Symlink => {
            cur.set_name(file_kind, i);
            cur.set_name2(EntryKind::Link, i);
        }
        _ => cur.set_name(file_kind, i),
    }
}

/// Most directories one thread keeps open to spread its window over.
const MAX_ROTATION: u64 = 256;

/// The order in which a thread issues its indices `0..n`.
///
/// In index order, a thread's window of requests all name one directory
/// (`--files-per-dir` consecutive indices share one), and file systems
/// serialise creates and removals in one directory (the VFS holds the
/// parent's lock; so does a FUSE daemon's lookup of the parent). So when
/// the thread's indices span several directories, the order goes round
/// robin over a group of up to `width` of them (index `j` of each, then
/// `j + 1` of each, …), and moves to the next group of directories when
/// one is done. Every index comes exactly once.
#[derive(Debug, Clone)]
pub(crate) struct Order {
    n: u64,
    per_dir: u64,
    width: u64,
    /// First index of the current group.
    group: u64,
    /// Directories in the current group.
    dirs: u64,
    /// Position in the group: directory `k`, index `j` within it.
    k: u64,
    j: u64,
}

impl Order {
    /// The order for `n` indices, `per_dir` to a directory, going round
    /// robin over up to `width` directories (1: index order).
    pub(crate) fn new(n: u64, per_dir: u64, width: u64) -> Order {
        let per_dir = per_dir.max(1);
        let width = width.clamp(1, MAX_ROTATION);
        let mut o = Order {
            n,
            per_dir,
            width,
            group: 0,
            dirs: 0,
            k: 0,
            j: 0,
        };
        o.set_group(0);
        o
    }

    fn set_group(&mut self, first: u64) {
        self.group = first;
        let left = self.n.saturating_sub(first).div_ceil(self.per_dir);
        self.dirs = left.min(self.width);
        self.k = 0;
        self.j = 0;
    }

    /// Whether the order is not index order.
    pub(crate) fn rotates(&self) -> bool {
        self.width > 1 && self.n > self.per_dir
    }

    /// The group (numbered from 0) index `i` belongs to.
    pub(crate) fn group_of(&self, i: u64) -> u64 {
        i / self.per_dir / self.width
    }

    /// The next index, without taking it.
    pub(crate) fn peek(&mut self) -> Option<u64> {
        loop {
            if self.group >= self.n {
                return None;
            }
            if self.j < self.per_dir {
                // Only a group's last directory can be short.
                let i = (self.group + self.k * self.per_dir).checked_add(self.j);
                match i {
                    Some(i) if i < self.n => return Some(i),
                    _ if self.k > 0 => {
                        self.k = 0;
                        self.j += 1;
                        continue;
                    }
                    _ => {}
                }
            }
            let next = self
                .group
                .saturating_add(self.dirs.saturating_mul(self.per_dir));
            self.set_group(next);
        }
    }

    /// The first index of each directory of the current group.
    fn group_dirs(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.dirs).map(|k| self.group.saturating_add(k.saturating_mul(self.per_dir)))
    }

    /// Takes the index `peek` returned.
    pub(crate) fn step(&mut self) {
        self.k += 1;
        if self.k >= self.dirs {
            self.k = 0;
            self.j += 1;
        }
    }
}

/// Most directories [`DirMaker`] has in flight at once.
const DIR_BATCH: usize = 32;

/// Makes and opens a group's directories through a ring of its own, all
/// at once, before the group's first requests: one thread keeping
/// `iodepth` requests in flight should not wait a round trip per
/// directory. On a FUSE server answering in 2 ms, entering 32 hashed
/// directories one after another (a `mkdirat` and an `openat2` each, and
/// their parents') kept the worker out of the ring for 0.26 s of a 0.9 s
/// create phase of 2,048 files (strace). Each directory is `mkdirat`
/// (where the phase creates entries) hard-linked to an `openat2` with the
/// flags and resolve bits of [`crate::backend::Backend::open_beneath`], relative to
/// its parent's descriptor, opened the same way one level up: a link
/// swapped in anywhere is refused as on the synchronous path. It is a head
/// start only: a directory it could not open is entered by the
/// synchronous path when its first request comes, which reports the error
/// as it always did.
struct DirMaker {
    ring: IoUring,
    how: types::OpenHow,
}

impl DirMaker {
    /// `None` where `open_dir` would not use `openat2` (then the
    /// synchronous path walks every directory), or without a ring.
    fn new() -> Option<DirMaker> {
        let (flags, resolve) = crate::backend::posix::dir_open_how()?;
        let ring = IoUring::new(2 * DIR_BATCH as u32).ok()?;
        Some(DirMaker {
            ring,
            how: types::OpenHow::new().flags(flags).resolve(resolve),
        })
    }

    /// Descriptors of `nodes` (hashed directory nodes of the tree under
    /// `base`, `dirs_per_dir` to a parent; node 0 is `base` itself), made
    /// first where `create`, with their ancestors made and opened on the
    /// way. A node that could not be opened is left out.
    fn open_all(
        &mut self,
        base: RawFd,
        dirs_per_dir: u64,
        nodes: &[u64],
        create: bool,
    ) -> Vec<(u64, OwnedFd)> {
        let b = dirs_per_dir.max(1);
        let parent = |n: u64| (n - 1) / b;
        // Every node and ancestor by depth (ancestors are opened first).
        let mut levels: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        let mut seen = std::collections::BTreeSet::new();
        for &n in nodes {
            let mut m = n;
            while m > 0 && seen.insert(m) {
                let mut d = 0u32;
                let mut up = m;
                while up > 0 {
                    up = parent(up);
                    d += 1;
                }
                levels.entry(d).or_default().push(m);
                m = parent(m);
            }
        }
        let mut open: BTreeMap<u64, OwnedFd> = BTreeMap::new();
        for level in levels.values() {
            for batch in level.chunks(DIR_BATCH) {
                let ready: Vec<(u64, RawFd)> = batch
                    .iter()
                    .filter_map(|&n| match parent(n) {
                        0 => Some((n, base)),
                        p => open.get(&p).map(|fd| (n, fd.as_raw_fd())),
                    })
                    .collect();
                for (n, fd) in self.batch(&ready, b, create) {
                    open.insert(n, fd);
                }
            }
        }
        nodes
            .iter()
            .filter_map(|n| open.remove(n).map(|fd| (*n, fd)))
            .collect()
    }

    /// One batch of (node, parent descriptor): submitted together, waited
    /// for together; the descriptors that opened.
    fn batch(&mut self, ready: &[(u64, RawFd)], b: u64, create: bool) -> Vec<(u64, OwnedFd)> {
        let names: Vec<CString> = ready
            .iter()
            .map(|&(n, _)| {
                CString::new(format!("h{}", (n - 1) % b)).expect("no NUL in a node name")
            })
            .collect();
        let mut expect = 0;
        for (k, (&(_, dir), name)) in ready.iter().zip(&names).enumerate() {
            let dir = types::Fd(dir);
            if create {
                let mk = opcode::MkDirAt::new(dir, name.as_ptr())
                    .mode(0o755)
                    .build()
                    .flags(squeue::Flags::IO_HARDLINK)
                    .user_data(u64::MAX);
                push(&mut self.ring, &mk);
                expect += 1;
            }
            let op = opcode::OpenAt2::new(dir, name.as_ptr(), &self.how)
                .build()
                .user_data(k as u64);
            push(&mut self.ring, &op);
            expect += 1;
        }
        let mut out = Vec::new();
        let mut got = 0;
        while got < expect {
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
                // The requests may still be running: the names must not
                // be freed under them.
                Err(_) => {
                    std::mem::forget(names);
                    return out;
                }
            }
            for c in self.ring.completion() {
                got += 1;
                let (k, res) = (c.user_data(), c.result());
                if k != u64::MAX && res >= 0 {
                    // SAFETY: the kernel just returned this descriptor
                    // for our open; no one else owns it.
                    let fd = unsafe { OwnedFd::from_raw_fd(res) };
                    out.push((ready[k as usize].0, fd));
                }
            }
        }
        out
    }
}

/// Which index comes next, and the directories the queue's window spans.
struct Window {
    order: Order,
    /// Descriptors of the current group's directories other than `cur`'s.
    parked: Vec<(u64, Option<OwnedFd>)>,
    group: u64,
    /// Makes a group's directories at once ([`DirMaker`]).
    maker: Option<DirMaker>,
    /// The group whose directories the maker has made.
    prepared: Option<u64>,
    /// The phase makes entries (its directories are made where missing).
    creates: bool,
    depth: usize,
}

impl Window {
    /// Queues operations until the queue is full, the indices run out, a
    /// directory change has to wait for the queue to drain, or the phase
    /// is stopping.
    fn fill(
        &mut self,
        q: &mut Queue,
        cur: &mut Cursor<'_, '_>,
        ctl: &PhaseControl,
        s: &mut MetaSample,
        tally: &mut Tally,
    ) {
        let spec = cur.plan.spec;
        while !tally.stopping && q.inflight < self.depth {
            let Some(i) = self.order.peek() else { break };
            let node = spec.node_of(i);
            let entered = if node != cur.node && self.order.rotates() {
                if self.order.group_of(i) != self.group {
                    // A new group: its requests must not outlive the
                    // descriptors they name.
                    if q.inflight > 0 {
                        break;
                    }
                    self.parked.clear();
                    self.group = self.order.group_of(i);
                }
                if self.prepared != Some(self.group) {
                    self.prepared = Some(self.group);
                    self.prepare(cur);
                }
                self.rotate_to(node, cur)
            } else if node != cur.node {
                if q.inflight > 0 {
                    if q.old_dirs.len() >= self.depth {
                        break; // enough directories open: reap first
                    }
                    if let Some(fd) = cur.dir.take() {
                        q.old_dirs.push((q.gen, fd));
                    }
                }
                q.gen += 1;
                cur.enter(node, self.creates, false).map(drop)
            } else {
                Ok(())
            };
            if let Err(e) = entered {
                s.touched = s.touched.max(i + 1);
                record_failure(cur, e, ctl, s);
                tally.stopping = true;
                break;
            }
            self.order.step();
            names(cur, i);
            q.start(cur, i);
            s.touched = s.touched.max(i + 1);
        }
    }

    /// Parks a descriptor for each directory of the current group not yet
    /// entered, made and opened together by the [`DirMaker`].
    fn prepare(&mut self, cur: &Cursor<'_, '_>) {
        let Some(maker) = self.maker.as_mut() else {
            return;
        };
        let spec = cur.plan.spec;
        let nodes: Vec<u64> = self
            .order
            .group_dirs()
            .map(|i| spec.node_of(i))
            .filter(|&n| n != 0 && n != cur.node && !self.parked.iter().any(|(p, _)| *p == n))
            .collect();
        let base = cur.base.as_raw_fd();
        for (n, fd) in maker.open_all(base, spec.dirs_per_dir, &nodes, self.creates) {
            self.parked.push((n, Some(fd)));
        }
    }

    /// Makes `node` the cursor's directory within the current group: a
    /// parked descriptor if it was entered before, else entered now; the
    /// cursor's previous one is parked.
    fn rotate_to(&mut self, node: u64, cur: &mut Cursor<'_, '_>) -> Result<(), OpErr> {
        let back = match self.parked.iter().position(|(p, _)| *p == node) {
            Some(k) => {
                let (_, fd) = self.parked.swap_remove(k);
                cur.swap_dir(node, fd)
            }
            None => {
                let old = cur.swap_dir(cur.node, None);
                if let Err(e) = cur.enter(node, self.creates, false) {
                    self.parked.push(old);
                    return Err(e);
                }
                old
            }
        };
        self.parked.push(back);
        Ok(())
    }
}

/// The loop over indices with up to `depth` operations in flight.
fn queued_loop(
    q: &mut Queue,
    cur: &mut Cursor<'_, '_>,
    ctl: &PhaseControl,
    deadline: Option<Instant>,
    s: &mut MetaSample,
) -> bool {
    let plan = cur.plan;
    let spec = plan.spec;
    let op = plan.op;
    let depth = q.slots.len();
    let mut tally = Tally {
        stopping: false,
        t_last: Instant::now(),
        bytes_seen: (s.read_bytes, s.write_bytes),
    };
    let mut sw_taken = false;
    let mut finished = true;
    // Round robin over directories only where the phase always runs to
    // the end: a phase cut short by a time limit or a stonewall must
    // leave a prefix of indices for the phases after it.
    let rotate = deadline.is_none() && !spec.stop_at_first;
    let width = if rotate { depth as u64 } else { 1 };
    let mut win = Window {
        order: Order::new(plan.count_for(cur.w), spec.files_per_dir, width),
        parked: Vec::new(),
        group: 0,
        maker: rotate.then(DirMaker::new).flatten(),
        prepared: None,
        creates: matches!(op, MetaOp::Create | MetaOp::Mkdir | MetaOp::Symlink),
        depth,
    };
    loop {
        win.fill(q, cur, ctl, s, &mut tally);
        if q.inflight == 0 {
            if !tally.stopping && win.order.peek().is_some() {
                continue; // a group boundary waited for the queue to empty
            }
            break;
        }
        let r = q.reap(op, s, |q, slot, s| finish(q, slot, cur, ctl, s, &mut tally));
        if let Err(e) = r {
            record_failure(cur, fail("io_uring_enter")(e), ctl, s);
            tally.stopping = true;
            if !q.drain(op, s, |q, slot, s| finish(q, slot, cur, ctl, s, &mut tally)) {
                return false;
            }
            break;
        }
        if !sw_taken && ctl.first_done.load(std::sync::atomic::Ordering::Relaxed) {
            sw_taken = true;
            s.stonewall_files = s.files;
            s.stonewall_bytes = s.bytes();
            if spec.stop_at_first && plan.timed {
                s.stonewalled = true;
                tally.stopping = true;
                finished = false;
            }
        }
        if !tally.stopping {
            if should_stop(ctl) {
                tally.stopping = true;
                finished = false;
            } else if deadline.is_some_and(|d| ctl.past(d, tally.t_last)) {
                s.hit_deadline = true;
                tally.stopping = true;
                finished = false;
            }
        }
    }
    // Parked descriptors close here, after the last request has completed.
    let more = win.order.peek().is_some();
    drop(win);
    let done = finished && !more && s.failure.is_none();
    // Done without seeing another thread finish first: all of it counts.
    if done && !sw_taken {
        s.stonewall_files = s.files;
        s.stonewall_bytes = s.bytes();
    }
    done
}

/// Runs thread `w`'s share of a timed phase with `depth` operations in
/// flight: prepares (directory, ring, slots) before `barrier`, then runs.
pub(crate) fn run_worker(
    w: u32,
    plan: &MetaPlan<'_>,
    depth: u32,
    ctl: &PhaseControl,
    barrier: &Barrier,
) -> MetaSample {
    let mut queue = Queue::new(plan, depth);
    let mut body = |cur: &mut Cursor<'_, '_>,
                    ctl: &PhaseControl,
                    deadline: Option<Instant>,
                    s: &mut MetaSample| {
        match &mut queue {
            Ok(q) => {
                let done = queued_loop(q, cur, ctl, deadline, s);
                if q.inflight > 0 {
                    // The ring failed with requests outstanding: the kernel
                    // may still write into the slots; never free them.
                    let q = std::mem::replace(&mut queue, Err(io::Error::other("leaked")));
                    std::mem::forget(q);
                }
                done
            }
            Err(e) => {
                let e = match e.raw_os_error() {
                    Some(n) => io::Error::from_raw_os_error(n),
                    None => io::Error::new(e.kind(), e.to_string()),
                };
                record_failure(cur, fail("io_uring_setup")(e), ctl, s);
                false
            }
        }
    };
    run_thread(w, plan, 1, ctl, barrier, &mut body)
}

#[cfg(test)]
mod order_tests {
    use super::Order;

    fn all(n: u64, per_dir: u64, width: u64) -> Vec<u64> {
        let mut o = Order::new(n, per_dir, width);
        let mut v = Vec::new();
        while let Some(i) = o.peek() {
            o.step();
            v.push(i);
            assert!(v.len() as u64 <= n, "more indices than {n}");
        }
        v
    }

    #[test]
    fn every_index_comes_once_whatever_the_shape() {
        for n in [0, 1, 2, 7, 10, 11, 99, 100, 101, 1000] {
            for per_dir in [1, 3, 10, 64, u64::MAX] {
                for width in [1, 2, 4, 32, 1000] {
                    let mut v = all(n, per_dir, width);
                    v.sort_unstable();
                    assert_eq!(
                        v,
                        (0..n).collect::<Vec<_>>(),
                        "n {n} per_dir {per_dir} width {width}"
                    );
                }
            }
        }
    }

    #[test]
    fn consecutive_requests_name_different_directories() {
        // 100 files, 10 per directory, 4 directories at a time.
        let v = all(100, 10, 4);
        assert_eq!(&v[..6], &[0, 10, 20, 30, 1, 11]);
        // The first group is done before the second starts.
        let first_40: Vec<u64> = v[..40].to_vec();
        assert!(first_40.iter().all(|&i| i < 40));
        // The last group has two directories.
        assert_eq!(&v[80..84], &[80, 90, 81, 91]);
        // A short last directory: 25 files, 10 per directory, width 8.
        assert_eq!(all(25, 10, 8)[..6], [0, 10, 20, 1, 11, 21]);
        assert_eq!(all(25, 10, 8)[15..], [5, 15, 6, 16, 7, 17, 8, 18, 9, 19]);
        // Width 1 or one directory: index order.
        assert_eq!(all(5, 10, 8), vec![0, 1, 2, 3, 4]);
        assert_eq!(all(5, 2, 1), vec![0, 1, 2, 3, 4]);
    }
}

#[cfg(test)]
mod iowq_tests {
    use super::{iowq_cap, local_fs};

    #[test]
    fn a_tmpfs_is_local_and_proc_or_a_missing_path_is_not() {
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        let tmpfs = mounts
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() > 2 && f[2] == "tmpfs")
            .map(|f| f[1].replace("\\040", " "));
        if let Some(m) = tmpfs {
            assert!(local_fs(std::path::Path::new(&m)), "{m} is a tmpfs");
        }
        assert!(!local_fs(std::path::Path::new("/proc")));
        assert!(!local_fs(std::path::Path::new("/no/such/ioscale/path")));
    }

    #[test]
    fn the_cap_is_the_cpus_on_a_local_fs_and_the_depth_elsewhere() {
        if std::env::var_os("IOSCALE_URING_IOWQ").is_some() {
            return; // overridden for a measurement
        }
        let cpus = std::thread::available_parallelism().unwrap().get() as u32;
        assert_eq!(iowq_cap(64, false), Some(64));
        assert_eq!(iowq_cap(64, true), Some(cpus.min(64)));
        assert_eq!(iowq_cap(1, true), Some(1));
    }
}
