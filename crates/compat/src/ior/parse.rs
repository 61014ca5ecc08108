//! IOR's command line, read the way IOR reads it, and what it means as
//! an ioscale workload ([`to_raw`]).

use crate::Usage;
use bench::dataset::parent_of;
use spec::{parse_count, parse_size, FileNaming, Layout, Op, RawWorkload, SyncMode};
use std::path::PathBuf;
use std::time::Duration;

/// What the IOR command line asked for, before the workload is built.
#[derive(Debug, Default)]
pub struct IorArgs {
    /// `-a API`: only POSIX is accepted.
    pub api: Option<String>,
    /// `-b`: the contiguous bytes each task writes per segment.
    pub block: Option<u64>,
    /// `-t`: the size of one transfer.
    pub xfer: Option<u64>,
    /// `-s`: how many segments (blocks per task).
    pub segments: Option<u64>,
    /// `-F`: a file per process instead of one shared file.
    pub fpp: bool,
    /// `-u`: each task's file in a directory of its own.
    pub unique_dir: bool,
    /// `-o`: the test file's path.
    pub out: Option<String>,
    /// `-E`: use the existing test file (no create, no truncate).
    pub existing: bool,
    /// `-N`: the number of tasks.
    pub tasks: Option<u64>,
    /// `-k`: keep the test files after the run.
    pub keep: bool,
    /// `-w`: a write phase.
    pub write: bool,
    /// `-r`: a read phase.
    pub read: bool,
    /// `-W`: read back and check what was written.
    pub check_write: bool,
    /// `-R`: check the data read.
    pub check_read: bool,
    /// `-G`: the time-stamp signature that seeds the data pattern.
    pub seed: Option<u64>,
    /// `-C`: each task reads what its neighbour wrote.
    pub reorder: bool,
    /// `-Q`: how many tasks away the neighbour of `-C` is.
    pub task_offset: Option<u64>,
    /// `-z`: transfers at random offsets.
    pub random: bool,
    /// `-e`: fsync once after the write phase.
    pub fsync: bool,
    /// `-Y`: fsync after every write.
    pub fsync_each: bool,
    /// `-D`: the stonewall deadline in seconds (0: none).
    pub deadline: u64,
    /// `-O stoneWallingWearOut=1`: after the deadline every task finishes the pairs the slowest reached.
    pub wearout: bool,
    /// `-i`: the repetitions.
    pub reps: Option<u64>,
    /// `-d`: seconds to wait between repetitions.
    pub delay: u64,
    /// `-T`: the most minutes a phase may run (0: no limit).
    pub max_minutes: u64,
    /// `-x`: one attempt per transfer, no retry of a short one.
    pub single_xfer: bool,
    /// `-v` (each adds one) or `-O verbose=N`: IOR's verbosity.
    pub verbose: u32,
    /// `-A`: the reference number shown in the summary.
    pub ref_num: i64,
    /// `--posix.odirect`: the files are opened with `O_DIRECT`.
    pub direct: bool,
    /// `-O summaryFormat=`: `JSON` or `CSV`, `None` for IOR's text.
    pub summary_format: Option<String>,
    /// `-O summaryFile=`: where the summary goes instead of standard output.
    pub summary_file: Option<PathBuf>,
    /// `--print-spec` (ioscale's): print the checked workload and run nothing.
    pub print_spec: bool,
    /// `--progress MODE` (ioscale's; IOR has no such option).
    pub progress: Option<crate::progress::ProgressMode>,
    /// `-h` or `--help`.
    pub help: bool,
}

/// ioscale's flags that workload checks name, and IOR's options for them.
pub const NATIVE_FLAGS: &[(&str, &str)] = &[
    ("--xfer", "-t"),
    ("--block", "-b"),
    ("--size", "-b × -s"),
    ("--segments", "-s"),
    ("--threads", "-N"),
    ("--reps", "-i"),
    ("--reorder-offset", "-Q"),
    ("--reorder", "-C"),
    ("--direct", "--posix.odirect"),
    ("--time", "-T/-D"),
];

/// IOR options that take a value.
pub const VALUE_OPTS: &str = "abtsoNiGQDdTOA";
/// IOR flags ioscale supports.
pub const FLAG_OPTS: &str = "FuEkwrWRCzeYgxv";

/// The getopt-style syntax of the options above.
pub const SHORT: crate::args::ShortOpts<IorArgs> = crate::args::ShortOpts {
    tool: "IOR",
    cmd: "ior",
    value: VALUE_OPTS,
    flags: FLAG_OPTS,
    unsupported,
    operand_hint: "name the file with -o",
    help: |a| a.help = true,
    apply_value,
    apply_flag,
};

/// The IOR options ioscale refuses, with the nearest native equivalent.
pub fn unsupported(opt: &str) -> Option<&'static str> {
    Some(match opt {
        "-c" => "collective MPI-IO is not supported: ioscale issues independent POSIX I/O (use -a POSIX)",
        "-f" => "IOR scripts are not supported: run one command line per test, or use `ioscale sweep`",
        "-j" => "outlier detection is not supported: the nearest is -i N (`ioscale run --reps N`), whose summary gives min/max/mean/stddev",
        "-K" => "keepFileWithError is not supported: use -k (keep the files) instead",
        "-l" => "data packet types are not supported: use -W/-R/-G (`ioscale run --verify --seed N`), which check ioscale's own offset-encoding pattern",
        "-m" => "multiFile is not supported: run the command once per file, or use `ioscale sweep`",
        "-M" => "memoryPerNode is not supported: use a working set larger than RAM, or --posix.odirect (`ioscale run --direct`)",
        "-X" | "-Z" => {
            "random task reordering (-Z/-X) is not supported: use -C with -Q N (a constant task offset, `ioscale run --reorder --reorder-offset N`)"
        }
        "-y" => "dual mount is not supported: use one -o path (`ioscale sweep --target A,B` to compare mounts)",
        "-q" => {
            "-q is not an IOR 4.0 option (IOR 4.0 refuses it; it was 3.x's quitOnError): use -R or -W              (`ioscale run --verify`), which end with exit 1 on a failed check"
        }
        "-B" => "-B is not an IOR 4.0 option (IOR 4.0 refuses it; it was 3.x's useO_DIRECT): use --posix.odirect (`ioscale run --direct`)",
        "-H" | "-U" | "-P" | "-S" | "-V" | "-I" | "-J" | "-n" | "-p" | "-L" => {
            "not an IOR 4.0 option (IOR 4.0 refuses it): see `ioscale ior --help`; use -a POSIX with the options listed there (docs/compat.md gives the nearest native option of each)"
        }
        _ => return None,
    })
}

/// IOR 4.0's long options (and the POSIX backend's) that ioscale refuses,
/// each with the nearest native option or the reason there is none.
pub fn unsupported_long(name: &str) -> Option<&'static str> {
    Some(match name {
        "collective" => "collective MPI-IO (-c) is not supported: ioscale issues independent POSIX I/O (use -a POSIX)",
        "dataPacketType" => {
            "data packet types (-l) are not supported: use -W/-R/-G (`ioscale run --verify --seed N`), which check              ioscale's own offset-encoding pattern; without a check the data are incompressible random bytes"
        }
        "randomPrefill" => {
            "a random prefill is not supported: with -z every transfer is written once in random order              (`ioscale run --op randwrite`), so the file is full when the phase ends; the nearest is -w without -z"
        }
        "random-offset-seed" => {
            "a separate seed for -z is not supported: the nearest is -G N (`ioscale run --seed N`), which seeds both              the -z offset order and the data pattern"
        }
        "warningAsErrors" => {
            "no nearest option: ioscale's warnings (page cache, oversubscription) describe how to read the figures              and never change the exit code; errors already end with exit 1 (I/O, data check) or 2 (setup)"
        }
        "dryRun" => "a dry run is not supported: use --print-spec (print the workload ioscale would run, and exit)",
        "posix.rangelocks" => {
            "range locks are not supported: ioscale takes no locks; the nearest is IOR's default (no --posix.rangelocks)"
        }
        "gpuDirect" | "allocateBufferOnGPU" => "GPU buffers are not supported: no nearest option (ioscale's buffers are host memory)",
        _ => return None,
    })
}

pub use crate::args::usage;

/// A size option's value (`1m`, `4k`), or a usage error naming `opt`.
pub fn size_of(opt: &str, v: &str) -> Result<u64, Usage> {
    parse_size(v).map_err(|e| usage(format!("{opt} {v}: {e}")))
}

/// A count option's value, or a usage error naming `opt`.
pub fn count_of(opt: &str, v: &str) -> Result<u64, Usage> {
    parse_count(v).map_err(|e| usage(format!("{opt} {v}: {e}")))
}

/// IOR's `-O` directives that are another spelling of a short option
/// (IOR 4.0's `DecodeDirective`, names compared without case): the option,
/// and whether it takes a value (a flag directive is `NAME=0|1`).
pub const DIRECTIVES: &[(&str, char, bool)] = &[
    ("api", 'a', true),
    ("refnum", 'A', true),
    ("testfile", 'o', true),
    ("deadlineforstonewalling", 'D', true),
    ("maxtimeduration", 'T', true),
    ("numtasks", 'N', true),
    ("repetitions", 'i', true),
    ("intertestdelay", 'd', true),
    ("taskpernodeoffset", 'Q', true),
    ("segmentcount", 's', true),
    ("blocksize", 'b', true),
    ("transfersize", 't', true),
    ("settimestampsignature", 'G', true),
    ("readfile", 'r', false),
    ("writefile", 'w', false),
    ("fileperproc", 'F', false),
    ("reordertasks", 'C', false),
    ("reordertasksconstant", 'C', false),
    ("checkwrite", 'W', false),
    ("checkread", 'R', false),
    ("keepfile", 'k', false),
    ("singlexferattempt", 'x', false),
    ("intratestbarriers", 'g', false),
    ("uniquedir", 'u', false),
    ("useexistingtestfile", 'E', false),
    ("fsyncperwrite", 'Y', false),
    ("fsync", 'e', false),
    ("randomoffset", 'z', false),
    // Refused, as their short options are.
    ("dualmount", 'y', false),
    ("outlierthreshold", 'j', true),
    ("reordertasksrandom", 'Z', false),
    ("reordertasksrandomseed", 'X', true),
    ("keepfilewitherror", 'K', false),
    ("multifile", 'm', false),
    ("collective", 'c', false),
    ("datapackettype", 'l', true),
    ("memorypernode", 'M', true),
];

/// Applies `-O KEY=VALUE[,KEY=VALUE…]`: ioscale's directives, and the directive spelling of each short option.
pub fn apply_o(a: &mut IorArgs, v: &str) -> Result<(), Usage> {
    for kv in v.split(',').filter(|s| !s.is_empty()) {
        let (k, val) = kv.split_once('=').ok_or_else(|| {
            usage(format!(
                "-O {kv}: expected key=value (stoneWallingWearOut=1, summaryFormat=JSON|CSV, summaryFile=PATH)"
            ))
        })?;
        let key = k.to_ascii_lowercase();
        match key.as_str() {
            "stonewallingwearout" => a.wearout = count_of("-O stoneWallingWearOut", val)? != 0,
            "summaryformat" => {
                let f = val.to_ascii_uppercase();
                if !matches!(f.as_str(), "JSON" | "CSV" | "DEFAULT") {
                    return Err(usage(format!(
                        "-O summaryFormat={val}: use JSON, CSV or default (ioscale's own: --json/--csv of `ioscale run`)"
                    )));
                }
                a.summary_format = (f != "DEFAULT").then_some(f);
            }
            "summaryfile" => a.summary_file = Some(PathBuf::from(val)),
            "verbose" => a.verbose = count_of("-O verbose", val)? as u32,
            "stonewallingwearoutiterations" | "stonewallingstatusfile" => {
                return Err(usage(format!(
                    "-O {k}: not supported: ioscale's stonewall is -D N (`ioscale run --time Ns`), which stops \
                     every task at the deadline in one run"
                )))
            }
            "mintimeduration" => {
                return Err(usage(
                    "-O minTimeDuration: not supported: the nearest is -i N (`ioscale run --reps N`) to run longer, \
                     or -D N (`--time Ns`) to bound a phase",
                ))
            }
            "saverankperformancedetailscsv" => {
                return Err(usage(
                    "-O saveRankPerformanceDetailsCSV: not supported: the nearest is `ioscale run --json FILE`, \
                     whose `workers` list holds every task's bytes, times and rate",
                ))
            }
            "warningaserrors" | "allocatebufferongpu" | "gpuid" | "gpudirect" => {
                let why = unsupported_long(if key == "warningaserrors" {
                    "warningAsErrors"
                } else {
                    "gpuDirect"
                })
                .unwrap_or_default();
                return Err(usage(format!("-O {k}: {why}")));
            }
            "memorypertask" => {
                return Err(usage(format!(
                    "-O {k}: not supported: use a working set larger than RAM, or --posix.odirect (`ioscale run --direct`)"
                )))
            }
            "interiodelay" => {
                return Err(usage(format!(
                    "-O {k}: a delay between transfers is not supported: the nearest is fewer tasks (-N, `ioscale run --threads`) \
                     or -Y (`--sync every:1`) to slow each write"
                )))
            }
            "numnodes" | "platform" | "debug" | "summaryalways" => {
                return Err(usage(format!(
                    "-O {k}: not supported: no nearest option (ioscale finds the nodes from the launcher, prints the host \
                     and its summary once at the end); see `ioscale ior --help`"
                )))
            }
            _ => {
                let Some(&(_, c, takes_value)) = DIRECTIVES.iter().find(|(n, _, _)| *n == key) else {
                    return Err(usage(format!(
                        "-O {k}: not an IOR 4.0 directive ioscale knows (it knows stoneWallingWearOut, summaryFormat, \
                         summaryFile and the directive spelling of each supported short option, e.g. blockSize=1m \
                         for -b 1m); use the short options of `ioscale ior --help` (docs/compat.md maps each)"
                    )));
                };
                if let Some(why) = unsupported(&format!("-{c}")) {
                    return Err(usage(format!("-O {k} (-{c}): {why}")));
                }
                if takes_value {
                    apply_value(a, c, val)?;
                } else if count_of(&format!("-O {k}"), val)? != 0 {
                    apply_flag(a, c);
                }
            }
        }
    }
    Ok(())
}

/// Applies a value option (a letter of [`VALUE_OPTS`]) with its value.
pub fn apply_value(a: &mut IorArgs, c: char, v: &str) -> Result<(), Usage> {
    let opt = format!("-{c}");
    let opt = opt.as_str();
    match c {
        'a' => {
            crate::args::posix_api(
                v,
                "pread/pwrite (use -a POSIX; for asynchronous I/O the nearest native option is \
                 `ioscale run --engine io_uring`)",
            )?;
            a.api = Some("POSIX".into());
        }
        'b' => a.block = Some(size_of(opt, v)?),
        't' => a.xfer = Some(size_of(opt, v)?),
        's' => a.segments = Some(count_of(opt, v)?),
        'o' => a.out = Some(v.to_string()),
        'N' => a.tasks = Some(count_of(opt, v)?),
        'i' => a.reps = Some(count_of(opt, v)?),
        'G' => {
            let n: i64 = v
                .trim()
                .parse()
                .map_err(|_| usage(format!("-G {v}: not a whole number")))?;
            a.seed = Some(n as u64);
        }
        'Q' => a.task_offset = Some(count_of(opt, v)?),
        'D' => a.deadline = count_of(opt, v)?,
        'd' => a.delay = count_of(opt, v)?,
        'T' => a.max_minutes = count_of(opt, v)?,
        'A' => {
            a.ref_num = v
                .trim()
                .parse()
                .map_err(|_| usage(format!("-A {v}: not a whole number")))?
        }
        'O' => apply_o(a, v)?,
        _ => unreachable!("only VALUE_OPTS reach here"),
    }
    Ok(())
}

/// Applies a flag (a letter of [`FLAG_OPTS`]).
pub fn apply_flag(a: &mut IorArgs, c: char) {
    match c {
        'F' => a.fpp = true,
        'u' => a.unique_dir = true,
        'E' => a.existing = true,
        'k' => a.keep = true,
        'w' => a.write = true,
        'r' => a.read = true,
        'W' => a.check_write = true,
        'R' => a.check_read = true,
        'C' => a.reorder = true,
        'z' => a.random = true,
        'e' => a.fsync = true,
        'Y' => a.fsync_each = true,
        'g' => {}
        'x' => a.single_xfer = true,
        'v' => a.verbose += 1,
        _ => unreachable!("only FLAG_OPTS reach here"),
    }
}

/// First stage: IOR's syntax into [`IorArgs`].
pub fn parse(args: &[String]) -> Result<IorArgs, Usage> {
    let mut a = IorArgs::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if let Some(long) = arg.strip_prefix("--") {
            match long {
                "help" => a.help = true,
                "print-spec" => a.print_spec = true,
                "posix.odirect" => a.direct = true,
                "progress" => {
                    let v = args
                        .get(i)
                        .ok_or_else(|| usage("--progress needs auto, bar, plain or none"))?;
                    i += 1;
                    a.progress = Some(crate::args::progress_value(v)?);
                }
                _ if long.starts_with("progress=") => {
                    a.progress = Some(crate::args::progress_value(&long["progress=".len()..])?);
                }
                _ if unsupported_long(long.split('=').next().unwrap_or(long)).is_some() => {
                    let name = long.split('=').next().unwrap_or(long);
                    let why = unsupported_long(name).unwrap_or_default();
                    return Err(usage(format!("--{name}: {why}")));
                }
                _ => {
                    let name = long.split('=').next().unwrap_or(long);
                    return Err(usage(if name.starts_with("posix.") {
                        format!("--{name}: not supported (ioscale knows --posix.odirect; see docs/compat.md)")
                    } else {
                        format!(
                            "--{name}: not an option ioscale's IOR front-end supports; see `ioscale ior --help` \
                             and docs/compat.md for the nearest native option"
                        )
                    }));
                }
            }
            continue;
        }
        crate::args::read_short(&SHORT, &mut a, arg, args, &mut i)?;
    }
    Ok(a)
}

/// Second stage: IOR's meaning of the options, as an ioscale workload.
pub fn to_raw(a: &IorArgs) -> Result<RawWorkload, Usage> {
    if a.wearout && a.deadline == 0 {
        // IOR 4.0 refuses this too ("only sensible when setting a stonewall
        // deadline with -D").
        return Err(usage(
            "-O stoneWallingWearOut=1 needs a stonewall deadline (-D N), as in IOR 4.0, and ioscale does not \
             support the wear-out with one: drop it; the nearest is -D N (`ioscale run --time Ns`), which stops \
             every task at the deadline",
        ));
    }
    if a.wearout && a.deadline > 0 {
        return Err(usage(
            "-O stoneWallingWearOut=1 with -D: not supported: ioscale stops every task at the deadline \
             and reports the stonewall figure (`ioscale run --time`); drop the wear-out, or use -D 0",
        ));
    }
    let tasks = a.tasks.unwrap_or(1);
    let (write, read) = if !a.write && !a.read {
        (true, true)
    } else {
        (a.write, a.read)
    };
    if a.check_write && !write {
        return Err(usage(
            "-W checks what this run writes: add -w (or use -R to check a read)",
        ));
    }
    let mut ops = Vec::new();
    if write {
        ops.push(if a.random { Op::Randwrite } else { Op::Write });
    }
    if read || a.check_write {
        ops.push(if a.random { Op::Randread } else { Op::Read });
    }
    let layout = match (a.fpp, a.unique_dir) {
        (false, _) => Layout::Shared,
        (true, false) => Layout::PerThread,
        (true, true) => Layout::PerThreadDir,
    };
    let path = PathBuf::from(a.out.clone().unwrap_or_else(|| "testFile".into()));
    let offset = a.task_offset.unwrap_or(1);
    // IOR with one task (or an offset that wraps to itself) reads its own
    // data under -C; so does ioscale with no reordering.
    let reorder = (a.reorder && tasks > 1 && !offset.is_multiple_of(tasks)).then_some(offset);
    let sync = if a.fsync_each {
        SyncMode::Every(1)
    } else if a.fsync {
        SyncMode::End
    } else {
        SyncMode::None
    };
    Ok(RawWorkload {
        target: Some(parent_of(&path)),
        ops,
        threads: Some(tasks),
        layout: Some(layout),
        xfer: Some(a.xfer.unwrap_or(256 << 10)),
        block: Some(a.block.unwrap_or(1 << 20)),
        segments: Some(a.segments.unwrap_or(1)),
        direct: a.direct,
        sync: Some(sync),
        reorder,
        reps: Some(a.reps.unwrap_or(1)),
        time_limit: (a.deadline > 0).then(|| Duration::from_secs(a.deadline)),
        verify: a.check_write || a.check_read,
        keep: a.keep,
        seed: a.seed,
        naming: Some(FileNaming::Ior { path }),
        rep_delay: (a.delay > 0).then(|| Duration::from_secs(a.delay)),
        ..Default::default()
    })
}
