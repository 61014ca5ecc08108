//! The jobs a command line can name, below the commands that run them:
//! the flags of `ioscale run`, `meta` and `sweep`; the second stage that
//! turns `run`'s and `meta`'s into `spec` requests, each refusal naming
//! its flag ([`RunArgs::to_raw`], [`MetaArgs::to_raw`]); and [`JobCli`],
//! the parser of a job given as words (a sweep's command after `--`,
//! `ioscale slurm`'s COMMAND), so that `sweep` and `slurm` read a job
//! without the whole command line of `cli.rs` above them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use spec::{parse_count, parse_duration, parse_size, Layout, Op, RawWorkload, SyncMode};

use crate::args::{self, Choices, RecordFiles, Shown, View};

/// The registry name of an `--engine` value: the older spellings
/// `io-uring` and `uring` still mean `io_uring`. Whether the name exists is
/// the engine registry's to say (the drivers check it).
fn engine_name(s: &str) -> String {
    match s {
        "io-uring" | "uring" => "io_uring".into(),
        _ => s.into(),
    }
}

/// Flags of `ioscale run`.
///
/// Value flags accept a leading hyphen (`allow_hyphen_values`) so that
/// `--size -4k` reaches the second stage and is refused there with one line
/// naming the flag, instead of clap's "unexpected argument '-4'".
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Directory to test; ioscale works in TARGET/ioscale.d and removes only what it created.
    pub target: PathBuf,

    /// Phases, in order: write, read, randwrite, randread, rw, randrw (comma list).
    #[arg(long = "op", value_name = "LIST", default_value = "write,read",
          value_parser = Choices(args::data_ops), hide_possible_values = true)]
    pub op: String,

    /// Parallel workers.
    #[arg(
        short = 't',
        long,
        value_name = "N",
        default_value = "1",
        allow_hyphen_values = true
    )]
    pub threads: String,

    /// File layout: shared (one file, IOR segmented), per-thread, per-thread-dir.
    #[arg(long, value_name = "LAYOUT", default_value = "per-thread",
          value_parser = Choices(args::data_layouts), hide_possible_values = true)]
    pub layout: String,

    /// Bytes per request.
    #[arg(
        short = 'x',
        long,
        value_name = "SIZE",
        default_value = "1m",
        allow_hyphen_values = true
    )]
    pub xfer: String,

    /// Bytes per worker [default: 256m, or --block × --segments].
    #[arg(short = 's', long, value_name = "SIZE", allow_hyphen_values = true)]
    pub size: Option<String>,

    /// Bytes in all, split evenly across the workers (keeps the total fixed as --threads changes).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub total: Option<String>,

    /// Contiguous bytes per worker per segment (IOR -b).
    #[arg(short = 'b', long, value_name = "SIZE", allow_hyphen_values = true)]
    pub block: Option<String>,

    /// Segments (IOR -s): each worker writes --block in each of them.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub segments: Option<String>,

    /// Bypass the page cache (O_DIRECT, aligned buffers).
    #[arg(long)]
    pub direct: bool,

    /// Sync mode: none, end (one fsync at the end, timed, like dd conv=fsync),
    /// each (O_SYNC, like dd oflag=sync), dsync (O_DSYNC), every:N (fsync after N writes).
    #[arg(long, value_name = "MODE", default_value = "none",
          value_parser = Choices(args::sync_modes), hide_possible_values = true)]
    pub sync: String,

    /// Drop the page cache between phases (root); otherwise falls back to
    /// fadvise(DONTNEED) on ioscale's files, with a warning.
    #[arg(long)]
    pub drop_caches: bool,

    /// Read phases read the data another worker wrote (IOR -C): worker r reads worker r+1's.
    #[arg(long)]
    pub reorder: bool,

    /// With --reorder: read the data of worker r+N instead of r+1.
    #[arg(
        long,
        value_name = "N",
        requires = "reorder",
        allow_hyphen_values = true
    )]
    pub reorder_offset: Option<String>,

    /// I/O engine: sync (pread/pwrite), lseek (lseek, then read/write:
    /// fio's sync), pvsync (preadv/pwritev), pvsync2 (preadv2/pwritev2),
    /// io_uring or libaio (Linux native AIO, as fio's; with --direct:
    /// without it the kernel does each request inside io_submit)
    /// (--iodepth requests in flight per worker).
    #[arg(long, value_name = "NAME", default_value = "sync",
          value_parser = Choices(args::data_engines), hide_possible_values = true)]
    pub engine: String,

    /// Requests in flight per worker (io_uring, libaio) [default: 32 with
    /// io_uring or libaio].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub iodepth: Option<String>,

    /// io_uring ring set-up, a comma list: fixedbufs (registered buffers),
    /// files (registered file), batch (one submit per refill; `each` is the
    /// default), coop (COOP_TASKRUN), single (SINGLE_ISSUER+DEFER_TASKRUN),
    /// sqpoll[=MS] (kernel polling thread, idle MS, 100 by default), spin
    /// (wait for completions spinning, not sleeping), tuned
    /// (fixedbufs,files,coop,single), plain. Features the kernel refuses
    /// are dropped with a warning.
    #[arg(long, value_name = "LIST", allow_hyphen_values = true,
          value_parser = Choices(args::uring_opts), hide_possible_values = true)]
    pub uring_opts: Option<String>,

    /// Repeat the whole phase sequence N times; min, max, mean, stddev are reported.
    #[arg(
        long,
        value_name = "N",
        default_value = "1",
        allow_hyphen_values = true
    )]
    pub reps: String,

    /// Stop each phase at this deadline (e.g. 30s) and report what was done by then.
    #[arg(long = "time", value_name = "DURATION", allow_hyphen_values = true)]
    pub time: Option<String>,

    /// Percentage of reads in rw/randrw phases.
    #[arg(long, value_name = "PCT", allow_hyphen_values = true)]
    pub rwmix: Option<String>,

    /// Write a pattern encoding file, offset and seed; check every byte read.
    #[arg(long)]
    pub verify: bool,

    /// Leave the files in place (for a later read run, or `ioscale clean`).
    #[arg(long)]
    pub keep: bool,

    /// With --reps: write over the files the repetition before left instead
    /// of removing them first (the default, as IOR does).
    #[arg(long)]
    pub reuse: bool,

    /// Seed for random offsets and data patterns.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub seed: Option<String>,

    #[command(flatten)]
    pub record: RecordFiles,

    /// Under MPI, gather every worker's sample to rank 0 and keep one row
    /// per worker (`workers`) in the record; without it rank 0 receives one
    /// merged summary per node, and the record keeps per-node and per-rank
    /// rows only. One process always keeps them.
    #[arg(long)]
    pub per_worker: bool,

    #[command(flatten)]
    pub shown: Shown,

    #[command(flatten)]
    pub history: crate::history_run::HistoryArgs,

    #[command(flatten)]
    pub s3: crate::args::S3Flags,
}

/// Flags of `ioscale meta`.
#[derive(Debug, Args)]
pub struct MetaArgs {
    /// Directory to test; ioscale works in TARGET/ioscale-meta.d and removes only what it created.
    pub target: PathBuf,

    /// Phases, in order (comma list): create, read, append, overwrite,
    /// truncate-overwrite, stat, stat-dir, chmod, rename, rename-dir,
    /// setxattr, getxattr, symlink, readdir, delete, mkdir, rmdir, cleanup.
    #[arg(
        long = "ops",
        alias = "op",
        value_name = "LIST",
        default_value = "create,stat,read,delete",
        value_parser = Choices(args::meta_ops),
        hide_possible_values = true
    )]
    pub ops: String,

    /// Parallel threads.
    #[arg(short = 't', long, value_name = "N", default_value = "1")]
    pub threads: String,

    /// Files per thread.
    #[arg(short = 'n', long, value_name = "N", default_value = "1024")]
    pub files: String,

    /// Bytes per file: a size (0 allowed), or a range MIN..MAX for a seeded random size per file.
    #[arg(long, value_name = "SIZE", default_value = "4k")]
    pub file_size: String,

    /// Bytes per write or read call [default: the file size, 4k to 1m].
    #[arg(long, value_name = "SIZE")]
    pub record_size: Option<String>,

    /// All threads work in one shared directory (contention); otherwise one directory per thread.
    #[arg(long)]
    pub same_dir: bool,

    /// Files of a thread per directory; more start a new directory of a hashed tree.
    #[arg(long, value_name = "N")]
    pub files_per_dir: Option<String>,

    /// Subdirectories per directory in that tree [default: 10].
    #[arg(long, value_name = "N")]
    pub dirs_per_dir: Option<String>,

    /// fsync each file before closing it (create, append, overwrite).
    #[arg(long)]
    pub fsync: bool,

    /// Bypass the page cache for file data (O_DIRECT).
    #[arg(long)]
    pub direct: bool,

    /// Stop each phase at this deadline (e.g. 30s) and report the files done by then.
    #[arg(long = "time", value_name = "DURATION")]
    pub time: Option<String>,

    /// Repeat the whole sequence N times (it must end with delete or cleanup).
    #[arg(long, value_name = "N", default_value = "1")]
    pub reps: String,

    /// Seed for random file sizes.
    #[arg(long, value_name = "N")]
    pub seed: Option<String>,

    /// Text at the start of every file name.
    #[arg(long, value_name = "TEXT")]
    pub prefix: Option<String>,

    /// Leave the tree in place (for a later run, or `--ops cleanup`).
    #[arg(long)]
    pub keep: bool,

    /// Remove the tree an earlier `--keep` run left in TARGET before starting.
    #[arg(long)]
    pub clean_existing: bool,

    /// syncfs(2) the target at the end of every phase, inside the phase's time (mdtest -Y).
    #[arg(long)]
    pub sync_phase: bool,

    /// Write a pattern encoding (file, offset, seed) and check every byte `read` reads;
    /// mismatches are reported with path and offset (exit 1).
    #[arg(long)]
    pub verify: bool,

    /// In stat, read and delete/rmdir phases thread t works on the entries of thread
    /// (t + N) mod threads (mdtest -N), to read what another thread wrote.
    #[arg(long, value_name = "N")]
    pub stride: Option<String>,

    /// Put entries only in the directories at depth N of the --dirs-per-dir tree, its
    /// leaves (mdtest -L -z N); the directories above hold only directories.
    #[arg(long, value_name = "N")]
    pub leaf_depth: Option<String>,

    /// Stop every thread as soon as the first has processed all its files
    /// (smallfile --stonewall Y --finish N).
    #[arg(long)]
    pub stop_at_first: bool,

    /// Metadata engine of the timed phases: sync (one call at a time per
    /// thread) or io_uring (one thread keeps --iodepth operations in
    /// flight); layout and cleanup always run synchronously.
    #[arg(long, value_name = "NAME", default_value = "sync",
          value_parser = Choices(args::meta_engines), hide_possible_values = true)]
    pub engine: String,

    /// Operations in flight per thread (io_uring) [default: 32 with io_uring].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub iodepth: Option<String>,

    #[command(flatten)]
    pub record: RecordFiles,

    /// Under MPI, gather every worker's sample to rank 0 and keep one row
    /// per worker (`workers`, `files.threads`, the text's `thr =` lines);
    /// without it rank 0 receives one merged summary per node, and the
    /// record keeps per-node and per-rank rows only. One process always
    /// keeps them.
    #[arg(long)]
    pub per_worker: bool,

    #[command(flatten)]
    pub shown: Shown,

    #[command(flatten)]
    pub history: crate::history_run::HistoryArgs,

    #[command(flatten)]
    pub s3: crate::args::S3Flags,
}

impl MetaArgs {
    /// Second stage: turns raw text into typed values, naming the flag on error.
    pub fn to_raw(&self) -> Result<spec::RawMeta, FlagError> {
        let mut ops = Vec::new();
        for part in self.ops.split(',') {
            let part = part.trim();
            match spec::MetaOp::parse(part) {
                Some(o) => ops.push(o),
                None => {
                    return Err(FlagError {
                        flag: "--ops",
                        message: format!(
                            "unknown operation '{part}' (use {})",
                            spec::MetaOp::ALL.map(|o| o.name()).join(", ")
                        ),
                    })
                }
            }
        }
        Ok(spec::RawMeta {
            target: Some(self.target.clone()),
            ops,
            threads: Some(flag("--threads", parse_count(&self.threads))?),
            files: Some(flag("--files", parse_count(&self.files))?),
            file_size: Some(flag("--file-size", spec::FileSize::parse(&self.file_size))?),
            record_size: opt("--record-size", &self.record_size, parse_size)?,
            same_dir: self.same_dir,
            files_per_dir: opt("--files-per-dir", &self.files_per_dir, parse_count)?,
            dirs_per_dir: opt("--dirs-per-dir", &self.dirs_per_dir, parse_count)?,
            fsync: self.fsync,
            direct: self.direct,
            time_limit: opt("--time", &self.time, parse_duration)?,
            reps: Some(flag("--reps", parse_count(&self.reps))?),
            seed: opt("--seed", &self.seed, parse_count)?,
            prefix: self.prefix.clone(),
            keep: self.keep,
            clean_existing: self.clean_existing,
            sync_phase: self.sync_phase,
            verify: self.verify,
            stride: opt("--stride", &self.stride, parse_count)?,
            leaf_depth: opt("--leaf-depth", &self.leaf_depth, parse_count)?,
            stop_at_first: self.stop_at_first,
            mdtest_calls: false,
            engine: Some(engine_name(&self.engine)),
            // The io_uring metadata engine defaults to the data engine's
            // depth; the sync engine to 1.
            iodepth: opt("--iodepth", &self.iodepth, parse_count)?.or_else(|| {
                engine::registry::meta_engine(&engine_name(&self.engine))
                    .ok()
                    .filter(|e| e.info().queueing)
                    .map(|_| 32)
            }),
            ..Default::default()
        })
    }
}

/// A flag whose value could not be read: names the flag and what was wrong.
#[derive(Debug)]
pub struct FlagError {
    /// The flag.
    pub flag: &'static str,
    /// The message.
    pub message: String,
}

impl std::fmt::Display for FlagError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.flag, self.message)
    }
}

impl std::error::Error for FlagError {}

fn flag<T, E: std::fmt::Display>(flag: &'static str, r: Result<T, E>) -> Result<T, FlagError> {
    r.map_err(|e| FlagError {
        flag,
        message: e.to_string(),
    })
}

fn opt<T, E: std::fmt::Display>(
    name: &'static str,
    v: &Option<String>,
    f: impl Fn(&str) -> Result<T, E>,
) -> Result<Option<T>, FlagError> {
    v.as_deref().map(|s| flag(name, f(s))).transpose()
}

impl RunArgs {
    /// Second stage: turns raw text into typed values, naming the flag on error.
    pub fn to_raw(&self) -> Result<RawWorkload, FlagError> {
        let mut ops = Vec::new();
        for part in self.op.split(',') {
            let part = part.trim();
            match Op::parse(part) {
                Some(o) => ops.push(o),
                None => {
                    return Err(FlagError {
                        flag: "--op",
                        message: format!(
                            "unknown operation '{part}' (use write, read, randwrite, randread, rw, randrw)"
                        ),
                    })
                }
            }
        }
        let layout = Layout::parse(&self.layout).ok_or_else(|| FlagError {
            flag: "--layout",
            message: format!(
                "unknown layout '{}' (use shared, per-thread, per-thread-dir)",
                self.layout
            ),
        })?;
        let sync = SyncMode::parse(&self.sync).ok_or_else(|| FlagError {
            flag: "--sync",
            message: format!(
                "unknown sync mode '{}' (use none, end, each, dsync, every:N with N > 0)",
                self.sync
            ),
        })?;
        let reorder = if self.reorder {
            Some(opt("--reorder-offset", &self.reorder_offset, parse_count)?.unwrap_or(1))
        } else {
            None
        };
        if reorder == Some(0) {
            return Err(FlagError {
                flag: "--reorder-offset",
                message: "must be at least 1".into(),
            });
        }
        Ok(RawWorkload {
            target: Some(self.target.clone()),
            ops,
            threads: Some(flag("--threads", parse_count(&self.threads))?),
            layout: Some(layout),
            xfer: Some(flag("--xfer", parse_size(&self.xfer))?),
            size: opt("--size", &self.size, parse_size)?,
            total: opt("--total", &self.total, parse_size)?,
            block: opt("--block", &self.block, parse_size)?,
            segments: opt("--segments", &self.segments, parse_count)?,
            direct: self.direct,
            sync: Some(sync),
            drop_caches: self.drop_caches,
            reorder,
            iodepth: opt("--iodepth", &self.iodepth, parse_count)?.or_else(|| {
                engine::registry::data_engine(&engine_name(&self.engine))
                    .ok()
                    .map(|e| e.info().default_depth.into())
            }),
            engine: Some(engine_name(&self.engine)),
            uring_opts: opt("--uring-opts", &self.uring_opts, spec::UringOpts::parse)?,
            reps: Some(flag("--reps", parse_count(&self.reps))?),
            time_limit: opt("--time", &self.time, parse_duration)?,
            verify: self.verify,
            keep: self.keep,
            seed: opt("--seed", &self.seed, parse_count)?,
            rwmix_read: opt("--rwmix", &self.rwmix, parse_count)?,
            reuse: self.reuse,
            ..Default::default()
        })
    }
}

/// The driver options of `run` and `meta`: `--per-worker` keeps every
/// worker's row, otherwise rank 0 receives one summary per node; each
/// timed phase records its series at `interval`.
pub(crate) fn run_options(
    per_worker: bool,
    interval: bench::interval::Interval,
) -> bench::plan::Options {
    bench::plan::Options {
        node_summary: !per_worker,
        interval,
        ..Default::default()
    }
}

/// How the amount of data changes with the thread count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scale {
    /// The data in all stays that of the first point; each thread does its share (IOR -s 2048/N).
    Total,
    /// Each thread keeps the first point's share; the total grows with threads.
    PerThread,
}

impl Scale {
    /// Its `--scale` word, as the sweep's record keeps it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scale::Total => "total",
            Scale::PerThread => "per-thread",
        }
    }
}

/// Flags of `ioscale sweep`.
#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// Thread counts: a list `1,2,4` or a doubling range `1..64x2` (also `1..13`, `4..16+4`),
    /// or `auto` (`auto:MAX`, default 64): search for the smallest count within noise of
    /// the peak (doubling, then refining; docs/analysis.md). `--tasks` is the same flag,
    /// in IOR's and io500's word.
    #[arg(long, visible_alias = "tasks", value_name = "LIST")]
    pub threads: String,

    /// Transfer sizes to sweep (`run` only), e.g. `1m,16m`, or `auto` (`auto:MIN-MAX`,
    /// default 4k-64m): search for the smallest size within noise of the peak (doubling,
    /// then refining over aligned sizes); default: the inner command's --xfer.
    #[arg(long, value_name = "LIST")]
    pub xfer: Option<String>,

    /// Layouts to sweep: shared, per-thread, per-thread-dir for `run`;
    /// same-dir, per-thread-dir for `meta`. Default: the inner command's.
    #[arg(long, value_name = "LIST",
          value_parser = Choices(args::sweep_layouts), hide_possible_values = true)]
    pub layout: Option<String>,

    /// Target directories to compare (comma list); default: the inner command's TARGET.
    #[arg(long, value_name = "LIST")]
    pub target: Option<String>,

    /// Queue depths to sweep, e.g. `1,8,32,128` or `1..128x4`: requests
    /// (`run`) or operations (`meta`) in flight per thread; the inner
    /// command names a queueing engine (`--engine io_uring`). Default: the
    /// inner command's --iodepth.
    #[arg(long, value_name = "LIST")]
    pub iodepth: Option<String>,

    /// Node counts to sweep, e.g. `1,2,4`: the whole sweep runs once per
    /// value as MPI ranks (`--ranks-per-node` on each node) that sweep
    /// launches itself, with mpirun on the first N of `--hosts`, or on N
    /// simulated nodes of this machine (`scripts/mpi-nodes`, root) without
    /// it; each point's series names its node count. `auto` (`auto:MAX`,
    /// default: the --hosts given, or 8 simulated nodes) searches the node
    /// count as `--threads auto` searches threads (one --threads count).
    #[arg(long, value_name = "LIST", group = "launched")]
    pub nodes: Option<String>,

    /// Rank counts to sweep on one node, e.g. `1,2,4`, or `auto`
    /// (`auto:MAX`, default 64): the whole sweep runs once per value as
    /// that many MPI ranks that sweep launches itself (mpirun on the first
    /// of `--hosts`, or one simulated node); not with `--nodes`.
    #[arg(long, value_name = "LIST", group = "launched")]
    pub ranks: Option<String>,

    /// MPI ranks on each node for `--nodes` [default: 1].
    #[arg(long, value_name = "N", requires = "nodes")]
    pub ranks_per_node: Option<String>,

    /// Hosts for `--nodes` (comma list, at least the largest count): each
    /// point runs `mpirun --host H1:R,…`; for `--ranks`, the first.
    #[arg(long, value_name = "LIST", requires = "launched")]
    pub hosts: Option<String>,

    /// The simulated nodes' launcher for `--nodes` without `--hosts`
    /// [default: scripts/mpi-nodes of the source tree ioscale was built in].
    #[arg(long, value_name = "PATH", requires = "launched")]
    pub sim_nodes: Option<PathBuf>,

    /// Repetitions per point [default: the inner command's --reps], or `auto`
    /// (`auto:3%`): repeat each point until the 95% interval of its figure is
    /// within ±5% (or the given share), at least 3 times, at most --max-reps.
    #[arg(long, value_name = "N")]
    pub reps: Option<String>,

    /// The most repetitions of a point under `--reps auto`, failed ones
    /// included [default: 10].
    #[arg(long, value_name = "N")]
    pub max_reps: Option<String>,

    /// Keep the total data constant across thread counts (`total`) or each
    /// thread's share (`per-thread`) [default: total when the inner command
    /// gives --total, per-thread otherwise].
    #[arg(long, value_enum)]
    pub scale: Option<Scale>,

    /// Repetitions dropped at each end for the trimmed mean [default: reps ÷ 5, so 10 drop 2 and 2].
    #[arg(long, value_name = "K")]
    pub trim: Option<String>,

    /// Continue an interrupted sweep saved in --json FILE (same arguments required).
    #[arg(long, requires = "json")]
    pub resume: bool,

    /// Write the sweep record (all points, statistics, analysis) to FILE after every point.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write one CSV row per point and operation to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,

    /// Write every point's per-interval series to FILE as CSV: one row per
    /// interval per phase per point (the inner command's --interval sets
    /// the interval).
    #[arg(long, value_name = "FILE")]
    pub series_csv: Option<PathBuf>,

    /// Write the self-contained HTML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Write the charts as PNG and SVG into directory DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,

    #[command(flatten)]
    pub view: View,

    /// Print nothing on standard output (files are still written).
    #[arg(short, long)]
    pub quiet: bool,

    /// Live progress on standard error: bar (point, repetition, phase, live
    /// rate and ETA on one line), plain (one line per finished phase and
    /// point, for batch logs), none; auto is bar on a terminal, plain
    /// otherwise.
    #[arg(long, value_enum, default_value = "auto", value_name = "MODE")]
    pub progress: crate::progress::ProgressMode,

    #[command(flatten)]
    pub history: crate::history_run::HistoryArgs,

    /// The job to sweep, after `--`: `run OPTIONS…`, `meta OPTIONS…`, a
    /// `fio` job, or `io500 …` (the suite once per --threads value).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub inner: Vec<String>,
}

/// The parser of a job given as words: a sweep's command after `--`, the
/// COMMAND of `ioscale slurm`. It reads `run`, `meta`, `sweep` and `fio`
/// with the flags of `ioscale`'s own subcommands, and `--help` and
/// `--version` as `ioscale` does; any other command is taken whole
/// ([`JobCommand::Other`]), for the caller to refuse.
#[derive(Debug, Parser)]
#[command(name = "ioscale", version, about)]
pub struct JobCli {
    /// The job.
    #[command(subcommand)]
    pub command: JobCommand,
}

/// The jobs [`JobCli`] reads; each named, and its flags, as in `cli.rs`.
#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Run a data workload (write, read, random, mixed) with N parallel workers.
    Run(Box<RunArgs>),
    /// Small files and metadata: create, stat, read, delete … N files per thread (smallfile, mdtest).
    Meta(Box<MetaArgs>),
    /// Run a job at many thread counts (× transfer sizes × layouts × targets) and analyse the scaling.
    Sweep(Box<SweepArgs>),
    /// Run fio job files and command lines (`ioscale fio jobs.fio`, `ioscale fio --name=r --rw=randread --size=1g`).
    #[command(disable_help_flag = true)]
    Fio {
        /// fio's job files and options, as fio takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Any other command (`clean`, `ior`, …), its words as given; the
    /// callers refuse it whole, without reading them.
    #[command(external_subcommand)]
    Other(#[allow(dead_code)] Vec<String>),
}
