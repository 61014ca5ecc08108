//! Command-line definitions: the first parsing stage. `ioscale`'s
//! subcommands, for `main` to dispatch and for `--help`, completions and
//! the man page; each command's flags are its own module's (`run`, `meta`
//! and `sweep`'s in [`crate::job`]), so this file stands above them all.
//!
//! clap only collects and type-checks raw flags here; sizes, lists and their
//! combinations are validated when [`RunArgs::to_raw`] builds a
//! [`spec::RawWorkload`] and [`spec::RawWorkload::build`] checks it, so each
//! rejection names the flag and the fix in one place.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::job::{MetaArgs, RunArgs};

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
  # 4 KiB random reads at queue depth 32 (the write lays the files out)
  ioscale run --op write,randread --xfer 4k --engine io_uring --iodepth 32 \\
      --direct --size 1g /mnt/fs
  # keep the files for a later run, then remove them
  ioscale run --op write --keep /mnt/fs
  ioscale clean /mnt/fs
  # IOR's, dd's, mdtest's and smallfile's own command lines
  ioscale ior -N 8 --posix.odirect -t 1m -b 1m -s 256 -w -F -o /mnt/fs/ior.bin
  ioscale dd if=/dev/zero of=/mnt/fs/f bs=1M count=2048 conv=fsync
  ioscale mdtest --tasks 4 -n 1000 -F -u -d /mnt/fs/md
  ioscale smallfile --operation create --threads 4 --top /mnt/fs

Every measuring command records its run in the results history
(`ioscale history list`; --no-history or IOSCALE_HISTORY=off to skip).

Exit codes: 0 ran clean, 1 I/O errors or failed verification, 2 usage or setup
error, 3 a figure regressed against --baseline, 130 interrupted (SIGINT,
SIGTERM), 129 hung up (SIGHUP)."
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
    Sweep(Box<crate::job::SweepArgs>),
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
    #[command(after_help = crate::front::io500::HELP, disable_help_flag = true)]
    Io500 {
        /// An io500 .ini file and/or TARGET, and the options of `ioscale io500 --help`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Write an sbatch script that runs an ioscale command as one Slurm job (MPI ranks).
    #[command(after_help = crate::slurm::EXAMPLES)]
    Slurm(Box<crate::slurm::SlurmArgs>),
    /// The results history: every measured run, listed, shown, trended, compared, exported, imported, pruned.
    #[command(after_help = crate::history_cmd::EXAMPLES)]
    History(crate::history_cmd::HistoryCmd),
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
    /// Print the man pages (roff) generated from the same flag definitions, or write one per command.
    #[command(after_help = "Examples:
  ioscale man | man -l -
  # one page per command, for a man directory
  ioscale man --dir man1 && man -l man1/ioscale-run.1")]
    Man(crate::manpage::ManArgs),
}

const RUN_EXAMPLES: &str = "Examples:
  # the EFS workshop's IOR test: 2 GiB in all, 8 workers, a file each, O_DIRECT
  ioscale run --op write,read --threads 8 --layout per-thread --xfer 1m \\
      --total 2g --direct /mnt/efs

  # one shared file in IOR's segmented layout (ior -t 1m -b 1m -s 256, 8 tasks)
  ioscale run --op write --threads 8 --layout shared --xfer 1m --block 1m \\
      --segments 256 /mnt/fs

  # judge the run against the median of the last 5 runs of the same
  # workload on /mnt/fs; exit 3 when a figure fell beyond the noise and 10%
  ioscale run --op write,read --reps 3 --baseline median /mnt/fs

  # dd oflag=sync versus conv=fsync
  ioscale run --op write --xfer 1m --size 2g --sync each /mnt/fs
  ioscale run --op write --xfer 1m --size 2g --sync end /mnt/fs

  # 4 KiB random reads at queue depth 32, three repetitions, JSON record
  # (the write lays out the files the reads need)
  ioscale run --op write,randread --xfer 4k --size 1g --direct \\
      --engine io_uring --iodepth 32 --reps 3 --json r.json /mnt/fs

  # write with a checkable pattern, read back and verify every byte
  ioscale run --op write,read --verify --drop-caches /mnt/fs

  # keep the files, read them in a later run; they stay until clean
  ioscale run --op write --threads 4 --keep /mnt/fs && \\
      ioscale run --op read --threads 4 /mnt/fs && ioscale clean /mnt/fs

  # a batch log: one line per finished phase instead of the live line
  ioscale run --progress plain --op write,read --reps 3 /mnt/fs

  # throughput and latency every 250 ms of a write of up to 60 s, as CSV
  # (burst credits running out show as a drop, which `report` names)
  ioscale run --op write --time 60s --size 1g --interval 250ms \\
      --series-csv w.csv --json w.json /mnt/efs

Sizes: 4k 1m 2g (powers of 1024, as IOR and dd), 1MiB, 1MB (10^6), 512 (bytes).";

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
stat-dir, chmod, rename, rename-dir, setxattr, getxattr, symlink, readdir
(ls -l), delete, mkdir, rmdir, cleanup. The tree lives in
TARGET/ioscale-meta.d; only names ioscale made are ever removed.";

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

    #[command(flatten)]
    pub s3: crate::args::S3Flags,
}
