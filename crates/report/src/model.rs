//! The results model: pure data, the canonical record of a run.
//!
//! The JSON form of [`ResultSet`] is a contract (see docs/results.md): every
//! other output — tables, CSV, later charts and HTML — is rendered from it,
//! so a saved JSON file can always be rendered again. Field names in
//! [`PhaseRecord`] are fixed by DESIGN.md; add fields, never rename them,
//! and bump [`SCHEMA`] with a migration note when a meaning changes.

use serde::{Deserialize, Serialize};
use spec::{FindSpec, MetaSpec, WorkloadSpec};
use stats::{LatencySummary, RepStats};

/// What was run. The JSON carries a `kind` tag (`"run"` for a data
/// workload, `"meta"` for a metadata one, `"find"` for a walk) beside the workload's own fields, so each command's record
/// keeps its own vocabulary in one place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum JobSpec {
    /// `ioscale run`: a data workload.
    Run(WorkloadSpec),
    /// `ioscale meta`: small files and metadata operations.
    Meta(MetaSpec),
    /// A parallel find (io500's find phases): a walk that counts matches.
    Find(FindSpec),
}

impl JobSpec {
    /// One line that says what the job does.
    pub fn describe(&self) -> String {
        match self {
            JobSpec::Run(w) => w.describe(),
            JobSpec::Meta(m) => m.describe(),
            JobSpec::Find(f) => f.describe(),
        }
    }

    /// The data workload, if this is one.
    pub fn as_run(&self) -> Option<&WorkloadSpec> {
        match self {
            JobSpec::Run(w) => Some(w),
            JobSpec::Meta(_) | JobSpec::Find(_) => None,
        }
    }

    /// The metadata workload, if this is one.
    pub fn as_meta(&self) -> Option<&MetaSpec> {
        match self {
            JobSpec::Meta(m) => Some(m),
            JobSpec::Run(_) | JobSpec::Find(_) => None,
        }
    }
}

/// Version of the JSON layout.
pub const SCHEMA: u32 = 1;

/// A repetition as users count it, from 1, for text meant to be read
/// (tables, notes, errors, the progress log's `rep 1/3`). The record, its
/// CSV and the tools' own layouts keep their numbering (`rep` from 0 in
/// the JSON).
pub fn shown_rep(rep: u32) -> u64 {
    u64::from(rep) + 1
}

/// Facts about the machine and the target, recorded with every run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// Host name.
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Online CPUs.
    pub cpus: u32,
    /// Physical memory in bytes.
    pub mem_bytes: u64,
    /// The tested directory.
    pub target: String,
    /// Mount point holding the target.
    pub mount_point: String,
    /// File-system type (ext4, xfs, tmpfs, nfs4, fuse.*, …).
    pub fs_type: String,
    /// Mount source (device or server:export).
    pub fs_source: String,
    /// Mount options.
    pub mount_options: String,
    /// Where the ranks of a multi-process (MPI) run were; absent when one
    /// process ran. The other fields describe rank 0's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterInfo>,
}

/// The processes of a multi-process (MPI) run: ranks × threads workers,
/// worker `w` being thread `w % threads_per_rank` of rank
/// `w / threads_per_rank`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterInfo {
    /// How the processes were coordinated (`mpi`).
    pub launcher: String,
    /// Processes (MPI ranks).
    pub ranks: u32,
    /// Worker threads in each rank.
    pub threads_per_rank: u32,
    /// Distinct hosts.
    pub nodes: u32,
    /// Ranks on the busiest host (IOR's tPN, "tasks per node").
    pub tasks_per_node: u32,
    /// Host name of each rank, by rank.
    pub hosts: Vec<String>,
    /// Per host and phase: the work of that host's workers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_phases: Vec<NodePhase>,
    /// Per rank and phase: the work of that rank's workers (a few words
    /// per rank, kept also when the per-worker rows are not).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rank_phases: Vec<RankPhase>,
    /// Per phase: what rank 0 received in the gather at the phase's end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gathers: Vec<PhaseGather>,
}

/// One rank's share of one phase of a multi-process run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankPhase {
    /// Index of the phase in the record's `phases`.
    pub phase: usize,
    /// The rank.
    pub rank: u32,
    /// Its workers.
    pub workers: u32,
    /// Bytes its workers moved.
    pub bytes: u64,
    /// Requests (files for metadata phases) its workers completed.
    pub ops: u64,
    /// Its first worker's start, seconds since the phase's first start.
    pub start_s: f64,
    /// Its last worker's finish, seconds since the phase's first start.
    pub end_s: f64,
}

/// The cost of one phase's gather at rank 0, as its coordinator counted it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseGather {
    /// Index of the phase in the record's `phases`.
    pub phase: usize,
    /// Payload bytes rank 0 received: one merged summary per node (and
    /// one per rank of its own node), plus every worker's row (sample or
    /// brief) when rows were gathered.
    pub bytes: u64,
    /// The per-worker rows were gathered too: every worker's sample
    /// (`--per-worker`) or its brief (smallfile's threads, dd's jobs).
    pub per_worker: bool,
    /// The part of `bytes` that carried those rows (0 without them; absent
    /// in records written before it was counted).
    #[serde(default)]
    pub row_bytes: u64,
}

/// One host's share of one phase of a multi-process run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodePhase {
    /// Index of the phase in the record's `phases`.
    pub phase: usize,
    /// Operation name, as in that phase.
    pub op: String,
    /// Repetition, as in that phase.
    pub rep: u32,
    /// The host.
    pub host: String,
    /// Ranks on it.
    pub ranks: u32,
    /// Workers on it.
    pub workers: u32,
    /// Bytes its workers moved.
    pub bytes: u64,
    /// Requests its workers completed.
    pub ops: u64,
    /// Its first worker's start to its last worker's finish, seconds.
    pub elapsed_s: f64,
    /// bytes ÷ elapsed_s, MiB/s.
    pub bw_mib_s: f64,
}

/// Per-worker detail of one phase (times in seconds since the phase's
/// first start).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerRecord {
    /// Worker index.
    pub worker: u32,
    /// Host the worker ran on.
    pub host: String,
    /// Bytes moved.
    pub bytes: u64,
    /// Requests completed.
    pub ops: u64,
    /// When it started (before open).
    pub start_s: f64,
    /// When it finished (after close).
    pub end_s: f64,
    /// Seconds in open.
    pub open_s: f64,
    /// Seconds in transfers and fsync.
    pub io_s: f64,
    /// Seconds in close.
    pub close_s: f64,
    /// The worker's own rate: bytes ÷ its own elapsed time, in MiB/s.
    pub bw_mib_s: f64,
}

/// The honest partial figure: work done by the time the first worker
/// finished (or the time limit struck).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Stonewall {
    /// Seconds from the first start to the first finish.
    pub s: f64,
    /// Bytes all workers had moved by then.
    pub bytes: u64,
    /// Those bytes ÷ those seconds, in MiB/s.
    pub bw_mib_s: f64,
}

/// Data-check results of a phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerifyRecord {
    /// Bytes compared with the pattern.
    pub checked_bytes: u64,
    /// Bytes that differed.
    pub bad_bytes: u64,
    /// Each file with a mismatch: path, first bad offset, bad bytes.
    pub mismatches: Vec<Mismatch>,
}

/// A file whose data did not match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    /// The file.
    pub file: String,
    /// First differing offset seen.
    pub offset: u64,
    /// Differing bytes seen by the worker that found it.
    pub bad_bytes: u64,
}

/// An error that stopped a worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorRecord {
    /// Worker index.
    pub worker: u32,
    /// Operation: open, read, write, fsync, close.
    pub op: String,
    /// The file.
    pub file: String,
    /// File offset, if the error belongs to a transfer.
    pub offset: Option<u64>,
    /// errno, if from the kernel.
    pub errno: Option<i32>,
    /// Description.
    pub message: String,
}

/// One phase of one repetition: the unit every table row and chart point
/// comes from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseRecord {
    /// Operation name (`write`, `read`, `randread`, …).
    pub op: String,
    /// Repetition number, from 0.
    pub rep: u32,
    /// Workers.
    pub threads: u32,
    /// Bytes moved by all workers.
    pub bytes: u64,
    /// Requests completed by all workers.
    pub ops: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Seconds from the first worker's open to the last worker's close.
    pub elapsed_s: f64,
    /// bytes ÷ elapsed_s in MiB/s (2^20).
    pub bw_mib_s: f64,
    /// bytes ÷ elapsed_s in MB/s (10^6).
    pub bw_mb_s: f64,
    /// ops ÷ elapsed_s.
    pub iops: f64,
    /// Request latency over all workers, microseconds.
    pub lat_us: LatencySummary,
    /// Longest open among workers, seconds.
    pub open_s: f64,
    /// Longest transfer section (including fsync) among workers, seconds.
    pub io_s: f64,
    /// Longest close among workers, seconds.
    pub close_s: f64,
    /// Longest fsync time among workers, seconds.
    pub fsync_s: f64,
    /// Process CPU time in user mode during the phase, seconds.
    pub cpu_user_s: f64,
    /// Process CPU time in the kernel during the phase, seconds.
    pub cpu_sys_s: f64,
    /// The stonewall figure.
    pub stonewall: Stonewall,
    /// Whether a `--time` limit cut the phase short.
    pub time_limited: bool,
    /// Whether an interrupt cut the phase short.
    pub interrupted: bool,
    /// Requests that failed.
    pub errors: u64,
    /// Spread of the ranks' clocks read at the exit of the phase's start
    /// barrier (latest − earliest), seconds: the start skew across ranks.
    /// Absent in a one-process run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_skew_s: Option<f64>,
    /// Latest worker start − earliest, seconds, each start taken against
    /// its own rank's barrier exit: how far the threads' release spread
    /// within the ranks. Absent in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_start_spread_s: Option<f64>,
    /// Data check, when `--verify` was on and the phase read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyRecord>,
    /// File counts of a metadata phase (`ioscale meta`): requested versus
    /// processed, the stonewall in files, per-thread detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<FilesRecord>,
    /// Per-worker detail.
    pub workers: Vec<WorkerRecord>,
    /// Throughput and latency per interval of the phase, every worker
    /// (and rank) merged (see docs/results.md); absent with
    /// `--interval off` and in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<stats::Series>,
    /// `--steady`: whether and when the phase was steady; when it was,
    /// the phase's figures above are the steady window's and the whole
    /// phase's are here. Absent without `--steady`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<SteadyRecord>,
    /// The requests of the phase that an object store made the client
    /// retry, and why (docs/results.md). Absent on a file system (a
    /// failed system call is never retried), under MPI (each rank's
    /// client counts its own: not gathered yet) and in records written
    /// before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<RetryRecord>,
}

/// The retries of one phase's requests to an object store: kept apart
/// from the latencies, which are the successful attempts' alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RetryRecord {
    /// Requests that needed more than one attempt.
    pub requests_retried: u64,
    /// Failed attempts answered 503 `SlowDown` or 429 (throttled).
    pub throttled: u64,
    /// Failed attempts answered 500, 502, 504 or `RequestTimeout`.
    pub server_errors: u64,
    /// Failed attempts with no answer (refused, reset, closed, timed out).
    pub dropped: u64,
    /// Seconds the workers spent waiting between attempts (summed over
    /// the workers).
    pub backoff_s: f64,
}

impl RetryRecord {
    /// Whether anything was retried.
    pub fn any(&self) -> bool {
        self.requests_retried > 0 || self.throttled + self.server_errors + self.dropped > 0
    }
}

/// What `--steady` found in a phase (docs/results.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SteadyRecord {
    /// The criterion: `iops`, `iops_slope`, `bw` or `bw_slope` (fio's).
    pub criterion: String,
    /// The limit: a share of the window's mean in percent when
    /// `limit_pct`, else IOPS, MiB/s, or per second for a slope.
    pub limit: f64,
    /// Whether `limit` is a percentage of the window's mean.
    pub limit_pct: bool,
    /// The window, seconds.
    pub window_s: f64,
    /// Seconds from the phase's start before samples are judged.
    pub ramp_s: f64,
    /// Whether the last window was steady before the phase ended.
    pub reached: bool,
    /// Seconds into the phase when it was (the end of the window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_s: Option<f64>,
    /// The one-second samples judged, in the criterion's unit (IOPS or
    /// MiB/s), the last window's when reached, else the last ones.
    pub samples: Vec<f64>,
    /// The same seconds' operations completed, one a second.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sample_ops: Vec<u64>,
    /// The same seconds' bytes moved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sample_bytes: Vec<u64>,
    /// The whole phase's bytes, operations and seconds, warm-up
    /// included, when `reached` (the phase's figures are the window's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole: Option<SteadyWhole>,
}

/// A whole phase's totals beside its steady window's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SteadyWhole {
    /// Bytes moved.
    pub bytes: u64,
    /// Operations completed.
    pub ops: u64,
    /// Seconds.
    pub elapsed_s: f64,
}

/// File counts of one metadata phase. In such a phase `ops` is the number
/// of files processed and `iops` files per second; this adds what a
/// smallfile user reads next to them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FilesRecord {
    /// Files the phase was asked to process (threads × files per thread).
    pub requested: u64,
    /// Files processed (the same as the phase's `ops`).
    pub processed: u64,
    /// processed ÷ requested, in percent.
    pub processed_pct: f64,
    /// Files all threads had processed when the first finished (or the
    /// time limit struck).
    pub stonewall_files: u64,
    /// Those files ÷ the stonewall seconds.
    pub stonewall_files_s: f64,
    /// Read and write system calls that moved data.
    pub records: u64,
    /// Peak resident memory of the process at the end of the phase, bytes.
    pub peak_rss_bytes: u64,
    /// Per thread, in thread order.
    pub threads: Vec<ThreadFiles>,
    /// Entries that matched, in a find phase (absent elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched: Option<u64>,
}

/// One thread's file counts in a metadata phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadFiles {
    /// Thread index.
    pub thread: u32,
    /// Files processed.
    pub files: u64,
    /// Data system calls.
    pub records: u64,
    /// The thread's own elapsed seconds.
    pub elapsed_s: f64,
    /// `ok`, `time-limit`, `interrupted`, `stopped` (a peer failed) or `error`.
    pub status: String,
    /// Files it had processed when it saw the first thread finish (or the
    /// time limit strike); all its files when it finished first or never
    /// saw it (smallfile's `filenum_final`).
    #[serde(default)]
    pub stonewall_files: u64,
    /// Bytes it had moved by then.
    #[serde(default)]
    pub stonewall_bytes: u64,
    /// Its elapsed seconds by then: from its start to the first thread's
    /// finish, or its own elapsed time when it finished first (smallfile's
    /// per-thread `elapsed`).
    #[serde(default)]
    pub stonewall_s: f64,
    /// Entries this thread's share of a find matched (absent elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched: Option<u64>,
}

/// Statistics of one operation over its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseSummary {
    /// Operation name.
    pub op: String,
    /// Repetitions that completed.
    pub reps: usize,
    /// Bandwidth in MiB/s.
    pub bw_mib_s: RepStats,
    /// IOPS.
    pub iops: RepStats,
    /// Elapsed seconds.
    pub elapsed_s: RepStats,
}

/// The whole record of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultSet {
    /// Layout version of this record.
    pub schema: u32,
    /// Always "ioscale".
    pub tool: String,
    /// ioscale version that wrote it.
    pub version: String,
    /// The command line, word by word.
    pub command: Vec<String>,
    /// When the run began, RFC 3339 UTC.
    pub started: String,
    /// Machine and target facts.
    pub host: HostInfo,
    /// The workload as run.
    pub spec: JobSpec,
    /// Warnings about how to read the figures (page cache, oversubscription).
    pub warnings: Vec<String>,
    /// Whether the run was cut short by an interrupt.
    pub interrupted: bool,
    /// Errors that stopped workers.
    pub errors: Vec<ErrorRecord>,
    /// Every phase of every repetition, in the order run, that ran to its
    /// end (or to its time limit, or to an interrupt). A phase an error
    /// stopped is in `failed_phases` instead, so no exporter prints its
    /// figures as a result.
    pub phases: Vec<PhaseRecord>,
    /// Phases an error stopped (an I/O error on some worker of some rank),
    /// with what they did before it under `partial_*` names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_phases: Vec<FailedPhase>,
    /// Per operation, statistics over repetitions.
    pub summary: Vec<PhaseSummary>,
}

/// A phase an error stopped: its figures are no result (IOR prints an
/// ERROR line and no row for it). What it did before it stopped is kept
/// under names that cannot be read as a result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FailedPhase {
    /// Operation name (`write`, `read`, `create`, …).
    pub op: String,
    /// Repetition number, from 0.
    pub rep: u32,
    /// Workers.
    pub threads: u32,
    /// Bytes moved before the phase stopped.
    pub partial_bytes: u64,
    /// Requests (or files, for a metadata phase) done before it stopped.
    pub partial_ops: u64,
    /// Seconds from the first worker's start to the last one's stop.
    pub partial_elapsed_s: f64,
    /// Requests that failed.
    pub errors: u64,
}

impl From<&PhaseRecord> for FailedPhase {
    fn from(p: &PhaseRecord) -> Self {
        FailedPhase {
            op: p.op.clone(),
            rep: p.rep,
            threads: p.threads,
            partial_bytes: p.bytes,
            partial_ops: p.ops,
            partial_elapsed_s: p.elapsed_s,
            errors: p.errors,
        }
    }
}

impl ResultSet {
    /// Recomputes [`ResultSet::summary`] from the phases.
    pub fn summarise(&mut self) {
        let mut ops: Vec<String> = Vec::new();
        for p in &self.phases {
            if !ops.contains(&p.op) {
                ops.push(p.op.clone());
            }
        }
        self.summary = ops
            .into_iter()
            .filter_map(|op| {
                let rows: Vec<&PhaseRecord> = self
                    .phases
                    .iter()
                    .filter(|p| p.op == op && !p.interrupted)
                    .collect();
                let pick = |f: fn(&PhaseRecord) -> f64| -> Vec<f64> {
                    rows.iter().map(|p| f(p)).collect()
                };
                Some(PhaseSummary {
                    reps: rows.len(),
                    bw_mib_s: RepStats::from_samples(&pick(|p| p.bw_mib_s))?,
                    iops: RepStats::from_samples(&pick(|p| p.iops))?,
                    elapsed_s: RepStats::from_samples(&pick(|p| p.elapsed_s))?,
                    op,
                })
            })
            .collect();
    }
}
