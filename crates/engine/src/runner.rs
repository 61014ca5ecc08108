//! A worker's life around the loop: the engine state made before the
//! barrier ([`Prepared`], looked up in the registry by the plan's engine
//! name), then open, transfer, sync and close for data ([`run_worker`]),
//! or the metadata engine's run ([`run_meta_worker_with`]). It sits above
//! the registry, which sits above the loops, so no module below looks an
//! engine up.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Barrier;
use std::time::Instant;

use spec::SyncMode;

use crate::backend::posix::Posix;
use crate::backend::{Advice, Backend, Create, DataFile, Durability, OpenHow};
use crate::buf::AlignedBuf;
use crate::meta::{MetaPlan, MetaSample};
use crate::pattern;
use crate::registry::{self, EngineOptions, EngineState, Engines, MetaEngineConfig};
use crate::series::Recorder;
use crate::worker::{
    new_detail, ns_since, IoFailure, LoopCtx, PhaseControl, PhasePlan, ThreadUsage, WorkerSample,
};

/// Buffers and engine state (an io_uring ring) of one worker, made before
/// the barrier and reused across phases so first-touch page faults and ring
/// set-up are never timed. Which engine makes it comes from the registry
/// of backend `B`.
pub struct Prepared<B: Backend = Posix> {
    state: Box<dyn EngineState<B>>,
}

impl<B: Engines> Prepared<B> {
    /// Allocates and touches the buffers (and creates the ring) for `plan`
    /// with the engines' default options.
    pub fn new(plan: &PhasePlan<B>, worker: u32) -> std::io::Result<Self> {
        Self::with_options(plan, worker, &EngineOptions::default())
    }

    /// As [`Prepared::new`], with engine options (io_uring ring set-up).
    pub fn with_options(
        plan: &PhasePlan<B>,
        worker: u32,
        opts: &EngineOptions,
    ) -> std::io::Result<Self> {
        let engine = registry::data_engine_of::<B>(&plan.spec.engine)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
        let depth = if engine.info().queueing {
            plan.spec.iodepth.max(1) as u64
        } else {
            1
        };
        let bufs = (0..depth)
            .map(|k| {
                let mut b = AlignedBuf::try_new(plan.buf_len() as usize, plan.align)?;
                pattern::fill_random(b.as_mut_slice(), plan.spec.seed ^ (worker as u64) << 20 ^ k);
                Ok(b)
            })
            .collect::<std::io::Result<_>>()?;
        Ok(Prepared {
            state: engine.prepare(bufs, opts)?,
        })
    }

    /// Notes on engine features asked for but not available (each once).
    pub fn notes(&self) -> &[String] {
        self.state.notes()
    }
}

/// How a worker of `plan` opens its data file.
fn open_how<B: Backend>(plan: &PhasePlan<B>) -> OpenHow {
    let writes = plan.op.writes();
    OpenHow {
        read: plan.op.reads(),
        write: writes,
        create: if writes {
            Create::IfMissing
        } else {
            Create::No
        },
        direct: plan.spec.direct,
        durability: match plan.sync {
            SyncMode::Each if writes => Durability::All,
            SyncMode::Dsync if writes => Durability::Data,
            _ => Durability::Buffered,
        },
        ..OpenHow::default()
    }
}

/// Runs worker `w`'s share of the phase: waits at `barrier`, then opens,
/// transfers, syncs and closes, and returns what it measured.
pub fn run_worker<B: Backend>(
    w: u32,
    plan: &PhasePlan<B>,
    ctl: &PhaseControl,
    barrier: &Barrier,
    prepared: Prepared<B>,
) -> (WorkerSample, Option<Prepared<B>>) {
    let file_idx = plan.file_of(w);
    let path = plan.files[file_idx].clone();
    let s = WorkerSample {
        detail: new_detail(plan),
        ..WorkerSample::empty(w, file_idx as u32)
    };
    let mut prepared = prepared;
    let bound = prepared.state.bind();
    let mut rec = Recorder::new(plan.series, ctl.epoch).shown(plan.live_slot(w));

    barrier.wait();
    let used0 = ThreadUsage::now();
    let target = Target {
        w,
        plan,
        ctl,
        path,
        how: open_how(plan),
    };
    let (mut s, back) = transfer(&target, s, prepared, bound, &mut rec);
    s.usage = used0.until(ThreadUsage::now());
    s.series = rec.finish(s.end_ns);
    (s, back)
}

/// The file one worker transfers to or from, and the phase it belongs to.
struct Target<'a, B: Backend> {
    w: u32,
    plan: &'a PhasePlan<B>,
    ctl: &'a PhaseControl,
    path: PathBuf,
    how: OpenHow,
}

impl<B: Backend> Target<'_, B> {
    /// Records a failure of `op` that is not at a file offset, and stops
    /// the phase.
    fn fail(&self, s: &mut WorkerSample, op: &str, e: &std::io::Error) {
        s.failure = Some(IoFailure {
            op: op.into(),
            path: self.path.clone(),
            offset: None,
            errno: e.raw_os_error(),
            message: e.to_string(),
        });
        self.ctl.abort.store(true, Ordering::Relaxed);
    }

    /// Opens the data file: through its held directory if it has one, else
    /// by its path (the user's own file).
    fn open(&self) -> std::io::Result<B::File> {
        let plan = self.plan;
        match plan
            .anchors
            .get(plan.file_of(self.w))
            .and_then(Option::as_ref)
        {
            Some(a) => a.open_with(self.how),
            None => B::open_path(&self.path, self.how),
        }
    }

    /// The hints fio gives a file it has just opened, in its order: drop
    /// the cached pages of the worker's region (`invalidate=1`), then say
    /// how it will be read (`fadvise_hint=1`: sequential or random, by
    /// the phase's order).
    fn advise(&self, file: &B::File) -> std::io::Result<()> {
        let plan = self.plan;
        let (at, len) = plan.region_of(self.w);
        if plan.spec.hints.invalidate {
            file.advise(at, len, Advice::DontNeed)?;
        }
        if plan.spec.hints.fadvise {
            let how = if plan.op.is_random() {
                Advice::Random
            } else {
                Advice::Sequential
            };
            file.advise(at, len, how)?;
        }
        Ok(())
    }

    /// The end of the timed section: fsync (where the sync mode asks for
    /// it) and close.
    fn sync_and_close(&self, file: B::File, s: &mut WorkerSample) {
        let plan = self.plan;
        if plan.op.writes()
            && s.failure.is_none()
            && (matches!(plan.sync, SyncMode::End | SyncMode::Every(_)) || plan.spec.hints.end_sync)
        {
            let t = Instant::now();
            if let Err(e) = file.sync() {
                s.counters.record_error();
                self.fail(s, "fsync", &e);
            }
            s.fsync_ns += Instant::now().duration_since(t).as_nanos() as u64;
        }
        s.io_done_ns = ns_since(self.ctl.epoch, Instant::now());
        if let Err(e) = file.close() {
            if s.failure.is_none() {
                self.fail(s, "close", &e);
            }
        }
        s.end_ns = ns_since(self.ctl.epoch, Instant::now());
    }
}

/// [`run_worker`] after the barrier: open, transfer, sync, close.
fn transfer<B: Backend>(
    t: &Target<'_, B>,
    mut s: WorkerSample,
    mut prepared: Prepared<B>,
    bound: std::io::Result<()>,
    rec: &mut Recorder,
) -> (WorkerSample, Option<Prepared<B>>) {
    let ctl = t.ctl;
    s.start_ns = ns_since(ctl.epoch, Instant::now());
    rec.start(s.start_ns);
    if let Err(e) = bound {
        t.fail(&mut s, "io_uring_setup", &e);
        s.open_done_ns = s.start_ns;
        s.io_done_ns = s.start_ns;
        s.end_ns = s.start_ns;
        return (s, None);
    }
    let file = match t.open() {
        Ok(f) => f,
        Err(e) => {
            t.fail(&mut s, "open", &e);
            let now = ns_since(ctl.epoch, Instant::now());
            s.open_done_ns = now;
            s.io_done_ns = now;
            s.end_ns = now;
            return (s, Some(prepared));
        }
    };
    if let Err(e) = t.advise(&file) {
        t.fail(&mut s, "posix_fadvise", &e);
        let _ = file.close();
        let now = ns_since(ctl.epoch, Instant::now());
        s.open_done_ns = now;
        s.io_done_ns = now;
        s.end_ns = now;
        return (s, Some(prepared));
    }
    s.open_done_ns = ns_since(ctl.epoch, Instant::now());

    let usable = {
        let mut lp = LoopCtx {
            w: t.w,
            plan: t.plan,
            ctl,
            deadline: ctl.deadline(t.plan.time_limit),
            path: &t.path,
            s: &mut s,
            series: rec,
        };
        prepared.state.run(&file, &mut lp)
    };
    if !usable {
        // Requests the kernel may still complete into these buffers: leak
        // the state rather than free memory it could write to.
        std::mem::forget(prepared);
        let _ = file.close();
        s.end_ns = ns_since(ctl.epoch, Instant::now());
        s.io_done_ns = s.end_ns;
        return (s, None);
    }
    t.sync_and_close(file, &mut s);
    (s, Some(prepared))
}

/// Runs thread `w`'s share of the phase with the synchronous engine:
/// prepares, waits at `barrier`, processes its files, and returns what it
/// measured.
pub fn run_meta_worker<B: Backend>(
    w: u32,
    plan: &MetaPlan<'_, B>,
    ctl: &PhaseControl,
    barrier: &Barrier,
) -> MetaSample {
    let cfg = MetaEngineConfig::default();
    registry::sync_meta::<B>().run(w, plan, &cfg, ctl, barrier)
}

/// As [`run_meta_worker`], with the engine and depth of `cfg` (looked up in
/// the registry of backend `B`; an unknown name runs the synchronous
/// engine, so check it with [`crate::registry::check_meta`] first).
pub fn run_meta_worker_with<B: Engines>(
    w: u32,
    plan: &MetaPlan<'_, B>,
    cfg: &MetaEngineConfig,
    ctl: &PhaseControl,
    barrier: &Barrier,
) -> MetaSample {
    registry::meta_engine_of::<B>(cfg.engine)
        .unwrap_or_else(|_| registry::sync_meta::<B>())
        .run(w, plan, cfg, ctl, barrier)
}
