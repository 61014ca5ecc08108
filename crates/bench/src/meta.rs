//! The metadata workload of `ioscale meta`: the tree, its marker, the
//! phases, and removing exactly what was made. The loop over repetitions
//! and phases is the shared one of `crate::phase`, started by the executor
//! ([`crate::exec`]) for a metadata step of a [`crate::plan::Plan`]; this
//! module is the metadata kind's steps.
//!
//! ioscale works in `TARGET/ioscale-meta.d` and writes a marker there
//! before anything else. The marker records the tree's shape (threads,
//! files, hashing, prefix) and which kinds of entries may exist, so a later
//! run can use a kept tree, and so cleanup can recompute every name instead
//! of listing and deleting whatever it finds: only names of ioscale's
//! scheme are unlinked, directories are removed with `rmdir` only, and
//! anything a user put there survives. Results reduce into the same
//! [`report::ResultSet`] as `ioscale run`, with `op` the metadata operation and
//! `ops` the files processed.

use coord::Coordinator;
use engine::meta::{MetaPlan, MetaSample};
use engine::registry::{check_meta_spec, MetaEngineConfig};
use engine::runner::run_meta_worker_with;
use report::{FilesRecord, HostInfo, JobSpec, PhaseRecord, ThreadFiles, WorkerRecord};
use spec::{MetaOp, MetaSpec, TreeState};

use std::sync::Arc;

use engine::backend::posix::Posix;
use engine::registry::Engines;

use crate::cluster::{self, Layout, PhaseOut};
use crate::dataset::testdir::TestDir;
use crate::dataset::tree::{close, prepare_in, prepare_on, union, Tree};
use crate::error::Error;
use crate::evidence::{meta_cache_warning, turns_warning, Machine};
use crate::host;
use crate::phase::{drive, Ctx, Flow, Kind, Measured, Sequence, StepEnv};
use crate::record::new_record;
use crate::run::{make_run_id, space_warning, stonewall, verify_record, Outcome};
use crate::topology::Topology;

pub use crate::dataset::tree::{MARKER_NAME, ROOT_NAME};

/// Checks the target before anything is created.
pub(crate) fn preflight(spec: &MetaSpec) -> Result<(), Error> {
    check_meta_spec(&spec.engine, spec.iodepth, spec).map_err(|e| Error::Usage(e.to_string()))?;
    let t = &spec.target;
    crate::run::check_target(t)?;
    if spec.direct && spec.ops.iter().any(|o| o.moves_data()) {
        crate::dataset::probe_direct(t, spec.record_size)?;
    }
    Ok(())
}

/// Warnings that hold whatever the phases measure; the caches and the
/// CPUs are decided after them (`crate::evidence`).
fn warnings(host: &HostInfo) -> Vec<String> {
    let mut w = Vec::new();
    if crate::run::in_memory(host) {
        w.push(format!(
            "the target {} is on {}: memory, not storage",
            host.target, host.fs_type
        ));
    }
    w
}

/// The reading phases of `spec` that follow a create of the same run
/// (buffered): the kernel's caches hold what they read.
fn read_after_create(spec: &MetaSpec) -> Vec<&'static str> {
    if spec.direct {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, o) in spec.ops.iter().enumerate() {
        if matches!(o, MetaOp::Read | MetaOp::Stat | MetaOp::Readdir)
            && spec.ops[..i].iter().any(|p| p.writes_data())
            && !out.contains(&o.name())
        {
            out.push(o.name());
        }
    }
    out
}

/// Runs a metadata step as one rank. Rank 0 alone makes (or finds) the
/// working directory and the marker before any other rank starts, writes
/// the marker between phases, and removes the tree after every rank
/// finished; a tree made by 4 ranks of 2 threads is the tree of
/// `--threads 8`.
pub(crate) fn run_meta(spec: &Arc<MetaSpec>, env: &mut StepEnv<'_>) -> Result<Vec<Outcome>, Error> {
    match crate::objects::backend_of(&spec.target)? {
        Some(s3) => run_meta_on(&s3, crate::objects::preflight_meta, spec, env),
        None => run_meta_on(&Posix, preflight, spec, env),
    }
}

/// [`run_meta`] on `backend`, its target checked by `check`.
fn run_meta_on<B: Engines>(
    backend: &B,
    check: fn(&MetaSpec) -> Result<(), Error>,
    spec: &Arc<MetaSpec>,
    env: &mut StepEnv<'_>,
) -> Result<Vec<Outcome>, Error> {
    let mut notes = Vec::new();
    let Setup {
        host,
        topo,
        gspec,
        warns,
        tree,
        machine,
        testdir,
    } = setup(backend, check, spec, env, &mut notes)?;
    let results = new_record(env.command.clone(), host, JobSpec::Meta((**spec).clone()));
    let mut ctx = Ctx::new(env.coord, env.stop, env.opts, env.ramp);
    ctx.carried = env.steady;
    let mut k = MetaRun {
        // Indices per thread that the next phase may use: a time-limited
        // create leaves only a prefix of the files (an earlier create's
        // counts, when the spec carries them).
        limit: (0..gspec.threads).map(|t| gspec.files_of(t)).collect(),
        // Their sum over all workers (rank 0 may not hold every worker's
        // sample): the files a phase is asked for.
        requested: (0..gspec.threads).map(|t| gspec.files_of(t)).sum(),
        state: tree.marker.state,
        extent: tree.marker.extent,
        spec: &gspec,
        topo,
        tree,
        warns,
        machine,
        notes,
        ran_cleanup: false,
        keep_going: env.opts.keep_going,
        pre: None,
        after: None,
        testdir,
        backend: backend.clone(),
    };
    let seq = Sequence::new(&gspec.ops, gspec.reps, &gspec.target);
    let out = drive(
        std::slice::from_mut(&mut k),
        &mut ctx,
        seq,
        vec![results],
        env.before_cleanup,
    );
    if let Some(d) = k.testdir.take() {
        // A run that failed before its end: the directory goes when it
        // made it and nothing is left in it.
        drop(k.tree);
        d.remove_if_made();
    }
    out
}

/// The metadata workload as a [`Kind`] of the phase driver: the tree, its
/// marker, and what the phases so far left in it.
struct MetaRun<'s, B: Engines> {
    /// The spec of all workers ([`Topology::all_workers`]): names, the
    /// marker and cleanup use it.
    spec: &'s MetaSpec,
    topo: Topology,
    tree: Tree<B>,
    warns: Vec<String>,
    /// What the warnings decided after the phases weigh.
    machine: Machine,
    notes: Vec<String>,
    /// Indices per thread that the next phase may use.
    limit: Vec<u64>,
    /// The files a phase is asked for, over all workers.
    requested: u64,
    /// Which entries exist now (the marker says what may exist).
    state: TreeState,
    /// The highest index any phase touched.
    extent: u64,
    ran_cleanup: bool,
    keep_going: bool,
    /// The untimed prerequisite running now.
    pre: Option<MetaOp>,
    /// The state the running timed phase leaves when it completes.
    after: Option<TreeState>,
    /// The tool's own test directory, rank 0's (mdtest's `-d`, under
    /// [`crate::plan::Options::make_target`]).
    testdir: Option<TestDir<B>>,
    /// The backend the tree is on (for its retry counts).
    backend: B,
}

impl<'s, B: Engines> MetaRun<'s, B> {
    fn plan(&self, op: MetaOp, rep: u32, timed: bool) -> MetaPlan<'s, B> {
        MetaPlan {
            spec: self.spec,
            op,
            root: self.tree.root.clone(),
            rep,
            state: self.state,
            limit: Some(self.limit.clone()),
            timed,
            root_dir: self.tree.root_dir(),
            // A cleanup phase on a kept tree leaves what was put there
            // after it was kept, as `clean` does.
            kept_before: self
                .tree
                .marker
                .kept_at
                .filter(|_| op == MetaOp::Cleanup)
                .map(|k| (k.ctime, k.ctime_nsec)),
            // Set for the timed phases (`before_phase`).
            series: None,
        }
    }

    /// Writes the marker with the current state and extent.
    fn save(&mut self) {
        self.tree.marker.state = self.state;
        self.tree.marker.extent = self.extent;
        self.tree.save();
    }

    /// The cut-short rules after a phase stopped at `--time` or
    /// `--stop-at-first`: what later phases may work on, or the end of the
    /// sequence.
    fn cut_short(&mut self, op: MetaOp, after: TreeState, out: &PhaseOut<MetaSample>) -> Flow {
        if matches!(op, MetaOp::Create | MetaOp::Mkdir | MetaOp::Symlink) {
            // The files made form a prefix per thread; later phases work
            // on those.
            for s in &out.samples {
                let l = &mut self.limit[s.worker as usize];
                *l = (*l).min(s.files);
            }
            // No worker makes more than it is asked for: the new limits
            // add up to the files made.
            self.requested = out.digest.sums.files;
            self.state = after;
        } else if matches!(
            op,
            MetaOp::Delete | MetaOp::Rename | MetaOp::RenameDir | MetaOp::Rmdir | MetaOp::Cleanup
        ) {
            self.state = union(self.state, after);
            self.warns.push(format!(
                "the sequence stopped after the cut-short {op} (--time or --stop-at-first): later \
                 phases would find a partly changed tree"
            ));
            return Flow::Stop;
        }
        Flow::Continue
    }
}

impl<'s, B: Engines> Kind for MetaRun<'s, B> {
    type Op = MetaOp;
    type Plan = MetaPlan<'s, B>;
    type Sample = MetaSample;
    const LAYOUT_FAILURE_KEEPS_GOING: bool = false;

    fn op_name(op: MetaOp) -> &'static str {
        op.name()
    }
    fn topo(&self) -> &Topology {
        &self.topo
    }
    fn begin_rep(&mut self, _rep: u32, _ctx: &Ctx<'_>) {}

    fn prerequisite(&mut self, op: MetaOp, rep: u32) -> Option<MetaPlan<'s, B>> {
        let pre = self.state.prerequisite(op)?;
        // Lay out what the phase works on, untimed, as `run` lays out data
        // before a read; the marker first covers what it may make.
        let spec = self.spec;
        let state = self.state;
        self.tree.marker.state = union(state, spec.state_after(state, pre).unwrap_or(state));
        self.tree.marker.extent = spec.files.max(self.extent);
        self.tree.save();
        self.pre = Some(pre);
        Some(self.plan(pre, rep, false))
    }

    fn after_prerequisite(&mut self, op: MetaOp, out: &PhaseOut<MetaSample>) {
        let Some(pre) = self.pre.take() else {
            return;
        };
        self.extent = self.extent.max(out.digest.sums.touched_max);
        if out.failed || out.interrupted {
            self.state = self.tree.marker.state;
            return;
        }
        self.state = self.spec.state_after(self.state, pre).unwrap_or(self.state);
        self.warns.push(format!(
            "the entries were laid out by an untimed {pre} before the first {op} phase"
        ));
    }

    fn before_phase(&mut self, op: MetaOp, rep: u32, ctx: &Ctx<'_>) -> Option<MetaPlan<'s, B>> {
        let after = match self.spec.state_after(self.state, op) {
            Ok(a) => a,
            Err(why) => {
                // Validation and `prepare` rule this out; be safe anyway.
                self.warns.push(format!("skipped {op}: {why}"));
                return None;
            }
        };
        if op == MetaOp::Cleanup {
            self.ran_cleanup = true;
        }
        // Pessimistic marker first: a crash mid-phase must not leave
        // entries the marker does not mention.
        self.tree.marker.state = union(self.state, after);
        if matches!(op, MetaOp::Create | MetaOp::Mkdir | MetaOp::Symlink) {
            self.tree.marker.extent = self.spec.files.max(self.extent);
        }
        self.tree.save();
        self.after = Some(after);
        let mut plan = self.plan(op, rep, true);
        plan.series = ctx.opts.interval.grid();
        Some(plan)
    }

    fn run_phase(
        &mut self,
        plan: &MetaPlan<'s, B>,
        ctx: &mut Ctx<'_>,
    ) -> Result<PhaseOut<MetaSample>, Error> {
        run_phase_all(plan, &self.topo, ctx)
    }

    fn retries(&self) -> Option<objstore::RetryTally> {
        self.backend.retries()
    }

    fn reduce(
        &self,
        plan: &MetaPlan<'s, B>,
        out: &PhaseOut<MetaSample>,
        layout: &Layout,
    ) -> PhaseRecord {
        reduce(plan, out, layout, self.requested)
    }

    fn after_phase(&mut self, op: MetaOp, out: &PhaseOut<MetaSample>, _ctx: &Ctx<'_>) -> Flow {
        let after = self.after.take().unwrap_or(self.state);
        if matches!(op, MetaOp::Create | MetaOp::Mkdir | MetaOp::Symlink) {
            self.extent = self.extent.max(out.digest.sums.touched_max);
        }
        left_notes(&out.digest.sums.left, &mut self.notes);
        if out.failed || out.interrupted {
            self.state = union(self.state, after);
            if !out.interrupted && self.keep_going {
                // The marker covers what the failed phase may have left;
                // the next repetition starts from there.
                self.save();
            }
            return Flow::Stop;
        }
        let flow = if out.deadline {
            self.cut_short(op, after, out)
        } else {
            self.state = after;
            Flow::Continue
        };
        if flow == Flow::Continue {
            self.save();
        }
        flow
    }

    fn take_warnings(&mut self, m: &Measured<'_>) -> Vec<String> {
        let mut w: Vec<String> = Vec::new();
        w.extend(turns_warning("threads", &self.machine, m));
        // A store's requests are never served by this host's caches.
        if B::capabilities().page_cache {
            w.extend(meta_cache_warning(
                &read_after_create(self.spec),
                &self.machine,
                m,
            ));
        }
        self.warns.extend(w);
        std::mem::take(&mut self.warns)
    }

    fn cleans_up(&self) -> bool {
        true
    }

    fn finish(&mut self, is_root: bool) -> Vec<String> {
        if is_root {
            self.tree.marker.state = self.state;
            self.tree.marker.extent = self.extent;
            close(self.spec, &mut self.tree, self.ran_cleanup, &mut self.notes);
            if let Some(d) = self.testdir.take() {
                d.remove_if_made();
            }
        }
        std::mem::take(&mut self.notes)
    }
}

/// Notes on the directories a cleanup had to leave (they held entries
/// ioscale did not create).
fn left_notes(left: &[(u32, String, u64)], notes: &mut Vec<String>) {
    for (_, first, count) in left {
        notes.push(format!(
            "cleanup: {} and {} more: {}",
            first,
            count.saturating_sub(1),
            crate::dataset::tree::LEFT_WHY
        ));
    }
}

/// What a metadata run has before its first phase.
struct Setup<B: Engines> {
    host: HostInfo,
    topo: Topology,
    /// The spec of all workers: names, the marker and cleanup use it.
    gspec: MetaSpec,
    warns: Vec<String>,
    tree: Tree<B>,
    machine: Machine,
    testdir: Option<TestDir<B>>,
}

/// The checks, warnings and tree before the first phase: collective calls
/// every rank makes in the same order. `spec` is the user's (threads per
/// rank); notes of the tree's preparation go to `notes`.
fn setup<B: Engines>(
    backend: &B,
    check: fn(&MetaSpec) -> Result<(), Error>,
    spec: &MetaSpec,
    env: &StepEnv<'_>,
    notes: &mut Vec<String>,
) -> Result<Setup<B>, Error> {
    let (coord, make_target) = (env.coord, env.opts.make_target);
    // The tool's test directory first: rank 0 opens or makes it, and every
    // rank learns a refusal before anything else is looked at.
    let testdir = (make_target && coord.rank() == 0)
        .then(|| TestDir::open_or_make(backend, &spec.target))
        .transpose();
    let mut testdir = cluster::agree(coord, testdir)?;
    let r = setup_in(backend, check, spec, coord, testdir.as_ref(), notes);
    match r {
        Ok(s) => Ok(Setup { testdir, ..s }),
        Err(e) => {
            if let Some(d) = testdir.take() {
                d.remove_if_made();
            }
            Err(e)
        }
    }
}

/// [`setup`] once the test directory, if any, is held.
fn setup_in<B: Engines>(
    backend: &B,
    check: fn(&MetaSpec) -> Result<(), Error>,
    spec: &MetaSpec,
    coord: &dyn Coordinator,
    testdir: Option<&TestDir<B>>,
    notes: &mut Vec<String>,
) -> Result<Setup<B>, Error> {
    let mut host = host::collect(&spec.target);
    let topo = Topology::discover(coord, spec.threads, &mut host)?;
    let gspec = topo.all_workers(spec);
    cluster::agree(
        coord,
        crate::run::check_item_counts(gspec.item_counts.len(), topo.workers),
    )?;
    cluster::agree(coord, check(&gspec))?;
    // CPUs are per node: warn about one node's share.
    let machine = Machine {
        cpus: host.cpus,
        mem_bytes: host.mem_bytes,
        threads: topo.threads_per_node(),
        nodes: topo.nodes(),
    };
    let mut warns = warnings(&host);
    if gspec.ops.contains(&MetaOp::Create) && !crate::objects::is_object_target(&gspec.target) {
        warns.extend(space_warning(
            &gspec.target,
            gspec.file_size.max() * gspec.total_files(),
        ));
    }
    let run_id = coord
        .broadcast_as(&make_run_id())
        .map_err(|e| Error::Refused(e.to_string()))?;
    // Rank 0 makes the tree; the others learn its marker only after that
    // (the broadcast), so nobody creates an entry before. Their copy never
    // writes the marker.
    let made = topo.is_root().then(|| match testdir {
        Some(d) => d
            .handle()
            .and_then(|h| prepare_in(h, &gspec, &run_id, notes)),
        None => prepare_on(backend, &gspec, &run_id, notes),
    });
    let made = cluster::agree(coord, made.transpose())?;
    let tree = crate::dataset::tree::share_on(backend, coord, made, &gspec)?;
    Ok(Setup {
        host,
        topo,
        gspec,
        warns,
        tree,
        machine,
        testdir: None,
    })
}

/// Runs one phase on this rank, one thread per worker, all released
/// together after the ranks' barrier, and agrees on its outcome with the
/// other ranks (see [`cluster::run_phase_all`]).
fn run_phase_all<B: Engines>(
    plan: &MetaPlan<'_, B>,
    topo: &Topology,
    ctx: &mut Ctx<'_>,
) -> Result<PhaseOut<MetaSample>, Error> {
    let threads = topo.threads_per_rank as usize;
    engine::live::begin(engine::live::PhaseInfo {
        op: plan.op.to_string(),
        rep: plan.rep,
        moves_data: false,
        expected: topo.my_workers().map(|w| plan.count_for(w)).sum(),
        time_limit: plan.spec.time_limit,
    });
    // The engine was checked in preflight; the untimed layout and teardown
    // phases run synchronously whatever it is.
    let cfg = MetaEngineConfig {
        engine: engine::registry::meta_engine(&plan.spec.engine)
            .map(|e| e.info().name)
            .unwrap_or("sync"),
        iodepth: plan.spec.iodepth,
    };
    let watch = ctx.steady_watch(plan.timed.then_some(plan.spec.time_limit).flatten(), 1);
    let phase = cluster::Phase {
        coord: ctx.coord,
        stop: ctx.stop,
        name: "m",
        rows: ctx.opts.rows(),
        wearout: plan.timed && plan.spec.wearout,
        steady: watch.as_ref().map(|w| w.get()),
    };
    let out = cluster::run_group_all(
        &phase,
        &mut ctx.seq,
        vec![vec![(); threads]],
        |_, w, (), ctl, barrier| run_meta_worker_with(w, plan, &cfg, ctl, barrier),
    );
    engine::live::end();
    ctx.steady_found(watch);
    out.map(|mut o| o.pop().expect("one part, one outcome"))
}

const MIB: f64 = 1024.0 * 1024.0;

/// Reduces a phase into its record: totals ÷ (last finish − first
/// start), never a sum of per-thread rates. The figures come from the
/// digest (every rank's samples folded, see [`crate::digest`]); the
/// per-thread rows from the samples when rank 0 holds every worker's.
/// `requested` is the files asked of all workers.
fn reduce<B: Engines>(
    plan: &MetaPlan<'_, B>,
    out: &PhaseOut<MetaSample>,
    layout: &Layout,
    requested: u64,
) -> PhaseRecord {
    let d = &out.digest;
    let m = &d.sums;
    let t0 = d.t0();
    let elapsed = d.end_ns.saturating_sub(t0) as f64 / 1e9;
    let bytes = m.read_bytes + m.write_bytes;
    let rate = |x: f64| if elapsed > 0.0 { x / elapsed } else { 0.0 };
    let sw_s = match out.first_done_ns {
        Some(ns) => ns.saturating_sub(t0) as f64 / 1e9,
        None => elapsed,
    };
    PhaseRecord {
        op: plan.op.name().into(),
        rep: plan.rep,
        threads: plan.spec.threads,
        bytes,
        ops: m.files,
        read_bytes: m.read_bytes,
        write_bytes: m.write_bytes,
        elapsed_s: elapsed,
        bw_mib_s: rate(bytes as f64) / MIB,
        bw_mb_s: rate(bytes as f64) / 1e6,
        iops: rate(m.files as f64),
        lat_us: d.latency().summary(),
        open_s: 0.0,
        io_s: m.io_ns as f64 / 1e9,
        close_s: 0.0,
        // mdtest -Y: the closing syncfs, inside the phase's time.
        fsync_s: m.sync_ns as f64 / 1e9,
        cpu_user_s: out.cpu.0,
        cpu_sys_s: out.cpu.1,
        stonewall: stonewall(sw_s, m.stonewall_bytes),
        time_limited: m.time_limited,
        interrupted: out.interrupted,
        errors: m.errors,
        start_skew_s: out.start_skew_s(),
        worker_start_spread_s: out.worker_start_spread_s(),
        verify: (plan.op == MetaOp::Read && plan.spec.verify)
            .then(|| verify_record(m.checked_bytes, m.bad_bytes, &m.mismatches)),
        files: Some(files_record(plan, out, requested, sw_s)),
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

/// The record's file counts, with one row per thread when rank 0 holds
/// every worker's sample.
fn files_record<B: Engines>(
    plan: &MetaPlan<'_, B>,
    out: &PhaseOut<MetaSample>,
    requested: u64,
    sw_s: f64,
) -> FilesRecord {
    let m = &out.digest.sums;
    let threads = || thread_rows(out, |w| plan.count_for(w), false);
    FilesRecord {
        requested,
        processed: m.files,
        processed_pct: if requested > 0 {
            m.files as f64 * 100.0 / requested as f64
        } else {
            100.0
        },
        stonewall_files: m.stonewall_files,
        stonewall_files_s: if sw_s > 0.0 {
            m.stonewall_files as f64 / sw_s
        } else {
            0.0
        },
        records: m.records,
        peak_rss_bytes: engine::sys::peak_rss_bytes(),
        threads: if out.all_workers {
            threads()
        } else {
            Vec::new()
        },
        matched: None,
    }
}

/// Thread `s`'s elapsed seconds when it saw the first thread finish
/// (`first_done_ns`, on the same epoch as its start): its own elapsed
/// time when it did all its work before that, or there was no first
/// finish.
fn thread_stonewall_s(s: &MetaSample, first_done_ns: Option<u64>) -> f64 {
    let own = s.end_ns.saturating_sub(s.start_ns);
    let at = match first_done_ns {
        Some(ns) if s.stonewall_files < s.files => ns.saturating_sub(s.start_ns).min(own),
        _ => own,
    };
    at as f64 / 1e9
}

/// One row per thread of a metadata phase (or a find's, with its
/// `matched`): its files, records, own time and how it ended; `want`
/// gives the files a thread was asked for.
pub(crate) fn thread_rows(
    out: &PhaseOut<MetaSample>,
    want: impl Fn(u32) -> u64,
    matched: bool,
) -> Vec<ThreadFiles> {
    let any_failed = !out.digest.failures.is_empty();
    out.samples
        .iter()
        .map(|s| ThreadFiles {
            thread: s.worker,
            files: s.files,
            records: s.records,
            elapsed_s: s.end_ns.saturating_sub(s.start_ns) as f64 / 1e9,
            stonewall_files: s.stonewall_files,
            stonewall_bytes: s.stonewall_bytes,
            stonewall_s: thread_stonewall_s(s, out.first_done_ns),
            status: if s.failure.is_some() {
                "error"
            } else if s.hit_deadline {
                "time-limit"
            } else if out.interrupted && s.files < want(s.worker) {
                "interrupted"
            } else if any_failed && s.files < want(s.worker) {
                "stopped"
            } else {
                "ok"
            }
            .into(),
            matched: matched.then_some(s.matched),
        })
        .collect()
}

/// One row per worker, times against the phase's first start `t0`.
pub(crate) fn worker_rows(samples: &[MetaSample], t0: u64, layout: &Layout) -> Vec<WorkerRecord> {
    samples
        .iter()
        .map(|s| {
            let own = s.end_ns.saturating_sub(s.start_ns) as f64 / 1e9;
            WorkerRecord {
                worker: s.worker,
                host: layout.host_of(s.worker).to_string(),
                bytes: s.bytes(),
                ops: s.files,
                start_s: s.start_ns.saturating_sub(t0) as f64 / 1e9,
                end_s: s.end_ns.saturating_sub(t0) as f64 / 1e9,
                open_s: 0.0,
                io_s: own,
                close_s: 0.0,
                bw_mib_s: if own > 0.0 {
                    s.bytes() as f64 / own / MIB
                } else {
                    0.0
                },
            }
        })
        .collect()
}
