//! The analysis: what a sweep's curve says, and why, in plain sentences
//! that are each backed by a measurement.
//!
//! Each line of a sweep (one series, one operation, by total workers) gets
//! exactly **one verdict**, chosen by the ordered rules of [`Verdict`]
//! (documented with examples in docs/analysis.md), so no two sentences can
//! contradict each other. Every comparison a verdict makes ("clearly above",
//! "falls", "catches up", "faster") is made with the 95 % bootstrap
//! interval of each point's central figure over its repetitions
//! ([`stats::bootstrap`]): when the intervals overlap the sentence says "no
//! clear difference (within noise: ±x%)". With one repetition per point
//! there is no noise estimate and the verdict says it is unsupported.
//!
//! The limit is named from what the driver measured around each phase
//! ([`probe::Resources`]: CPU of ioscale, of the machine and of the busiest
//! other process, the block device as iostat computes it, the FUSE
//! connection), never from the file-system type alone. The per-request
//! time comes from Little's law (`L = λW`, J. D. C. Little, Operations
//! Research 9(3), 1961: with N requests always in flight and X completed
//! per second, each takes `W = N / X`), with N the total workers (ranks ×
//! threads per rank). A Universal Scalability Law fit ([`crate::usl`]) is
//! quoted only when it has at least [`USL_MIN_COUNTS`] worker counts and
//! R² ≥ [`USL_MIN_R2`].

use probe::{ProcessUse, Resources};
use stats::Interval;

use crate::adapt::{self, Axis, Measured};
use crate::model::SweepRecord;
use crate::usl::{self, UslFit};
use crate::verdict::workers_word;
pub use crate::verdict::{
    clearly_above, dur, num, Analysis, ComparedAt, Comparison, Context, CurveAnalysis, CurvePoint,
    Evidence, Limit, Limiter, LittlePoint, Units, Verdict, VerdictKind, CPU_SATURATED,
    DEVICE_SATURATED, DROP_ALIGN, DROP_HOLD, DROP_MIN_INTERVALS, DROP_MIN_PHASE, DROP_NOISE,
    DROP_NOISE_FLOOR, DROP_SHARE, ENOUGH_SHARE, LATENCY_STEADY, MIN_EFFECT, PLATEAU_NOISE,
    PROCESS_SATURATED, SERIAL_FALL, SERIAL_GAIN, SERIAL_LATENCY, SERIAL_QUEUE, SERIES_WORKERS,
    STARVED_SHARE, STEADY_INTERVALS, STEADY_SHARE, USL_MIN_COUNTS, USL_MIN_R2,
};

fn pct(f: f64) -> String {
    format!("{:.0}%", f * 100.0)
}

/// "±12%" of an interval around a value; with one repetition, that
/// there is no noise estimate.
fn pm(p: &CurvePoint) -> String {
    if p.reps < 2 {
        return NO_NOISE_ESTIMATE.into();
    }
    format!("±{:.0}%", p.interval().half_width_rel(p.value) * 100.0)
}

fn is_remote(fs: &str) -> bool {
    fs.starts_with("nfs")
        || fs.starts_with("fuse")
        || fs.starts_with("cifs")
        || fs.starts_with("smb")
        || matches!(
            fs,
            "lustre" | "ceph" | "9p" | "glusterfs" | "gpfs" | "beegfs" | "efs" | "virtiofs"
        )
}

/// Names the resource that limits the points `at` (the flat part of a
/// line), from the last of them that carries measurements. Rules, in
/// order: the CPUs wanted by ioscale's threads, or busy with the workload
/// (or keeping its threads waiting) → CPU; the FUSE daemon at a whole
/// core → the daemon; the device busy → device; a daemon-served or
/// network target with none of those → its server; else unidentified.
/// Without measurements, ioscale's own CPU time is the only evidence.
pub fn limiter(at: &[CurvePoint], ctx: &Context) -> Limiter {
    let cpus = ctx.cpus.max(1);
    let fs = ctx.fs_type.as_str();
    let measured = at.iter().rev().find(|p| p.resources.is_some());
    let Some(p) = measured else {
        return unmeasured_limiter(at, cpus);
    };
    let r = p.resources.as_ref().expect("found with resources");
    let rc = if r.cpus > 0 { r.cpus } else { cpus };
    // The machine's busy time is over all its CPUs, not the ones ioscale
    // may use: Open MPI binds each of 2 ranks to 1 of 2 CPUs, and 2.03
    // busy cores over that 1 read "all 1 CPU 100% busy".
    let machine = cpus.max(rc);
    let busy = r.machine_busy_cores / machine as f64;
    let fs = if r.fs_type.is_empty() {
        fs
    } else {
        r.fs_type.as_str()
    };
    let w = p.threads;
    // The work under test: ioscale and the daemon serving the target.
    let daemon = r.fuse.as_ref().and_then(|f| f.daemon.as_ref());
    let own = r.self_cores + daemon.map(|d| d.cores).unwrap_or(0.0);
    // /proc/stat counts in ticks of 10 ms per CPU, so a phase of tens of
    // milliseconds reads a full machine as 85-95 % busy; the workload's
    // own CPU time (to the microsecond) is a floor under it.
    let busy = busy.max(own / machine as f64);
    let others = r
        .top_other
        .as_ref()
        .filter(|o| o.cores >= 0.25 && daemon.is_none_or(|d| d.pid != o.pid));
    let wait = r.self_cpu_wait.unwrap_or(0.0);
    // Starved: each of ioscale's threads waited for a CPU a quarter of the
    // time or more (whoever kept the CPUs busy, they are its limit). A
    // thread that sleeps on I/O and waits a little whenever it wakes is
    // not starved, however its waits compare with its short runs.
    let tpr = if p.threads_per_rank > 0 {
        p.threads_per_rank
    } else {
        p.threads
    };
    let starved = wait >= 0.2 && wait >= STARVED_SHARE * tpr.max(1) as f64;
    // Wanted: ioscale's threads were running or waiting for a CPU, on
    // average, as many at a time as there are CPUs for them: they alone
    // keep every CPU busy, whatever else runs.
    let wanted = r.cpus_wanted() >= CPU_SATURATED * rc as f64;
    if wanted || (busy >= CPU_SATURATED && (own >= 0.5 * rc as f64 || starved)) {
        return Limiter {
            limit: Limit::Cpu,
            figure: cpu_figure(r, (rc, machine), busy, others, p.ranks),
            workers: w,
        };
    }
    // CPUs kept busy by other work disturb the figures but are not this
    // workload's limit: say so beside whatever is.
    let disturbed = match others {
        Some(o) if busy >= CPU_SATURATED && !starved => format!(
            " (the CPUs were {} busy, mostly with other work: {}; expect noise)",
            pct(busy.min(1.0)),
            other_work(o, p.ranks)
        ),
        _ => String::new(),
    };
    let mut l = limiter_below_cpu(r, p, fs, busy);
    l.figure.push_str(&disturbed);
    l
}

/// The limit of points without resource measurements (records written
/// before the probe): the CPUs when ioscale's own CPU time fills them,
/// else "not measured".
fn unmeasured_limiter(at: &[CurvePoint], cpus: u32) -> Limiter {
    let p = at.last().cloned().unwrap_or_default();
    let busy = at.iter().map(|p| p.cpu_busy).fold(0.0f64, f64::max);
    if busy >= CPU_SATURATED * cpus as f64 {
        Limiter {
            limit: Limit::Cpu,
            figure: format!("the CPUs: ioscale keeps {} of {cpus} CPUs busy", num(busy)),
            workers: p.threads,
        }
    } else {
        Limiter {
            limit: Limit::NotMeasured,
            figure: format!(
                "not measured: this record has no resource measurements (ioscale used {} of {cpus} CPUs)",
                num(busy)
            ),
            workers: p.threads,
        }
    }
}

/// "the CPUs: both CPUs 100% busy, ioscale 1.9 cores" and what else the
/// measurement shows: the FUSE daemon, the wait for a CPU, other work.
/// "rustc, pid 42, at 0.53 cores"; under MPI an ioscale process is likely
/// another rank of the run itself, which the probe does not count as
/// ioscale (it measures rank 0's process).
fn other_work(o: &ProcessUse, ranks: u32) -> String {
    format!(
        "{}, pid {}{}, at {:.2} cores",
        o.name,
        o.pid,
        if ranks > 1 && o.name.starts_with("ioscale") {
            ", an ioscale process and likely another rank of this run"
        } else {
            ""
        },
        o.cores
    )
}

/// The CPUs' figure: the machine's busy share over its `machine` CPUs,
/// ioscale's cores (rank 0's process under MPI, `ranks` > 1) and the `rc`
/// CPUs it may use when fewer.
fn cpu_figure(
    r: &Resources,
    (rc, machine): (u32, u32),
    busy: f64,
    others: Option<&ProcessUse>,
    ranks: u32,
) -> String {
    let daemon = r.fuse.as_ref().and_then(|f| f.daemon.as_ref());
    let wait = r.self_cpu_wait.unwrap_or(0.0);
    let mut figure = format!(
        "the CPUs: {} {} {} busy, {} {:.2} cores",
        if machine == 2 {
            "both".to_string()
        } else {
            format!("all {machine}")
        },
        if machine == 1 { "CPU" } else { "CPUs" },
        pct(busy.min(1.0)),
        if ranks > 1 {
            "ioscale's rank 0 (the only rank measured)"
        } else {
            "ioscale"
        },
        r.self_cores
    );
    if rc < machine {
        figure.push_str(&format!(
            " on the {rc} {} it may use",
            if rc == 1 { "CPU" } else { "CPUs" }
        ));
    }
    if let Some(d) = daemon.filter(|d| d.cores >= 0.05) {
        figure.push_str(&format!(", FUSE daemon {:.2}", d.cores));
    }
    if wait >= 0.05 {
        figure.push_str(&format!(
            ", its threads waiting for a CPU {wait:.2} s per second"
        ));
    }
    if let Some(o) = others {
        figure.push_str(&format!(", other work: {}", other_work(o, ranks)));
    }
    figure
}

/// Whether the device's busy time at point `p` is its phase's own: its
/// I/O explains the device's traffic ([`Resources::device_explained`]).
fn device_is_the_phases(r: &Resources, p: &CurvePoint) -> bool {
    let way = if p.reads_only {
        probe::evidence::Way::Reads
    } else {
        probe::evidence::Way::Writes
    };
    r.device_explained((p.read_bytes, p.write_bytes), way)
}

fn limiter_below_cpu(r: &Resources, p: &CurvePoint, fs: &str, busy: f64) -> Limiter {
    let w = p.threads;
    // Only the daemon serving the target can limit it from one core; an
    // unrelated busy process matters only through the CPUs (above).
    if let Some(o) = r
        .fuse
        .as_ref()
        .and_then(|f| f.daemon.as_ref())
        .filter(|o| o.cores >= PROCESS_SATURATED)
    {
        return Limiter {
            limit: Limit::Process,
            figure: format!(
                "the FUSE daemon ({}, pid {}) at {:.2} of a core",
                o.name, o.pid, o.cores
            ),
            workers: w,
        };
    }
    let own = device_is_the_phases(r, p);
    if let Some(d) = r
        .device
        .as_ref()
        .filter(|d| d.util >= DEVICE_SATURATED && own)
    {
        return Limiter {
            limit: Limit::Device,
            figure: format!(
                "device {} {} busy, queue {:.1}, {} per request",
                d.name,
                pct(d.util),
                d.avg_queue,
                bytes(d.avg_request_bytes)
            ),
            workers: w,
        };
    }
    // A device kept busy by other work (or by writeback of earlier
    // phases) is not this phase's: said as such, never the limit.
    let dev = r
        .device
        .as_ref()
        .map(|d| {
            format!(
                ", device {} {} busy{}",
                d.name,
                pct(d.util),
                if own || d.util < 0.05 {
                    ""
                } else {
                    ", not with this phase's I/O"
                }
            )
        })
        .unwrap_or_default();
    if is_remote(fs) {
        let waiting = r
            .fuse
            .as_ref()
            .and_then(|f| f.waiting_avg)
            .map(|q| format!(", {q:.1} requests waiting in the kernel on average"))
            .unwrap_or_default();
        let traced = fuse_in_flight(r).unwrap_or_default();
        return Limiter {
            limit: Limit::Server,
            figure: format!(
                "the file-system server ({fs}): no process here at a full core, CPUs {} busy{dev}{waiting}{traced}",
                pct(busy)
            ),
            workers: w,
        };
    }
    Limiter {
        limit: Limit::Unidentified,
        figure: format!(
            "no measured resource saturated (CPUs {} busy{dev}; ioscale {} cores): a lock or queue inside {fs} is likely, not identified",
            pct(busy),
            num(r.self_cores)
        ),
        workers: w,
    }
}

/// ", FUSE data requests 2.50 ms each from send to reply, 7.8 in flight
/// on average", from the traced requests (Little's law on the requests:
/// summed time in flight ÷ elapsed).
fn fuse_in_flight(r: &Resources) -> Option<String> {
    let q = r.fuse.as_ref()?.requests.as_ref()?;
    let n = q.write.answered.saturating_add(q.read.answered);
    let t = q.write.time_s + q.read.time_s;
    (n > 0 && r.elapsed_s > 0.0).then(|| {
        format!(
            ", FUSE data requests {} each from send to reply, {:.1} in flight on average",
            dur(t / n as f64),
            t / r.elapsed_s
        )
    })
}

/// Whether operation `op` (a data operation of `run` or a metadata one
/// of `meta`, by name) only reads.
fn reads_only(op: &str) -> bool {
    use spec::MetaOp;
    match spec::Op::parse(op) {
        Some(o) => o.reads() && !o.writes(),
        None => matches!(
            MetaOp::parse(op),
            Some(
                MetaOp::Read | MetaOp::Stat | MetaOp::StatDir | MetaOp::Readdir | MetaOp::Getxattr
            )
        ),
    }
}

fn ev(what: &str, p: &CurvePoint) -> Evidence {
    Evidence {
        what: what.into(),
        workers: p.threads,
        value: p.value,
        interval: p.ci,
    }
}

/// Reads one line. `points` need not be sorted; at most one per worker
/// count is expected.
pub fn analyse_curve(
    series: &str,
    op: &str,
    unit: &str,
    points: &[CurvePoint],
    ctx: &Context,
) -> CurveAnalysis {
    let mut all = points.to_vec();
    all.sort_by_key(|p| p.threads);
    let reads = reads_only(op);
    for p in &mut all {
        p.reads_only = reads;
    }
    let pts: Vec<CurvePoint> = all.iter().filter(|p| p.reps > 0).cloned().collect();
    let mut out = empty_curve(series, op, unit, &all);
    // Failed repetitions first: they change how to read everything else.
    for p in all.iter().filter(|p| p.failed > 0) {
        out.sentences.push(format!(
            "{} of {} repetitions failed at {} and are left out of every figure: {}",
            p.failed,
            p.failed + p.reps,
            workers_word(p.threads),
            p.first_error.as_deref().unwrap_or("no error recorded")
        ));
    }
    if pts.is_empty() {
        if !all.is_empty() {
            out.verdict.text = "Every repetition failed: no figure to analyse.".into();
            out.sentences.push(out.verdict.text.clone());
        }
        return out;
    }
    let mut sh = Shape::of(&pts);
    sh.failed_below = all
        .iter()
        .filter(|p| p.reps == 0 && p.threads < sh.first.threads)
        .map(|p| p.threads)
        .max();
    sh.failed_beyond = all
        .iter()
        .filter(|p| p.reps == 0 && p.threads > sh.last.threads)
        .map(|p| p.threads)
        .min();
    out.peak = sh.peak.value;
    out.peak_threads = sh.peak.threads;
    out.noise = sh.noise_rel;
    out.little = pts
        .iter()
        .filter_map(|p| {
            p.little_s().map(|l| LittlePoint {
                threads: p.threads,
                iops: p.iops,
                latency_s: l,
            })
        })
        .collect();
    if let Some(w0) = sh.w_first {
        out.hidden_up_to = out
            .little
            .iter()
            .skip(1)
            .take_while(|l| l.latency_s <= LATENCY_STEADY * w0)
            .last()
            .map(|l| l.threads);
    }
    let mut v = verdict(&pts, &sh, ctx, unit);
    if v.kind == VerdictKind::Saturated {
        out.enough_threads = sh.knee.threads;
        out.enough_value = sh.knee.value;
    }
    if !sh.supported && pts.len() > 1 {
        v.text.push_str(
            " One repetition at some points: this verdict is not supported by repetitions; run with --reps 3 or more.",
        );
    }
    out.limit = v.limiter.as_ref().map(|l| l.limit);
    out.sentences.push(v.text.clone());
    out.verdict = v;
    if pts.len() > 1 {
        out.sentences.push(peak_sentence(&sh, unit));
        out.sentences.extend(speedup_sentence(&sh, ctx));
    }
    if let Some(s) = little_sentence(&out, &sh.first, ctx, unit) {
        out.sentences.push(s);
    }
    usl_part(&mut out, &pts, &sh, unit);
    #[cfg(test)]
    tests::assert_plain(&out.sentences);
    out
}

/// A line's analysis before anything is read from its points.
fn empty_curve(series: &str, op: &str, unit: &str, all: &[CurvePoint]) -> CurveAnalysis {
    CurveAnalysis {
        series: series.to_string(),
        op: op.to_string(),
        unit: unit.to_string(),
        points: all.to_vec(),
        peak: 0.0,
        peak_threads: 0,
        enough_threads: 0,
        enough_value: 0.0,
        usl: None,
        usl_shown: false,
        little: Vec::new(),
        hidden_up_to: None,
        limit: None,
        noise: 0.0,
        verdict: Verdict {
            kind: VerdictKind::AllFailed,
            text: String::new(),
            limiter: None,
            evidence: Vec::new(),
            supported: false,
        },
        sentences: Vec::new(),
    }
}

/// What a line's good points show, read once for the verdict rules
/// (docs/analysis.md, "One verdict per line").
struct Shape {
    /// The fewest workers (F), the most (L), the highest (P).
    first: CurvePoint,
    last: CurvePoint,
    peak: CurvePoint,
    /// The knee (K): the first point from which every point stays near
    /// the peak, and its index.
    knee: CurvePoint,
    knee_i: usize,
    /// P ÷ F.
    gain: f64,
    /// The largest relative half-width of the intervals, and as "±x%".
    noise_rel: f64,
    noise: String,
    /// "within noise: ±x%", or with one repetition at some point, where
    /// an interval has no width to show, "no noise estimate: one
    /// repetition" (a "±0%" there claimed a noise that was not measured).
    within: String,
    /// Every point has at least two good repetitions.
    supported: bool,
    /// Worker counts of the line outside F..L whose every repetition
    /// failed: fewer than F, more than L (F and L are then not the fewest
    /// or most tested).
    failed_below: Option<u32>,
    failed_beyond: Option<u32>,
    /// Little's-law time per operation at F and at L.
    w_first: Option<f64>,
    w_last: Option<f64>,
    /// Highest at F, and L clearly and well below it.
    falls_from_first: bool,
    /// L clearly and well below P.
    falls: bool,
    /// Rule 2.
    serialised: bool,
}

impl Shape {
    /// Reads `pts`: the good points, sorted by workers, not empty.
    fn of(pts: &[CurvePoint]) -> Shape {
        let peak = pts
            .iter()
            .max_by(|a, b| a.value.total_cmp(&b.value))
            .cloned()
            .expect("non-empty");
        let noise_rel = pts
            .iter()
            .map(|p| p.interval().half_width_rel(p.value))
            .fold(0.0, f64::max);
        let first = pts[0].clone();
        let last = pts.last().cloned().expect("non-empty");
        let gain = if first.value > 0.0 {
            peak.value / first.value
        } else {
            0.0
        };
        // The knee: the first point from which every point stays near the peak.
        let knee_i = (0..pts.len())
            .find(|&i| {
                pts[i..]
                    .iter()
                    .all(|p| p.value >= ENOUGH_SHARE * peak.value)
            })
            .unwrap_or(pts.len() - 1);
        // Highest at the fewest workers, and the most workers clearly below:
        // a fall from the start, not "no clear difference".
        let falls_from_first = peak.threads == first.threads
            && clearly_above(&first, &last)
            && last.value < ENOUGH_SHARE * peak.value;
        // Beyond noise, the most workers are well below the peak.
        let falls = clearly_above(&peak, &last) && last.value < ENOUGH_SHARE * peak.value;
        let supported = pts.iter().all(|p| p.reps >= 2);
        let noise = format!("±{:.0}%", noise_rel * 100.0);
        Shape {
            serialised: serialised(pts, &first, &last, &peak, falls),
            knee: pts[knee_i].clone(),
            knee_i,
            gain,
            noise_rel,
            within: if supported {
                format!("within noise: {noise}")
            } else {
                NO_NOISE_ESTIMATE.into()
            },
            noise,
            supported,
            failed_below: None,
            failed_beyond: None,
            w_first: first.little_s(),
            w_last: last.little_s(),
            falls_from_first,
            falls,
            first,
            last,
            peak,
        }
    }

    /// How many times the fewest workers the most are.
    fn more(&self) -> f64 {
        self.last.threads as f64 / self.first.threads.max(1) as f64
    }
}

/// What stands for the noise where a point has one repetition.
const NO_NOISE_ESTIMATE: &str = "no noise estimate: one repetition";

/// Whether every point given has an interval over two or more good
/// repetitions: only then may a sentence judge their gap against the
/// noise ("clearly", "beyond noise", "within noise").
fn noise_known(ps: &[&CurvePoint]) -> bool {
    ps.iter().all(|p| p.reps >= 2)
}

/// The measured gap of `a` to `b` alone: "12% above", "3% below".
fn gap(a: f64, b: f64) -> String {
    if b <= 0.0 {
        return "not comparable".into();
    }
    let r = a / b - 1.0;
    format!(
        "{:.0}% {}",
        r.abs() * 100.0,
        if r >= 0.0 { "above" } else { "below" }
    )
}

/// Fewest operations at a point for its p99 to count as evidence of a
/// queue: the top 1% is then at least 10 operations, not one slow one.
pub const P99_MIN_OPS: u64 = 1_000;

/// Whether a point's p99 rests on enough operations (an unknown count,
/// 0, in records older than `ops_total`, is taken as enough).
fn p99_counts(p: &CurvePoint) -> bool {
    p.ops_total == 0 || p.ops_total >= P99_MIN_OPS
}

/// Rule 2, serialised: with at least twice the workers the line never
/// gains what two requests served at once would give (centrally at most
/// SERIAL_GAIN, and beyond noise below double: each interval's top under
/// twice the bottom of the fewest workers'), does not fall, and the
/// measured latency (where there is one) grows with the workers: requests
/// wait behind one another.
fn serialised(
    pts: &[CurvePoint],
    first: &CurvePoint,
    last: &CurvePoint,
    peak: &CurvePoint,
    falls: bool,
) -> bool {
    let below_double = pts
        .iter()
        .filter(|p| p.threads >= 2 * first.threads)
        .all(|p| p.interval().hi < 2.0 * first.interval().lo);
    let more = last.threads as f64 / first.threads.max(1) as f64;
    let growth = |a: f64, b: f64| (a > 0.0 && b > 0.0).then(|| b / a);
    // A growth that every repetition shows: the lowest at b over the
    // highest at a (the means where the repetitions are not known). A mean
    // p99 grown by a few disturbed repetitions is not a queue: tmpfs
    // deletes, p99 7.37 µs → 77.9 µs from 1 to 4 workers, came from two
    // repetitions of 105 and 121 µs while the third measured 7.33 µs at
    // 1.66× the rate of one worker.
    let every = |a: f64, ra: Option<(f64, f64)>, b: f64, rb: Option<(f64, f64)>| {
        growth(ra.map_or(a, |r| r.1), rb.map_or(b, |r| r.0))
    };
    let p50_growth = |a: &CurvePoint, b: &CurvePoint| {
        every(
            a.lat_p50_us,
            a.lat_p50_range_us,
            b.lat_p50_us,
            b.lat_p50_range_us,
        )
    };
    // A p99 is evidence only where its top 1% holds several operations.
    let p99_growth = |a: &CurvePoint, b: &CurvePoint| {
        (p99_counts(a) && p99_counts(b))
            .then(|| {
                every(
                    a.lat_p99_us,
                    a.lat_p99_range_us,
                    b.lat_p99_us,
                    b.lat_p99_range_us,
                )
            })
            .flatten()
    };
    let queues = match (p50_growth(first, last), p99_growth(first, last)) {
        (None, None) => true,
        (m, t) => m.unwrap_or(0.0).max(t.unwrap_or(0.0)) >= 1.0 + SERIAL_LATENCY * (more - 1.0),
    };
    // The latency proof, which throughput noise cannot blur: at the first
    // count of 2·F workers or more the measured median (or p99) grew at
    // least SERIAL_QUEUE of the workers' growth (a server taking two at a
    // time keeps the 2-worker latency where it was; one at a time doubles
    // it), and at L it grew as `queues` asks.
    let queued_at_double = first.lat_p50_us > 0.0
        && pts
            .iter()
            .find(|p| p.threads >= 2 * first.threads)
            .is_some_and(|p| {
                let m = p50_growth(first, p).unwrap_or(0.0);
                let t = p99_growth(first, p).unwrap_or(0.0);
                m.max(t) >= SERIAL_QUEUE * p.threads as f64 / first.threads.max(1) as f64
            });
    let small_gain = peak.value <= SERIAL_GAIN * first.value
        || (queued_at_double && peak.interval().lo <= SERIAL_GAIN * first.interval().hi);
    // A one-at-a-time server may lose a little to the extra clients past
    // its peak; that is still no scaling as long as the latency proves the
    // queue and the most workers keep at least SERIAL_FALL of the fewest
    // (seen: 23.4, 25.7, 27.0, 23.7 MiB/s at 1, 2, 4, 8 workers while the
    // median latency went 2.5 → 14 ms; and 27.5 → 24.4 MiB/s, 11 % below,
    // from 1 to 8 workers on a quiet machine).
    let mild_fall = last.interval().hi >= SERIAL_FALL * first.interval().lo;
    last.threads >= 2 * first.threads
        && small_gain
        && (!falls || (mild_fall && queued_at_double))
        && (below_double || queued_at_double)
        && queues
}

/// " (Little's law: a → b)" when both times are known.
fn little_span(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!(" (Little's law: {} → {})", dur(a), dur(b)),
        _ => String::new(),
    }
}

/// The one verdict of a line: the first rule that applies
/// (docs/analysis.md, "One verdict per line").
fn verdict(pts: &[CurvePoint], sh: &Shape, ctx: &Context, u: &str) -> Verdict {
    let (first, last, peak) = (&sh.first, &sh.last, &sh.peak);
    let mut v = Verdict {
        kind: VerdictKind::Uncertain,
        text: String::new(),
        limiter: None,
        evidence: vec![ev("fewest workers", first), ev("peak", peak)],
        supported: sh.supported,
    };
    // What limits the most workers, when that is the CPUs.
    let cpu_at_most = limiter(std::slice::from_ref(last), ctx);
    if pts.len() == 1 {
        v.kind = VerdictKind::SinglePoint;
        v.evidence = vec![ev("only point", first)];
        v.text = format!(
            "{} {u} at {} ({}) — one worker count only; sweep several (e.g. --threads 1..64x2) to see how it scales.",
            num(first.value),
            workers_word(first.threads),
            pm(first)
        );
    } else if cpu_at_most.limit == Limit::Cpu {
        // The CPUs are full at the most workers: whatever the shape, more
        // workers than CPUs add no capacity.
        cpu_bound(&mut v, sh, cpu_at_most, ctx, u);
    } else if sh.serialised {
        serialised_verdict(&mut v, pts, sh, ctx, u);
    } else if !clearly_above(peak, first) && !sh.falls_from_first {
        let other = if peak.threads == first.threads {
            last
        } else {
            peak
        };
        v.text = if noise_known(&[first, other]) {
            format!(
            "No clear difference between {} and {} workers ({}); run more --reps to tell whether workers help.",
            first.threads, other.threads, sh.within
            )
        } else {
            // One repetition: the gap is a measurement, its meaning is not.
            format!(
                "No verdict on whether workers help: {} {u} at {} and {} at {} ({}; {NO_NOISE_ESTIMATE} at some points, so the gap cannot be told from noise); run with --reps 3 or more.",
                num(first.value),
                workers_word(first.threads),
                num(other.value),
                workers_word(other.threads),
                gap(other.value, first.value)
            )
        };
    } else if peak.threads == last.threads && clearly_above(last, &pts[pts.len() - 2]) {
        rising(&mut v, &pts[pts.len() - 2], sh, u);
    } else if sh.falls {
        falls_verdict(&mut v, pts, sh, ctx, u);
    } else {
        flat_verdict(&mut v, pts, sh, ctx, u);
    }
    v
}

/// Rule 1b: the CPUs are the limit at the most workers.
fn cpu_bound(v: &mut Verdict, sh: &Shape, cpu: Limiter, ctx: &Context, u: &str) {
    let (first, last, peak) = (&sh.first, &sh.last, &sh.peak);
    v.kind = VerdictKind::CpuBound;
    let shape = if sh.falls && noise_known(&[peak, last]) {
        format!(
            "throughput peaks at {} ({} {u}) and falls beyond noise to {} at {}",
            workers_word(peak.threads),
            num(peak.value),
            num(last.value),
            workers_word(last.threads)
        )
    } else if sh.falls {
        format!(
            "throughput peaks at {} ({} {u}) and falls to {} at {} ({}; {NO_NOISE_ESTIMATE})",
            workers_word(peak.threads),
            num(peak.value),
            num(last.value),
            workers_word(last.threads),
            gap(last.value, peak.value)
        )
    } else if clearly_above(peak, first) {
        format!(
            "throughput rises {}× from {} ({} {u}) to {} {u} at {}",
            num(sh.gain),
            workers_word(first.threads),
            num(first.value),
            num(peak.value),
            workers_word(peak.threads)
        )
    } else if noise_known(&[first, last]) {
        format!(
            "no clear difference between {} ({} {u}) and {} ({}; {})",
            workers_word(first.threads),
            num(first.value),
            workers_word(last.threads),
            num(last.value),
            sh.within
        )
    } else {
        format!(
            "{} {u} at {} and {} at {} ({}; {NO_NOISE_ESTIMATE})",
            num(first.value),
            workers_word(first.threads),
            num(last.value),
            workers_word(last.threads),
            gap(last.value, first.value)
        )
    };
    let wanted = last
        .resources
        .as_ref()
        .and_then(|r| {
            let daemon = r
                .fuse
                .as_ref()
                .and_then(|f| f.daemon.as_ref())
                .map_or(0.0, |d| d.cores);
            let cpus = if r.cpus > 0 { r.cpus } else { ctx.cpus.max(1) };
            r.self_cpu_wait.map(|w| {
                format!(
                    " {} threads were running or waiting for a CPU {:.2} at a time on average, for {cpus} {}",
                    if last.ranks > 1 { "rank 0's" } else { "ioscale's" },
                    r.self_cores + daemon + w,
                    if cpus == 1 { "CPU" } else { "CPUs" }
                )
            })
        })
        .unwrap_or_default();
    v.text = format!(
        "CPU-bound: {shape}. At {}{wanted}{} the limit is {}. Workers beyond the CPUs add no capacity (with other work running, they only win a larger share of the CPUs).",
        workers_word(last.threads),
        if wanted.is_empty() { "" } else { ";" },
        cpu.figure
    );
    if peak.threads != last.threads {
        v.evidence.push(ev("most workers", last));
    }
    v.limiter = Some(cpu);
}

/// Rule 2: requests served one at a time.
fn serialised_verdict(v: &mut Verdict, pts: &[CurvePoint], sh: &Shape, ctx: &Context, u: &str) {
    let (first, last) = (&sh.first, &sh.last);
    let l = limiter(pts, ctx);
    v.kind = VerdictKind::Serialised;
    let at = match l.limit {
        Limit::Server => " at the server",
        Limit::Process => " at the FUSE daemon",
        Limit::Device => " at the device",
        Limit::Cpu => " on the CPUs",
        Limit::NotMeasured | Limit::Unidentified => "",
    };
    let mut measured = if first.lat_p50_us > 0.0 && last.lat_p50_us > 0.0 {
        format!(
            "; measured median {} → {}",
            dur(first.lat_p50_us * 1e-6),
            dur(last.lat_p50_us * 1e-6)
        )
    } else {
        String::new()
    };
    if first.lat_p99_us > 0.0 && last.lat_p99_us > 0.0 && p99_counts(first) && p99_counts(last) {
        measured.push_str(&format!(
            ", p99 {} → {}",
            dur(first.lat_p99_us * 1e-6),
            dur(last.lat_p99_us * 1e-6)
        ));
    }
    let growth = match (sh.w_first, sh.w_last) {
        (Some(a), Some(b)) => format!(" (Little's law: {} → {}{measured})", dur(a), dur(b)),
        _ if !measured.is_empty() => format!(" ({})", &measured[2..]),
        _ => String::new(),
    };
    let more = sh.more();
    v.text = format!(
        "No scaling: requests are served one at a time, serialised{at}. {} {u} at {} and {} at {}, never more than {}× the first with {}× the workers ({}), while each request's time grows in step with the workers{growth}. Where: {}.",
        num(first.value),
        workers_word(first.threads),
        num(last.value),
        workers_word(last.threads),
        num(sh.gain),
        if more.fract() == 0.0 {
            format!("{more:.0}")
        } else {
            num(more)
        },
        sh.within,
        l.figure
    );
    v.evidence.push(ev("most workers", last));
    v.limiter = Some(l);
}

/// Rules 3 and 4: the most workers are the highest, clearly above `prev`
/// (the point before them).
fn rising(v: &mut Verdict, prev: &CurvePoint, sh: &Shape, u: &str) {
    let (first, last) = (&sh.first, &sh.last);
    let steady = matches!((sh.w_first, sh.w_last), (Some(a), Some(b)) if b <= LATENCY_STEADY * a);
    v.evidence.push(ev("next to most workers", prev));
    if steady {
        v.kind = VerdictKind::LatencyBound;
        v.text = format!(
            "Latency-bound: each request takes about the same time at every worker count{}, so throughput grows with the workers: {} {u} at {}, {}× {}. More workers help up to at least {} ({}",
            little_span(sh.w_first, sh.w_last),
            num(last.value),
            workers_word(last.threads),
            num(sh.gain),
            workers_word(first.threads),
            last.threads,
            match sh.failed_beyond {
                Some(n) => format!(
                    "the most measured: every repetition failed at {}).",
                    workers_word(n)
                ),
                None => "the most tested); try more.".into(),
            }
        );
    } else {
        v.kind = VerdictKind::Rising;
        v.text = format!(
            "Still rising at {} ({} {u}, {}× {}, {} {} at {}{}), though each request takes longer{}: requests start to queue. {}",
            workers_word(last.threads),
            num(last.value),
            num(sh.gain),
            workers_word(first.threads),
            if noise_known(&[last, prev]) {
                "clearly above".to_string()
            } else {
                gap(last.value, prev.value)
            },
            num(prev.value),
            workers_word(prev.threads),
            if noise_known(&[last, prev]) {
                String::new()
            } else {
                format!(", {NO_NOISE_ESTIMATE}")
            },
            little_span(sh.w_first, sh.w_last),
            match sh.failed_beyond {
                Some(n) => format!(
                    "Where it peaks is not known: every repetition failed at {}.",
                    workers_word(n)
                ),
                None => "Try more workers to find the peak.".into(),
            }
        );
    }
}

/// Rule 5: the most workers clearly and well below the peak.
fn falls_verdict(v: &mut Verdict, pts: &[CurvePoint], sh: &Shape, ctx: &Context, u: &str) {
    let (first, last, peak) = (&sh.first, &sh.last, &sh.peak);
    let from = pts
        .iter()
        .position(|p| p.threads == peak.threads)
        .unwrap_or(0);
    let l = limiter(&pts[from..], ctx);
    v.kind = VerdictKind::Falls;
    v.evidence.push(ev("most workers", last));
    let peaks = if sh.falls_from_first {
        format!(
            "Highest at the fewest workers {}, {} ({} {u})",
            match sh.failed_below {
                Some(n) => format!("measured (every repetition failed at {})", workers_word(n)),
                None => "tested".into(),
            },
            workers_word(peak.threads),
            num(peak.value)
        )
    } else {
        format!(
            "Peaks at {} ({} {u}, {}× {})",
            workers_word(peak.threads),
            num(peak.value),
            num(sh.gain),
            workers_word(first.threads)
        )
    };
    let known = noise_known(&[peak, last]);
    v.text = format!(
        "{peaks}, then falls{} to {} at {} ({:.0}% below the peak{}): more workers cost more than they bring. At the peak: {}.",
        if known { " beyond noise" } else { "" },
        num(last.value),
        workers_word(last.threads),
        (1.0 - last.value / peak.value) * 100.0,
        if known {
            String::new()
        } else {
            format!("; {NO_NOISE_ESTIMATE}")
        },
        l.figure
    );
    v.limiter = Some(l);
}

/// Rules 6 and 7: the line rose and did not fall beyond noise: saturated
/// from the knee when that can be shown, else why it cannot.
fn flat_verdict(v: &mut Verdict, pts: &[CurvePoint], sh: &Shape, ctx: &Context, u: &str) {
    let (first, last, peak, knee, knee_i) = (&sh.first, &sh.last, &sh.peak, &sh.knee, sh.knee_i);
    let (noise, within) = (&sh.noise, &sh.within);
    if knee_i == pts.len() - 1 && peak.threads != last.threads {
        v.evidence.push(ev("most workers", last));
        v.text = format!(
            "Uneven: the peak is {} {u} at {}, then lower and back to {} at {} ({within}): cannot tell where it flattens; run more --reps.",
            num(peak.value),
            workers_word(peak.threads),
            num(last.value),
            workers_word(last.threads)
        );
    } else if knee_i == pts.len() - 1 {
        // The peak is the last point, not clearly above the one before.
        let prev = &pts[pts.len() - 2];
        v.evidence.push(ev("next to most workers", prev));
        v.text = if noise_known(&[last, prev]) {
            format!(
                "Highest at {} ({} {u}), but not clearly above {} at {} ({within}): cannot tell whether more workers help; run more --reps.",
                workers_word(last.threads),
                num(last.value),
                num(prev.value),
                workers_word(prev.threads)
            )
        } else {
            format!(
                "Highest at {} ({} {u}), {} {} at {} ({NO_NOISE_ESTIMATE} at some points, so the gap cannot be told from noise): cannot tell whether more workers help; run with --reps 3 or more.",
                workers_word(last.threads),
                num(last.value),
                gap(last.value, prev.value),
                num(prev.value),
                workers_word(prev.threads)
            )
        };
    } else if pts[knee_i..]
        .iter()
        .any(|p| p.interval().half_width_rel(p.value) > PLATEAU_NOISE)
    {
        let k = pts[knee_i..]
            .iter()
            .map(|p| p.interval().half_width_rel(p.value))
            .fold(0.0, f64::max);
        v.evidence.push(ev("first near the peak", knee));
        v.text = format!(
            "Rises {}× from {} to {} {u} at {}, but the points from {} on are too noisy (±{:.0}%) to tell whether it flattens or keeps rising; run more --reps.",
            num(sh.gain),
            workers_word(first.threads),
            num(peak.value),
            workers_word(peak.threads),
            workers_word(knee.threads),
            k * 100.0
        );
    } else if knee_i > 0 && !clearly_above(peak, &pts[knee_i - 1]) {
        let before = &pts[knee_i - 1];
        v.evidence.push(ev("before the flat part", before));
        v.text = format!(
            "Rises {}× from {} to the peak at {} ({} {u}), but {} at {} is {}: cannot tell where it flattens; run more --reps.",
            num(sh.gain),
            workers_word(first.threads),
            workers_word(peak.threads),
            num(peak.value),
            num(before.value),
            workers_word(before.threads),
            if noise_known(&[peak, before]) {
                format!("within noise of it ({noise})")
            } else {
                // Below the knee, so more than 10% under the peak: what
                // keeps it from being clearly below is the interval of the
                // one of the two measured more than once ("within 5% of
                // it" was said here, and was never true).
                format!(
                    "{} it, inside the interval of the one of them with repetitions (peak {}, {} workers {})",
                    gap(before.value, peak.value),
                    pm(peak),
                    before.threads,
                    pm(before)
                )
            }
        );
    } else {
        let l = limiter(&pts[knee_i..], ctx);
        v.kind = VerdictKind::Saturated;
        v.evidence.push(ev("knee", knee));
        v.text = format!(
            "More workers help until {} ({} {u}, {}× {}); from there it stays within {:.0}% of the peak ({} {u} at {}{}): limited by {}.",
            knee.threads,
            num(knee.value),
            num(if first.value > 0.0 { knee.value / first.value } else { 0.0 }),
            workers_word(first.threads),
            (1.0 - ENOUGH_SHARE) * 100.0,
            num(peak.value),
            workers_word(peak.threads),
            if sh.supported { format!(", {}", pm(peak)) } else { String::new() },
            l.figure
        );
        v.limiter = Some(l);
    }
}

/// The measured fact the verdict rests on, with its interval: the peak,
/// against the fewest workers (said once when the peak is there).
fn peak_sentence(sh: &Shape, unit: &str) -> String {
    let (peak, first) = (&sh.peak, &sh.first);
    let ci = match peak.ci {
        Some(c) if c.n > 1 => format!(" (95% CI {}–{})", num(c.lo), num(c.hi)),
        _ => String::new(),
    };
    if peak.threads == first.threads {
        format!(
            "Peak measured: {} {unit}{ci} at {}, the fewest workers tested.",
            num(peak.value),
            workers_word(peak.threads)
        )
    } else {
        format!(
            "Peak measured: {} {unit}{ci} at {}, against {} {unit} at {}.",
            num(peak.value),
            workers_word(peak.threads),
            num(first.value),
            workers_word(first.threads)
        )
    }
}

/// A speedup that more workers cannot give by computing, named: beyond
/// the workers' own growth (superlinear: the points were not measured
/// alike), or beyond what the CPUs could give if the workers computed
/// (60× from 16 workers on 2 CPUs), explained by the waits the CPU
/// figures show, or flagged where they show the CPUs full.
fn speedup_sentence(sh: &Shape, ctx: &Context) -> Option<String> {
    let (first, peak) = (&sh.first, &sh.peak);
    if peak.threads <= first.threads || !clearly_above(peak, first) {
        return None;
    }
    let more = peak.threads as f64 / first.threads.max(1) as f64;
    let gain = sh.gain;
    let head = format!(
        "The rate grew {}× from {} to {}, with {}× the workers",
        num(gain),
        workers_word(first.threads),
        workers_word(peak.threads),
        num(more)
    );
    if peak.interval().lo > more * first.interval().hi * (1.0 + MIN_EFFECT) {
        return Some(format!(
            "{head}: more than the workers alone can give, so the points were not measured alike{}. The fewest workers were held back by something the others were not (a cold cache, a disturbed repetition), or the later points were served from a cache.",
            if noise_known(&[first, peak]) {
                String::new()
            } else {
                format!(" ({NO_NOISE_ESTIMATE} at some points)")
            }
        ));
    }
    let cpus = peak
        .resources
        .as_ref()
        .map(|r| r.cpus)
        .filter(|&c| c > 0)
        .unwrap_or(ctx.cpus)
        .max(1);
    // Computing workers on `cpus` CPUs gain at most cpus ÷ the CPUs the
    // fewest workers could already use.
    let bound = cpus as f64 / first.threads.min(cpus).max(1) as f64;
    if gain <= bound * (1.0 + MIN_EFFECT) {
        return None;
    }
    let cpu_word = if cpus == 1 { "CPU" } else { "CPUs" };
    // What the CPUs could carry at the fewest workers' CPU time per
    // operation (ioscale's, from every phase's own CPU time).
    let per_op = first.cpu_s_per_op;
    if per_op <= 0.0 {
        return Some(format!(
            "{head}, on {cpus} {cpu_word}: more than the {cpu_word} could give if the workers were computing, and no CPU time was recorded to tell why."
        ));
    }
    let carry = cpus as f64 / per_op;
    if peak.iops > carry * (1.0 + MIN_EFFECT) {
        return Some(format!(
            "{head}, on {cpus} {cpu_word}: at the {} of CPU per operation of {}, the {cpu_word} carry at most {} operations/s, yet {} made {}. Each operation cost less CPU with more workers (a cache, or batching), so the points are not alike.",
            dur(per_op),
            workers_word(first.threads),
            num(carry),
            workers_word(peak.threads),
            num(peak.iops)
        ));
    }
    Some(format!(
        "{head}, on {cpus} {cpu_word}: more than the {cpu_word} could give if the workers were computing. They were mostly waiting for replies: at {} ioscale used {:.2} cores, {} of CPU per operation, so the {cpu_word} could carry {} operations/s, and more workers overlap more waits.",
        workers_word(first.threads),
        first.cpu_busy,
        dur(per_op),
        num(carry)
    ))
}

/// Little's law at the fewest workers, with the measured latency beside it.
fn little_sentence(
    out: &CurveAnalysis,
    first: &CurvePoint,
    ctx: &Context,
    u: &str,
) -> Option<String> {
    let l0 = out.little.first().copied()?;
    // One worker keeps `depth` requests in flight, each taking W.
    let depth = first.depth.max(1);
    let per_worker = depth as f64 / l0.latency_s;
    // The data rate per worker, for a line counted in data units only (a
    // create of 4 KiB files is counted in files/s).
    let data = if first.bytes_per_op > 0.0 && !first.counts_files {
        format!(
            " ({} {u} at {} per operation)",
            num(per_worker * first.bytes_per_op / 1_048_576.0
                * if u == "MB/s" { 1_048_576.0 / 1e6 } else { 1.0 }),
            bytes(first.bytes_per_op)
        )
    } else {
        String::new()
    };
    let measured = if first.lat_p50_us > 0.0 {
        format!("; the measured median is {}", dur(first.lat_p50_us * 1e-6))
    } else {
        String::new()
    };
    // A metadata line with traced requests is explained by every opcode;
    // otherwise the data requests (or why they were not measured).
    let meta = first
        .counts_files
        .then(|| crate::fusemeta::sentence(&out.op, first))
        .flatten();
    let fuse = if !ctx.fs_type.starts_with("fuse") {
        String::new()
    } else if let Some(m) = meta {
        m
    } else {
        fuse_requests_sentence(&out.op, first, l0.latency_s)
    };
    Some(format!(
        "Per-operation latency ≈ {} at {} (Little's law: {} ÷ operations per second{measured}), so one worker{} cannot exceed {} operations/s{data}.{fuse}",
        dur(l0.latency_s),
        workers_word(l0.threads),
        if depth > 1 {
            format!(
                "requests in flight, {} × {depth} deep = {},",
                workers_word(l0.threads),
                first.in_flight()
            )
        } else {
            "workers".into()
        },
        if depth > 1 {
            format!(" keeping {depth} in flight")
        } else {
            String::new()
        },
        num(per_worker),
    ))
}

/// The FUSE requests that carried a line's data, summed over a point's
/// traced phases.
struct DataRequests {
    count: u64,
    bytes: u64,
    max: u64,
    lost: u64,
    /// Requests whose reply was traced, and their summed send-to-reply time.
    answered: u64,
    time_s: f64,
    /// The opcodes counted.
    names: &'static str,
}

/// The data requests of `op` at point `p`, or why they were not traced.
fn fuse_data_requests(op: &str, p: &CurvePoint) -> Result<DataRequests, String> {
    let f = p
        .resources
        .as_ref()
        .and_then(|r| r.fuse.as_ref())
        .ok_or_else(|| "no resource measurement of the FUSE connection".to_string())?;
    let Some(r) = f.requests.as_ref() else {
        return Err(f
            .requests_note
            .clone()
            .unwrap_or_else(|| "not traced".into()));
    };
    let (w, rd) = (&r.write, &r.read);
    let mut d = DataRequests {
        count: w.count,
        bytes: w.bytes,
        max: w.max_bytes,
        lost: r.lost_events,
        answered: w.answered,
        time_s: w.time_s,
        names: "FUSE_WRITE",
    };
    match op {
        "rw" | "randrw" => {
            // Saturating: the counts come from a record read back.
            d.count = d.count.saturating_add(rd.count);
            d.bytes = d.bytes.saturating_add(rd.bytes);
            d.max = d.max.max(rd.max_bytes);
            d.answered = d.answered.saturating_add(rd.answered);
            d.time_s += rd.time_s;
            d.names = "FUSE_WRITE and FUSE_READ";
        }
        "read" | "randread" => {
            d.count = rd.count;
            d.bytes = rd.bytes;
            d.max = rd.max_bytes;
            d.answered = rd.answered;
            d.time_s = rd.time_s;
            d.names = "FUSE_READ";
        }
        _ => {}
    }
    Ok(d)
}

/// On a FUSE target, what one operation became at the daemon: with the
/// kernel's requests traced, how many requests of what size carried it and
/// the time per request; without, that the size was not measured and why.
fn fuse_requests_sentence(op: &str, first: &CurvePoint, latency_s: f64) -> String {
    let bpo = first.bytes_per_op;
    if bpo <= 0.0 {
        return String::new();
    }
    match fuse_data_requests(op, first) {
        Ok(d) if d.count > 0 && d.bytes > 0 => {
            let mean = d.bytes as f64 / d.count as f64;
            let per_op = bpo / mean;
            let lost = crate::fusemeta::lost_note(d.lost);
            let kernel = if d.answered > 0 {
                format!(
                    "; the kernel measured {} per request from sending it to the reply",
                    dur(d.time_s / d.answered as f64)
                )
            } else {
                String::new()
            };
            format!(
                " Each {} {op} reached the FUSE daemon as {per_op:.1} requests of {} on average (measured: {} {} requests in the traced phases, the largest {}{lost}): per request ≈ {} if they are served one after another{kernel}.",
                bytes(bpo),
                bytes(mean),
                d.count,
                d.names,
                bytes(d.max as f64),
                dur(latency_s / per_op)
            )
        }
        Ok(d) => format!(
            " No {} request was traced while the phase ran: the page cache served its data, so the time per request is not known.",
            d.names
        ),
        Err(why) if bpo > 131_072.0 => format!(
            " On FUSE each {} system call reaches the daemon as several requests of at most the negotiated max_write (128 KiB on older kernels, up to 1 MiB), so the time per kernel request is this divided by that count; that count was not measured ({why}).",
            bytes(bpo)
        ),
        Err(why) => format!(" The FUSE request size was not measured ({why})."),
    }
}

/// The USL fit, and its sentence: quoted only when it is worth it, else
/// why not.
fn usl_part(out: &mut CurveAnalysis, pts: &[CurvePoint], sh: &Shape, u: &str) {
    let fit_pts: Vec<(f64, f64)> = pts.iter().map(|p| (p.threads as f64, p.value)).collect();
    let mut distinct: Vec<u32> = pts.iter().map(|p| p.threads).collect();
    distinct.dedup();
    out.usl = usl::fit(&fit_pts);
    if pts.len() > 1 {
        let s = match &out.usl {
            _ if distinct.len() < USL_MIN_COUNTS => format!(
                "No scalability (USL) fit shown: it needs at least {USL_MIN_COUNTS} worker counts, this line has {}.",
                distinct.len()
            ),
            None => "No scalability (USL) fit shown: no fit with σ, κ ≥ 0 exists (the curve rises faster than linearly: a cache warming up, or noise).".to_string(),
            Some(f) if f.r2 < USL_MIN_R2 => format!(
                "No scalability (USL) fit shown: the best fit with σ, κ ≥ 0 explains the curve poorly (R² = {:.2} < {USL_MIN_R2}).",
                f.r2
            ),
            Some(f) => {
                out.usl_shown = true;
                usl_sentence(f, u, sh)
            }
        };
        out.sentences.push(s);
    }
}

/// A coefficient with enough digits to tell it from zero.
fn coef(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x >= 0.01 {
        format!("{x:.3}")
    } else {
        format!("{x:.2e}")
    }
}

/// The fit's sentence. A model is quoted only inside the range it was
/// fitted on (from the fewest to the most workers measured, up to the
/// highest rate measured); a figure beyond it is marked as an
/// extrapolation with its distance ("80× the highest rate measured"), and
/// none is the line's headline: the verdict is read from the points.
fn usl_sentence(f: &UslFit, u: &str, sh: &Shape) -> String {
    let (first, last, peak) = (&sh.first, &sh.last, &sh.peak);
    let head = format!(
        "USL fit (Gunther) over {} points from {} to {} workers: σ = {}, κ = {}, R² = {:.3}",
        f.points,
        first.threads,
        last.threads,
        coef(f.sigma),
        coef(f.kappa),
        f.r2
    );
    let most = last.threads as f64;
    // How far a rate lies beyond the highest measured one.
    let beyond_rate = |c: f64| {
        format!(
            "an extrapolation, {}× the highest rate measured ({} {u} at {}), not a measurement",
            num(c / peak.value),
            num(peak.value),
            workers_word(peak.threads)
        )
    };
    // A rate the measured points reach: within 10 % of the highest.
    let reached = |c: f64| c <= peak.value / ENOUGH_SHARE;
    match (f.peak_threads, f.ceiling) {
        (_, Some(c)) if c < peak.value * 0.98 => format!(
            "{head}. Its ceiling, {} {u}, is below the measured peak of {} {u}, so no peak or ceiling is read from it.",
            num(c),
            num(peak.value)
        ),
        (Some(n), Some(c)) if n <= most && reached(c) => format!(
            "{head}. It puts the peak inside the range measured, at N* = √[(1−σ)/κ] ≈ {} workers with ≈ {} {u}.",
            num(n),
            num(c)
        ),
        (Some(n), Some(c)) => format!(
            "{head}. Beyond the range it was fitted on, it would put a peak at N* = √[(1−σ)/κ] ≈ {} workers with ≈ {} {u}: {}× the most workers measured and {}.",
            num(n),
            num(c),
            num(n / most),
            beyond_rate(c)
        ),
        (None, Some(c)) if f.kappa == 0.0 && reached(c) => format!(
            "{head}. With κ = 0 it has no retrograde region, and it levels off towards λ/σ ≈ {} {u}, a rate the measured points reach.",
            num(c)
        ),
        (None, Some(c)) if f.kappa == 0.0 => format!(
            "{head}. With κ = 0 it has no retrograde region; the level it tends to, λ/σ ≈ {} {u}, is {}.",
            num(c),
            beyond_rate(c)
        ),
        (None, Some(c)) => format!(
            "{head}. With σ ≥ 1 it does not rise: its ceiling is ≈ {} {u}.",
            num(c)
        ),
        _ => format!(
            "{head}. Linear from {} to {} workers; it says nothing beyond them.",
            first.threads, last.threads
        ),
    }
}

/// Compares two lines of the same operation at their common worker counts,
/// with their intervals.
pub fn compare_curves(a: &CurveAnalysis, b: &CurveAnalysis) -> Option<Comparison> {
    let common: Vec<(CurvePoint, CurvePoint)> = a
        .points
        .iter()
        .filter(|p| p.reps > 0)
        .filter_map(|p| {
            b.points
                .iter()
                .find(|q| q.threads == p.threads && q.reps > 0)
                .map(|q| (p.clone(), q.clone()))
        })
        .collect();
    if common.is_empty() {
        return None;
    }
    // +1: a clearly faster, -1: b clearly faster, 0: within noise.
    let st: Vec<i8> = common
        .iter()
        .map(|(x, y)| {
            if clearly_above(x, y) {
                1
            } else if clearly_above(y, x) {
                -1
            } else {
                0
            }
        })
        .collect();
    let noise = common
        .iter()
        .flat_map(|(x, y)| {
            [
                x.interval().half_width_rel(x.value),
                y.interval().half_width_rel(y.value),
            ]
        })
        .fold(0.0f64, f64::max);
    let supported = common.iter().all(|(x, y)| x.reps >= 2 && y.reps >= 2);
    let caveat = if supported {
        String::new()
    } else {
        " (one repetition at some points: not supported by repetitions; run with --reps 3 or more)"
            .into()
    };
    let (sentence, catch_up) = compare_sentence(a, b, &common, &st, noise, &caveat);
    #[cfg(test)]
    tests::assert_plain(std::slice::from_ref(&sentence));
    Some(Comparison {
        op: a.op.clone(),
        a: a.series.clone(),
        b: b.series.clone(),
        catch_up_threads: catch_up,
        differ: st.iter().any(|&s| s != 0),
        sentence,
        at: common
            .iter()
            .zip(&st)
            .map(|((x, y), &s)| ComparedAt {
                workers: x.threads,
                a: x.value,
                a_interval: x.ci,
                b: y.value,
                b_interval: y.ci,
                faster: match s {
                    1 => Some(a.series.clone()),
                    -1 => Some(b.series.clone()),
                    _ => None,
                },
            })
            .collect(),
    })
}

/// The sentence comparing lines `a` and `b` at their `common` worker
/// counts, each judged in `st` (+1: a clearly faster, -1: b, 0: within
/// noise), and the worker count where the line behind caught up.
fn compare_sentence(
    a: &CurveAnalysis,
    b: &CurveAnalysis,
    common: &[(CurvePoint, CurvePoint)],
    st: &[i8],
    noise: f64,
    caveat: &str,
) -> (String, Option<u32>) {
    let name = |s: i8| if s > 0 { &a.series } else { &b.series };
    let other = |s: i8| if s > 0 { &b.series } else { &a.series };
    let (n0, s0) = (common[0].0.threads, st[0]);
    let mut catch_up = None;
    // With one repetition at a point there is no noise to quote.
    let within = if caveat.is_empty() {
        format!("within noise: ±{:.0}%", noise * 100.0)
    } else {
        NO_NOISE_ESTIMATE.to_string()
    };
    // Without a noise estimate the sentences give the measured gaps and
    // judge none of them against a noise they do not know.
    let known = caveat.is_empty();
    let sentence = if st.iter().all(|&s| s == 0) && !known {
        format!(
            "{} and {} differ by at most {} at the worker counts tested ({}–{}), a gap not judged a difference ({NO_NOISE_ESTIMATE} at some points){}.",
            a.series,
            b.series,
            pct(common.iter().map(apart).fold(0.0, f64::max)),
            n0,
            common.last().expect("non-empty").0.threads,
            caveat
        )
    } else if st.iter().all(|&s| s == 0) {
        format!(
            "No clear difference between {} and {} at any worker count tested ({}–{}; {within}){}{}.",
            a.series,
            b.series,
            n0,
            common.last().expect("non-empty").0.threads,
            if noise > 0.1 && caveat.is_empty() { "; more --reps would narrow the noise" } else { "" },
            caveat
        )
    } else if st.iter().all(|&s| s == s0) {
        let ratios: Vec<f64> = common
            .iter()
            .map(|(x, y)| {
                if s0 > 0 {
                    x.value / y.value.max(1e-300)
                } else {
                    y.value / x.value.max(1e-300)
                }
            })
            .collect();
        format!(
            "{} is faster than {} at every worker count tested ({}–{}), by {}× to {}×{}{}.",
            name(s0),
            other(s0),
            n0,
            common.last().expect("non-empty").0.threads,
            num(ratios.iter().copied().fold(f64::INFINITY, f64::min)),
            num(ratios.iter().copied().fold(0.0, f64::max)),
            if known { ", beyond noise" } else { "" },
            caveat
        )
    } else if s0 != 0 {
        let (sentence, at) = catch_up_sentence(a, b, common, st, known, caveat);
        catch_up = Some(at);
        sentence
    } else {
        later_difference_sentence(a, b, common, st, known, &within, caveat)
    };
    (sentence, catch_up)
}

/// The values of a common point, the faster line's (`s`: +1 a, -1 b) first.
fn faster_first(s: i8, (x, y): &(CurvePoint, CurvePoint)) -> (f64, f64) {
    if s > 0 {
        (x.value, y.value)
    } else {
        (y.value, x.value)
    }
}

/// How far apart the two lines are at a common point: the higher over
/// the lower, less one (0 when the lower is 0).
fn apart((x, y): &(CurvePoint, CurvePoint)) -> f64 {
    let (hi, lo) = (x.value.max(y.value), x.value.min(y.value));
    if lo > 0.0 {
        hi / lo - 1.0
    } else {
        0.0
    }
}

/// [`compare_sentence`] when one line leads at the first count and the
/// other catches up with it (or overtakes it) later: the sentence and the
/// worker count where that happens.
fn catch_up_sentence(
    a: &CurveAnalysis,
    b: &CurveAnalysis,
    common: &[(CurvePoint, CurvePoint)],
    st: &[i8],
    known: bool,
    caveat: &str,
) -> (String, u32) {
    let u = &a.unit;
    let name = |s: i8| if s > 0 { &a.series } else { &b.series };
    let other = |s: i8| if s > 0 { &b.series } else { &a.series };
    let (n0, s0) = (common[0].0.threads, st[0]);
    let i = st.iter().position(|&s| s != s0).expect("not all equal");
    let x = &common[i].0;
    let (lead, trail) = (name(s0), other(s0));
    let (lv, tv) = faster_first(s0, &common[i]);
    let (l0, t0) = faster_first(s0, &common[0]);
    // The lead may come back past the catch-up: say so, or "catches
    // up" reads as level from there on (seen in a test of 1, 2, 4, 8
    // workers clearly apart at all but 2).
    let again = (i + 1..st.len()).find(|&j| st[j] == s0).map(|j| {
        let (lj, tj) = faster_first(s0, &common[j]);
        format!(
            "; but {lead} is {}faster again at {} ({} vs {} {u})",
            if known { "clearly " } else { "" },
            workers_word(common[j].0.threads),
            num(lj),
            num(tj)
        )
    });
    let sentence = format!(
        "{trail} {} {lead} at {} ({} vs {} {u}{}); below that {lead} is faster ({} vs {} at {}{}){}{}.",
        if st[i] == 0 { "catches up with" } else { "overtakes" },
        workers_word(x.threads),
        num(tv),
        num(lv),
        match (st[i] == 0, known) {
            (true, true) => ", no clear difference".to_string(),
            (true, false) => format!(", {} apart, not judged a difference", pct(apart(&common[i]))),
            _ => String::new(),
        },
        num(l0),
        num(t0),
        workers_word(n0),
        if known { ", beyond noise" } else { "" },
        again.unwrap_or_default(),
        caveat
    );
    (sentence, x.threads)
}

/// [`compare_sentence`] when the lines start level and one pulls ahead
/// at a later worker count.
fn later_difference_sentence(
    a: &CurveAnalysis,
    b: &CurveAnalysis,
    common: &[(CurvePoint, CurvePoint)],
    st: &[i8],
    known: bool,
    within: &str,
    caveat: &str,
) -> String {
    let u = &a.unit;
    let name = |s: i8| if s > 0 { &a.series } else { &b.series };
    let n0 = common[0].0.threads;
    let i = st.iter().position(|&s| s != 0).expect("some differ");
    let s = st[i];
    let x = &common[i].0;
    let (hv, lv) = faster_first(s, &common[i]);
    // "From x on" only when every count from x is that side's.
    let from = if st[i..].iter().all(|&t| t == s) {
        "from {} on"
    } else {
        "at {}, though not at every count above it"
    };
    let level = if known {
        format!("No clear difference at {} ({within})", workers_word(n0))
    } else {
        format!(
            "At {} {} apart, a gap not judged a difference ({within})",
            workers_word(n0),
            pct(apart(&common[0]))
        )
    };
    format!(
        "{level}; {}, {} is faster ({} vs {} {u}){}.",
        from.replace("{}", &workers_word(x.threads)),
        name(s),
        num(hv),
        num(lv),
        caveat
    )
}

/// Which swept values a series has: (target, layout, xfer, nodes). The
/// node count is part of a line only when it has to be (see
/// [`split_by_nodes`]).
type Dims = (String, String, u64, Option<u32>);

/// Whether a sweep over node counts needs a line per node count: when two
/// points of one (target, layout, xfer) have the same workers on different
/// node counts (threads swept too). Otherwise the node counts are the
/// line's own x axis (workers grow with the nodes) and stay on one line.
fn split_by_nodes(rec: &SweepRecord) -> bool {
    let same_place = |a: &crate::model::SweepPoint, b: &crate::model::SweepPoint| {
        a.target == b.target && a.layout == b.layout && a.xfer == b.xfer
    };
    rec.points.iter().enumerate().any(|(i, a)| {
        rec.points[..i]
            .iter()
            .any(|b| same_place(a, b) && a.workers() == b.workers() && a.nodes() != b.nodes())
    })
}

/// A series label without the node or rank count a `--nodes` or
/// `--ranks` sweep leads it with (`2 nodes write` → `write`, `4 ranks` →
/// ``), for a line that spans those counts.
pub fn without_nodes(label: &str) -> String {
    let mut words = label.splitn(3, ' ');
    match (words.next(), words.next(), words.next()) {
        (Some(n), Some("node" | "nodes" | "rank" | "ranks"), rest) if n.parse::<u32>().is_ok() => {
            rest.unwrap_or("").to_string()
        }
        _ => label.to_string(),
    }
}

/// The unit of an operation's line.
pub fn unit_of(o: &crate::model::OpStats, units: Units) -> &'static str {
    if o.rate_is_data() {
        units.data()
    } else if o.counts_files {
        "files/s"
    } else {
        "ops/s"
    }
}

/// Shortest probe window whose tick-counted CPU figures the analysis
/// uses ([`probe::evidence::MIN_TICK_WINDOW_S`]).
pub const MIN_TICK_WINDOW_S: f64 = probe::evidence::MIN_TICK_WINDOW_S;

/// A point of a line, from one operation's statistics at one point.
pub fn curve_point(
    p: &crate::model::SweepPoint,
    o: &crate::model::OpStats,
    units: Units,
) -> CurvePoint {
    let (ranks, tpr, _) = p.topology();
    let mut cp = curve_point_of(o, ranks, tpr, units);
    // Each good repetition's own latencies: a growth the analysis takes
    // as a queue must be in every one of them.
    let good: Vec<&stats::hist::LatencySummary> = p
        .result
        .phases
        .iter()
        .filter(|ph| ph.op == o.op && !ph.interrupted && !crate::model::phase_failed(ph))
        .map(|ph| &ph.lat_us)
        .collect();
    let range = |f: fn(&stats::hist::LatencySummary) -> f64| {
        (!good.is_empty()).then(|| {
            good.iter()
                .map(|l| f(l))
                .fold((f64::INFINITY, 0.0), |(lo, hi), v| {
                    (lo.min(v), f64::max(hi, v))
                })
        })
    };
    cp.depth = crate::model::depth_of(&p.result);
    cp.lat_p50_range_us = range(|l| l.p50);
    cp.lat_p99_range_us = range(|l| l.p99);
    if p.nodes() > 1 {
        // The probe traces rank 0's node only: its requests are not
        // those of every file.
        cp.ops_total = 0;
    }
    cp
}

/// A point of a line from one operation's statistics, for `ranks` ×
/// `threads_per_rank` workers: what a caller that builds [`OpStats`]
/// itself (a test driving a file system with plain threads, another
/// driver) hands to [`analyse_curve`].
///
/// [`OpStats`]: crate::model::OpStats
pub fn curve_point_of(
    o: &crate::model::OpStats,
    ranks: u32,
    threads_per_rank: u32,
    units: Units,
) -> CurvePoint {
    let (ranks, tpr, workers) = (ranks, threads_per_rank, ranks * threads_per_rank);
    let data = o.rate_is_data();
    let scale = |v: f64| if data { units.from_mib_s(v) } else { v };
    let (value, min, max) = if data {
        (o.center_bw_mib_s(), o.bw_mib_s.min, o.bw_mib_s.max)
    } else {
        (o.center_iops(), o.iops.min, o.iops.max)
    };
    CurvePoint {
        threads: workers,
        ranks,
        threads_per_rank: tpr,
        value: scale(value),
        min: scale(min),
        max: scale(max),
        ci: o.rate_ci().map(|c| Interval {
            lo: scale(c.lo),
            hi: scale(c.hi),
            ..c
        }),
        reps: o.reps,
        failed: o.failed,
        first_error: o.first_error.clone(),
        elapsed_s: o.center_elapsed_s(),
        iops: o.center_iops(),
        bytes_per_op: if o.iops.mean > 0.0 {
            o.bw_mib_s.mean * 1_048_576.0 / o.iops.mean
        } else {
            0.0
        },
        // 0 where nothing was measured (no good repetition): a curve
        // point reads 0 as unknown.
        cpu_busy: o.cpu_busy.unwrap_or(0.0),
        cpu_s_per_op: o.cpu_s_per_op.unwrap_or(0.0),
        lat_p50_us: o.lat_p50_us.unwrap_or(0.0),
        lat_p99_us: o.lat_p99_us.unwrap_or(0.0),
        resources: o.resources.as_ref().map(Resources::resolvable),
        counts_files: o.counts_files,
        ops_total: o.ops_total,
        read_bytes: o.read_bytes,
        write_bytes: o.write_bytes,
        reads_only: reads_only(&o.op),
        lat_p50_range_us: None,
        lat_p99_range_us: None,
        depth: 1,
    }
}

/// Analyses a whole sweep in MB/s, as the seed-style table of the
/// binary prints it before `--units` is wired (see [`analyse_with`]).
pub fn analyse(rec: &SweepRecord) -> Analysis {
    analyse_with(rec, Units::Si)
}

/// One line of a sweep: its swept values, series label, operation, unit,
/// points, file system, and the index in the record of each point.
type Line = (
    Dims,
    String,
    String,
    String,
    Vec<CurvePoint>,
    String,
    Vec<usize>,
);

/// The sweep's points gathered into lines, one per (swept values,
/// operation, unit), in the order they first appear.
fn lines_of(rec: &SweepRecord, units: Units, default_fs: &str) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    let by_nodes = split_by_nodes(rec);
    let dims_of = |p: &crate::model::SweepPoint| -> Dims {
        (
            p.target.clone(),
            p.layout.clone(),
            p.xfer,
            by_nodes.then_some(p.nodes()),
        )
    };
    let (mut spans_nodes, mut first_nodes): (Vec<bool>, Vec<u32>) = (Vec::new(), Vec::new());
    for (pi, p) in rec.points.iter().enumerate() {
        let n = p.nodes();
        let dims = dims_of(p);
        let fs = if p.result.host.fs_type.is_empty() {
            default_fs.to_string()
        } else {
            p.result.host.fs_type.clone()
        };
        for o in &p.ops {
            // One unit per operation: a point whose every repetition
            // failed moved nothing, and stays on its operation's line (a
            // write line of 1 and 2 workers whose 4 failed was split in
            // two, and the first said "the most tested" of 2).
            let unit = if rec.op_moves_data(&o.op) {
                units.data()
            } else {
                unit_of(o, units)
            };
            let cp = curve_point(p, o, units);
            match lines
                .iter_mut()
                .position(|l| l.0 == dims && l.2 == o.op && l.3 == unit)
            {
                Some(i) => {
                    lines[i].4.push(cp);
                    lines[i].6.push(pi);
                    // Another node count, or another rank count of a
                    // `--ranks` sweep (its label differs).
                    spans_nodes[i] |= !by_nodes && (n != first_nodes[i] || p.series != lines[i].1);
                }
                None => {
                    lines.push((
                        dims.clone(),
                        p.series.clone(),
                        o.op.clone(),
                        unit.to_string(),
                        vec![cp],
                        fs.clone(),
                        vec![pi],
                    ));
                    spans_nodes.push(false);
                    first_nodes.push(n);
                }
            }
        }
    }
    for (l, spans) in lines.iter_mut().zip(&spans_nodes) {
        if *spans {
            l.1 = without_nodes(&l.1);
        }
    }
    lines
}

/// The rules over time ([`crate::timeline`]) on every phase of line `l`
/// that recorded a series, in the order the phases ran.
fn line_timeline(rec: &SweepRecord, l: &Line, units: Units) -> crate::timeline::Timeline {
    let (op, unit, pts, idx) = (&l.2, &l.3, &l.4, &l.6);
    let mut views = Vec::new();
    let mut order = 0;
    for (pi, p) in rec.points.iter().enumerate() {
        let at = idx.iter().position(|&i| i == pi);
        for ph in &p.result.phases {
            order += 1;
            let (Some(k), Some(series)) = (at, ph.series.as_ref()) else {
                continue;
            };
            if ph.op == *op && !ph.interrupted && !crate::model::phase_failed(ph) {
                views.push(crate::timeline::PhaseView {
                    workers: pts[k].threads,
                    rep: ph.rep,
                    order,
                    series,
                });
            }
        }
    }
    let data = unit == units.data();
    crate::timeline::read_line(unit, data, units, &views)
}

/// Analyses a whole sweep: one line per series and operation (by total
/// workers), and the differences of lines that differ in exactly one
/// swept value. Every figure is in `units`.
pub fn analyse_with(rec: &SweepRecord, units: Units) -> Analysis {
    let ctx = Context {
        cpus: rec.host.cpus,
        fs_type: rec.host.fs_type.clone(),
    };
    let lines = lines_of(rec, units, &ctx.fs_type);
    let curves: Vec<CurveAnalysis> = lines
        .iter()
        .map(|l| {
            let (series, op, unit, pts, fs) = (&l.1, &l.2, &l.3, &l.4, &l.5);
            let c = Context {
                cpus: ctx.cpus,
                fs_type: fs.clone(),
            };
            let mut a = analyse_curve(series, op, unit, pts, &c);
            a.sentences.extend(line_timeline(rec, l, units).sentences);
            a
        })
        .collect();
    let mut comparisons = Vec::new();
    for i in 0..lines.len() {
        for j in i + 1..lines.len() {
            let (da, db) = (&lines[i].0, &lines[j].0);
            let differ = (da.0 != db.0) as u8
                + (da.1 != db.1) as u8
                + (da.2 != db.2) as u8
                + (da.3 != db.3) as u8;
            if differ == 1 && lines[i].2 == lines[j].2 && lines[i].3 == lines[j].3 {
                if let Some(c) = compare_curves(&curves[i], &curves[j]) {
                    comparisons.push(c);
                }
            }
        }
    }
    let mut notes = Vec::new();
    if let Some((failed, total, first)) = rec.failed_reps() {
        notes.push(format!(
            "{failed} of {total} repetitions failed and are left out of every figure: {first}"
        ));
    }
    let single = rec.points.iter().flat_map(|p| &p.ops).any(|o| o.reps == 1);
    if single && rec.points.len() > 1 {
        notes.push("Some points have one good repetition: the verdicts are not supported by repetitions (no noise estimate); run with --reps 3 or more.".into());
    }
    Analysis {
        units,
        curves,
        comparisons,
        notes,
    }
}

/// Analyses a sweep again in `units` ([`analyse_with`]) and, for an
/// adaptive sweep, what its repetitions and its search say from the
/// points (`points[].reps_auto`, `search`): the record's path and times
/// are kept, everything read from the points is recomputed.
pub fn reanalyse(rec: &mut SweepRecord, units: Units) {
    rec.analysis = analyse_with(rec, units);
    if let Some(rule) = rec.config.reps_auto {
        for p in &mut rec.points {
            p.reps_auto = Some(p.judge_reps(&rule));
        }
    }
    rec.search = rec.config.threads_auto.map(|rule| {
        let (path, times) = rec
            .search
            .as_ref()
            .map(|s| (s.path.clone(), s.times.clone()))
            .unwrap_or_default();
        let axis = rec.config.search_axis;
        // The work grows with the count when each worker keeps its share;
        // the transfer size leaves it as it is.
        let per_worker = rec.config.scale != "total" && !matches!(axis, Axis::Xfer { .. });
        let mut report = crate::adapt::search_report_on(
            &rule,
            &search_lines(rec),
            axis,
            Measured {
                path: &path,
                times: &times,
            },
            per_worker,
            &|c| rec.config.may_search(c),
        );
        let (left, why) = left_out(&rec.config, &rule);
        report.leave_out(left, why);
        report
    });
}

/// The counts in a search's range the sweep did not plan (their point was
/// refused as asked), and why, in words.
fn left_out(c: &crate::model::SweepConfig, rule: &adapt::ThreadsAuto) -> (Vec<u32>, &'static str) {
    match c.search_axis {
        Axis::Workers if !c.threads.is_empty() && rule.max <= adapt::FINE_LADDER_MAX => (
            (rule.start..=rule.max)
                .filter(|n| !c.threads.contains(n))
                .collect(),
            "--scale total: the first point's total does not split evenly across them",
        ),
        Axis::Xfer { unit } if !c.xfer.is_empty() => (
            adapt::xfer_sizes(rule, unit)
                .into_iter()
                .filter(|x| !c.xfer.contains(x))
                .map(|x| (x / unit) as u32)
                .collect(),
            "each point's data is not a multiple of them",
        ),
        _ => (Vec::new(), ""),
    }
}

/// The lines an adaptive search reads from a record, each point keyed by
/// the record's search axis: the analysis' curves for workers and for
/// launched ranks or nodes (one line across the counts: the search takes
/// one thread count); over transfer sizes, each curve's point at one
/// worker count gathered across the sizes.
pub fn search_lines(rec: &SweepRecord) -> Vec<adapt::Line> {
    let axis = rec.config.search_axis;
    match axis {
        // A launched sweep of one thread count draws one line across its
        // counts (`without_count`), as the search reads it.
        Axis::Workers | Axis::Ranks | Axis::Nodes { .. } => rec
            .analysis
            .curves
            .iter()
            .map(|c| adapt::Line::of_curve(c, axis))
            .collect(),
        Axis::Xfer { unit } => xfer_lines(rec, unit),
    }
}

/// The lines of a `--xfer auto` sweep: for each curve's point, the line
/// of its operation, its series without the size and its worker count,
/// keyed by the size in `unit`s.
fn xfer_lines(rec: &SweepRecord, unit: u64) -> Vec<adapt::Line> {
    let several = rec.config.threads.len() > 1;
    let mut lines: Vec<adapt::Line> = Vec::new();
    for c in &rec.analysis.curves {
        for cp in &c.points {
            let Some(sp) = rec.points.iter().find(|sp| {
                sp.series == c.series
                    && (sp.threads == cp.threads || sp.threads == cp.threads_per_rank)
            }) else {
                continue;
            };
            let size = spec::format_size(sp.xfer);
            let rest = c.series.replacen(&size, "", 1);
            let rest = rest.split_whitespace().collect::<Vec<_>>().join(" ");
            let mut name = if rest.is_empty() {
                c.op.clone()
            } else {
                format!("{} ({rest})", c.op)
            };
            if several {
                name.push_str(&format!(" at {}", workers_word(cp.threads)));
            }
            let key = u32::try_from(sp.xfer / unit.max(1)).unwrap_or(u32::MAX);
            match lines.iter_mut().find(|l| l.name == name) {
                Some(l) => l.points.push((key, cp.clone())),
                None => lines.push(adapt::Line {
                    name,
                    unit: c.unit.clone(),
                    kind: VerdictKind::Uncertain,
                    points: vec![(key, cp.clone())],
                }),
            }
        }
    }
    lines
}

/// "1 thread", "8 threads".
pub fn threads(n: u32) -> String {
    if n == 1 {
        "1 thread".into()
    } else {
        format!("{n} threads")
    }
}

fn bytes(b: f64) -> String {
    spec::format_size(b.round().max(0.0) as u64)
}

#[cfg(test)]
mod tests {
    /// Every sentence the unit tests make the analysis say is plain
    /// ([`crate::verdict::style_faults`]): called on each line analysed.
    pub(super) fn assert_plain(sentences: &[String]) {
        for s in sentences {
            let f = crate::verdict::style_faults(s);
            assert!(f.is_empty(), "{f:?} in: {s}");
        }
    }

    use super::*;

    #[test]
    fn a_line_over_node_counts_drops_the_node_count_from_its_label() {
        assert_eq!(without_nodes("1 node"), "");
        assert_eq!(without_nodes("2 nodes write 64k"), "write 64k");
        assert_eq!(without_nodes("16 nodes /mnt/a"), "/mnt/a");
        assert_eq!(without_nodes("4 ranks shared"), "shared");
        assert_eq!(without_nodes("1 rank"), "");
        // Not a node count: left alone.
        assert_eq!(without_nodes("shared nodes x"), "shared nodes x");
        assert_eq!(without_nodes("4k"), "4k");
    }
    use probe::{DeviceUse, ProcessUse};
    use stats::bootstrap::trimmed_mean_ci;

    /// A point from its repetitions (MiB/s) and bytes per operation.
    fn pt(workers: u32, reps: &[f64], bytes_per_op: f64) -> CurvePoint {
        let mean = reps.iter().sum::<f64>() / reps.len() as f64;
        CurvePoint {
            threads: workers,
            ranks: 1,
            threads_per_rank: workers,
            value: mean,
            min: reps.iter().copied().fold(f64::INFINITY, f64::min),
            max: reps.iter().copied().fold(0.0, f64::max),
            ci: trimmed_mean_ci(reps, 0),
            reps: reps.len(),
            iops: mean * 1_048_576.0 / bytes_per_op,
            bytes_per_op,
            cpu_busy: 0.1,
            ..Default::default()
        }
    }

    fn tight(v: f64) -> [f64; 3] {
        [v * 0.99, v, v * 1.01]
    }

    fn ctx(fs: &str) -> Context {
        Context {
            cpus: 2,
            fs_type: fs.into(),
        }
    }

    fn res(fs: &str, machine: f64, own: f64) -> Resources {
        Resources {
            elapsed_s: 1.0,
            cpus: 2,
            self_cores: own,
            machine_busy_cores: machine,
            fs_type: fs.into(),
            ..Default::default()
        }
    }

    const KIB64: f64 = 65536.0;

    #[test]
    fn under_mpi_the_cpu_figure_is_rank_0s_and_the_other_rank_is_not_other_work() {
        // Measured: `mpirun -np 2 ioscale sweep --threads 1,2 --reps 3 --
        // run --op write --size 128m --xfer 64k` on tmpfs, 2 CPUs. Open MPI
        // bound rank 0 to 1 CPU; the probe measures rank 0's process. It
        // said "the CPUs: all 1 CPU 100% busy, ioscale 0.96 cores, …
        // other work: ioscale-mpi (pid 21573) 1.00 cores": the machine has
        // 2 CPUs (2.03 busy cores), 0.96 cores were rank 0's alone, and the
        // "other work" was the run's own rank 1.
        let r = Resources {
            elapsed_s: 0.241625074,
            cpus: 1,
            self_cores: 0.9615020335182602,
            self_cpu_wait: Some(1.6317401893480643),
            machine_busy_cores: 2.0279352299339597,
            top_other: Some(ProcessUse {
                pid: 21573,
                name: "ioscale-mpi".into(),
                cores: 0.9965877086004448,
            }),
            fs_type: "tmpfs".into(),
            ..Default::default()
        };
        let at = |w: u32, v: f64| CurvePoint {
            ranks: 2,
            threads_per_rank: w / 2,
            resources: Some(r.clone()),
            ..pt(w, &tight(v), KIB64)
        };
        let a = analyse_curve(
            "",
            "write",
            "MiB/s",
            &[at(2, 5813.0), at(4, 6686.0)],
            &ctx("tmpfs"),
        );
        let t = &a.verdict.text;
        assert_eq!(a.verdict.kind, VerdictKind::CpuBound, "{t}");
        assert!(!t.contains("all 1 CPU"), "{t}");
        assert!(t.contains("both CPUs 100% busy, ioscale's rank 0 (the only rank measured) 0.96 cores on the 1 CPU it may use"), "{t}");
        assert!(
            t.contains("rank 0's threads were running or waiting"),
            "{t}"
        );
        assert!(t.contains("ioscale-mpi, pid 21573, an ioscale process and likely another rank of this run, at 1.00 cores"), "{t}");
    }

    #[test]
    fn cpu_ticks_of_a_phase_of_milliseconds_are_not_a_limit() {
        // Seen on testfs (meta -n 64, stat from the caches): the phase
        // lasted a few ms, one 10 ms tick of the daemon read as 1.57 cores,
        // and the line was called "CPU-bound ... FUSE daemon 1.57".
        let stat = |elapsed_s: f64| {
            let mut r = res("fuse.ioscale-testfs", 1.84, 0.28);
            r.elapsed_s = elapsed_s;
            r.self_cpu_wait = Some(0.63);
            r.fuse = Some(probe::FuseUse {
                daemon: Some(ProcessUse {
                    pid: 7,
                    name: "ioscale-testfs".into(),
                    cores: 1.57,
                }),
                ..Default::default()
            });
            CurvePoint {
                resources: Some(r.resolvable()),
                ..pt(2, &tight(400_000.0 / 256.0), 4096.0)
            }
        };
        let short = stat(0.006);
        let r = short.resources.as_ref().unwrap();
        assert!(r.fuse.as_ref().unwrap().daemon.is_none());
        assert_eq!((r.machine_busy_cores, r.self_cpu_wait), (0.28, None));
        assert_ne!(
            limiter(&[short], &ctx("fuse.ioscale-testfs")).limit,
            Limit::Cpu
        );
        // Over a second the same figures are measurements: the CPUs.
        let long = stat(1.0);
        assert_eq!(
            limiter(&[long], &ctx("fuse.ioscale-testfs")).limit,
            Limit::Cpu
        );
    }

    /// One 1 MiB write per worker at 40 MiB/s (Little's law: 25 ms per
    /// write) on a FUSE mount, with `requests` traced or not.
    fn fuse_line(requests: Option<probe::FuseRequests>, note: Option<&str>) -> CurveAnalysis {
        let mut r = res("fuse.ioscale-testfs", 0.3, 0.1);
        r.fuse = Some(probe::FuseUse {
            requests,
            requests_note: note.map(String::from),
            ..Default::default()
        });
        let p = CurvePoint {
            resources: Some(r),
            ..pt(1, &tight(40.0), 1_048_576.0)
        };
        analyse_curve("", "write", "MiB/s", &[p], &ctx("fuse.ioscale-testfs"))
    }

    #[test]
    fn fuse_little_law_is_explained_in_measured_requests() {
        // 40 writes of 1 MiB became 320 requests of 128 KiB, each 3 ms from
        // send to reply.
        let mut q = probe::FuseRequests::default();
        q.write.count = 320;
        q.write.bytes = 320 * 131_072;
        q.write.max_bytes = 131_072;
        q.write.answered = 320;
        q.write.time_s = 320.0 * 0.003;
        let a = fuse_line(Some(q), None);
        let said = a.sentences.join(" ");
        println!("{said}");
        assert!(
            said.contains("Each 1 MiB write reached the FUSE daemon as 8.0 requests of 128 KiB on average (measured: 320 FUSE_WRITE requests"),
            "{said}"
        );
        // 25 ms per write ÷ 8 requests.
        assert!(
            said.contains("per request ≈ 3.12 ms if they are served one after another"),
            "{said}"
        );
        assert!(
            said.contains("the kernel measured 3.00 ms per request"),
            "{said}"
        );
        assert!(!said.contains("not measured"), "{said}");
    }

    #[test]
    fn fuse_requests_not_traced_say_why() {
        let a = fuse_line(
            None,
            Some("not root: the kernel's FUSE trace events need root"),
        );
        let said = a.sentences.join(" ");
        println!("{said}");
        assert!(
            said.contains(
                "that count was not measured (not root: the kernel's FUSE trace events need root)"
            ),
            "{said}"
        );
        assert!(!said.contains("FUSE_WRITE requests"), "{said}");
        // Traced, but no write reached the daemon (page cache).
        let a = fuse_line(Some(probe::FuseRequests::default()), None);
        let said = a.sentences.join(" ");
        assert!(said.contains("No FUSE_WRITE request was traced"), "{said}");
    }

    #[test]
    fn server_limit_shows_the_requests_in_flight() {
        let mut r = res("fuse.ioscale-testfs", 0.3, 0.1);
        let mut q = probe::FuseRequests::default();
        q.read.count = 1000;
        q.read.answered = 1000;
        // 1000 requests of 8 ms over 1 s: 8 in flight.
        q.read.time_s = 8.0;
        r.fuse = Some(probe::FuseUse {
            requests: Some(q),
            ..Default::default()
        });
        let p = CurvePoint {
            resources: Some(r),
            ..pt(8, &tight(100.0), KIB64)
        };
        let l = limiter(&[p], &ctx("fuse.ioscale-testfs"));
        assert_eq!(l.limit, Limit::Server, "{}", l.figure);
        assert!(
            l.figure.contains(
                "FUSE data requests 8.00 ms each from send to reply, 8.0 in flight on average"
            ),
            "{}",
            l.figure
        );
    }

    #[test]
    fn noisy_line_highest_at_one_worker_names_the_range() {
        // Highest at 1 worker, everything within wide noise: the sentence
        // names the fewest and the most workers, not "1 and 1".
        let pts = [
            pt(1, &[130.0, 60.0, 100.0], KIB64),
            pt(2, &[120.0, 50.0, 95.0], KIB64),
            pt(4, &[125.0, 55.0, 90.0], KIB64),
        ];
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("ext4"));
        assert_eq!(a.verdict.kind, VerdictKind::Uncertain, "{:?}", a.sentences);
        assert!(
            a.verdict
                .text
                .starts_with("No clear difference between 1 and 4 workers"),
            "{}",
            a.verdict.text
        );
    }

    #[test]
    fn falling_from_the_fewest_workers_is_falls() {
        // Highest at 1 worker, 4 workers clearly below beyond noise
        // (tmpfs page-cache writes on 2 CPUs): not "no clear difference".
        let pts = [
            pt(1, &[2500.0, 2800.0, 3100.0], KIB64),
            pt(2, &[900.0, 1050.0, 1200.0], KIB64),
            pt(4, &[500.0, 620.0, 740.0], KIB64),
        ];
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("tmpfs"));
        assert_eq!(a.verdict.kind, VerdictKind::Falls, "{:?}", a.sentences);
        assert!(
            a.verdict
                .text
                .starts_with("Highest at the fewest workers tested, 1 worker (2800 MiB/s), then falls beyond noise to 620 at 4 workers"),
            "{}",
            a.verdict.text
        );
    }

    #[test]
    fn latency_bound_line() {
        let pts: Vec<CurvePoint> = [1u32, 2, 4, 8]
            .iter()
            .map(|&n| pt(n, &tight(10.0 * n as f64), KIB64))
            .collect();
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("fuse.ioscale-testfs"));
        assert_eq!(
            a.verdict.kind,
            VerdictKind::LatencyBound,
            "{:?}",
            a.sentences
        );
        assert!(
            a.verdict.text.contains("up to at least 8"),
            "{}",
            a.verdict.text
        );
        assert!(a.verdict.supported);
        assert_eq!(a.hidden_up_to, Some(8));
        // 10 MiB/s of 64 KiB operations at one worker: 160 ops/s, 6.25 ms.
        assert!((a.little[0].latency_s - 0.00625).abs() < 1e-9);
    }

    /// Rule 4 and each way of rule 6, one line each, with the sentence
    /// its rule gives.
    #[test]
    fn rising_and_the_cannot_tell_rules() {
        let cases: [(&str, Vec<CurvePoint>, VerdictKind, &str); 5] = [
            (
                // Little's law 6.25 ms → 8.33 ms: more than 25 % longer.
                "rising",
                vec![
                    pt(1, &tight(10.0), KIB64),
                    pt(2, &tight(18.0), KIB64),
                    pt(4, &tight(30.0), KIB64),
                ],
                VerdictKind::Rising,
                "Still rising at 4 workers (30.0 MiB/s, 3.00× 1 worker, clearly above 18.0 at 2 workers), though each request takes longer",
            ),
            (
                "uneven",
                vec![
                    pt(1, &tight(10.0), KIB64),
                    pt(2, &tight(100.0), KIB64),
                    pt(4, &tight(50.0), KIB64),
                    pt(8, &tight(95.0), KIB64),
                ],
                VerdictKind::Uncertain,
                "Uneven: the peak is 100 MiB/s at 2 workers, then lower and back to 95.0 at 8 workers",
            ),
            (
                "highest last, not clearly",
                vec![
                    pt(1, &tight(10.0), KIB64),
                    pt(2, &tight(40.0), KIB64),
                    pt(4, &tight(85.0), KIB64),
                    pt(8, &[70.0, 100.0, 130.0], KIB64),
                ],
                VerdictKind::Uncertain,
                "Highest at 8 workers (100 MiB/s), but not clearly above 85.0 at 4 workers",
            ),
            (
                "noisy from the knee",
                vec![
                    pt(1, &tight(10.0), KIB64),
                    pt(2, &tight(50.0), KIB64),
                    pt(4, &[60.0, 100.0, 140.0], KIB64),
                    pt(8, &[71.0, 101.0, 131.0], KIB64),
                ],
                VerdictKind::Uncertain,
                "Rises 10.1× from 1 worker to 101 MiB/s at 8 workers, but the points from 4 workers on are too noisy",
            ),
            (
                "the point before the knee within noise",
                vec![
                    pt(1, &tight(10.0), KIB64),
                    pt(2, &[60.0, 86.0, 112.0], KIB64),
                    pt(4, &tight(100.0), KIB64),
                    pt(8, &tight(99.0), KIB64),
                ],
                VerdictKind::Uncertain,
                "Rises 10.0× from 1 worker to the peak at 4 workers (100 MiB/s), but 86.0 at 2 workers is within noise of it",
            ),
        ];
        for (name, pts, kind, start) in cases {
            let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("ext4"));
            assert_eq!(a.verdict.kind, kind, "{name}: {:?}", a.sentences);
            assert!(
                a.verdict.text.starts_with(start),
                "{name}: {}",
                a.verdict.text
            );
            assert_eq!(a.enough_threads, 0, "{name}: no knee claimed");
        }
    }

    #[test]
    fn saturated_at_the_server() {
        let vals = [(1u32, 20.0), (2, 40.0), (4, 80.0), (8, 82.0), (16, 81.0)];
        let pts: Vec<CurvePoint> = vals
            .iter()
            .map(|&(n, v)| CurvePoint {
                resources: Some(res("fuse.ioscale-testfs", 0.3, 0.1)),
                ..pt(n, &tight(v), KIB64)
            })
            .collect();
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("fuse.ioscale-testfs"));
        assert_eq!(a.verdict.kind, VerdictKind::Saturated, "{:?}", a.sentences);
        assert_eq!(a.enough_threads, 4);
        assert_eq!(a.limit, Some(Limit::Server));
        assert!(a
            .verdict
            .text
            .contains("the file-system server (fuse.ioscale-testfs)"));
        assert!(a.verdict.text.contains("More workers help until 4"));
        // 5 counts, but a plateau is not USL-shaped enough to quote? It is
        // shown only when R² ≥ 0.9, whatever it is.
        let usl = a.sentences.iter().find(|s| s.contains("USL")).unwrap();
        assert_eq!(a.usl_shown, a.usl.unwrap().r2 >= USL_MIN_R2, "{usl}");
    }

    #[test]
    fn serialised_at_the_server() {
        let pts: Vec<CurvePoint> = [1u32, 2, 4, 8]
            .iter()
            .map(|&n| CurvePoint {
                resources: Some(res("fuse.ioscale-testfs", 0.1, 0.02)),
                ..pt(n, &tight(12.0), KIB64)
            })
            .collect();
        let a = analyse_curve("", "read", "MiB/s", &pts, &ctx("fuse.ioscale-testfs"));
        assert_eq!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
        assert!(
            a.verdict.text.contains("serialised at the server"),
            "{}",
            a.verdict.text
        );
        assert_eq!(a.limit, Some(Limit::Server));
    }

    #[test]
    fn cpu_limit_names_the_busy_fraction() {
        let vals = [(1u32, 1000.0), (2, 1900.0), (4, 1950.0), (8, 1920.0)];
        let pts: Vec<CurvePoint> = vals
            .iter()
            .map(|&(n, v)| CurvePoint {
                resources: Some(res("tmpfs", if n == 1 { 1.0 } else { 1.98 }, 1.9)),
                ..pt(n, &tight(v), KIB64)
            })
            .collect();
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("tmpfs"));
        assert_eq!(a.limit, Some(Limit::Cpu), "{:?}", a.sentences);
        assert!(
            a.verdict
                .text
                .contains("both CPUs 99% busy, ioscale 1.90 cores"),
            "{}",
            a.verdict.text
        );
    }

    /// A line with measured median latencies (µs) and resources.
    fn measured(n: u32, v: f64, p50_us: f64, r: Resources) -> CurvePoint {
        CurvePoint {
            lat_p50_us: p50_us,
            resources: Some(r),
            ..pt(n, &tight(v), KIB64)
        }
    }

    #[test]
    fn one_server_thread_losing_a_little_past_its_peak_is_serialised() {
        // Seen in CI (testfs --threads 1 --delay 2ms, 5 repetitions): the
        // 8-worker point is clearly below the 4-worker peak, but not below
        // the 1-worker point, while the median latency grows with the
        // workers: still no scaling, not "cannot tell".
        let r = || res("fuse.ioscale-testfs", 0.3, 0.05);
        let with = |n: u32, reps: &[f64], p50: f64| CurvePoint {
            lat_p50_us: p50,
            resources: Some(r()),
            ..pt(n, reps, KIB64)
        };
        let pts = [
            with(1, &[19.6, 22.9, 23.4, 24.6, 25.8], 2_461.0),
            with(2, &[22.3, 25.0, 25.7, 26.5, 27.2], 4_489.0),
            with(4, &[25.1, 26.6, 27.0, 27.5, 28.0], 8_795.0),
            with(8, &[23.2, 23.5, 23.7, 23.9, 24.2], 13_985.0),
        ];
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("fuse.ioscale-testfs"));
        assert_eq!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
    }

    #[test]
    fn a_p99_grown_in_some_repetitions_only_does_not_prove_a_queue() {
        // Measured: `sweep --threads 1,2,4 --reps 3 -- meta -n 2000
        // --file-size 0` on tmpfs, a busy 2-CPU machine. Deletes (files/s
        // per repetition, and each repetition's median and p99 in µs):
        // "No scaling: 358063 files/s at 1 worker and 368904 at 4 workers
        // ... (within noise: ±83%) ... p99 7.37 µs → 77.9 µs: ...
        // serialised". The mean p99 grew, but the third repetition at 4
        // workers had a p99 of 7.33 µs (the 1-worker ones: 7.0-7.8) at
        // 1.66x the rate of one worker: no queue in that one.
        let with = |n: u32, reps: &[f64], p50: &[f64], p99: &[f64], ops: u64| {
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let range = |v: &[f64]| {
                Some((
                    v.iter().copied().fold(f64::INFINITY, f64::min),
                    v.iter().copied().fold(0.0, f64::max),
                ))
            };
            CurvePoint {
                lat_p50_us: mean(p50),
                lat_p99_us: mean(p99),
                lat_p50_range_us: range(p50),
                lat_p99_range_us: range(p99),
                ops_total: ops,
                iops: mean(reps),
                counts_files: true,
                resources: Some(res("tmpfs", 1.67, 0.97)),
                ..pt(n, reps, 0.0)
            }
        };
        let pts = [
            with(
                1,
                &[362027.0, 356043.0, 356118.0],
                &[2.351, 2.319, 2.383],
                &[7.263, 7.007, 7.839],
                6000,
            ),
            with(
                2,
                &[126989.0, 126827.0, 599158.0],
                &[2.735, 2.639, 2.511],
                &[232.447, 232.447, 7.839],
                12000,
            ),
            with(
                4,
                &[292758.0, 219947.0, 594008.0],
                &[2.479, 2.575, 2.735],
                &[104.959, 121.343, 7.327],
                24000,
            ),
        ];
        let a = analyse_curve("", "delete", "files/s", &pts, &ctx("tmpfs"));
        assert_ne!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
        assert!(
            a.verdict
                .text
                .starts_with("No clear difference between 1 and 4 workers (within noise: ±"),
            "{}",
            a.verdict.text
        );
        // The same means with every repetition grown are still a queue.
        let mut grown = pts.clone();
        for p in &mut grown[1..] {
            p.lat_p99_range_us = Some((p.lat_p99_us * 0.9, p.lat_p99_us * 1.1));
        }
        let a = analyse_curve("", "delete", "files/s", &grown, &ctx("tmpfs"));
        assert_eq!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
    }

    #[test]
    fn a_p99_that_is_one_slow_operation_does_not_prove_a_queue() {
        // Seen on testfs (--meta-delay 2ms, meta -n 64, 2 repetitions):
        // deletes went 445 → 719 files/s from 1 to 2 workers with the
        // median unchanged (2.21 ms both), but the 2-worker p99, over 256
        // deletes the top 3 of them, was 26 ms: "No scaling ... serialised"
        // was printed. With 256 deletes per worker it scaled 3.9x to 4.
        let with = |n: u32, reps: &[f64], p99: f64, ops: u64| CurvePoint {
            lat_p50_us: 2_210.0,
            lat_p99_us: p99,
            ops_total: ops,
            iops: reps.iter().sum::<f64>() / reps.len() as f64,
            resources: Some(res("fuse.ioscale-testfs", 0.3, 0.05)),
            ..pt(n, reps, 0.0)
        };
        let few = [
            with(1, &[436.0, 453.0], 2_410.0, 128),
            with(2, &[548.0, 890.0], 26_200.0, 256),
        ];
        let a = analyse_curve("", "delete", "files/s", &few, &ctx("fuse.ioscale-testfs"));
        assert_ne!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
        // The same figures over enough operations that the top 1% is more
        // than a few of them are the queue's proof.
        let many = [
            with(1, &[436.0, 453.0], 2_410.0, 12_800),
            with(2, &[548.0, 890.0], 26_200.0, 25_600),
        ];
        let a = analyse_curve("", "delete", "files/s", &many, &ctx("fuse.ioscale-testfs"));
        assert_eq!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
    }

    #[test]
    fn one_server_thread_falling_a_little_from_one_worker_is_serialised() {
        // Seen in CI on a quiet machine (testfs known_answers case 3): the
        // peak is the fewest workers and 8 workers are clearly 11 % below
        // it, while the median latency grows with the workers: a server
        // taking one request at a time, not "more workers cost more".
        let r = || res("fuse.ioscale-testfs", 0.3, 0.05);
        let with = |n: u32, reps: &[f64], p50: f64| CurvePoint {
            lat_p50_us: p50,
            resources: Some(r()),
            ..pt(n, reps, KIB64)
        };
        let pts = [
            with(1, &[26.8, 27.2, 27.5, 27.8, 28.0], 2_220.0),
            with(2, &[25.9, 26.3, 26.6, 26.9, 27.1], 4_500.0),
            with(4, &[25.0, 25.4, 25.7, 26.0, 26.2], 9_100.0),
            with(8, &[23.9, 24.2, 24.4, 24.6, 24.9], 18_300.0),
        ];
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("fuse.ioscale-testfs"));
        assert_eq!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
        // Losing 40 % is more than the extra clients' overhead: it falls.
        let pts = [
            with(1, &[26.8, 27.2, 27.5, 27.8, 28.0], 2_220.0),
            with(2, &[25.9, 26.3, 26.6, 26.9, 27.1], 4_500.0),
            with(4, &[20.0, 20.4, 20.7, 21.0, 21.2], 11_000.0),
            with(8, &[15.9, 16.2, 16.4, 16.6, 16.9], 27_000.0),
        ];
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("fuse.ioscale-testfs"));
        assert_ne!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
    }

    #[test]
    fn flat_throughput_whose_median_barely_grows_is_not_serialised() {
        // Measured (ioscale sweep --threads 1,2 --reps 1 on tmpfs, 64 MiB
        // read per worker in 1 MiB transfers): 2773 → 2937 MiB/s, the
        // median 281 → 309 µs. Half of 2× the first median is the first
        // median itself, so "grows in step with the workers: requests are
        // served one at a time" was said of a median that grew 1.10×.
        let at = |n: u32, v: f64, p50: f64, elapsed: f64, own: f64| CurvePoint {
            lat_p50_us: p50,
            ops_total: 64 * u64::from(n),
            resources: Some(Resources {
                elapsed_s: elapsed,
                ..res("tmpfs", own, own)
            }),
            ..pt(n, &[v], 1_048_576.0)
        };
        let pts = [
            at(1, 2772.75, 280.575, 0.0277, 0.763),
            at(2, 2937.03, 309.247, 0.0494, 0.878),
        ];
        let a = analyse_curve("", "read", "MiB/s", &pts, &ctx("tmpfs"));
        assert_ne!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
        assert!(
            !a.verdict.text.contains("one at a time"),
            "{}",
            a.verdict.text
        );
        // The same with repetitions: the median must grow at least midway
        // to what one server gives (1.5× with twice the workers).
        let tight_at = |n: u32, v: f64, p50: f64| CurvePoint {
            reps: 3,
            ci: trimmed_mean_ci(&tight(v), 0),
            ..at(n, v, p50, 0.2, 0.9)
        };
        let pts = [tight_at(1, 2772.75, 280.575), tight_at(2, 2937.03, 309.247)];
        let a = analyse_curve("", "read", "MiB/s", &pts, &ctx("tmpfs"));
        assert_ne!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
        // One server thread (testfs --threads 1 --delay 2ms, 1 and 2
        // writers, measured): 29.2 → 29.0 MiB/s, median 2.11 → 4.23 ms.
        let pts = [
            measured(1, 29.2, 2_110.0, testfs_res()),
            measured(2, 29.0, 4_230.0, testfs_res()),
        ];
        let a = on_testfs(&pts);
        assert_eq!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
    }

    #[test]
    fn a_line_that_rises_then_falls_back_is_not_serialised() {
        // Doubling, then falling back to the start: it scaled before it
        // fell, so the fall is the finding, not serialisation.
        let r = || res("fuse.ioscale-testfs", 0.3, 0.05);
        let with = |n: u32, v: f64, p50: f64| CurvePoint {
            lat_p50_us: p50,
            resources: Some(r()),
            ..pt(n, &tight(v), KIB64)
        };
        let pts = [
            with(1, 25.0, 2_400.0),
            with(2, 48.0, 2_500.0),
            with(4, 60.0, 4_000.0),
            with(8, 26.0, 18_000.0),
        ];
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("fuse.ioscale-testfs"));
        assert_ne!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
    }

    #[test]
    fn one_server_thread_overlapping_the_clients_is_serialised() {
        // testfs --threads 1 --delay 2ms on a quiet machine: the first
        // point is a few percent below the rest (with more workers the
        // client's own share of each request overlaps the server's), so
        // the peak is "clearly" above it by 5 %, yet the line does not
        // scale: each request waits behind the others (the measured
        // median grows with the workers).
        let r = testfs_res;
        let pts = [
            measured(1, 26.1, 2_300.0, r()),
            measured(2, 27.0, 4_500.0, r()),
            measured(4, 27.4, 9_000.0, r()),
            measured(8, 27.0, 18_300.0, r()),
        ];
        let a = on_testfs(&pts);
        assert_eq!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
        assert!(
            a.verdict.text.contains("serialised at the server"),
            "{}",
            a.verdict.text
        );
        assert!(
            a.verdict.text.contains("measured median 2.30 ms → 18.3 ms"),
            "{}",
            a.verdict.text
        );
        // Under load the client's share is larger: 1.31× from 8× the
        // workers is still no scaling.
        let pts = [
            measured(1, 21.3, 2_900.0, r()),
            measured(2, 24.0, 5_300.0, r()),
            measured(4, 24.8, 10_300.0, r()),
            measured(8, 27.9, 17_900.0, r()),
        ];
        let a = on_testfs(&pts);
        assert_eq!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
    }

    /// The resources of a run on the test FUSE file system.
    fn testfs_res() -> Resources {
        res("fuse.ioscale-testfs", 0.3, 0.05)
    }

    /// The analysis of a write curve on the test FUSE file system.
    fn on_testfs(pts: &[CurvePoint]) -> CurveAnalysis {
        analyse_curve("", "write", "MiB/s", pts, &ctx("fuse.ioscale-testfs"))
    }

    /// A point of `n` workers with noisy repetitions and a measured median.
    fn noisy(n: u32, reps: &[f64], p50: f64) -> CurvePoint {
        CurvePoint {
            lat_p50_us: p50,
            resources: Some(testfs_res()),
            ..pt(n, reps, KIB64)
        }
    }

    #[test]
    fn a_server_that_serves_two_at_once_is_saturated_not_serialised() {
        // A server that serves two requests at once doubles the rate from
        // one worker to two, then stays at its cap: saturated, not
        // serialised (the cap is reached at 2 workers, not 1).
        let r = testfs_res;
        let pts = [
            measured(1, 30.0, 2_100.0, r()),
            measured(2, 58.0, 2_200.0, r()),
            measured(4, 60.0, 4_200.0, r()),
            measured(8, 60.0, 8_400.0, r()),
            measured(16, 60.0, 16_800.0, r()),
        ];
        let a = on_testfs(&pts);
        assert_eq!(a.verdict.kind, VerdictKind::Saturated, "{:?}", a.sentences);
        assert_eq!(a.limit, Some(Limit::Server));
        // Flat throughput whose requests do not wait longer is not a
        // queue behind one server: not called serialised.
        let pts = [
            measured(1, 26.1, 2_300.0, r()),
            measured(2, 27.0, 2_300.0, r()),
            measured(4, 27.4, 2_300.0, r()),
            measured(8, 27.0, 2_300.0, r()),
        ];
        let a = on_testfs(&pts);
        assert_ne!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
    }

    #[test]
    fn noisy_repetitions_on_one_server_thread_are_serialised() {
        // Noisy repetitions (±24 %, a busy machine) still show no scaling:
        // every point stays clearly below twice the first.
        let pts = [
            noisy(1, &[20.0, 27.0, 34.0], 2_200.0),
            noisy(2, &[21.0, 28.0, 33.0], 4_300.0),
            noisy(4, &[19.0, 27.0, 35.0], 8_700.0),
            noisy(8, &[20.0, 26.0, 33.0], 18_000.0),
        ];
        let a = on_testfs(&pts);
        assert_eq!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
        // A first point disturbed low (±40 %, a load average of 16) leaves
        // the throughput unable to rule out a doubling, but the measured
        // latency doubles with every doubling of the workers: each request
        // waits behind the others, so the server takes one at a time.
        let p99 = |us: f64, p: CurvePoint| CurvePoint {
            lat_p99_us: us,
            ..p
        };
        let pts = [
            p99(5_500.0, noisy(1, &[10.0, 18.0, 26.0], 2_170.0)),
            p99(6_100.0, noisy(2, &[26.0, 27.0, 28.0], 4_350.0)),
            p99(12_500.0, noisy(4, &[26.0, 27.0, 28.0], 8_640.0)),
            p99(18_500.0, noisy(8, &[26.0, 27.0, 28.0], 12_600.0)),
        ];
        let a = on_testfs(&pts);
        assert_eq!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
        // The same throughput with latency that stays put (two at a time
        // from 2 workers on) is not.
        let flat = [
            noisy(1, &[10.0, 18.0, 26.0], 2_170.0),
            noisy(2, &[26.0, 27.0, 28.0], 2_300.0),
            noisy(4, &[26.0, 27.0, 28.0], 4_400.0),
            noisy(8, &[26.0, 27.0, 28.0], 8_600.0),
        ];
        let a = on_testfs(&flat);
        assert_ne!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
        // But a noisy first point that may hide a doubling, with latency
        // that barely grows, is not enough.
        let pts = [
            noisy(1, &[50.0, 100.0, 60.0], 900.0),
            noisy(2, &[100.0, 110.0, 105.0], 1_200.0),
        ];
        let a = on_testfs(&pts);
        assert_ne!(a.verdict.kind, VerdictKind::Serialised, "{:?}", a.sentences);
    }

    #[test]
    fn a_fall_beyond_noise_after_a_small_rise_is_a_fall() {
        let r = testfs_res;
        let pts = [
            measured(1, 1000.0, 60.0, r()),
            measured(2, 1300.0, 90.0, r()),
            measured(4, 600.0, 400.0, r()),
        ];
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("ext4"));
        assert_eq!(a.verdict.kind, VerdictKind::Falls, "{:?}", a.sentences);
    }

    #[test]
    fn tmpfs_threads_that_want_every_cpu_are_cpu_bound() {
        // tmpfs, 1, 2 and 4 writers on 2 CPUs, quiet machine, phases of
        // tens of milliseconds: /proc/stat (10 ms ticks) reads the CPUs as
        // 88% busy, but ioscale's four threads were on a CPU or waiting
        // for one 3.7 at a time: they wanted every CPU.
        let mut r4 = res("tmpfs", 1.76, 1.72);
        r4.self_cpu_wait = Some(1.98);
        let mut r2 = res("tmpfs", 1.7, 1.66);
        r2.self_cpu_wait = Some(0.1);
        let mut r1 = res("tmpfs", 1.0, 0.95);
        r1.self_cpu_wait = Some(0.02);
        let pts = [
            measured(1, 1500.0, 40.0, r1),
            measured(2, 2600.0, 45.0, r2),
            measured(4, 2650.0, 90.0, r4),
        ];
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("tmpfs"));
        assert_eq!(a.verdict.kind, VerdictKind::CpuBound, "{:?}", a.sentences);
        assert_eq!(a.limit, Some(Limit::Cpu));
        let l = a.verdict.limiter.as_ref().unwrap();
        assert_eq!(l.workers, 4);
        assert!(
            l.figure
                .starts_with("the CPUs: both CPUs 88% busy, ioscale 1.72 cores"),
            "{}",
            l.figure
        );
        assert!(
            a.verdict.text.contains("rises 1.77× from 1 worker"),
            "{}",
            a.verdict.text
        );
        assert!(
            a.verdict
                .text
                .contains("At 4 workers ioscale's threads were running or waiting for a CPU 3.70 at a time on average, for 2 CPUs; the limit is the CPUs: both CPUs 88% busy"),
            "{}",
            a.verdict.text
        );
        // On a machine shared with compilers, more threads win a larger
        // share of the CPUs, so the line rises; it is still the CPUs.
        let mut r = res("tmpfs", 2.01, 0.76);
        r.self_cpu_wait = Some(2.67);
        r.top_other = Some(ProcessUse {
            pid: 9,
            name: "rustc".into(),
            cores: 0.64,
        });
        let pts = [
            pt(1, &[960.0, 1030.0, 1090.0], KIB64),
            pt(2, &[1250.0, 1310.0, 1390.0], KIB64),
            CurvePoint {
                resources: Some(r),
                ..pt(4, &[1700.0, 1740.0, 1790.0], KIB64)
            },
        ];
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("tmpfs"));
        assert_eq!(a.verdict.kind, VerdictKind::CpuBound, "{:?}", a.sentences);
        assert!(
            a.verdict
                .text
                .contains("other work: rustc, pid 9, at 0.64 cores"),
            "{}",
            a.verdict.text
        );
    }

    #[test]
    fn io_bound_threads_that_wait_briefly_for_a_cpu_are_not_starved() {
        // Eight workers that sleep on a FUSE server, on CPUs a compiler
        // keeps busy: they wait 0.25 s per second for a CPU in all, more
        // than the 0.05 cores they run, but each waits 3% of the time.
        let mut r = res("fuse.ioscale-testfs", 1.97, 0.05);
        r.self_cpu_wait = Some(0.25);
        r.top_other = Some(ProcessUse {
            pid: 7,
            name: "rustc".into(),
            cores: 1.7,
        });
        let p = CurvePoint {
            resources: Some(r),
            ..pt(8, &tight(60.0), KIB64)
        };
        let l = limiter(&[p], &ctx("fuse.ioscale-testfs"));
        assert_eq!(l.limit, Limit::Server, "{}", l.figure);
    }

    #[test]
    fn cpus_busy_with_other_work_are_not_the_limit() {
        let mut r = res("ext4", 1.98, 0.2);
        r.top_other = Some(ProcessUse {
            pid: 7,
            name: "rustc".into(),
            cores: 1.7,
        });
        let p = CurvePoint {
            resources: Some(r),
            ..pt(4, &tight(100.0), KIB64)
        };
        let l = limiter(std::slice::from_ref(&p), &ctx("ext4"));
        assert_eq!(l.limit, Limit::Unidentified, "{}", l.figure);
        assert!(
            l.figure
                .contains("mostly with other work: rustc, pid 7, at 1.70 cores"),
            "{}",
            l.figure
        );
        // But when ioscale's threads wait for a CPU longer than they run,
        // the CPUs are its limit, whoever keeps them busy.
        let mut r = p.resources.clone().unwrap();
        r.self_cpu_wait = Some(1.2);
        let p = CurvePoint {
            resources: Some(r),
            ..p
        };
        let l = limiter(&[p], &ctx("ext4"));
        assert_eq!(l.limit, Limit::Cpu, "{}", l.figure);
        assert!(
            l.figure.contains("waiting for a CPU 1.20 s per second"),
            "{}",
            l.figure
        );
    }

    /// A device kept busy by other work is not the limit of a phase whose
    /// own I/O does not explain its traffic.
    #[test]
    fn a_device_busy_with_other_work_is_not_the_limit() {
        let mut r = res("ext4", 0.3, 0.2);
        r.device = Some(DeviceUse {
            name: "vda".into(),
            util: 0.98,
            write_mib_s: 100.0,
            ..Default::default()
        });
        // A stat served from the caches (no data, the device only writing
        // for other work): the device is busy, but not the limit.
        let stat = CurvePoint {
            resources: Some(r.clone()),
            write_bytes: 0,
            reads_only: true,
            counts_files: true,
            ..pt(8, &tight(100.0), 0.0)
        };
        let l = limiter(std::slice::from_ref(&stat), &ctx("ext4"));
        assert_eq!(l.limit, Limit::Unidentified, "{}", l.figure);
        assert!(
            l.figure
                .contains("device vda 98% busy, not with this phase's I/O"),
            "{}",
            l.figure
        );
        // Reads the page cache served while others wrote: the same.
        let cached = CurvePoint {
            read_bytes: 100 << 20,
            reads_only: true,
            ..stat.clone()
        };
        let l = limiter(std::slice::from_ref(&cached), &ctx("ext4"));
        assert_eq!(l.limit, Limit::Unidentified, "{}", l.figure);
        // Through analyse_curve, a stat line names no device either.
        let c = analyse_curve(
            "",
            "stat",
            "files/s",
            &[
                CurvePoint {
                    threads: 1,
                    ..stat.clone()
                },
                stat.clone(),
            ],
            &ctx("ext4"),
        );
        assert!(
            !c.verdict.text.contains("limited by device"),
            "{}",
            c.verdict.text
        );
    }

    #[test]
    fn device_and_daemon_limits() {
        let mut r = res("ext4", 0.3, 0.2);
        r.device = Some(DeviceUse {
            name: "vda".into(),
            util: 0.98,
            avg_queue: 31.7,
            avg_request_bytes: 1_048_576.0,
            write_mib_s: 100.0,
            ..Default::default()
        });
        // The phase wrote what the device wrote: its busy time is the
        // phase's.
        let p = CurvePoint {
            resources: Some(r.clone()),
            write_bytes: 100 << 20,
            ..pt(8, &tight(100.0), KIB64)
        };
        let l = limiter(std::slice::from_ref(&p), &ctx("ext4"));
        assert_eq!(l.limit, Limit::Device);
        assert!(
            l.figure.contains("device vda 98% busy, queue 31.7"),
            "{}",
            l.figure
        );
        let mut r = res("fuse.sshfs", 1.1, 0.1);
        let sshfs = ProcessUse {
            pid: 42,
            name: "sshfs".into(),
            cores: 0.93,
        };
        r.top_other = Some(sshfs.clone());
        // A busy process that is not the daemon is not the limit.
        let p = CurvePoint {
            resources: Some(r.clone()),
            ..p
        };
        let l = limiter(std::slice::from_ref(&p), &ctx("fuse.sshfs"));
        assert_eq!(l.limit, Limit::Server, "{}", l.figure);
        r.fuse = Some(probe::FuseUse {
            daemon: Some(sshfs),
            ..Default::default()
        });
        let p = CurvePoint {
            resources: Some(r),
            ..p
        };
        let l = limiter(&[p], &ctx("fuse.sshfs"));
        assert_eq!(l.limit, Limit::Process);
        assert!(
            l.figure
                .contains("FUSE daemon (sshfs, pid 42) at 0.93 of a core"),
            "{}",
            l.figure
        );
        // No measurements: say so, do not guess from the file-system type.
        let l = limiter(&[pt(8, &tight(100.0), KIB64)], &ctx("ext4"));
        assert_eq!(l.limit, Limit::NotMeasured);
    }

    #[test]
    fn noise_prevents_false_falls_and_knees() {
        // A linear line with a wide spread: 4 and 8 overlap, 8 "below" 4.
        let pts = vec![
            pt(1, &[5.0, 15.0, 9.0, 11.0], KIB64),
            pt(2, &[10.0, 30.0, 15.0, 25.0], KIB64),
            pt(4, &[20.0, 80.0, 30.0, 70.0], KIB64),
            pt(8, &[25.0, 90.0, 35.0, 50.0], KIB64),
        ];
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("ext4"));
        assert!(
            !matches!(a.verdict.kind, VerdictKind::Falls | VerdictKind::Saturated),
            "{:?}",
            a.sentences
        );
        assert_eq!(a.enough_threads, 0);
        assert!(a.verdict.text.contains("nois"), "{}", a.verdict.text);
        assert!(a.verdict.text.contains("--reps"), "{}", a.verdict.text);
        // The same shape with tight repetitions does fall.
        let pts = vec![
            pt(1, &tight(10.0), KIB64),
            pt(2, &tight(20.0), KIB64),
            pt(4, &tight(40.0), KIB64),
            pt(8, &tight(30.0), KIB64),
        ];
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("ext4"));
        assert_eq!(a.verdict.kind, VerdictKind::Falls, "{:?}", a.sentences);
        assert!(
            a.verdict.text.contains("25% below the peak"),
            "{}",
            a.verdict.text
        );
    }

    #[test]
    fn one_repetition_is_unsupported() {
        let pts: Vec<CurvePoint> = [1u32, 2, 4]
            .iter()
            .map(|&n| pt(n, &[10.0 * n as f64], KIB64))
            .collect();
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("ext4"));
        assert!(!a.verdict.supported);
        assert!(
            a.verdict.text.contains("not supported by repetitions"),
            "{}",
            a.verdict.text
        );
    }

    #[test]
    fn one_repetition_quotes_no_noise() {
        // tmpfs, --reps 1: "never more than 1.06× the first with 2× the
        // workers (within noise: ±0%)" quoted a noise that one repetition
        // cannot measure. Every sentence of such a line, and a comparison
        // of two such lines, says there is no noise estimate instead.
        let line = |s: &str, vals: &[(u32, f64)]| {
            let pts: Vec<CurvePoint> = vals
                .iter()
                .map(|&(n, v)| pt(n, &[v], 1_048_576.0))
                .collect();
            analyse_curve(s, "read", "MiB/s", &pts, &ctx("tmpfs"))
        };
        let flat = [(1, 2772.75), (2, 2850.0)];
        for a in [
            line("", &flat),
            line("", &[(1, 2772.75)]),
            line("", &[(1, 2772.75), (2, 2850.0), (4, 2790.0)]),
        ] {
            for t in &a.sentences {
                assert!(!t.contains("±0%"), "{t}");
            }
        }
        let a = line("", &flat);
        assert!(
            a.verdict
                .text
                .contains("(no noise estimate: one repetition)"),
            "{}",
            a.verdict.text
        );
        let c = compare_curves(&line("/a", &flat), &line("/b", &flat)).unwrap();
        assert!(!c.differ);
        assert!(!c.sentence.contains("±0%"), "{}", c.sentence);
        assert!(c.sentence.contains("no noise estimate"), "{}", c.sentence);
    }

    #[test]
    fn one_repetition_judges_no_gap_against_noise() {
        // Measured with `sweep --reps 1` on tmpfs (MiB/s at 1, 2, 4
        // writers): the first line read "then falls beyond noise to 4445",
        // a judgement against a noise one repetition does not measure.
        let line = |s: &str, vals: &[f64]| {
            let pts: Vec<CurvePoint> = [1, 2, 4]
                .iter()
                .zip(vals)
                .map(|(&n, &v)| pt(n, &[v], KIB64))
                .collect();
            analyse_curve(s, "write", "MiB/s", &pts, &ctx("tmpfs"))
        };
        let lines = [
            line("/r1", &[2675.4, 6241.1, 4444.7]),
            line("/r2", &[831.94, 1428.45, 2166.95]),
            line("/a", &[3650.83, 7208.62, 4641.11]),
            line("/b", &[2979.13, 6358.38, 2827.64]),
            line("/c", &[3650.0, 3700.0, 3690.0]),
            line("/d", &[3000.0, 7000.0, 7100.0]),
        ];
        let words = [
            "beyond noise",
            "clearly",
            "within noise",
            "no clear difference",
        ];
        let check = |t: &str| {
            for w in words {
                assert!(!t.to_lowercase().contains(w), "{w:?}: {t}");
            }
        };
        for l in &lines {
            l.sentences.iter().for_each(|t| check(t));
            for m in &lines {
                if let Some(c) = compare_curves(l, m) {
                    check(&c.sentence);
                }
            }
        }
        assert!(lines[0].verdict.text.contains(
            "then falls to 4445 at 4 workers (29% below the peak; no noise estimate: one repetition)"
        ));
        let c = compare_curves(&lines[2], &lines[3]).unwrap();
        assert!(
            c.sentence.contains("by 1.13× to 1.64× (one repetition"),
            "{}",
            c.sentence
        );
    }

    #[test]
    fn failed_repetitions_are_reported() {
        let mut p = pt(1, &[20.0], KIB64);
        p.failed = 1;
        p.first_error = Some("write file.0: Invalid argument (os error 22)".into());
        let a = analyse_curve(
            "",
            "write",
            "MiB/s",
            &[p, pt(2, &[40.0], KIB64)],
            &ctx("ext4"),
        );
        assert!(
            a.sentences[0].starts_with("1 of 2 repetitions failed at 1 worker and are left out of every figure: write file.0: Invalid argument"),
            "{:?}",
            a.sentences
        );
        let mut dead = pt(4, &[0.0], KIB64);
        dead.reps = 0;
        dead.failed = 2;
        let a = analyse_curve("", "write", "MiB/s", &[dead], &ctx("ext4"));
        assert_eq!(a.verdict.kind, VerdictKind::AllFailed);
    }

    #[test]
    fn usl_is_quoted_only_when_it_earns_it() {
        let line = |ns: &[u32], s: f64, k: f64| -> Vec<CurvePoint> {
            ns.iter()
                .map(|&n| {
                    let x = n as f64;
                    pt(
                        n,
                        &tight(25.0 * x / (1.0 + s * (x - 1.0) + k * x * (x - 1.0))),
                        KIB64,
                    )
                })
                .collect()
        };
        let a = analyse_curve(
            "",
            "write",
            "MiB/s",
            &line(&[1, 2, 4], 0.05, 0.001),
            &ctx("ext4"),
        );
        assert!(!a.usl_shown);
        assert!(a
            .sentences
            .iter()
            .any(|s| s.contains("needs at least 5 worker counts, this line has 3")));
        let a = analyse_curve(
            "",
            "write",
            "MiB/s",
            &line(&[1, 2, 4, 8, 16, 32, 64], 0.02, 0.0004),
            &ctx("ext4"),
        );
        assert!(a.usl_shown, "{:?}", a.sentences);
        let s = a.sentences.iter().find(|s| s.contains("USL")).unwrap();
        assert!(s.contains("κ = 4.00e-4"), "{s}");
        assert!(s.contains("N* = √[(1−σ)/κ] ≈ 49.5 workers"), "{s}");
        // Amdahl: κ = 0 exactly, and said so only then.
        let a = analyse_curve(
            "",
            "write",
            "MiB/s",
            &line(&[1, 2, 4, 8, 16, 32], 0.2, 0.0),
            &ctx("ext4"),
        );
        let s = a.sentences.iter().find(|s| s.contains("USL")).unwrap();
        assert!(s.contains("κ = 0,") && s.contains("With κ = 0"), "{s}");
        // Noise the model cannot explain is not quoted.
        let zig = vec![
            pt(1, &tight(50.0), KIB64),
            pt(2, &tight(10.0), KIB64),
            pt(4, &tight(60.0), KIB64),
            pt(8, &tight(12.0), KIB64),
            pt(16, &tight(55.0), KIB64),
        ];
        let a = analyse_curve("", "write", "MiB/s", &zig, &ctx("ext4"));
        assert!(!a.usl_shown);
        assert!(
            !a.sentences.iter().any(|s| s.contains("N* =")),
            "{:?}",
            a.sentences
        );
    }

    #[test]
    fn usl_ceiling_is_never_below_the_peak() {
        let f = UslFit {
            sigma: 0.1,
            kappa: 0.0,
            lambda: 50.0,
            peak_threads: None,
            ceiling: Some(435.0),
            r2: 0.95,
            points: 6,
        };
        let pts: Vec<CurvePoint> = [1, 2, 4, 8, 16]
            .iter()
            .map(|&n| {
                pt(
                    n,
                    &tight(if n == 16 { 526.0 } else { 30.0 * n as f64 }),
                    KIB64,
                )
            })
            .collect();
        let s = usl_sentence(&f, "MiB/s", &Shape::of(&pts));
        assert!(s.contains("below the measured peak of 526 MiB/s"), "{s}");
        assert!(!s.contains("levels off"), "{s}");
    }

    /// 60× from 16 workers on 2 CPUs is named: explained by the waits the
    /// CPU figures show, or flagged where they cannot explain it.
    #[test]
    fn a_speedup_beyond_the_cpus_is_named() {
        // 1 worker at 10 MiB/s of 64 KiB (160 ops/s), 0.02 cores, 125 µs
        // of CPU per operation; 16 workers at 150 MiB/s.
        let one = CurvePoint {
            cpu_busy: 0.02,
            cpu_s_per_op: 125e-6,
            ..pt(1, &tight(10.0), KIB64)
        };
        let many = pt(16, &tight(150.0), KIB64);
        let a = analyse_curve(
            "",
            "write",
            "MiB/s",
            &[one.clone(), many.clone()],
            &ctx("ext4"),
        );
        let s = a
            .sentences
            .iter()
            .find(|s| s.starts_with("The rate grew"))
            .unwrap_or_else(|| panic!("{:?}", a.sentences));
        assert!(
            s.contains("15.0× from 1 worker to 16 workers, with 16.0× the workers, on 2 CPUs")
                && s.contains(
                    "They were mostly waiting for replies: at 1 worker ioscale used 0.02 cores"
                )
                && s.contains("more workers overlap more waits"),
            "{s}"
        );
        // The same rates where one operation took 5 ms of CPU: 2 CPUs
        // carry 400 operations/s, and 16 workers made 2,400.
        let costly = CurvePoint {
            cpu_s_per_op: 5e-3,
            ..one.clone()
        };
        let a = analyse_curve("", "write", "MiB/s", &[costly, many.clone()], &ctx("ext4"));
        let s = a
            .sentences
            .iter()
            .find(|s| s.starts_with("The rate grew"))
            .unwrap();
        assert!(s.contains("Each operation cost less CPU"), "{s}");
        // More than linear: 4 workers at 10× one worker.
        let four = pt(4, &tight(100.0), KIB64);
        let a = analyse_curve("", "write", "MiB/s", &[one.clone(), four], &ctx("ext4"));
        let s = a
            .sentences
            .iter()
            .find(|s| s.starts_with("The rate grew"))
            .unwrap();
        assert!(s.contains("more than the workers alone can give"), "{s}");
        // Within what 2 CPUs give: nothing to name.
        let two = pt(2, &tight(19.0), KIB64);
        let a = analyse_curve("", "write", "MiB/s", &[one, two], &ctx("ext4"));
        assert!(
            !a.sentences.iter().any(|s| s.starts_with("The rate grew")),
            "{:?}",
            a.sentences
        );
    }

    /// A fitted figure beyond the range the fit was made on is marked as
    /// an extrapolation with its distance, and never leads: seen, "levels
    /// off towards ≈ 60,868 MiB/s" 80× above the highest point measured,
    /// and "peak at ≈ 24 workers" of a line that never fell.
    #[test]
    fn usl_figures_beyond_the_fitted_range_are_marked_as_extrapolations() {
        let line = |ns: &[u32], s: f64, k: f64| -> Vec<CurvePoint> {
            ns.iter()
                .map(|&n| {
                    let x = n as f64;
                    pt(
                        n,
                        &tight(25.0 * x / (1.0 + s * (x - 1.0) + k * x * (x - 1.0))),
                        KIB64,
                    )
                })
                .collect()
        };
        let a = analyse_curve(
            "",
            "write",
            "MiB/s",
            &line(&[1, 2, 4, 8, 16], 0.001, 0.0),
            &ctx("ext4"),
        );
        assert!(a.usl_shown, "{:?}", a.sentences);
        let s = a.sentences.iter().find(|s| s.contains("USL")).unwrap();
        assert!(
            s.contains("an extrapolation,") && s.contains("× the highest rate measured ("),
            "{s}"
        );
        assert!(!s.contains("levels off towards"), "{s}");
        assert!(!a.verdict.text.contains("USL"), "{}", a.verdict.text);
        let a = analyse_curve(
            "",
            "write",
            "MiB/s",
            &line(&[1, 2, 4, 8, 16], 0.01, 0.0015),
            &ctx("ext4"),
        );
        assert!(a.usl_shown, "{:?}", a.sentences);
        let s = a.sentences.iter().find(|s| s.contains("USL")).unwrap();
        assert!(
            s.contains("Beyond the range it was fitted on, it would put a peak at N*")
                && s.contains("× the most workers measured and an extrapolation"),
            "{s}"
        );
        assert!(!a.verdict.text.contains("USL"), "{}", a.verdict.text);
        // Inside the range: quoted as the model's reading of the points.
        let a = analyse_curve(
            "",
            "write",
            "MiB/s",
            &line(&[1, 2, 4, 8, 16, 32, 64], 0.02, 0.0004),
            &ctx("ext4"),
        );
        let s = a.sentences.iter().find(|s| s.contains("USL")).unwrap();
        assert!(s.contains("inside the range measured"), "{s}");
    }

    #[test]
    fn identical_lines_are_no_different() {
        let mk = |s: &str| {
            let pts: Vec<CurvePoint> = [(1u32, [100.0, 140.0, 120.0]), (2, [190.0, 240.0, 210.0])]
                .iter()
                .map(|(n, r)| pt(*n, r, KIB64))
                .collect();
            analyse_curve(s, "write", "MiB/s", &pts, &ctx("ext4"))
        };
        let mut b = mk("shared");
        // The other layout measured a little higher at 1 worker, within noise.
        b.points[0] = pt(1, &[110.0, 150.0, 135.0], KIB64);
        let c = compare_curves(&mk("per-thread"), &b).unwrap();
        assert!(!c.differ);
        assert!(
            c.sentence
                .starts_with("No clear difference between per-thread and shared"),
            "{}",
            c.sentence
        );
    }

    #[test]
    fn catch_up_beyond_noise() {
        let ebs: Vec<CurvePoint> = [1u32, 4, 16]
            .iter()
            .map(|&n| pt(n, &tight(136.0), KIB64))
            .collect();
        let efs: Vec<CurvePoint> = [(1u32, 23.6), (4, 87.9), (16, 193.6)]
            .iter()
            .map(|&(n, v)| pt(n, &tight(v), KIB64))
            .collect();
        let a = analyse_curve("/ebs", "write", "MiB/s", &ebs, &ctx("ext4"));
        let b = analyse_curve("/efs", "write", "MiB/s", &efs, &ctx("nfs4"));
        let c = compare_curves(&a, &b).unwrap();
        assert_eq!(c.catch_up_threads, Some(16));
        assert!(
            c.sentence.starts_with("/efs overtakes /ebs at 16 workers"),
            "{}",
            c.sentence
        );
    }

    #[test]
    fn a_lead_that_comes_back_is_not_a_catch_up() {
        // Clearly apart at 1, 4 and 8 workers, level at 2 only: "/b
        // catches up with /a at 2 workers" alone read as level from there.
        let mk = |s: &str, vals: &[(u32, f64)]| {
            let pts: Vec<CurvePoint> = vals.iter().map(|&(n, v)| pt(n, &tight(v), KIB64)).collect();
            analyse_curve(s, "write", "MiB/s", &pts, &ctx("ext4"))
        };
        let a = mk("/a", &[(1, 100.0), (2, 150.0), (4, 300.0), (8, 400.0)]);
        let b = mk("/b", &[(1, 50.0), (2, 150.0), (4, 150.0), (8, 200.0)]);
        let c = compare_curves(&a, &b).unwrap();
        assert!(
            c.sentence.starts_with("/b catches up with /a at 2 workers"),
            "{}",
            c.sentence
        );
        assert!(
            c.sentence
                .contains("but /a is clearly faster again at 4 workers (300 vs 150 MiB/s)"),
            "{}",
            c.sentence
        );
        // Level first, apart at 2, level again at 4: not "from 2 on".
        let a = mk("/a", &[(1, 100.0), (2, 300.0), (4, 150.0)]);
        let b = mk("/b", &[(1, 100.0), (2, 150.0), (4, 150.0)]);
        let c = compare_curves(&a, &b).unwrap();
        assert!(!c.sentence.contains("from 2 workers on"), "{}", c.sentence);
        assert!(
            c.sentence
                .contains("at 2 workers, though not at every count above it, /a is faster"),
            "{}",
            c.sentence
        );
    }

    #[test]
    fn formats() {
        assert_eq!(num(281.12), "281");
        assert_eq!(num(49.497), "49.5");
        assert_eq!(dur(0.004), "4.00 ms");
        assert_eq!(dur(250e-6), "250 µs");
        assert_eq!(coef(0.049), "0.049");
        assert_eq!(coef(0.0), "0");
        assert_eq!(Units::Si.from_mib_s(1.0), 1.048576);
        assert_eq!(Units::parse("si"), Some(Units::Si));
    }
}
