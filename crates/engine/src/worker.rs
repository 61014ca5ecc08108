//! One worker's share of one phase: open, transfer, sync, close.
//!
//! Everything a worker needs is prepared before the start barrier (buffers
//! touched, io_uring ring created), so the timed section holds only what
//! IOR times: open, the transfers, the optional fsync, and close. The loop
//! owns all its state — counters, histogram, generator — and never
//! allocates, locks or formats per operation; other threads learn about it
//! only through a few relaxed atomics.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use spec::{Layout, Op, SyncMode, WorkloadSpec, XferSizes};
use stats::{IoCounters, LatencyHistogram};

use crate::backend::posix::Posix;
use crate::backend::{Backend, DataFile, OpenHow};
use crate::offsets::{splitmix64, OffsetGen};
use crate::pattern;
use crate::queue::{Completion, IoQueue, Request};

/// Everything the workers of one phase share, on backend `B` (POSIX
/// unless named): the workload (held, not copied field by field:
/// transfer size, block, segments, layout, engine, depth, seed, pattern
/// and mix are the spec's) and what this phase sets apart from it.
#[derive(Debug, Clone)]
pub struct PhasePlan<B: Backend = Posix> {
    /// The workload as its user gave it (`threads` is workers per
    /// process; the count of all workers is [`PhasePlan::workers`]).
    pub spec: Arc<WorkloadSpec>,
    /// Workers in the phase across every rank (the topology's count).
    pub workers: u32,
    /// The access pattern.
    pub op: Op,
    /// Sync mode: the spec's in a timed phase, [`SyncMode::End`] in an
    /// untimed layout.
    pub sync: SyncMode,
    /// Worker r works on the data of worker (r + offset) mod workers: the
    /// spec's `reorder_offset` in a pure read phase, 0 otherwise.
    pub reorder_offset: u32,
    /// Path of each data file, by file index.
    pub files: Vec<PathBuf>,
    /// Buffer alignment in bytes.
    pub align: usize,
    /// Stop issuing requests this long after the phase started.
    pub time_limit: Option<Duration>,
    /// Repetition number, mixed into the seed of random phases.
    pub rep: u32,
    /// Where each data file is opened from, by file index: a directory
    /// the caller holds open and the file's name in it. A file with an
    /// anchor is opened relative to that directory by the backend's
    /// [`Backend::open_data`] (never through a link, never a FIFO, a
    /// device or a file with other names), so a path swapped after the
    /// caller opened the directory is never followed; one without (an
    /// empty list) is the user's own file, opened by its path in `files`
    /// ([`Backend::open_path`]).
    pub anchors: Vec<Option<FileAnchor<B>>>,
    /// With `time_limit`: every worker meets the others at the limit and
    /// goes on to the busiest one's count ([`crate::wearout`]); the driver
    /// gives the phase's [`PhaseControl`] its meeting point. The spec's
    /// `wearout` in a timed phase ([`PhasePlan::new`]), off in a layout.
    pub wearout: bool,
    /// Transfers of each owner's data that exist, by owner; empty: all.
    /// A worker issues at most that many of its walk (with the spec's
    /// `random_repeats`: draws among that many slots). The spec's
    /// `item_counts` ([`PhasePlan::new`]); empty in a layout, which
    /// writes every transfer.
    pub item_counts: Vec<u64>,
    /// What the workers keep beyond ioscale's own figures (fio's).
    pub detail: Detail,
    /// The first live-counter slot of this phase's workers (worker `w`
    /// publishes to slot `slot + w`, see [`crate::live`]): 0, except for
    /// the later steps of a concurrency group, whose workers run beside
    /// the first step's.
    pub slot: u32,
    /// The intervals each worker records its share of the phase's series
    /// on ([`WorkerSample::series`]); `None`: no series.
    pub series: Option<crate::series::SeriesGrid>,
}

/// What a worker keeps beyond ioscale's own figures: fio's latencies by
/// direction and, on request, every request. A plan field, chosen per
/// phase (no process-wide switch), so other runs do not pay for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Detail {
    /// ioscale's figures only.
    #[default]
    Off,
    /// [`WorkerSample::detail`]: latencies by direction, the submission
    /// time of each request of a queueing engine, and per-direction live
    /// totals ([`crate::live::lifetime_dirs`]).
    Latency,
    /// As `Latency`, and every request in [`DirLatency::log`] (fio's logs
    /// without `log_avg_msec`). The list is reserved before the start
    /// barrier for the phase's requests (up to a million; a longer
    /// time-limited phase grows it as it goes).
    IoLog,
}

/// A data file reached through a held directory: see
/// [`PhasePlan::anchors`].
pub struct FileAnchor<B: Backend = Posix> {
    /// The directory, held open by the caller for the whole run.
    pub dir: Arc<B::At>,
    /// The file's name in it (one component).
    pub name: std::ffi::CString,
}

impl<B: Backend> Clone for FileAnchor<B> {
    fn clone(&self) -> Self {
        FileAnchor {
            dir: Arc::clone(&self.dir),
            name: self.name.clone(),
        }
    }
}

impl<B: Backend> std::fmt::Debug for FileAnchor<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileAnchor")
            .field("dir", &self.dir)
            .field("name", &self.name)
            .finish()
    }
}

impl<B: Backend> FileAnchor<B> {
    /// Opens the file as the backend opens a data file
    /// ([`Backend::open_data`]).
    pub fn open_with(&self, how: OpenHow) -> std::io::Result<B::File> {
        B::open_data(&self.dir, &self.name, how)
    }
}

impl FileAnchor<Posix> {
    /// Opens the file: `openat(dir, name)` with `O_NOFOLLOW` (a link there
    /// fails with ELOOP) and `O_NONBLOCK` while opening (a FIFO planted
    /// under the name does not hang the worker), then refuses anything
    /// but a regular file with one name. `flags` are the access mode and
    /// extra flags (`O_CREAT`, `O_DIRECT`, `O_SYNC`…).
    pub fn open(&self, flags: i32, mode: u32) -> std::io::Result<std::fs::File> {
        crate::backend::posix::open_data_flags(&self.dir, &self.name, flags, mode)
    }
}

impl<B: Backend> PhasePlan<B> {
    /// The plan of a timed `op` phase of `spec` on `workers` workers over
    /// `files`: the spec's sync mode and time limit, its reorder offset in
    /// a pure read phase, its wear-out (when timed) and carried item
    /// counts, 4 KiB alignment, repetition 0, no anchors, no detail, no
    /// series. The driver sets what differs.
    pub fn new(spec: Arc<WorkloadSpec>, workers: u32, op: Op, files: Vec<PathBuf>) -> Self {
        Self {
            workers,
            op,
            sync: spec.sync,
            // IOR -C: only pure read phases read someone else's data.
            reorder_offset: if op.writes() { 0 } else { spec.reorder_offset },
            files,
            align: 4096,
            time_limit: spec.time_limit,
            rep: 0,
            anchors: Vec::new(),
            wearout: spec.wearout && spec.time_limit.is_some(),
            item_counts: spec.item_counts.clone(),
            detail: Detail::Off,
            slot: 0,
            series: None,
            spec,
        }
    }

    /// Bytes per request.
    #[inline]
    pub fn xfer(&self) -> u64 {
        self.spec.xfer
    }

    /// Bytes of each request buffer: the largest request.
    pub fn buf_len(&self) -> u64 {
        let s = &self.spec;
        let r = s.xfer_sizes.as_ref().map_or(s.xfer, |z| z.max);
        s.write_sizes.as_ref().map_or(r, |w| w.max.max(r))
    }

    /// The worker whose data worker `w` touches.
    pub fn owner_of(&self, w: u32) -> u32 {
        (w + self.reorder_offset) % self.workers
    }

    /// The file index worker `w` opens.
    pub fn file_of(&self, w: u32) -> usize {
        match self.spec.layout {
            Layout::Shared => 0,
            _ => self.owner_of(w) as usize,
        }
    }

    /// File offset of transfer `i` of the data owned by worker `owner`.
    ///
    /// Shared file: IOR's segmented layout, where the block of worker r in
    /// segment s starts at s·workers·block + r·block. One file per worker:
    /// its blocks follow each other.
    #[inline]
    pub fn offset_of(&self, owner: u32, i: u64) -> u64 {
        let s = &*self.spec;
        let per_block = s.block / s.xfer;
        let seg = i / per_block;
        let t = i % per_block;
        match s.layout {
            Layout::Shared => {
                seg * self.workers as u64 * s.block + owner as u64 * s.block + t * s.xfer
            }
            _ => seg * s.block + t * s.xfer,
        }
    }

    /// Transfers per worker.
    pub fn xfers(&self) -> u64 {
        self.spec.xfers_per_worker()
    }

    /// The live-counter slot of worker `w` (see [`PhasePlan::slot`]).
    #[inline]
    pub fn live_slot(&self, w: u32) -> u32 {
        self.slot.wrapping_add(w)
    }

    /// The part of its file worker `w` touches, as (offset, length): its
    /// own region from its start offset (fio's `file_offset` and
    /// `io_size`), or, in a shared file, the whole file (length 0: to the
    /// end).
    pub fn region_of(&self, w: u32) -> (u64, u64) {
        match self.spec.layout {
            Layout::Shared => (0, 0),
            _ => {
                let owner = self.owner_of(w) as usize;
                let start = self.spec.start_offsets.get(owner).copied().unwrap_or(0);
                (start, self.xfers() * self.xfer())
            }
        }
    }

    /// The transfers of `owner`'s data that exist: its
    /// [`PhasePlan::item_counts`] entry (at most [`PhasePlan::xfers`]),
    /// or all.
    pub fn items_of(&self, owner: u32) -> u64 {
        let n = self.xfers();
        if self.item_counts.is_empty() {
            return n;
        }
        self.item_counts
            .get(owner as usize)
            .map_or(0, |&c| c.min(n))
    }
}

/// Signals shared by the workers of a phase and the driver.
#[derive(Debug)]
pub struct PhaseControl {
    /// Set from outside (Ctrl-C, a failed peer rank): stop issuing.
    pub stop: Arc<AtomicBool>,
    /// Set by a worker that hit an error: the others stop too.
    pub abort: AtomicBool,
    /// Set by the first worker to finish its transfers (the stonewall).
    pub first_done: AtomicBool,
    /// When the first worker finished, in ns since `epoch`.
    pub first_done_ns: AtomicU64,
    /// The common time origin of all timestamps in the samples.
    pub epoch: Instant,
    /// Where the workers meet at the time limit, in a phase with the
    /// stonewall wear-out.
    pub wearout: Option<crate::wearout::WearOut>,
    /// A deadline set while the phase runs (`--steady` reached), ns
    /// since `epoch`; `u64::MAX`: none. Read only where a time limit is.
    pub cut_ns: AtomicU64,
}

impl PhaseControl {
    /// Fresh signals for one phase.
    pub fn new(stop: Arc<AtomicBool>) -> Self {
        PhaseControl {
            stop,
            abort: AtomicBool::new(false),
            first_done: AtomicBool::new(false),
            first_done_ns: AtomicU64::new(0),
            epoch: Instant::now(),
            wearout: None,
            cut_ns: AtomicU64::new(u64::MAX),
        }
    }

    /// Ends the phase at `at_ns` (ns since the epoch) as its time limit
    /// would: a phase bounded by time stops there, its workers marked
    /// time-limited, not interrupted.
    pub fn cut(&self, at_ns: u64) {
        self.cut_ns.fetch_min(at_ns, Ordering::Relaxed);
    }

    /// Whether `now` is past the time limit `deadline` or the cut.
    #[inline]
    pub fn past(&self, deadline: Instant, now: Instant) -> bool {
        now >= deadline || {
            let c = self.cut_ns.load(Ordering::Relaxed);
            c != u64::MAX && ns_since(self.epoch, now) >= c
        }
    }

    /// The same, with the wear-out's meeting point `w`.
    pub fn with_wearout(mut self, w: crate::wearout::WearOut) -> Self {
        self.wearout = Some(w);
        self
    }

    /// Worker `w` arrives at the wear-out's meeting point with the
    /// `count` items it has done: the goal every worker then works up
    /// to, or `None` in a phase without the wear-out or when the phase
    /// was stopped meanwhile. The time it arrived is the stonewall.
    pub fn wear_out(&self, w: u32, count: u64) -> Option<u64> {
        self.wearout
            .as_ref()?
            .arrive(w, count, &self.stop, &self.abort)
    }

    /// Marks the stonewall at `now` (the earliest time any worker sets
    /// stands): the time limit struck.
    pub fn mark_stonewall(&self, now: Instant) {
        self.first_done.store(true, Ordering::Relaxed);
        let _ = self.first_done_ns.compare_exchange(
            0,
            ns_since(self.epoch, now),
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }

    /// The phase's one deadline under a time limit: the epoch, taken right
    /// after the ranks' start barrier, plus the limit. Every worker of
    /// every rank stops at this moment (as far as the ranks' barrier exits
    /// agree), not at its own start plus the limit.
    pub fn deadline(&self, limit: Option<Duration>) -> Option<Instant> {
        // A limit past the end of the clock is no limit.
        limit.and_then(|d| self.epoch.checked_add(d))
    }

    #[inline]
    fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.abort.load(Ordering::Relaxed)
    }
}

/// What went wrong in a worker, precisely enough to find it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoFailure {
    /// The operation: open, read, write, fsync, close, io_uring.
    pub op: String,
    /// The file.
    pub path: PathBuf,
    /// File offset of the failed transfer, if any.
    pub offset: Option<u64>,
    /// The kernel's error number, if it came from a system call.
    pub errno: Option<i32>,
    /// Human-readable description.
    pub message: String,
}

impl std::fmt::Display for IoFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.op, self.path.display())?;
        if let Some(o) = self.offset {
            write!(f, " at offset {o}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Data-check tally of one worker.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyTally {
    /// Bytes compared with the pattern.
    pub checked_bytes: u64,
    /// Bytes that differed.
    pub bad_bytes: u64,
    /// Where the first differing byte was: file and offset.
    pub first_bad: Option<(PathBuf, u64)>,
}

/// Everything one worker measured in one phase. Times are nanoseconds since
/// the phase's common epoch.
#[derive(Debug, Clone)]
pub struct WorkerSample {
    /// Worker index.
    pub worker: u32,
    /// File index it opened.
    pub file: u32,
    /// Operation and byte counts.
    pub counters: IoCounters,
    /// Latency of every completed request.
    pub hist: LatencyHistogram,
    /// Before open.
    pub start_ns: u64,
    /// After open.
    pub open_done_ns: u64,
    /// After the last transfer and fsync.
    pub io_done_ns: u64,
    /// After close.
    pub end_ns: u64,
    /// Time spent in fsync (part of the I/O time).
    pub fsync_ns: u64,
    /// Bytes done when the first worker finished.
    pub stonewall_bytes: u64,
    /// Requests done when the first worker finished.
    pub stonewall_ops: u64,
    /// Stopped by the time limit rather than by running out of work.
    pub hit_deadline: bool,
    /// The error that stopped it, if any.
    pub failure: Option<IoFailure>,
    /// Data check results.
    pub verify: VerifyTally,
    /// The worker thread's CPU time, context switches and page faults over
    /// the phase (open to close).
    pub usage: ThreadUsage,
    /// Latencies by direction and submission latency, when the plan asks
    /// for them ([`PhasePlan::detail`]); `None` otherwise.
    pub detail: Option<Box<DirLatency>>,
    /// This worker's share of the phase's per-interval series, when the
    /// plan has a grid ([`PhasePlan::series`]).
    pub series: Option<stats::Series>,
}

impl WorkerSample {
    /// Worker `worker` on file `file` before it did anything: no counts,
    /// no times, no failure, no detail.
    pub fn empty(worker: u32, file: u32) -> Self {
        WorkerSample {
            worker,
            file,
            counters: IoCounters::default(),
            hist: LatencyHistogram::new(),
            start_ns: 0,
            open_done_ns: 0,
            io_done_ns: 0,
            end_ns: 0,
            fsync_ns: 0,
            stonewall_bytes: 0,
            stonewall_ops: 0,
            hit_deadline: false,
            failure: None,
            verify: VerifyTally::default(),
            usage: ThreadUsage::default(),
            detail: None,
            series: None,
        }
    }
}

/// fio's three latencies of one worker's requests, by direction (index 0
/// reads, 1 writes). Kept only when the plan asks ([`Detail`], the fio
/// front-end), so other runs do not pay for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirLatency {
    /// From the request's preparation to its completion (fio's `lat`;
    /// the same figure as [`WorkerSample::hist`], split).
    pub lat: [LatencyHistogram; 2],
    /// From its hand-over to the kernel to its completion (fio's `clat`).
    /// For an engine that hands a request over in its wait (sync), the
    /// same as `lat`.
    pub clat: [LatencyHistogram; 2],
    /// From its preparation to the return of the submit call that handed
    /// it over (fio's `slat`); empty for an engine that submits in its
    /// wait.
    pub slat: [LatencyHistogram; 2],
    /// Every completed request in completion order, with
    /// [`Detail::IoLog`] (fio's per-I/O logs); empty otherwise.
    pub log: Vec<IoLogEntry>,
    /// The latency of each fsync/fdatasync the loop issued (fio's `sync`).
    pub syncs: LatencyHistogram,
    /// fio's IO depth tallies ([`Depths`]).
    pub depths: Depths,
    /// Transfers the kernel did in part and that were issued again for
    /// the rest (fio's `short_ios`), reads then writes.
    pub short: [u64; 2],
}

/// fio's IO depth tallies over its seven buckets: `level`, requests (and
/// syncs) by the depth in flight as each was issued (1, 2, 4, 8, 16, 32,
/// ≥64: the largest power of two at most the depth); `submit`, submit
/// calls by the requests each handed over, and `complete`, waits by the
/// completions each took (0, 1–4, 5–8, 9–16, 17–32, 33–64, more).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Depths {
    /// Requests by the depth they were issued at.
    pub level: [u64; 7],
    /// Submit calls by requests handed over.
    pub submit: [u64; 7],
    /// Waits by completions taken.
    pub complete: [u64; 7],
}

impl Depths {
    /// fio's depth-level bucket of a depth.
    #[inline]
    pub fn level_bucket(depth: usize) -> usize {
        match depth {
            0..=1 => 0,
            2..=3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            16..=31 => 4,
            32..=63 => 5,
            _ => 6,
        }
    }

    /// fio's submit/complete bucket of a count.
    #[inline]
    pub fn batch_bucket(n: usize) -> usize {
        match n {
            0 => 0,
            1..=4 => 1,
            5..=8 => 2,
            9..=16 => 3,
            17..=32 => 4,
            33..=64 => 5,
            _ => 6,
        }
    }

    /// Adds `o`'s tallies.
    pub fn merge(&mut self, o: &Depths) {
        for k in 0..7 {
            self.level[k] += o.level[k];
            self.submit[k] += o.submit[k];
            self.complete[k] += o.complete[k];
        }
    }
}

/// One completed request, for fio's per-I/O logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoLogEntry {
    /// When it completed.
    pub done: Instant,
    /// Preparation to completion (lat), ns.
    pub lat_ns: u64,
    /// Preparation to the return of its submit call (slat), ns; `None`
    /// where the engine hands requests over in its wait.
    pub slat_ns: Option<u64>,
    /// Bytes.
    pub len: u32,
    /// A write.
    pub write: bool,
}

impl DirLatency {
    /// Empty histograms.
    pub fn new() -> Self {
        let two = || [LatencyHistogram::new(), LatencyHistogram::new()];
        DirLatency {
            lat: two(),
            clat: two(),
            slat: two(),
            log: Vec::new(),
            syncs: LatencyHistogram::new(),
            depths: Depths::default(),
            short: [0; 2],
        }
    }

    /// Adds `other`'s requests.
    pub fn merge(&mut self, other: &DirLatency) {
        for k in 0..2 {
            self.lat[k].merge(&other.lat[k]);
            self.clat[k].merge(&other.clat[k]);
            self.slat[k].merge(&other.slat[k]);
        }
        self.log.extend_from_slice(&other.log);
        self.syncs.merge(&other.syncs);
        self.depths.merge(&other.depths);
        self.short[0] += other.short[0];
        self.short[1] += other.short[1];
    }
}

impl Default for DirLatency {
    fn default() -> Self {
        Self::new()
    }
}

/// The details a worker of `plan` keeps, made before its barrier.
pub(crate) fn new_detail<B: Backend>(plan: &PhasePlan<B>) -> Option<Box<DirLatency>> {
    if plan.detail == Detail::Off {
        return None;
    }
    let mut d = DirLatency::new();
    if plan.detail == Detail::IoLog {
        d.log = Vec::with_capacity(plan.xfers().min(1 << 20) as usize);
    }
    Some(Box::new(d))
}

/// What one worker thread used over a phase (`getrusage(RUSAGE_THREAD)`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadUsage {
    /// User CPU time, ns.
    pub user_ns: u64,
    /// System CPU time, ns.
    pub sys_ns: u64,
    /// Context switches, voluntary and not.
    pub ctx: u64,
    /// Major page faults.
    pub majf: u64,
    /// Minor page faults.
    pub minf: u64,
}

impl ThreadUsage {
    /// The calling thread's totals so far (zero if the kernel refuses).
    pub fn now() -> ThreadUsage {
        // SAFETY: getrusage fills the struct it is given; all-zero is a
        // valid rusage.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
            return ThreadUsage::default();
        }
        let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        ThreadUsage {
            user_ns: ns(ru.ru_utime),
            sys_ns: ns(ru.ru_stime),
            ctx: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
            majf: ru.ru_majflt as u64,
            minf: ru.ru_minflt as u64,
        }
    }

    /// What was used between `self` (earlier) and `later`.
    pub fn until(self, later: ThreadUsage) -> ThreadUsage {
        ThreadUsage {
            user_ns: later.user_ns.saturating_sub(self.user_ns),
            sys_ns: later.sys_ns.saturating_sub(self.sys_ns),
            ctx: later.ctx.saturating_sub(self.ctx),
            majf: later.majf.saturating_sub(self.majf),
            minf: later.minf.saturating_sub(self.minf),
        }
    }
}

/// What the transfer loop of one worker works with.
pub struct LoopCtx<'a, B: Backend = Posix> {
    /// Worker index.
    pub w: u32,
    /// The phase.
    pub plan: &'a PhasePlan<B>,
    /// Shared signals.
    pub ctl: &'a PhaseControl,
    /// When to stop issuing.
    pub deadline: Option<Instant>,
    /// The file's path, for failures.
    pub path: &'a std::path::Path,
    /// Where results go.
    pub s: &'a mut WorkerSample,
    /// Where the worker's series goes.
    pub series: &'a mut crate::series::Recorder,
}

/// How often a writer checks that its file was not deleted under it.
const LINK_CHECK: Duration = Duration::from_secs(1);

pub(crate) fn ns_since(epoch: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(epoch).as_nanos() as u64
}

/// Files one request's latencies by direction: `lat` from `prepared` to
/// `done`, and, where the queue noted the hand-over, slat and clat around
/// it.
#[inline]
fn record_detail(
    d: &mut DirLatency,
    req: Request,
    lat: u64,
    prepared: Instant,
    issued: Option<Instant>,
    done: Instant,
) {
    let k = usize::from(req.write);
    d.lat[k].record(lat);
    let slat = issued.map(|t| t.saturating_duration_since(prepared).as_nanos() as u64);
    match (slat, issued) {
        (Some(sl), Some(t)) => {
            d.slat[k].record(sl);
            d.clat[k].record(done.saturating_duration_since(t).as_nanos() as u64);
        }
        _ => d.clat[k].record(lat),
    }
    if d.log.capacity() > 0 {
        d.log.push(IoLogEntry {
            done,
            lat_ns: lat,
            slat_ns: slat,
            len: req.len,
            write: req.write,
        });
    }
}

/// The transfer loop every engine runs, monomorphised per queue type so the
/// per-request calls inline: refill the queue, wait for completions,
/// account them, check the stop conditions.
pub fn io_loop<B: Backend, Q: IoQueue>(q: &mut Q, file: &B::File, lp: &mut LoopCtx<'_, B>) {
    let mut st = LoopState::new(q.depth(), lp);
    if st.fine {
        q.stamp_issue();
    }
    st.transfers(q, file, lp);
    if let Some(goal) = st.wear_out_goal(lp) {
        // The stonewall wear-out: on, past the limit, to the busiest
        // worker's count.
        st.cap = st.cap.min(goal);
        st.stopping = false;
        lp.deadline = None;
        st.transfers(q, file, lp);
    }
    if let Some(d) = lp.s.detail.as_deref_mut() {
        d.depths.merge(&st.depths);
        let short = q.take_short_ios();
        d.short[0] += short[0];
        d.short[1] += short[1];
    }
    st.finish(lp);
}

/// The walk of drawn sizes a phase takes, if any: a mixed phase with
/// sizes drawn or per direction walks both directions as fio does
/// ([`crate::sizes::SizeGen::mixed`]); a phase of one direction walks with
/// that direction's sizes.
fn size_walk<B: Backend>(plan: &PhasePlan<B>, seed: u64) -> Option<crate::sizes::SizeGen> {
    let spec = &*plan.spec;
    let fixed = XferSizes {
        min: spec.xfer,
        max: spec.xfer,
        split: Vec::new(),
    };
    let read = spec.xfer_sizes.as_ref();
    let write = spec.write_sizes.as_ref();
    let (region, random) = (spec.bytes_per_worker(), plan.op.is_random());
    let mixed = matches!(plan.op, Op::Rw | Op::Randrw);
    let own = |z: &XferSizes| crate::sizes::SizeGen::new(z, region, random, seed);
    match (mixed, plan.op.writes(), read, write) {
        (_, _, None, None) => None,
        (true, _, r, w) => {
            let r = r.unwrap_or(&fixed);
            let g = crate::sizes::SizeGen::mixed(r, w.unwrap_or(r), region, random, seed);
            Some(g)
        }
        (false, true, r, w) => w.or(r).map(own),
        (false, false, r, _) => r.map(own),
    }
}

/// The state of [`io_loop`]: what it draws requests from, the free slots,
/// and what it has seen so far.
struct LoopState {
    gen: OffsetGen,
    /// Transfers issued so far, and the most this worker issues.
    issued: u64,
    cap: u64,
    /// The queue failed: nothing more can be issued on it.
    broken: bool,
    rng: u64,
    owner: u32,
    file_id: u64,
    start: u64,
    mixed: bool,
    read_only: bool,
    /// Mixed phases pick read or write per request: read when a uniform
    /// 64-bit draw falls below rwmix% of the range (no division per op).
    read_threshold: u64,
    read_always: bool,
    xfer: u32,
    /// Write the pattern and check reads against it (the spec's `verify`).
    verify: bool,
    /// The pattern's seed (the spec's `seed`).
    pattern_seed: u64,
    /// This worker's live-counter slot ([`PhasePlan::live_slot`]).
    slot: u32,
    /// fsync after this many writes (0: never in the loop).
    every: u64,
    writes_since_sync: u64,
    /// fio's `fsync=`/`fdatasync=N` ([`SyncMode::Between`]): a sync is due
    /// before the next request once this many writes were issued since
    /// the last; 0: none. `sync_data`: fdatasync.
    between: u64,
    sync_data: bool,
    writes_issued: u64,
    synced_at: u64,
    /// The next transfer (offset, length, write), drawn but held back
    /// while a sync is due.
    held: Option<(u64, u32, bool)>,
    /// Drawn request sizes ([`spec::WorkloadSpec::xfer_sizes`]): their
    /// walk and where the worker's region starts; `None`: `xfer` each.
    sizes: Option<(crate::sizes::SizeGen, u64)>,
    /// fio's verify header, when a checksum was asked for.
    writer: Option<crate::verify::Writer>,
    depth: usize,
    free: Vec<usize>,
    t_sub: Vec<Instant>,
    done: Vec<Completion>,
    inflight: usize,
    exhausted: bool,
    stopping: bool,
    sw_taken: bool,
    now: Instant,
    /// A writer looks once a second whether its file still has a name: if
    /// someone deleted it (or its directory) mid-run, the writes would go
    /// on into an unlinked inode and measure nothing anyone can keep.
    watch_unlink: bool,
    next_link_check: Instant,
    last_end: u64,
    /// This worker slot's totals over earlier phases (fio's interval logs):
    /// all, by direction, and submission latency by direction.
    base: (u64, u64, u64),
    base_d: [(u64, u64, u64); 2],
    base_slat: [u64; 2],
    /// fio's details are kept ([`WorkerSample::detail`]).
    fine: bool,
    /// With `fine`: fio's depth tallies, and the requests pushed since the
    /// last submit call.
    depths: Depths,
    pushed: usize,
}

impl LoopState {
    fn new<B: Backend>(depth: usize, lp: &LoopCtx<'_, B>) -> Self {
        let plan = lp.plan;
        let owner = plan.owner_of(lp.w);
        let n = plan.xfers();
        let spec = &*plan.spec;
        let seed = spec.seed ^ (owner as u64).wrapping_mul(0x9E37_79B9) ^ ((plan.rep as u64) << 40);
        let slot = plan.live_slot(lp.w);
        let now = Instant::now();
        let exist = plan.items_of(owner);
        let sizes = size_walk(plan, seed).map(|g| (g, plan.offset_of(owner, 0)));
        let (gen, cap) = match (plan.op.is_random(), spec.random_repeats) {
            _ if sizes.is_some() => (OffsetGen::sequential(0), u64::MAX),
            (true, true) => (OffsetGen::uniform(n, exist, seed), n),
            (true, false) if spec.shuffle_in_block => {
                let per_block = (spec.block / spec.xfer).max(1);
                (
                    OffsetGen::block_shuffled(n / per_block, per_block, seed),
                    exist,
                )
            }
            (true, false) => (OffsetGen::shuffled(n, seed), exist),
            _ => (OffsetGen::sequential(n), exist),
        };
        LoopState {
            gen,
            issued: 0,
            cap,
            broken: false,
            rng: seed ^ 0x5bd1_e995,
            owner,
            file_id: plan.file_of(lp.w) as u64,
            start: spec.start_offsets.get(owner as usize).copied().unwrap_or(0),
            mixed: matches!(plan.op, Op::Rw | Op::Randrw),
            read_only: !plan.op.writes(),
            read_threshold: ((spec.rwmix_read as u128 * (u64::MAX as u128 + 1)) / 100) as u64,
            read_always: spec.rwmix_read >= 100,
            xfer: spec.xfer as u32,
            verify: spec.verify,
            pattern_seed: spec.seed,
            slot,
            every: match plan.sync {
                SyncMode::Every(k) => k,
                _ => 0,
            },
            writes_since_sync: 0,
            between: match plan.sync {
                SyncMode::Between(k) | SyncMode::DataBetween(k) => k,
                _ => 0,
            },
            sync_data: matches!(plan.sync, SyncMode::DataBetween(_)),
            writes_issued: 0,
            synced_at: 0,
            held: None,
            sizes,
            writer: plan.spec.hints.checksum.filter(|_| spec.verify).map(|sum| {
                crate::verify::Writer {
                    sum,
                    interval: plan.xfer() as usize,
                    thread: lp.w as u16 + 1,
                    seed: spec.seed ^ u64::from(owner) << 32,
                }
            }),
            depth,
            free: (0..depth).rev().collect(),
            t_sub: vec![lp.ctl.epoch; depth],
            done: Vec::with_capacity(depth * 2),
            inflight: 0,
            exhausted: false,
            stopping: false,
            sw_taken: false,
            now,
            watch_unlink: plan.op.writes(),
            next_link_check: now + LINK_CHECK,
            last_end: 0,
            base: crate::live::lifetime(slot),
            base_d: crate::live::lifetime_dirs(slot),
            base_slat: crate::live::lifetime_slat(slot),
            fine: lp.s.detail.is_some(),
            depths: Depths::default(),
            pushed: 0,
        }
    }

    /// Queues requests until the queue is full, the work is done or the
    /// worker is stopping.
    #[inline]
    fn refill<B: Backend, Q: IoQueue>(&mut self, q: &mut Q, lp: &LoopCtx<'_, B>) {
        let plan = lp.plan;
        while !self.exhausted && !self.stopping && self.inflight < self.depth {
            let next = match self.held.take() {
                // Drawn (and counted) before the sync it waited for.
                Some(r) => Some(r),
                None if self.issued < self.cap => {
                    // The direction first: a mixed walk with sizes per
                    // direction draws the size from it.
                    let write = self.pick_write();
                    let n = self.draw(plan, write).map(|(o, l)| (o, l, write));
                    self.issued += u64::from(n.is_some());
                    n
                }
                None => None,
            };
            let Some((off, len, write)) = next else {
                self.exhausted = true;
                break;
            };
            if self.sync_due() {
                // fio issues the sync once the writes before it completed,
                // and only when another request follows.
                self.held = Some((off, len, write));
                break;
            }
            let slot = self
                .free
                .pop()
                .expect("a free slot exists while inflight < depth");
            if write && self.verify {
                match &self.writer {
                    Some(w) => crate::verify::fill(q.buf_mut(slot), off, self.writes_issued, w),
                    None => pattern::fill(q.buf_mut(slot), self.pattern_seed, self.file_id, off),
                }
                self.now = Instant::now();
            }
            self.writes_issued += u64::from(write);
            // fio reads the clock as it prepares each request.
            self.t_sub[slot] = if self.fine { Instant::now() } else { self.now };
            q.push(
                slot,
                Request {
                    offset: off,
                    len,
                    write,
                },
            );
            self.inflight += 1;
            if self.fine {
                self.pushed += 1;
                self.depths.level[Depths::level_bucket(self.inflight)] += 1;
            }
        }
    }

    /// Whether the next request writes: always in a write phase, never in
    /// a read phase, drawn by `rwmix` in a mixed one.
    #[inline]
    fn pick_write(&mut self) -> bool {
        if self.read_only {
            false
        } else if self.mixed {
            !(self.read_always || splitmix64(&mut self.rng) < self.read_threshold)
        } else {
            true
        }
    }

    /// The next request's offset and length: the next transfer of the
    /// fixed-size walk, or of the drawn sizes' walk (for direction
    /// `write`).
    #[inline]
    fn draw<B: Backend>(&mut self, plan: &PhasePlan<B>, write: bool) -> Option<(u64, u32)> {
        match &mut self.sizes {
            None => {
                let i = self.gen.next_index()?;
                Some((self.start + plan.offset_of(self.owner, i), self.xfer))
            }
            Some((g, base)) => {
                let (off, len) = g.next_for(write)?;
                Some((self.start + *base + off, len))
            }
        }
    }

    /// fio's submit tally for the requests pushed since the last call (a
    /// wait that hands nothing over is no submit).
    #[inline]
    fn tally_submit(&mut self) {
        if self.pushed > 0 {
            self.depths.submit[Depths::batch_bucket(self.pushed)] += 1;
            self.pushed = 0;
        }
    }

    /// Issues and completes transfers until the work (up to `cap`) is
    /// done, the time limit strikes, the phase stops or the queue fails.
    fn transfers<B: Backend, Q: IoQueue>(
        &mut self,
        q: &mut Q,
        file: &B::File,
        lp: &mut LoopCtx<'_, B>,
    ) {
        self.exhausted = false;
        loop {
            self.refill(q, lp);
            if self.inflight == 0 {
                if self.held.is_some() && !self.stopping {
                    self.sync_between(file, lp);
                    continue;
                }
                break;
            }
            if self.fine {
                self.tally_submit();
            }
            if let Err(e) = q.submit_and_reap(&mut self.done) {
                lp.s.failure = Some(IoFailure {
                    op: q.wait_call().into(),
                    path: lp.path.to_path_buf(),
                    offset: None,
                    errno: e.raw_os_error(),
                    message: e.to_string(),
                });
                lp.ctl.abort.store(true, Ordering::Relaxed);
                // The ring is unusable; the queue leaks its buffers if
                // requests are still in flight when it is taken apart.
                self.broken = true;
                break;
            }
            self.now = Instant::now();
            if self.fine && !self.done.is_empty() {
                self.depths.complete[Depths::batch_bucket(self.done.len())] += 1;
            }
            self.account(q, file, lp);
            self.after_batch(file, lp);
        }
    }

    /// In a phase with the stonewall wear-out: this worker's stonewall
    /// figures at the limit, then the meeting with the others (every
    /// worker arrives, whatever ended its transfers). The goal, when this
    /// worker stopped at the limit and has transfers left to do up to it.
    fn wear_out_goal<B: Backend>(&mut self, lp: &mut LoopCtx<'_, B>) -> Option<u64> {
        lp.ctl.wearout.as_ref()?;
        if lp.s.hit_deadline && !self.sw_taken {
            // The limit is the stonewall: the work done by then.
            self.sw_taken = true;
            lp.s.stonewall_bytes = lp.s.counters.bytes;
            lp.s.stonewall_ops = lp.s.counters.ops;
            lp.ctl.mark_stonewall(self.now);
        }
        let goal = lp.ctl.wear_out(lp.w, self.issued)?;
        let more = lp.s.hit_deadline
            && !self.broken
            && lp.s.failure.is_none()
            && !lp.ctl.should_stop()
            && goal > self.issued;
        more.then_some(goal)
    }

    /// Accounts the completions in `self.done`: latency, counters, the
    /// data check of reads, the first failure.
    #[inline]
    fn account<B: Backend, Q: IoQueue>(&mut self, q: &Q, file: &B::File, lp: &mut LoopCtx<'_, B>) {
        let (path, plan) = (lp.path, lp.plan);
        let s = &mut *lp.s;
        let rec = &mut *lp.series;
        let t_ns = rec.at(self.now);
        let mut checked = false;
        for c in &self.done {
            let slot = c.slot as usize;
            self.free.push(slot);
            self.inflight -= 1;
            let fault = match c.result {
                Ok(()) => {
                    let prepared = self.t_sub[slot];
                    let lat = self.now.saturating_duration_since(prepared).as_nanos() as u64;
                    s.hist.record(lat);
                    if let Some(d) = s.detail.as_deref_mut() {
                        record_detail(d, c.req, lat, prepared, q.issued_at(slot), self.now);
                    }
                    if c.req.write {
                        rec.write(t_ns, c.req.len as u64, lat);
                        s.counters.record_write(c.req.len as u64);
                        self.writes_since_sync += 1;
                        self.last_end = c.req.offset + c.req.len as u64;
                    } else {
                        rec.read(t_ns, c.req.len as u64, lat);
                        s.counters.record_read(c.req.len as u64);
                        if self.verify {
                            checked = true;
                            let bad = check_read(q.buf(slot), plan, self.file_id, c, path, s);
                            if bad && plan.spec.hints.verify_fatal {
                                lp.ctl.abort.store(true, Ordering::Relaxed);
                                self.stopping = true;
                            }
                        }
                    }
                    continue;
                }
                Err(fault) => fault,
            };
            s.counters.record_error();
            rec.error(self.now);
            if s.failure.is_none() {
                let size = matches!(fault, crate::queue::IoFault::ShortRead { .. })
                    .then(|| file.size().ok())
                    .flatten();
                s.failure = Some(IoFailure {
                    op: if c.req.write { "write" } else { "read" }.into(),
                    path: path.to_path_buf(),
                    offset: Some(c.req.offset),
                    errno: fault.errno(),
                    message: fault.describe_at(c.req.offset, size),
                });
            }
            lp.ctl.abort.store(true, Ordering::Relaxed);
            self.stopping = true;
        }
        crate::live::publish(self.slot, s.counters.ops, s.counters.bytes);
        crate::live::publish_lifetime(
            self.slot,
            self.base.0 + s.counters.ops,
            self.base.1 + s.counters.bytes,
            self.base.2 + s.hist.sum_ns(),
        );
        if let Some(d) = s.detail.as_deref() {
            self.publish_dirs(self.slot, &s.counters, d);
        }
        if checked {
            // The check is not part of the next request's latency.
            self.now = Instant::now();
        }
    }

    /// The live totals by direction and the submission latency, for fio's
    /// interval logs.
    fn publish_dirs(&self, w: u32, c: &IoCounters, d: &DirLatency) {
        let (b, sl) = (self.base_d, self.base_slat);
        crate::live::publish_lifetime_dirs(
            w,
            (
                b[0].0 + c.read_ops,
                b[0].1 + c.read_bytes,
                b[0].2 + d.lat[0].sum_ns(),
            ),
            (
                b[1].0 + c.write_ops,
                b[1].1 + c.write_bytes,
                b[1].2 + d.lat[1].sum_ns(),
            ),
        );
        crate::live::publish_lifetime_slat(
            w,
            [sl[0] + d.slat[0].sum_ns(), sl[1] + d.slat[1].sum_ns()],
        );
    }

    /// After a batch of completions: the periodic fsync, the check that
    /// the file still has a name, the stonewall, and the stop conditions.
    fn after_batch<B: Backend>(&mut self, file: &B::File, lp: &mut LoopCtx<'_, B>) {
        if self.every > 0 && self.writes_since_sync >= self.every && !self.stopping {
            self.sync_now(file, lp, false);
            self.writes_since_sync = 0;
        }
        let (ctl, path) = (lp.ctl, lp.path);
        let s = &mut *lp.s;
        if self.watch_unlink && !self.stopping && self.now >= self.next_link_check {
            self.next_link_check = self.now + LINK_CHECK;
            if file.links().is_ok_and(|n| n == 0) {
                s.counters.record_error();
                s.failure = Some(IoFailure {
                    op: "write".into(),
                    path: path.to_path_buf(),
                    offset: Some(self.last_end),
                    errno: Some(libc::ENOENT),
                    message: "the file was deleted while ioscale wrote it (was its directory \
                              removed?); stopped writing"
                        .into(),
                });
                ctl.abort.store(true, Ordering::Relaxed);
                self.stopping = true;
            }
        }
        if !self.sw_taken && ctl.first_done.load(Ordering::Relaxed) {
            self.sw_taken = true;
            s.stonewall_bytes = s.counters.bytes;
            s.stonewall_ops = s.counters.ops;
        }
        if !self.stopping {
            if ctl.should_stop() {
                self.stopping = true;
            } else if let Some(d) = lp.deadline {
                if ctl.past(d, self.now) {
                    self.stopping = true;
                    s.hit_deadline = true;
                }
            }
        }
    }

    /// Whether fio's `fsync=`/`fdatasync=N` is due before the next
    /// request: N writes issued since the last sync.
    #[inline]
    fn sync_due(&self) -> bool {
        self.between > 0
            && self.writes_issued > self.synced_at
            && self.writes_issued.is_multiple_of(self.between)
    }

    /// The sync fio's `fsync=`/`fdatasync=N` issues, with nothing in
    /// flight.
    fn sync_between<B: Backend>(&mut self, file: &B::File, lp: &mut LoopCtx<'_, B>) {
        self.synced_at = self.writes_issued;
        if self.fine {
            // fio counts a sync as an I/O at depth 1, handed over and
            // completed on its own.
            self.depths.level[0] += 1;
            self.depths.submit[1] += 1;
            self.depths.complete[1] += 1;
        }
        let data = self.sync_data;
        self.sync_now(file, lp, data);
        self.after_batch(file, lp);
    }

    /// One fsync (fdatasync with `data`), timed into the sample; a failure
    /// stops the worker.
    fn sync_now<B: Backend>(&mut self, file: &B::File, lp: &mut LoopCtx<'_, B>, data: bool) {
        let s = &mut *lp.s;
        let t = Instant::now();
        let r = if data { file.sync_data() } else { file.sync() };
        if let Err(e) = r {
            s.counters.record_error();
            s.failure = Some(IoFailure {
                op: if data { "fdatasync" } else { "fsync" }.into(),
                path: lp.path.to_path_buf(),
                offset: None,
                errno: e.raw_os_error(),
                message: e.to_string(),
            });
            lp.ctl.abort.store(true, Ordering::Relaxed);
            self.stopping = true;
        }
        self.now = Instant::now();
        s.fsync_ns += self.now.duration_since(t).as_nanos() as u64;
        if let Some(d) = s.detail.as_deref_mut() {
            d.syncs.record(self.now.duration_since(t).as_nanos() as u64);
        }
    }

    /// After the loop: the stonewall point this worker sets, if any.
    fn finish<B: Backend>(&self, lp: &mut LoopCtx<'_, B>) {
        let (ctl, now) = (lp.ctl, self.now);
        let s = &mut *lp.s;
        if self.exhausted && !self.stopping && s.failure.is_none() {
            // Whoever finishes first defines the stonewall point for all.
            if ctl
                .first_done
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                ctl.first_done_ns
                    .store(ns_since(ctl.epoch, now), Ordering::Release);
            }
        }
        if s.hit_deadline {
            // A time-limited phase: the deadline is the stonewall.
            ctl.first_done.store(true, Ordering::Relaxed);
            let _ = ctl.first_done_ns.compare_exchange(
                0,
                ns_since(ctl.epoch, now),
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
        if !self.sw_taken {
            s.stonewall_bytes = s.counters.bytes;
            s.stonewall_ops = s.counters.ops;
        }
    }
}

/// Checks a completed read against the verify pattern, or fio's verify
/// blocks when the plan names a checksum; true when something differed.
#[inline]
fn check_read<B: Backend>(
    buf: &[u8],
    plan: &PhasePlan<B>,
    file_id: u64,
    c: &Completion,
    path: &std::path::Path,
    s: &mut WorkerSample,
) -> bool {
    let buf = &buf[..c.req.len as usize];
    let (bad, first) = match plan.spec.hints.checksum {
        Some(sum) => {
            let f = crate::verify::check(buf, c.req.offset, sum, plan.xfer() as usize);
            (f.bad_bytes, f.first_bad.map(|x| x.0))
        }
        None => {
            let r = pattern::check(buf, plan.spec.seed, file_id, c.req.offset);
            (r.bad_bytes, r.first_bad)
        }
    };
    s.verify.checked_bytes += c.req.len as u64;
    if bad > 0 {
        s.verify.bad_bytes += bad;
        if s.verify.first_bad.is_none() {
            s.verify.first_bad = Some((path.to_path_buf(), first.unwrap_or(c.req.offset)));
        }
    }
    bad > 0
}
