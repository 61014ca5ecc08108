//! The io_uring data engine: up to `iodepth` requests in flight per worker.
//!
//! What the ring uses is chosen by [`UringOptions`]; every feature the
//! kernel refuses is dropped with a note (see [`UringState::notes`]) rather
//! than failing the run:
//!
//! - **Registered (fixed) buffers** (`IORING_OP_READ_FIXED`/`WRITE_FIXED`):
//!   the kernel pins the slot buffers once instead of mapping them per
//!   request.
//! - **A registered file**: the data file goes into slot 0 of the ring's
//!   file table for the phase, so requests skip the per-request `fget`.
//! - **Submission**: [`SubmitMode::Each`] submits each request as it is
//!   queued (fio's default `iodepth_batch_submit=1`); [`SubmitMode::Batch`]
//!   submits a whole refill with the next wait. Batching measured 15–20%
//!   fewer IOPS at depth 32 on the virtio disk here (the queue drains and
//!   refills in lockstep), so `Each` is the default.
//! - `SQPOLL` (a kernel thread polls the submission queue: no system call
//!   to submit, at the price of a polling thread's CPU). The worker then
//!   makes no system call while the thread is awake: it only wakes it
//!   (`IORING_ENTER_SQ_WAKEUP`) when the kernel sets
//!   `IORING_SQ_NEED_WAKEUP`, and it reaps completions by spinning on the
//!   completion ring, as fio's `sqthread_poll` does — two busy CPUs for
//!   one stream of requests.
//! - `COOP_TASKRUN`, `SINGLE_ISSUER`, `DEFER_TASKRUN` (completion work runs
//!   when the worker waits, not by interrupting it). The kernel refuses
//!   them together with `SQPOLL`, so with `SQPOLL` they are left out (with
//!   a note).
//!
//! - **A registered ring descriptor** (`IORING_REGISTER_RING_FDS`, Linux
//!   5.18): the worker thread registers the ring in its own table before
//!   the start barrier, and every `io_uring_enter` passes that index with
//!   `IORING_ENTER_REGISTERED_RING`, so the kernel skips the descriptor
//!   lookup (and, in a threaded process, its reference count) per call.
//! - **No submission index array** (`IORING_SETUP_NO_SQARRAY`, Linux 6.6):
//!   the kernel takes entries in ring order instead of through an array
//!   of indices, one memory read fewer per request.
//!
//! These two change nothing but cost, so every ring asks for them.
//!
//! `IOSCALE_URING_REFUSE=sqpoll,coop,single,fixedbufs,files,ringfd,nosqarray`
//! makes set-up treat those features as refused by the kernel, to test the
//! fallbacks (and to measure what each one saves).
//!
//! - **Issue times** ([`IoQueue::stamp_issue`], asked for by `ioscale
//!   fio` for fio's slat): each request is then submitted by its own
//!   `io_uring_enter` (a batch by one), apart from the wait, and the clock
//!   is read once after that call returns, as fio does.
//!
//! Short transfers are resubmitted for the remainder before the request
//! counts as complete. Every `unsafe` block that hands memory to the
//! kernel is in this module or in [`crate::meta_uring`].

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::thread::ThreadId;

use io_uring::{opcode, squeue, types, IoUring};

use crate::buf::AlignedBuf;
use crate::queue::{Completion, IoFault, IoQueue, Request};

/// When queued requests are handed to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubmitMode {
    /// One `io_uring_enter` per request: a request is handed over when
    /// the next one is queued, and the last of a refill with the wait for
    /// completions (one call, not a submit and then a wait).
    #[default]
    Each,
    /// All requests of a refill in one `io_uring_enter`, with the wait.
    Batch,
}

impl SubmitMode {
    /// The name on a command line (`each`, `batch`).
    pub fn name(self) -> &'static str {
        match self {
            SubmitMode::Each => "each",
            SubmitMode::Batch => "batch",
        }
    }

    /// Parses [`SubmitMode::name`].
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "each" => Some(SubmitMode::Each),
            "batch" => Some(SubmitMode::Batch),
            _ => None,
        }
    }
}

/// How the io_uring rings are set up. The default is the engine as it was
/// before these options existed, plus what measured as free or better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UringOptions {
    /// Register the slot buffers with the ring (READ_FIXED/WRITE_FIXED).
    pub fixed_buffers: bool,
    /// Register the data file in the ring's file table.
    pub register_files: bool,
    /// When to submit.
    pub submit: SubmitMode,
    /// `IORING_SETUP_SQPOLL` with this idle time in milliseconds.
    pub sqpoll_idle_ms: Option<u32>,
    /// `IORING_SETUP_COOP_TASKRUN`.
    pub coop_taskrun: bool,
    /// `IORING_SETUP_SINGLE_ISSUER` plus `DEFER_TASKRUN`.
    pub single_issuer: bool,
    /// Without SQPOLL: wait for completions by spinning instead of
    /// sleeping in `io_uring_enter` (see `UringQueue::spin_wait`).
    pub spin: bool,
}

impl Default for UringOptions {
    fn default() -> Self {
        UringOptions {
            fixed_buffers: false,
            register_files: false,
            submit: SubmitMode::Each,
            sqpoll_idle_ms: None,
            coop_taskrun: false,
            single_issuer: false,
            spin: false,
        }
    }
}

impl UringOptions {
    /// The options a spec asks for (`--uring-opts`).
    pub fn from_spec(o: &spec::UringOpts) -> Self {
        UringOptions {
            fixed_buffers: o.fixed_buffers,
            register_files: o.register_files,
            submit: if o.batch_submit {
                SubmitMode::Batch
            } else {
                SubmitMode::Each
            },
            sqpoll_idle_ms: o.sqpoll_idle_ms,
            coop_taskrun: o.coop_taskrun,
            single_issuer: o.single_issuer,
            spin: o.spin,
        }
    }

    /// fio's best-known set: fixed buffers, registered file, COOP_TASKRUN
    /// and SINGLE_ISSUER/DEFER_TASKRUN.
    pub fn tuned() -> Self {
        UringOptions {
            fixed_buffers: true,
            register_files: true,
            coop_taskrun: true,
            single_issuer: true,
            ..Default::default()
        }
    }
}

/// A ring with its slot buffers: made before the timed section and kept
/// across phases. The ring is declared first so it is dropped (and the
/// kernel lets go of registered buffers) before the buffers are freed.
pub struct UringState {
    ring: IoUring,
    bufs: Vec<AlignedBuf>,
    opts: UringOptions,
    fixed_bufs: bool,
    file_table: bool,
    /// With SINGLE_ISSUER: the thread the ring was enabled on.
    issuer: Option<ThreadId>,
    /// The ring's index in the bound worker thread's registered-ring table
    /// ([`UringState::bind_to_thread`]), until [`UringQueue::finish`]
    /// gives it back; `None`: enter through the plain descriptor.
    ring_index: Option<u32>,
    depth: u32,
    notes: Vec<String>,
}

fn build_ring(
    depth: u32,
    o: &UringOptions,
    notes: &mut Vec<String>,
) -> io::Result<(IoUring, bool)> {
    let entries = depth.next_power_of_two().max(1);
    let try_build = |nosqarray: bool, sqpoll: bool, coop: bool, single: bool| {
        if (nosqarray && refused("nosqarray"))
            || (sqpoll && refused("sqpoll"))
            || (coop && refused("coop"))
            || (single && refused("single"))
        {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let mut b = IoUring::builder();
        if nosqarray {
            b.setup_no_sqarray();
        }
        if let (true, Some(idle)) = (sqpoll, o.sqpoll_idle_ms) {
            b.setup_sqpoll(idle);
        }
        if coop {
            b.setup_coop_taskrun();
        }
        if o.spin && (coop || single) {
            // Task work waiting to be run is flagged in the ring, where a
            // spinning worker sees it (IORING_SQ_TASKRUN).
            b.setup_taskrun_flag();
        }
        if single {
            // Disabled until the worker thread enables it, so the ring's
            // one issuer is the thread that submits, not the one that made
            // the ring.
            b.setup_single_issuer()
                .setup_defer_taskrun()
                .setup_r_disabled();
        }
        b.build(entries)
    };
    let mut sq = o.sqpoll_idle_ms.is_some();
    let mut coop = o.coop_taskrun;
    let mut single = o.single_issuer;
    if sq && (coop || single) {
        // The kernel refuses COOP_TASKRUN and DEFER_TASKRUN with SQPOLL
        // (EINVAL): completions are posted by the polling thread, so there
        // is no task work to defer.
        notes.push(
            "io_uring: COOP_TASKRUN and SINGLE_ISSUER/DEFER_TASKRUN are not used with SQPOLL \
             (the kernel does not combine them)"
                .into(),
        );
        coop = false;
        single = false;
    }
    let nosqarray = true;
    loop {
        let r = match try_build(nosqarray, sq, coop, single) {
            // EINVAL does not say which flag: blame NO_SQARRAY only if the
            // same set builds without it.
            Err(e) if nosqarray && e.raw_os_error() == Some(libc::EINVAL) => {
                match try_build(false, sq, coop, single) {
                    Ok(r) => {
                        notes.push(
                            "io_uring: NO_SQARRAY not supported by this kernel; \
                             the index array is used"
                                .into(),
                        );
                        Ok(r)
                    }
                    Err(_) => Err(e),
                }
            }
            r => r,
        };
        match r {
            Ok(r) => return Ok((r, single)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && single => {
                notes.push(
                    "io_uring: SINGLE_ISSUER/DEFER_TASKRUN not supported by this kernel; not used"
                        .into(),
                );
                single = false;
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && coop => {
                notes.push("io_uring: COOP_TASKRUN not supported by this kernel; not used".into());
                coop = false;
            }
            Err(e) if sq && matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EPERM)) => {
                notes.push(format!("io_uring: SQPOLL refused ({e}); not used"));
                sq = false;
                coop = o.coop_taskrun;
                single = o.single_issuer;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Whether `IOSCALE_URING_REFUSE` (a comma list of `sqpoll`, `coop`,
/// `single`, `fixedbufs`, `files`, `ringfd`, `nosqarray`) makes ring set-up treat `feature` as
/// refused by the kernel: the tests of the fallbacks use it, since this
/// kernel refuses none of them. Read at set-up only, never per request.
fn refused(feature: &str) -> bool {
    std::env::var("IOSCALE_URING_REFUSE").is_ok_and(|v| v.split(',').any(|f| f.trim() == feature))
}

/// The error a refused registration reports (see [`refused`]).
fn refusal() -> io::Error {
    io::Error::from_raw_os_error(libc::EOPNOTSUPP)
}

impl UringState {
    /// A ring for `bufs.len()` requests in flight, with one buffer per slot.
    pub fn new(bufs: Vec<AlignedBuf>, opts: UringOptions) -> io::Result<Self> {
        let depth = bufs.len().max(1) as u32;
        let mut notes = Vec::new();
        let (ring, single) = build_ring(depth, &opts, &mut notes)?;
        let mut st = UringState {
            ring,
            bufs,
            opts,
            fixed_bufs: false,
            file_table: false,
            issuer: None,
            ring_index: None,
            depth,
            notes,
        };
        if !single {
            st.opts.single_issuer = false;
        }
        st.register();
        Ok(st)
    }

    fn register(&mut self) {
        if self.opts.fixed_buffers {
            let iov: Vec<libc::iovec> = self
                .bufs
                .iter_mut()
                .map(|b| libc::iovec {
                    iov_base: b.as_mut_slice().as_mut_ptr().cast(),
                    iov_len: b.len(),
                })
                .collect();
            let r = if refused("fixedbufs") {
                Err(refusal())
            } else {
                // SAFETY: each iovec covers a live heap buffer owned by
                // `self.bufs`; the buffers are never resized or freed while
                // the ring lives (the ring field is dropped first, and a
                // state whose requests cannot be reaped is leaked whole), so
                // the kernel's pinned pages stay valid.
                unsafe { self.ring.submitter().register_buffers(&iov) }
            };
            match r {
                Ok(()) => self.fixed_bufs = true,
                Err(e) => self.notes.push(format!(
                    "io_uring: registering buffers failed ({e}); plain buffers used"
                )),
            }
        }
        if self.opts.register_files {
            let r = if refused("files") {
                Err(refusal())
            } else {
                self.ring.submitter().register_files_sparse(1)
            };
            match r {
                Ok(()) => self.file_table = true,
                Err(e) => self.notes.push(format!(
                    "io_uring: registering files failed ({e}); plain descriptors used"
                )),
            }
        }
    }

    /// Notes on features asked for but not available.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Readies the ring for the calling worker thread, before the start
    /// barrier (never timed): makes it the ring's issuer (SINGLE_ISSUER) —
    /// enabling a fresh ring, or building a new one if another thread
    /// enabled this one — and registers the ring's descriptor in this
    /// thread's table (`UringState::register_ring_fd`).
    pub fn bind_to_thread(&mut self) -> io::Result<()> {
        if self.opts.single_issuer {
            let me = std::thread::current().id();
            if self.issuer != Some(me) {
                if self.issuer.is_some() {
                    let mut notes = Vec::new();
                    let (ring, _) = build_ring(self.depth, &self.opts, &mut notes)?;
                    // The old ring goes first: it held the buffers'
                    // registration (and a thread's table may still hold it).
                    self.ring = ring;
                    self.ring_index = None;
                    self.fixed_bufs = false;
                    self.file_table = false;
                    self.register();
                }
                self.ring.submitter().register_enable_rings()?;
                self.issuer = Some(me);
            }
        }
        self.register_ring_fd();
        Ok(())
    }

    /// Registers the ring's descriptor in the calling thread's table of
    /// rings (`IORING_REGISTER_RING_FDS`), so the phase's `io_uring_enter`
    /// calls skip the descriptor lookup. The table is per thread: the
    /// phase's [`UringQueue::finish`], on the same thread, gives the slot
    /// back. Refused (a kernel before 5.18, or a full table): one note, and
    /// the plain descriptor is used.
    fn register_ring_fd(&mut self) {
        if self.ring_index.is_some() {
            return;
        }
        let r = if refused("ringfd") {
            Err(refusal())
        } else {
            let mut up = RsrcUpdate {
                offset: u32::MAX,
                resv: 0,
                data: self.ring.as_raw_fd() as u64,
            };
            // SAFETY: `up` is a live io_uring_rsrc_update the kernel reads
            // and writes (the index it chose) during the call only.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_uring_register,
                    self.ring.as_raw_fd(),
                    IORING_REGISTER_RING_FDS,
                    &mut up as *mut RsrcUpdate,
                    1u32,
                )
            };
            if r == 1 {
                Ok(up.offset)
            } else if r < 0 {
                Err(io::Error::last_os_error())
            } else {
                Err(io::Error::other(format!("{r} rings registered, not 1")))
            }
        };
        match r {
            Ok(i) => self.ring_index = Some(i),
            Err(e) => {
                let n = format!(
                    "io_uring: registering the ring's descriptor failed ({e}); plain descriptor used"
                );
                if !self.notes.contains(&n) {
                    self.notes.push(n);
                }
            }
        }
    }

    /// Gives back the calling thread's registered-ring slot (see
    /// [`UringState::register_ring_fd`]); on the thread that registered it.
    fn unregister_ring_fd(&mut self) {
        let Some(i) = self.ring_index.take() else {
            return;
        };
        let up = RsrcUpdate {
            offset: i,
            resv: 0,
            data: 0,
        };
        // SAFETY: the kernel only reads `up` during the call. A failure
        // leaves the slot to the thread's exit, which releases it.
        unsafe {
            libc::syscall(
                libc::SYS_io_uring_register,
                self.ring.as_raw_fd(),
                IORING_UNREGISTER_RING_FDS,
                &up as *const RsrcUpdate,
                1u32,
            );
        }
    }

    /// One `io_uring_enter`: hands over whatever is queued and, with
    /// `want > 0`, waits for that many completions. Through the registered
    /// ring index where there is one. With SQPOLL it makes the call only
    /// to wake the polling thread, or to wait; otherwise the kernel must
    /// see every call (to submit, run deferred task work, or flush an
    /// overflowed completion queue).
    fn enter(&mut self, want: u32) -> io::Result<usize> {
        self.enter_with(want, false)
    }

    /// [`UringState::enter`]; with `run_work`, always with
    /// `IORING_ENTER_GETEVENTS`, so the kernel runs completion work waiting
    /// for this thread (and posts its completions) even with `want == 0`.
    fn enter_with(&mut self, want: u32, run_work: bool) -> io::Result<usize> {
        let sqpoll = self.ring.params().is_setup_sqpoll();
        let sq = self.ring.submission();
        let len = sq.len() as u32;
        let busy = sq.cq_overflow() || sq.taskrun();
        let mut flags = 0;
        if want > 0 || busy || run_work {
            flags |= IORING_ENTER_GETEVENTS;
        }
        if sqpoll {
            // `need_wakeup` orders this load after the tail's store.
            if sq.need_wakeup() {
                flags |= IORING_ENTER_SQ_WAKEUP;
            } else if want == 0 && !busy {
                return Ok(len as usize);
            }
        }
        drop(sq);
        let fd = match self.ring_index {
            Some(i) => {
                flags |= IORING_ENTER_REGISTERED_RING;
                i as libc::c_long
            }
            None => self.ring.as_raw_fd() as libc::c_long,
        };
        // SAFETY: no argument pointer is passed (no signal mask, size 0);
        // what the kernel reads from the rings was made valid by `push`.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_enter,
                fd,
                len,
                want,
                flags,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }
}

/// `struct io_uring_rsrc_update` of the kernel's ABI.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

const IORING_REGISTER_RING_FDS: libc::c_uint = 20;
const IORING_UNREGISTER_RING_FDS: libc::c_uint = 21;
const IORING_ENTER_GETEVENTS: u32 = 1;
const IORING_ENTER_SQ_WAKEUP: u32 = 2;
const IORING_ENTER_REGISTERED_RING: u32 = 1 << 4;

struct Slot {
    req: Request,
    done: u32,
}

/// An io_uring queue over one file for one phase.
pub struct UringQueue<'s> {
    st: &'s mut UringState,
    fd: i32,
    fixed_file: bool,
    slots: Vec<Slot>,
    batch: bool,
    /// The ring has a polling kernel thread (SQPOLL): see
    /// [`UringQueue::submit_and_reap`].
    sqpoll: bool,
    /// Wait for completions by spinning ([`UringQueue::spin_wait`]).
    spin: bool,
    /// In `Each` mode: the newest request is in the submission queue but
    /// not yet handed to the kernel (it goes with the next push or wait).
    held: bool,
    outstanding: usize,
    /// Note when each request is handed over ([`IoQueue::stamp_issue`]).
    stamp: bool,
    /// With `stamp`: per slot, when its submit call returned.
    issued: Vec<std::time::Instant>,
    /// With `stamp` in `Batch` mode: slots pushed, not yet handed over.
    unsent: Vec<usize>,
    /// Short transfers queued again, reads then writes
    /// ([`IoQueue::take_short_ios`]).
    short: [u64; 2],
}

impl<'s> UringQueue<'s> {
    /// A queue over `file` using `st`'s ring and buffers.
    pub fn new(file: &File, st: &'s mut UringState) -> Self {
        let fd = file.as_raw_fd();
        let mut fixed_file = false;
        if st.file_table {
            match st.ring.submitter().register_files_update(0, &[fd]) {
                Ok(_) => fixed_file = true,
                Err(e) => {
                    st.notes.push(format!(
                        "io_uring: file registration failed ({e}); plain descriptor used"
                    ));
                    st.file_table = false;
                }
            }
        }
        let slots = (0..st.bufs.len())
            .map(|_| Slot {
                req: Request {
                    offset: 0,
                    len: 0,
                    write: false,
                },
                done: 0,
            })
            .collect();
        let sqpoll = st.ring.params().is_setup_sqpoll();
        let batch = st.opts.submit == SubmitMode::Batch && !sqpoll;
        let spin = st.opts.spin && !sqpoll;
        UringQueue {
            st,
            fd,
            fixed_file,
            slots,
            batch,
            sqpoll,
            spin,
            held: false,
            outstanding: 0,
            stamp: false,
            issued: Vec::new(),
            unsent: Vec::new(),
            short: [0; 2],
        }
    }

    /// Ends the phase once nothing is in flight. Returns false if requests
    /// are still outstanding and cannot be reaped (the ring failed): the
    /// caller must then leak the state rather than free buffers the kernel
    /// may still write into.
    pub fn finish(mut self) -> bool {
        let mut tries = 0;
        while self.outstanding > 0 && tries < 1000 {
            tries += 1;
            if self.st.enter(1).is_err() {
                continue;
            }
            let n = self.st.ring.completion().count();
            self.outstanding = self.outstanding.saturating_sub(n);
        }
        if self.outstanding > 0 {
            return false;
        }
        self.st.unregister_ring_fd();
        if self.fixed_file {
            // Drop the ring's reference to the file so closing it really
            // releases it.
            let _ = self.st.ring.submitter().register_files_update(0, &[-1]);
        }
        true
    }

    fn queue_slot(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        let done = s.done as usize;
        let len = s.req.len - s.done;
        let off = s.req.offset + done as u64;
        let buf = &mut self.st.bufs[slot];
        let ptr = buf.as_mut_slice()[done..].as_mut_ptr();
        let idx = slot as u16;
        let entry = match (self.st.fixed_bufs, self.fixed_file, s.req.write) {
            (true, true, false) => opcode::ReadFixed::new(types::Fixed(0), ptr, len, idx)
                .offset(off)
                .build(),
            (true, false, false) => opcode::ReadFixed::new(types::Fd(self.fd), ptr, len, idx)
                .offset(off)
                .build(),
            (true, true, true) => opcode::WriteFixed::new(types::Fixed(0), ptr, len, idx)
                .offset(off)
                .build(),
            (true, false, true) => opcode::WriteFixed::new(types::Fd(self.fd), ptr, len, idx)
                .offset(off)
                .build(),
            (false, true, false) => opcode::Read::new(types::Fixed(0), ptr, len)
                .offset(off)
                .build(),
            (false, false, false) => opcode::Read::new(types::Fd(self.fd), ptr, len)
                .offset(off)
                .build(),
            (false, true, true) => opcode::Write::new(types::Fixed(0), ptr, len)
                .offset(off)
                .build(),
            (false, false, true) => opcode::Write::new(types::Fd(self.fd), ptr, len)
                .offset(off)
                .build(),
        }
        .user_data(slot as u64);
        if self.sqpoll {
            // The polling thread takes the entry from the ring by itself;
            // `submit` makes a system call only to wake it when it has gone
            // idle (IORING_SQ_NEED_WAKEUP), with IORING_ENTER_SQ_WAKEUP.
            push_entry(self.st, &entry);
            submit_now(self.st);
            return;
        }
        if !self.batch && self.held {
            // Hand the previous request over now rather than at the next
            // wait: the device starts on it at once, which keeps the queue
            // evenly full. The newest one waits for the next push or for
            // the wait, whose io_uring_enter submits it: one system call
            // per request instead of one per request plus one per wait.
            submit_now(self.st);
        }
        push_entry(self.st, &entry);
        self.held = !self.batch;
    }
}

/// Pushes one entry; the submission queue has at least `depth` entries and
/// at most `depth` requests are ever in flight, so it is never full — if
/// it were, submitting first makes room.
fn push_entry(st: &mut UringState, entry: &squeue::Entry) {
    loop {
        // SAFETY: the entry's buffer pointer stays valid and unaliased until
        // its completion is reaped: slot buffers are owned by the
        // `UringState`, which is neither resized nor dropped while requests
        // are in flight (a state that cannot be drained is leaked), and the
        // worker touches a slot's buffer only between its completion and its
        // next push. The file (or the registered slot) stays open for the
        // queue's lifetime.
        let pushed = unsafe { st.ring.submission().push(entry) };
        if pushed.is_ok() {
            return;
        }
        let _ = st.enter(0);
    }
}

fn submit_now(st: &mut UringState) {
    loop {
        match st.enter(0) {
            Ok(_) => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // EBUSY/EAGAIN: the completion queue is full; the next wait
            // reaps and submits what is left.
            Err(_) => return,
        }
    }
}

impl IoQueue for UringQueue<'_> {
    fn depth(&self) -> usize {
        self.slots.len()
    }

    fn buf_mut(&mut self, slot: usize) -> &mut [u8] {
        self.st.bufs[slot].as_mut_slice()
    }

    fn buf(&self, slot: usize) -> &[u8] {
        self.st.bufs[slot].as_slice()
    }

    fn take_short_ios(&mut self) -> [u64; 2] {
        std::mem::take(&mut self.short)
    }

    #[inline]
    fn push(&mut self, slot: usize, req: Request) {
        self.slots[slot].req = req;
        self.slots[slot].done = 0;
        self.outstanding += 1;
        self.queue_slot(slot);
        if self.stamp {
            if self.batch {
                self.unsent.push(slot);
            } else {
                // fio's iodepth_batch_submit=1: each request is handed
                // over by its own io_uring_enter, and one clock read
                // after it returns is its issue time.
                submit_now(self.st);
                self.held = false;
                self.issued[slot] = std::time::Instant::now();
            }
        }
    }

    fn stamp_issue(&mut self) {
        self.stamp = true;
        self.issued = vec![std::time::Instant::now(); self.slots.len()];
        self.unsent = Vec::with_capacity(self.slots.len());
    }

    #[inline]
    fn issued_at(&self, slot: usize) -> Option<std::time::Instant> {
        self.stamp.then(|| self.issued[slot])
    }

    fn submit_and_reap(&mut self, out: &mut Vec<Completion>) -> io::Result<()> {
        out.clear();
        let mut spins = 0u32;
        if !self.unsent.is_empty() {
            // A batch handed over by one submit call, apart from the wait
            // so its return can be timed: one clock read for the batch, as
            // fio stamps a committed batch.
            submit_now(self.st);
            let t = std::time::Instant::now();
            for &slot in &self.unsent {
                self.issued[slot] = t;
            }
            self.unsent.clear();
        }
        loop {
            if self.sqpoll {
                // Requests are already with the polling thread, and its
                // completions land in the ring: look there without a system
                // call, spinning as fio's `sqthread_poll` does. The look
                // only reads the ring's head and tail (taking the queue
                // would write the head back on every look, a cache line the
                // kernel thread writes too). Now and then make sure the
                // thread is awake (a free check while it is), and yield the
                // CPU: where CPUs are short, the polling thread may be
                // waiting for this one.
                // SAFETY: `status` reads the ring's head and tail through
                // pointers into the ring's mapping; it is used only in this
                // loop, while `self.st` (and so the ring) is borrowed.
                let status = unsafe { self.st.ring.completion().status() };
                while status.is_empty() {
                    spins = spins.wrapping_add(1);
                    if spins.is_multiple_of(1024) {
                        submit_now(self.st);
                        std::thread::yield_now();
                    }
                    std::hint::spin_loop();
                }
            } else if self.spin {
                self.spin_wait()?;
            } else {
                match self.st.enter(1) {
                    Ok(_) => self.held = false,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
                    Err(e) => return Err(e),
                }
            }
            self.reap(out);
            if !out.is_empty() {
                return Ok(());
            }
        }
    }
}

impl UringQueue<'_> {
    /// Waits for a completion without sleeping (`spin`, without SQPOLL):
    /// hands over what is queued, then watches the completion ring. A
    /// sleeping wait costs a wake-up per completion (in a virtual machine,
    /// an idle vCPU's halt and its wake); spinning saves that, at the price
    /// of a busy CPU. Completions reach the ring as task work of this
    /// thread: by an interrupt of the spinning thread (no task-work flags),
    /// or, with COOP_TASKRUN/DEFER_TASKRUN, when the thread enters the
    /// kernel — so when the ring flags waiting work (IORING_SQ_TASKRUN, set
    /// up with those flags), one `io_uring_enter` that does not wait runs
    /// it. Now and then it enters anyway and yields the CPU, for a
    /// machine whose CPUs are short.
    fn spin_wait(&mut self) -> io::Result<()> {
        let entered = |r: io::Result<usize>| match r {
            Err(e) if !matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY)) => Err(e),
            _ => Ok(()),
        };
        if !self.st.ring.submission().is_empty() {
            entered(self.st.enter(0))?;
        }
        self.held = false;
        // SAFETY: `status` reads the ring's head and tail through pointers
        // into the ring's mapping; it is used only in this function, while
        // `self.st` (and so the ring) is borrowed.
        let status = unsafe { self.st.ring.completion().status() };
        let mut spins = 0u32;
        while status.is_empty() {
            spins = spins.wrapping_add(1);
            if self.st.ring.submission().taskrun() || spins.is_multiple_of(1024) {
                entered(self.st.enter_with(0, true))?;
                if spins.is_multiple_of(1024) {
                    std::thread::yield_now();
                }
            }
            std::hint::spin_loop();
        }
        Ok(())
    }

    /// Takes every completion in the ring: finished requests go to `out`,
    /// short transfers are queued again for the rest.
    fn reap(&mut self, out: &mut Vec<Completion>) {
        let mut resubmit: [usize; 64] = [0; 64];
        let mut n_resubmit = 0usize;
        let mut cq = self.st.ring.completion();
        cq.sync();
        for cqe in &mut cq {
            let slot = cqe.user_data() as usize;
            let res = cqe.result();
            let s = &mut self.slots[slot];
            let result = if res < 0 {
                Some(Err(IoFault::Errno(-res)))
            } else if res == 0 {
                Some(Err(if s.req.write {
                    IoFault::NoProgress
                } else {
                    IoFault::ShortRead { got: s.done }
                }))
            } else {
                s.done += res as u32;
                if s.done >= s.req.len {
                    Some(Ok(()))
                } else {
                    None
                }
            };
            match result {
                Some(r) => {
                    self.outstanding -= 1;
                    out.push(Completion {
                        slot: slot as u32,
                        req: s.req,
                        result: r,
                    })
                }
                None if n_resubmit < resubmit.len() => {
                    resubmit[n_resubmit] = slot;
                    n_resubmit += 1;
                    self.short[usize::from(s.req.write)] += 1;
                }
                None => {
                    // Far beyond any sane count of short transfers in one
                    // batch; report rather than lose it.
                    self.outstanding -= 1;
                    out.push(Completion {
                        slot: slot as u32,
                        req: s.req,
                        result: Err(IoFault::Errno(libc::EIO)),
                    });
                }
            }
        }
        drop(cq);
        for &slot in &resubmit[..n_resubmit] {
            self.queue_slot(slot);
        }
    }
}

impl UringQueue<'_> {
    /// A ring big enough for `depth` requests in flight with default flags;
    /// the driver's preflight check that io_uring is available.
    pub fn ring(depth: usize) -> io::Result<IoUring> {
        IoUring::new((depth as u32).next_power_of_two().max(1))
    }
}
