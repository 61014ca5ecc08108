//! The record of a sweep: every point's full run record plus the
//! statistics and analysis derived from them.
//!
//! Like a run's [`ResultSet`], this is pure data and the canonical JSON
//! output of `ioscale sweep`; tables, CSV, charts and the HTML report are
//! rendered from it, so `ioscale report` can redraw them later. It is
//! written again after every finished point, which is also what `--resume`
//! reads back.

use probe::Resources;
use serde::{Deserialize, Serialize};
use stats::bootstrap::trimmed_mean_ci;
use stats::summary::{outliers, trimmed_mean, OUTLIER_Z};
use stats::{Interval, RepStats};

use report::{HostInfo, PhaseRecord, ResultSet};

use crate::adapt::{Axis, RepFigure, RepsAuto, RepsOutcome, SearchReport, ThreadsAuto};
use crate::verdict::Analysis;

/// Version of the sweep JSON layout.
pub const SWEEP_SCHEMA: u32 = 1;

/// The whole record of one sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRecord {
    /// Layout version of this record.
    pub schema: u32,
    /// Always "ioscale".
    pub tool: String,
    /// Always "sweep": tells a sweep record from a run record.
    pub kind: String,
    /// ioscale version that wrote it.
    pub version: String,
    /// The command line, word by word.
    pub command: Vec<String>,
    /// When the sweep began, RFC 3339 UTC.
    pub started: String,
    /// Machine facts (and the first target's file system).
    pub host: HostInfo,
    /// What was swept; `--resume` requires it to match.
    pub config: SweepConfig,
    /// Whether an interrupt stopped the sweep before every point ran.
    pub interrupted: bool,
    /// Points in the whole sweep (finished or not).
    pub points_total: usize,
    /// Why the sweep stopped before every point was measured: "interrupted
    /// by SIGINT" (or SIGTERM), or "refused: point …: error". Absent when
    /// every point ran, and in a journal whose sweep still runs or was
    /// killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The finished points, in sweep order.
    pub points: Vec<SweepPoint>,
    /// What the points say (recomputed whenever a point is added).
    pub analysis: Analysis,
    /// Under `--threads auto`: the search's path, the time of each count,
    /// each line's optimum and stop (recomputed with the analysis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchReport>,
}

impl SweepRecord {
    /// Whether operation `op` moves data: any point where it has a good
    /// repetition moved bytes; where every repetition of it failed (it
    /// moved nothing, so its own figures cannot tell), whether it ran in
    /// a data job (`run`, fio) rather than one that counts files. One
    /// answer per operation, so a point that failed stays on its line
    /// and in its unit (a failed write point was counted in ops/s).
    pub fn op_moves_data(&self, op: &str) -> bool {
        let ops = || {
            self.points
                .iter()
                .flat_map(|p| p.ops.iter().map(move |o| (p, o)))
                .filter(|(_, o)| o.op == op)
        };
        match ops().find(|(_, o)| o.reps > 0) {
            Some(_) => ops().any(|(_, o)| o.reps > 0 && o.rate_is_data()),
            None => ops().any(|(p, o)| !o.counts_files && p.result.spec.as_run().is_some()),
        }
    }

    /// `(failed, total, first error)` over every point's repetitions
    /// (total counts the failed and the good ones), when any failed.
    pub fn failed_reps(&self) -> Option<(usize, usize, String)> {
        let ops = || self.points.iter().flat_map(|p| &p.ops);
        let failed: usize = ops().map(|o| o.failed).sum();
        if failed == 0 {
            return None;
        }
        let total = ops().map(|o| o.failed + o.reps).sum();
        let first = ops().find_map(|o| o.first_error.clone());
        Some((failed, total, first.unwrap_or_default()))
    }
}

/// The parameters of a sweep: everything that decides which points exist
/// and how each is run (output files are not part of it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepConfig {
    /// The inner command: `run` or `meta`.
    pub command: String,
    /// Thread counts.
    pub threads: Vec<u32>,
    /// Transfer sizes in bytes; empty when the inner command's own is used.
    pub xfer: Vec<u64>,
    /// Layouts; empty when the inner command's own is used.
    pub layout: Vec<String>,
    /// Targets; empty when the inner command's own is used.
    pub targets: Vec<String>,
    /// Queue depths (`--iodepth`); empty when the inner command's own is
    /// used (and in sweeps recorded before the axis existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub iodepth: Vec<u32>,
    /// Repetitions per point.
    pub reps: u32,
    /// `total` (the data in all stays constant) or `per-thread`.
    pub scale: String,
    /// Repetitions dropped at each end for the trimmed mean.
    pub trim: u32,
    /// The inner command's words, as given after `--`.
    pub inner: Vec<String>,
    /// `--threads auto[:MAX]`: the counts are searched, not listed
    /// (`threads` then holds the counts the search may try).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads_auto: Option<ThreadsAuto>,
    /// `--reps auto[:x%]` with `--max-reps`: each point repeats until its
    /// interval is within the target (`reps` then holds the most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reps_auto: Option<RepsAuto>,
    /// What `threads_auto` searches: the workers (the default), or the
    /// ranks, nodes or transfer size (`--ranks`/`--nodes`/`--xfer auto`).
    #[serde(default, skip_serializing_if = "is_workers")]
    pub search_axis: Axis,
}

fn is_workers(a: &Axis) -> bool {
    *a == Axis::Workers
}

impl SweepConfig {
    /// Whether the search may measure count `c` on its axis: a planned
    /// thread count or transfer size (a `--scale total` sweep plans only
    /// those its total splits evenly across), any rank or node count up
    /// to the search's largest.
    pub fn may_search(&self, c: u32) -> bool {
        match self.search_axis {
            Axis::Workers => self.threads.is_empty() || self.threads.contains(&c),
            Axis::Ranks | Axis::Nodes { .. } => true,
            Axis::Xfer { unit } => self.xfer.contains(&u64::from(c).saturating_mul(unit)),
        }
    }
}

/// One finished point of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// Position in the sweep order, from 0.
    pub index: usize,
    /// Label of the line this point belongs to in the charts (the swept
    /// values other than threads), e.g. `"/mnt/efs shared"`.
    pub series: String,
    /// Workers.
    pub threads: u32,
    /// Bytes per request (0 for metadata workloads).
    pub xfer: u64,
    /// File layout (`shared`, `per-thread`, `per-thread-dir`, or the
    /// directory mode of a metadata workload).
    pub layout: String,
    /// The tested directory.
    pub target: String,
    /// Files the workload uses.
    pub file_count: u64,
    /// Whether each file has a directory of its own (the seeds' "Directory
    /// per file").
    pub dir_per_file: bool,
    /// Bytes each worker moves per phase.
    pub bytes_per_thread: u64,
    /// Statistics per operation over the repetitions.
    pub ops: Vec<OpStats>,
    /// Geometric mean across the operations of the central throughput
    /// (MiB/s), as the Flux7 study condensed its four operations; `None`
    /// when an operation moved no data.
    pub geomean_bw_mib_s: Option<f64>,
    /// Geometric mean across the operations of the central rate in
    /// operations per second.
    pub geomean_iops: Option<f64>,
    /// The point's full run record.
    pub result: ResultSet,
    /// What each phase of each repetition used, as the driver measured it
    /// (rank 0's under MPI); `ops[].resources` combine them per operation.
    /// Empty in records written before the probe.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<PhaseProbe>,
    /// Under `--reps auto`: how many repetitions the point took and
    /// whether its interval reached the target (recomputed from `ops`
    /// with the analysis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reps_auto: Option<RepsOutcome>,
}

/// One operation of one point, over its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpStats {
    /// Operation name.
    pub op: String,
    /// Repetitions that completed (interrupted ones are left out).
    pub reps: usize,
    /// Bandwidth, MiB/s (2^20).
    pub bw_mib_s: RepStats,
    /// Bandwidth, MB/s (10^6), as the seed tables print it.
    pub bw_mb_s: RepStats,
    /// Operations (or files) per second.
    pub iops: RepStats,
    /// Phase duration, seconds.
    pub elapsed_s: RepStats,
    /// Repetitions dropped at each end for the trimmed means.
    pub trim: u32,
    /// Trimmed mean of `bw_mib_s`; `None` when trimming leaves nothing.
    pub bw_mib_s_trimmed: Option<f64>,
    /// Trimmed mean of `iops`.
    pub iops_trimmed: Option<f64>,
    /// Trimmed mean of `elapsed_s`.
    pub elapsed_s_trimmed: Option<f64>,
    /// Repetition numbers whose bandwidth (or rate, for metadata) is an
    /// outlier by modified z-score (|M| > 3.5, Iglewicz & Hoaglin).
    pub outlier_reps: Vec<u32>,
    /// Little's law: mean time one operation spends in the system,
    /// `threads ÷ ops per second`, seconds; `None` (`null`) when no
    /// repetition was good: nothing was measured.
    #[serde(default, deserialize_with = "measured")]
    pub little_latency_s: Option<f64>,
    /// Measured median request latency (mean over the good repetitions),
    /// µs; `None` without a good repetition.
    #[serde(default, deserialize_with = "measured")]
    pub lat_p50_us: Option<f64>,
    /// CPU time (user + system) per operation, seconds (mean over the good
    /// repetitions); `None` without one.
    #[serde(default, deserialize_with = "measured")]
    pub cpu_s_per_op: Option<f64>,
    /// CPUs kept busy: CPU time ÷ elapsed time (mean over the good
    /// repetitions); `None` without one.
    #[serde(default, deserialize_with = "measured")]
    pub cpu_busy: Option<f64>,
    /// Repetitions that failed (request errors, or a stopped phase): they
    /// are left out of every figure above and counted here.
    #[serde(default)]
    pub failed: usize,
    /// The first error of a failed repetition, as the run recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// 95 % bootstrap interval of the central bandwidth (MiB/s), or of the
    /// central rate for an operation that moves no data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci: Option<Interval>,
    /// Measured 99th-percentile request latency (mean over the good
    /// repetitions), µs; `None` without one.
    #[serde(default, deserialize_with = "measured")]
    pub lat_p99_us: Option<f64>,
    /// Whether the operation counts files (a metadata phase of `meta`):
    /// its rate is files/s, not ops/s.
    #[serde(default)]
    pub counts_files: bool,
    /// Operations (files, for a metadata phase) done by the good
    /// repetitions together.
    #[serde(default)]
    pub ops_total: u64,
    /// Bytes read by the good repetitions together (0 in records written
    /// before it was kept).
    #[serde(default)]
    pub read_bytes: u64,
    /// Bytes written by the good repetitions together.
    #[serde(default)]
    pub write_bytes: u64,
    /// What the phase used (CPU, device, FUSE), over its good repetitions,
    /// when the driver measured it (see the `probe` crate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
}

pub use probe::PhaseProbe;

/// Whether a phase record is a failed repetition: it saw request errors,
/// or moved nothing at all.
pub fn phase_failed(p: &PhaseRecord) -> bool {
    p.errors > 0 || (p.ops == 0 && p.bytes == 0 && !p.interrupted)
}

/// The reason a point's failed repetitions give: the first error of the
/// operation `op` (or the first of all), said with where it happened, or
/// what the first failed repetition `b` shows when no error was recorded.
fn first_error(op: &str, errors: &[report::ErrorRecord], b: &PhaseRecord) -> String {
    errors
        .iter()
        .find(|e| e.op == op || op.contains(e.op.as_str()))
        .or(errors.first())
        .map(|e| {
            // The engine's message is the system's ("Input/output
            // error"); say where, unless it already does.
            if e.file.is_empty() || e.message.contains(&e.file) {
                e.message.clone()
            } else {
                match e.offset {
                    Some(o) => format!("{} {} at {o}: {}", e.op, e.file, e.message),
                    None => format!("{} {}: {}", e.op, e.file, e.message),
                }
            }
        })
        .unwrap_or_else(|| {
            if b.errors > 0 {
                format!(
                    "{} request error(s) in repetition {}",
                    b.errors,
                    report::shown_rep(b.rep)
                )
            } else {
                format!("repetition {} moved nothing", report::shown_rep(b.rep))
            }
        })
}

/// The mean of `f` over the good repetitions `rows`, counting a row
/// without a figure (`None`) as 0; `None` when there is no row (an empty
/// sum of `f64` is -0.0, which records once held as if it were a measured
/// latency or CPU time).
fn mean_of(rows: &[&PhaseRecord], f: impl Fn(&PhaseRecord) -> Option<f64>) -> Option<f64> {
    (!rows.is_empty())
        .then(|| rows.iter().map(|p| f(p).unwrap_or(0.0)).sum::<f64>() / rows.len() as f64)
}

/// Reads a figure of the good repetitions: a number, or `null` (or no
/// field) when nothing was measured. Records written before `null` hold
/// -0.0 there, the empty sum over no good repetition: no measurement
/// either (a mean of measured figures, all ≥ 0, is never -0.0).
fn measured<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = Option::<f64>::deserialize(d)?;
    Ok(v.filter(|x| !(*x == 0.0 && x.is_sign_negative())))
}

impl OpStats {
    /// Builds the statistics of `op` from a run record's phases; `None`
    /// when no repetition of it completed.
    pub fn from_phases(op: &str, phases: &[PhaseRecord], threads: u32, trim: u32) -> Option<Self> {
        Self::from_run(op, phases, &[], threads, trim, &[])
    }

    /// Builds the statistics of `op`, leaving failed repetitions out of
    /// every figure (they are counted in `failed`, with the first of
    /// `errors` as their reason), and combining the resource measurements
    /// of the good repetitions. `workers` is the total in flight (ranks ×
    /// threads), the N of Little's law. `None` when no repetition of it
    /// ran; a point whose repetitions all failed gives zeros and
    /// `failed > 0`.
    pub fn from_run(
        op: &str,
        phases: &[PhaseRecord],
        errors: &[report::ErrorRecord],
        workers: u32,
        trim: u32,
        probes: &[PhaseProbe],
    ) -> Option<Self> {
        let all: Vec<&PhaseRecord> = phases
            .iter()
            .filter(|p| p.op == op && !p.interrupted)
            .collect();
        if all.is_empty() {
            return None;
        }
        let bad: Vec<&PhaseRecord> = all.iter().copied().filter(|p| phase_failed(p)).collect();
        let rows: Vec<&PhaseRecord> = all.iter().copied().filter(|p| !phase_failed(p)).collect();
        let first_error = bad.first().map(|b| first_error(op, errors, b));
        let pick = |f: fn(&PhaseRecord) -> f64| -> Vec<f64> { rows.iter().map(|p| f(p)).collect() };
        let bw = pick(|p| p.bw_mib_s);
        let iops = pick(|p| p.iops);
        let el = pick(|p| p.elapsed_s);
        let k = trim as usize;
        let moves_data = bw.iter().any(|&b| b > 0.0);
        let judged = if moves_data { &bw } else { &iops };
        let flags = outliers(judged, OUTLIER_Z);
        let zero = RepStats {
            n: 0,
            min: 0.0,
            max: 0.0,
            mean: 0.0,
            median: 0.0,
            stddev: 0.0,
        };
        let st = |v: &[f64]| RepStats::from_samples(v).unwrap_or(zero);
        let iops_stats = st(&iops);
        let ci = trimmed_mean_ci(judged, k).or_else(|| trimmed_mean_ci(judged, 0));
        let good_reps: Vec<u32> = rows.iter().map(|p| p.rep).collect();
        let res: Vec<Resources> = probes
            .iter()
            .filter(|p| p.op == op && good_reps.contains(&p.rep))
            .map(|p| p.resources.clone())
            .collect();
        Some(OpStats {
            op: op.to_string(),
            reps: rows.len(),
            bw_mib_s: st(&bw),
            bw_mb_s: st(&pick(|p| p.bw_mb_s)),
            elapsed_s: st(&el),
            trim,
            bw_mib_s_trimmed: trimmed_mean(&bw, k),
            iops_trimmed: trimmed_mean(&iops, k),
            elapsed_s_trimmed: trimmed_mean(&el, k),
            outlier_reps: rows
                .iter()
                .zip(&flags)
                .filter(|(_, &f)| f)
                .map(|(p, _)| p.rep)
                .collect(),
            little_latency_s: (!rows.is_empty()).then(|| {
                if iops_stats.mean > 0.0 {
                    workers as f64 / iops_stats.mean
                } else {
                    0.0
                }
            }),
            lat_p50_us: mean_of(&rows, |p| Some(p.lat_us.p50)),
            lat_p99_us: mean_of(&rows, |p| Some(p.lat_us.p99)),
            cpu_s_per_op: mean_of(&rows, |p| {
                (p.ops > 0).then(|| (p.cpu_user_s + p.cpu_sys_s) / p.ops as f64)
            }),
            cpu_busy: mean_of(&rows, |p| {
                (p.elapsed_s > 0.0).then(|| (p.cpu_user_s + p.cpu_sys_s) / p.elapsed_s)
            }),
            iops: iops_stats,
            failed: bad.len(),
            first_error,
            ci,
            counts_files: all.iter().any(|p| p.files.is_some()),
            ops_total: rows.iter().map(|p| p.ops).sum(),
            read_bytes: rows
                .iter()
                .fold(0u64, |a, p| a.saturating_add(p.read_bytes)),
            write_bytes: rows
                .iter()
                .fold(0u64, |a, p| a.saturating_add(p.write_bytes)),
            resources: Resources::combine(&res),
        })
    }

    /// Whether the operation moved data (a metadata operation such as stat
    /// does not; its figure is then the rate, not the bandwidth).
    pub fn moves_data(&self) -> bool {
        self.bw_mib_s.max > 0.0
    }

    /// Whether the operation's rate is a data rate (MiB/s, MB/s): it
    /// moves data and does not count files. A metadata phase that writes
    /// or reads its files' bytes (`meta` create or read of 4 KiB files)
    /// is counted in files/s all the same (a tmpfs create line read
    /// "593 MiB/s").
    pub fn rate_is_data(&self) -> bool {
        self.moves_data() && !self.counts_files
    }

    /// The 95 % interval of the figure the operation is judged by: of the
    /// bandwidth (MiB/s) when [`rate_is_data`](Self::rate_is_data), else
    /// of the rate. A phase that counts files and moves their bytes has
    /// its stored interval over the bandwidth; each repetition moves the
    /// same bytes per file, so the rate is the bandwidth times one
    /// constant, and so is its interval.
    pub fn rate_ci(&self) -> Option<Interval> {
        let bw = self.center_bw_mib_s();
        let k = if !self.rate_is_data() && self.moves_data() && bw > 0.0 {
            self.center_iops() / bw
        } else {
            1.0
        };
        self.ci.map(|c| Interval {
            lo: c.lo * k,
            hi: c.hi * k,
            ..c
        })
    }

    /// The central bandwidth: the trimmed mean when trimming is on and
    /// leaves something, else the mean.
    pub fn center_bw_mib_s(&self) -> f64 {
        self.trimmed_or_mean(self.bw_mib_s_trimmed, self.bw_mib_s.mean)
    }

    /// The central bandwidth in MB/s (10^6).
    pub fn center_bw_mb_s(&self) -> f64 {
        self.center_bw_mib_s() * 1_048_576.0 / 1e6
    }

    /// The central rate in operations per second.
    pub fn center_iops(&self) -> f64 {
        self.trimmed_or_mean(self.iops_trimmed, self.iops.mean)
    }

    /// The central duration in seconds.
    pub fn center_elapsed_s(&self) -> f64 {
        self.trimmed_or_mean(self.elapsed_s_trimmed, self.elapsed_s.mean)
    }

    fn trimmed_or_mean(&self, t: Option<f64>, mean: f64) -> f64 {
        match t {
            Some(v) if self.trim > 0 => v,
            _ => mean,
        }
    }
}

impl From<&OpStats> for RepFigure {
    fn from(o: &OpStats) -> RepFigure {
        RepFigure {
            op: o.op.clone(),
            good: o.reps as u32,
            center: if o.rate_is_data() {
                o.center_bw_mib_s()
            } else {
                o.center_iops()
            },
            ci: o.rate_ci(),
        }
    }
}

impl SweepPoint {
    /// Repetitions run at this point, failed ones included (the most of
    /// its operations).
    pub fn reps_run(&self) -> u32 {
        self.ops
            .iter()
            .map(|o| (o.reps + o.failed) as u32)
            .max()
            .unwrap_or(0)
    }

    /// What its repetitions show against the `--reps auto` target.
    pub fn judge_reps(&self, rule: &RepsAuto) -> RepsOutcome {
        let figs: Vec<RepFigure> = self.ops.iter().map(RepFigure::from).collect();
        crate::adapt::judge_reps(rule, self.reps_run(), &figs)
    }
}

/// The operations of a run record, in the order they first ran.
pub fn ops_in_order(rs: &ResultSet) -> Vec<String> {
    let mut ops: Vec<String> = Vec::new();
    let failed = rs.failed_phases.iter().map(|f| &f.op);
    for op in rs.phases.iter().map(|p| &p.op).chain(failed) {
        if !ops.contains(op) {
            ops.push(op.clone());
        }
    }
    ops
}

/// Every repetition of a run, good or failed: a phase an error stopped is
/// kept in `failed_phases` (no exporter may print it as a result), and
/// comes back here as a phase record with its partial counts and at least
/// one error, so [`phase_failed`] counts it and no statistic uses it.
fn all_repetitions(rs: &ResultSet) -> Vec<PhaseRecord> {
    let failed = rs.failed_phases.iter().map(|f| PhaseRecord {
        op: f.op.clone(),
        rep: f.rep,
        threads: f.threads,
        bytes: f.partial_bytes,
        ops: f.partial_ops,
        elapsed_s: f.partial_elapsed_s,
        errors: f.errors.max(1),
        ..PhaseRecord::default()
    });
    let mut all: Vec<PhaseRecord> = rs.phases.iter().cloned().chain(failed).collect();
    all.sort_by_key(|p| p.rep);
    all
}

/// Per-operation statistics and the geometric means of a finished run.
/// `threads` is the threads per rank; under MPI the record's cluster facts
/// multiply it to the total workers.
pub fn point_stats(
    rs: &ResultSet,
    threads: u32,
    trim: u32,
) -> (Vec<OpStats>, Option<f64>, Option<f64>) {
    point_stats_probed(rs, threads, trim, &[])
}

/// [`point_stats`] with the resource measurements of each phase (the
/// sweep driver takes them with [`probe::Probe`] around every phase).
pub fn point_stats_probed(
    rs: &ResultSet,
    threads: u32,
    trim: u32,
    probes: &[PhaseProbe],
) -> (Vec<OpStats>, Option<f64>, Option<f64>) {
    // Little's law counts requests in flight: each worker keeps its
    // queue depth of them (io_uring --iodepth 8: eight per worker).
    let workers = topology(rs, threads).2 * depth_of(rs);
    let phases = all_repetitions(rs);
    let ops: Vec<OpStats> = ops_in_order(rs)
        .iter()
        .filter_map(|op| OpStats::from_run(op, &phases, &rs.errors, workers, trim, probes))
        .collect();
    let good: Vec<&OpStats> = ops.iter().filter(|o| o.reps > 0).collect();
    let bw: Vec<f64> = good.iter().map(|o| o.center_bw_mib_s()).collect();
    let iops: Vec<f64> = good.iter().map(|o| o.center_iops()).collect();
    (
        ops,
        stats::summary::geometric_mean(&bw),
        stats::summary::geometric_mean(&iops),
    )
}

/// The threads and repetitions of a run record seen as one sweep point
/// (`report`, `compare`, the results history): the spec's threads (the
/// first phase's for a metadata workload) and the repetitions its phases
/// count.
pub fn run_threads_and_reps(rs: &ResultSet) -> (u32, u32) {
    let threads = rs
        .spec
        .as_run()
        .map(|w| w.threads)
        .or_else(|| rs.phases.first().map(|p| p.threads))
        .unwrap_or(1);
    let reps = rs
        .phases
        .iter()
        .map(|p| p.rep.saturating_add(1))
        .max()
        .unwrap_or(1);
    (threads, reps)
}

/// Requests each worker keeps in flight: the job's `iodepth` (1 for the
/// sync engine, and in records from before engines).
pub fn depth_of(rs: &ResultSet) -> u32 {
    rs.spec
        .as_run()
        .map(|w| w.iodepth)
        .or_else(|| rs.spec.as_meta().map(|m| m.iodepth))
        .unwrap_or(1)
        .max(1)
}

/// `(ranks, threads per rank, total workers)` of a run: the record's
/// cluster facts when it ran under MPI, else one rank of `threads`.
pub fn topology(rs: &ResultSet, threads: u32) -> (u32, u32, u32) {
    topology_of(rs.host.cluster.as_ref(), threads)
}

/// [`topology`] from the cluster facts alone.
pub fn topology_of(cluster: Option<&report::ClusterInfo>, threads: u32) -> (u32, u32, u32) {
    match cluster {
        Some(c) if c.ranks > 1 => {
            let tpr = if c.threads_per_rank > 0 {
                c.threads_per_rank
            } else {
                threads
            };
            (c.ranks, tpr, c.ranks * tpr)
        }
        _ => (1, threads, threads),
    }
}

impl SweepPoint {
    /// `(ranks, threads per rank, total workers)` of this point.
    pub fn topology(&self) -> (u32, u32, u32) {
        topology(&self.result, self.threads)
    }

    /// Workers in flight: ranks × threads per rank.
    pub fn workers(&self) -> u32 {
        self.topology().2
    }

    /// The nodes the point ran on (1 without a cluster record).
    pub fn nodes(&self) -> u32 {
        self.result
            .host
            .cluster
            .as_ref()
            .map_or(1, |c| c.nodes.max(1))
    }
}

/// The default number of repetitions trimmed at each end: a fifth of
/// them, so 10 repetitions drop 2 and 2 as the Flux7 study did, and fewer
/// than 5 trim nothing.
pub fn default_trim(reps: u32) -> u32 {
    reps / 5
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(rep: u32, bw: f64, errors: u64) -> PhaseRecord {
        PhaseRecord {
            op: "write".into(),
            rep,
            threads: 4,
            bytes: if bw > 0.0 { 1 << 20 } else { 0 },
            ops: if bw > 0.0 { 16 } else { 0 },
            elapsed_s: 1.0,
            bw_mib_s: bw,
            bw_mb_s: bw * 1.048576,
            iops: bw * 16.0,
            errors,
            ..Default::default()
        }
    }

    #[test]
    fn failed_repetitions_are_left_out_and_counted() {
        let phases = [
            phase(0, 20.0, 0),
            phase(1, 0.0, 3),
            phase(2, 22.0, 0),
            phase(3, 0.0, 1),
        ];
        let errors = [report::ErrorRecord {
            worker: 0,
            op: "write".into(),
            file: "f".into(),
            offset: Some(0),
            errno: Some(22),
            message: "write f at 0: Invalid argument (os error 22)".into(),
        }];
        let o = OpStats::from_run("write", &phases, &errors, 4, 0, &[]).unwrap();
        assert_eq!((o.reps, o.failed), (2, 2));
        assert_eq!(
            o.bw_mib_s.mean, 21.0,
            "zeros of failed reps are not averaged in"
        );
        assert_eq!(o.bw_mib_s.min, 20.0);
        assert_eq!(o.first_error.as_deref(), Some(errors[0].message.as_str()));
        let ci = o.ci.unwrap();
        assert!(ci.lo >= 20.0 && ci.hi <= 22.0, "{ci:?}");
        // Little's law with the 4 workers: 4 ÷ (21 × 16) ops/s.
        assert!((o.little_latency_s.unwrap() - 4.0 / 336.0).abs() < 1e-12);
        // All failed: zeros, counted, still listed.
        let o = OpStats::from_run("write", &phases[1..2], &[], 4, 0, &[]).unwrap();
        assert_eq!((o.reps, o.failed), (0, 1));
        assert_eq!(
            o.first_error.as_deref(),
            Some("3 request error(s) in repetition 2"),
            "rep 1 counted from 1"
        );
    }

    #[test]
    fn a_bare_system_error_says_where() {
        let phases = [phase(0, 20.0, 0), phase(1, 0.0, 1)];
        let errors = [report::ErrorRecord {
            worker: 0,
            op: "write".into(),
            file: "/mnt/t/ioscale.d/file.0".into(),
            offset: Some(65536),
            errno: Some(5),
            message: "Input/output error (os error 5)".into(),
        }];
        let o = OpStats::from_run("write", &phases, &errors, 1, 0, &[]).unwrap();
        assert_eq!(
            o.first_error.as_deref(),
            Some("write /mnt/t/ioscale.d/file.0 at 65536: Input/output error (os error 5)")
        );
    }

    #[test]
    fn probes_of_good_reps_are_combined() {
        let phases = [phase(0, 20.0, 0), phase(1, 0.0, 3)];
        let probe = |rep, cores| PhaseProbe {
            op: "write".into(),
            rep,
            resources: Resources {
                elapsed_s: 1.0,
                cpus: 2,
                self_cores: cores,
                ..Default::default()
            },
        };
        let o = OpStats::from_run("write", &phases, &[], 1, 0, &[probe(0, 0.5), probe(1, 2.0)])
            .unwrap();
        assert_eq!(
            o.resources.unwrap().self_cores,
            0.5,
            "the failed rep's probe is left out"
        );
    }

    #[test]
    fn workers_are_ranks_times_threads() {
        assert_eq!(topology_of(None, 8), (1, 8, 8));
        let c = report::ClusterInfo {
            ranks: 4,
            threads_per_rank: 2,
            ..Default::default()
        };
        assert_eq!(topology_of(Some(&c), 2), (4, 2, 8));
    }
}
