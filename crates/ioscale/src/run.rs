//! The driver of `ioscale run`: checks, phases, reduction, cleanup.
//!
//! It turns a validated [`WorkloadSpec`] into phases, starts the workers of
//! each phase together at a barrier, reduces their samples into a
//! [`PhaseRecord`], and returns a [`ResultSet`] — it never prints. Aggregate
//! rates use total work ÷ (last finish − first start), so workers that take
//! turns on too few CPUs are not flattered by summing their own rates.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use engine::{run_worker, PhaseControl, PhasePlan, Prepared, WorkerSample};
use report::{
    ErrorRecord, HostInfo, JobSpec, Mismatch, PhaseRecord, ResultSet, Stonewall, VerifyRecord,
    WorkerRecord, SCHEMA,
};
use spec::{format_size, EngineKind, Op, SyncMode, WorkloadSpec};
use stats::{IoCounters, LatencyHistogram};

use crate::files::{DataSet, SetupError};
use crate::host;

/// A setup problem: reported with exit code 2 before any data is written.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

impl From<SetupError> for Refused {
    fn from(e: SetupError) -> Self {
        Refused(e.to_string())
    }
}

/// What a finished (or stopped) run hands back to the caller.
pub struct Outcome {
    /// The record.
    pub results: ResultSet,
    /// Lines for standard error: cleanup notes and the like.
    pub notes: Vec<String>,
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

/// Checks the target before anything is created: exists, is a directory,
/// writable, not read-only; O_DIRECT accepted with this alignment; io_uring
/// available. Returns the buffer alignment to use.
pub fn preflight(spec: &WorkloadSpec) -> Result<usize, Refused> {
    let t = &spec.target;
    let meta = std::fs::metadata(t).map_err(|e| {
        Refused(format!(
            "TARGET {}: {e}; name an existing directory on the file system to test",
            t.display()
        ))
    })?;
    if !meta.is_dir() {
        return Err(Refused(format!(
            "TARGET {} is not a directory; name a directory on the file system to test",
            t.display()
        )));
    }
    if engine::sys::is_read_only(t).unwrap_or(false) {
        return Err(Refused(format!(
            "TARGET {} is on a read-only file system; choose a writable target",
            t.display()
        )));
    }
    if !engine::sys::can_write(t) {
        return Err(Refused(format!(
            "TARGET {}: permission denied; choose a directory you may write to",
            t.display()
        )));
    }
    let mut align = 4096usize;
    if spec.direct {
        align = probe_direct(t, spec.xfer)?;
    }
    if spec.engine == EngineKind::IoUring {
        if let Err(e) = engine::uring::UringQueue::ring(2) {
            return Err(Refused(format!(
                "--engine io_uring: io_uring is not available here ({e}); use --engine sync"
            )));
        }
    }
    Ok(align)
}

/// Opens a scratch file with O_DIRECT and writes one transfer, so a file
/// system that refuses O_DIRECT or this alignment is named before the run.
fn probe_direct(dir: &Path, xfer: u64) -> Result<usize, Refused> {
    let probe = dir.join(format!(".ioscale-probe-{}", std::process::id()));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe);
    let file = match file {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            return Err(Refused(format!(
                "--direct: the file system at {} refuses O_DIRECT; run without --direct \
                 (and mind the page cache) or test another file system",
                dir.display()
            )))
        }
        Err(e) => {
            return Err(Refused(format!(
                "--direct: cannot create a probe file in {}: {e}",
                dir.display()
            )))
        }
    };
    let mut result = Ok(4096);
    let len = xfer.min(1 << 20) as usize;
    let mut buf = engine::buf::AlignedBuf::new(len, 4096);
    buf.as_mut_slice().fill(0x5a);
    use std::os::unix::fs::FileExt;
    if let Err(e) = file.write_at(buf.as_slice(), 0) {
        result = Err(Refused(if e.raw_os_error() == Some(libc::EINVAL) {
            format!(
                "--direct: {} refuses O_DIRECT transfers of {}; use an --xfer that is a multiple of the \
                 device block size (4k is safe)",
                dir.display(),
                format_size(xfer)
            )
        } else {
            format!("--direct: probe write in {} failed: {e}", dir.display())
        }));
    }
    drop(file);
    let _ = std::fs::remove_file(&probe);
    result
}

/// Warnings that change how the figures must be read.
fn warnings(spec: &WorkloadSpec, host: &HostInfo) -> Vec<String> {
    let mut w = Vec::new();
    let working_set = spec.file_size() * spec.file_count() as u64;
    if !spec.direct && host.mem_bytes > 0 && working_set < host.mem_bytes {
        w.push(format!(
            "buffered I/O on {} of data, less than this machine's {} of RAM: the figures are likely \
             page cache, not storage. Use --direct, or a working set larger than RAM{}",
            format_size(working_set),
            format_size(host.mem_bytes),
            if spec.ops.iter().any(|o| o.reads()) && !spec.drop_caches {
                ", or --drop-caches before reads"
            } else {
                ""
            }
        ));
    }
    let reads_after_write = spec
        .ops
        .iter()
        .enumerate()
        .any(|(i, o)| o.reads() && spec.ops[..i].iter().any(|p| p.writes()));
    if !spec.direct && reads_after_write && !spec.drop_caches {
        w.push(
            "a read phase follows a write on the same files without --drop-caches: it reads what \
             the page cache kept, not the device"
                .into(),
        );
    }
    if spec.threads > host.cpus.max(1) * 4 && spec.engine == EngineKind::Sync {
        w.push(format!(
            "{} workers on {} CPUs: workers take turns; the aggregate rate (first start to last \
             finish) is the honest figure, the stonewall figure shows the work done by the time \
             the first worker finished",
            spec.threads, host.cpus
        ));
    }
    if matches!(host.fs_type.as_str(), "tmpfs" | "ramfs") {
        w.push(format!(
            "the target is on {}: memory, not storage",
            host.fs_type
        ));
    }
    w
}

fn make_run_id() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{:x}-{}", t, std::process::id())
}

/// Drops the page cache, or falls back to fadvise on ioscale's own files.
fn drop_caches(ds: &DataSet, warned: &mut bool, warnings: &mut Vec<String>) {
    if engine::sys::drop_caches().is_ok() {
        return;
    }
    for f in &ds.files {
        if let Ok(file) = std::fs::File::open(f) {
            let _ = file.sync_all();
            let _ = engine::sys::fadvise_dontneed(&file);
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

/// Runs the whole workload. `stop` is raised by the signal handler.
pub fn run(
    spec: &WorkloadSpec,
    command: Vec<String>,
    stop: Arc<AtomicBool>,
) -> Result<Outcome, Refused> {
    let align = preflight(spec)?;
    let host = host::collect(&spec.target);
    let mut warns = warnings(spec, &host);
    let writes = spec.ops.iter().any(|o| o.writes());
    if writes {
        if let Ok(free) = engine::sys::free_bytes(&spec.target) {
            let need = spec.file_size() * spec.file_count() as u64;
            if need > free {
                warns.push(format!(
                    "the run writes {} but the target has {} free: expect ENOSPC",
                    format_size(need),
                    format_size(free)
                ));
            }
        }
    }
    let run_id = make_run_id();
    let mut ds = DataSet::prepare(spec, &run_id)?;
    let mut notes = Vec::new();
    let mut results = ResultSet {
        schema: SCHEMA,
        tool: "ioscale".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        command,
        started: host::now_rfc3339(),
        host,
        spec: JobSpec::Run(spec.clone()),
        warnings: Vec::new(),
        interrupted: false,
        errors: Vec::new(),
        phases: Vec::new(),
        summary: Vec::new(),
    };
    let mut prepared: Vec<Option<Prepared>> = (0..spec.threads).map(|_| None).collect();
    let mut drop_warned = false;
    let mut first = true;
    let mut have_data = ds.had_data;
    'reps: for rep in 0..spec.reps {
        for &op in &spec.ops {
            if stop.load(Ordering::Relaxed) {
                results.interrupted = true;
                break 'reps;
            }
            if op.reads() && !have_data {
                // Reads need data: lay the files out first, untimed, as fio
                // does before a mixed or read job on fresh files.
                let plan = plan_for(spec, Op::Write, &ds, align, rep, false);
                let (samples, _) = run_phase(&plan, &stop, &mut prepared);
                if let Some((worker, f)) = samples
                    .iter()
                    .find_map(|s| s.failure.as_ref().map(|f| (s.worker, f)))
                {
                    results.errors.push(ErrorRecord {
                        worker,
                        op: format!("layout {}", f.op),
                        file: f.path.display().to_string(),
                        offset: f.offset,
                        errno: f.errno,
                        message: f.message.clone(),
                    });
                    break 'reps;
                }
                if stop.load(Ordering::Relaxed) {
                    results.interrupted = true;
                    break 'reps;
                }
                warns.push(format!(
                    "the files were laid out by an untimed write before the first {op} phase"
                ));
                have_data = true;
            }
            if spec.drop_caches && !first {
                drop_caches(&ds, &mut drop_warned, &mut warns);
            }
            first = false;
            let plan = plan_for(spec, op, &ds, align, rep, true);
            let cpu0 = engine::sys::cpu_times();
            let (samples, first_done_ns) = run_phase(&plan, &stop, &mut prepared);
            let cpu1 = engine::sys::cpu_times();
            let rec = reduce(
                &plan,
                &samples,
                first_done_ns,
                (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1),
                &results.host.hostname,
                stop.load(Ordering::Relaxed),
            );
            let failed = samples.iter().any(|s| s.failure.is_some());
            for s in &samples {
                if let Some(f) = &s.failure {
                    results.errors.push(ErrorRecord {
                        worker: s.worker,
                        op: f.op.clone(),
                        file: f.path.display().to_string(),
                        offset: f.offset,
                        errno: f.errno,
                        message: f.message.clone(),
                    });
                }
            }
            let interrupted = rec.interrupted;
            let cut_short = rec.time_limited;
            results.phases.push(rec);
            if op.writes() && !failed && !interrupted && !cut_short {
                // A complete write of every transfer: the files now hold a
                // full data set (mixed phases only count if they wrote all).
                if matches!(op, Op::Write | Op::Randwrite) {
                    have_data = true;
                    if spec.keep {
                        ds.mark_complete(&run_id, spec.file_size(), spec.seed);
                    }
                }
            }
            if interrupted {
                results.interrupted = true;
                break 'reps;
            }
            if failed {
                break 'reps;
            }
        }
    }
    results.warnings = warns;
    results.summarise();

    if !spec.keep && ds.created_root {
        let left = ds.remove();
        for l in left {
            notes.push(format!("cleanup: could not remove {l}"));
        }
    } else if spec.keep {
        notes.push(format!(
            "kept the files in {} (`ioscale clean {}` removes them)",
            ds.root.display(),
            spec.target.display()
        ));
    } else {
        notes.push(format!(
            "the files in {} were kept by an earlier run and are left in place (`ioscale clean {}` removes them)",
            ds.root.display(),
            spec.target.display()
        ));
    }
    Ok(Outcome { results, notes })
}

fn plan_for(
    spec: &WorkloadSpec,
    op: Op,
    ds: &DataSet,
    align: usize,
    rep: u32,
    timed: bool,
) -> PhasePlan {
    PhasePlan {
        op,
        threads: spec.threads,
        layout: spec.layout,
        xfer: spec.xfer,
        block: spec.block,
        segments: spec.segments,
        direct: spec.direct,
        sync: if timed { spec.sync } else { SyncMode::End },
        engine: spec.engine,
        iodepth: spec.iodepth,
        seed: spec.seed,
        verify: spec.verify,
        rwmix_read: spec.rwmix_read,
        // IOR -C: only pure read phases read someone else's data.
        reorder_offset: if op.writes() { 0 } else { spec.reorder_offset },
        files: ds.files.clone(),
        align,
        time_limit: if timed { spec.time_limit } else { None },
        rep,
    }
}

/// Runs one phase: one thread per worker, all released together.
fn run_phase(
    plan: &PhasePlan,
    stop: &Arc<AtomicBool>,
    prepared: &mut [Option<Prepared>],
) -> (Vec<WorkerSample>, Option<u64>) {
    let ctl = PhaseControl::new(stop.clone());
    let barrier = Barrier::new(plan.threads as usize);
    let mut out: Vec<(WorkerSample, Option<Prepared>)> = Vec::with_capacity(plan.threads as usize);
    std::thread::scope(|scope| {
        let handles: Vec<_> = prepared
            .iter_mut()
            .enumerate()
            .map(|(w, slot)| {
                let ctl = &ctl;
                let barrier = &barrier;
                let mine = slot.take();
                std::thread::Builder::new()
                    .name(format!("ioscale-w{w}"))
                    .stack_size(256 * 1024)
                    .spawn_scoped(scope, move || {
                        let p = match mine {
                            Some(p) => p,
                            None => match Prepared::new(plan, w as u32) {
                                Ok(p) => p,
                                Err(e) => {
                                    // Still take part in the barrier so the
                                    // others are not left waiting.
                                    barrier.wait();
                                    ctl.abort.store(true, Ordering::Relaxed);
                                    return (setup_failure(plan, w as u32, e), None);
                                }
                            },
                        };
                        run_worker(w as u32, plan, ctl, barrier, p)
                    })
                    .expect("spawning a worker thread")
            })
            .collect();
        for h in handles {
            out.push(h.join().expect("worker thread panicked"));
        }
    });
    let first_done = ctl
        .first_done
        .load(Ordering::Acquire)
        .then(|| ctl.first_done_ns.load(Ordering::Acquire));
    let mut samples = Vec::with_capacity(out.len());
    for (i, (s, p)) in out.into_iter().enumerate() {
        prepared[i] = p;
        samples.push(s);
    }
    (samples, first_done)
}

fn setup_failure(plan: &PhasePlan, w: u32, e: std::io::Error) -> WorkerSample {
    WorkerSample {
        worker: w,
        file: plan.file_of(w) as u32,
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
        failure: Some(engine::IoFailure {
            op: "io_uring_setup".into(),
            path: plan.files[plan.file_of(w)].clone(),
            offset: None,
            errno: e.raw_os_error(),
            message: e.to_string(),
        }),
        verify: Default::default(),
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// Reduces worker samples into one phase record.
fn reduce(
    plan: &PhasePlan,
    samples: &[WorkerSample],
    first_done_ns: Option<u64>,
    cpu: (f64, f64),
    hostname: &str,
    interrupted: bool,
) -> PhaseRecord {
    let t0 = samples.iter().map(|s| s.start_ns).min().unwrap_or(0);
    let t1 = samples.iter().map(|s| s.end_ns).max().unwrap_or(0);
    let elapsed = (t1.saturating_sub(t0)) as f64 / 1e9;
    let mut counters = IoCounters::default();
    let mut hist = LatencyHistogram::new();
    for s in samples {
        counters += s.counters;
        hist += &s.hist;
    }
    let rate = |x: f64| if elapsed > 0.0 { x / elapsed } else { 0.0 };
    let maxs =
        |f: &dyn Fn(&WorkerSample) -> u64| samples.iter().map(f).max().unwrap_or(0) as f64 / 1e9;
    let sw_bytes: u64 = samples.iter().map(|s| s.stonewall_bytes).sum();
    let sw_s = match first_done_ns {
        Some(ns) => ns.saturating_sub(t0) as f64 / 1e9,
        None => elapsed,
    };
    let verify = (plan.verify && plan.op.reads()).then(|| VerifyRecord {
        checked_bytes: samples.iter().map(|s| s.verify.checked_bytes).sum(),
        bad_bytes: samples.iter().map(|s| s.verify.bad_bytes).sum(),
        mismatches: samples
            .iter()
            .filter_map(|s| {
                s.verify.first_bad.as_ref().map(|(f, o)| Mismatch {
                    file: f.display().to_string(),
                    offset: *o,
                    bad_bytes: s.verify.bad_bytes,
                })
            })
            .collect(),
    });
    PhaseRecord {
        op: plan.op.name().into(),
        rep: plan.rep,
        threads: plan.threads,
        bytes: counters.bytes,
        ops: counters.ops,
        read_bytes: counters.read_bytes,
        write_bytes: counters.write_bytes,
        elapsed_s: elapsed,
        bw_mib_s: rate(counters.bytes as f64) / MIB,
        bw_mb_s: rate(counters.bytes as f64) / 1e6,
        iops: rate(counters.ops as f64),
        lat_us: hist.summary(),
        open_s: maxs(&|s| s.open_done_ns - s.start_ns),
        io_s: maxs(&|s| s.io_done_ns - s.open_done_ns),
        close_s: maxs(&|s| s.end_ns - s.io_done_ns),
        fsync_s: maxs(&|s| s.fsync_ns),
        cpu_user_s: cpu.0,
        cpu_sys_s: cpu.1,
        stonewall: Stonewall {
            s: sw_s,
            bytes: sw_bytes,
            bw_mib_s: if sw_s > 0.0 {
                sw_bytes as f64 / sw_s / MIB
            } else {
                0.0
            },
        },
        time_limited: samples.iter().any(|s| s.hit_deadline),
        interrupted,
        errors: counters.errors,
        verify,
        workers: samples
            .iter()
            .map(|s| {
                let own = (s.end_ns.saturating_sub(s.start_ns)) as f64 / 1e9;
                WorkerRecord {
                    worker: s.worker,
                    host: hostname.to_string(),
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
            .collect(),
    }
}
