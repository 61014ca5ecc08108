//! The data workload of `ioscale run`: checks, phases, reduction, cleanup.
//!
//! It turns a validated [`WorkloadSpec`] (a data step of a
//! [`crate::plan::Plan`]) into phases, starts the workers of each phase
//! together at a barrier, reduces their samples into a [`PhaseRecord`],
//! and returns a [`ResultSet`] — it never prints. The loop over
//! repetitions and phases is the shared one of `crate::phase`, started by
//! the executor ([`crate::exec`]); this module is the data kind's steps
//! (layout write, ramp, cache drop, fresh files, the engines' state
//! between phases), for one step or for the steps of a concurrency group
//! run side by side. Aggregate
//! rates use total work ÷ (last finish − first start), so workers that take
//! turns on too few CPUs are not flattered by summing their own rates.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use coord::Coordinator;
use engine::backend::{Advice, DataFile, OpenHow};
use engine::registry::{EngineOptions, Engines};
use engine::uring::UringOptions;
use engine::{run_worker, Detail, PhasePlan, Prepared, WorkerSample};
use report::{HostInfo, JobSpec, Mismatch, PhaseRecord, Stonewall, VerifyRecord, WorkerRecord};
use spec::{format_size, Op, SyncMode, WorkloadSpec};

use crate::cluster::{self, Layout, PhaseOut};
use crate::dataset::DataSet;
use crate::error::Error;
use crate::evidence::{cache_warnings, turns_warning, CacheRisk, Machine};
use crate::host;
use crate::phase::{drive, Ctx, Flow, Kind, Measured, Sequence, StepEnv};
use crate::record::new_record;
use crate::topology::Topology;

// The driver's options and what it hands back, named here for callers
// that know them by these names (the plan and the phase driver own them).
pub use crate::phase::{Outcome, PhaseLatency, PhaseSpan, Removal};
pub use crate::plan::Options;

/// Checks the target before anything is created: exists, is a directory,
/// writable, not read-only; the engine known to the registry and able to
/// serve `--iodepth` and `--direct`; O_DIRECT accepted with this alignment;
/// io_uring available. Returns the buffer alignment to use.
pub fn preflight(spec: &WorkloadSpec) -> Result<usize, Error> {
    let eng = engine::registry::check_data(&spec.engine, spec.iodepth, spec.direct)
        .map_err(|e| Error::Usage(e.to_string()))?;
    if spec.uring_opts.is_some() && eng.info().name != "io_uring" {
        return Err(Error::Usage(format!(
            "--uring-opts: the {} engine has no ring to set up; use --engine io_uring",
            eng.info().name
        )));
    }
    let t = &spec.target;
    check_target(t)?;
    let mut align = 4096usize;
    if spec.direct {
        align = crate::dataset::probe_direct_for(spec)?;
    }
    if spec.engine == "io_uring" {
        if let Err(e) = engine::uring::UringQueue::ring(2) {
            return Err(Error::Refused(format!(
                "--engine io_uring: io_uring is not available here ({e}); use --engine sync"
            )));
        }
    }
    Ok(align)
}

/// Refuses a run whose transfer buffers (`workers` on this node × the
/// requests each keeps in flight × `--xfer`) exceed the memory available
/// here: the workers fill their buffers before the first request, so such
/// a run would end in the OOM killer, not in a measurement.
pub(crate) fn check_buffer_memory(
    spec: &WorkloadSpec,
    workers: u32,
    align: usize,
) -> Result<(), Error> {
    let queueing = engine::registry::data_engine(&spec.engine).is_ok_and(|e| e.info().queueing);
    let depth = if queueing { spec.iodepth.max(1) } else { 1 };
    let need = (spec.xfer as u128 + align as u128) * depth as u128 * workers as u128;
    let avail = crate::host::mem_available();
    if avail == 0 || need <= avail as u128 {
        return Ok(());
    }
    let depth_part = if queueing {
        format!(" × --iodepth {depth}")
    } else {
        String::new()
    };
    let fewer = if queueing { ", a lower --iodepth" } else { "" };
    Err(Error::Usage(format!(
        "--xfer {}{depth_part} × {workers} workers on this node need {} of transfer buffers, \
         more than the {} of memory available here; use a smaller --xfer{fewer} or fewer --threads",
        format_size(spec.xfer),
        format_size(u64::try_from(need).unwrap_or(u64::MAX)),
        format_size(avail),
    )))
}

/// The checks every command makes of TARGET before it creates anything:
/// it exists, is a directory, is on a writable file system, and this user
/// may create entries in it.
pub(crate) fn check_target(t: &Path) -> Result<(), Error> {
    let meta = std::fs::metadata(t).map_err(|e| {
        Error::Refused(format!(
            "TARGET {}: {e}; name an existing directory on the file system to test",
            t.display()
        ))
    })?;
    if !meta.is_dir() {
        return Err(Error::Refused(format!(
            "TARGET {} is not a directory; name a directory on the file system to test",
            t.display()
        )));
    }
    if engine::sys::is_read_only(t).unwrap_or(false) {
        return Err(Error::Refused(format!(
            "TARGET {} is on a read-only file system (EROFS); choose a writable target",
            t.display()
        )));
    }
    if !engine::sys::can_write(t) {
        return Err(Error::Refused(format!(
            "TARGET {}: permission denied (EACCES); choose a directory you may write to",
            t.display()
        )));
    }
    Ok(())
}

/// A warning when TARGET has less free space than the run may write.
pub(crate) fn space_warning(target: &Path, need: u64) -> Option<String> {
    let free = engine::sys::free_bytes(target).ok()?;
    (need > free).then(|| {
        format!(
            "the run writes up to {} but the target has {} free: expect ENOSPC",
            format_size(need),
            format_size(free)
        )
    })
}

/// Warnings that change how the figures must be read and that hold
/// whatever the phases measure; the page cache and the CPUs are decided
/// after them (`crate::evidence`).
fn warnings(host: &HostInfo) -> Vec<String> {
    let mut w = Vec::new();
    if in_memory(host) {
        w.push(format!(
            "the target {} is on {}: memory, not storage",
            host.target, host.fs_type
        ));
    }
    w
}

/// Whether the target's file system keeps its files in memory.
pub(crate) fn in_memory(host: &HostInfo) -> bool {
    matches!(host.fs_type.as_str(), "tmpfs" | "ramfs")
}

/// What the page-cache warnings of `spec` weigh: its data set on one
/// node (`per_node` workers share its page cache) and which of its
/// phases the cache may serve.
fn cache_risk(spec: &WorkloadSpec, per_node: u32) -> CacheRisk {
    // Writes that are synchronous (O_SYNC/O_DSYNC) or flushed before the
    // clock stops (--sync end/every) reach storage inside the timed phase:
    // the page cache cannot flatter them. Buffered reads, and writes left
    // in the cache, can.
    let buffered = !spec.direct;
    CacheRisk {
        // One node's share, whatever the layout: its workers' blocks.
        working_set: spec.bytes_per_worker() * per_node as u64,
        // Pages dropped as each worker opens its file (fio's invalidate=1)
        // leave reads nothing cached to come from.
        reads: buffered && !spec.hints.invalidate && spec.ops.iter().any(|o| o.reads()),
        writes: buffered && spec.sync == SyncMode::None && spec.ops.iter().any(|o| o.writes()),
        reads_after_write: buffered
            && spec
                .ops
                .iter()
                .enumerate()
                .any(|(i, o)| o.reads() && spec.ops[..i].iter().any(|p| p.writes())),
        drop_caches: spec.drop_caches || spec.hints.invalidate,
    }
}

/// A run's identity in its marker: time and pid, unique on one host.
pub(crate) fn make_run_id() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}-{}", t, std::process::id())
}

/// Drops the page cache, or falls back to fadvise on ioscale's own files.
fn drop_caches<B: Engines>(
    ds: &DataSet<B>,
    anchors: &[Option<engine::FileAnchor<B>>],
    warned: &mut bool,
    warnings: &mut Vec<String>,
) {
    if engine::sys::drop_caches().is_ok() {
        return;
    }
    for (i, f) in ds.files.iter().enumerate() {
        let how = OpenHow {
            read: true,
            ..OpenHow::default()
        };
        let opened = match anchors.get(i).and_then(Option::as_ref) {
            Some(a) => a.open_with(how),
            None => B::open_path(f, how),
        };
        if let Ok(file) = opened {
            let _ = file.sync();
            let _ = file.advise(0, 0, Advice::DontNeed);
            let _ = file.close();
        }
    }
    if !*warned {
        *warned = true;
        warnings.push(
            "--drop-caches: cannot write /proc/sys/vm/drop_caches (needs root); fell back to \
             fadvise(DONTNEED) on ioscale's files, which drops their clean pages only"
                .into(),
        );
    }
}

/// One data step as the executor hands it over: the workload and what
/// its workers keep beyond ioscale's figures.
pub(crate) struct DataStep<'a> {
    /// The workload (`threads` per process).
    pub(crate) spec: &'a Arc<WorkloadSpec>,
    /// The engine's detail for its phases.
    pub(crate) detail: Detail,
}

/// Runs data steps as one rank: one step alone, or the steps of a
/// concurrency group side by side (every timed phase of every step from
/// one barrier). Every rank makes the same calls in the same order. One
/// outcome per step.
pub(crate) fn run_data(
    steps: &[DataStep<'_>],
    env: &mut StepEnv<'_>,
) -> Result<Vec<Outcome>, Error> {
    match crate::objects::backend_of(&steps[0].spec.target)? {
        Some(s3) => run_data_on(&s3, crate::objects::preflight, steps, env),
        None => run_data_on(&engine::backend::posix::Posix, preflight, steps, env),
    }
}

/// [`run_data`] on `backend`, its target checked by `check` (which
/// returns the buffer alignment).
fn run_data_on<B: Engines>(
    backend: &B,
    check: fn(&WorkloadSpec) -> Result<usize, Error>,
    steps: &[DataStep<'_>],
    env: &mut StepEnv<'_>,
) -> Result<Vec<Outcome>, Error> {
    let coord = env.coord;
    let mut ks: Vec<DataRun<B>> = Vec::with_capacity(steps.len());
    let mut results = Vec::with_capacity(steps.len());
    let mut slot = 0u32;
    for st in steps {
        let made = setup(backend, check, st.spec, coord).and_then(
            |Setup {
                 host,
                 topo,
                 mut files,
             }| {
                // The workers open the files through the handles setup holds
                // (the other ranks check theirs against rank 0's first: all
                // agree).
                match cluster::agree(coord, files.ds.anchors()) {
                    Ok(anchors) => Ok((host, topo, files, anchors)),
                    Err(e) => {
                        if topo.is_root() && files.ds.created_root {
                            files.ds.remove();
                        }
                        Err(e)
                    }
                }
            },
        );
        let (host, topo, files, anchors) = match made {
            Ok(m) => m,
            Err(e) => {
                // The steps set up before this one made their files.
                for k in &mut ks {
                    k.abandon();
                }
                return Err(e);
            }
        };
        results.push(new_record(
            env.command.clone(),
            host,
            JobSpec::Run((**st.spec).clone()),
        ));
        let mut k = DataRun::new(st, topo, files, anchors, env.opts);
        k.slot = slot;
        slot = slot.saturating_add(st.spec.threads);
        ks.push(k);
    }
    let mut ctx = Ctx::new(coord, env.stop, env.opts, env.ramp);
    ctx.carried = env.steady;
    let seq = Sequence {
        ops: steps.iter().map(|s| &s.spec.ops[..]).collect(),
        reps: steps[0].spec.reps,
        target: &steps[0].spec.target,
    };
    drive(&mut ks, &mut ctx, seq, results, env.before_cleanup)
}

/// The data workload as a [`Kind`] of the phase driver: its files, what
/// they hold, and each thread's engine state between phases.
struct DataRun<B: Engines> {
    /// The user's workload (threads per process).
    spec: Arc<WorkloadSpec>,
    /// Its names and marker, for every rank's workers
    /// ([`Topology::all_workers`]).
    gspec: WorkloadSpec,
    topo: Topology,
    /// Buffer alignment (O_DIRECT's, or 1).
    align: usize,
    run_id: String,
    ds: DataSet<B>,
    anchors: Vec<Option<engine::FileAnchor<B>>>,
    warns: Vec<String>,
    /// What the warnings decided after the phases weigh.
    machine: Machine,
    risk: CacheRisk,
    /// Each thread's prepared engine state, which carries over between
    /// phases.
    prepared: Vec<Option<Prepared<B>>>,
    /// Engine options (io_uring ring set-up) every worker's state is made with.
    engine_opts: EngineOptions,
    /// What the workers keep beyond ioscale's figures.
    detail: Detail,
    /// The first live-counter slot of this step's workers (after those of
    /// the steps before it in its group).
    slot: u32,
    drop_warned: bool,
    /// The next timed phase is the run's first: no cache drop before it.
    first: bool,
    /// The files hold a full data set.
    have_data: bool,
    /// This repetition's first write has started from no files.
    fresh: bool,
    /// The operations that had their ramp.
    ramped: Vec<Op>,
    /// A phase of this run wrote the files (or started to).
    wrote: bool,
    /// The repetition running (the last one once the run is over).
    rep: u32,
    /// Rank 0's timed removals of the data files.
    removals: Vec<Removal>,
}

impl<B: Engines> DataRun<B> {
    fn new(
        st: &DataStep<'_>,
        topo: Topology,
        files: Files<B>,
        anchors: Vec<Option<engine::FileAnchor<B>>>,
        opts: Options,
    ) -> Self {
        let spec = st.spec;
        let Files {
            gspec,
            align,
            mut warns,
            run_id,
            ds,
            machine,
            risk,
        } = files;
        let dd_named = matches!(spec.naming, spec::FileNaming::Dd { .. });
        if spec.reuse_files && !dd_named && spec.reps > 1 && spec.ops.iter().any(|o| o.writes()) {
            warns.push(
                "--reuse: each repetition after the first writes over the files the one before \
                 left (allocated blocks, warm page cache), not over fresh files as the first did"
                    .into(),
            );
        }
        DataRun {
            spec: Arc::clone(spec),
            gspec,
            topo,
            align,
            run_id,
            have_data: ds.had_data,
            ds,
            anchors,
            warns,
            machine,
            risk,
            prepared: (0..spec.threads).map(|_| None).collect(),
            engine_opts: EngineOptions {
                uring: spec
                    .uring_opts
                    .as_ref()
                    .map(UringOptions::from_spec)
                    .unwrap_or_default(),
            },
            detail: st.detail,
            slot: 0,
            drop_warned: false,
            // The run's very first phase needs no cache drop; a later
            // repetition run on its own does, as it would in one run.
            first: opts.first_rep == 0,
            fresh: false,
            ramped: Vec::new(),
            wrote: false,
            rep: 0,
            removals: Vec::new(),
        }
    }

    /// The plan of an `op` phase of repetition `rep`: timed (the spec's
    /// sync mode and time limit), or an untimed layout (synced at the
    /// end, no limit).
    fn plan(&self, op: Op, rep: u32, timed: bool) -> PhasePlan<B> {
        let mut p = PhasePlan::new(
            Arc::clone(&self.spec),
            self.topo.workers,
            op,
            self.ds.files.clone(),
        );
        if !timed {
            p.sync = SyncMode::End;
            p.time_limit = None;
            p.wearout = false;
        }
        p.align = self.align;
        p.rep = rep;
        p.anchors = self.anchors.clone();
        p.detail = self.detail;
        p.slot = self.slot;
        p
    }

    /// Removes what this step made when a later step of its group could
    /// not be set up (rank 0).
    fn abandon(&mut self) {
        if self.topo.is_root() && self.ds.created_root {
            self.ds.remove();
        }
    }
}

impl<B: Engines> Kind for DataRun<B> {
    type Op = Op;
    type Plan = PhasePlan<B>;
    type Sample = WorkerSample;
    const LAYOUT_FAILURE_KEEPS_GOING: bool = true;

    fn op_name(op: Op) -> &'static str {
        op.name()
    }

    fn topo(&self) -> &Topology {
        &self.topo
    }

    fn begin_rep(&mut self, rep: u32, ctx: &Ctx<'_>) {
        if rep > 0 {
            pause(self.spec.rep_delay, ctx.stop);
        }
        // Each repetition's first write starts from no files, as IOR's
        // does: rank 0 removes them once every rank has closed them.
        self.fresh = rep == 0 || self.spec.reuse_files;
        self.rep = rep;
    }

    fn prerequisite(&mut self, op: Op, rep: u32) -> Option<PhasePlan<B>> {
        // Reads need data: lay the files out first, untimed, as fio does
        // before a mixed or read job on fresh files.
        (op.reads() && !self.have_data).then(|| self.plan(Op::Write, rep, false))
    }

    fn after_prerequisite(&mut self, op: Op, out: &PhaseOut<WorkerSample>) {
        if !out.failed && !out.interrupted {
            self.warns.push(format!(
                "the files were laid out by an untimed write before the first {op} phase"
            ));
            self.have_data = true;
        }
    }

    fn ramp(&mut self, op: Op, rep: u32, ramp: std::time::Duration) -> Option<PhasePlan<B>> {
        if self.ramped.contains(&op) {
            return None;
        }
        self.ramped.push(op);
        self.warns.push(format!(
            "a {} s ramp of {op} ran before its first timed phase, unrecorded",
            ramp.as_secs_f64()
        ));
        let mut p = self.plan(op, rep, true);
        p.time_limit = Some(ramp);
        Some(p)
    }

    fn before_phase(&mut self, op: Op, rep: u32, ctx: &Ctx<'_>) -> Option<PhasePlan<B>> {
        if self.spec.drop_caches && !self.first && B::capabilities().page_cache {
            drop_caches(
                &self.ds,
                &self.anchors,
                &mut self.drop_warned,
                &mut self.warns,
            );
        }
        self.first = false;
        if !self.fresh && matches!(op, Op::Write | Op::Randwrite) {
            self.fresh = true;
            let t0 = Instant::now();
            if ctx.is_root() {
                for l in self.ds.remove_data_files() {
                    self.warns.push(format!(
                        "before repetition {}: could not remove {l}",
                        report::shown_rep(rep)
                    ));
                }
            }
            self.have_data = false;
            ctx.coord.barrier();
            if ctx.is_root() {
                self.removals.push(Removal {
                    rep: rep.saturating_sub(1),
                    seconds: t0.elapsed().as_secs_f64(),
                });
            }
        }
        let mut plan = self.plan(op, rep, true);
        plan.series = ctx.opts.interval.grid();
        Some(plan)
    }

    fn run_phase(
        &mut self,
        plan: &PhasePlan<B>,
        ctx: &mut Ctx<'_>,
    ) -> Result<PhaseOut<WorkerSample>, Error> {
        let mut outs = run_data_phases(std::slice::from_mut(self), &[(0, plan)], ctx)?;
        Ok(outs.remove(0))
    }

    fn retries(&self) -> Option<objstore::RetryTally> {
        self.ds.backend.retries()
    }

    fn run_together(
        ks: &mut [Self],
        plans: &[(usize, PhasePlan<B>)],
        ctx: &mut Ctx<'_>,
    ) -> Result<Vec<PhaseOut<WorkerSample>>, Error> {
        let plans: Vec<(usize, &PhasePlan<B>)> = plans.iter().map(|(j, p)| (*j, p)).collect();
        run_data_phases(ks, &plans, ctx)
    }

    fn reduce(
        &self,
        plan: &PhasePlan<B>,
        out: &PhaseOut<WorkerSample>,
        layout: &Layout,
    ) -> PhaseRecord {
        reduce(plan, out, layout)
    }

    fn latency(&self, phase: usize, out: &PhaseOut<WorkerSample>) -> Option<PhaseLatency> {
        Some(PhaseLatency {
            phase,
            workers: out
                .samples
                .iter()
                .map(|s| (s.worker, s.hist.clone()))
                .collect(),
            usage: out.samples.iter().map(|s| (s.worker, s.usage)).collect(),
            detail: out
                .samples
                .iter()
                .filter_map(|s| Some((s.worker, (**s.detail.as_ref()?).clone())))
                .collect(),
        })
    }

    fn after_phase(&mut self, op: Op, out: &PhaseOut<WorkerSample>, ctx: &Ctx<'_>) -> Flow {
        // A complete write of every transfer: the files now hold a full
        // data set (mixed phases only count if they wrote all).
        let complete = !out.failed && !out.interrupted && !out.deadline;
        if complete && matches!(op, Op::Write | Op::Randwrite) {
            self.have_data = true;
            if self.spec.keep && ctx.is_root() {
                let g = &self.gspec;
                self.ds
                    .mark_complete(&self.run_id, g.file_size(), g.seed, g.verify);
            }
        }
        Flow::Continue
    }

    fn take_warnings(&mut self, m: &Measured<'_>) -> Vec<String> {
        let mut w = cache_warnings(&self.risk, &self.machine, m);
        // Engines that keep many requests in flight per worker do not
        // take turns on a CPU per request.
        let queueing =
            engine::registry::data_engine(&self.spec.engine).is_ok_and(|e| e.info().queueing);
        if !queueing {
            w.extend(turns_warning("workers", &self.machine, m));
        }
        self.warns.splice(0..0, w);
        // Ring features the kernel refused, once each (every worker asked
        // for the same set).
        for n in self.prepared.iter().flatten().flat_map(|p| p.notes()) {
            if !self.warns.contains(n) {
                self.warns.push(n.clone());
            }
        }
        std::mem::take(&mut self.warns)
    }

    fn cleans_up(&self) -> bool {
        !self.spec.keep && self.ds.created_root
    }

    fn removals(&mut self) -> Vec<Removal> {
        std::mem::take(&mut self.removals)
    }

    fn finish(&mut self, is_root: bool) -> Vec<String> {
        let mut notes = Vec::new();
        if !is_root {
            return notes;
        }
        if self.cleans_up() {
            let t0 = Instant::now();
            for l in self.ds.remove() {
                notes.push(format!("cleanup: could not remove {l}"));
            }
            if self.wrote {
                self.removals.push(Removal {
                    rep: self.rep,
                    seconds: t0.elapsed().as_secs_f64(),
                });
            }
        } else {
            // What `clean` may remove later: the files this run wrote, as
            // they are; or none, in a set this run made and was stopped
            // before writing (a kept set it only read keeps its stamps).
            if self.spec.keep && (self.wrote || !self.ds.had_data) {
                self.ds.seal();
            }
            notes.extend(self.ds.kept_note(&self.spec));
        }
        notes
    }
}

/// What a run has before its first phase.
struct Setup<B: Engines> {
    host: HostInfo,
    topo: Topology,
    files: Files<B>,
}

/// The data set of a run and what the phases need to address it.
struct Files<B: Engines> {
    /// The spec of all workers: file names, offsets and the marker use it.
    gspec: WorkloadSpec,
    /// Buffer alignment (O_DIRECT's, or 1).
    align: usize,
    warns: Vec<String>,
    run_id: String,
    ds: DataSet<B>,
    machine: Machine,
    risk: CacheRisk,
}

/// The checks, warnings and data set before the first phase: collective
/// calls every rank makes in the same order.
fn setup<B: Engines>(
    backend: &B,
    check: fn(&WorkloadSpec) -> Result<usize, Error>,
    spec: &WorkloadSpec,
    coord: &dyn Coordinator,
) -> Result<Setup<B>, Error> {
    let mut host = host::collect(&spec.target);
    let topo = Topology::discover(coord, spec.threads, &mut host)?;
    let gspec = topo.all_workers(spec);
    cluster::agree(
        coord,
        check_item_counts(gspec.item_counts.len(), topo.workers),
    )?;
    let align = check(spec).and_then(|a| {
        check_buffer_memory(spec, topo.threads_per_node(), a)?;
        Ok(a)
    });
    let align = cluster::agree(coord, align)?;
    // Page cache and CPUs are per node: warn about one node's share.
    let machine = Machine {
        cpus: host.cpus,
        mem_bytes: host.mem_bytes,
        threads: topo.threads_per_node(),
        nodes: topo.nodes(),
    };
    let mut risk = cache_risk(spec, topo.threads_per_node());
    if !B::capabilities().page_cache {
        // Every request goes to the store: no cache to flatter a phase.
        (risk.reads, risk.writes, risk.reads_after_write) = (false, false, false);
    }
    let mut warns = warnings(&host);
    if !crate::objects::is_object_target(&spec.target) && spec.ops.iter().any(|o| o.writes()) {
        warns.extend(space_warning(
            &spec.target,
            gspec.file_size() * gspec.file_count() as u64,
        ));
    }
    let run_id = coord
        .broadcast_as(&make_run_id())
        .map_err(|e| Error::Refused(e.to_string()))?;
    // Rank 0 makes the directory and marker; the others learn the names
    // only after that (the broadcast), so nobody opens a file before.
    let made = topo
        .is_root()
        .then(|| DataSet::prepare_on(backend.clone(), &gspec, &run_id));
    let made = cluster::agree(coord, made.transpose())?;
    let ds = crate::dataset::peer::share_on(backend.clone(), coord, made)?;
    Ok(Setup {
        host,
        topo,
        files: Files {
            gspec,
            align,
            warns,
            run_id,
            ds,
            machine,
            risk,
        },
    })
}

/// Item counts carried from an earlier phase name every worker of all
/// ranks, or none.
pub(crate) fn check_item_counts(given: usize, workers: u32) -> Result<(), Error> {
    if given != 0 && given != workers as usize {
        return Err(Error::Usage(format!(
            "the item counts carried from an earlier phase name {given} workers, but this run              has {workers}"
        )));
    }
    Ok(())
}

/// IOR -d: a pause between repetitions that Ctrl-C cuts short.
fn pause(delay: Option<std::time::Duration>, stop: &AtomicBool) {
    if let Some(d) = delay {
        // Any length, 2^64-1 s included: a pause past the end of the
        // clock lasts until a signal.
        let _ = safefs::sleep_or_stop(d, stop);
    }
}

/// Runs data phases on this rank, one per entry of `plans` (the kind's
/// index in `ks` and its plan; several for a concurrency group, all
/// released by one barrier), and agrees on their outcome with the
/// others; a collective call every rank reaches, whatever its workers
/// met. The prepared state of each thread (buffers, io_uring) carries
/// over to the next phase in its kind's `prepared`.
fn run_data_phases<B: Engines>(
    ks: &mut [DataRun<B>],
    plans: &[(usize, &PhasePlan<B>)],
    ctx: &mut Ctx<'_>,
) -> Result<Vec<PhaseOut<WorkerSample>>, Error> {
    for (j, p) in plans {
        ks[*j].wrote |= p.op.writes();
    }
    let parts: Vec<Vec<Option<Prepared<B>>>> = plans
        .iter()
        .map(|(j, _)| ks[*j].prepared.iter_mut().map(Option::take).collect())
        .collect();
    let slots: Vec<Vec<Mutex<Option<Prepared<B>>>>> = parts
        .iter()
        .map(|p| (0..p.len()).map(|_| Default::default()).collect())
        .collect();
    let bases: Vec<u32> = plans
        .iter()
        .map(|(j, _)| ks[*j].topo.my_workers().start)
        .collect();
    let opts: Vec<&EngineOptions> = plans.iter().map(|(j, _)| &ks[*j].engine_opts).collect();
    engine::live::begin(engine::live::PhaseInfo {
        op: names(plans.iter().map(|(_, p)| p.op.name())),
        rep: plans[0].1.rep,
        moves_data: true,
        expected: plans
            .iter()
            .zip(&parts)
            .map(|((_, p), items)| p.xfers() * p.xfer() * items.len() as u64)
            .sum(),
        time_limit: plans[0].1.time_limit,
    });
    let watch = ctx.steady_watch(plans[0].1.time_limit, plans.len());
    let phase = cluster::Phase {
        coord: ctx.coord,
        stop: ctx.stop,
        name: "w",
        rows: ctx.opts.rows(),
        // A group's steps number their workers apart: the wear-out is a
        // lone phase's.
        wearout: plans.len() == 1 && plans[0].1.wearout,
        steady: watch.as_ref().map(|w| w.get()),
    };
    let outs = cluster::run_group_all(
        &phase,
        &mut ctx.seq,
        parts,
        |part, w, mine, ctl, barrier| {
            let plan = plans[part].1;
            let p = match mine {
                Some(p) => p,
                None => match Prepared::with_options(plan, w, opts[part]) {
                    Ok(p) => p,
                    Err(e) => {
                        // Still take part in the barrier so the others
                        // are not left waiting.
                        barrier.wait();
                        ctl.abort.store(true, Ordering::Relaxed);
                        return setup_failure(plan, w, e);
                    }
                },
            };
            let (s, p) = run_worker(w, plan, ctl, barrier, p);
            *slots[part][(w - bases[part]) as usize]
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = p;
            s
        },
    );
    engine::live::end();
    ctx.steady_found(watch);
    let outs = outs?;
    for ((j, _), slots) in plans.iter().zip(slots) {
        for (slot, p) in ks[*j].prepared.iter_mut().zip(slots) {
            *slot = p.into_inner().unwrap_or_else(|e| e.into_inner());
        }
    }
    Ok(outs)
}

/// Operation names joined for a progress line: `write`, or `write+read`
/// for a group.
fn names<'a>(ops: impl Iterator<Item = &'a str>) -> String {
    ops.collect::<Vec<_>>().join("+")
}

fn setup_failure<B: Engines>(plan: &PhasePlan<B>, w: u32, e: std::io::Error) -> WorkerSample {
    let op = if e.kind() == std::io::ErrorKind::OutOfMemory {
        "allocate buffer"
    } else {
        // The engine's own set-up call: io_uring's ring or libaio's
        // context.
        engine::registry::data_engine(&plan.spec.engine)
            .map_or("engine set-up", |e| e.info().setup_call)
    };
    WorkerSample {
        failure: Some(engine::IoFailure {
            op: op.into(),
            path: plan.files[plan.file_of(w)].clone(),
            offset: None,
            errno: e
                .raw_os_error()
                .or((e.kind() == std::io::ErrorKind::OutOfMemory).then_some(12)),
            message: e.to_string(),
        }),
        ..WorkerSample::empty(w, plan.file_of(w) as u32)
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// Reduces a phase into its record: the figures from the digest (every
/// rank's samples folded, see [`crate::digest`]), the per-worker rows from
/// the samples when rank 0 holds every worker's.
fn reduce<B: Engines>(
    plan: &PhasePlan<B>,
    out: &PhaseOut<WorkerSample>,
    layout: &Layout,
) -> PhaseRecord {
    let d = &out.digest;
    let m = &d.sums;
    let t0 = d.t0();
    let elapsed = (d.end_ns.saturating_sub(t0)) as f64 / 1e9;
    let counters = m.counters;
    let rate = |x: f64| if elapsed > 0.0 { x / elapsed } else { 0.0 };
    let secs = |ns: u64| ns as f64 / 1e9;
    let sw_s = match out.first_done_ns {
        Some(ns) => ns.saturating_sub(t0) as f64 / 1e9,
        None => elapsed,
    };
    let verify = (plan.spec.verify && plan.op.reads())
        .then(|| verify_record(m.checked_bytes, m.bad_bytes, &m.mismatches));
    PhaseRecord {
        op: plan.op.name().into(),
        rep: plan.rep,
        threads: plan.workers,
        bytes: counters.bytes,
        ops: counters.ops,
        read_bytes: counters.read_bytes,
        write_bytes: counters.write_bytes,
        elapsed_s: elapsed,
        bw_mib_s: rate(counters.bytes as f64) / MIB,
        bw_mb_s: rate(counters.bytes as f64) / 1e6,
        iops: rate(counters.ops as f64),
        lat_us: d.latency().summary(),
        open_s: secs(m.open_ns),
        io_s: secs(m.io_ns),
        close_s: secs(m.close_ns),
        fsync_s: secs(m.fsync_ns),
        cpu_user_s: out.cpu.0,
        cpu_sys_s: out.cpu.1,
        stonewall: stonewall(sw_s, m.stonewall_bytes),
        time_limited: m.time_limited,
        interrupted: out.interrupted,
        errors: counters.errors,
        start_skew_s: out.start_skew_s(),
        worker_start_spread_s: out.worker_start_spread_s(),
        verify,
        files: None,
        workers: if out.all_workers {
            worker_rows(&out.samples, t0, layout)
        } else {
            Vec::new()
        },
        series: out.digest.reported_series(plan.series),
        steady: None,
        retries: None,
    }
}

/// The stonewall figures of a phase record: `bytes` done by all workers
/// `s` seconds after the first start (the first finish).
pub(crate) fn stonewall(s: f64, bytes: u64) -> Stonewall {
    Stonewall {
        s,
        bytes,
        bw_mib_s: if s > 0.0 { bytes as f64 / s / MIB } else { 0.0 },
    }
}

/// The data-check record of a phase from its sums: bytes compared, bytes
/// that differed, and each (worker, file, first bad offset, bad bytes).
pub(crate) fn verify_record(
    checked_bytes: u64,
    bad_bytes: u64,
    mismatches: &[(u32, String, u64, u64)],
) -> VerifyRecord {
    VerifyRecord {
        checked_bytes,
        bad_bytes,
        mismatches: mismatches
            .iter()
            .map(|(_, file, offset, bad)| Mismatch {
                file: file.clone(),
                offset: *offset,
                bad_bytes: *bad,
            })
            .collect(),
    }
}

/// One row per worker, times against the phase's first start `t0`.
fn worker_rows(samples: &[WorkerSample], t0: u64, layout: &Layout) -> Vec<WorkerRecord> {
    samples
        .iter()
        .map(|s| {
            let own = (s.end_ns.saturating_sub(s.start_ns)) as f64 / 1e9;
            WorkerRecord {
                worker: s.worker,
                host: layout.host_of(s.worker).to_string(),
                bytes: s.counters.bytes,
                ops: s.counters.ops,
                start_s: s.start_ns.saturating_sub(t0) as f64 / 1e9,
                end_s: s.end_ns.saturating_sub(t0) as f64 / 1e9,
                open_s: (s.open_done_ns - s.start_ns) as f64 / 1e9,
                io_s: (s.io_done_ns - s.open_done_ns) as f64 / 1e9,
                close_s: (s.end_ns - s.io_done_ns) as f64 / 1e9,
                bw_mib_s: if own > 0.0 {
                    s.counters.bytes as f64 / own / MIB
                } else {
                    0.0
                },
            }
        })
        .collect()
}
