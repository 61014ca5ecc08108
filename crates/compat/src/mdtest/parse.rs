//! mdtest's command line, read the way mdtest reads it, and what it means
//! as an `ioscale meta` workload ([`to_raw`]).

use crate::Usage;
use spec::{FileSize, MetaOp, RawMeta};
use std::path::PathBuf;
use std::time::Duration;

/// What the mdtest command line asked for.
#[derive(Debug, Default)]
pub struct MdArgs {
    /// `-n`: items (files and/or directories) each task makes.
    pub items: Option<u64>,
    /// `-I`: items per directory of the tree.
    pub items_per_dir: Option<u64>,
    /// `-z`: the depth of the directory tree.
    pub depth: u64,
    /// `-b`: the branching factor of the tree.
    pub branch: Option<u64>,
    /// `-d`: the test directory.
    pub dir: Option<String>,
    /// `-F`: files only.
    pub files_only: bool,
    /// `-D`: directories only.
    pub dirs_only: bool,
    /// `-u`: each task in a directory of its own.
    pub unique_dir: bool,
    /// `-L`: items in the tree's leaves only.
    pub leaf_only: bool,
    /// `-N`: the stride between the task that makes an item and the one that stats or reads it.
    pub stride: u64,
    /// `-i`: the iterations.
    pub iterations: Option<u64>,
    /// `-w`: bytes written into each file made.
    pub write_bytes: u64,
    /// `-e`: bytes read from each file (default: as `-w`).
    pub read_bytes: Option<u64>,
    /// `-y`: fsync each file after its write.
    pub sync_file: bool,
    /// `-Y`: sync after each phase.
    pub sync_phase: bool,
    /// `-X`: check the data read.
    pub verify: bool,
    /// `-C`: the create phase.
    pub create: bool,
    /// `-T`: the stat phase.
    pub stat: bool,
    /// `-E`: the read phase.
    pub read: bool,
    /// `-r`: the remove phase.
    pub remove: bool,
    /// `-W`: the stonewall in seconds (0: none).
    pub stonewall: u64,
    /// `-P`: print both rates and times.
    pub rate_and_time: bool,
    /// `-Z`: print times instead of rates.
    pub time_only: bool,
    /// `--tasks N` (ioscale's): the tasks, which mdtest takes from mpirun.
    pub tasks: Option<u64>,
    /// `--print-spec` (ioscale's): print the checked workload and run nothing.
    pub print_spec: bool,
    /// `--progress MODE` (ioscale's; mdtest has no such option).
    pub progress: Option<crate::progress::ProgressMode>,
    /// `-h` or `--help`.
    pub help: bool,
}

/// mdtest options that take a value.
pub const VALUE_OPTS: &str = "abdeIinNVwWz";
/// mdtest flags ioscale supports.
pub const FLAG_OPTS: &str = "CDEFLPrTuvXyYZ";

/// The getopt-style syntax of the options above.
pub const SHORT: crate::args::ShortOpts<MdArgs> = crate::args::ShortOpts {
    tool: "mdtest",
    cmd: "mdtest",
    value: VALUE_OPTS,
    flags: FLAG_OPTS,
    unsupported,
    operand_hint: "name the directory with -d",
    help: |a| a.help = true,
    apply_value,
    apply_flag,
};

pub use crate::args::usage;

/// mdtest options ioscale refuses, with the nearest native equivalent.
pub fn unsupported(opt: &str) -> Option<&'static str> {
    Some(match opt {
        "-B" => "no barriers is not supported: every ioscale phase starts at a barrier; the nearest is mdtest's default (no -B)",
        "-c" => "collective creates are not supported: every task creates its own items (nearest: `ioscale meta --threads N`)",
        "-S" => "shared file access is not supported: ioscale's items are one per task; for one shared file use `ioscale run --layout shared`",
        "-k" => "mknod is not supported: files are created with open(O_CREAT) (nearest: -F -C, `ioscale meta --ops create`)",
        "-R" => "random stat order is not supported: items are visited in order (nearest: -T, `ioscale meta --ops stat`)",
        "-t" => "timing the unique-directory overhead is not supported: per-task directories are made untimed (nearest: -u)",
        "-f" | "-l" | "-s" => {
            "task ranges (-f/-l/-s) are not supported: run one task count per command, or use `ioscale sweep --threads 1..N -- meta …`"
        }
        "-p" => "a pre-iteration delay is not supported: iterations run back to back (nearest: -i N, `ioscale meta --reps N`)",
        "-x" => "a stonewall status file is not supported: use -W N (`ioscale meta --time Ns`) in one run",
        "-G" => {
            "a buffer offset for the data is not supported: ioscale writes its own pattern; the nearest is -X \
             (`ioscale meta --verify --seed N`), whose pattern depends on the seed"
        }
        "-g" => "Lustre directory layouts are not supported: no nearest option (ioscale sets no striping; use lfs setstripe on -d first)",
        "-O" => "not an mdtest 4.0 option (mdtest refuses it): see `ioscale mdtest --help` for the options and docs/compat.md for the nearest native ones",
        _ => return None,
    })
}

/// mdtest 4.0's long options (and its POSIX backend's) that ioscale
/// refuses, each with the nearest native option or why there is none.
pub fn unsupported_long(name: &str) -> Option<&'static str> {
    Some(match name {
        "posix.odirect" => {
            "O_DIRECT for metadata tests is not supported: ioscale's meta engine uses buffered calls; \
             the nearest is `ioscale run --direct` for data, or -y (`ioscale meta --fsync`) to reach the device"
        }
        "posix.rangelocks" => "range locks are not supported: ioscale takes no locks; the nearest is mdtest's default (no --posix.rangelocks)",
        "verify-write" => {
            "checking right after each write is not supported: use -X with a read phase (`ioscale meta --verify`), \
             which checks every byte of every file"
        }
        "showRankStatistics" | "print-all-procs" => {
            "per-rank statistics are not printed: the nearest is `ioscale meta --per-worker --json FILE`, whose \
             `workers` and `files.threads` hold every task's count and time"
        }
        "saveRankPerformanceDetails" => {
            "a per-rank CSV is not supported: the nearest is `ioscale meta --json FILE` (every task's count and time)"
        }
        "run-cmd-before-phase" | "run-cmd-after-phase" => {
            "running a command around each phase is not supported: the nearest is one phase per command (-C, -T, -E, -r \
             in separate runs, `ioscale meta --ops OP`) with the command in between"
        }
        "dataPacketType" => "data packet types are not supported: the nearest is -X (`ioscale meta --verify`), ioscale's own pattern",
        "random-seed" => "random stat order (-R) is not supported, so neither is its seed: the nearest is -T (`ioscale meta --ops stat`) in order",
        "allocateBufferOnGPU" => "GPU buffers are not supported: no nearest option (ioscale's buffers are host memory)",
        "warningAsErrors" => {
            "no nearest option: ioscale's warnings describe how to read the figures and never change the exit code; \
             errors already end with exit 1 (I/O, data check) or 2 (setup)"
        }
        _ => return None,
    })
}

/// A count option's value, or a usage error naming `opt`.
pub fn count(opt: &str, v: &str) -> Result<u64, Usage> {
    spec::parse_count(v).map_err(|e| usage(format!("{opt} {v}: {e}")))
}

/// Applies a value option (a letter of [`VALUE_OPTS`]) with its value.
pub fn apply_value(a: &mut MdArgs, c: char, v: &str) -> Result<(), Usage> {
    let opt = format!("-{c}");
    let opt = opt.as_str();
    match c {
        'a' => crate::args::posix_api(v, "calls (use -a POSIX)")?,
        'b' => a.branch = Some(count(opt, v)?),
        'd' => {
            if v.contains('@') {
                return Err(usage(format!(
                    "-d {v}: several test directories are not supported: give one; to compare \
                     targets use `ioscale sweep --target A,B -- meta …`"
                )));
            }
            a.dir = Some(v.to_string())
        }
        'e' => a.read_bytes = Some(spec::parse_size(v).map_err(|e| usage(format!("-e {v}: {e}")))?),
        'I' => a.items_per_dir = Some(count(opt, v)?),
        'i' => a.iterations = Some(count(opt, v)?),
        'n' => a.items = Some(count(opt, v)?),
        'N' => a.stride = count(opt, v)?,
        'V' => {
            count(opt, v)?;
        }
        'w' => a.write_bytes = spec::parse_size(v).map_err(|e| usage(format!("-w {v}: {e}")))?,
        'W' => a.stonewall = count(opt, v)?,
        'z' => a.depth = count(opt, v)?,
        _ => unreachable!("only VALUE_OPTS reach here"),
    }
    Ok(())
}

/// Applies a flag (a letter of [`FLAG_OPTS`]).
pub fn apply_flag(a: &mut MdArgs, c: char) {
    match c {
        'C' => a.create = true,
        'D' => a.dirs_only = true,
        'E' => a.read = true,
        'F' => a.files_only = true,
        'L' => a.leaf_only = true,
        'P' => a.rate_and_time = true,
        'r' => a.remove = true,
        'T' => a.stat = true,
        'u' => a.unique_dir = true,
        'v' => {}
        'X' => a.verify = true,
        'y' => a.sync_file = true,
        'Y' => a.sync_phase = true,
        'Z' => a.time_only = true,
        _ => unreachable!("only FLAG_OPTS reach here"),
    }
}

/// First stage: mdtest's syntax into [`MdArgs`].
pub fn parse(args: &[String]) -> Result<MdArgs, Usage> {
    let mut a = MdArgs::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            match name {
                "help" => a.help = true,
                "print-spec" => a.print_spec = true,
                "progress" => {
                    let v = match inline {
                        Some(v) => v,
                        None => {
                            let v = args.get(i).ok_or_else(|| {
                                usage("--progress needs auto, bar, plain or none")
                            })?;
                            i += 1;
                            v.clone()
                        }
                    };
                    a.progress = Some(crate::args::progress_value(&v)?);
                }
                "tasks" => {
                    let v = match inline {
                        Some(v) => v,
                        None => {
                            let v = args
                                .get(i)
                                .ok_or_else(|| usage("--tasks needs a number"))?;
                            i += 1;
                            v.clone()
                        }
                    };
                    a.tasks = Some(count("--tasks", &v)?);
                }
                "verify-read" => {
                    if inline.is_some() {
                        return Err(usage("--verify-read takes no value (it is -X)"));
                    }
                    a.verify = true;
                }
                _ if unsupported_long(name).is_some() => {
                    let why = unsupported_long(name).unwrap_or_default();
                    return Err(usage(format!("--{name}: {why}")));
                }
                _ => {
                    return Err(usage(format!(
                        "--{name}: not an option ioscale's mdtest front-end supports; see `ioscale mdtest \
                         --help` and docs/compat.md for the nearest native option"
                    )))
                }
            }
            continue;
        }
        crate::args::read_short(&SHORT, &mut a, arg, args, &mut i)?;
    }
    Ok(a)
}

/// Directories in mdtest's tree of depth `z` and branching `b`.
pub fn dirs_in_tree(z: u64, b: u64) -> Result<u64, Usage> {
    if z == 0 || b == 0 {
        return Ok(1);
    }
    if b == 1 {
        return z
            .checked_add(1)
            .ok_or_else(|| usage("-z/-b: the tree is too large"));
    }
    let mut total: u64 = 0;
    let mut level: u64 = 1;
    for _ in 0..=z {
        total = total
            .checked_add(level)
            .ok_or_else(|| usage("-z/-b: the tree is too large"))?;
        level = level
            .checked_mul(b)
            .ok_or_else(|| usage("-z/-b: the tree is too large"))?;
    }
    Ok(total)
}

/// The phase sequence of one mdtest iteration with `items` per task.
pub fn ops_of(a: &MdArgs, items: u64) -> Vec<MetaOp> {
    let (files, dirs) = if !a.files_only && !a.dirs_only {
        (true, true)
    } else {
        (a.files_only, a.dirs_only)
    };
    let all = !a.create && !a.stat && !a.read && !a.remove;
    let (c, s, r, d) = if all {
        (true, true, true, true)
    } else {
        (a.create, a.stat, a.read, a.remove)
    };
    let mut ops = Vec::new();
    if dirs {
        if c {
            ops.push(MetaOp::Mkdir);
        }
        if s {
            ops.push(MetaOp::StatDir);
        }
        // mdtest renames directories only when no phase is named, after
        // their stat (and only with more than one item: `items > 1`).
        if all && items > 1 {
            ops.push(MetaOp::RenameDir);
        }
        if d {
            ops.push(MetaOp::Rmdir);
        }
    }
    if files {
        if c {
            ops.push(MetaOp::Create);
        }
        if s {
            ops.push(MetaOp::Stat);
        }
        if r {
            ops.push(MetaOp::Read);
        }
        if d {
            ops.push(MetaOp::Delete);
        }
    }
    ops
}

/// Second stage: mdtest's meaning as a metadata workload, and the notes
/// for where ioscale's meaning differs.
/// The directories of -z/-b's tree that hold items: all of them, or with
/// -L the b^z leaves.
fn item_dirs(a: &MdArgs, branch: u64, leaf: bool) -> Result<u64, Usage> {
    Ok(if leaf {
        if branch <= 1 {
            1
        } else {
            u32::try_from(a.depth)
                .ok()
                .and_then(|z| branch.checked_pow(z))
                .ok_or_else(|| usage("-z/-b: the tree is too large"))?
        }
    } else {
        dirs_in_tree(a.depth, branch)?
    })
}

/// Items per task and per directory from -n and -I over `ndirs`
/// directories, rounded as mdtest rounds (said in `notes`).
fn item_counts(
    a: &MdArgs,
    ndirs: u64,
    branch: u64,
    leaf: bool,
    notes: &mut Vec<String>,
) -> Result<(u64, Option<u64>), Usage> {
    let dirs_word = if leaf {
        "leaf directories"
    } else {
        "directories"
    };
    let counts = match (a.items, a.items_per_dir) {
        (_, Some(0)) => return Err(usage("-I 0: give at least one item per directory")),
        (Some(n), Some(i)) => {
            if a.unique_dir {
                return Err(usage(
                    "-n with -I and -u: only specify the number of items or the number of items per directory",
                ));
            }
            if n % i != 0 {
                return Err(usage(format!("-n {n} -I {i}: items must be a multiple of items per directory")));
            }
            (n, Some(i))
        }
        (None, Some(i)) => (
            i.checked_mul(ndirs)
                .ok_or_else(|| usage("-I x tree: too many items"))?,
            Some(i),
        ),
        (Some(n), None) if ndirs > 1 || leaf => {
            let per = n / ndirs;
            if per == 0 {
                return Err(usage(format!(
                    "-n {n}: fewer items than the {ndirs} {dirs_word} of the tree (-z {} -b {branch})",
                    a.depth
                )));
            }
            if per * ndirs != n {
                notes.push(format!(
                    "-n {n}: {} items per task ({per} in each of the {ndirs} {dirs_word}), as mdtest rounds",
                    per * ndirs
                ));
            }
            (per * ndirs, Some(per))
        }
        (Some(n), None) => (n, None),
        (None, None) => {
            return Err(usage(
                "-n N or -I N is required: the number of items per task (mdtest runs nothing without it)",
            ))
        }
    };
    Ok(counts)
}

/// Second stage: mdtest's meaning of the options, as an `ioscale meta`
/// workload, and the notes to say before the run.
pub fn to_raw(a: &MdArgs) -> Result<(RawMeta, Vec<String>), Usage> {
    let mut notes = Vec::new();
    let tasks = a.tasks.unwrap_or(1);
    // Task t stats, reads and removes the items of task (t + N) mod tasks,
    // as mdtest does; a stride that wraps to the task itself is its own.
    let stride = a.stride % tasks.max(1);
    if a.stride != 0 && stride == 0 {
        notes.push(format!(
            "-N {}: with {tasks} task(s) the stride wraps to each task's own items",
            a.stride
        ));
    }
    let branch = a.branch.unwrap_or(1);
    if a.depth > 0 && branch == 0 {
        return Err(usage(
            "-b 0 with -z: the branching factor must be at least 1",
        ));
    }
    // -L: items only in the leaves, the b^z directories at depth z.
    let leaf = a.leaf_only && a.depth > 0;
    if a.stonewall > 0 && a.depth > 0 && branch > 1 {
        return Err(usage(
            "-W with -b > 1: the stonewall timer works only with a branching factor of 1, as in mdtest",
        ));
    }
    let ndirs = item_dirs(a, branch, leaf)?;
    let (items, per_dir) = item_counts(a, ndirs, branch, leaf, &mut notes)?;
    if items == 0 {
        return Err(usage("-n 0: give at least one item per task"));
    }
    if a.verify && a.read_bytes.unwrap_or(0) == 0 {
        // mdtest 4.0 refuses it too ("Verify read requires that read bytes
        // is > 0").
        return Err(usage(
            "-X (--verify-read) needs -e N > 0 (bytes read from each file), as in mdtest 4.0: \
             add -e with the -w size (ioscale checks every byte, `ioscale meta --verify`)",
        ));
    }
    let ops = ops_of(a, items);
    if let Some(e) = a.read_bytes {
        if e != a.write_bytes && ops.contains(&MetaOp::Read) {
            notes.push(format!(
                "-e {e}: ioscale reads each file to its end (the size it was written with, -w {})",
                a.write_bytes
            ));
        }
    }
    let remove = ops
        .iter()
        .any(|o| matches!(o, MetaOp::Delete | MetaOp::Rmdir));
    let dir = a.dir.clone().unwrap_or_else(|| "./out".into());
    Ok((
        RawMeta {
            target: Some(PathBuf::from(dir)),
            ops,
            threads: Some(a.tasks.unwrap_or(1)),
            files: Some(items),
            file_size: Some(FileSize::Fixed {
                bytes: a.write_bytes,
            }),
            same_dir: !a.unique_dir,
            files_per_dir: per_dir,
            dirs_per_dir: per_dir.map(|_| branch.max(1)),
            fsync: a.sync_file,
            sync_phase: a.sync_phase,
            verify: a.verify,
            stride: (stride > 0).then_some(stride),
            leaf_depth: leaf.then_some(a.depth),
            time_limit: (a.stonewall > 0).then(|| Duration::from_secs(a.stonewall)),
            reps: Some(a.iterations.unwrap_or(1)),
            // What this run does not remove stays for a later -T/-E/-r run.
            keep: !remove,
            // stat(2) by the full path, and no read(2) past the data.
            mdtest_calls: true,
            ..Default::default()
        },
        notes,
    ))
}
