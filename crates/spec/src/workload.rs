//! The validated description of a data workload.
//!
//! Front-ends (the native CLI, and later the IOR and dd emulations) only
//! collect raw values into [`RawWorkload`]; [`RawWorkload::build`] is the one
//! place that checks them and resolves the sizing rules into a
//! [`WorkloadSpec`] the engine can trust. Keeping that in one place means an
//! impossible combination is refused the same way whatever the front-end.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::check;
use crate::units::format_size;

/// One phase's access pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Sequential writes.
    Write,
    /// Sequential reads.
    Read,
    /// Writes at shuffled offsets, each transfer exactly once.
    Randwrite,
    /// Reads at shuffled offsets, each transfer exactly once.
    Randread,
    /// Sequential offsets, each transfer a read or a write by `rwmix`.
    Rw,
    /// Shuffled offsets, each transfer a read or a write by `rwmix`.
    Randrw,
}

impl Op {
    /// All operations, in the order `--help` lists them.
    pub const ALL: [Op; 6] = [
        Op::Write,
        Op::Read,
        Op::Randwrite,
        Op::Randread,
        Op::Rw,
        Op::Randrw,
    ];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Op::Write => "write",
            Op::Read => "read",
            Op::Randwrite => "randwrite",
            Op::Randread => "randread",
            Op::Rw => "rw",
            Op::Randrw => "randrw",
        }
    }

    /// Whether offsets are shuffled.
    pub fn is_random(self) -> bool {
        matches!(self, Op::Randwrite | Op::Randread | Op::Randrw)
    }

    /// Whether the phase may read.
    pub fn reads(self) -> bool {
        !matches!(self, Op::Write | Op::Randwrite)
    }

    /// Whether the phase may write.
    pub fn writes(self) -> bool {
        !matches!(self, Op::Read | Op::Randread)
    }

    /// Parses a name as typed on the command line.
    pub fn parse(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.name() == s.trim())
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How workers share files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// One file in IOR's segmented layout.
    Shared,
    /// One file per worker, all in one directory.
    PerThread,
    /// One file per worker, each in its own directory.
    PerThreadDir,
}

impl Layout {
    /// Every layout, in the order `--help` lists them.
    pub const ALL: [Layout; 3] = [Layout::Shared, Layout::PerThread, Layout::PerThreadDir];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Shared => "shared",
            Layout::PerThread => "per-thread",
            Layout::PerThreadDir => "per-thread-dir",
        }
    }

    /// Parses a name as typed on the command line.
    pub fn parse(s: &str) -> Option<Layout> {
        match s.trim() {
            "shared" => Some(Layout::Shared),
            "per-thread" | "fpp" => Some(Layout::PerThread),
            "per-thread-dir" => Some(Layout::PerThreadDir),
            _ => None,
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// When written data is forced to stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "mode", content = "n")]
pub enum SyncMode {
    /// Never; the page cache decides (buffered) or the device does (direct).
    None,
    /// One fsync per file at the end of a write phase, inside the timing
    /// (like `dd conv=fsync`).
    End,
    /// Open with O_SYNC, so every write returns only once it is stable (like
    /// `dd oflag=sync`).
    Each,
    /// Open with O_DSYNC (data, not all metadata; like `dd oflag=dsync`).
    Dsync,
    /// An fsync after every N writes of a worker, and at the end.
    Every(u64),
    /// fio's `fsync=N`: an fsync after every N writes when more I/O
    /// follows (the sync is issued before the next request), none at the
    /// end.
    Between(u64),
    /// fio's `fdatasync=N`: as [`SyncMode::Between`] with fdatasync.
    DataBetween(u64),
}

impl SyncMode {
    /// The words [`SyncMode::parse`] takes (`every:` before a count).
    pub const WORDS: [&'static str; 7] = [
        "none",
        "end",
        "each",
        "dsync",
        "every:",
        "between:",
        "data-between:",
    ];

    /// Parses `none`, `end`, `each`, `dsync`, `every:N`, `between:N` or
    /// `data-between:N`.
    pub fn parse(s: &str) -> Option<SyncMode> {
        let s = s.trim();
        match s {
            "none" => Some(SyncMode::None),
            "end" => Some(SyncMode::End),
            "each" | "sync" => Some(SyncMode::Each),
            "dsync" => Some(SyncMode::Dsync),
            _ => {
                let (make, n): (fn(u64) -> SyncMode, _) = if let Some(n) = s.strip_prefix("every:")
                {
                    (SyncMode::Every, n)
                } else if let Some(n) = s.strip_prefix("between:") {
                    (SyncMode::Between, n)
                } else {
                    (SyncMode::DataBetween, s.strip_prefix("data-between:")?)
                };
                let n = n.parse().ok()?;
                (n > 0).then(|| make(n))
            }
        }
    }

    /// The name used in tables.
    pub fn label(self) -> String {
        match self {
            SyncMode::None => "none".into(),
            SyncMode::End => "end".into(),
            SyncMode::Each => "each".into(),
            SyncMode::Dsync => "dsync".into(),
            SyncMode::Every(n) => format!("every:{n}"),
            SyncMode::Between(n) => format!("between:{n}"),
            SyncMode::DataBetween(n) => format!("data-between:{n}"),
        }
    }
}

/// A checksum in fio's verify header (`verify=`), written into each
/// block of a write and checked when it is read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Checksum {
    /// CRC-32C (Castagnoli).
    Crc32c,
    /// CRC-32C, named as fio's hardware-assisted variant.
    Crc32cIntel,
    /// MD5.
    Md5,
    /// SHA-1.
    Sha1,
    /// XXH32 (seed 1).
    Xxhash,
}

impl Checksum {
    /// Parses fio's `verify=` name.
    pub fn parse(s: &str) -> Option<Checksum> {
        Some(match s {
            "crc32c" => Checksum::Crc32c,
            "crc32c-intel" => Checksum::Crc32cIntel,
            "md5" => Checksum::Md5,
            "sha1" => Checksum::Sha1,
            "xxhash" => Checksum::Xxhash,
            _ => return None,
        })
    }

    /// fio's name.
    pub fn name(self) -> &'static str {
        match self {
            Checksum::Crc32c => "crc32c",
            Checksum::Crc32cIntel => "crc32c-intel",
            Checksum::Md5 => "md5",
            Checksum::Sha1 => "sha1",
            Checksum::Xxhash => "xxhash",
        }
    }
}

/// What a workload asks of each data file and request beyond ioscale's
/// own defaults, as fio does by default (all off unless a front-end sets
/// them): cache hints when a worker opens its file and fio's verify
/// header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct IoHints {
    /// `posix_fadvise(DONTNEED)` of each worker's region of its file
    /// right after it opens it (fio's `invalidate=1`).
    pub invalidate: bool,
    /// `posix_fadvise(SEQUENTIAL)` or `(RANDOM)` of the region as the
    /// phase's order (fio's `fadvise_hint=1`).
    pub fadvise: bool,
    /// fio's verify header with this checksum in each written block
    /// (with `verify`); `None`: ioscale's own pattern.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum: Option<Checksum>,
    /// An fsync when the worker's writes are done, besides what `sync`
    /// asks for (fio's `end_fsync=1` with `fsync=N`).
    pub end_sync: bool,
    /// Stop at the first block that fails its check (fio's
    /// `verify_fatal=1`); otherwise every block is checked and counted.
    pub verify_fatal: bool,
}

impl IoHints {
    /// Whether nothing is asked (left out of the JSON then).
    pub fn is_default(&self) -> bool {
        *self == IoHints::default()
    }
}

/// The io_uring ring set-up asked for with `--uring-opts`, as recorded in
/// the JSON. The engine turns it into its own options; features the kernel
/// refuses are dropped there with a note, so this says what was asked, not
/// what ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UringOpts {
    /// Registered (fixed) buffers (`fixedbufs`).
    #[serde(default)]
    pub fixed_buffers: bool,
    /// The data file in the ring's file table (`files`).
    #[serde(default)]
    pub register_files: bool,
    /// All requests of a refill in one `io_uring_enter` (`batch`) instead
    /// of one per request.
    #[serde(default)]
    pub batch_submit: bool,
    /// SQPOLL with this idle time in milliseconds (`sqpoll=MS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqpoll_idle_ms: Option<u32>,
    /// `IORING_SETUP_COOP_TASKRUN` (`coop`).
    #[serde(default)]
    pub coop_taskrun: bool,
    /// `IORING_SETUP_SINGLE_ISSUER` with `DEFER_TASKRUN` (`single`).
    #[serde(default)]
    pub single_issuer: bool,
    /// Wait for completions by spinning, not sleeping (`spin`; without
    /// SQPOLL, which spins already).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spin: bool,
}

impl UringOpts {
    /// The words of the comma list [`UringOpts::parse`] takes
    /// (`sqpoll=MS` is `sqpoll` with an idle time).
    pub const WORDS: [&'static str; 10] = [
        "fixedbufs",
        "files",
        "batch",
        "each",
        "coop",
        "single",
        "sqpoll",
        "spin",
        "tuned",
        "plain",
    ];

    /// fixedbufs, files, coop and single: fio's best-known set.
    pub fn tuned() -> Self {
        UringOpts {
            fixed_buffers: true,
            register_files: true,
            coop_taskrun: true,
            single_issuer: true,
            ..Default::default()
        }
    }

    /// Parses a comma list of `fixedbufs`, `files`, `batch`, `each`,
    /// `coop`, `single`, `sqpoll[=MS]` (100 ms when no time is given),
    /// `spin`, `tuned` (fixedbufs,files,coop,single) and `plain` (nothing).
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut o = UringOpts::default();
        for p in s.split(',').map(str::trim) {
            match p {
                "plain" => o = UringOpts::default(),
                "tuned" => {
                    let (b, q, sp) = (o.batch_submit, o.sqpoll_idle_ms, o.spin);
                    o = UringOpts::tuned();
                    o.batch_submit = b;
                    o.sqpoll_idle_ms = q;
                    o.spin = sp;
                }
                "fixedbufs" => o.fixed_buffers = true,
                "files" => o.register_files = true,
                "batch" => o.batch_submit = true,
                "each" => o.batch_submit = false,
                "coop" => o.coop_taskrun = true,
                "single" => o.single_issuer = true,
                "spin" => o.spin = true,
                "sqpoll" => o.sqpoll_idle_ms = Some(100),
                _ => match p.strip_prefix("sqpoll=") {
                    Some(ms) => match ms.parse::<u32>() {
                        Ok(v) if (1..=60_000).contains(&v) => o.sqpoll_idle_ms = Some(v),
                        _ => {
                            return Err(format!(
                                "sqpoll={ms}: the idle time is whole milliseconds, 1 to 60000"
                            ))
                        }
                    },
                    None => {
                        return Err(format!(
                            "unknown option '{p}' (use fixedbufs, files, batch, each, coop, \
                             single, sqpoll[=MS], spin, tuned, plain)"
                        ))
                    }
                },
            }
        }
        Ok(o)
    }

    /// The comma list [`UringOpts::parse`] reads back (`plain` for none).
    pub fn label(&self) -> String {
        let mut v: Vec<String> = Vec::new();
        for (on, name) in [
            (self.fixed_buffers, "fixedbufs"),
            (self.register_files, "files"),
            (self.batch_submit, "batch"),
            (self.coop_taskrun, "coop"),
            (self.single_issuer, "single"),
            (self.spin, "spin"),
        ] {
            if on {
                v.push(name.into());
            }
        }
        if let Some(ms) = self.sqpoll_idle_ms {
            v.push(format!("sqpoll={ms}"));
        }
        if v.is_empty() {
            "plain".into()
        } else {
            v.join(",")
        }
    }
}

/// How the data files are named and where they live.
///
/// The native commands work inside `TARGET/ioscale.d`; the compatibility
/// front-ends name files the way the tool they stand in for does, so
/// scripts that look for those files keep working.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "scheme", rename_all = "kebab-case")]
pub enum FileNaming {
    /// `TARGET/ioscale.d/shared.dat`, `file.%08d`, `dir.%08d/file.%08d`.
    #[default]
    Native,
    /// IOR's names: the shared file at exactly `path`; one file per task
    /// at `path.%08d`; with a directory per task,
    /// `dirname(path)/%d/basename(path).%08d`.
    Ior {
        /// The `-o` path.
        path: PathBuf,
    },
    /// dd's names: exactly these files, one per worker (`of=` or `if=`).
    Dd {
        /// One path per worker.
        paths: Vec<PathBuf>,
        /// Keep an existing file's length (dd `conv=notrunc`); otherwise a
        /// write run truncates it first, as dd does.
        #[serde(default)]
        notrunc: bool,
        /// The files are the ones a front-end laid out before the run
        /// (fio's): each must be there, a regular file with no other
        /// hard link, and is opened in its directory without following a
        /// symbolic link. Without it a link at a name is followed, as dd
        /// follows `of=`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        nofollow: bool,
    },
}

impl FileNaming {
    /// Whether this is the native scheme (left out of the JSON then).
    pub fn is_native(&self) -> bool {
        matches!(self, FileNaming::Native)
    }
}

/// Request sizes drawn per request, as fio draws them for `bsrange=` and
/// `bssplit=`: each a multiple of `min`, at most `max`; offsets aligned
/// to `min` (fio's default `blockalign`). The spec's `xfer` is `min`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct XferSizes {
    /// The smallest request (bytes).
    pub min: u64,
    /// The largest request (bytes).
    pub max: u64,
    /// fio's `bssplit`: (size, percentage) pairs in the order given;
    /// empty: `bsrange`, every multiple of `min` up to `max` alike.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub split: Vec<(u64, u32)>,
}

/// The raw, unchecked values a front-end collected.
///
/// `None` means "not given"; [`RawWorkload::build`] applies the defaults.
#[derive(Debug, Clone, Default)]
pub struct RawWorkload {
    /// Directory the files go into.
    pub target: Option<PathBuf>,
    /// Phases in order.
    pub ops: Vec<Op>,
    /// Number of workers.
    pub threads: Option<u64>,
    /// File layout.
    pub layout: Option<Layout>,
    /// Transfer size.
    pub xfer: Option<u64>,
    /// Bytes per worker.
    pub size: Option<u64>,
    /// Bytes in all, split across workers.
    pub total: Option<u64>,
    /// IOR block size.
    pub block: Option<u64>,
    /// IOR segment count.
    pub segments: Option<u64>,
    /// O_DIRECT.
    pub direct: bool,
    /// Sync mode.
    pub sync: Option<SyncMode>,
    /// Drop the page cache between phases.
    pub drop_caches: bool,
    /// Task offset for reordered reads (IOR -C uses 1).
    pub reorder: Option<u64>,
    /// Engine, by its name in the engine registry (`sync` when not given).
    pub engine: Option<String>,
    /// Requests in flight per worker (1 when not given).
    pub iodepth: Option<u64>,
    /// io_uring ring set-up (`--uring-opts`).
    pub uring_opts: Option<UringOpts>,
    /// Repetitions.
    pub reps: Option<u64>,
    /// Per-phase deadline.
    pub time_limit: Option<Duration>,
    /// Write a checkable pattern and check it on read.
    pub verify: bool,
    /// Leave the files behind.
    pub keep: bool,
    /// Seed for shuffles and patterns.
    pub seed: Option<u64>,
    /// Percentage of reads in mixed phases.
    pub rwmix_read: Option<u64>,
    /// File naming scheme (native when not given).
    pub naming: Option<FileNaming>,
    /// Pause before each repetition after the first (IOR -d).
    pub rep_delay: Option<Duration>,
    /// Let a repetition's write phase reuse the files the one before left
    /// (`run --reuse`); otherwise they are removed first, as IOR does.
    pub reuse: bool,
    /// Where each worker's data starts in its file (fio's `offset` and
    /// `offset_increment`); one per worker, or empty for 0.
    pub start_offsets: Vec<u64>,
    /// Cache hints and verify header (fio's defaults and options).
    pub hints: IoHints,
    /// With a time limit: after it, every worker goes on until it has
    /// done as many transfers as the busiest worker did by then (IOR's
    /// `-O stoneWallingWearOut=1`).
    pub wearout: bool,
    /// Transfers of each worker's data (by owner) that an earlier write
    /// left; empty: all of them. See [`WorkloadSpec::item_counts`].
    pub item_counts: Vec<u64>,
    /// Random offsets drawn independently, repeats allowed (fio's
    /// `norandommap`, IOR's `-z -z`), instead of a shuffle that visits
    /// every transfer once.
    pub random_repeats: bool,
    /// Random phases shuffle the transfers within each block and walk the
    /// segments in order (IOR's `-z`), instead of one shuffle of all.
    pub shuffle_in_block: bool,
    /// Request sizes drawn per request (fio's `bsrange`, `bssplit`);
    /// `xfer` is then their minimum.
    pub xfer_sizes: Option<XferSizes>,
    /// Write sizes when they differ from the reads' (`xfer_sizes`, or
    /// `xfer`): fio's `bs=R,W`.
    pub write_sizes: Option<XferSizes>,
}

/// A complete, consistent workload the engine can run without further checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSpec {
    /// Directory the files go into.
    pub target: PathBuf,
    /// Phases in order.
    pub ops: Vec<Op>,
    /// Workers per process (`--threads`); a run of several ranks has
    /// ranks × threads workers, which the driver's topology counts.
    pub threads: u32,
    /// File layout.
    pub layout: Layout,
    /// Bytes per request.
    pub xfer: u64,
    /// Bytes of one worker's contiguous block (IOR -b).
    pub block: u64,
    /// Blocks per worker (IOR -s).
    pub segments: u64,
    /// O_DIRECT.
    pub direct: bool,
    /// Sync mode.
    pub sync: SyncMode,
    /// Drop the page cache before each phase after the first.
    pub drop_caches: bool,
    /// Worker r reads what worker (r + offset) mod threads wrote; 0 = off.
    pub reorder_offset: u32,
    /// Engine, by its name in the engine registry (`sync`, `io_uring`);
    /// the driver checks it against the registry before anything runs.
    pub engine: String,
    /// Requests in flight per worker (1 for the sync engine).
    pub iodepth: u32,
    /// io_uring ring set-up asked for (`--uring-opts`); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uring_opts: Option<UringOpts>,
    /// Repetitions of the whole phase sequence.
    pub reps: u32,
    /// Stop each phase at this deadline (stonewall).
    #[serde(with = "crate::units::opt_secs")]
    pub time_limit: Option<Duration>,
    /// Pattern write and check.
    pub verify: bool,
    /// Leave the files behind.
    pub keep: bool,
    /// Seed for shuffles and patterns.
    pub seed: u64,
    /// Percentage of reads in mixed phases.
    pub rwmix_read: u8,
    /// File naming scheme; absent from the JSON when native.
    #[serde(default, skip_serializing_if = "FileNaming::is_native")]
    pub naming: FileNaming,
    /// Pause before each repetition after the first (IOR -d); absent when none.
    #[serde(
        default,
        with = "crate::units::opt_secs",
        skip_serializing_if = "Option::is_none"
    )]
    pub rep_delay: Option<Duration>,
    /// Whether a repetition's write phase reuses the files the repetition
    /// before left (`run --reuse`). When false, each repetition after the
    /// first removes them before it writes, as IOR does: a write over
    /// allocated, cached blocks is not the write the first repetition did.
    #[serde(default)]
    pub reuse_files: bool,
    /// Where each worker's data starts in its file (fio's `offset` and
    /// `offset_increment`): one per worker; absent (empty) when all are 0.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub start_offsets: Vec<u64>,
    /// Cache hints and verify header; absent when none.
    #[serde(default, skip_serializing_if = "IoHints::is_default")]
    pub hints: IoHints,
    /// With `time_limit`: at the limit every worker posts the transfers
    /// it has done, and then goes on until it has done as many as the
    /// busiest worker of any rank (capped at its own share), inside the
    /// phase's time, as IOR's stonewall wear-out does; the files then
    /// hold the same number of transfers for every worker.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wearout: bool,
    /// The transfers of each worker's data (indexed by the worker that
    /// owns the data, over all ranks) that exist: what an earlier write
    /// of the same order left when it stopped at its time limit. A phase
    /// issues only the first `item_counts[owner]` transfers of its walk
    /// (sequential or shuffled, the walk the write made); with
    /// `random_repeats` it draws among the first that many transfer slots.
    /// Empty: every transfer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub item_counts: Vec<u64>,
    /// Random phases draw each offset independently, repeats allowed
    /// (fio's `norandommap`, IOR's `-z -z`), `block × segments ÷ xfer`
    /// draws a worker; without it a random phase visits every transfer
    /// exactly once in a seeded shuffle.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub random_repeats: bool,
    /// Random phases shuffle the transfers of each block (the same order
    /// in every block) and walk the segments in order, as IOR's `-z`
    /// does; without it one shuffle spans all of a worker's transfers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shuffle_in_block: bool,
    /// Request sizes drawn per request (fio's `bsrange`, `bssplit`): each
    /// worker walks its region once (sequentially, or at random over the
    /// `xfer`-sized blocks not yet touched, a request cut where it meets
    /// one), with `xfer` (the minimum) as the unit; absent: every request
    /// is `xfer` bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xfer_sizes: Option<XferSizes>,
    /// The writes' sizes when they differ from the reads' (fio's
    /// `bs=R,W`, or a list per direction of `bsrange`/`bssplit`);
    /// `xfer_sizes` (or `xfer`) then are the reads'. A phase that only
    /// writes walks with these; a mixed phase, or any mixed phase with
    /// `xfer_sizes`, walks as fio's does: each direction sequentially from
    /// the region's start until the bytes of both reach the region (a
    /// random walk: blocks of `xfer`, the smaller minimum, not yet
    /// touched), the direction drawn before the size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_sizes: Option<XferSizes>,
}

impl WorkloadSpec {
    /// The transfers of `owner`'s data a phase of this spec may touch:
    /// `item_counts[owner]` when given, else all of them.
    pub fn items_of(&self, owner: u32) -> u64 {
        let all = self.xfers_per_worker();
        match self.item_counts.get(owner as usize) {
            Some(&c) if !self.item_counts.is_empty() => c.min(all),
            _ => all,
        }
    }

    /// Bytes data file `file` must hold for a phase of this spec that
    /// reads: the end of the last transfer its data may use (every
    /// transfer's without [`WorkloadSpec::item_counts`]; the sequential
    /// prefix's with them; 0, no minimum known, for a shuffled prefix,
    /// whose transfers lie anywhere in the file).
    pub fn bytes_needed(&self, file: u32) -> u64 {
        if self.item_counts.is_empty() {
            return self.file_size();
        }
        if self.ops.iter().any(|o| o.is_random()) && !self.random_repeats {
            return 0;
        }
        let per_block = (self.block / self.xfer).max(1);
        let end = |owner: u32| {
            let n = self.items_of(owner);
            if n == 0 {
                return 0;
            }
            let (seg, t) = ((n - 1) / per_block, (n - 1) % per_block);
            let start = match self.layout {
                Layout::Shared => {
                    seg * self.threads as u64 * self.block + owner as u64 * self.block
                }
                _ => seg * self.block,
            };
            start + (t + 1) * self.xfer
        };
        match self.layout {
            Layout::Shared => (0..self.threads).map(end).max().unwrap_or(0),
            _ => end(file),
        }
    }

    /// Bytes each worker moves in one phase.
    pub fn bytes_per_worker(&self) -> u64 {
        self.block * self.segments
    }

    /// Bytes all workers move in one phase.
    pub fn total_bytes(&self) -> u64 {
        self.bytes_per_worker() * self.threads as u64
    }

    /// Transfers each worker issues in one phase.
    pub fn xfers_per_worker(&self) -> u64 {
        self.bytes_per_worker() / self.xfer
    }

    /// Size of one data file.
    pub fn file_size(&self) -> u64 {
        match self.layout {
            Layout::Shared => self.total_bytes(),
            _ => self.bytes_per_worker(),
        }
    }

    /// Number of data files.
    pub fn file_count(&self) -> u32 {
        match self.layout {
            Layout::Shared => 1,
            _ => self.threads,
        }
    }

    /// One line that says what the run does, for logs and headers.
    pub fn describe(&self) -> String {
        format!(
            "{} x {} worker(s), {} layout, xfer {}, {} per worker ({} block x {} segment(s)), {}{}, sync {}",
            crate::names(&self.ops, Op::name),
            self.threads,
            self.layout,
            format_size(self.xfer),
            format_size(self.bytes_per_worker()),
            format_size(self.block),
            self.segments,
            if self.engine == "sync" && self.iodepth == 1 {
                "sync engine".to_string()
            } else {
                format!("{} depth {}", self.engine, self.iodepth)
            },
            if self.direct { ", O_DIRECT" } else { ", buffered" },
            self.sync.label(),
        )
    }
}

/// Why a workload was refused. Each message names the flag and the fix.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SpecError {
    /// A required value is missing.
    #[error("{flag} is required: {hint}")]
    Missing {
        /// The flag.
        flag: &'static str,
        /// What to give.
        hint: &'static str,
    },
    /// A value is zero where it must be positive.
    #[error("{flag} must be greater than zero")]
    Zero {
        /// The flag.
        flag: &'static str,
    },
    /// A value is out of its range.
    #[error("{flag} {value} is out of range: {hint}")]
    Range {
        /// The flag.
        flag: &'static str,
        /// The value as given.
        value: String,
        /// What is allowed.
        hint: String,
        /// The other flags `hint` names.
        also: Vec<&'static str>,
    },
    /// Two flags contradict each other.
    #[error("{message}")]
    Conflict {
        /// What is wrong and the fix.
        message: String,
        /// The flags `message` names.
        flags: Vec<&'static str>,
    },
    /// Sizes that cannot be laid out.
    #[error("{message}")]
    Sizes {
        /// What is wrong and the fix.
        message: String,
        /// The flags `message` names.
        flags: Vec<&'static str>,
    },
}

impl SpecError {
    /// A value out of range whose hint names no other flag.
    pub fn range(flag: &'static str, value: impl Into<String>, hint: impl Into<String>) -> Self {
        SpecError::Range {
            flag,
            value: value.into(),
            hint: hint.into(),
            also: Vec::new(),
        }
    }

    /// A contradiction, with the flags its message names.
    pub fn conflict(message: impl Into<String>, flags: &[&'static str]) -> Self {
        SpecError::Conflict {
            message: message.into(),
            flags: flags.to_vec(),
        }
    }

    /// Sizes that cannot be laid out, with the flags the message names.
    pub fn sizes(message: impl Into<String>, flags: &[&'static str]) -> Self {
        SpecError::Sizes {
            message: message.into(),
            flags: flags.to_vec(),
        }
    }

    /// The flags the message names (`TARGET` for the missing directory),
    /// as data, so a front-end can say them in its tool's terms without
    /// searching the text.
    pub fn flags(&self) -> Vec<&'static str> {
        match self {
            SpecError::Missing { flag, .. } | SpecError::Zero { flag } => vec![*flag],
            SpecError::Range { flag, also, .. } => {
                std::iter::once(*flag).chain(also.iter().copied()).collect()
            }
            SpecError::Conflict { flags, .. } | SpecError::Sizes { flags, .. } => flags.clone(),
        }
    }
}

const MAX_IODEPTH: u64 = 4_096;

impl RawWorkload {
    /// Checks every value and resolves the sizing rules.
    ///
    /// Sizing: the bytes per worker come from `--size`, or `--total` ÷
    /// threads, or `--block` × `--segments`. If only the size is known, it
    /// is one block (one segment). `--block`/`--segments` then split it as
    /// IOR does; every block must be a whole number of transfers.
    pub fn build(&self) -> Result<WorkloadSpec, SpecError> {
        self.build_across(1)
    }

    /// [`RawWorkload::build`] for a run of `ranks` processes, each with
    /// `threads` workers: sizes (`--total`), offsets, layouts and names
    /// are checked for all `ranks × threads` workers, and the spec keeps
    /// `threads` as given — workers per process, its one meaning.
    pub fn build_across(&self, ranks: u32) -> Result<WorkloadSpec, SpecError> {
        let target = check::target(
            &self.target,
            "name the directory to test, e.g. `ioscale run /mnt/fs`",
        )?;
        check::some_ops(&self.ops, "--op", "e.g. --op write,read")?;
        let ranks = u64::from(ranks.max(1));
        // Every worker of every rank; the limit is on all of them.
        let per_process = self.threads.unwrap_or(1);
        let threads = check::threads(Some(per_process.saturating_mul(ranks)))?;
        let layout = self.layout.unwrap_or(Layout::PerThread);
        let xfer = self.xfer.unwrap_or(1 << 20);
        if xfer == 0 {
            return Err(SpecError::Zero { flag: "--xfer" });
        }
        if xfer > (1 << 31) {
            return Err(SpecError::range(
                "--xfer",
                format_size(xfer),
                "at most 2 GiB per request",
            ));
        }
        let (block, segments) = self.blocks(self.per_worker(threads)?, xfer)?;
        self.check_transfers(xfer, block, segments, threads)?;
        let engine = self.engine.clone().unwrap_or_else(|| "sync".into());
        // Whether the engine queues is the registry's to say (the driver
        // checks it); the command line fills in the engine's own default.
        let iodepth = check::iodepth(self.iodepth, MAX_IODEPTH)?;
        let reps = check::reps(self.reps)?;
        let rwmix = self.rwmix()?;
        let reorder = self.reorder_offset(threads)?;
        check::time_limit(self.time_limit)?;
        let naming = self.naming(threads, layout)?;
        let dd_named = matches!(naming, FileNaming::Dd { .. });
        self.check_start_offsets(threads, layout)?;
        self.check_wearout()?;
        Ok(WorkloadSpec {
            target,
            ops: self.ops.clone(),
            threads: per_process as u32,
            layout,
            xfer,
            block,
            segments,
            direct: self.direct,
            sync: self.sync.unwrap_or(SyncMode::None),
            drop_caches: self.drop_caches,
            reorder_offset: reorder as u32,
            engine,
            iodepth: iodepth as u32,
            uring_opts: self.uring_opts,
            reps: reps as u32,
            time_limit: self.time_limit,
            verify: self.verify,
            keep: self.keep,
            seed: self.seed.unwrap_or(0x10_5ca1e),
            rwmix_read: rwmix as u8,
            naming,
            rep_delay: self.rep_delay,
            // dd's (and fio's) files are the user's: never removed between
            // repetitions, so those reuse them whatever was asked.
            reuse_files: self.reuse || dd_named,
            start_offsets: self.start_offsets.clone(),
            hints: self.hints,
            wearout: self.wearout,
            item_counts: self.item_counts.clone(),
            random_repeats: self.random_repeats,
            shuffle_in_block: self.shuffle_in_block,
            xfer_sizes: self.xfer_sizes()?,
            write_sizes: self.write_sizes()?,
        })
    }

    /// The drawn request sizes: multiples of `--xfer` (their minimum), the
    /// largest at most 2 GiB, percentages summing to 100; one region per
    /// worker (no IOR segments in a shared file), no time-limited prefix.
    fn xfer_sizes(&self) -> Result<Option<XferSizes>, SpecError> {
        let Some(z) = &self.xfer_sizes else {
            return Ok(None);
        };
        self.check_sizes(z)?;
        Ok(Some(z.clone()))
    }

    /// The writes' own sizes, checked as the reads' are; a read size of
    /// `xfer` when the reads have none drawn.
    fn write_sizes(&self) -> Result<Option<XferSizes>, SpecError> {
        let Some(z) = &self.write_sizes else {
            return Ok(None);
        };
        self.check_sizes(z)?;
        if self.verify {
            return Err(SpecError::conflict(
                "write sizes of their own do not go with --verify",
                &["--verify"],
            ));
        }
        Ok(Some(z.clone()))
    }

    /// One direction's sizes: multiples of their minimum, which is a
    /// multiple of `--xfer` (the smallest of all; equal to it without
    /// sizes per direction), at most 2 GiB.
    fn check_sizes(&self, z: &XferSizes) -> Result<(), SpecError> {
        let bad = |hint: &str| Err(SpecError::range("--xfer", format_size(z.min), hint));
        let unit = match (&self.xfer_sizes, &self.write_sizes) {
            (Some(r), Some(w)) => r.min.min(w.min),
            (None, Some(w)) => self.xfer.unwrap_or(0).min(w.min),
            (Some(r), None) => r.min,
            (None, None) => 0,
        };
        let paired = self.write_sizes.is_some();
        if self.xfer != Some(unit)
            || z.min == 0
            || z.max < z.min
            || z.max > (1 << 31)
            || (paired && (unit == 0 || !z.min.is_multiple_of(unit)))
        {
            return bad(
                "drawn sizes run from --xfer (a multiple of it per direction) up to at most 2 GiB",
            );
        }
        if z.split
            .iter()
            .any(|&(b, _)| b == 0 || b % z.min != 0 || b > z.max)
        {
            return bad("each drawn size is a multiple of the smallest");
        }
        if !z.split.is_empty() && z.split.iter().map(|p| u64::from(p.1)).sum::<u64>() != 100 {
            return bad("the percentages of the sizes add up to 100");
        }
        if self.segments.is_some_and(|n| n > 1) || !self.item_counts.is_empty() || self.wearout {
            return bad("drawn sizes walk one region per worker");
        }
        Ok(())
    }

    /// The wear-out needs a time limit to wear out from; random draws
    /// with repeats are for random phases, whose shuffle they replace.
    fn check_wearout(&self) -> Result<(), SpecError> {
        if self.wearout && self.time_limit.is_none() {
            return Err(SpecError::conflict(
                "the stonewall wear-out needs a time limit (--time) to wear out from",
                &["--time"],
            ));
        }
        if self.random_repeats && !self.ops.iter().all(|o| o.is_random()) {
            return Err(SpecError::conflict(
                "random offsets with repeats apply to random phases only (randread, randwrite,                  randrw)",
                &["--op"],
            ));
        }
        Ok(())
    }

    /// The bytes per worker when `--size` or `--total` gives them.
    fn per_worker(&self, threads: u64) -> Result<Option<u64>, SpecError> {
        if self.size.is_some() && self.total.is_some() {
            return Err(SpecError::conflict(
                "--size (per worker) and --total (split across workers) were both given; use one",
                &["--size", "--total"],
            ));
        }
        for (flag, v) in [
            ("--size", self.size),
            ("--total", self.total),
            ("--block", self.block),
            ("--segments", self.segments),
        ] {
            if v == Some(0) {
                return Err(SpecError::Zero { flag });
            }
        }
        Ok(if let Some(s) = self.size {
            Some(s)
        } else if let Some(t) = self.total {
            if t % threads != 0 {
                return Err(SpecError::sizes(
                    format!(
                        "--total {} does not split evenly across {threads} workers; \
                         choose a total divisible by the thread count or use --size",
                        format_size(t)
                    ),
                    &["--total", "--size"],
                ));
            }
            Some(t / threads)
        } else {
            None
        })
    }

    /// The block and the segments per worker, from the bytes per worker
    /// and `--block`/`--segments`, as IOR splits them.
    fn blocks(&self, per_worker: Option<u64>, xfer: u64) -> Result<(u64, u64), SpecError> {
        Ok(match (per_worker, self.block, self.segments) {
            (None, None, None) => (256 << 20, 1),
            (None, Some(b), s) => (b, s.unwrap_or(1)),
            (None, None, Some(s)) => (xfer, s),
            (Some(p), None, None) => (p, 1),
            (Some(p), Some(b), s) => {
                if p % b != 0 {
                    return Err(SpecError::sizes(
                        format!(
                            "the size per worker ({}) is not a multiple of --block {}; \
                             make it a whole number of blocks",
                            format_size(p),
                            format_size(b)
                        ),
                        &["--block"],
                    ));
                }
                let n = p / b;
                if let Some(s) = s {
                    if s != n {
                        return Err(SpecError::conflict(
                            format!(
                                "--segments {s} × --block {} is not the size per worker ({}); \
                                 give two of the three",
                                format_size(b),
                                format_size(p)
                            ),
                            &["--segments", "--block"],
                        ));
                    }
                }
                (b, n)
            }
            (Some(p), None, Some(s)) => {
                if p % s != 0 {
                    return Err(SpecError::sizes(
                        format!(
                            "the size per worker (--size {}) does not split into {s} equal \
                             segments (--segments {s})",
                            format_size(p)
                        ),
                        &["--size", "--segments"],
                    ));
                }
                (p / s, s)
            }
        })
    }

    /// Every block a whole number of transfers, sizes within 64 bits, and
    /// transfers O_DIRECT can issue.
    fn check_transfers(
        &self,
        xfer: u64,
        block: u64,
        segments: u64,
        threads: u64,
    ) -> Result<(), SpecError> {
        if xfer > block {
            return Err(SpecError::sizes(
                format!(
                    "--xfer {} is larger than the block (--block or --size: {}); use a transfer \
                     no larger than the block",
                    format_size(xfer),
                    format_size(block)
                ),
                &["--xfer", "--block", "--size"],
            ));
        }
        if !block.is_multiple_of(xfer) {
            return Err(SpecError::sizes(
                format!(
                    "the block (--block or --size: {}) is not a multiple of --xfer {}; make the \
                     block a whole number of transfers",
                    format_size(block),
                    format_size(xfer)
                ),
                &["--block", "--size", "--xfer"],
            ));
        }
        let per = block.checked_mul(segments).ok_or_else(|| {
            SpecError::sizes(
                "--block × --segments overflows 64 bits; use smaller sizes",
                &["--block", "--segments"],
            )
        })?;
        per.checked_mul(threads).ok_or_else(|| {
            SpecError::sizes("the total size overflows 64 bits; use smaller sizes", &[])
        })?;
        if per / xfer > (1u64 << 48) {
            return Err(SpecError::sizes(
                "more than 2^48 transfers per worker; raise --xfer",
                &["--xfer"],
            ));
        }
        if self.direct && !xfer.is_multiple_of(512) {
            return Err(SpecError::sizes(
                format!(
                    "--direct needs --xfer to be a multiple of 512 bytes (usually 4 KiB); {} is \
                     not",
                    format_size(xfer)
                ),
                &["--direct", "--xfer"],
            ));
        }
        Ok(())
    }

    /// `--rwmix`: a percentage of reads, for rw and randrw only.
    fn rwmix(&self) -> Result<u64, SpecError> {
        let rwmix = self.rwmix_read.unwrap_or(50);
        if rwmix > 100 {
            return Err(SpecError::range(
                "--rwmix",
                rwmix.to_string(),
                "a percentage of reads, 0 to 100",
            ));
        }
        if self.rwmix_read.is_some() && !self.ops.iter().any(|o| matches!(o, Op::Rw | Op::Randrw)) {
            return Err(SpecError::conflict(
                "--rwmix only applies to --op rw or randrw",
                &["--rwmix", "--op"],
            ));
        }
        Ok(rwmix)
    }

    /// `--reorder-offset`: another worker's data, never a worker's own.
    fn reorder_offset(&self, threads: u64) -> Result<u64, SpecError> {
        let reorder = self.reorder.unwrap_or(0);
        if reorder > 0 && threads < 2 {
            return Err(SpecError::conflict(
                "--reorder needs at least 2 workers (with one, a worker can only read its own data)",
                &["--reorder"],
            ));
        }
        if reorder > 0 && reorder.is_multiple_of(threads) {
            return Err(SpecError::Range {
                flag: "--reorder-offset",
                value: reorder.to_string(),
                hint: format!(
                    "a multiple of --threads ({threads}) makes every worker read its own data; use 1 to {}",
                    threads - 1
                ),
                also: vec!["--threads"],
            });
        }
        Ok(reorder % threads)
    }

    /// The file naming, checked against the workers and the layout.
    fn naming(&self, threads: u64, layout: Layout) -> Result<FileNaming, SpecError> {
        let naming = self.naming.clone().unwrap_or_default();
        match &naming {
            FileNaming::Native => {}
            FileNaming::Ior { path } => {
                if path.file_name().is_none() {
                    return Err(SpecError::conflict(
                        format!("-o {}: name a file, not a directory", path.display()),
                        &[],
                    ));
                }
            }
            FileNaming::Dd { paths, .. } => {
                if paths.len() as u64 != threads || layout == Layout::Shared {
                    return Err(SpecError::conflict(
                        format!(
                            "dd naming needs one file per worker ({} paths for {threads} workers)",
                            paths.len()
                        ),
                        &[],
                    ));
                }
            }
        }
        Ok(naming)
    }

    /// Start offsets: one per worker's own file, aligned for O_DIRECT.
    fn check_start_offsets(&self, threads: u64, layout: Layout) -> Result<(), SpecError> {
        if self.start_offsets.is_empty() {
            return Ok(());
        }
        if self.start_offsets.len() as u64 != threads || layout == Layout::Shared {
            return Err(SpecError::conflict(
                format!(
                    "start offsets need one file per worker and one offset each ({} for \
                     {threads} workers)",
                    self.start_offsets.len()
                ),
                &[],
            ));
        }
        if self.direct {
            if let Some(o) = self.start_offsets.iter().find(|&&o| o % 512 != 0) {
                return Err(SpecError::conflict(
                    format!(
                        "a start offset of {o} bytes with direct I/O: O_DIRECT needs offsets \
                         that are multiples of the device's block size"
                    ),
                    &[],
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw() -> RawWorkload {
        RawWorkload {
            target: Some("/tmp".into()),
            ops: vec![Op::Write],
            ..Default::default()
        }
    }

    #[test]
    fn start_offsets_are_one_per_worker_with_a_file_each() {
        let mut r = raw();
        r.threads = Some(2);
        r.size = Some(1 << 20);
        r.start_offsets = vec![0, 4096];
        assert_eq!(r.build().unwrap().start_offsets, vec![0, 4096]);
        r.start_offsets = vec![4096];
        assert!(r.build().is_err(), "one offset for two workers");
        r.start_offsets = vec![0, 4096];
        r.layout = Some(Layout::Shared);
        assert!(r.build().is_err(), "a shared file has IOR's offsets");
        r.layout = None;
        r.direct = true;
        r.start_offsets = vec![0, 100];
        assert!(r.build().is_err(), "O_DIRECT needs aligned offsets");
    }

    #[test]
    fn total_splits_across_threads() {
        let mut r = raw();
        r.total = Some(2 << 30);
        r.threads = Some(8);
        r.block = Some(1 << 20);
        r.xfer = Some(1 << 20);
        let s = r.build().unwrap();
        assert_eq!(s.segments, 256);
        assert_eq!(s.total_bytes(), 2 << 30);
    }

    #[test]
    fn seed_000_shape() {
        // ior -t 1m -b 1m -s 2048 with one task: 2 GiB
        let mut r = raw();
        r.xfer = Some(1 << 20);
        r.block = Some(1 << 20);
        r.segments = Some(2048);
        r.layout = Some(Layout::Shared);
        let s = r.build().unwrap();
        assert_eq!(s.file_size(), 2 << 30);
        assert_eq!(s.xfers_per_worker(), 2048);
    }

    #[test]
    fn impossible_sizes_name_the_flag() {
        let mut r = raw();
        r.size = Some(1 << 20);
        r.xfer = Some(4 << 20);
        let e = r.build().unwrap_err().to_string();
        assert!(e.contains("--xfer"), "{e}");

        let mut r = raw();
        r.block = Some(3 << 20);
        r.xfer = Some(2 << 20);
        assert!(r
            .build()
            .unwrap_err()
            .to_string()
            .contains("multiple of --xfer"));

        let mut r = raw();
        r.size = Some(0);
        assert_eq!(r.build().unwrap_err(), SpecError::Zero { flag: "--size" });

        let mut r = raw();
        r.block = Some(u64::MAX / 2);
        r.segments = Some(4);
        r.xfer = Some(1 << 20);
        assert!(r.build().is_err());

        let mut r = raw();
        r.direct = true;
        r.xfer = Some(1000);
        r.size = Some(1000 * 16);
        assert!(r.build().unwrap_err().to_string().contains("--direct"));
    }

    #[test]
    fn sync_mode_parse() {
        assert_eq!(SyncMode::parse("every:16"), Some(SyncMode::Every(16)));
        assert_eq!(SyncMode::parse("every:0"), None);
        assert_eq!(SyncMode::parse("each"), Some(SyncMode::Each));
        assert_eq!(SyncMode::parse("bogus"), None);
    }

    #[test]
    fn engine_by_name_and_old_records_load() {
        let mut r = raw();
        r.engine = Some("io_uring".into());
        r.iodepth = Some(8);
        let s = r.build().unwrap();
        assert_eq!((s.engine.as_str(), s.iodepth), ("io_uring", 8));
        // A record written before the engine became a name, and before
        // --uring-opts: the same JSON string, no options field.
        let mut v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["engine"], "io_uring");
        assert!(v.get("uring_opts").is_none());
        v["engine"] = "sync".into();
        let back: WorkloadSpec = serde_json::from_value(v).unwrap();
        assert_eq!(back.engine, "sync");
        assert_eq!(back.uring_opts, None);
    }

    #[test]
    fn uring_opts_parse_and_label() {
        let o = UringOpts::parse("fixedbufs,files,batch,sqpoll=5").unwrap();
        assert!(o.fixed_buffers && o.register_files && o.batch_submit);
        assert_eq!(o.sqpoll_idle_ms, Some(5));
        assert_eq!(UringOpts::parse(&o.label()).unwrap(), o);
        assert_eq!(UringOpts::parse("tuned").unwrap(), UringOpts::tuned());
        assert_eq!(UringOpts::parse("plain").unwrap().label(), "plain");
        let o = UringOpts::parse("spin,tuned").unwrap();
        assert!(o.spin && o.single_issuer);
        assert_eq!(UringOpts::parse(&o.label()).unwrap(), o);
        assert!(!UringOpts::parse("tuned").unwrap().spin);
        assert!(UringOpts::parse("sqpoll=0")
            .unwrap_err()
            .contains("sqpoll=0"));
        assert!(UringOpts::parse("fixed").unwrap_err().contains("'fixed'"));
    }

    /// A run of several ranks is checked for all its workers but keeps
    /// `threads` per process: `--total` splits across ranks × threads,
    /// the worker limit counts them all, and dd's names are one per
    /// worker of every rank.
    #[test]
    fn build_across_ranks_checks_all_workers_and_keeps_threads_per_process() {
        let mut r = raw();
        r.total = Some(8 << 20);
        r.threads = Some(2);
        let s = r.build_across(4).unwrap();
        assert_eq!((s.threads, s.bytes_per_worker()), (2, 1 << 20));
        r.threads = None;
        let s = r.build_across(4).unwrap();
        assert_eq!((s.threads, s.bytes_per_worker()), (1, 2 << 20));
        r.total = Some((8 << 20) + 4);
        r.threads = Some(2);
        let e = r.build_across(4).unwrap_err().to_string();
        assert!(e.contains("across 8 workers"), "{e}");
        r.total = None;
        r.threads = Some(check::MAX_THREADS);
        assert!(r.build().is_ok());
        assert!(r.build_across(2).is_err(), "the limit counts every rank's");
        let mut d = raw();
        d.threads = Some(1);
        d.size = Some(1 << 20);
        d.naming = Some(FileNaming::Dd {
            paths: vec!["/tmp/f-1".into(), "/tmp/f-2".into()],
            notrunc: false,
            nofollow: false,
        });
        assert!(d.build().is_err(), "two names for one worker");
        assert_eq!(d.build_across(2).unwrap().threads, 1);
    }
}
