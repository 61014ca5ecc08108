//! `ioscale ior …` (and the binary started as `ior`): IOR's command line.
//!
//! Options are read the way IOR reads them — `-b 1m`, `-b=256m`, `-b1m`
//! and bundled flags such as `-wrk` — into a [`RawWorkload`] with IOR's
//! defaults (`-t 256k -b 1m -s 1`, write and read when neither -w nor -r
//! is given). Tasks (-N) run as threads of one process, or, started by
//! mpirun or srun, as one MPI rank each. Files are named as
//! IOR names them (see [`bench::dataset::ior_names`]) and removed at the end
//! unless -k, by the same safety rules as every ioscale run.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use report::Exporter;
use spec::{parse_count, parse_size, FileNaming, Layout, Op, RawWorkload, SyncMode, WorkloadSpec};

use coord::Coordinator;

use super::Usage;
use bench::dataset::parent_of;
use render::{IorCsvExporter, IorInfo, IorJsonExporter, IorTextExporter};

pub mod render;

/// The IOR version whose command line and layout are followed.
pub const IOR_VERSION: &str = "4.0.0";

/// `ioscale ior --help`.
pub const HELP: &str = "\
ioscale ior: run an IOR command line on ioscale's engine (tasks run as threads, or as MPI
ranks when started by mpirun or srun)

Usage: ioscale ior [OPTIONS]      (or a symlink named `ior` to the ioscale binary)

Options (IOR's; values as `-b 1m`, `-b=1m` or `-b1m`):
  -a S   API: POSIX only                  -b N   block size per task [1m]
  -t N   transfer size [256k]             -s N   segments [1]
  -F     one file per task                -u     a directory per task (with -F)
  -o S   test file name [testFile]        -E     use an existing file (see docs/compat.md)
  -N N   tasks (threads; MPI: ranks) [1]  -k     keep the files
  -w     write                            -r     read (neither: both)
  -W     check the data after writing     -R     check the data when reading
  -G N   data pattern seed                -C     read another task's data (offset -Q)
  -Q N   task offset for -C [1]           -z     random offsets within the file
  -e     fsync at the end of each write   -Y     fsync after every write
  -g     barriers between phases (always) -D N   stonewall deadline in seconds (0 off)
  -i N   repetitions [1]                  -d N   seconds between repetitions
  -T N   stop the whole test after N minutes
  -x     single transfer attempt (note)   -v     more output (-vv, -vvv)
  -A N   reference number
  -O summaryFormat=JSON|CSV               -O summaryFile=PATH
  -O NAME=VALUE  IOR's directive for an option above (blockSize=1m is -b 1m)
  --posix.odirect  O_DIRECT
  --print-spec   print the ioscale workload the command line becomes, and exit
  --progress M   live progress on standard error: auto (a live line when it is
                 a terminal, else nothing), bar, plain, none [IOSCALE_PROGRESS]
  -h, --help     this help

Examples:
  ioscale ior --posix.odirect -t 1m -b 1m -s 2048 -g -v -w -i 1 -D 0 \\
      -o /efs/ior/ior.bin
  ioscale ior -N 8 --posix.odirect -t 1m -b 1m -s 256 -w -i 1 -F -u -k \\
      -o /efs/ior/ior.bin
  ioscale ior -N 8 --posix.odirect -t 1m -b 1m -s 256 -r -i 1 -F -u \\
      -o /efs/ior/ior.bin
  ioscale ior -N 16 -w -r -o=/shared/test_dir -b=256m -a=POSIX -i=5 -F -z \\
      -t=64m -C
  ioscale ior -w -W -k -o /mnt/fs/check.bin && \\
      ioscale ior -r -R -o /mnt/fs/check.bin
  ioscale ior -w -r -o /mnt/fs/f -O summaryFormat=JSON -O summaryFile=ior.json

Unsupported IOR options are refused with the nearest ioscale option; the full
mapping is in docs/compat.md. Exit codes: 0 ran clean, 1 I/O errors or failed
data check, 2 usage or setup error, 130 interrupted.
";

/// What the IOR command line asked for, before the workload is built.
#[derive(Debug, Default)]
struct IorArgs {
    api: Option<String>,
    block: Option<u64>,
    xfer: Option<u64>,
    segments: Option<u64>,
    fpp: bool,
    unique_dir: bool,
    out: Option<String>,
    existing: bool,
    tasks: Option<u64>,
    keep: bool,
    write: bool,
    read: bool,
    check_write: bool,
    check_read: bool,
    seed: Option<u64>,
    reorder: bool,
    task_offset: Option<u64>,
    random: bool,
    fsync: bool,
    fsync_each: bool,
    deadline: u64,
    wearout: bool,
    reps: Option<u64>,
    delay: u64,
    max_minutes: u64,
    single_xfer: bool,
    verbose: u32,
    ref_num: i64,
    direct: bool,
    summary_format: Option<String>,
    summary_file: Option<PathBuf>,
    print_spec: bool,
    /// `--progress MODE` (ioscale's; IOR has no such option).
    progress: Option<crate::progress::ProgressMode>,
    help: bool,
}

/// ioscale's flags that workload checks name, and IOR's options for them.
const NATIVE_FLAGS: &[(&str, &str)] = &[
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
const VALUE_OPTS: &str = "abtsoNiGQDdTOA";
/// IOR flags ioscale supports.
const FLAG_OPTS: &str = "FuEkwrWRCzeYgxv";

/// The getopt-style syntax of the options above.
const SHORT: super::ShortOpts = super::ShortOpts {
    tool: "IOR",
    cmd: "ior",
    value: VALUE_OPTS,
    flags: FLAG_OPTS,
    unsupported,
    operand_hint: "name the file with -o",
};

/// The IOR options ioscale refuses, with the nearest native equivalent.
fn unsupported(opt: &str) -> Option<&'static str> {
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
fn unsupported_long(name: &str) -> Option<&'static str> {
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

fn usage(msg: impl Into<String>) -> Usage {
    Usage(msg.into())
}

fn size_of(opt: &str, v: &str) -> Result<u64, Usage> {
    parse_size(v).map_err(|e| usage(format!("{opt} {v}: {e}")))
}

fn count_of(opt: &str, v: &str) -> Result<u64, Usage> {
    parse_count(v).map_err(|e| usage(format!("{opt} {v}: {e}")))
}

/// IOR's `-O` directives that are another spelling of a short option
/// (IOR 4.0's `DecodeDirective`, names compared without case): the option,
/// and whether it takes a value (a flag directive is `NAME=0|1`).
const DIRECTIVES: &[(&str, char, bool)] = &[
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

fn apply_o(a: &mut IorArgs, v: &str) -> Result<(), Usage> {
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

fn apply_value(a: &mut IorArgs, c: char, v: &str) -> Result<(), Usage> {
    let opt = format!("-{c}");
    let opt = opt.as_str();
    match c {
        'a' => {
            if !v.eq_ignore_ascii_case("POSIX") {
                return Err(usage(format!(
                    "-a {v}: not supported: ioscale issues POSIX pread/pwrite (use -a POSIX; for \
                     asynchronous I/O the nearest native option is `ioscale run --engine io_uring`)"
                )));
            }
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

fn apply_flag(a: &mut IorArgs, c: char) {
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
fn parse(args: &[String]) -> Result<IorArgs, Usage> {
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
                    a.progress = Some(super::progress_value(v)?);
                }
                _ if long.starts_with("progress=") => {
                    a.progress = Some(super::progress_value(&long["progress=".len()..])?);
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
        match super::short_option(&SHORT, arg, args, &mut i)? {
            super::Short::Help => a.help = true,
            super::Short::Value(c, v) => apply_value(&mut a, c, &v)?,
            super::Short::Flags(fs) => fs.chars().for_each(|f| apply_flag(&mut a, f)),
        }
    }
    Ok(a)
}

/// Second stage: IOR's meaning of the options, as an ioscale workload.
fn to_raw(a: &IorArgs) -> Result<RawWorkload, Usage> {
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

fn info_for(a: &IorArgs, spec: &WorkloadSpec, command_line: String) -> IorInfo {
    let test_filename = a.out.clone().unwrap_or_else(|| "testFile".into());
    IorInfo {
        ior_version: IOR_VERSION.into(),
        command_line,
        began: String::new(),
        finished: String::new(),
        machine: String::new(),
        path: ior_path(&test_filename, a.fpp, a.unique_dir),
        test_filename,
        fs: None,
        api: "POSIX".into(),
        file_per_proc: a.fpp,
        unique_dir: a.unique_dir,
        random_offsets: a.random,
        reorder_tasks: a.reorder,
        task_offset: a.task_offset.unwrap_or(1) as u32,
        tasks: spec.threads,
        repetitions: spec.reps,
        xfer: spec.xfer,
        block: spec.block,
        segments: spec.segments,
        verbose: a.verbose,
        deadline_s: a.deadline,
        wearout: a.wearout,
        ref_num: a.ref_num,
        read_is_check: a.check_write && !a.read && a.write,
        write_file: a.write || !a.read,
        read_file: a.read || !a.write,
        check_write: a.check_write,
        check_read: a.check_read,
        keep_file: a.keep,
        use_existing: a.existing,
        fsync: a.fsync,
        fsync_per_write: a.fsync_each,
        single_xfer: a.single_xfer,
        inter_test_delay: a.delay,
        max_minutes: a.max_minutes,
        seed: a.seed.map_or(0, |s| s as i64),
    }
}

/// IOR's `Path`: the name of the first task's file, as IOR 4.0 prints it
/// (its `GetTestFileName` for rank 0): the `-o` name of a shared file,
/// `NAME.00000000` with -F, `DIR/0/BASE.00000000` with -F -u.
fn ior_path(test_filename: &str, fpp: bool, unique_dir: bool) -> String {
    if !fpp {
        return test_filename.to_string();
    }
    if unique_dir {
        let p = std::path::Path::new(test_filename);
        let base = p
            .file_name()
            .map(|b| b.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = match p.parent().map(|d| d.to_string_lossy().into_owned()) {
            Some(d) if !d.is_empty() => format!("{d}/"),
            _ => String::new(),
        };
        return format!("{dir}0/{base}.00000000");
    }
    format!("{test_filename}.00000000")
}

/// Runs the IOR front-end; `prog` is how it was called (`ior` or
/// `ioscale ior`), for IOR's `Command line` header. Started by mpirun or
/// srun, each IOR task is one MPI rank, as with IOR itself.
pub fn main(prog: &str, args: &[String]) -> anyhow::Result<i32> {
    crate::as_ranks("ior", |coord| ranks_main(prog, args, coord))
}

fn ranks_main(prog: &str, args: &[String], coord: &dyn Coordinator) -> anyhow::Result<i32> {
    let root = coord.rank() == 0;
    let ranks = coord.size();
    let mut a = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            if root {
                eprintln!("ior: error: {e}");
            }
            return Ok(2);
        }
    };
    if a.help {
        if root {
            print!("{HELP}");
        }
        return Ok(0);
    }
    let progress = match super::progress_mode("ior", a.progress, root) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let shown_offset = a.task_offset.unwrap_or(1) as u32;
    if ranks > 1 {
        // Each task is a rank; -N, as in IOR, may only repeat their number.
        if let Some(n) = a.tasks.filter(|&n| n != ranks as u64) {
            if root {
                eprintln!(
                    "ior: error: -N {n}: the launcher started {ranks} tasks; under mpirun or srun                      every rank is one IOR task, so drop -N or start {n} ranks (mpirun -np {n})"
                );
            }
            return Ok(2);
        }
        a.tasks = Some(ranks as u64);
        if a.reorder {
            // IOR -C reads the data of the task -Q × tasks-per-node further
            // on, so the reader sits on another node than the writer.
            let layout = bench::cluster::Layout::discover(coord, 1)?;
            if layout.nodes() > 1 {
                let q = a.task_offset.unwrap_or(1);
                a.task_offset = Some(q.saturating_mul(layout.tasks_per_node() as u64));
            }
        }
    }
    let mut spec = match to_raw(&a).and_then(|r| {
        r.build()
            .map_err(|e| usage(super::in_tool_terms("IOR", &e.to_string(), NATIVE_FLAGS)))
    }) {
        Ok(s) => s,
        Err(e) => {
            if root {
                eprintln!("ior: error: {e}");
            }
            return Ok(2);
        }
    };
    if a.print_spec {
        if root {
            println!("{}", serde_json::to_string_pretty(&spec)?);
        }
        return Ok(0);
    }
    let outputs = [("-O summaryFile", a.summary_file.as_deref())];
    if let Some(code) = crate::check_outputs(coord, "ior", &outputs) {
        return Ok(code);
    }
    if root && a.single_xfer {
        eprintln!(
            "ior: note: -x: ioscale completes a short transfer by issuing the rest (as IOR does without -x); \
             a transfer that cannot complete is an error either way"
        );
    }
    if root && a.existing {
        eprintln!(
            "ior: note: -E: ioscale writes into an existing test file only if an earlier ioscale run made it \
             (its marker says so); it never overwrites other files"
        );
    }
    let mut command_line = vec![prog.to_string()];
    command_line.extend(args.iter().cloned());
    let mut info = info_for(&a, &spec, command_line.join(" "));
    info.task_offset = shown_offset;
    if ranks > 1 {
        // The spec was checked for all tasks; this rank runs one of them.
        spec.threads = 1;
    }

    let stop = crate::install_signals()?;
    let timed_out = Arc::new(AtomicBool::new(false));
    if a.max_minutes > 0 {
        let (stop, timed_out) = (Arc::clone(&stop), Arc::clone(&timed_out));
        let limit = Duration::from_secs(a.max_minutes.saturating_mul(60));
        std::thread::spawn(move || {
            if safefs::sleep_or_stop(limit, &stop) == safefs::Waited::Elapsed {
                timed_out.store(true, Ordering::Relaxed);
                stop.store(true, Ordering::Relaxed);
            }
        });
    }
    info.began = super::ctime_now();
    let mut argv = vec!["ior".to_string()];
    argv.extend(args.iter().cloned());
    let live = super::live(progress, root, spec.reps, spec.ops.len(), ranks);
    let outcome = bench::run::run_with(&spec, argv, stop, coord);
    drop(live);
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            if root {
                eprintln!("ior: error: {e}");
            }
            return Ok(e.exit_code());
        }
    };
    if !root {
        return Ok(outcome.exit_code());
    }
    info.finished = super::ctime_now();
    let rs = &outcome.results;
    info.machine = format!("Linux {}", rs.host.hostname);
    info.fs = super::fs_stats(&spec.target);
    super::print_errors("ior", rs);
    // A failed data check is on standard error whatever the document
    // format (the JSON and CSV carry it too).
    super::print_mismatches("ior", rs);
    for w in &rs.warnings {
        // In IOR's own words: O_DIRECT is --posix.odirect (or -O useO_DIRECT=1).
        let w = w.replace("Use --direct", "Use --posix.odirect").replace(
            ", or --drop-caches before reads",
            ", or drop the page cache before reads (IOR has no option for it; \
                 `ioscale run --drop-caches` does)",
        );
        eprintln!("ior: warning: {w}");
    }
    let text = IorTextExporter { info: info.clone() }.render(rs)?;
    let doc = match a.summary_format.as_deref() {
        Some("JSON") => Some(IorJsonExporter { info: info.clone() }.render(rs)?),
        Some("CSV") => Some(IorCsvExporter { info: info.clone() }.render(rs)?),
        _ => None,
    };
    let mut write_err = None;
    let stdout_bytes = match (&a.summary_file, doc) {
        (Some(p), doc) => {
            if let Err(e) = crate::output::write_atomic(p, doc.as_deref().unwrap_or(&text)) {
                write_err = Some(e);
            }
            text
        }
        (None, Some(doc)) => doc,
        (None, None) => text,
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&stdout_bytes);
    let _ = out.flush();
    for n in &outcome.notes {
        eprintln!("ior: {n}");
    }
    if timed_out.load(Ordering::Relaxed) {
        eprintln!(
            "ior: -T {}: the test stopped after {} minute(s); the figures cover the work done until then",
            a.max_minutes, a.max_minutes
        );
    }
    let mut code = outcome.exit_code();
    if code == 130 && timed_out.load(Ordering::Relaxed) {
        code = if rs.errors.is_empty()
            && !rs
                .phases
                .iter()
                .any(|p| p.errors > 0 || p.verify.as_ref().is_some_and(|v| v.bad_bytes > 0))
        {
            0
        } else {
            1
        };
    }
    if let Some(e) = write_err {
        eprintln!("ior: error: {e:#}");
        code = code.max(1);
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn both_value_syntaxes() {
        let a = parse(&argv("-b=256m -t 64m -s4 -a=POSIX -i=5 -wrk")).unwrap();
        assert_eq!(a.block, Some(256 << 20));
        assert_eq!(a.xfer, Some(64 << 20));
        assert_eq!(a.segments, Some(4));
        assert_eq!(a.reps, Some(5));
        assert!(a.write && a.read && a.keep);
    }

    #[test]
    fn unsupported_names_the_option_and_the_native_one() {
        let e = parse(&argv("-w -Z")).unwrap_err().to_string();
        assert!(e.contains("-Z") && e.contains("--reorder-offset"), "{e}");
        let e = parse(&argv("-a MPIIO")).unwrap_err().to_string();
        assert!(e.contains("-a MPIIO") && e.contains("io_uring"), "{e}");
        let e = parse(&argv("--mpiio.hints=x")).unwrap_err().to_string();
        assert!(e.contains("--mpiio.hints"), "{e}");
    }

    #[test]
    fn o_directives_are_their_short_options() {
        let spec = |s: &str| to_raw(&parse(&argv(s)).unwrap()).unwrap().build().unwrap();
        let by_o = spec(
            "-O blockSize=4m,transferSize=1m -O segmentCount=2,filePerProc=1,keepFile=1 -O writeFile=1,numTasks=2 -o /tmp/x",
        );
        let short = spec("-b 4m -t 1m -s 2 -F -k -w -N 2 -o /tmp/x");
        assert_eq!(
            serde_json::to_value(&by_o).unwrap(),
            serde_json::to_value(&short).unwrap()
        );
        // A flag directive set to 0 leaves the flag off.
        assert!(!parse(&argv("-O keepFile=0")).unwrap().keep);
        // Refused directives say what their short option's refusal says.
        let e = parse(&argv("-O reorderTasksRandom=1"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("reorderTasksRandom") && e.contains("-C with -Q N"),
            "{e}"
        );
    }

    #[test]
    fn neither_w_nor_r_means_both() {
        let s = to_raw(&parse(&argv("-o /tmp/x")).unwrap())
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(s.ops, vec![Op::Write, Op::Read]);
        assert_eq!((s.xfer, s.block, s.segments), (256 << 10, 1 << 20, 1));
    }
}
