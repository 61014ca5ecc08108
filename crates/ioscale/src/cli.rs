//! Command-line definitions: the first parsing stage.
//!
//! clap only collects and type-checks raw flags here; sizes, lists and their
//! combinations are validated when [`RunArgs::to_raw`] builds a
//! [`spec::RawWorkload`] and [`spec::RawWorkload::build`] checks it, so each
//! rejection names the flag and the fix in one place.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use spec::{parse_count, parse_duration, parse_size, Layout, Op, RawWorkload, SyncMode};

use crate::args::{RecordFiles, Shown};

/// Parallel storage benchmark: how throughput, IOPS and latency change as
/// work is spread across threads, transfer sizes, sync modes and layouts.
#[derive(Debug, Parser)]
#[command(
    name = "ioscale",
    version,
    about,
    after_help = "Examples:
  # 1 worker writes then reads 256 MiB
  ioscale run /tmp
  ioscale run --op write,read --threads 8 --layout per-thread --xfer 1m \\
      --size 256m --direct /mnt/fs
  ioscale run --op randread --xfer 4k --engine io_uring --iodepth 32 \\
      --direct --size 1g /mnt/fs
  # remove the files a --keep run left
  ioscale clean /mnt/fs
  # IOR's, dd's, mdtest's and smallfile's own command lines
  ioscale ior -N 8 --posix.odirect -t 1m -b 1m -s 256 -w -F -o /mnt/fs/ior.bin
  ioscale dd if=/dev/zero of=/mnt/fs/f bs=1M count=2048 conv=fsync
  ioscale mdtest --tasks 4 -n 1000 -F -u -d /mnt/fs/md
  ioscale smallfile --operation create --threads 4 --top /mnt/fs/sf

Exit codes: 0 ran clean, 1 I/O errors or failed verification, 2 usage or setup
error, 130 interrupted."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a data workload (write, read, random, mixed) with N parallel workers.
    #[command(after_help = RUN_EXAMPLES)]
    Run(Box<RunArgs>),
    /// Small files and metadata: create, stat, read, delete … N files per thread (smallfile, mdtest).
    #[command(after_help = META_EXAMPLES)]
    Meta(Box<MetaArgs>),
    /// Run a job at many thread counts (× transfer sizes × layouts × targets) and analyse the scaling.
    #[command(after_help = crate::sweep::SWEEP_EXAMPLES)]
    Sweep(Box<crate::sweep::SweepArgs>),
    /// Render a saved JSON record (sweep or run) again: table, CSV, HTML report, charts.
    #[command(after_help = crate::report_cmd::REPORT_EXAMPLES)]
    Report(Box<crate::args::ReportArgs>),
    /// Put two or more saved records side by side with their ratios.
    #[command(after_help = crate::report_cmd::COMPARE_EXAMPLES)]
    Compare(crate::report_cmd::CompareArgs),
    /// Run an IOR command line (`ioscale ior -w -r -t 1m -b 1m -s 16 -F -o /mnt/fs/ior.bin`); `ioscale ior --help` lists its options.
    #[command(after_help = crate::front::ior::HELP, disable_help_flag = true)]
    Ior {
        /// IOR's options, as IOR takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Run a dd command line (`ioscale dd if=/dev/zero of=F bs=1M count=2048 conv=fsync`); `--jobs N` runs N in parallel.
    #[command(after_help = crate::front::dd::HELP, disable_help_flag = true)]
    Dd {
        /// dd's operands, as dd takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Run fio job files and command lines (`ioscale fio jobs.fio`, `ioscale fio --name=r --rw=randread --size=1g`).
    #[command(after_help = crate::front::fio::HELP, disable_help_flag = true)]
    Fio {
        /// fio's job files and options, as fio takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Run an mdtest command line (`ioscale mdtest --tasks 4 -n 1000 -F -u -d /mnt/fs/md`); `ioscale mdtest --help` lists its options.
    #[command(after_help = crate::front::mdtest::HELP, disable_help_flag = true)]
    Mdtest {
        /// mdtest's options, as mdtest takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Run a smallfile_cli.py command line (`ioscale smallfile --operation create --threads 4 --files 256 --file-size 4 --top /mnt/fs/sf`).
    #[command(after_help = crate::front::smallfile::HELP, disable_help_flag = true)]
    Smallfile {
        /// smallfile's options, as smallfile_cli.py takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Run the IO500 benchmark's phases and score (`ioscale io500 config.ini`); `ioscale io500 --help` lists its options.
    #[command(disable_help_flag = true)]
    Io500 {
        /// An io500 .ini file and/or TARGET, and the options of `ioscale io500 --help`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Write an sbatch script that runs an ioscale command as one Slurm job (MPI ranks).
    #[command(after_help = crate::slurm::EXAMPLES)]
    Slurm(Box<crate::slurm::SlurmArgs>),
    /// Remove the data sets and trees ioscale left in TARGET (recognised by ioscale's markers only).
    #[command(after_help = CLEAN_EXAMPLES)]
    Clean(CleanArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Example:\n  ioscale completions bash > /etc/bash_completion.d/ioscale"
    )]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) generated from the same flag definitions.
    #[command(after_help = "Example:\n  ioscale man | man -l -")]
    Man,
}

const RUN_EXAMPLES: &str = "Examples:
  # the EFS workshop's IOR test: 2 GiB in all, 8 workers, a file each, O_DIRECT
  ioscale run --op write,read --threads 8 --layout per-thread --xfer 1m \\
      --total 2g --direct /mnt/efs

  # one shared file in IOR's segmented layout (ior -t 1m -b 1m -s 256, 8 tasks)
  ioscale run --op write --threads 8 --layout shared --xfer 1m --block 1m \\
      --segments 256 /mnt/fs

  # dd oflag=sync versus conv=fsync
  ioscale run --op write --xfer 1m --size 2g --sync each /mnt/fs
  ioscale run --op write --xfer 1m --size 2g --sync end /mnt/fs

  # 4 KiB random reads at queue depth 32, three repetitions, JSON record
  ioscale run --op randread --xfer 4k --size 1g --direct --engine io_uring \\
      --iodepth 32 --reps 3 --json r.json /mnt/fs

  # write with a checkable pattern, read back and verify every byte
  ioscale run --op write,read --verify --drop-caches /mnt/fs

  # keep the files, read them in a later run (which removes them)
  ioscale run --op write --threads 4 --keep /mnt/fs && \\
      ioscale run --op read --threads 4 /mnt/fs

  # a batch log: one line per finished phase instead of the live line
  ioscale run --progress plain --op write,read --reps 3 /mnt/fs

Sizes: 4k 1m 2g (powers of 1024, as IOR and dd), 1MiB, 1MB (10^6), 512 (bytes).";

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
    #[arg(long = "op", value_name = "LIST", default_value = "write,read")]
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
    #[arg(long, value_name = "LAYOUT", default_value = "per-thread")]
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
    #[arg(long, value_name = "MODE", default_value = "none")]
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

    /// I/O engine: sync (pread/pwrite) or io_uring (--iodepth requests in
    /// flight per worker).
    #[arg(long, value_name = "NAME", default_value = "sync")]
    pub engine: String,

    /// Requests in flight per worker (io_uring) [default: 32 with io_uring].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub iodepth: Option<String>,

    /// io_uring ring set-up, a comma list: fixedbufs (registered buffers),
    /// files (registered file), batch (one submit per refill; `each` is the
    /// default), coop (COOP_TASKRUN), single (SINGLE_ISSUER+DEFER_TASKRUN),
    /// sqpoll[=MS] (kernel polling thread, idle MS, 100 by default), spin
    /// (wait for completions spinning, not sleeping), tuned
    /// (fixedbufs,files,coop,single), plain. Features the kernel refuses
    /// are dropped with a warning.
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
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
}

const META_EXAMPLES: &str = "Examples:
  # seed 003: 1024 files of 4 KiB, one thread, one directory (smallfile
  # --same-dir Y)
  ioscale meta --ops create --threads 1 --files 1024 --file-size 4k \\
      --same-dir --files-per-dir 1024 --dirs-per-dir 1024 /mnt/efs

  # the same 1024 files over 16 threads, a directory per thread (--same-dir N)
  ioscale meta --ops create --threads 16 --files 64 --file-size 4k /mnt/efs

  # smallfile's usual sequence, with latency percentiles and a JSON record
  ioscale meta --ops create,read,append,stat,chmod,rename,delete \\
      --threads 4 --files 10000 --json m.json /mnt/fs

  # mdtest-like: 100,000 empty files per thread, hashed 100 per directory,
  # 10 subdirectories each
  ioscale meta --ops create,stat,delete --threads 8 --files 100000 \\
      --file-size 0 --files-per-dir 100 --dirs-per-dir 10 /mnt/fs

  # directories instead of files (mdtest -D); random sizes of 1 to 64 KiB
  ioscale meta --ops mkdir,rmdir --threads 4 --files 5000 /mnt/fs
  ioscale meta --ops create,read,delete --file-size 1k..64k --seed 7 /mnt/fs

  # keep the tree, stat it in a later run, then remove it
  ioscale meta --ops create --keep --threads 4 /mnt/fs
  ioscale meta --ops stat,readdir --keep --threads 4 /mnt/fs
  ioscale meta --ops cleanup --threads 4 /mnt/fs

Operations: create, read, append, overwrite, truncate-overwrite, stat,
stat-dir, chmod, rename, setxattr, getxattr, symlink, readdir (ls -l), delete,
mkdir, rmdir, cleanup. The tree lives in TARGET/ioscale-meta.d; only names
ioscale made are ever removed.";

/// Flags of `ioscale meta`.
#[derive(Debug, Args)]
pub struct MetaArgs {
    /// Directory to test; ioscale works in TARGET/ioscale-meta.d and removes only what it created.
    pub target: PathBuf,

    /// Phases, in order (comma list): create, read, append, overwrite,
    /// truncate-overwrite, stat, stat-dir, chmod, rename, setxattr, getxattr,
    /// symlink, readdir, delete, mkdir, rmdir, cleanup.
    #[arg(
        long = "ops",
        alias = "op",
        value_name = "LIST",
        default_value = "create,stat,read,delete"
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
    #[arg(long, value_name = "NAME", default_value = "sync")]
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
            engine: Some(engine_name(&self.engine)),
            // The io_uring metadata engine defaults to the data engine's
            // depth; the sync engine to 1.
            iodepth: opt("--iodepth", &self.iodepth, parse_count)?.or_else(|| {
                engine::registry::meta_engine(&engine_name(&self.engine))
                    .ok()
                    .filter(|e| e.info().queueing)
                    .map(|_| 32)
            }),
        })
    }
}

/// Examples for `ioscale clean --help`.
const CLEAN_EXAMPLES: &str = "Examples:
  # files kept for a later read, then removed when done with them
  ioscale run --op write --keep /mnt/fs
  ioscale run --op read --keep /mnt/fs
  ioscale clean /mnt/fs

  # IOR front-end files kept with -k: the directory, or the -o path itself
  ioscale ior -w -k -F -N 4 -o /mnt/fs/ior/ior.bin
  ioscale clean /mnt/fs/ior/ior.bin

In a directory, clean removes ioscale.d (run), ioscale-meta.d (meta, mdtest,
smallfile) and every IOR front-end set whose marker .NAME.ioscale-marker is
there. Only what ioscale's markers name is removed; files others put there
are left alone and listed. A set a live run holds is refused, naming it.";

/// Flags of `ioscale clean`.
#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Directory a `run --keep`, `meta --keep`, mdtest, smallfile or
    /// `ior -k` used, or an `ior -o` path.
    pub target: PathBuf,
    /// Take over a set whose lock names a run on another host (which this
    /// host cannot check): only once you know that run is over. A live run
    /// on this host is never taken over.
    #[arg(long)]
    pub force: bool,
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
