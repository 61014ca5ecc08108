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
use stats::LatencyHistogram;

use crate::cluster::{Layout, PhaseOut, Sample};
use crate::error::Error;
use crate::record::{failure_record, other_rank_failed, record_phase};
use crate::topology::Topology;

/// What a finished (or stopped) run hands back to the caller.
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
    /// (worker, its latencies by direction), where the engine kept them
    /// ([`engine::worker::set_detail`]).
    pub detail: Vec<(u32, engine::DirLatency)>,
}

/// How a driver runs beyond what the spec says: what a sweep asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Measure the resources of every timed phase with [`probe::Probe`]
    /// (rank 0 only). The probe reads /proc and sysfs before and after
    /// the phase and samples from a thread of its own, never in the
    /// workers' I/O loop.
    pub probe: bool,
    /// A repetition whose phase failed ends there, its record and errors
    /// kept, and the next repetition runs; without it the first failure
    /// ends the run.
    pub keep_going: bool,
    /// Across MPI ranks, rank 0 receives one pre-merged summary per node
    /// (and one per rank of its own node) instead of every worker's
    /// sample: the record is the same but for the per-worker rows
    /// (`workers`, `files.threads`), which then hold none (`--per-worker`
    /// off). Without it every worker's sample is gathered as well, and
    /// the rows are kept. One process always keeps them.
    pub node_summary: bool,
    /// With `node_summary`, rank 0 still receives a few numbers per
    /// worker (its [`Sample::Brief`](crate::cluster::Sample::Brief):
    /// records or files, bytes, times, a status), for front-ends that print
    /// a line per worker (smallfile's threads, dd's jobs). The record's
    /// per-worker rows (`workers`, `files.threads`) are made of those
    /// numbers, the same rows as from whole samples; a few dozen bytes a
    /// worker at rank 0 instead of 280–330 for its sample.
    pub brief_rows: bool,
    /// The number of the first repetition (0 unless told). A sweep that
    /// interleaves the repetitions of several points runs each of them
    /// alone (`reps` 1) under its own number, so its random offsets, its
    /// progress line and its record are those of that repetition, and a
    /// repetition after the first is treated as one (a pause before it,
    /// caches dropped before its first phase).
    pub first_rep: u32,
}

impl Options {
    /// What rank 0 gathers per worker under MPI.
    pub fn rows(&self) -> crate::cluster::Rows {
        use crate::cluster::Rows;
        match (self.node_summary, self.brief_rows) {
            (false, _) => Rows::Full,
            (true, true) => Rows::Brief,
            (true, false) => Rows::None,
        }
    }
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
}

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

impl<'a> Ctx<'a> {
    /// The context of a run's first phase.
    pub(crate) fn new(
        coord: &'a dyn Coordinator,
        topo: &'a Topology,
        stop: &'a Arc<AtomicBool>,
        opts: Options,
    ) -> Self {
        Ctx {
            coord,
            topo,
            stop,
            opts,
            seq: 0,
        }
    }

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
    /// The run's warnings, once, after the last phase, decided where they
    /// can be from what the phases measured (`m`).
    fn take_warnings(&mut self, m: &Measured<'_>) -> Vec<String>;
    /// Whether [`Kind::finish`] on rank 0 removes or rewrites what the run
    /// made, so an interrupted record is handed to the caller first.
    fn cleans_up(&self) -> bool;
    /// After every rank closed its files: rank 0 removes what the run made
    /// (or says where it was kept). Returns the run's notes.
    fn finish(&mut self, is_root: bool) -> Vec<String>;
}

/// What a run repeats: its operations in order, how many times, and where
/// (the target directory the resource probe watches).
pub(crate) struct Sequence<'a, Op> {
    pub(crate) ops: &'a [Op],
    pub(crate) reps: u32,
    pub(crate) target: &'a Path,
}

impl<'a, Op> Sequence<'a, Op> {
    /// `reps` times `ops` on `target`.
    pub(crate) fn new(ops: &'a [Op], reps: u32, target: &'a Path) -> Self {
        Sequence { ops, reps, target }
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

/// What the driver gathers while the phases run.
struct Gathered {
    results: ResultSet,
    probes: Vec<PhaseProbe>,
    latency: Vec<PhaseLatency>,
}

/// Runs every repetition of `seq` with `k` on this rank, starting from the
/// empty record `results`, and ends the run: summary, barrier,
/// `before_cleanup` (rank 0, interrupted runs, before files are removed),
/// cleanup.
pub(crate) fn drive<K: Kind>(
    k: &mut K,
    ctx: &mut Ctx<'_>,
    seq: Sequence<'_, K::Op>,
    results: ResultSet,
    before_cleanup: &mut dyn FnMut(&ResultSet),
) -> Result<Outcome, Error> {
    let mut g = Gathered {
        results,
        probes: Vec::new(),
        latency: Vec::new(),
    };
    let first = ctx.opts.first_rep;
    'reps: for rep in first..first.saturating_add(seq.reps) {
        k.begin_rep(rep, ctx);
        for &op in seq.ops {
            match step(k, ctx, &mut g, (op, rep), seq.target)? {
                Flow::Continue => {}
                Flow::NextRep => continue 'reps,
                Flow::Stop => break 'reps,
            }
        }
    }
    let mut results = g.results;
    results.warnings = k.take_warnings(&Measured::new(&results.phases, &g.probes));
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
    (op, rep): (K::Op, u32),
    target: &Path,
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
    let pr = (ctx.opts.probe && ctx.is_root()).then(|| Probe::start(target));
    let out = k.run_phase(&plan, ctx)?;
    if let Some(pr) = pr {
        g.probes.push(PhaseProbe {
            op: K::op_name(op).into(),
            rep,
            resources: pr.finish(),
        });
    }
    Ok(timed(k, ctx, g, op, &plan, out))
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

/// After a timed phase ran: reduce, record, and what comes next.
fn timed<K: Kind>(
    k: &mut K,
    ctx: &Ctx<'_>,
    g: &mut Gathered,
    op: K::Op,
    plan: &K::Plan,
    out: PhaseOut<K::Sample>,
) -> Flow {
    let layout = &ctx.topo.layout;
    let rec = ctx.is_root().then(|| k.reduce(plan, &out, layout));
    let errors_before = g.results.errors.len();
    let recorded = g.results.phases.len();
    record_phase(&mut g.results, rec, &out, layout);
    if g.results.phases.len() > recorded {
        // Rank 0 may hold other ranks' rows too, whose histograms stay
        // on their ranks: keep this process's workers, as documented.
        g.latency.extend(k.latency(recorded, &out).map(|mut l| {
            let mine = ctx.topo.my_workers();
            l.workers.retain(|(w, _)| mine.contains(w));
            l.usage.retain(|(w, _)| mine.contains(w));
            l.detail.retain(|(w, _)| mine.contains(w));
            l
        }));
    }
    let flow = k.after_phase(op, &out, ctx);
    if out.failed && g.results.errors.len() == errors_before {
        // Another rank failed: this one stops cleanly with it.
        g.results.errors.push(other_rank_failed(ctx.topo));
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
        reps: u32,
        ends: Vec<((u32, char, bool), End)>,
        log: Vec<String>,
        /// Set the stop flag when this phase runs.
        stop_at: Option<(u32, char)>,
        stop: Arc<AtomicBool>,
    }

    impl<const KEEP: bool> Script<KEEP> {
        fn new(reps: u32) -> Self {
            Script {
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
        let topo = Topology::discover(&coord, 1, &mut HostInfo::default()).expect("topology");
        let stop = Arc::clone(&k.stop);
        let mut ctx = Ctx {
            coord: &coord,
            topo: &topo,
            stop: &stop,
            opts: Options {
                keep_going,
                ..Default::default()
            },
            seq: 0,
        };
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
        let seq = Sequence {
            ops: &['a', 'b'],
            reps: k.reps,
            target: Path::new("/"),
        };
        let out = drive(k, &mut ctx, seq, results, &mut |_| hooked += 1).expect("drive");
        (out, hooked)
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
}
