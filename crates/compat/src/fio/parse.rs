//! fio's syntax: the command line (`--name=x --rw=read …`, several jobs in
//! one line) and job files (`[global]`, job sections, `include`,
//! `${ENV}`), read into sections of raw `key=value` pairs, then into typed
//! [`Job`]s with fio's defaults and fio's size and time units.
//!
//! Every option is looked up in [`OPTIONS`]; one that is not there is an
//! error naming it (and, from [`refusal`], the nearest native ioscale
//! option where there is one) — never silently ignored.

use std::path::{Path, PathBuf};
use std::time::Duration;

use spec::Op;

/// Which of ioscale's engines a fio `ioengine=` runs on; the workload
/// names it by its registry name ([`EngineKind::name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// psync: pread/pwrite (the registry's `sync`).
    Sync,
    /// sync: lseek (unless the position is right), then read/write.
    Lseek,
    /// pvsync: preadv/pwritev with one iovec.
    Pvsync,
    /// pvsync2: preadv2/pwritev2 with one iovec, flags 0.
    Pvsync2,
    /// io_uring.
    IoUring,
    /// libaio: Linux native AIO.
    Libaio,
}

impl EngineKind {
    /// Whether it is one of fio's synchronous engines (one request at a
    /// time, no submission latency).
    pub fn is_sync(self) -> bool {
        matches!(
            self,
            EngineKind::Sync | EngineKind::Lseek | EngineKind::Pvsync | EngineKind::Pvsync2
        )
    }

    /// The engine registry's name.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Sync => "sync",
            EngineKind::Lseek => "lseek",
            EngineKind::Pvsync => "pvsync",
            EngineKind::Pvsync2 => "pvsync2",
            EngineKind::IoUring => "io_uring",
            EngineKind::Libaio => "libaio",
        }
    }
}

use crate::args::usage;
use crate::Usage;
use bench::steady::Kind as Kind_;

/// One raw option as written, with where it came from (for messages).
#[derive(Debug, Clone)]
pub struct Opt {
    /// The option's name, after aliases (`readwrite` → `rw`).
    pub key: String,
    /// The value; `None` for a bare flag (`group_reporting`).
    pub val: Option<String>,
    /// `command line` or `FILE:LINE`.
    pub origin: String,
    /// The name fio lists in its "job options": the option's own name,
    /// not the alias used (`readwrite` is listed as `rw`).
    pub written: String,
}

/// A `[section]` of a job file, or one `--name=` job of the command line.
#[derive(Debug, Clone)]
pub struct Section {
    /// The section name; `global` for the defaults.
    pub name: String,
    /// Options in the order given.
    pub opts: Vec<Opt>,
}

/// How fio's results are printed (`--output-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// fio's human layout.
    Normal,
    /// `--output-format=json`.
    Json,
    /// `--output-format=json+` (json with latency bins).
    JsonPlus,
    /// `--output-format=terse`: fio's terse version 3, `;`-separated.
    Terse,
}

/// The whole command line.
#[derive(Debug, Default)]
pub struct Cli {
    /// Job files, in order.
    pub files: Vec<PathBuf>,
    /// Options given before the first `--name` (apply to every job).
    pub global: Vec<Opt>,
    /// Jobs given with `--name=` on the command line.
    pub jobs: Vec<Section>,
    /// `--output=FILE`.
    pub output: Option<PathBuf>,
    /// `--output-format=`; normal when empty.
    pub formats: Vec<Format>,
    /// `--ioscale-json=FILE`: ioscale's own record.
    pub ioscale_json: Option<PathBuf>,
    /// `--help`.
    pub help: bool,
    /// `--version`.
    pub version: bool,
    /// `--print-spec`: print each run's ioscale workload and exit.
    pub print_spec: bool,
    /// `--progress MODE` (ioscale's; fio has no option of that name).
    pub progress: Option<crate::progress::ProgressMode>,
}

/// What kind of value an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// 0/1, or bare (= 1).
    Bool,
    /// Anything else: a value is required.
    Value,
}

/// The options ioscale's fio front-end knows, with their aliases.
const OPTIONS: &[(&str, Kind)] = &[
    ("name", Kind::Value),
    ("filename", Kind::Value),
    ("directory", Kind::Value),
    ("nrfiles", Kind::Value),
    ("filesize", Kind::Value),
    ("size", Kind::Value),
    ("rw", Kind::Value),
    ("bs", Kind::Value),
    ("bsrange", Kind::Value),
    ("bssplit", Kind::Value),
    ("blockalign", Kind::Value),
    ("bs_unaligned", Kind::Bool),
    ("rwmixread", Kind::Value),
    ("rwmixwrite", Kind::Value),
    ("numjobs", Kind::Value),
    ("thread", Kind::Bool),
    ("iodepth", Kind::Value),
    ("ioengine", Kind::Value),
    ("hipri", Kind::Bool),
    ("uncached", Kind::Bool),
    ("nowait", Kind::Bool),
    ("direct", Kind::Bool),
    ("buffered", Kind::Bool),
    ("sync", Kind::Value),
    ("dsync", Kind::Bool),
    ("fsync", Kind::Value),
    ("fdatasync", Kind::Value),
    ("end_fsync", Kind::Bool),
    ("fsync_on_close", Kind::Bool),
    ("runtime", Kind::Value),
    ("time_based", Kind::Bool),
    ("ramp_time", Kind::Value),
    ("steadystate", Kind::Value),
    ("steadystate_duration", Kind::Value),
    ("steadystate_ramp_time", Kind::Value),
    ("startdelay", Kind::Value),
    ("loops", Kind::Value),
    ("offset", Kind::Value),
    ("offset_increment", Kind::Value),
    ("randrepeat", Kind::Bool),
    ("randseed", Kind::Value),
    ("norandommap", Kind::Bool),
    ("verify", Kind::Value),
    ("create_on_open", Kind::Bool),
    ("invalidate", Kind::Bool),
    ("fadvise_hint", Kind::Value),
    ("allow_file_create", Kind::Bool),
    ("do_verify", Kind::Bool),
    ("verify_fatal", Kind::Bool),
    ("unlink", Kind::Bool),
    ("group_reporting", Kind::Bool),
    ("lat_percentiles", Kind::Bool),
    ("clat_percentiles", Kind::Bool),
    ("percentile_list", Kind::Value),
    ("write_bw_log", Kind::Value),
    ("write_lat_log", Kind::Value),
    ("write_iops_log", Kind::Value),
    ("log_avg_msec", Kind::Value),
    ("stonewall", Kind::Bool),
    ("wait_for_previous", Kind::Bool),
    ("new_group", Kind::Bool),
    ("kb_base", Kind::Value),
];

/// fio's other spellings of the same option.
fn canonical(key: &str) -> &str {
    match key {
        "readwrite" => "rw",
        "blocksize" => "bs",
        "blocksize_range" => "bsrange",
        "ba" => "blockalign",
        "wait_for_previous" => "stonewall",
        "ss" => "steadystate",
        "ss_dur" => "steadystate_duration",
        "ss_ramp" => "steadystate_ramp_time",
        "rwmixcycle" => "rwmixcycle",
        "io_size" => "io_size",
        other => other,
    }
}

/// Why an option fio has is refused, naming the nearest native option.
pub fn refusal(key: &str) -> Option<&'static str> {
    Some(match key {
        "io_size" | "io_limit" => {
            "ioscale moves each file's size once per loop: use size= and loops= (native: --size, --reps)"
        }
        "pre_read" => {
            "ioscale does not warm the cache per job (native: `ioscale run --drop-caches` drops it)"
        }
        "rate" | "rate_iops" | "rate_min" | "rate_iops_min" | "rate_process" | "thinktime" => {
            "ioscale runs as fast as the storage allows; it has no rate limits"
        }
        "iodepth_batch" | "iodepth_batch_submit" | "iodepth_batch_complete"
        | "iodepth_batch_complete_min" | "iodepth_low" => {
            "ioscale's io_uring engine keeps iodepth= requests in flight (native: --iodepth)"
        }
        "cpus_allowed" | "cpumask" | "numa_cpu_nodes" | "numa_mem_policy" => {
            "ioscale does not pin workers to CPUs"
        }
        "fallocate" | "file_service_type" | "openfiles" | "opendir" => {
            "ioscale lays out one file per job clone (native: --layout per-thread)"
        }
        "zero_buffers" | "refill_buffers" | "scramble_buffers" | "buffer_compress_percentage"
        | "buffer_pattern" | "dedupe_percentage" => {
            "ioscale writes its own data pattern (checkable with verify=)"
        }
        "exitall" | "exitall_on_error" | "continue_on_error" | "ignore_error" => {
            "ioscale stops a run at the first I/O error and reports it (exit 1)"
        }
        "write_hist_log" | "log_hist_msec" | "per_job_logs" | "log_offset" => {
            "ioscale keeps no per-interval logs"
        }
        "size_percent" | "file_append" | "allrandrepeat" | "random_distribution"
        | "random_generator" | "percentage_random" => {
            "ioscale's random phases touch every block once, in a seeded order (native: --op randread|randwrite, --seed)"
        }
        "rwmixcycle" | "rw_sequencer" => "ioscale mixes reads and writes by rwmixread= only (native: --rwmix)",
        "filename_format" | "unique_filename" => {
            "ioscale names files as fio does by default (jobname.N.M in directory=) or exactly filename="
        }
        "verify_interval" | "verify_offset" | "verify_pattern" | "verify_dump" | "verify_backlog"
        | "verify_async" | "verify_only" => {
            "ioscale writes fio's verify blocks of bs= bytes and reads them all back after the write \
             (verify=crc32c|md5|sha1|xxhash; native: --verify)"
        }
        "cgroup" | "nice" | "prio" | "prioclass" | "uid" | "gid" => {
            "ioscale runs its workers in its own process"
        }
        _ => return None,
    })
}

fn lookup(key: &str) -> Option<Kind> {
    OPTIONS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, kind)| *kind)
}

/// Refuses an option ioscale does not know, naming it.
fn check_known(key: &str, origin: &str) -> Result<Kind, Usage> {
    if let Some(k) = lookup(key) {
        return Ok(k);
    }
    let at = if origin == "command line" {
        format!("--{key}")
    } else {
        format!("{key} ({origin})")
    };
    Err(usage(match refusal(key) {
        Some(hint) => format!("{at}: not supported: {hint}"),
        None => format!(
            "{at}: not a fio option ioscale supports; see `ioscale fio --help` and docs/compat.md"
        ),
    }))
}

/// `${VAR}` replaced by the environment variable, as fio does; a variable
/// that is not set is left as written (so the value then fails to parse,
/// as in fio).
pub fn expand_env(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find('}') {
            Some(j) => {
                let var = &after[..j];
                match std::env::var(var) {
                    Ok(v) if !var.is_empty() => out.push_str(&v),
                    _ => out.push_str(&rest[i..i + 3 + j]),
                }
                rest = &after[j + 1..];
            }
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Reads fio's command line.
pub fn parse_cli(args: &[String]) -> Result<Cli, Usage> {
    let mut cli = Cli::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let Some(body) = arg.strip_prefix("--") else {
            if arg.starts_with('-') && arg.len() > 1 {
                return Err(usage(format!(
                    "{arg}: fio's options are long options (--name=…); see `ioscale fio --help`"
                )));
            }
            cli.files.push(PathBuf::from(arg));
            continue;
        };
        let (key, inline) = match body.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (body, None),
        };
        let mut take = |what: &str| -> Result<String, Usage> {
            if let Some(v) = &inline {
                return Ok(v.clone());
            }
            let v = args
                .get(i)
                .ok_or_else(|| usage(format!("--{key} needs {what}")))?;
            i += 1;
            Ok(v.clone())
        };
        match key {
            "help" => cli.help = true,
            "version" => cli.version = true,
            "print-spec" => cli.print_spec = true,
            "progress" => {
                let v = take("auto, bar, plain or none")?;
                cli.progress = Some(crate::args::progress_value(&v)?);
            }
            "output" => cli.output = Some(PathBuf::from(take("a file name")?)),
            "ioscale-json" => cli.ioscale_json = Some(PathBuf::from(take("a file name")?)),
            "output-format" => {
                for f in take("a format")?.split(',') {
                    cli.formats.push(match f {
                        "normal" => Format::Normal,
                        "json" => Format::Json,
                        "json+" => Format::JsonPlus,
                        "terse" => Format::Terse,
                        other => {
                            return Err(usage(format!(
                                "--output-format={other}: use normal, json, json+ or terse"
                            )))
                        }
                    });
                }
            }
            _ => {
                let key = canonical(key);
                let written = key.to_string();
                let kind = check_known(key, "command line")?;
                let val = match (kind, &inline) {
                    (_, Some(v)) => Some(v.clone()),
                    (Kind::Bool, None) => None,
                    (Kind::Value, None) => Some(take("a value")?),
                };
                let opt = Opt {
                    key: key.to_string(),
                    val: val.map(|v| expand_env(&v)),
                    origin: "command line".into(),
                    written,
                };
                if key == "name" {
                    // fio lists a command-line job's name among its options.
                    let name = opt.val.clone().unwrap_or_default();
                    cli.jobs.push(Section {
                        name,
                        opts: vec![opt],
                    });
                } else if let Some(job) = cli.jobs.last_mut() {
                    job.opts.push(opt);
                } else {
                    cli.global.push(opt);
                }
            }
        }
    }
    Ok(cli)
}

/// The largest job file (or included file) read: 16 MiB, far above any
/// hand-written or generated job file.
const MAX_JOB_FILE_BYTES: u64 = 16 << 20;

/// Reads a job file (and the files it includes) into sections.
pub fn parse_file(path: &Path, depth: u32) -> Result<Vec<Section>, Usage> {
    if depth > 8 {
        return Err(usage(format!(
            "{}: include nested more than 8 deep (a loop?)",
            path.display()
        )));
    }
    // A regular file of bounded size only: `/dev/zero` is not read until
    // memory runs out, a FIFO without a writer is not waited on.
    let bytes = safefs::read_bounded("job file", path, MAX_JOB_FILE_BYTES).map_err(|e| {
        usage(match &e.kind {
            safefs::FlagErrorKind::Io(io) => format!("job file {}: {io}", path.display()),
            safefs::FlagErrorKind::Refused(_) => e.to_string(),
        })
    })?;
    let text = String::from_utf8(bytes).map_err(|_| {
        usage(format!(
            "job file {}: stream did not contain valid UTF-8",
            path.display()
        ))
    })?;
    let mut sections: Vec<Section> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let origin = format!("{}:{}", path.display(), n + 1);
        let line = raw.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix("include ") {
            let inc = PathBuf::from(expand_env(rest.trim()));
            let inc = if inc.is_relative() {
                path.parent().unwrap_or(Path::new(".")).join(inc)
            } else {
                inc
            };
            let got = parse_file(&inc, depth + 1)?;
            // Options before the first section of an included file belong
            // to the section that includes it.
            for s in got {
                if s.name.is_empty() {
                    match sections.last_mut() {
                        Some(cur) => cur.opts.extend(s.opts),
                        None => sections.push(s),
                    }
                } else {
                    sections.push(s);
                }
            }
            continue;
        }
        if let Some(name) = line.strip_prefix('[') {
            let name = name.strip_suffix(']').ok_or_else(|| {
                usage(format!(
                    "{origin}: a section header must end with ']': {line}"
                ))
            })?;
            sections.push(Section {
                name: name.trim().to_string(),
                opts: Vec::new(),
            });
            continue;
        }
        let (key, val) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(expand_env(v.trim()))),
            None => (line, None),
        };
        let key = canonical(key);
        let written = key.to_string();
        let kind = check_known(key, &origin)?;
        if kind == Kind::Value && val.is_none() {
            return Err(usage(format!("{key} ({origin}) needs a value: {key}=…")));
        }
        let opt = Opt {
            key: key.to_string(),
            val,
            origin: origin.clone(),
            written,
        };
        match sections.last_mut() {
            Some(s) => s.opts.push(opt),
            None if depth > 0 => sections.push(Section {
                name: String::new(),
                opts: vec![opt],
            }),
            None => {
                return Err(usage(format!(
                    "{origin}: option {key} before any [section]; put it under [global] or a job"
                )))
            }
        }
    }
    Ok(sections)
}

/// fio's integer with a size suffix. With `kb_base=1024` (fio's default)
/// `k`/`kb`/`K` are powers of 2 and the IEC spellings `KiB`/`MiB` powers
/// of 10 (fio keeps that inversion for old job files); `kb_base=1000`
/// turns both around to the standard meanings.
pub fn fio_size(key: &str, v: &str, kb_base: u64) -> Result<u64, Usage> {
    let err = || {
        usage(format!(
            "{key}={v}: not a size (fio's form: 4k, 1m, 2g, 512, 10MiB)"
        ))
    };
    let t = v.trim();
    let digits = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(digits);
    if num.is_empty() {
        return Err(err());
    }
    let s = suffix.to_ascii_lowercase();
    let (letter, rest) = match s.chars().next() {
        Some(c) => (Some(c), &s[1..]),
        None => (None, ""),
    };
    let power = match letter {
        None => 0,
        Some('b') if rest.is_empty() => 0,
        Some('k') => 1,
        Some('m') => 2,
        Some('g') => 3,
        Some('t') => 4,
        Some('p') => 5,
        _ => return Err(err()),
    };
    let iec = match rest {
        "" | "b" => false,
        "ib" | "i" => true,
        _ => return Err(err()),
    };
    let binary = (kb_base == 1024) != iec;
    let base: u64 = if binary { 1024 } else { 1000 };
    let mult = base.checked_pow(power).ok_or_else(err)?;
    if num.contains('.') {
        let f: f64 = num.parse().map_err(|_| err())?;
        let b = f * mult as f64;
        if !(b.is_finite() && b >= 0.0 && b < u64::MAX as f64) {
            return Err(err());
        }
        return Ok(b as u64);
    }
    let n: u64 = num.parse().map_err(|_| err())?;
    n.checked_mul(mult).ok_or_else(err)
}

/// fio's time: seconds unless a unit says otherwise (`us`, `ms`, `s`,
/// `m`, `h`, `d`).
pub fn fio_time(key: &str, v: &str) -> Result<Duration, Usage> {
    let err = || {
        usage(format!(
            "{key}={v}: not a time (fio's form: 30, 30s, 500ms, 2m, 1h)"
        ))
    };
    let t = v.trim().to_ascii_lowercase();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num.parse().map_err(|_| err())?;
    let d = match unit {
        "" | "s" | "sec" => Duration::from_secs(n),
        "us" | "usec" => Duration::from_micros(n),
        "ms" | "msec" => Duration::from_millis(n),
        "m" | "min" => Duration::from_secs(n.checked_mul(60).ok_or_else(err)?),
        "h" => Duration::from_secs(n.checked_mul(3600).ok_or_else(err)?),
        "d" => Duration::from_secs(n.checked_mul(86400).ok_or_else(err)?),
        _ => return Err(err()),
    };
    Ok(d)
}

fn fio_bool(key: &str, v: Option<&str>) -> Result<bool, Usage> {
    match v.map(str::trim) {
        None | Some("1") | Some("true") | Some("yes") | Some("on") => Ok(true),
        Some("0") | Some("false") | Some("no") | Some("off") => Ok(false),
        Some(o) => Err(usage(format!("{key}={o}: use 1 or 0"))),
    }
}

fn fio_int(key: &str, v: &str) -> Result<u64, Usage> {
    v.trim()
        .parse()
        .map_err(|_| usage(format!("{key}={v}: not a whole number")))
}

/// One fio job, typed, with fio's defaults.
#[derive(Debug, Clone)]
pub struct Job {
    /// The section name (fio's jobname).
    pub name: String,
    /// fio's group id (a new group after `stonewall` or `new_group`).
    pub group: usize,
    /// Waits for the jobs before it (`stonewall`/`wait_for_previous`).
    pub stonewall: bool,
    /// The access pattern.
    pub op: Op,
    /// The `rw=` value as written (for the header line).
    pub rw_text: String,
    /// Block size: the smallest request of the directions the job does
    /// (the unit of its offsets and of its size).
    pub bs: u64,
    /// Sizes per request when they are not all `bs`: drawn (`bsrange=`
    /// with two sizes, `bssplit=`), or a mixed job's reads when its writes
    /// differ (`bs=R,W`).
    pub bs_sizes: Option<spec::XferSizes>,
    /// A mixed job's write sizes when they differ from its reads'
    /// (`bs=R,W`, `bsrange=`/`bssplit=` with a list per direction).
    pub bs_write: Option<spec::XferSizes>,
    /// The sizes as given, per direction (read, write, trim): `bs`,
    /// `bs_sizes` and `bs_write` are drawn from them once the job is read.
    pub bs_dirs: [spec::XferSizes; 3],
    /// `blockalign=` per direction, when given.
    pub blockalign: Option<[u64; 3]>,
    /// `bs_unaligned=1`.
    pub bs_unaligned: bool,
    /// Bytes of I/O per clone (`size=`).
    pub size: Option<u64>,
    /// File size (`filesize=`).
    pub filesize: Option<u64>,
    /// Files per clone.
    pub nrfiles: u64,
    /// `filename=`.
    pub filename: Option<String>,
    /// `directory=`.
    pub directory: Option<String>,
    /// Percentage of reads in a mix.
    pub rwmixread: Option<u64>,
    /// Clones of the job.
    pub numjobs: u64,
    /// The engine.
    pub engine: EngineKind,
    /// fio's ioengine name as written.
    pub ioengine: String,
    /// Requests in flight (as written).
    pub iodepth: u64,
    /// O_DIRECT.
    pub direct: bool,
    /// O_SYNC (`sync=1`/`sync=sync`).
    pub osync: bool,
    /// O_DSYNC (`sync=dsync`, `dsync=1`).
    pub odsync: bool,
    /// An fsync every N writes.
    pub fsync: u64,
    /// An fdatasync every N writes.
    pub fdatasync: u64,
    /// One fsync at the end of the job.
    pub end_fsync: bool,
    /// fsync when a file is closed.
    pub fsync_on_close: bool,
    /// `runtime=`.
    pub runtime: Option<Duration>,
    /// `time_based`.
    pub time_based: bool,
    /// `ramp_time=`.
    pub ramp_time: Duration,
    /// `steadystate=` (`ss=`): criterion, limit, and whether the limit
    /// is a percentage (a bandwidth limit in bytes/s, as fio's).
    pub ss: Option<(Kind_, f64, bool)>,
    /// `steadystate_duration=` (`ss_dur=`).
    pub ss_dur: Option<Duration>,
    /// `steadystate_ramp_time=` (`ss_ramp=`).
    pub ss_ramp: Duration,
    /// The executor's steady rule the three make (the job ends once
    /// steady; its figures stay the whole job's, as fio's).
    pub steady: Option<bench::steady::Steady>,
    /// `startdelay=`.
    pub startdelay: Duration,
    /// `loops=`.
    pub loops: u64,
    /// `offset=`.
    pub offset: u64,
    /// `offset_increment=`.
    pub offset_increment: u64,
    /// `randseed=` (fio's default seed when `randrepeat=1`).
    pub seed: Option<u64>,
    /// `verify=` was a checksum or pattern.
    pub verify: Option<String>,
    /// `unlink=1`.
    pub unlink: bool,
    /// `group_reporting`.
    pub group_reporting: bool,
    /// `lat_percentiles=1`: the table is of total latency.
    pub lat_percentiles: bool,
    /// `percentile_list=`.
    pub percentiles: Option<Vec<f64>>,
    /// `write_bw_log=`: the log's name prefix.
    pub bw_log: Option<String>,
    /// `write_lat_log=`.
    pub lat_log: Option<String>,
    /// `write_iops_log=`.
    pub iops_log: Option<String>,
    /// `log_avg_msec=` (0: a log line per I/O, as fio).
    pub log_avg_msec: u64,
    /// `create_on_open=1`.
    pub create_on_open: bool,
    /// `invalidate=1` (fio's default): drop the file's cached pages when
    /// the job opens it.
    pub invalidate: bool,
    /// `fadvise_hint=1` (fio's default): hint the access pattern when the
    /// job opens its file.
    pub fadvise_hint: bool,
    /// `verify_fatal=1`: stop at the first block that fails its check.
    pub verify_fatal: bool,
    /// The job's own options as written (fio's "job options").
    pub own: Vec<(String, String)>,
}

/// Options as written: (name, value).
pub type Written = Vec<(String, String)>;

/// Turns the sections into jobs: each job starts from the `[global]`
/// options seen before it (and the command line's), then its own.
pub fn jobs(cli: &Cli) -> Result<(Vec<Job>, Written), Usage> {
    let mut sections = Vec::new();
    for f in &cli.files {
        sections.extend(parse_file(f, 0)?);
    }
    sections.extend(cli.jobs.iter().cloned());
    let mut global: Vec<Opt> = cli.global.clone();
    let mut global_shown: Written = cli
        .global
        .iter()
        .filter_map(|o| Some((o.written.clone(), o.val.clone()?)))
        .collect();
    let mut out: Vec<Job> = Vec::new();
    let mut group = 0usize;
    for s in sections {
        if s.name == "global" {
            // fio lists options with a value; bare flags are left out.
            for o in &s.opts {
                if let Some(v) = &o.val {
                    global_shown.push((o.written.clone(), v.clone()));
                }
            }
            global.extend(s.opts);
            continue;
        }
        if s.name.is_empty() {
            return Err(usage("a job needs a name ([name] or --name=)"));
        }
        let mut all = global.clone();
        all.extend(s.opts.iter().cloned());
        let mut j = typed(&s.name, &all)?;
        j.own = s
            .opts
            .iter()
            .filter_map(|o| Some((o.written.clone(), o.val.clone()?)))
            .collect();
        let new_group = all
            .iter()
            .filter(|o| o.key == "new_group")
            .try_fold(false, |_, o| fio_bool("new_group", o.val.as_deref()))?;
        if !out.is_empty() && (j.stonewall || new_group) {
            group += 1;
        }
        j.group = group;
        out.push(j);
    }
    if out.is_empty() {
        return Err(usage(
            "no jobs: give a job file (`ioscale fio jobs.fio`) or --name=NAME with options",
        ));
    }
    Ok((out, global_shown))
}

/// `kb_base=`: 1024 (fio's default) or 1000.
fn kb_base(opts: &[Opt]) -> Result<u64, Usage> {
    Ok(match opts.iter().rev().find(|o| o.key == "kb_base") {
        Some(o) => match o.val.as_deref() {
            Some("1024") => 1024,
            Some("1000") => 1000,
            v => {
                return Err(usage(format!(
                    "kb_base={}: use 1024 (fio's default) or 1000",
                    v.unwrap_or("")
                )))
            }
        },
        None => 1024,
    })
}

impl Job {
    /// A job with fio's defaults.
    fn new(name: &str) -> Job {
        Job {
            name: name.to_string(),
            group: 0,
            stonewall: false,
            op: Op::Read,
            rw_text: "read".into(),
            bs: 4096,
            bs_sizes: None,
            bs_write: None,
            bs_dirs: std::array::from_fn(|_| fixed_bs(4096)),
            blockalign: None,
            bs_unaligned: false,
            size: None,
            filesize: None,
            nrfiles: 1,
            filename: None,
            directory: None,
            rwmixread: None,
            numjobs: 1,
            engine: EngineKind::Sync,
            ioengine: "psync".into(),
            iodepth: 1,
            direct: false,
            osync: false,
            odsync: false,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            fsync_on_close: false,
            runtime: None,
            time_based: false,
            ramp_time: Duration::ZERO,
            ss: None,
            ss_dur: None,
            ss_ramp: Duration::ZERO,
            steady: None,
            startdelay: Duration::ZERO,
            loops: 1,
            offset: 0,
            offset_increment: 0,
            seed: None,
            verify: None,
            unlink: false,
            group_reporting: false,
            lat_percentiles: false,
            percentiles: None,
            bw_log: None,
            lat_log: None,
            iops_log: None,
            log_avg_msec: 0,
            create_on_open: false,
            invalidate: true,
            fadvise_hint: true,
            verify_fatal: false,
            own: Vec::new(),
        }
    }
}

/// `rw=`: the operation and the mode as written.
fn rw_mode(v: &str) -> Result<(Op, String), String> {
    let (mode, n) = match v.split_once(':') {
        Some((m, n)) => (m, Some(n)),
        None => (v, None),
    };
    if let Some(n) = n {
        if n.trim() != "0" && !n.trim().is_empty() {
            return Err(format!(
                "rw={v}: the :{n} suffix (holes, or a new random offset every {n} I/Os) is not supported; \
                 ioscale's sequential phases have no holes and its random ones pick every offset (use rw={mode})"
            ));
        }
    }
    let op = match mode {
        "read" => Op::Read,
        "write" => Op::Write,
        "randread" => Op::Randread,
        "randwrite" => Op::Randwrite,
        "rw" | "readwrite" => Op::Rw,
        "randrw" => Op::Randrw,
        "trim" | "randtrim" | "trimwrite" | "randtrimwrite" => {
            return Err(format!(
                "rw={mode}: trims are not supported; ioscale reads and writes (native: --op)"
            ))
        }
        _ => {
            return Err(format!(
                "rw={mode}: use read, write, randread, randwrite, rw/readwrite or randrw"
            ))
        }
    };
    Ok((op, mode.to_string()))
}

/// One fixed request size.
fn fixed_bs(b: u64) -> spec::XferSizes {
    spec::XferSizes {
        min: b,
        max: b,
        split: Vec::new(),
    }
}

/// A per-direction list (`bs=R,W,T` and the like): each comma-separated
/// part read by `one`, an empty one fio's default (4 KiB); the directions
/// after the last part given take the last, as in fio (`bs=4k,64k`: reads
/// of 4 KiB, writes and trims of 64 KiB).
fn bs_list(
    key: &str,
    v: &str,
    one: impl Fn(&str) -> Result<spec::XferSizes, String>,
) -> Result<[spec::XferSizes; 3], String> {
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() > 3 {
        return Err(format!(
            "{key}={v}: at most three lists (reads, writes, trims)"
        ));
    }
    let mut dirs = Vec::with_capacity(3);
    for p in &parts {
        dirs.push(if p.trim().is_empty() {
            fixed_bs(4096)
        } else {
            one(p.trim())?
        });
    }
    while dirs.len() < 3 {
        dirs.push(dirs[dirs.len() - 1].clone());
    }
    Ok([dirs[0].clone(), dirs[1].clone(), dirs[2].clone()])
}

/// `bsrange=LOW-HIGH`, one direction's.
fn bs_range(v: &str, kb_base: u64) -> Result<spec::XferSizes, String> {
    let (lo, hi) = v
        .split_once('-')
        .ok_or_else(|| format!("bsrange={v}: give LOW-HIGH"))?;
    let lo = fio_size("bsrange", lo, kb_base).map_err(|e| e.0)?;
    let hi = fio_size("bsrange", hi, kb_base).map_err(|e| e.0)?;
    if lo == 0 || hi < lo {
        return Err(format!("bsrange={v}: give LOW-HIGH with 0 < LOW <= HIGH"));
    }
    Ok(spec::XferSizes {
        min: lo,
        max: hi,
        split: Vec::new(),
    })
}

/// `bssplit=SIZE/PCT:SIZE/PCT…`, one direction's: sizes without a
/// percentage share what the others leave of 100, as in fio.
fn bs_split(v: &str, kb_base: u64) -> Result<spec::XferSizes, String> {
    let mut split: Vec<(u64, Option<u64>)> = Vec::new();
    for e in v.split(':').filter(|e| !e.is_empty()) {
        let (b, p) = match e.split_once('/') {
            Some((b, p)) if !p.is_empty() => (b, Some(fio_int("bssplit", p).map_err(|e| e.0)?)),
            Some((b, _)) => (b, None),
            None => (e, None),
        };
        let b = fio_size("bssplit", b, kb_base).map_err(|e| e.0)?;
        if b == 0 {
            return Err(format!("bssplit={v}: a block size of 0"));
        }
        split.push((b, p));
    }
    let given: u64 = split.iter().filter_map(|e| e.1).sum();
    let blank = split.iter().filter(|e| e.1.is_none()).count() as u64;
    if split.is_empty() || given > 100 || (blank == 0 && given != 100) {
        return Err(format!(
            "bssplit={v}: give SIZE/PERCENT:SIZE/PERCENT… adding up to 100"
        ));
    }
    // What is left of 100 goes to the sizes without one, the last taking
    // the remainder.
    let mut left = 100 - given;
    let mut pairs = Vec::with_capacity(split.len());
    let mut blanks_seen = 0;
    for (b, p) in split {
        let p = p.unwrap_or_else(|| {
            blanks_seen += 1;
            let share = if blanks_seen == blank {
                left
            } else {
                (100 - given) / blank
            };
            left -= share;
            share
        });
        pairs.push((b, p as u32));
    }
    let min = pairs.iter().map(|p| p.0).min().unwrap_or(4096);
    let max = pairs.iter().map(|p| p.0).max().unwrap_or(min);
    if let Some(b) = pairs.iter().find(|p| p.0 % min != 0) {
        return Err(format!(
            "bssplit={v}: {} is not a multiple of the smallest size {min} (fio would send \
             requests unaligned to blockalign; ioscale does not)",
            b.0
        ));
    }
    if min == max {
        return Ok(fixed_bs(min));
    }
    Ok(spec::XferSizes {
        min,
        max,
        split: pairs,
    })
}

/// Draws a job's `bs`, `bs_sizes` and `bs_write` from its per-direction
/// sizes and `rw=`: a read or write job uses its direction's; a mixed job
/// with the same sizes both ways uses them, and one with different sizes
/// carries both, its unit the smaller minimum, which the larger must be a
/// multiple of.
fn settle_bs(j: &mut Job) -> Result<(), String> {
    let [r, w, _] = &j.bs_dirs;
    let drawn = |z: &spec::XferSizes| (z.min != z.max).then(|| z.clone());
    let (bs, sizes, write) = match j.op {
        Op::Read | Op::Randread => (r.min, drawn(r), None),
        Op::Write | Op::Randwrite => (w.min, drawn(w), None),
        _ if r == w => (r.min, drawn(r), None),
        _ => {
            let (lo, hi) = (r.min.min(w.min), r.min.max(w.min));
            if lo != 0 && !hi.is_multiple_of(lo) {
                return Err(format!(
                    "bs: the smallest write ({}) and read ({}) must be multiples of the smaller \
                     (ioscale aligns a mixed job's requests to it)",
                    w.min, r.min
                ));
            }
            (lo, Some(r.clone()), Some(w.clone()))
        }
    };
    (j.bs, j.bs_sizes, j.bs_write) = (bs, sizes, write);
    align_as_fio(j)
}

/// `blockalign=` and `bs_unaligned=1` where they leave fio's requests as
/// ioscale makes them: fio aligns only random offsets, to each
/// direction's smallest size unless told otherwise, and `bs_unaligned`
/// changes only drawn sizes; other values are refused.
fn align_as_fio(j: &Job) -> Result<(), String> {
    let dirs: &[usize] = match j.op {
        Op::Read | Op::Randread => &[0],
        Op::Write | Op::Randwrite => &[1],
        _ => &[0, 1],
    };
    let random = j.op.is_random();
    if let Some(ba) = j.blockalign.filter(|_| random) {
        if let Some(&d) = dirs.iter().find(|&&d| ba[d] != j.bs_dirs[d].min) {
            return Err(format!(
                "blockalign={}: random offsets aligned to other than each direction's smallest \
                 block size ({}, fio's default) are not supported",
                ba[d], j.bs_dirs[d].min
            ));
        }
    }
    if j.bs_unaligned && dirs.iter().any(|&d| j.bs_dirs[d].min != j.bs_dirs[d].max) {
        return Err(
            "bs_unaligned=1: drawn sizes that are not multiples of the smallest are not \
             supported (it changes nothing with one bs=)"
                .into(),
        );
    }
    Ok(())
}

/// `hipri=`, `uncached=`, `nowait=`: the per-request flags of fio's
/// pvsync2 (and io_uring's polling); only their default 0 is run.
fn no_rw_flag(o: &Val<'_>) -> Result<(), String> {
    if o.bool()? {
        return Err(format!(
            "{}=1: not supported; ioscale passes no per-request flags (preadv2/pwritev2 \
             with flags 0, io_uring without polling: fio's default {}=0)",
            o.key, o.key
        ));
    }
    Ok(())
}

/// `ioengine=`.
fn engine_kind(v: &str) -> Result<EngineKind, String> {
    match v {
        "psync" => Ok(EngineKind::Sync),
        "sync" => Ok(EngineKind::Lseek),
        "pvsync" => Ok(EngineKind::Pvsync),
        "pvsync2" => Ok(EngineKind::Pvsync2),
        "io_uring" => Ok(EngineKind::IoUring),
        "libaio" => Ok(EngineKind::Libaio),
        "posixaio" => Err(format!(
            "ioengine={v}: not supported; the nearest engines are libaio and io_uring \
             (native: --engine libaio|io_uring), which queue iodepth= requests the same way"
        )),
        _ => Err(format!(
            "ioengine={v}: not supported; ioscale has psync/sync/pvsync (one request at a time), \
             libaio and io_uring (native: --engine sync|libaio|io_uring)"
        )),
    }
}

/// `verify=`: a checksum (fio's verify blocks, [`spec::Checksum`]) or
/// `pattern`/`crc32` (ioscale checks its own pattern), or none.
fn verify_kind(v: &str) -> Result<Option<String>, String> {
    match v {
        "0" | "" | "null" => Ok(None),
        "pattern" | "crc32" => Ok(Some(v.to_string())),
        _ if spec::Checksum::parse(v).is_some() => Ok(Some(v.to_string())),
        _ => Err(format!(
            "verify={v}: use crc32c, crc32c-intel, md5, sha1 or xxhash (fio's verify \
             blocks), or pattern (ioscale's own; native: --verify)"
        )),
    }
}

/// `fadvise_hint=`: 1 (fio's default: by the job's order) or 0.
fn fadvise_hint(v: &str) -> Result<bool, String> {
    match v {
        "1" | "" => Ok(true),
        "0" => Ok(false),
        _ => Err(format!(
            "fadvise_hint={v}: use 1 (fio's default: sequential or random as the job's order) or 0"
        )),
    }
}

/// `percentile_list=A:B:…`.
fn percentile_list(v: &str) -> Result<Vec<f64>, String> {
    let mut l = Vec::new();
    for p in v.split(':') {
        let x: f64 = p
            .trim()
            .parse()
            .map_err(|_| format!("percentile_list={v}: {p} is not a number"))?;
        if !(x > 0.0 && x <= 100.0) {
            return Err(format!(
                "percentile_list={v}: {p} is not a percentile (above 0, at most 100)"
            ));
        }
        l.push(x);
    }
    Ok(l)
}

/// Reads one job's options (global first, then its own: later wins).
fn typed(name: &str, opts: &[Opt]) -> Result<Job, Usage> {
    let kb_base = kb_base(opts)?;
    let mut j = Job::new(name);
    for o in opts {
        let v = Val {
            key: o.key.as_str(),
            val: o.val.as_deref(),
            kb_base,
        };
        let known = set_io(&mut j, &v)
            .and_then(|known| Ok(known || set_run(&mut j, &v)?))
            .map_err(|m| usage(format!("{m} ({})", o.origin)))?;
        if !known {
            return Err(usage(format!("{}: not supported ({})", v.key, o.origin)));
        }
    }
    j.steady = steady_of(&j).map_err(|m| usage(format!("{m} (job '{name}')")))?;
    settle_bs(&mut j).map_err(|m| usage(format!("{m} (job '{name}')")))?;
    if j.bs_sizes.is_some() && j.verify.is_some() {
        return Err(usage(format!(
            "bs/bsrange/bssplit: drawn or per-direction block sizes are supported without \
             verify= (job {name}); give one bs= for a verify job"
        )));
    }
    Ok(j)
}

/// `steadystate=CRITERION:LIMIT[%]`: fio's criteria (`iops`, `iops_slope`,
/// `bw`, `bw_slope`); a bandwidth limit without `%` is a size a second
/// (`bw:10m`), kept in bytes/s.
fn ss_rule(v: &str, kb_base: u64) -> Result<(Kind_, f64, bool), String> {
    let (crit, lim) = v
        .split_once(':')
        .ok_or_else(|| format!("steadystate={v}: give CRITERION:LIMIT, e.g. iops:5%"))?;
    let kind = match crit {
        "iops" => Kind_::Iops,
        "iops_slope" => Kind_::IopsSlope,
        "bw" => Kind_::Bw,
        "bw_slope" => Kind_::BwSlope,
        k => {
            return Err(format!(
                "steadystate={v}: {k} is not a criterion (iops, iops_slope, bw, bw_slope)"
            ))
        }
    };
    let bad = || format!("steadystate={v}: the limit is a number ≥ 0, or a percentage");
    let (limit, pct) = match lim.strip_suffix('%') {
        Some(n) => (n.trim().parse::<f64>().map_err(|_| bad())?, true),
        None if matches!(kind, Kind_::Bw | Kind_::BwSlope) => (
            fio_size("steadystate", lim, kb_base).map_err(|_| bad())? as f64,
            false,
        ),
        None => (lim.trim().parse::<f64>().map_err(|_| bad())?, false),
    };
    if !limit.is_finite() || limit < 0.0 {
        return Err(bad());
    }
    Ok((kind, limit, pct))
}

/// The executor's rule for a job's `steadystate=` options: a window of
/// whole seconds (at least 2: one sample a second, as fio's
/// `ss_interval`), and a `runtime=` to end the job by (the executor ends a
/// phase at steady state by cutting its time limit).
fn steady_of(j: &Job) -> Result<Option<bench::steady::Steady>, String> {
    let Some((kind, limit, pct)) = j.ss else {
        return Ok(None);
    };
    let window = j
        .ss_dur
        .ok_or("steadystate= needs steadystate_duration= (ss_dur=): the window it judges")?;
    if window < Duration::from_secs(2) || window.subsec_nanos() != 0 {
        return Err(format!(
            "steadystate_duration={:?}: whole seconds, at least 2 (one sample a second)",
            window
        ));
    }
    if j.runtime.is_none() {
        return Err(
            "steadystate= needs runtime=: ioscale ends a job at steady state by \
                    cutting its time limit"
                .into(),
        );
    }
    // The executor's bandwidth limits are in MiB/s.
    let limit = if pct || matches!(kind, Kind_::Iops | Kind_::IopsSlope) {
        limit
    } else {
        limit / 1_048_576.0
    };
    Ok(Some(bench::steady::Steady {
        kind,
        limit,
        pct,
        window,
        ramp: j.ss_ramp,
        whole: true,
    }))
}

/// One option's value, read as the type its key wants; an error is the
/// message without the option's origin (the caller adds it).
struct Val<'a> {
    key: &'a str,
    val: Option<&'a str>,
    kb_base: u64,
}

impl Val<'_> {
    fn text(&self) -> &str {
        self.val.unwrap_or("")
    }
    fn bool(&self) -> Result<bool, String> {
        fio_bool(self.key, self.val).map_err(|e| e.0)
    }
    fn size(&self) -> Result<u64, String> {
        fio_size(self.key, self.text(), self.kb_base).map_err(|e| e.0)
    }
    fn int(&self) -> Result<u64, String> {
        fio_int(self.key, self.text()).map_err(|e| e.0)
    }
    fn time(&self) -> Result<Duration, String> {
        fio_time(self.key, self.text()).map_err(|e| e.0)
    }
}

/// The options that shape the I/O (files, sizes, pattern, engine, sync);
/// `Ok(false)` for any other key.
fn set_io(j: &mut Job, o: &Val<'_>) -> Result<bool, String> {
    let v = o.text();
    match o.key {
        "name" | "new_group" | "kb_base" | "thread" => {}
        "filename" => j.filename = Some(v.to_string()),
        "directory" => j.directory = Some(v.to_string()),
        "nrfiles" => j.nrfiles = o.int()?,
        "filesize" => j.filesize = Some(o.size()?),
        "size" => {
            if v.ends_with('%') {
                return Err(format!(
                    "size={v}: a percentage of the device is not supported; give bytes (size=1g)"
                ));
            }
            j.size = Some(o.size()?)
        }
        "rw" => (j.op, j.rw_text) = rw_mode(v)?,
        "bs" => {
            let one = |p: &str| fio_size("bs", p, o.kb_base).map(fixed_bs).map_err(|e| e.0);
            j.bs_dirs = bs_list("bs", v, one)?;
        }
        "bsrange" => j.bs_dirs = bs_list("bsrange", v, |p| bs_range(p, o.kb_base))?,
        "bssplit" => j.bs_dirs = bs_list("bssplit", v, |p| bs_split(p, o.kb_base))?,
        "blockalign" => {
            let one = |p: &str| {
                fio_size("blockalign", p, o.kb_base)
                    .map(fixed_bs)
                    .map_err(|e| e.0)
            };
            j.blockalign = Some(bs_list("blockalign", v, one)?.map(|z| z.min));
        }
        "bs_unaligned" => j.bs_unaligned = o.bool()?,
        "rwmixread" => j.rwmixread = Some(o.int()?),
        "rwmixwrite" => j.rwmixread = Some(100u64.saturating_sub(o.int()?)),
        "numjobs" => j.numjobs = o.int()?,
        "iodepth" => j.iodepth = o.int()?,
        "ioengine" => {
            j.engine = engine_kind(v)?;
            j.ioengine = v.to_string();
        }
        "hipri" | "uncached" | "nowait" => no_rw_flag(o)?,
        "direct" => j.direct = o.bool()?,
        "buffered" => j.direct = !o.bool()?,
        "sync" => match v {
            "0" | "none" | "" => {
                j.osync = false;
                j.odsync = false
            }
            "1" | "sync" => j.osync = true,
            "dsync" => j.odsync = true,
            _ => return Err(format!("sync={v}: use 0, 1, sync or dsync")),
        },
        "dsync" => j.odsync = o.bool()?,
        "fsync" => j.fsync = o.int()?,
        "fdatasync" => j.fdatasync = o.int()?,
        "end_fsync" => j.end_fsync = o.bool()?,
        "fsync_on_close" => j.fsync_on_close = o.bool()?,
        "offset" => j.offset = o.size()?,
        "offset_increment" => j.offset_increment = o.size()?,
        "create_on_open" => j.create_on_open = o.bool()?,
        "invalidate" => j.invalidate = o.bool()?,
        "fadvise_hint" => j.fadvise_hint = fadvise_hint(v)?,
        "allow_file_create" => {
            if !o.bool()? {
                return Err(
                    "allow_file_create=0: not supported; ioscale creates a job's missing \
                            files, as fio's default allow_file_create=1 does"
                        .into(),
                );
            }
        }
        "unlink" => j.unlink = o.bool()?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// The options that shape the run and its report (time, order, checks,
/// percentiles, logs); `Ok(false)` for any other key.
fn set_run(j: &mut Job, o: &Val<'_>) -> Result<bool, String> {
    let v = o.text();
    match o.key {
        "runtime" => j.runtime = Some(o.time()?),
        "time_based" => j.time_based = o.bool()?,
        "ramp_time" => j.ramp_time = o.time()?,
        "steadystate" => j.ss = Some(ss_rule(v, o.kb_base)?),
        "steadystate_duration" => j.ss_dur = Some(o.time()?),
        "steadystate_ramp_time" => j.ss_ramp = o.time()?,
        "startdelay" => j.startdelay = o.time()?,
        "loops" => j.loops = o.int()?,
        "randrepeat" => {
            if !o.bool()? {
                return Err(
                    "randrepeat=0: ioscale's random order is always seeded; give randseed=N to choose it"
                        .into(),
                );
            }
        }
        "randseed" => j.seed = Some(o.int()?),
        "norandommap" => {}
        "verify" => j.verify = verify_kind(v)?,
        "verify_fatal" => j.verify_fatal = o.bool()?,
        "do_verify" => {
            if !o.bool()? {
                return Err(
                    "do_verify=0: not supported; ioscale reads a verify job's blocks back \
                            after its writes, as fio's default do_verify=1 does"
                        .into(),
                );
            }
        }
        "group_reporting" => j.group_reporting = o.bool()?,
        "lat_percentiles" => j.lat_percentiles = o.bool()?,
        "clat_percentiles" => {
            if !o.bool()? {
                return Err("clat_percentiles=0: ioscale always prints its percentiles".into());
            }
        }
        "percentile_list" => j.percentiles = Some(percentile_list(v)?),
        "write_bw_log" => j.bw_log = Some(log_name(v, &j.name)),
        "write_lat_log" => j.lat_log = Some(log_name(v, &j.name)),
        "write_iops_log" => j.iops_log = Some(log_name(v, &j.name)),
        "log_avg_msec" => {
            j.log_avg_msec = v
                .trim()
                .parse()
                .map_err(|_| format!("log_avg_msec={v}: a whole number of milliseconds"))?
        }
        "stonewall" | "wait_for_previous" => j.stonewall = o.bool()?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// A log's name prefix: the value, or the job's name when it is empty.
fn log_name(v: &str, job: &str) -> String {
    let v = v.trim();
    if v.is_empty() {
        job.to_string()
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_kb_base() {
        assert_eq!(fio_size("bs", "4k", 1024).unwrap(), 4096);
        assert_eq!(fio_size("bs", "4K", 1024).unwrap(), 4096);
        assert_eq!(fio_size("size", "1m", 1024).unwrap(), 1 << 20);
        assert_eq!(fio_size("size", "1MB", 1024).unwrap(), 1 << 20);
        assert_eq!(fio_size("size", "1MiB", 1024).unwrap(), 1_000_000);
        assert_eq!(fio_size("size", "1MiB", 1000).unwrap(), 1 << 20);
        assert_eq!(fio_size("size", "1MB", 1000).unwrap(), 1_000_000);
        assert_eq!(fio_size("size", "2g", 1024).unwrap(), 2 << 30);
        assert_eq!(fio_size("bs", "512", 1024).unwrap(), 512);
        assert!(fio_size("bs", "4x", 1024).is_err());
        assert!(fio_size("bs", "", 1024).is_err());
    }

    #[test]
    fn times() {
        assert_eq!(fio_time("runtime", "30").unwrap(), Duration::from_secs(30));
        assert_eq!(
            fio_time("runtime", "500ms").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(fio_time("runtime", "2m").unwrap(), Duration::from_secs(120));
        assert!(fio_time("runtime", "x").is_err());
    }

    #[test]
    fn env_expansion() {
        std::env::set_var("IOSCALE_FIO_T", "8k");
        assert_eq!(expand_env("${IOSCALE_FIO_T}"), "8k");
        assert_eq!(expand_env("a${IOSCALE_FIO_NOPE}b"), "a${IOSCALE_FIO_NOPE}b");
    }

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn command_line_jobs_and_refusals() {
        let c = parse_cli(&argv(
            "--bs=8k --name=a --rw=randread --size=1m --name b --rw write --size 2m --group_reporting",
        ))
        .unwrap();
        let (js, _) = jobs(&c).unwrap();
        assert_eq!(js.len(), 2);
        assert_eq!(js[0].op, Op::Randread);
        assert_eq!(js[0].bs, 8192);
        assert_eq!(js[1].size, Some(2 << 20));
        assert!(js[1].group_reporting && !js[0].group_reporting);
        let c = parse_cli(&argv("--name=a --bssplit=4k/30:16k:64k/20")).unwrap();
        let z = jobs(&c).unwrap().0[0].bs_sizes.clone().unwrap();
        assert_eq!((z.min, z.max), (4096, 65536));
        assert_eq!(z.split, vec![(4096, 30), (16384, 50), (65536, 20)]);
        for bad in [
            "4k/50",
            "4k/50:8k/60",
            "6k/50:4k/50",
            "4k/50,8k/60",
            "4k,8k,16k,32k",
            "0/100",
        ] {
            let c = parse_cli(&argv(&format!("--name=a --bssplit={bad}"))).unwrap();
            let e = jobs(&c).unwrap_err().0;
            assert!(e.contains("bssplit="), "{bad}: {e}");
        }
        let c = parse_cli(&argv("--name=a --bsrange=4k-64k --bs=8k")).unwrap();
        assert_eq!(
            (
                jobs(&c).unwrap().0[0].bs_sizes.clone(),
                jobs(&c).unwrap().0[0].bs
            ),
            (None, 8192)
        );
        // Per direction: a read job takes the first, a write job the
        // second, a mixed job both.
        let bs = |a: &str| {
            let c = parse_cli(&argv(&format!("--name=a {a}"))).unwrap();
            let j = jobs(&c).unwrap().0.remove(0);
            (
                j.bs,
                j.bs_sizes.map(|z| (z.min, z.max)),
                j.bs_write.map(|z| (z.min, z.max)),
            )
        };
        assert_eq!(bs("--bs=4k,64k"), (4096, None, None));
        assert_eq!(bs("--rw=write --bs=4k,64k"), (65536, None, None));
        assert_eq!(
            bs("--rw=rw --bs=64k,4k"),
            (4096, Some((65536, 65536)), Some((4096, 4096)))
        );
        assert_eq!(
            bs("--rw=randrw --bs=,8k"),
            (4096, Some((4096, 4096)), Some((8192, 8192)))
        );
        assert_eq!(
            bs("--rw=randrw --bsrange=4k-64k"),
            (4096, Some((4096, 65536)), None)
        );
        assert_eq!(
            bs("--rw=rw --bssplit=4k/50:8k/50,16k"),
            (4096, Some((4096, 8192)), Some((16384, 16384)))
        );
        let c = parse_cli(&argv("--name=a --rw=rw --bs=4k,6k")).unwrap();
        assert!(jobs(&c).unwrap_err().0.contains("multiples"));
        let e = parse_cli(&argv("--name=a --frobnicate=1")).unwrap_err().0;
        assert!(e.contains("--frobnicate"), "{e}");
        let c = parse_cli(&argv("--name=a --ioengine=libaio")).unwrap();
        assert_eq!(jobs(&c).unwrap().0[0].engine, EngineKind::Libaio);
        // Each synchronous engine runs the registry engine of its calls.
        for (io, name) in [
            ("psync", "sync"),
            ("sync", "lseek"),
            ("pvsync", "pvsync"),
            ("pvsync2", "pvsync2"),
        ] {
            let c = parse_cli(&argv(&format!("--name=a --ioengine={io} --hipri=0"))).unwrap();
            let e = jobs(&c).unwrap().0[0].engine;
            assert_eq!((e.name(), e.is_sync()), (name, true), "{io}");
        }
        for flag in ["hipri", "uncached", "nowait"] {
            let c = parse_cli(&argv(&format!("--name=a --ioengine=pvsync2 --{flag}=1"))).unwrap();
            let e = jobs(&c).unwrap_err().0;
            assert!(e.contains(&format!("{flag}=1: not supported")), "{e}");
        }
        let c = parse_cli(&argv("--name=a --ioengine=posixaio")).unwrap();
        let e = jobs(&c).unwrap_err().0;
        assert!(e.contains("libaio") && e.contains("io_uring"), "{e}");
    }
}
