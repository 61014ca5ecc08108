//! How a phase runs: the one driver of every workload, data or metadata.
//!
//! [`drive`] owns the loop a run is made of: for each repetition, for each
//! operation of the sequence —
//!
//! 1. the stop check: if any rank was interrupted, the run ends here;
//! 2. the untimed prerequisite ("layout"), when the operation needs
//!    something that is not there yet (data to read, entries to stat):
//!    the workload [`Kind`] names it, the driver runs it and records a
//!    failure as `layout OP`;
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
//! The two kinds are `run`'s data workload (`crate::run`) and `meta`'s
//! metadata workload (`crate::meta`); each is a [`Kind`].

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use coord::Coordinator;
use probe::{PhaseProbe, Probe};
use report::{PhaseRecord, ResultSet};

use crate::cluster::{Layout, PhaseOut, Sample};
use crate::error::Error;
use crate::record::{failure_record, other_rank_failed, record_phase};
use crate::run::{Options, Outcome, PhaseLatency};
use crate::topology::Topology;

/// What the driver does after a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// On to the next operation.
    Continue,
    /// The rest of this repetition is dropped; the next one runs.
    NextRep,
    /// The run ends here.
    Stop,
}

/// What every phase of one rank runs with: the ranks' coordinator, the
/// run's topology, the stop flag, the caller's options and the phase count
/// (the same on every rank).
pub(crate) struct Ctx<'a> {
    pub(crate) coord: &'a dyn Coordinator,
    pub(crate) topo: &'a Topology,
    pub(crate) stop: &'a Arc<AtomicBool>,
    pub(crate) opts: Options,
    pub(crate) seq: u64,
}

impl Ctx<'_> {
    /// Whether this is rank 0, which reduces, records and cleans up.
    pub(crate) fn is_root(&self) -> bool {
        self.topo.is_root()
    }
}

/// A workload kind: the steps of a phase that differ between data and
/// metadata. [`drive`] calls them in the order its module doc gives.
pub(crate) trait Kind {
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

    /// The operations of one repetition, in order.
    fn ops(&self) -> Vec<Self::Op>;
    /// Repetitions to run.
    fn reps(&self) -> u32;
    /// The target directory (what the resource probe watches).
    fn target(&self) -> &Path;
    /// The operation's name in the record.
    fn op_name(op: Self::Op) -> &'static str;
    /// At the start of repetition `rep` (a pause, a fresh-files flag).
    fn begin_rep(&mut self, rep: u32, ctx: &Ctx<'_>);
    /// The untimed phase `op` needs first, if any.
    fn prerequisite(&mut self, op: Self::Op, rep: u32) -> Option<Self::Plan>;
    /// After the prerequisite of `op` ran (cleanly or not): the kind's
    /// bookkeeping and its note on what was laid out.
    fn after_prerequisite(&mut self, op: Self::Op, out: &PhaseOut<Self::Sample>);
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
    /// The run's warnings, once, after the last phase.
    fn take_warnings(&mut self) -> Vec<String>;
    /// Whether [`Kind::finish`] on rank 0 removes or rewrites what the run
    /// made, so an interrupted record is handed to the caller first.
    fn cleans_up(&self) -> bool;
    /// After every rank closed its files: rank 0 removes what the run made
    /// (or says where it was kept). Returns the run's notes.
    fn finish(&mut self, is_root: bool) -> Vec<String>;
}

/// What the driver gathers while the phases run.
struct Gathered {
    results: ResultSet,
    probes: Vec<PhaseProbe>,
    latency: Vec<PhaseLatency>,
}

/// Runs every repetition of `k` on this rank, starting from the empty
/// record `results`, and ends the run: summary, barrier, `before_cleanup`
/// (rank 0, interrupted runs, before files are removed), cleanup.
pub(crate) fn drive<K: Kind>(
    k: &mut K,
    ctx: &mut Ctx<'_>,
    results: ResultSet,
    before_cleanup: &mut dyn FnMut(&ResultSet),
) -> Result<Outcome, Error> {
    let mut g = Gathered {
        results,
        probes: Vec::new(),
        latency: Vec::new(),
    };
    let first = ctx.opts.first_rep;
    'reps: for rep in first..first.saturating_add(k.reps()) {
        k.begin_rep(rep, ctx);
        for op in k.ops() {
            match step(k, ctx, &mut g, op, rep)? {
                Flow::Continue => {}
                Flow::NextRep => continue 'reps,
                Flow::Stop => break 'reps,
            }
        }
    }
    let mut results = g.results;
    results.warnings = k.take_warnings();
    results.summarise();
    // Every rank has closed its files before rank 0 removes them.
    ctx.coord.barrier();
    let is_root = ctx.is_root();
    if is_root && results.interrupted && k.cleans_up() {
        before_cleanup(&results);
    }
    let notes = k.finish(is_root);
    Ok(Outcome {
        results,
        notes,
        probes: g.probes,
        latency: g.latency,
    })
}

/// One operation of one repetition: stop check, prerequisite, timed phase.
fn step<K: Kind>(
    k: &mut K,
    ctx: &mut Ctx<'_>,
    g: &mut Gathered,
    op: K::Op,
    rep: u32,
) -> Result<Flow, Error> {
    if ctx.coord.any(ctx.stop.load(Ordering::Relaxed)) {
        g.results.interrupted = true;
        return Ok(Flow::Stop);
    }
    if let Some(plan) = k.prerequisite(op, rep) {
        let flow = layout(k, ctx, g, op, &plan)?;
        if flow != Flow::Continue {
            return Ok(flow);
        }
    }
    let Some(plan) = k.before_phase(op, rep, ctx) else {
        return Ok(Flow::Continue);
    };
    timed(k, ctx, g, op, rep, &plan)
}

/// The untimed prerequisite of `op`. A failure is recorded as `layout OP`
/// (or as another rank's, when none of this rank's workers failed) and
/// ends the run, or under `keep_going` the repetition where the kind
/// allows it.
fn layout<K: Kind>(
    k: &mut K,
    ctx: &mut Ctx<'_>,
    g: &mut Gathered,
    op: K::Op,
    plan: &K::Plan,
) -> Result<Flow, Error> {
    let out = k.run_phase(plan, ctx)?;
    k.after_prerequisite(op, &out);
    if out.failed {
        let e = match out.digest.failures.first() {
            Some((w, f)) => failure_record(*w, format!("layout {}", f.op), f),
            None => other_rank_failed(ctx.topo),
        };
        g.results.errors.push(e);
        let next = K::LAYOUT_FAILURE_KEEPS_GOING && ctx.opts.keep_going && !out.interrupted;
        return Ok(if next { Flow::NextRep } else { Flow::Stop });
    }
    if out.interrupted {
        g.results.interrupted = true;
        return Ok(Flow::Stop);
    }
    Ok(Flow::Continue)
}

/// A timed phase: probe, run, reduce, record, and what comes next.
fn timed<K: Kind>(
    k: &mut K,
    ctx: &mut Ctx<'_>,
    g: &mut Gathered,
    op: K::Op,
    rep: u32,
    plan: &K::Plan,
) -> Result<Flow, Error> {
    let pr = (ctx.opts.probe && ctx.is_root()).then(|| Probe::start(k.target()));
    let out = k.run_phase(plan, ctx)?;
    if let Some(pr) = pr {
        g.probes.push(PhaseProbe {
            op: K::op_name(op).into(),
            rep,
            resources: pr.finish(),
        });
    }
    let layout = &ctx.topo.layout;
    let rec = ctx.is_root().then(|| k.reduce(plan, &out, layout));
    let errors_before = g.results.errors.len();
    let recorded = g.results.phases.len();
    record_phase(&mut g.results, rec, &out, layout);
    if g.results.phases.len() > recorded {
        g.latency.extend(k.latency(recorded, &out));
    }
    let flow = k.after_phase(op, &out, ctx);
    if out.failed && g.results.errors.len() == errors_before {
        // Another rank failed: this one stops cleanly with it.
        g.results.errors.push(other_rank_failed(ctx.topo));
    }
    if out.interrupted {
        g.results.interrupted = true;
        return Ok(Flow::Stop);
    }
    if out.failed {
        // Under keep_going the rest of this repetition would work on what
        // the failed phase left; the next one starts afresh.
        return Ok(if ctx.opts.keep_going {
            Flow::NextRep
        } else {
            Flow::Stop
        });
    }
    Ok(flow)
}
