//! The record of a sweep: every point's full run record plus the
//! statistics and analysis derived from them.
//!
//! Like a run's [`ResultSet`], this is pure data and the canonical JSON
//! output of `ioscale sweep`; tables, CSV, charts and the HTML report are
//! rendered from it, so `ioscale report` can redraw them later. It is
//! written again after every finished point, which is also what `--resume`
//! reads back.

use serde::{Deserialize, Serialize};
use stats::summary::{outliers, trimmed_mean, OUTLIER_Z};
use stats::RepStats;

use report::{HostInfo, PhaseRecord, ResultSet};

use crate::findings::Analysis;

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
    /// The finished points, in sweep order.
    pub points: Vec<SweepPoint>,
    /// What the points say (recomputed whenever a point is added).
    pub analysis: Analysis,
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
    /// Repetitions per point.
    pub reps: u32,
    /// `total` (the data in all stays constant) or `per-thread`.
    pub scale: String,
    /// Repetitions dropped at each end for the trimmed mean.
    pub trim: u32,
    /// The inner command's words, as given after `--`.
    pub inner: Vec<String>,
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
    /// `threads ÷ ops per second`, seconds.
    pub little_latency_s: f64,
    /// Measured median request latency (mean over repetitions), µs.
    pub lat_p50_us: f64,
    /// CPU time (user + system) per operation, seconds (mean over reps).
    pub cpu_s_per_op: f64,
    /// CPUs kept busy: CPU time ÷ elapsed time (mean over reps).
    pub cpu_busy: f64,
}

impl OpStats {
    /// Builds the statistics of `op` from a run record's phases; `None`
    /// when no repetition of it completed.
    pub fn from_phases(op: &str, phases: &[PhaseRecord], threads: u32, trim: u32) -> Option<Self> {
        let rows: Vec<&PhaseRecord> = phases
            .iter()
            .filter(|p| p.op == op && !p.interrupted)
            .collect();
        let pick = |f: fn(&PhaseRecord) -> f64| -> Vec<f64> { rows.iter().map(|p| f(p)).collect() };
        let bw = pick(|p| p.bw_mib_s);
        let iops = pick(|p| p.iops);
        let el = pick(|p| p.elapsed_s);
        let k = trim as usize;
        let moves_data = bw.iter().any(|&b| b > 0.0);
        let judged = if moves_data { &bw } else { &iops };
        let flags = outliers(judged, OUTLIER_Z);
        let n = rows.len() as f64;
        let iops_stats = RepStats::from_samples(&iops)?;
        Some(OpStats {
            op: op.to_string(),
            reps: rows.len(),
            bw_mib_s: RepStats::from_samples(&bw)?,
            bw_mb_s: RepStats::from_samples(&pick(|p| p.bw_mb_s))?,
            elapsed_s: RepStats::from_samples(&el)?,
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
            little_latency_s: if iops_stats.mean > 0.0 {
                threads as f64 / iops_stats.mean
            } else {
                0.0
            },
            lat_p50_us: rows.iter().map(|p| p.lat_us.p50).sum::<f64>() / n,
            cpu_s_per_op: rows
                .iter()
                .map(|p| {
                    if p.ops > 0 {
                        (p.cpu_user_s + p.cpu_sys_s) / p.ops as f64
                    } else {
                        0.0
                    }
                })
                .sum::<f64>()
                / n,
            cpu_busy: rows
                .iter()
                .map(|p| {
                    if p.elapsed_s > 0.0 {
                        (p.cpu_user_s + p.cpu_sys_s) / p.elapsed_s
                    } else {
                        0.0
                    }
                })
                .sum::<f64>()
                / n,
            iops: iops_stats,
        })
    }

    /// Whether the operation moved data (a metadata operation such as stat
    /// does not; its figure is then the rate, not the bandwidth).
    pub fn moves_data(&self) -> bool {
        self.bw_mib_s.max > 0.0
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

/// The operations of a run record, in the order they first ran.
pub fn ops_in_order(rs: &ResultSet) -> Vec<String> {
    let mut ops: Vec<String> = Vec::new();
    for p in &rs.phases {
        if !ops.contains(&p.op) {
            ops.push(p.op.clone());
        }
    }
    ops
}

/// Per-operation statistics and the geometric means of a finished run.
pub fn point_stats(
    rs: &ResultSet,
    threads: u32,
    trim: u32,
) -> (Vec<OpStats>, Option<f64>, Option<f64>) {
    let ops: Vec<OpStats> = ops_in_order(rs)
        .iter()
        .filter_map(|op| OpStats::from_phases(op, &rs.phases, threads, trim))
        .collect();
    let bw: Vec<f64> = ops.iter().map(OpStats::center_bw_mib_s).collect();
    let iops: Vec<f64> = ops.iter().map(OpStats::center_iops).collect();
    (
        ops,
        stats::summary::geometric_mean(&bw),
        stats::summary::geometric_mean(&iops),
    )
}

/// The default number of repetitions trimmed at each end: a fifth of
/// them, so 10 repetitions drop 2 and 2 as the Flux7 study did, and fewer
/// than 5 trim nothing.
pub fn default_trim(reps: u32) -> u32 {
    reps / 5
}
