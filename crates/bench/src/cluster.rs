//! What crosses between ranks in a multi-process run, and the facts about
//! where the ranks ran.
//!
//! Each rank measures its own workers exactly as a single process does
//! and folds them into a summary ([`Digest`]); the node leaders merge
//! their ranks' and rank 0 one per node. Per-worker rows cross only when
//! asked for ([`Rows`]): a brief of a few numbers per worker, or every
//! worker's sample without its latency histogram. Times in a sample
//! are nanoseconds since its rank's phase epoch, taken right after the
//! phase's MPI barrier (as IOR reads MPI_Wtime after a barrier), so they
//! are comparable across ranks to within the barrier's exit skew.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use coord::{Coordinator, PhaseSignals, Signal};
use engine::meta::MetaSample;
use engine::{IoFailure, PhaseControl, VerifyTally, WorkerSample};
use report::{ClusterInfo, HostInfo, NodePhase, PhaseRecord, RankPhase};
use serde::{Deserialize, Serialize};
use stats::{IoCounters, LatencyHistogram};

use crate::digest::{Digest, MetaSums, RunSums, Share};
use crate::error::Error;

// The samples' trait lives with the digest that folds them; it is named
// here too, beside its two implementations.
pub use crate::digest::Sample;

/// A [`WorkerSample`] in a form serde can carry: its counters and times,
/// not its latency histogram. Samples cross ranks only for the per-worker
/// rows (`--per-worker`), which print counts and times; the
/// phase's latencies come from the node summaries' merged histogram
/// ([`Digest`]), so rank 0 would receive a histogram per worker that no
/// one reads (the per-worker latencies of [`crate::run::Outcome`] are for
/// `ioscale fio`, which runs in one process).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireSample {
    worker: u32,
    file: u32,
    counters: IoCounters,
    start_ns: u64,
    open_done_ns: u64,
    io_done_ns: u64,
    end_ns: u64,
    fsync_ns: u64,
    stonewall_bytes: u64,
    stonewall_ops: u64,
    hit_deadline: bool,
    failure: Option<IoFailure>,
    verify: VerifyTally,
}

impl From<&WorkerSample> for WireSample {
    fn from(s: &WorkerSample) -> Self {
        WireSample {
            worker: s.worker,
            file: s.file,
            counters: s.counters,
            start_ns: s.start_ns,
            open_done_ns: s.open_done_ns,
            io_done_ns: s.io_done_ns,
            end_ns: s.end_ns,
            fsync_ns: s.fsync_ns,
            stonewall_bytes: s.stonewall_bytes,
            stonewall_ops: s.stonewall_ops,
            hit_deadline: s.hit_deadline,
            failure: s.failure.clone(),
            verify: s.verify.clone(),
        }
    }
}

impl WireSample {
    /// Back to a sample, with an empty latency histogram (see the type).
    pub fn into_sample(self) -> Result<WorkerSample, String> {
        Ok(WorkerSample {
            worker: self.worker,
            file: self.file,
            counters: self.counters,
            hist: LatencyHistogram::new(),
            start_ns: self.start_ns,
            open_done_ns: self.open_done_ns,
            io_done_ns: self.io_done_ns,
            end_ns: self.end_ns,
            fsync_ns: self.fsync_ns,
            stonewall_bytes: self.stonewall_bytes,
            stonewall_ops: self.stonewall_ops,
            hit_deadline: self.hit_deadline,
            failure: self.failure,
            verify: self.verify,
            // A thread's usage stays on its rank (fio's per-job cpu line is
            // single-node only).
            usage: Default::default(),
            detail: None,
            // The phase's series crosses in the rank's digest.
            series: None,
        })
    }
}

/// A [`MetaSample`] (`ioscale meta`, mdtest, smallfile) in a form serde
/// can carry: its counts and times, not its latency histogram. Rows are
/// gathered only for the per-thread lines (`--per-worker`),
/// which print counts; the phase's latencies come from the node
/// summaries' merged histogram ([`Digest`]), so a histogram per worker
/// at rank 0 would be bytes no one reads.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MetaWire {
    worker: u32,
    files: u64,
    touched: u64,
    records: u64,
    read_bytes: u64,
    write_bytes: u64,
    errors: u64,
    left: u64,
    first_left: Option<PathBuf>,
    start_ns: u64,
    end_ns: u64,
    stonewall_files: u64,
    stonewall_bytes: u64,
    hit_deadline: bool,
    failure: Option<IoFailure>,
    #[serde(default)]
    stonewalled: bool,
    #[serde(default)]
    sync_ns: u64,
    #[serde(default)]
    checked_bytes: u64,
    #[serde(default)]
    bad_bytes: u64,
    #[serde(default)]
    mismatches: Vec<(PathBuf, u64, u64)>,
    #[serde(default)]
    matched: u64,
}

impl From<&MetaSample> for MetaWire {
    fn from(s: &MetaSample) -> Self {
        MetaWire {
            worker: s.worker,
            files: s.files,
            touched: s.touched,
            records: s.records,
            read_bytes: s.read_bytes,
            write_bytes: s.write_bytes,
            errors: s.errors,
            left: s.left,
            first_left: s.first_left.clone(),
            start_ns: s.start_ns,
            end_ns: s.end_ns,
            stonewall_files: s.stonewall_files,
            stonewall_bytes: s.stonewall_bytes,
            hit_deadline: s.hit_deadline,
            failure: s.failure.clone(),
            stonewalled: s.stonewalled,
            sync_ns: s.sync_ns,
            checked_bytes: s.checked_bytes,
            bad_bytes: s.bad_bytes,
            mismatches: s.mismatches.clone(),
            matched: s.matched,
        }
    }
}

impl MetaWire {
    /// Back to a sample, with an empty latency histogram (see the type).
    pub fn into_sample(self) -> Result<MetaSample, String> {
        Ok(MetaSample {
            worker: self.worker,
            files: self.files,
            touched: self.touched,
            records: self.records,
            read_bytes: self.read_bytes,
            write_bytes: self.write_bytes,
            errors: self.errors,
            left: self.left,
            first_left: self.first_left,
            hist: LatencyHistogram::new(),
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            stonewall_files: self.stonewall_files,
            stonewall_bytes: self.stonewall_bytes,
            hit_deadline: self.hit_deadline,
            failure: self.failure,
            stonewalled: self.stonewalled,
            sync_ns: self.sync_ns,
            checked_bytes: self.checked_bytes,
            bad_bytes: self.bad_bytes,
            mismatches: self.mismatches,
            matched: self.matched,
            series: None,
        })
    }
}

/// What rank 0 gathers per worker besides the node summaries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Rows {
    /// Nothing: the record has no per-worker rows.
    #[default]
    None,
    /// Each worker's [`Sample::Brief`]: the few numbers of a per-worker
    /// line (smallfile's threads, dd's jobs), a few dozen bytes each.
    Brief,
    /// Each worker's whole sample (`--per-worker`): the record's rows
    /// with every count and time.
    Full,
}

/// [`Brief`](Sample::Brief) status bits.
const BRIEF_FAILED: u8 = 1;
const BRIEF_DEADLINE: u8 = 2;
const BRIEF_STONEWALLED: u8 = 4;

/// A data worker's line (dd's job): records, bytes and its times, in the
/// binary wire form (varints: about 25–35 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataBrief {
    worker: u32,
    ops: u64,
    bytes: u64,
    start_ns: u64,
    open_done_ns: u64,
    io_done_ns: u64,
    end_ns: u64,
    status: u8,
}

/// A metadata worker's line (smallfile's thread): files, records, bytes
/// and its times, in the binary wire form (varints: about 20–30 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaBrief {
    worker: u32,
    files: u64,
    records: u64,
    read_bytes: u64,
    write_bytes: u64,
    start_ns: u64,
    end_ns: u64,
    status: u8,
    /// smallfile's per-thread lines count the files done by the first
    /// thread's finish.
    stonewall_files: u64,
    stonewall_bytes: u64,
    matched: u64,
}

fn brief_status(failed: bool, deadline: bool, stonewalled: bool) -> u8 {
    let mut s = 0;
    if failed {
        s |= BRIEF_FAILED;
    }
    if deadline {
        s |= BRIEF_DEADLINE;
    }
    if stonewalled {
        s |= BRIEF_STONEWALLED;
    }
    s
}

/// The failure of a briefed worker: the one its rank's summary carries
/// (every failed worker's is in the merged [`Digest`]).
fn failure_of(
    worker: u32,
    status: u8,
    failures: &[(u32, IoFailure)],
) -> Result<Option<IoFailure>, String> {
    if status & BRIEF_FAILED == 0 {
        return Ok(None);
    }
    match failures.iter().find(|(w, _)| *w == worker) {
        Some((_, f)) => Ok(Some(f.clone())),
        None => Err(format!(
            "worker {worker} failed but its summary names no failure"
        )),
    }
}

/// The [`Sample`] accessors both sample types answer from their fields of
/// the same names: `worker`, `failure`, `start_ns`, `end_ns` and `hist`.
macro_rules! sample_fields {
    () => {
        fn worker(&self) -> u32 {
            self.worker
        }
        fn failed(&self) -> bool {
            self.failure.is_some()
        }
        fn start_ns(&self) -> u64 {
            self.start_ns
        }
        fn end_ns(&self) -> u64 {
            self.end_ns
        }
        fn hist(&self) -> &LatencyHistogram {
            &self.hist
        }
        fn series(&self) -> Option<&stats::Series> {
            self.series.as_ref()
        }
        fn failure(&self) -> Option<&IoFailure> {
            self.failure.as_ref()
        }
    };
}

impl Sample for WorkerSample {
    type Wire = WireSample;
    fn to_wire(&self) -> WireSample {
        WireSample::from(self)
    }
    fn from_wire(w: WireSample) -> Result<Self, String> {
        w.into_sample()
    }
    type Brief = DataBrief;
    fn brief(&self) -> DataBrief {
        DataBrief {
            worker: self.worker,
            ops: self.counters.ops,
            bytes: self.counters.bytes,
            start_ns: self.start_ns,
            open_done_ns: self.open_done_ns,
            io_done_ns: self.io_done_ns,
            end_ns: self.end_ns,
            status: brief_status(self.failure.is_some(), self.hit_deadline, false),
        }
    }
    fn from_brief(b: DataBrief, failures: &[(u32, IoFailure)]) -> Result<Self, String> {
        let mut s = WorkerSample::empty(b.worker, b.worker);
        s.counters.ops = b.ops;
        s.counters.bytes = b.bytes;
        s.start_ns = b.start_ns;
        s.open_done_ns = b.open_done_ns;
        s.io_done_ns = b.io_done_ns;
        s.end_ns = b.end_ns;
        s.hit_deadline = b.status & BRIEF_DEADLINE != 0;
        s.failure = failure_of(b.worker, b.status, failures)?;
        Ok(s)
    }
    sample_fields!();
    fn hit_deadline(&self) -> bool {
        self.hit_deadline
    }
    fn bytes(&self) -> u64 {
        self.counters.bytes
    }
    fn ops(&self) -> u64 {
        self.counters.ops
    }
    type Sums = RunSums;
    fn add_to(&self, m: &mut RunSums) {
        m.counters += self.counters;
        m.open_ns = m
            .open_ns
            .max(self.open_done_ns.saturating_sub(self.start_ns));
        m.io_ns = m
            .io_ns
            .max(self.io_done_ns.saturating_sub(self.open_done_ns));
        m.close_ns = m.close_ns.max(self.end_ns.saturating_sub(self.io_done_ns));
        m.fsync_ns = m.fsync_ns.max(self.fsync_ns);
        m.stonewall_bytes += self.stonewall_bytes;
        m.time_limited |= self.hit_deadline;
        m.checked_bytes += self.verify.checked_bytes;
        m.bad_bytes += self.verify.bad_bytes;
        if let Some((f, o)) = &self.verify.first_bad {
            let file = f.display().to_string();
            m.mismatches
                .push((self.worker, file, *o, self.verify.bad_bytes));
        }
    }
    fn settle(samples: &mut [Self], first_done_ns: u64) {
        prorate_stonewall(samples, first_done_ns)
    }
}

/// The stonewall signal reaches other ranks within about a millisecond;
/// a worker that finished its transfers after the stonewall but before
/// hearing of it would count all its work. Such a worker is counted pro
/// rata instead: its bytes and requests times the share of its transfer
/// section that lay before the stonewall.
fn prorate_stonewall(samples: &mut [WorkerSample], sw_ns: u64) {
    for s in samples {
        let heard = s.stonewall_bytes < s.counters.bytes;
        if heard || s.io_done_ns <= sw_ns || s.io_done_ns <= s.open_done_ns {
            continue;
        }
        let share =
            sw_ns.saturating_sub(s.open_done_ns) as f64 / (s.io_done_ns - s.open_done_ns) as f64;
        s.stonewall_bytes = (s.counters.bytes as f64 * share) as u64;
        s.stonewall_ops = (s.counters.ops as f64 * share) as u64;
    }
}

impl Sample for MetaSample {
    type Wire = MetaWire;
    fn to_wire(&self) -> MetaWire {
        MetaWire::from(self)
    }
    fn from_wire(w: MetaWire) -> Result<Self, String> {
        w.into_sample()
    }
    type Brief = MetaBrief;
    fn brief(&self) -> MetaBrief {
        MetaBrief {
            worker: self.worker,
            files: self.files,
            records: self.records,
            read_bytes: self.read_bytes,
            write_bytes: self.write_bytes,
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            status: brief_status(self.failure.is_some(), self.hit_deadline, self.stonewalled),
            stonewall_files: self.stonewall_files,
            stonewall_bytes: self.stonewall_bytes,
            matched: self.matched,
        }
    }
    fn from_brief(b: MetaBrief, failures: &[(u32, IoFailure)]) -> Result<Self, String> {
        Ok(MetaSample {
            worker: b.worker,
            files: b.files,
            touched: 0,
            records: b.records,
            read_bytes: b.read_bytes,
            write_bytes: b.write_bytes,
            errors: 0,
            left: 0,
            first_left: None,
            hist: LatencyHistogram::new(),
            start_ns: b.start_ns,
            end_ns: b.end_ns,
            stonewall_files: b.stonewall_files,
            stonewall_bytes: b.stonewall_bytes,
            hit_deadline: b.status & BRIEF_DEADLINE != 0,
            failure: failure_of(b.worker, b.status, failures)?,
            stonewalled: b.status & BRIEF_STONEWALLED != 0,
            sync_ns: 0,
            checked_bytes: 0,
            bad_bytes: 0,
            mismatches: Vec::new(),
            matched: b.matched,
            series: None,
        })
    }
    sample_fields!();
    /// The time limit, or `stop_at_first` (smallfile --finish N): either
    /// way the phase was cut short and a create left a prefix of the files.
    fn hit_deadline(&self) -> bool {
        self.hit_deadline || self.stonewalled
    }
    fn bytes(&self) -> u64 {
        MetaSample::bytes(self)
    }
    fn ops(&self) -> u64 {
        self.files
    }
    type Sums = MetaSums;
    fn add_to(&self, m: &mut MetaSums) {
        m.files += self.files;
        m.read_bytes += self.read_bytes;
        m.write_bytes += self.write_bytes;
        m.records += self.records;
        m.errors += self.errors;
        m.stonewall_files += self.stonewall_files;
        m.stonewall_bytes += self.stonewall_bytes;
        m.io_ns = m.io_ns.max(self.end_ns.saturating_sub(self.start_ns));
        m.sync_ns = m.sync_ns.max(self.sync_ns);
        m.time_limited |= self.hit_deadline;
        m.checked_bytes += self.checked_bytes;
        m.bad_bytes += self.bad_bytes;
        for (f, o, b) in &self.mismatches {
            m.mismatches
                .push((self.worker, f.display().to_string(), *o, *b));
        }
        m.touched_max = m.touched_max.max(self.touched);
        m.matched += self.matched;
        if let Some(p) = &self.first_left {
            m.left
                .push((self.worker, p.display().to_string(), self.left));
        }
    }
}

/// One phase as every rank agrees on it.
pub struct PhaseOut<S: Sample> {
    /// Every worker's sample on rank 0 (by worker) when `all_workers`;
    /// this rank's own otherwise. Other ranks' samples come without
    /// latency histograms, and from [`Rows::Brief`] hold only a brief's
    /// numbers (with the failure, if any).
    pub samples: Vec<S>,
    /// `samples` holds every worker of every rank: one process, or the
    /// per-worker rows were asked for.
    pub all_workers: bool,
    /// The whole phase folded on rank 0 (node leaders merged their ranks'
    /// first); this rank's own elsewhere.
    pub digest: Digest<S::Sums>,
    /// The stonewall: the earliest first finish on any rank.
    pub first_done_ns: Option<u64>,
    /// Process CPU time (user, system), summed over ranks on rank 0.
    pub cpu: (f64, f64),
    /// Some worker on some rank failed.
    pub failed: bool,
    /// Some rank was interrupted.
    pub interrupted: bool,
    /// Some worker hit the time limit.
    pub deadline: bool,
    /// Spread of the ranks' clocks at the exit of the start barrier
    /// (latest − earliest, ns); `None` in a one-process run.
    pub start_skew_ns: Option<u64>,
    /// Payload bytes rank 0 received in the phase's gathers (its
    /// coordinator's count); `None` in a one-process run.
    pub gathered_bytes: Option<u64>,
    /// The part of `gathered_bytes` that carried the per-worker rows
    /// (briefs or samples); 0 without rows.
    pub row_bytes: Option<u64>,
    /// This rank's exit from the start barrier: the origin of the
    /// samples' times (shared by every step of a concurrency group).
    pub epoch: std::time::Instant,
}

impl<S: Sample> PhaseOut<S> {
    /// The start skew across ranks, seconds (see [`PhaseOut::start_skew_ns`]).
    pub fn start_skew_s(&self) -> Option<f64> {
        self.start_skew_ns.map(|ns| ns as f64 / 1e9)
    }

    /// Latest worker start − earliest, seconds, each against its own
    /// rank's epoch (the barrier exit); workers that failed their setup
    /// never started and are left out. `None` when none started.
    pub fn worker_start_spread_s(&self) -> Option<f64> {
        self.digest.start_spread_s()
    }
}

/// The bits of [`PhaseEnd::flags`](coord::PhaseEnd) this driver uses.
const FLAG_FAILED: u8 = 1;
const FLAG_INTERRUPTED: u8 = 2;
const FLAG_DEADLINE: u8 = 4;

/// Runs one phase on this rank with one thread per item and agrees on its
/// outcome with the other ranks: a collective call every rank reaches,
/// whatever its workers met. `seq` numbers the phases (the same on every
/// rank). Thread `t` is global worker `rank × items + t`; `work` gets that
/// index, its item, the phase control and the threads' start barrier
/// (which it must wait at once, even when its setup failed).
///
/// At the end the ranks' samples are folded into a [`Digest`] per rank,
/// merged per node by the node leaders and then at rank 0; `rows` says
/// what rank 0 gathers per worker as well (its brief, or its sample).
pub fn run_phase_all<I, S>(
    coord: &dyn Coordinator,
    seq: &mut u64,
    stop: &Arc<AtomicBool>,
    name: &str,
    items: Vec<I>,
    rows: Rows,
    work: impl Fn(u32, I, &PhaseControl, &Barrier) -> S + Sync,
) -> Result<PhaseOut<S>, Error>
where
    I: Send,
    S: Sample,
{
    let phase = Phase {
        coord,
        stop,
        name,
        rows,
        wearout: false,
        steady: None,
    };
    let mut outs = run_group_all(&phase, seq, vec![items], |_, w, i, c, b| work(w, i, c, b))?;
    Ok(outs.pop().expect("one part, one outcome"))
}

/// What every phase on this rank shares: the ranks, the stop flag, the
/// threads' name prefix and what rank 0 gathers per worker.
pub struct Phase<'a> {
    /// The ranks of the run.
    pub coord: &'a dyn Coordinator,
    /// Set by a signal handler: the workers stop.
    pub stop: &'a Arc<AtomicBool>,
    /// The worker threads' name prefix (`ioscale-NAME…`).
    pub name: &'a str,
    /// What rank 0 gathers per worker.
    pub rows: Rows,
    /// The stonewall wear-out: the phase's [`PhaseControl`] carries the
    /// meeting point of this rank's workers
    /// ([`engine::wearout::WearOut`]), and, across ranks, the main thread
    /// agrees on the busiest worker's count once all of this rank's
    /// workers arrived (one all-reduce, which every rank makes once in
    /// such a phase, whatever its workers met). For a phase of one part
    /// only (a concurrency group's steps number their workers apart).
    pub wearout: bool,
    /// `--steady`: the driver's thread reads the live totals once a
    /// second and cuts the phase once it is steady (one process only).
    pub steady: Option<&'a crate::steady::Watch>,
}

/// [`run_phase_all`] for the steps of a concurrency group: one part of
/// items per step, every thread of every part released by one barrier
/// (after the ranks' barrier), so the steps run at the same time. Part
/// `p`'s thread `t` is its step's worker `rank × parts[p].len() + t`;
/// `work` gets the part, that index, the item, the shared phase control
/// and the barrier. Each part is folded, gathered and reduced on its
/// own: one [`PhaseOut`] per part, in order. The parts share the
/// phase's outcome flags (one failed, interrupted or time-limited worker
/// marks every part), its stonewall (the group's first finish) and the
/// process's CPU time.
pub fn run_group_all<I, S>(
    phase: &Phase<'_>,
    seq: &mut u64,
    parts: Vec<Vec<I>>,
    work: impl Fn(usize, u32, I, &PhaseControl, &Barrier) -> S + Sync,
) -> Result<Vec<PhaseOut<S>>, Error>
where
    I: Send,
    S: Sample,
{
    let coord = phase.coord;
    *seq += 1;
    let sizes: Vec<usize> = parts.iter().map(Vec::len).collect();
    let cpu0 = engine::sys::cpu_times();
    let ended = run_threads(coord, *seq, phase, parts, work);
    let cpu1 = engine::sys::cpu_times();
    let cpu = (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1);
    let Ended {
        samples,
        first_done_ns,
        flags,
        start_skew_ns,
        epoch,
    } = ended;
    let mut rest = samples.into_iter();
    let mut outs = Vec::with_capacity(sizes.len());
    for n in sizes {
        let mut samples: Vec<S> = rest.by_ref().take(n).collect();
        let mut out = PhaseOut {
            samples: Vec::new(),
            all_workers: true,
            digest: Digest::default(),
            first_done_ns,
            cpu,
            failed: flags & FLAG_FAILED != 0,
            interrupted: flags & FLAG_INTERRUPTED != 0,
            deadline: flags & FLAG_DEADLINE != 0,
            start_skew_ns,
            gathered_bytes: None,
            row_bytes: None,
            epoch,
        };
        if coord.size() == 1 {
            out.digest = Digest::of(&samples, 0, &coord.hostname(), cpu);
            out.samples = samples;
            outs.push(out);
            continue;
        }
        if let Some(sw) = first_done_ns {
            // Every rank knows the agreed stonewall: each settles its own.
            S::settle(&mut samples, sw);
        }
        let before = coord.stats().bytes_gathered;
        let Combined {
            digest,
            samples,
            row_bytes,
        } = combine(coord, samples, cpu, phase.rows)?;
        out.gathered_bytes = Some(coord.stats().bytes_gathered - before);
        out.row_bytes = Some(row_bytes);
        out.cpu = digest.cpu_s();
        out.digest = digest;
        out.all_workers = phase.rows != Rows::None;
        out.samples = samples;
        outs.push(out);
    }
    Ok(outs)
}

/// The multi-rank end of a phase: every rank's [`Digest`] merged at rank
/// 0 through the node leaders, and per `rows` every worker's brief or
/// sample gathered to rank 0 as well (by worker). Rank 0 alone decodes; every rank then learns whether it
/// could, so all of them stop together instead of one waiting at the next
/// call.
fn combine<S: Sample>(
    coord: &dyn Coordinator,
    samples: Vec<S>,
    cpu: (f64, f64),
    rows: Rows,
) -> Result<Combined<S>, Error> {
    test_freeze(coord, "gather");
    let mine = Digest::of(&samples, coord.rank(), &coord.hostname(), cpu);
    let merged = coord
        .reduce_as(&mine, Digest::merge)
        .map_err(Error::rank("their phase summaries"))
        .and_then(|d| match d.as_ref().and_then(|d| d.bad.clone()) {
            Some(m) => Err(Error::Rank {
                what: "their phase summaries",
                source: coord::DecodeError(m),
            }),
            None => Ok(d),
        });
    let before = coord.stats().bytes_gathered;
    let (rows, samples) = match rows {
        Rows::Full => {
            let wire: Vec<S::Wire> = samples.iter().map(Sample::to_wire).collect();
            let rows = coord
                .gather_as(&wire)
                .map_err(Error::rank("their phase samples"))
                .and_then(|g| g.map(merge_ranks::<S>).transpose());
            (rows, samples)
        }
        Rows::Brief => {
            let briefs: Vec<S::Brief> = samples.iter().map(Sample::brief).collect();
            match coord.gather_wire_as(&briefs) {
                Err(e) => (Err(Error::rank("their phase samples")(e)), samples),
                Ok(None) => (Ok(None), samples),
                Ok(Some(all)) => {
                    let failures = match &merged {
                        Ok(Some(d)) => d.failures.as_slice(),
                        _ => &[],
                    };
                    (unbrief(all, samples, failures).map(Some), Vec::new())
                }
            }
        }
        Rows::None => (Ok(None), samples),
    };
    let row_bytes = coord.stats().bytes_gathered - before;
    let bad = coord.any(merged.is_err() || rows.is_err());
    match (merged, rows) {
        (Err(e), _) | (_, Err(e)) => Err(e),
        _ if bad => Err(Error::Rank {
            what: "their phase samples",
            source: coord::DecodeError("rank 0 could not decode them".into()),
        }),
        (Ok(d), Ok(r)) => Ok(Combined {
            digest: d.unwrap_or(mine),
            samples: r.unwrap_or(samples),
            row_bytes,
        }),
    }
}

/// What [`combine`] returns.
struct Combined<S: Sample> {
    /// The phase folded: every rank's on rank 0, this rank's elsewhere.
    digest: Digest<S::Sums>,
    /// Every worker's on rank 0 with rows, this rank's own otherwise.
    samples: Vec<S>,
    /// The bytes the rows' gather brought rank 0.
    row_bytes: u64,
}

/// Rank 0's rows from every rank's briefs (by rank): its own workers'
/// samples as they are, the other ranks' rebuilt from their briefs and
/// the phase's `failures`, sorted by worker.
fn unbrief<S: Sample>(
    all: Vec<Vec<S::Brief>>,
    own: Vec<S>,
    failures: &[(u32, IoFailure)],
) -> Result<Vec<S>, Error> {
    let mut out = own;
    for b in all.into_iter().skip(1).flatten() {
        out.push(S::from_brief(b, failures).map_err(|m| Error::Rank {
            what: "their phase samples",
            source: coord::DecodeError(m),
        })?);
    }
    out.sort_by_key(Sample::worker);
    Ok(out)
}

/// One phase's threads done, and what all ranks agreed on at its end.
struct Ended<S> {
    /// This rank's samples, by thread.
    samples: Vec<S>,
    /// The stonewall: the earliest first finish on any rank.
    first_done_ns: Option<u64>,
    /// `FLAG_*` bits OR-ed over all ranks.
    flags: u8,
    /// Spread of the ranks' barrier exits (`None` with one process).
    start_skew_ns: Option<u64>,
    /// This rank's barrier exit: the origin of the samples' times.
    epoch: std::time::Instant,
}

/// Rank 0's merge of every rank's samples, sorted by worker.
fn merge_ranks<S: Sample>(all: Vec<Vec<S::Wire>>) -> Result<Vec<S>, Error> {
    let mut out = Vec::new();
    for r in all {
        for s in r {
            out.push(S::from_wire(s).map_err(|m| Error::Rank {
                what: "their phase samples",
                source: coord::DecodeError(m),
            })?);
        }
    }
    out.sort_by_key(Sample::worker);
    Ok(out)
}

/// Runs one phase's threads on this rank (every part's), all released
/// together after the ranks' barrier. While they run, the main thread
/// relays the stonewall and failures between ranks, and ends the phase
/// with one collective that agrees on the first finish, the outcome flags
/// and the start skew. A rank that stops answering makes every other one
/// print the error (it names the rank and its node) and end the job: the
/// ranks cannot go on without it. The samples come back part after part.
fn run_threads<I: Send, S: Sample>(
    coord: &dyn Coordinator,
    seq: u64,
    phase: &Phase<'_>,
    parts: Vec<Vec<I>>,
    work: impl Fn(usize, u32, I, &PhaseControl, &Barrier) -> S + Sync,
) -> Ended<S> {
    let stop = phase.stop;
    // Bounded like the phase end: a rank that stopped answering before
    // the phase ends the job with its name instead of a silent hang.
    if let Err(e) = coord.barrier_within(None) {
        give_up(coord, &e)
    }
    // Each rank's epoch is taken right after the barrier, so the sample
    // times of all ranks share one origin (as IOR's MPI_Wtime after a
    // barrier).
    let mut ctl = PhaseControl::new(stop.clone());
    if phase.wearout && parts.len() == 1 {
        let n = parts[0].len();
        let base = coord.rank() * n as u32;
        let wo = engine::wearout::WearOut::new(base, n, coord.size() > 1);
        ctl = ctl.with_wearout(wo);
    }
    let mut signals = (coord.size() > 1).then(|| coord.signals(seq));
    let out = spawn_and_join(
        coord,
        phase.name,
        parts,
        (&ctl, phase.steady),
        signals.as_deref_mut(),
        &work,
    );
    if coord.size() > 1 {
        // Workers released without a goal (a stop, an abort) may all be
        // done before the agreement: it is made once per phase anyway.
        agree_wear_out(coord, &ctl);
    }
    let mut flags = 0;
    if out.iter().any(Sample::failed) {
        flags |= FLAG_FAILED;
    }
    if stop.load(Ordering::Relaxed) {
        flags |= FLAG_INTERRUPTED;
    }
    if out.iter().any(Sample::hit_deadline) {
        flags |= FLAG_DEADLINE;
    }
    let mut agreed = None;
    if let Some(mut sig) = signals {
        match sig.end(None, flags) {
            Ok(end) => {
                for &s in &end.signals {
                    apply_signal(&ctl, s);
                }
                agreed = Some(end);
            }
            Err(e) => {
                drop(sig);
                give_up(coord, &e)
            }
        }
    }
    ended(out, &ctl, agreed, flags)
}

/// The end of a phase's threads: this rank's samples and `flags`, with
/// what the ranks agreed (`None` alone) and this rank's first finish.
fn ended<S>(
    samples: Vec<S>,
    ctl: &PhaseControl,
    agreed: Option<coord::PhaseEnd>,
    flags: u8,
) -> Ended<S> {
    let local = ctl
        .first_done
        .load(Ordering::Acquire)
        .then(|| ctl.first_done_ns.load(Ordering::Acquire));
    match agreed {
        Some(end) => Ended {
            samples,
            first_done_ns: match (end.first_done_ns, local) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            flags: end.flags | flags,
            start_skew_ns: end.start_skew_ns,
            epoch: ctl.epoch,
        },
        None => Ended {
            samples,
            first_done_ns: local,
            flags,
            start_skew_ns: None,
            epoch: ctl.epoch,
        },
    }
}

/// Runs one thread per item of every part (part `p`'s thread `t` is its
/// step's worker `rank × parts[p].len() + t`), all meeting at one
/// barrier; meanwhile, with `signals`, relays the stonewall and failures
/// between ranks and agrees on the wear-out's goal. Returns the samples
/// part after part, in thread order.
fn spawn_and_join<I: Send, S: Sample>(
    coord: &dyn Coordinator,
    name: &str,
    parts: Vec<Vec<I>>,
    (ctl, steady): (&PhaseControl, Option<&crate::steady::Watch>),
    signals: Option<&mut (dyn PhaseSignals + '_)>,
    work: &(impl Fn(usize, u32, I, &PhaseControl, &Barrier) -> S + Sync),
) -> Vec<S> {
    let group = parts.len() > 1;
    let all = parts.iter().map(Vec::len).sum();
    let barrier = Barrier::new(all);
    let mut out = Vec::with_capacity(all);
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for (p, items) in parts.into_iter().enumerate() {
            let base = coord.rank() * items.len() as u32;
            for (t, item) in items.into_iter().enumerate() {
                let w = base + t as u32;
                let barrier = &barrier;
                let thread = if group {
                    format!("ioscale-{name}{p}.{w}")
                } else {
                    format!("ioscale-{name}{w}")
                };
                handles.push(
                    std::thread::Builder::new()
                        .name(thread)
                        .stack_size(256 * 1024)
                        .spawn_scoped(scope, move || {
                            // Whatever the worker met, it no longer keeps
                            // the others waiting at the wear-out's meeting
                            // point.
                            let _leave = LeaveWearOut(ctl, w);
                            work(p, w, item, ctl, barrier)
                        })
                        .expect("spawning a worker thread"),
                );
            }
        }
        if let Some(sig) = signals {
            let mut told = Told::default();
            loop {
                let done = handles.iter().all(|h| h.is_finished());
                told.tell(ctl, sig, done);
                for s in sig.poll() {
                    apply_signal(ctl, s);
                }
                agree_wear_out(coord, ctl);
                if done {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        } else if let Some(w) = steady {
            // One process: the steady watch samples while the workers run.
            while !handles.iter().all(|h| h.is_finished()) {
                w.tick(ctl, std::time::Instant::now());
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            w.settle(ctl);
        }
        for h in handles {
            out.push(h.join().expect("worker thread panicked"));
        }
    });
    out
}

/// Marks worker `.1` as gone from the phase's wear-out meeting point when
/// dropped (see [`engine::wearout::WearOut::leave`]).
struct LeaveWearOut<'a>(&'a PhaseControl, u32);

impl Drop for LeaveWearOut<'_> {
    fn drop(&mut self) {
        if let Some(wo) = &self.0.wearout {
            wo.leave(self.1);
        }
    }
}

/// Once every worker of this rank has arrived at the wear-out's meeting
/// point: the largest count of all ranks (an all-reduce every rank makes
/// once in a wear-out phase), the goal this rank's workers go on to.
fn agree_wear_out(coord: &dyn Coordinator, ctl: &PhaseControl) {
    let Some(wo) = &ctl.wearout else {
        return;
    };
    if let Some(mine) = wo.ready() {
        // The largest count, from the smallest of its complements.
        let goal = u64::MAX - coord.min_u64(u64::MAX - mine);
        wo.set_goal(goal);
    }
}

/// Ends the whole job after a wait on other ranks failed (they stopped
/// answering): the error names them and their nodes; the ranks cannot go
/// on without them, and MPI_Abort stops the rest of the job.
/// Says why this rank cannot go on (another stopped answering) and ends
/// the job.
pub fn give_up(coord: &dyn Coordinator, e: &coord::CoordError) -> ! {
    eprintln!("ioscale: rank {} ({}): {e}", coord.rank(), coord.hostname());
    coord.abort(1)
}

/// Which local events this rank already told the others about.
#[derive(Default)]
struct Told {
    first: bool,
    abort: bool,
}

impl Told {
    fn tell(&mut self, ctl: &PhaseControl, sig: &mut dyn PhaseSignals, final_pass: bool) {
        if !self.first && ctl.first_done.load(Ordering::Acquire) {
            // The worker stores the time just after raising the flag.
            let ns = ctl.first_done_ns.load(Ordering::Acquire);
            if ns > 0 || final_pass {
                self.first = true;
                sig.announce(Signal::FirstDone(ns));
            }
        }
        if !self.abort && ctl.abort.load(Ordering::Relaxed) {
            self.abort = true;
            sig.announce(Signal::Abort);
        }
    }
}

/// Applies another rank's signal: its first finish is this rank's
/// stonewall too (workers take their stonewall counts when they see the
/// flag), and its failure stops this rank's workers at their next check.
fn apply_signal(ctl: &PhaseControl, s: Signal) {
    match s {
        Signal::FirstDone(ns) => {
            if ctl
                .first_done
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                ctl.first_done_ns.store(ns, Ordering::Release);
            } else {
                ctl.first_done_ns.fetch_min(ns, Ordering::AcqRel);
            }
        }
        Signal::Abort => ctl.abort.store(true, Ordering::Relaxed),
    }
}

/// The ranks' layout for a run of `threads` threads per rank, recording
/// the cluster facts in `host` when there are several ranks (a collective
/// call).
pub fn layout(coord: &dyn Coordinator, threads: u32, host: &mut HostInfo) -> Result<Layout, Error> {
    if coord.size() > 1 {
        let l = Layout::discover(coord, threads)?;
        host.cluster = Some(l.info(coord.kind()));
        Ok(l)
    } else {
        Ok(Layout {
            hosts: vec![host.hostname.clone()],
            threads,
        })
    }
}

/// Agrees on a check only rank 0 makes (output paths and the like): the
/// error on rank 0, `Err(None)` on the others when it failed. A
/// collective call.
pub fn root_check<E>(coord: &dyn Coordinator, r: Result<(), E>) -> Result<(), Option<E>> {
    if coord.any(r.is_err()) {
        return Err(r.err());
    }
    Ok(())
}

/// Where the ranks run: host of each rank, by rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Host name of each rank.
    pub hosts: Vec<String>,
    /// Worker threads per rank.
    pub threads: u32,
}

impl Layout {
    /// Learns every rank's host (a collective call).
    pub fn discover(coord: &dyn Coordinator, threads: u32) -> Result<Layout, Error> {
        let hosts = coord
            .all_gather_as(&coord.hostname())
            .map_err(Error::rank("their host names"))?;
        Ok(Layout { hosts, threads })
    }

    /// Ranks.
    pub fn ranks(&self) -> u32 {
        self.hosts.len() as u32
    }

    /// Ranks per distinct host, in order of first appearance.
    pub fn per_node(&self) -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = Vec::new();
        for h in &self.hosts {
            match out.iter_mut().find(|(n, _)| n == h) {
                Some((_, c)) => *c += 1,
                None => out.push((h.clone(), 1)),
            }
        }
        out
    }

    /// Distinct hosts.
    pub fn nodes(&self) -> u32 {
        self.per_node().len() as u32
    }

    /// Ranks on the busiest host: IOR's tasks per node.
    pub fn tasks_per_node(&self) -> u32 {
        self.per_node().iter().map(|(_, c)| *c).max().unwrap_or(1)
    }

    /// The host of global worker `w`.
    pub fn host_of(&self, w: u32) -> &str {
        let r = (w / self.threads.max(1)) as usize;
        self.hosts.get(r).map(String::as_str).unwrap_or("")
    }

    /// The default `--reorder` offset, in workers: with ranks on several
    /// hosts, the workers of `tasks_per_node` ranks further on (IOR -C), so
    /// each rank reads what a rank on another host wrote, not its own
    /// host's page cache; otherwise the next worker.
    pub fn default_reorder_offset(&self) -> u32 {
        if self.nodes() > 1 {
            self.tasks_per_node() * self.threads
        } else {
            1
        }
    }

    /// The record's cluster facts (node aggregates are added per phase).
    pub fn info(&self, kind: &str) -> ClusterInfo {
        ClusterInfo {
            launcher: kind.into(),
            ranks: self.ranks(),
            threads_per_rank: self.threads,
            nodes: self.nodes(),
            tasks_per_node: self.tasks_per_node(),
            hosts: self.hosts.clone(),
            ..ClusterInfo::default()
        }
    }

    /// Per-host totals of phase number `index` (record `rec`), from the
    /// node shares of its digest; times count from the phase's first
    /// start `t0` (ns).
    pub fn node_phases(
        &self,
        index: usize,
        rec: &PhaseRecord,
        nodes: &[Share],
        t0: u64,
    ) -> Vec<NodePhase> {
        let ranks: BTreeMap<String, u32> = self.per_node().into_iter().collect();
        let mut out: Vec<NodePhase> = nodes
            .iter()
            .map(|n| {
                // As from per-worker times: each against the first start.
                let a = n.start_ns.saturating_sub(t0) as f64 / 1e9;
                let b = n.end_ns.saturating_sub(t0) as f64 / 1e9;
                let elapsed_s = (b - a).max(0.0);
                NodePhase {
                    phase: index,
                    op: rec.op.clone(),
                    rep: rec.rep,
                    host: n.host.clone(),
                    ranks: ranks.get(&n.host).copied().unwrap_or(0),
                    workers: n.workers,
                    bytes: n.bytes,
                    ops: n.ops,
                    elapsed_s,
                    bw_mib_s: if elapsed_s > 0.0 {
                        n.bytes as f64 / elapsed_s / (1024.0 * 1024.0)
                    } else {
                        0.0
                    },
                }
            })
            .collect();
        out.sort_by(|a, b| a.host.cmp(&b.host));
        out
    }
}

/// Per-rank rows of phase number `index`, from the rank shares of its
/// digest; times count from the phase's first start `t0` (ns).
pub fn rank_phases(index: usize, ranks: &[Share], t0: u64) -> Vec<RankPhase> {
    ranks
        .iter()
        .map(|r| RankPhase {
            phase: index,
            rank: r.rank,
            workers: r.workers,
            bytes: r.bytes,
            ops: r.ops,
            start_s: r.start_ns.saturating_sub(t0) as f64 / 1e9,
            end_s: r.end_ns.saturating_sub(t0) as f64 / 1e9,
        })
        .collect()
}

/// Agrees on a fallible step every rank took: if any rank failed, every
/// rank returns an error, and rank 0's names each failing rank (one
/// message when all failed alike). A collective call.
pub fn agree<T>(coord: &dyn Coordinator, r: Result<T, Error>) -> Result<T, Error> {
    if coord.size() == 1 {
        return r;
    }
    let mine: Option<String> = r.as_ref().err().map(ToString::to_string);
    if !coord.any(mine.is_some()) {
        return r;
    }
    // Every rank returns an error from here on, so a failed exchange
    // cannot leave one rank waiting for the others.
    let all = coord
        .gather_as(&mine)
        .map_err(Error::rank("their setup errors"))?;
    let msg = match all {
        Some(all) => {
            let failed: Vec<(usize, String)> = all
                .into_iter()
                .enumerate()
                .filter_map(|(i, m)| m.map(|m| (i, m)))
                .collect();
            let same = failed.windows(2).all(|w| w[0].1 == w[1].1);
            if same && failed.len() == coord.size() as usize {
                failed[0].1.clone()
            } else {
                failed
                    .iter()
                    .map(|(i, m)| format!("rank {i}: {m}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            }
        }
        None => mine.unwrap_or_else(|| "another rank failed its setup".into()),
    };
    Err(Error::Refused(msg))
}

/// Workers across all ranks: `threads` per rank × ranks.
pub fn worker_count(threads: u32, coord: &dyn Coordinator) -> Result<u32, Error> {
    let ranks = coord.size();
    threads.checked_mul(ranks).ok_or_else(|| {
        Error::Refused(format!(
            "--threads {threads} × {ranks} ranks overflows the worker count"
        ))
    })
}

/// Test hook: with `IOSCALE_TEST_FREEZE=RANK:POINT`, rank RANK stops
/// itself (SIGSTOP) when it reaches POINT: `signals`, the stop-signal
/// handlers are in; `gather`, a phase has ended and its results are about
/// to go to rank 0; `done`, the command is over (outputs written, files
/// removed) and its exit code not yet settled; `exit`, the run is over and
/// the ranks are about to meet for the last time. A test can so freeze a
/// rank at exactly that moment. Unset, it does nothing.
pub fn test_freeze(coord: &dyn Coordinator, point: &str) {
    test_freeze_rank(coord.rank(), point)
}

/// [`test_freeze`] for a process that knows its rank without a
/// coordinator (before MPI is up).
pub fn test_freeze_rank(rank: u32, point: &str) {
    let Some(v) = std::env::var_os("IOSCALE_TEST_FREEZE") else {
        return;
    };
    let want = format!("{rank}:{point}");
    if v.to_str() == Some(want.as_str()) {
        // SAFETY: raise only sends a signal to this process; SIGSTOP
        // stops it until a SIGCONT or SIGKILL.
        unsafe { libc::raise(libc::SIGSTOP) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(hosts: &[&str], threads: u32) -> Layout {
        Layout {
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            threads,
        }
    }

    #[test]
    fn tasks_per_node_and_reorder_follow_ior() {
        let one = layout(&["a", "a", "a", "a"], 2);
        assert_eq!(one.nodes(), 1);
        assert_eq!(one.tasks_per_node(), 4);
        assert_eq!(one.default_reorder_offset(), 1);
        let two = layout(&["a", "a", "b", "b"], 2);
        assert_eq!(two.nodes(), 2);
        assert_eq!(two.tasks_per_node(), 2);
        // rank 0's workers read rank 2's data, on host b.
        assert_eq!(two.default_reorder_offset(), 4);
        assert_eq!(two.host_of(5), "b");
    }

    /// Worker `w` of 8 (2 per rank, 2 ranks per host on hosts a–d):
    /// varied counts, times and latencies; worker 5 failed.
    fn sample(w: u32) -> WorkerSample {
        let mut hist = LatencyHistogram::new();
        for i in 0..(w + 1) * 3 {
            hist.record(1000 + 7919 * u64::from(i * (w + 2)));
        }
        let mut counters = IoCounters::default();
        for _ in 0..=w {
            counters.record_write(4096 * u64::from(w + 1));
        }
        let start = 100 * u64::from(w % 3);
        WorkerSample {
            worker: w,
            file: w,
            counters,
            hist,
            start_ns: start,
            open_done_ns: start + 50 + u64::from(w),
            io_done_ns: start + 5000 - 300 * u64::from(w),
            end_ns: start + 5100 + 11 * u64::from(w),
            fsync_ns: u64::from(w) * 3,
            stonewall_bytes: 4096,
            stonewall_ops: 1,
            hit_deadline: w == 6,
            failure: (w == 5).then(|| IoFailure {
                op: "write".into(),
                path: "/t/f5".into(),
                offset: Some(8192),
                errno: Some(28),
                message: "No space left on device".into(),
            }),
            verify: VerifyTally {
                checked_bytes: 10,
                bad_bytes: u64::from(w == 2),
                first_bad: (w == 2).then(|| (PathBuf::from("/t/f2"), 4)),
            },
            usage: Default::default(),
            detail: None,
            series: Some(series_of(w)),
        }
    }

    /// Worker `w`'s series: a write every 3·(w+1) ms for (w+1)·8 writes,
    /// on 1 ms intervals capped at 8, so the later workers' series are
    /// coarsened (to 16, 32, 64 ms…) before they merge.
    fn series_of(w: u32) -> stats::Series {
        let mut r = stats::SeriesRecorder::new(1_000_000, 8, 0).unwrap();
        let n = u64::from(w + 1);
        for k in 0..n * 8 {
            r.write(k * 3_000_000 * n, 4096, 1000 * (k + 1));
        }
        r.finish(n * n * 24_000_000)
    }

    fn host_of(rank: u32) -> String {
        ["a", "b", "c", "d"][(rank / 2) as usize].to_string()
    }

    #[test]
    fn digests_merged_per_node_equal_the_digest_of_all_workers() {
        let all: Vec<WorkerSample> = (0..8).map(sample).collect();
        // One process holding every sample (as with --per-worker).
        let mut whole = Digest::of(&all[0..2], 0, &host_of(0), (0.5, 0.25));
        for r in 1..4u32 {
            let part = &all[(2 * r) as usize..(2 * r + 2) as usize];
            whole.merge(Digest::of(part, r, &host_of(r), (0.5, 0.25)));
        }
        // Node leaders merge their ranks', rank 0 the nodes' in arrival
        // order (here: last node first).
        let rank = |r: u32| {
            let part = &all[(2 * r) as usize..(2 * r + 2) as usize];
            Digest::<RunSums>::of(part, r, &host_of(r), (0.5, 0.25))
        };
        let mut node_b = rank(3);
        node_b.merge(rank(2));
        let mut root = rank(0);
        root.merge(node_b);
        root.merge(rank(1));
        let json = |d: &Digest<RunSums>| serde_json::to_value(d).unwrap();
        assert_eq!(json(&root), json(&whole));
        // And the figures are those of the samples themselves.
        assert_eq!(root.workers, 8);
        let bytes: u64 = all.iter().map(|s| s.counters.bytes).sum();
        assert_eq!(root.sums.counters.bytes, bytes);
        let open = all.iter().map(|s| s.open_done_ns - s.start_ns).max();
        assert_eq!(Some(root.sums.open_ns), open);
        let mut hist = LatencyHistogram::new();
        for s in &all {
            hist += &s.hist;
        }
        assert_eq!(root.latency().summary(), hist.summary());
        // The series merge exactly whatever the grouping: every write,
        // byte and latency sample, each worker's running time, on the
        // coarsest grid any of them reached.
        let series = root.series.as_ref().expect("merged series");
        let total = series.total();
        assert_eq!(total.io.write_ops, (1..=8).map(|n| n * 8).sum::<u64>());
        assert_eq!(total.lat.count(), total.io.ops);
        let busy: u64 = (1..=8u64).map(|n| n * n * 24_000_000).sum();
        assert_eq!(total.busy_ns, busy);
        assert_eq!(series.width_ns(), series_of(7).width_ns());
        assert_eq!(series.end_ns(), 8 * 8 * 24_000_000);
        assert_eq!(root.failures.len(), 1);
        assert_eq!(root.failures[0].0, 5);
        assert_eq!(root.sums.mismatches.len(), 1);
        assert!(root.sums.time_limited);
        assert_eq!(root.started, Some((0, 200)));
        assert_eq!(root.cpu_s(), (2.0, 1.0));
        assert_eq!(root.nodes.len(), 2);
        assert_eq!(
            root.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
    }

    fn meta_sample(w: u32) -> MetaSample {
        let mut hist = LatencyHistogram::new();
        hist.record(1000 * u64::from(w + 1));
        MetaSample {
            worker: w,
            files: u64::from(w) + 10,
            touched: u64::from(w) * 3,
            records: 1,
            read_bytes: 4096,
            write_bytes: 0,
            errors: 0,
            left: 2,
            first_left: (w % 2 == 1).then(|| PathBuf::from(format!("/t/d{w}"))),
            hist,
            start_ns: u64::from(w),
            end_ns: 1000 - u64::from(w),
            stonewall_files: 1,
            stonewall_bytes: 0,
            hit_deadline: false,
            failure: None,
            stonewalled: false,
            sync_ns: u64::from(w),
            checked_bytes: 4096,
            bad_bytes: u64::from(w == 2),
            mismatches: if w == 2 {
                vec![(PathBuf::from("/t/a"), 0, 1), (PathBuf::from("/t/b"), 8, 1)]
            } else {
                Vec::new()
            },
            matched: u64::from(w),
            series: None,
        }
    }

    #[test]
    fn meta_digests_merge_in_any_order_to_the_same_sums() {
        let all: Vec<MetaSample> = (0..4).map(meta_sample).collect();
        let mut whole = Digest::of(&all[..2], 0, "a", (0.0, 0.0));
        whole.merge(Digest::of(&all[2..], 1, "a", (0.0, 0.0)));
        let mut late = Digest::of(&all[2..], 1, "a", (0.0, 0.0));
        late.merge(Digest::of(&all[..2], 0, "a", (0.0, 0.0)));
        let json = |d: &Digest<MetaSums>| serde_json::to_value(d).unwrap();
        assert_eq!(json(&late), json(&whole));
        let m = &late.sums;
        assert_eq!(m.files, 10 + 11 + 12 + 13);
        assert_eq!(m.touched_max, 9);
        assert_eq!(m.io_ns, 1000);
        // Worker order, a worker's own mismatches in their order.
        let files: Vec<&str> = m.mismatches.iter().map(|x| x.1.as_str()).collect();
        assert_eq!(files, ["/t/a", "/t/b"]);
        let left: Vec<u32> = m.left.iter().map(|l| l.0).collect();
        assert_eq!(left, [1, 3]);
    }

    #[test]
    fn node_phases_sum_their_workers() {
        let l = layout(&["a", "b"], 1);
        let rec = PhaseRecord {
            op: "write".into(),
            ..Default::default()
        };
        let mut a = sample(0);
        a.counters = IoCounters::default();
        a.counters.record_write(1 << 20);
        a.end_ns = 1_000_000_000;
        let mut b = sample(1);
        b.counters = IoCounters::default();
        b.counters.record_write(2 << 20);
        b.start_ns = 500_000_000;
        b.end_ns = 1_500_000_000;
        let mut d = Digest::of(&[b], 1, "b", (0.0, 0.0));
        d.merge(Digest::of(&[a], 0, "a", (0.0, 0.0)));
        let n = l.node_phases(3, &rec, &d.nodes, d.t0());
        assert_eq!(n.len(), 2);
        assert_eq!(n[1].host, "b");
        assert_eq!(n[1].bytes, 2 << 20);
        assert_eq!(n[1].phase, 3);
        assert_eq!(n[1].ranks, 1);
        assert!((n[1].bw_mib_s - 2.0).abs() < 1e-9);
        let r = rank_phases(3, &d.ranks, d.t0());
        assert_eq!(r[1].rank, 1);
        assert!((r[1].start_s - 0.5).abs() < 1e-12);
    }

    #[test]
    fn briefs_are_a_few_dozen_bytes_and_keep_what_the_lines_print() {
        // A second-long phase of a worker numbered past 127: its times
        // and worker take their widest varints here.
        let mut s = sample(5);
        s.worker = 1000;
        s.start_ns = 12_000;
        s.open_done_ns = 40_000;
        s.io_done_ns = 1_900_000_000;
        s.end_ns = 2_000_000_000;
        let failures = vec![(1000, s.failure.clone().unwrap())];
        let b = coord::wire::to_bytes(&s.brief()).unwrap();
        // Varints: worker 2 + ops 1 + bytes (147,456) 3 + times 2, 3, 5
        // and 5 + status 1 (a time below 34 s takes at most 5 bytes).
        assert_eq!(b.len(), 22);
        let back =
            WorkerSample::from_brief(coord::wire::from_bytes(&b).unwrap(), &failures).unwrap();
        assert_eq!(back.counters.ops, s.counters.ops);
        assert_eq!(back.counters.bytes, s.counters.bytes);
        assert_eq!(
            (
                back.start_ns,
                back.open_done_ns,
                back.io_done_ns,
                back.end_ns
            ),
            (s.start_ns, s.open_done_ns, s.io_done_ns, s.end_ns)
        );
        // The failure comes back from the phase's failures, by worker.
        assert_eq!(back.failure, s.failure);
        assert!(WorkerSample::from_brief(s.brief(), &[]).is_err());

        let mut m = meta_sample(3);
        m.worker = 1000;
        m.hit_deadline = true;
        m.stonewalled = true;
        m.end_ns = 2_000_000_000;
        let b = coord::wire::to_bytes(&m.brief()).unwrap();
        // worker 2 + files, records 1 each + read bytes (4,096) 2 + write
        // bytes 1 + times 1 and 5 + status 1 + smallfile's stonewall
        // files and bytes 1 each + find's matches 1.
        assert_eq!(b.len(), 17);
        let back = MetaSample::from_brief(coord::wire::from_bytes(&b).unwrap(), &[]).unwrap();
        assert_eq!(
            (back.files, back.records, back.bytes()),
            (m.files, m.records, m.bytes())
        );
        assert_eq!(
            (back.stonewall_files, back.stonewall_bytes),
            (m.stonewall_files, m.stonewall_bytes)
        );
        assert_eq!((back.start_ns, back.end_ns), (m.start_ns, m.end_ns));
        assert_eq!(back.matched, 3);
        assert!(back.hit_deadline && back.stonewalled && back.failure.is_none());
    }

    #[test]
    fn samples_survive_the_wire() {
        let mut hist = LatencyHistogram::new();
        hist.record(1500);
        hist.record(90_000);
        let mut counters = IoCounters::default();
        counters.record_write(4096);
        let s = WorkerSample {
            worker: 3,
            file: 3,
            counters,
            hist,
            start_ns: 1,
            open_done_ns: 2,
            io_done_ns: 3,
            end_ns: 4,
            fsync_ns: 0,
            stonewall_bytes: 4096,
            stonewall_ops: 1,
            hit_deadline: false,
            failure: None,
            verify: VerifyTally::default(),
            usage: Default::default(),
            detail: None,
            series: None,
        };
        let text = serde_json::to_vec(&WireSample::from(&s)).unwrap();
        let back = serde_json::from_slice::<WireSample>(&text)
            .unwrap()
            .into_sample()
            .unwrap();
        assert_eq!(back.counters, s.counters);
        assert_eq!(back.end_ns, 4);
        assert_eq!(back.stonewall_bytes, 4096);
        // The latencies stay on their rank: the node summaries carry them.
        assert_eq!(back.hist.count(), 0);
        assert!(!String::from_utf8_lossy(&text).contains("hist"));
    }
}
