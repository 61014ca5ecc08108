//! How a phase runs: the one driver of every workload, data or metadata.
//!
//! [`drive`] owns the loop a run is made of: for each repetition, for each
//! operation of the sequence —
//!
//! 1. the stop check: if any rank was interrupted, the run ends here;
//! 2. the untimed prerequisite ("layout"), when the operation needs
//!    something that is not there yet (data to read, entries to stat):
//!    the workload [`Kind`] names it, the driver runs it and records a
//!    failure as `layout OP`; then the ramp, when the plan asks for one
//!    ([`crate::plan::Rules::ramp`]), recorded as `ramp OP` if it fails;
//! 3. the kind's preparation of the timed phase ([`Kind::before_phase`]:
//!    cache drop and fresh files for data, the pessimistic marker for
//!    metadata), which may also skip the operation;
//! 4. the timed phase on every worker of every rank, with the resource
//!    probe around it when [`Options::probe`] asks;
//! 5. the reduction on rank 0 and the record ([`record_phase`]), with the
//!    phase's latency histograms where the kind keeps them;
//! 6. the decision on what comes next: the kind's own rules first
//!    ([`Kind::after_phase`]: cut-short sequences, per-thread limits,
//!    whether the files now hold data), then the common ones — an
//!    interrupted phase ends the run, a failed one ends it too, or only
//!    its repetition under [`Options::keep_going`].
//!
//! After the loop the record is summarised, every rank has closed its files
//! (a barrier), and rank 0 hands an interrupted record to the caller's
//! `before_cleanup` hook before the kind removes what it made.
//!
//! The driver runs a slice of kinds: one for a step alone, several for the
//! steps of a concurrency group ([`crate::plan::Stage`]), whose timed
//! phases run together ([`Kind::run_together`]) and are reduced and
//! recorded each on its own. The two kinds are `run`'s data workload
//! (`crate::run`) and `meta`'s metadata workload (`crate::meta`).

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coord::Coordinator;
use probe::{PhaseProbe, Probe};
use report::{PhaseRecord, ResultSet, RetryRecord};
use stats::LatencyHistogram;

use crate::cluster::{Layout, PhaseOut, Sample};
use crate::error::Error;
use crate::record::{failure_record, other_rank_failed, other_step_failed, record_phase};
use crate::topology::Topology;

pub use crate::plan::Options;

/// One removal of a repetition's data files, timed on rank 0 by the
/// executor: from before the first unlink until every rank is past the
/// barrier after the last (the final one: until the last unlink returned).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Removal {
    /// The repetition whose files were removed (0-based).
    pub rep: u32,
    /// Seconds.
    pub seconds: f64,
}

/// What a finished (or stopped) step hands back to the caller.
pub struct Outcome {
    /// The record.
    pub results: ResultSet,
    /// Lines for standard error: cleanup notes and the like.
    pub notes: Vec<String>,
    /// What each timed phase used (CPU, device, FUSE connection), when
    /// [`Options::probe`] asked for it; rank 0's measurement under MPI.
    pub probes: Vec<PhaseProbe>,
    /// Each recorded phase's latency histogram per worker of this process
    /// (`phase` indexes `results.phases`), for front-ends that print more
    /// of the distribution than the record keeps (fio's stdev, buckets and
    /// per-clone lines).
    pub latency: Vec<PhaseLatency>,
    /// When each recorded phase ran: its first start and last finish, ns
    /// after the barrier that released its workers (on this rank's
    /// clock). The steps of a concurrency group share that barrier, so
    /// their spans show how they overlapped.
    pub spans: Vec<PhaseSpan>,
    /// The step's workers in every rank (the topology's count, ranks ×
    /// threads): what the record's per-worker figures add up over.
    pub workers: u32,
    /// With [`Options::share_items`](crate::plan::Options::share_items), on every rank: for each timed phase
    /// in the order run, every worker's items done (transfers of a data
    /// phase, files of a metadata phase), by worker over all ranks — what
    /// a later run of the same files carries in its spec's `item_counts`.
    pub items: Vec<Vec<u64>>,
    /// Rank 0's removals of the data files this run wrote: before each
    /// repetition's first write (the files of the repetition before) and
    /// at the end. IOR's `-v` prints one `remove` row per repetition.
    pub removals: Vec<Removal>,
}

/// The latency histograms of one recorded phase, one per worker.
#[derive(Clone)]
pub struct PhaseLatency {
    /// Index into the record's `phases`.
    pub phase: usize,
    /// (worker, its histogram), for the workers this process ran.
    pub workers: Vec<(u32, LatencyHistogram)>,
    /// (worker, what its thread used over the phase).
    pub usage: Vec<(u32, engine::ThreadUsage)>,
    /// (worker, its latencies by direction), where the plan asked the
    /// engine to keep them ([`crate::plan::Step::detail`]).
    pub detail: Vec<(u32, engine::DirLatency)>,
}

/// When one recorded phase ran (see [`Outcome::spans`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseSpan {
    /// Index into the record's `phases`.
    pub phase: usize,
    /// This rank's exit from the barrier that released the phase's
    /// workers: the origin of the times below, the same instant for
    /// every step of a concurrency group.
    pub origin: std::time::Instant,
    /// The first worker's start, ns after the start barrier.
    pub start_ns: u64,
    /// The last worker's finish, ns after the start barrier.
    pub end_ns: u64,
}

impl Outcome {
    /// 0 clean, 1 I/O errors or verification failures, 130 interrupted.
    pub fn exit_code(&self) -> i32 {
        if self.results.interrupted {
            130
        } else if !self.results.errors.is_empty()
            || self
                .results
                .phases
                .iter()
                .any(|p| p.verify.as_ref().is_some_and(|v| v.bad_bytes > 0) || p.errors > 0)
        {
            1
        } else {
            0
        }
    }

    /// Adds the outcome of one more repetition of the same step (a driver
    /// call of its own, see [`crate::plan::Rules::interleave`]) to what its
    /// earlier repetitions made: phases, failed phases, errors, warnings
    /// (once each), probes, latencies, spans, per-node and per-rank
    /// figures and the gathers' costs, renumbered to follow on.
    pub fn merge(&mut self, more: Outcome) {
        let offset = self.results.phases.len();
        let r = more.results;
        if let (Some(a), Some(b)) = (self.results.host.cluster.as_mut(), r.host.cluster) {
            a.node_phases.extend(b.node_phases.into_iter().map(|mut n| {
                n.phase += offset;
                n
            }));
            a.rank_phases.extend(b.rank_phases.into_iter().map(|mut n| {
                n.phase += offset;
                n
            }));
            a.gathers.extend(b.gathers.into_iter().map(|mut g| {
                g.phase += offset;
                g
            }));
        }
        self.results.phases.extend(r.phases);
        self.results.failed_phases.extend(r.failed_phases);
        self.results.errors.extend(r.errors);
        for w in r.warnings {
            if !self.results.warnings.contains(&w) {
                self.results.warnings.push(w);
            }
        }
        self.results.interrupted |= r.interrupted;
        self.notes.extend(more.notes);
        self.probes.extend(more.probes);
        self.latency.extend(more.latency.into_iter().map(|mut l| {
            l.phase += offset;
            l
        }));
        self.spans.extend(more.spans.into_iter().map(|mut s| {
            s.phase += offset;
            s
        }));
        self.results.summarise();
    }
}

/// What the driver does after a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Flow {
    /// On to the next operation.
    Continue,
    /// The rest of this repetition is dropped; the next one runs.
    NextRep,
    /// The run ends here.
    Stop,
}

/// What every phase of one rank runs with: the ranks' coordinator, the
/// stop flag, the plan's options and the phase count (the same on every
/// rank).
pub(crate) struct Ctx<'a> {
    pub(crate) coord: &'a dyn Coordinator,
    pub(crate) stop: &'a Arc<AtomicBool>,
    pub(crate) opts: Options,
    /// The plan's ramp ([`crate::plan::Rules::ramp`]).
    pub(crate) ramp: Option<Duration>,
    pub(crate) seq: u64,
    /// What `--steady` found in the phase that just ran, for its record.
    pub(crate) steady: std::sync::Mutex<Option<report::SteadyRecord>>,
    /// The watch the executor carries across a job's passes, if any
    /// ([`crate::steady::PhaseWatch::Carried`]).
    pub(crate) carried: Option<&'a crate::steady::Watch>,
}

impl<'a> Ctx<'a> {
    /// The context of a run's first phase.
    pub(crate) fn new(
        coord: &'a dyn Coordinator,
        stop: &'a Arc<AtomicBool>,
        opts: Options,
        ramp: Option<Duration>,
    ) -> Self {
        Ctx {
            coord,
            stop,
            opts,
            ramp,
            seq: 0,
            steady: Default::default(),
            carried: None,
        }
    }

    /// The steady watch of a phase about to run: with `--steady`, a
    /// time limit, one process and one step (a concurrency group's steps
    /// share their live totals).
    pub(crate) fn steady_watch(
        &self,
        time_limit: Option<Duration>,
        steps: usize,
    ) -> Option<crate::steady::PhaseWatch<'a>> {
        use crate::steady::{PhaseWatch, Watch};
        let rule = self.opts.steady?;
        (time_limit.is_some() && steps == 1 && self.coord.size() == 1).then(|| match self.carried {
            Some(w) => PhaseWatch::Carried(w),
            None => PhaseWatch::Own(Watch::new(rule)),
        })
    }

    /// Keeps what `watch` found for the phase's record.
    pub(crate) fn steady_found(&self, watch: Option<crate::steady::PhaseWatch<'_>>) {
        let found = watch.map(|w| w.get().record());
        *self.steady.lock().unwrap_or_else(|e| e.into_inner()) = found;
    }

    /// Whether this is rank 0, which reduces, records and cleans up.
    pub(crate) fn is_root(&self) -> bool {
        self.coord.rank() == 0
    }
}

/// What one driver call of a stage runs with (the executor's part of
/// its environment, with the stage's options).
pub(crate) struct StepEnv<'a> {
    pub(crate) command: Vec<String>,
    pub(crate) stop: &'a Arc<AtomicBool>,
    pub(crate) coord: &'a dyn Coordinator,
    pub(crate) opts: Options,
    pub(crate) ramp: Option<Duration>,
    /// The steady watch carried across passes ([`Ctx::carried`]).
    pub(crate) steady: Option<&'a crate::steady::Watch>,
    /// Rank 0, an interrupted step's record (by its index in the stage).
    pub(crate) before_cleanup: &'a mut dyn FnMut(usize, &ResultSet),
}

/// A workload kind: the steps of a phase that differ between data and
/// metadata. [`drive`] calls them in the order its module doc gives.
pub(crate) trait Kind: Sized {
    /// An operation of the sequence.
    type Op: Copy + fmt::Display;
    /// What one phase runs: the operation and everything the workers need.
    type Plan;
    /// What one worker reports of a phase.
    type Sample: Sample;

    /// Whether a failed prerequisite ends only its repetition under
    /// [`Options::keep_going`] (data: the next repetition lays the files
    /// out again) rather than the run (metadata: a half-made tree).
    const LAYOUT_FAILURE_KEEPS_GOING: bool;

    /// The operation's name in the record.
    fn op_name(op: Self::Op) -> &'static str;
    /// Who runs this step: ranks, threads, worker ids.
    fn topo(&self) -> &Topology;
    /// At the start of repetition `rep` (a pause, a fresh-files flag).
    fn begin_rep(&mut self, rep: u32, ctx: &Ctx<'_>);
    /// The untimed phase `op` needs first, if any.
    fn prerequisite(&mut self, op: Self::Op, rep: u32) -> Option<Self::Plan>;
    /// After the prerequisite of `op` ran (cleanly or not): the kind's
    /// bookkeeping and its note on what was laid out.
    fn after_prerequisite(&mut self, op: Self::Op, out: &PhaseOut<Self::Sample>);
    /// The unrecorded phase of `op` that runs `ramp` long before its first
    /// timed phase, for kinds that have one.
    fn ramp(&mut self, op: Self::Op, rep: u32, ramp: Duration) -> Option<Self::Plan> {
        let _ = (op, rep, ramp);
        None
    }
    /// Prepares the timed phase of `op` and returns its plan; `None` skips
    /// the operation (the kind says why in its warnings).
    fn before_phase(&mut self, op: Self::Op, rep: u32, ctx: &Ctx<'_>) -> Option<Self::Plan>;
    /// Runs one phase on every worker of this rank and agrees on its
    /// outcome with the other ranks: a collective call.
    fn run_phase(
        &mut self,
        plan: &Self::Plan,
        ctx: &mut Ctx<'_>,
    ) -> Result<PhaseOut<Self::Sample>, Error>;
    /// Runs the phases `plans` (each with the index of its kind in `ks`)
    /// together from one barrier: the steps of a concurrency group. One
    /// outcome per plan, in order. Kinds that cannot run together refuse
    /// more than one.
    fn run_together(
        ks: &mut [Self],
        plans: &[(usize, Self::Plan)],
        ctx: &mut Ctx<'_>,
    ) -> Result<Vec<PhaseOut<Self::Sample>>, Error> {
        match plans {
            [(j, plan)] => ks[*j].run_phase(plan, ctx).map(|o| vec![o]),
            _ => Err(Error::Usage(
                "these steps cannot run as a concurrency group".into(),
            )),
        }
    }
    /// The retries of every request the kind's backend made so far
    /// ([`engine::backend::Backend::retries`]); `None` where it retries
    /// nothing.
    fn retries(&self) -> Option<objstore::RetryTally> {
        None
    }
    /// Rank 0's record of a timed phase.
    fn reduce(
        &self,
        plan: &Self::Plan,
        out: &PhaseOut<Self::Sample>,
        layout: &Layout,
    ) -> PhaseRecord;
    /// The latency histograms of recorded phase `phase`, where the kind
    /// keeps them.
    fn latency(&self, phase: usize, out: &PhaseOut<Self::Sample>) -> Option<PhaseLatency> {
        let _ = (phase, out);
        None
    }
    /// After a timed phase was recorded: the kind's bookkeeping, and what
    /// comes next when the phase neither failed nor was interrupted (the
    /// driver decides those).
    fn after_phase(&mut self, op: Self::Op, out: &PhaseOut<Self::Sample>, ctx: &Ctx<'_>) -> Flow;
    /// The run's warnings, once, after the last phase, decided where they
    /// can be from what the phases measured (`m`).
    fn take_warnings(&mut self, m: &Measured<'_>) -> Vec<String>;
    /// Whether [`Kind::finish`] on rank 0 removes or rewrites what the run
    /// made, so an interrupted record is handed to the caller first.
    fn cleans_up(&self) -> bool;
    /// After every rank closed its files: rank 0 removes what the run made
    /// (or says where it was kept). Returns the run's notes.
    fn finish(&mut self, is_root: bool) -> Vec<String>;
    /// The removals of data files the kind timed (after [`Kind::finish`]).
    fn removals(&mut self) -> Vec<Removal> {
        Vec::new()
    }
}

/// What a run repeats: each step's operations in order (as many for every
/// step), how many times, and where (the target directory the resource
/// probe watches).
pub(crate) struct Sequence<'a, Op> {
    pub(crate) ops: Vec<&'a [Op]>,
    pub(crate) reps: u32,
    pub(crate) target: &'a Path,
}

impl<'a, Op> Sequence<'a, Op> {
    /// `reps` times `ops` on `target`: one step's sequence.
    pub(crate) fn new(ops: &'a [Op], reps: u32, target: &'a Path) -> Self {
        Sequence {
            ops: vec![ops],
            reps,
            target,
        }
    }
}

/// What the phases of a run measured: their records and, where the probe
/// ran, what each used. The warnings decided after the last phase read
/// it (`crate::evidence`).
pub(crate) struct Measured<'a> {
    phases: &'a [PhaseRecord],
    probes: &'a [PhaseProbe],
}

impl<'a> Measured<'a> {
    /// The recorded `phases` and the `probes` of the timed ones.
    pub(crate) fn new(phases: &'a [PhaseRecord], probes: &'a [PhaseProbe]) -> Self {
        Measured { phases, probes }
    }

    /// Each recorded phase with its probe, where it has one: the n-th
    /// phase of an operation and repetition with the n-th probe of the
    /// same (layout phases are never probed).
    pub(crate) fn with_probes(
        &self,
    ) -> impl Iterator<Item = (&'a PhaseRecord, Option<&'a probe::Resources>)> + '_ {
        let mut used = vec![false; self.probes.len()];
        self.phases.iter().map(move |p| {
            let i = self
                .probes
                .iter()
                .enumerate()
                .position(|(i, q)| !used[i] && q.op == p.op && q.rep == p.rep);
            (
                p,
                i.map(|i| {
                    used[i] = true;
                    &self.probes[i].resources
                }),
            )
        })
    }

    /// The phases that have a probe, with it.
    pub(crate) fn probed(
        &self,
    ) -> impl Iterator<Item = (&'a PhaseRecord, &'a probe::Resources)> + '_ {
        self.with_probes().filter_map(|(p, r)| Some((p, r?)))
    }
}

/// What the driver gathers for one step while the phases run.
struct Gathered {
    results: ResultSet,
    probes: Vec<PhaseProbe>,
    latency: Vec<PhaseLatency>,
    spans: Vec<PhaseSpan>,
    items: Vec<Vec<u64>>,
}

/// Runs every repetition of `seq` with the kinds `ks` (one step, or the
/// steps of a concurrency group) on this rank, starting from the empty
/// records `results` (one per kind), and ends the run: summary, barrier,
/// `before_cleanup` (rank 0, interrupted runs, before files are removed;
/// with the kind's index), cleanup. One outcome per kind.
pub(crate) fn drive<K: Kind>(
    ks: &mut [K],
    ctx: &mut Ctx<'_>,
    seq: Sequence<'_, K::Op>,
    results: Vec<ResultSet>,
    before_cleanup: &mut dyn FnMut(usize, &ResultSet),
) -> Result<Vec<Outcome>, Error> {
    let mut gs: Vec<Gathered> = results
        .into_iter()
        .map(|results| Gathered {
            results,
            probes: Vec::new(),
            latency: Vec::new(),
            spans: Vec::new(),
            items: Vec::new(),
        })
        .collect();
    let first = ctx.opts.first_rep;
    let n_ops = seq.ops.first().map_or(0, |o| o.len());
    'reps: for rep in first..first.saturating_add(seq.reps) {
        for k in ks.iter_mut() {
            k.begin_rep(rep, ctx);
        }
        for i in 0..n_ops {
            match step(ks, ctx, &mut gs, (i, rep), &seq)? {
                Flow::Continue => {}
                Flow::NextRep => continue 'reps,
                Flow::Stop => break 'reps,
            }
        }
    }
    // The steps of a group were stopped together.
    let interrupted = gs.iter().any(|g| g.results.interrupted);
    for (k, g) in ks.iter_mut().zip(&mut gs) {
        g.results.interrupted |= interrupted;
        g.results.warnings = k.take_warnings(&Measured::new(&g.results.phases, &g.probes));
        g.results.summarise();
    }
    // Every rank has closed its files before rank 0 removes them.
    ctx.coord.barrier();
    let is_root = ctx.is_root();
    for (j, (k, g)) in ks.iter().zip(&gs).enumerate() {
        if is_root && g.results.interrupted && k.cleans_up() {
            before_cleanup(j, &g.results);
        }
    }
    Ok(ks
        .iter_mut()
        .zip(gs)
        .map(|(k, g)| Outcome {
            workers: k.topo().workers,
            notes: k.finish(is_root),
            removals: k.removals(),
            results: g.results,
            probes: g.probes,
            latency: g.latency,
            spans: g.spans,
            items: g.items,
        })
        .collect())
}

/// One operation (the `i`-th of each step) of one repetition: stop check,
/// prerequisites and ramps, the timed phase.
fn step<K: Kind>(
    ks: &mut [K],
    ctx: &mut Ctx<'_>,
    gs: &mut [Gathered],
    (i, rep): (usize, u32),
    seq: &Sequence<'_, K::Op>,
) -> Result<Flow, Error> {
    if ctx.coord.any(ctx.stop.load(Ordering::Relaxed)) {
        for g in gs.iter_mut() {
            g.results.interrupted = true;
        }
        return Ok(Flow::Stop);
    }
    for (j, k) in ks.iter_mut().enumerate() {
        let flow = untimed(k, ctx, &mut gs[j], seq.ops[j][i], rep)?;
        if flow != Flow::Continue {
            return Ok(flow);
        }
    }
    let mut plans = Vec::new();
    for (j, k) in ks.iter_mut().enumerate() {
        if let Some(plan) = k.before_phase(seq.ops[j][i], rep, ctx) {
            plans.push((j, plan));
        }
    }
    if plans.is_empty() {
        return Ok(Flow::Continue);
    }
    let pr = (ctx.opts.probe && ctx.is_root()).then(|| Probe::start(seq.target));
    let before: Vec<_> = plans.iter().map(|(j, _)| ks[*j].retries()).collect();
    let outs = K::run_together(ks, &plans, ctx)?;
    if let Some(pr) = pr {
        let resources = pr.finish();
        for (j, _) in &plans {
            gs[*j].probes.push(PhaseProbe {
                op: K::op_name(seq.ops[*j][i]).into(),
                rep,
                resources: resources.clone(),
            });
        }
    }
    let group = plans.len() > 1;
    let mut flow = Flow::Continue;
    for (((j, plan), out), before) in plans.into_iter().zip(outs).zip(before) {
        // One process, one step: the client's counts are this phase's
        // alone (steps side by side share a client; other ranks' clients
        // count their own, not gathered).
        let retries = match (ks[j].retries(), before) {
            (Some(after), Some(b)) if !group && ctx.coord.size() == 1 => {
                Some(retry_record(&after.since(&b)))
            }
            _ => None,
        };
        let f = timed(
            &mut ks[j],
            ctx,
            &mut gs[j],
            (seq.ops[j][i], &plan, out),
            group,
            retries,
        );
        flow = flow.max(f);
    }
    Ok(flow)
}

/// The untimed phases before the timed one of `op`: its prerequisite, then
/// the plan's ramp.
fn untimed<K: Kind>(
    k: &mut K,
    ctx: &mut Ctx<'_>,
    g: &mut Gathered,
    op: K::Op,
    rep: u32,
) -> Result<Flow, Error> {
    if let Some(plan) = k.prerequisite(op, rep) {
        let out = k.run_phase(&plan, ctx)?;
        k.after_prerequisite(op, &out);
        let flow = layout(k, ctx, g, "layout", out);
        if flow != Flow::Continue {
            return Ok(flow);
        }
    }
    let Some(plan) = ctx.ramp.and_then(|d| k.ramp(op, rep, d)) else {
        return Ok(Flow::Continue);
    };
    let out = k.run_phase(&plan, ctx)?;
    Ok(layout(k, ctx, g, "ramp", out))
}

/// After an untimed phase (`what`: layout, ramp). A failure is recorded
/// as `WHAT OP` (or as another rank's, when none of this rank's workers
/// failed) and ends the run, or under `keep_going` the repetition where
/// the kind allows it.
fn layout<K: Kind>(
    k: &K,
    ctx: &Ctx<'_>,
    g: &mut Gathered,
    what: &str,
    out: PhaseOut<K::Sample>,
) -> Flow {
    if out.failed {
        let e = match out.digest.failures.first() {
            Some((w, f)) => failure_record(*w, format!("{what} {}", f.op), f),
            None => other_rank_failed(k.topo()),
        };
        g.results.errors.push(e);
        let next = K::LAYOUT_FAILURE_KEEPS_GOING && ctx.opts.keep_going && !out.interrupted;
        return if next { Flow::NextRep } else { Flow::Stop };
    }
    if out.interrupted {
        g.results.interrupted = true;
        return Flow::Stop;
    }
    Flow::Continue
}

/// A phase's retries as the record keeps them.
fn retry_record(t: &objstore::RetryTally) -> RetryRecord {
    RetryRecord {
        requests_retried: t.retried,
        throttled: t.throttled,
        server_errors: t.server_errors,
        dropped: t.dropped,
        backoff_s: t.backoff.as_secs_f64(),
    }
}

/// After a timed phase ran: reduce, record, and what comes next. `group`:
/// the phase ran beside other steps'.
fn timed<K: Kind>(
    k: &mut K,
    ctx: &Ctx<'_>,
    g: &mut Gathered,
    (op, plan, out): (K::Op, &K::Plan, PhaseOut<K::Sample>),
    group: bool,
    retries: Option<RetryRecord>,
) -> Flow {
    let topo = k.topo();
    let layout = &topo.layout;
    if ctx.opts.share_items {
        g.items.push(share_items(ctx.coord, topo, &out));
    }
    let steady = ctx.steady.lock().unwrap_or_else(|e| e.into_inner()).take();
    let rec = ctx.is_root().then(|| {
        let mut r = k.reduce(plan, &out, layout);
        r.retries = retries;
        if let Some(st) = steady {
            let whole = ctx.opts.steady.is_some_and(|s| s.whole);
            crate::steady::apply(&mut r, st, whole);
        }
        r
    });
    let errors_before = g.results.errors.len();
    let recorded = g.results.phases.len();
    record_phase(&mut g.results, rec, &out, layout);
    if g.results.phases.len() > recorded {
        g.spans.push(PhaseSpan {
            phase: recorded,
            origin: out.epoch,
            start_ns: out.digest.t0(),
            end_ns: out.digest.end_ns,
        });
        // Rank 0 may hold other ranks' rows too, whose histograms stay
        // on their ranks: keep this process's workers, as documented.
        let mine = topo.my_workers();
        g.latency.extend(k.latency(recorded, &out).map(|mut l| {
            l.workers.retain(|(w, _)| mine.contains(w));
            l.usage.retain(|(w, _)| mine.contains(w));
            l.detail.retain(|(w, _)| mine.contains(w));
            l
        }));
    }
    let flow = k.after_phase(op, &out, ctx);
    if out.failed && g.results.errors.len() == errors_before {
        // Another rank (or another step of the group) failed: this one
        // stops cleanly with it.
        let topo = k.topo();
        g.results.errors.push(if group {
            other_step_failed(topo)
        } else {
            other_rank_failed(topo)
        });
    }
    if out.interrupted {
        g.results.interrupted = true;
        return Flow::Stop;
    }
    if out.failed {
        // Under keep_going the rest of this repetition would work on what
        // the failed phase left; the next one starts afresh.
        return if ctx.opts.keep_going {
            Flow::NextRep
        } else {
            Flow::Stop
        };
    }
    flow
}

/// Every worker's items done in a phase, by worker, on every rank (a
/// collective call): each rank sends its own workers' counts.
fn share_items<S: Sample>(coord: &dyn Coordinator, topo: &Topology, out: &PhaseOut<S>) -> Vec<u64> {
    let mine_range = topo.my_workers();
    let mine: Vec<(u32, u64)> = out
        .samples
        .iter()
        .filter(|s| mine_range.contains(&s.worker()))
        .map(|s| (s.worker(), s.ops()))
        .collect();
    let all = if coord.size() == 1 {
        vec![mine]
    } else {
        coord.all_gather_as(&mine).unwrap_or_default()
    };
    let mut items = vec![0; topo.workers as usize];
    for (w, n) in all.into_iter().flatten() {
        if let Some(slot) = items.get_mut(w as usize) {
            *slot = n;
        }
    }
    items
}

#[cfg(test)]
mod tests {
    //! The driver's order of steps and its common rules, on a scripted
    //! kind whose phases end as each test says (no workers run).

    use super::*;
    use engine::{IoFailure, WorkerSample};
    use report::{HostInfo, JobSpec};

    /// How a scripted phase ends.
    #[derive(Clone, Copy, Default)]
    struct End {
        failed: bool,
        interrupted: bool,
    }

    /// A kind of two operations, `a` (which needs a layout in
    /// repetition 0) and `b`, whose phases end as `ends` says (keyed by
    /// repetition, operation, timed), logging every step.
    struct Script<const KEEP: bool> {
        topo: Topology,
        reps: u32,
        ends: Vec<((u32, char, bool), End)>,
        log: Vec<String>,
        /// Set the stop flag when this phase runs.
        stop_at: Option<(u32, char)>,
        stop: Arc<AtomicBool>,
    }

    impl<const KEEP: bool> Script<KEEP> {
        fn new(reps: u32) -> Self {
            let mut host = HostInfo::default();
            let topo = Topology::discover(&coord::Solo, 1, &mut host).expect("topology");
            Script {
                topo,
                reps,
                ends: Vec::new(),
                log: Vec::new(),
                stop_at: None,
                stop: Arc::new(AtomicBool::new(false)),
            }
        }
        fn end(mut self, rep: u32, op: char, timed: bool, e: End) -> Self {
            self.ends.push(((rep, op, timed), e));
            self
        }
    }

    impl<const KEEP: bool> Kind for Script<KEEP> {
        type Op = char;
        type Plan = (u32, char, bool);
        type Sample = WorkerSample;
        const LAYOUT_FAILURE_KEEPS_GOING: bool = KEEP;

        fn op_name(op: char) -> &'static str {
            if op == 'a' {
                "a"
            } else {
                "b"
            }
        }
        fn topo(&self) -> &Topology {
            &self.topo
        }
        fn begin_rep(&mut self, rep: u32, _ctx: &Ctx<'_>) {
            self.log.push(format!("rep {rep}"));
        }
        fn prerequisite(&mut self, op: char, rep: u32) -> Option<Self::Plan> {
            (op == 'a' && rep == 0).then_some((rep, op, false))
        }
        fn after_prerequisite(&mut self, op: char, out: &PhaseOut<WorkerSample>) {
            self.log
                .push(format!("laid out {op} failed={}", out.failed));
        }
        fn before_phase(&mut self, op: char, rep: u32, _ctx: &Ctx<'_>) -> Option<Self::Plan> {
            Some((rep, op, true))
        }
        fn run_phase(
            &mut self,
            plan: &Self::Plan,
            _ctx: &mut Ctx<'_>,
        ) -> Result<PhaseOut<WorkerSample>, Error> {
            let (rep, op, timed) = *plan;
            self.log.push(format!(
                "{} {op} {rep}",
                if timed { "timed" } else { "layout" }
            ));
            if self.stop_at == Some((rep, op)) {
                self.stop.store(true, Ordering::Relaxed);
            }
            let e = self
                .ends
                .iter()
                .find(|(k, _)| *k == *plan)
                .map(|(_, e)| *e)
                .unwrap_or_default();
            Ok(phase_out(e))
        }
        fn reduce(
            &self,
            plan: &Self::Plan,
            _out: &PhaseOut<WorkerSample>,
            _layout: &Layout,
        ) -> PhaseRecord {
            PhaseRecord {
                op: Self::op_name(plan.1).into(),
                rep: plan.0,
                ..Default::default()
            }
        }
        fn after_phase(&mut self, op: char, _out: &PhaseOut<WorkerSample>, _ctx: &Ctx<'_>) -> Flow {
            self.log.push(format!("after {op}"));
            Flow::Continue
        }
        fn take_warnings(&mut self, _m: &Measured<'_>) -> Vec<String> {
            vec!["w".into()]
        }
        fn cleans_up(&self) -> bool {
            true
        }
        fn finish(&mut self, is_root: bool) -> Vec<String> {
            self.log.push(format!("finish root={is_root}"));
            vec!["n".into()]
        }
    }

    /// The outcome of a phase that ended as `e` (worker 0's failure in the
    /// digest when it failed).
    fn phase_out(e: End) -> PhaseOut<WorkerSample> {
        let mut out = PhaseOut {
            samples: Vec::new(),
            all_workers: true,
            digest: Default::default(),
            first_done_ns: None,
            cpu: (0.0, 0.0),
            failed: e.failed,
            interrupted: e.interrupted,
            deadline: false,
            start_skew_ns: None,
            gathered_bytes: None,
            row_bytes: None,
            epoch: std::time::Instant::now(),
        };
        if e.failed {
            out.digest.failures.push((
                0,
                IoFailure {
                    op: "write".into(),
                    path: "/x".into(),
                    offset: None,
                    errno: Some(5),
                    message: "EIO".into(),
                },
            ));
        }
        out
    }

    /// Drives `k` alone; returns the outcome and how often the caller's
    /// before-cleanup hook ran.
    fn run<const KEEP: bool>(k: &mut Script<KEEP>, keep_going: bool) -> (Outcome, u32) {
        let coord = coord::Solo;
        let stop = Arc::clone(&k.stop);
        let opts = Options {
            keep_going,
            ..Default::default()
        };
        let mut ctx = Ctx::new(&coord, &stop, opts, None);
        let results = crate::record::new_record(
            Vec::new(),
            HostInfo::default(),
            JobSpec::Run(
                spec::RawWorkload {
                    target: Some("/".into()),
                    ops: vec![spec::Op::Write],
                    ..Default::default()
                }
                .build()
                .expect("a valid spec"),
            ),
        );
        let mut hooked = 0;
        let seq = Sequence::new(&['a', 'b'], k.reps, Path::new("/"));
        let mut out = drive(
            std::slice::from_mut(k),
            &mut ctx,
            seq,
            vec![results],
            &mut |_, _| hooked += 1,
        )
        .expect("drive");
        (out.remove(0), hooked)
    }

    fn failed() -> End {
        End {
            failed: true,
            interrupted: false,
        }
    }

    #[test]
    fn every_step_runs_in_order_and_the_record_is_kept() {
        let mut k = Script::<true>::new(2);
        let (out, hooked) = run(&mut k, false);
        assert_eq!(
            k.log,
            [
                "rep 0",
                "layout a 0",
                "laid out a failed=false",
                "timed a 0",
                "after a",
                "timed b 0",
                "after b",
                "rep 1",
                "timed a 1",
                "after a",
                "timed b 1",
                "after b",
                "finish root=true",
            ]
        );
        let phases: Vec<_> = out.results.phases.iter().map(|p| (&*p.op, p.rep)).collect();
        assert_eq!(phases, [("a", 0), ("b", 0), ("a", 1), ("b", 1)]);
        assert_eq!(
            (out.results.warnings.clone(), out.notes.clone()),
            (vec!["w".to_string()], vec!["n".to_string()])
        );
        assert_eq!(hooked, 0, "the hook is for interrupted runs only");
        assert_eq!(out.exit_code(), 0);
    }

    #[test]
    fn a_failed_phase_ends_the_run_or_under_keep_going_its_repetition() {
        let script = || Script::<true>::new(2).end(0, 'a', true, failed());
        let mut k = script();
        let (out, _) = run(&mut k, false);
        assert!(
            !k.log.iter().any(|l| l == "rep 1" || l == "timed b 0"),
            "{:?}",
            k.log
        );
        assert_eq!(out.results.failed_phases.len(), 1);
        assert_eq!(out.results.errors.len(), 1);
        assert_eq!(out.exit_code(), 1);

        let mut k = script();
        let (out, _) = run(&mut k, true);
        assert!(!k.log.iter().any(|l| l == "timed b 0"), "{:?}", k.log);
        assert!(k.log.iter().any(|l| l == "timed b 1"), "{:?}", k.log);
        assert_eq!(out.results.phases.len(), 2, "repetition 1 is recorded");
        assert_eq!(out.exit_code(), 1);
    }

    #[test]
    fn a_failed_layout_is_recorded_as_such_and_the_kind_says_if_it_goes_on() {
        let mut k = Script::<true>::new(2).end(0, 'a', false, failed());
        let (out, _) = run(&mut k, true);
        assert_eq!(out.results.errors[0].op, "layout write");
        assert!(!k.log.iter().any(|l| l == "timed a 0"), "{:?}", k.log);
        assert!(k.log.iter().any(|l| l == "timed a 1"), "{:?}", k.log);

        let mut k = Script::<false>::new(2).end(0, 'a', false, failed());
        let (out, _) = run(&mut k, true);
        assert_eq!(out.results.errors.len(), 1);
        assert!(!k.log.iter().any(|l| l.starts_with("timed")), "{:?}", k.log);
        assert_eq!(k.log.last().map(String::as_str), Some("finish root=true"));
    }

    #[test]
    fn an_interrupt_ends_the_run_at_the_next_boundary_and_the_hook_sees_it() {
        let mut k = Script::<true>::new(2).end(
            0,
            'b',
            true,
            End {
                failed: false,
                interrupted: true,
            },
        );
        let (out, hooked) = run(&mut k, true);
        assert!(out.results.interrupted);
        assert_eq!(hooked, 1);
        assert!(!k.log.iter().any(|l| l == "rep 1"), "{:?}", k.log);
        assert_eq!(out.exit_code(), 130);

        // The stop flag raised during a clean phase: the next operation
        // does not start.
        let mut k = Script::<true>::new(1);
        k.stop_at = Some((0, 'a'));
        let (out, hooked) = run(&mut k, false);
        assert!(out.results.interrupted);
        assert_eq!(hooked, 1);
        assert_eq!(out.results.phases.len(), 1);
        assert!(!k.log.iter().any(|l| l == "timed b 0"), "{:?}", k.log);
    }

    /// One repetition's driver call on 2 ranks: its phases, and per phase
    /// a per-node row, two per-rank rows and the gather's cost.
    fn one_rep() -> Outcome {
        let bytes = include_bytes!("../../report/tests/golden/results.json");
        let mut results = report::from_json(bytes).unwrap();
        let n = results.phases.len();
        let mut c = report::ClusterInfo {
            ranks: 2,
            ..Default::default()
        };
        for phase in 0..n {
            c.node_phases.push(report::NodePhase {
                phase,
                ..Default::default()
            });
            for rank in 0..2 {
                c.rank_phases.push(report::RankPhase {
                    phase,
                    rank,
                    ..Default::default()
                });
            }
            c.gathers.push(report::PhaseGather {
                phase,
                bytes: 100,
                per_worker: false,
                ..Default::default()
            });
        }
        results.host.cluster = Some(c);
        Outcome {
            results,
            notes: Vec::new(),
            probes: Vec::new(),
            latency: Vec::new(),
            spans: (0..n)
                .map(|phase| PhaseSpan {
                    phase,
                    origin: std::time::Instant::now(),
                    start_ns: 0,
                    end_ns: 1,
                })
                .collect(),
            workers: 2,
            items: Vec::new(),
            removals: Vec::new(),
        }
    }

    #[test]
    fn repetitions_run_one_by_one_keep_every_per_rank_row_and_span() {
        let mut all = one_rep();
        let n = all.results.phases.len();
        all.merge(one_rep());
        assert_eq!(all.results.phases.len(), 2 * n);
        let c = all.results.host.cluster.unwrap();
        let each: Vec<usize> = (0..2 * n).collect();
        let ranks: Vec<usize> = c.rank_phases.iter().map(|r| r.phase).collect();
        let twice: Vec<usize> = each.iter().flat_map(|&p| [p, p]).collect();
        assert_eq!(ranks, twice);
        let gathers: Vec<usize> = c.gathers.iter().map(|g| g.phase).collect();
        assert_eq!(gathers, each);
        let nodes: Vec<usize> = c.node_phases.iter().map(|g| g.phase).collect();
        assert_eq!(nodes, each);
        let spans: Vec<usize> = all.spans.iter().map(|s| s.phase).collect();
        assert_eq!(spans, each);
    }
}
