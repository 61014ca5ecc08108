//! `ioscale mdtest …` (and the binary started as `mdtest`): mdtest's
//! command line.
//!
//! Options are read the way mdtest reads them (`-n 100`, `-n=100`,
//! `-n100`, bundled flags such as `-FC`) into a [`RawMeta`] for `ioscale
//! meta`'s driver and engine. mdtest's iteration — directory creation,
//! stat and removal, then file creation, stat, read and removal — becomes
//! the phase sequence `mkdir,stat-dir,rmdir,create,stat,read,delete`,
//! narrowed by -F/-D and -C/-T/-E/-r. mdtest's tree (depth -z, branching
//! -b, -I items per directory) is meta's `--files-per-dir`/`--dirs-per-dir`
//! tree, which numbers directories breadth-first the same way. Tasks run
//! as threads of one process (`--tasks N`, ioscale's own option, in place
//! of `mpirun -np N`). What a run does not remove (-C without -r) stays
//! for a later -T/-E/-r run, under ioscale's marker.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use report::Exporter;
use spec::{FileSize, MetaOp, RawMeta};

use super::Usage;
use render::{MdtestInfo, MdtestTextExporter};

pub mod render;

/// The mdtest version whose command line and layout are followed.
pub const MDTEST_VERSION: &str = "4.0.0";

/// `ioscale mdtest --help`.
pub const HELP: &str = "\
ioscale mdtest: run an mdtest command line on ioscale's meta engine (tasks run as threads)

Usage: ioscale mdtest [OPTIONS]      (or a symlink named `mdtest` to the ioscale binary)

Options (mdtest's; values as `-n 100`, `-n=100` or `-n100`):
  -n N   items (files and/or directories) per task
  -I N   items per directory of the tree       -z N   tree depth [0]
  -b N   tree branching factor [1]             -L     items at the leaf level of the tree only
  -d S   the directory to test in [./out]      -u     a working directory per task
  -F     files only                            -D     directories only
  -C     create only     -T  stat only         -E     read only      -r  remove only
  -w N   bytes written to each file            -e N   bytes read from each file
  -y     fsync each file after writing         -i N   iterations [1]
  -Y     syncfs after each phase (timed)       -X, --verify-read  check every byte read (needs -e)
  -W N   stonewall: stop each phase after N seconds
  -N N   task stride: stat/read/remove task (t+N)'s items      -a POSIX  API
  -P     print the time table after the rate table   -Z  print time instead of rate
  -v, -V N  verbosity (no extra output)
  --tasks N      tasks, as threads of one process [1] (ioscale's; under mpirun or srun,
                 threads per rank)
  --print-spec   print the ioscale workload the command line becomes, and exit
  --progress M   live progress on standard error: auto (a live line when it is
                 a terminal, else nothing), bar, plain, none [IOSCALE_PROGRESS]
  -h, --help     this help

Examples:
  ioscale mdtest --tasks 8 -n 1000 -F -u -d /mnt/fs/mdtest
  ioscale mdtest --tasks 4 -I 10 -z 2 -b 3 -i 3 -P -d /mnt/fs/mdtest
  ioscale mdtest --tasks 4 -n 500 -F -C -w 4096 -d /mnt/fs/md && \\
      ioscale mdtest --tasks 4 -n 500 -F -E -r -e 4096 -d /mnt/fs/md

Unsupported mdtest options are refused with the nearest ioscale option; the
full mapping is in docs/compat.md. Exit codes: 0 ran clean, 1 I/O errors,
2 usage or setup error, 130 interrupted.
";

/// What the mdtest command line asked for.
#[derive(Debug, Default)]
struct MdArgs {
    items: Option<u64>,
    items_per_dir: Option<u64>,
    depth: u64,
    branch: Option<u64>,
    dir: Option<String>,
    files_only: bool,
    dirs_only: bool,
    unique_dir: bool,
    leaf_only: bool,
    stride: u64,
    iterations: Option<u64>,
    write_bytes: u64,
    read_bytes: Option<u64>,
    sync_file: bool,
    sync_phase: bool,
    verify: bool,
    create: bool,
    stat: bool,
    read: bool,
    remove: bool,
    stonewall: u64,
    rate_and_time: bool,
    time_only: bool,
    tasks: Option<u64>,
    print_spec: bool,
    /// `--progress MODE` (ioscale's; mdtest has no such option).
    progress: Option<crate::progress::ProgressMode>,
    help: bool,
}

/// mdtest options that take a value.
const VALUE_OPTS: &str = "abdeIinNVwWz";
/// mdtest flags ioscale supports.
const FLAG_OPTS: &str = "CDEFLPrTuvXyYZ";

/// The getopt-style syntax of the options above.
const SHORT: super::ShortOpts = super::ShortOpts {
    tool: "mdtest",
    cmd: "mdtest",
    value: VALUE_OPTS,
    flags: FLAG_OPTS,
    unsupported,
    operand_hint: "name the directory with -d",
};

fn usage(msg: impl Into<String>) -> Usage {
    Usage(msg.into())
}

/// mdtest options ioscale refuses, with the nearest native equivalent.
fn unsupported(opt: &str) -> Option<&'static str> {
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
fn unsupported_long(name: &str) -> Option<&'static str> {
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
            "per-rank statistics are not printed: the nearest is `ioscale meta --json FILE`, whose `workers` and \
             `files.threads` hold every task's count and time"
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

fn count(opt: &str, v: &str) -> Result<u64, Usage> {
    spec::parse_count(v).map_err(|e| usage(format!("{opt} {v}: {e}")))
}

fn apply_value(a: &mut MdArgs, c: char, v: &str) -> Result<(), Usage> {
    let opt = format!("-{c}");
    let opt = opt.as_str();
    match c {
        'a' => {
            if !v.eq_ignore_ascii_case("POSIX") {
                return Err(usage(format!(
                    "-a {v}: not supported: ioscale issues POSIX calls (use -a POSIX)"
                )));
            }
        }
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

fn apply_flag(a: &mut MdArgs, c: char) {
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
fn parse(args: &[String]) -> Result<MdArgs, Usage> {
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
                    a.progress = Some(super::progress_value(&v)?);
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
        match super::short_option(&SHORT, arg, args, &mut i)? {
            super::Short::Help => a.help = true,
            super::Short::Value(c, v) => apply_value(&mut a, c, &v)?,
            super::Short::Flags(fs) => fs.chars().for_each(|f| apply_flag(&mut a, f)),
        }
    }
    Ok(a)
}

/// Directories in mdtest's tree of depth `z` and branching `b`.
fn dirs_in_tree(z: u64, b: u64) -> Result<u64, Usage> {
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

/// The phase sequence of one mdtest iteration.
fn ops_of(a: &MdArgs) -> Vec<MetaOp> {
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
fn to_raw(a: &MdArgs) -> Result<(RawMeta, Vec<String>), Usage> {
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
    let ndirs = if leaf {
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
    };
    let dirs_word = if leaf {
        "leaf directories"
    } else {
        "directories"
    };
    let (items, per_dir) = match (a.items, a.items_per_dir) {
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
    let ops = ops_of(a);
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
            ..Default::default()
        },
        notes,
    ))
}

/// mdtest's time stamps: `%m/%d/%Y %T` in local time.
fn timestamp() -> String {
    bench::host::local_now("%m/%d/%Y %H:%M:%S")
}

/// Runs the mdtest front-end; `prog` is how it was called (`mdtest` or
/// `ioscale mdtest`), for mdtest's `Command line used` line. Started by
/// mpirun or srun, each rank runs `--tasks` threads (1 unless given) and
/// rank 0 prints, as mdtest's rank 0 does.
pub fn main(prog: &str, args: &[String]) -> anyhow::Result<i32> {
    crate::as_ranks("mdtest", |coord| ranks_main(prog, args, coord))
}

fn ranks_main(prog: &str, args: &[String], coord: &dyn coord::Coordinator) -> anyhow::Result<i32> {
    let root = coord.rank() == 0;
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            if root {
                eprintln!("mdtest: error: {e}");
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
    let progress = match super::progress_mode("mdtest", a.progress, root) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let built = to_raw(&a).and_then(|(raw, notes)| {
        raw.build().map(|s| (s, notes)).map_err(|e| {
            const NATIVE_FLAGS: &[(&str, &str)] = &[
                ("--files", "-n (or -I)"),
                ("--file-size", "-w"),
                ("--files-per-dir", "-I"),
                ("--dirs-per-dir", "-b"),
                ("--time", "-W"),
            ];
            let msg = e.to_string().replace("--reps ", "-i ");
            usage(super::in_tool_terms("mdtest", &msg, NATIVE_FLAGS))
        })
    });
    let (spec, notes) = match built {
        Ok(s) => s,
        Err(e) => {
            if root {
                eprintln!("mdtest: error: {e}");
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
    if root {
        for n in &notes {
            eprintln!("mdtest: note: {n}");
        }
    }
    let began = timestamp();
    // mdtest makes the test directory (one level) when it is missing;
    // rank 0 does, before any rank looks at it.
    let mut made_dir = false;
    let mut mkdir = Ok(());
    if root && !spec.target.exists() {
        match std::fs::create_dir(&spec.target) {
            Ok(()) => made_dir = true,
            Err(e) => mkdir = Err(e),
        }
    }
    if let Err(e) = bench::cluster::root_check(coord, mkdir) {
        if let Some(e) = e {
            eprintln!(
                "mdtest: error: -d {}: unable to create the test directory: {e}",
                spec.target.display()
            );
        }
        return Ok(2);
    }
    let stop = crate::install_signals()?;
    let mut argv = vec!["mdtest".to_string()];
    argv.extend(args.iter().cloned());
    let live = super::live(progress, root, spec.reps, spec.ops.len(), coord.size());
    let outcome = bench::meta::run_with(&spec, argv, stop, coord);
    drop(live);
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            if made_dir {
                let _ = std::fs::remove_dir(&spec.target);
            }
            if root {
                eprintln!("mdtest: error: {e}");
            }
            return Ok(e.exit_code());
        }
    };
    if !root {
        return Ok(outcome.exit_code());
    }
    let rs = &outcome.results;
    super::print_errors("mdtest", rs);
    super::print_mismatches("mdtest", rs);
    for w in &rs.warnings {
        eprintln!("mdtest: warning: {w}");
    }
    // mdtest 4.0's Path is the test directory (-d) itself.
    let path = spec.target.clone();
    let mut command_line = prog.to_string();
    for x in args {
        command_line.push_str(&format!(" '{x}'"));
    }
    let (files, dirs) = if !a.files_only && !a.dirs_only {
        (true, true)
    } else {
        (a.files_only, a.dirs_only)
    };
    let info = MdtestInfo {
        mdtest_version: MDTEST_VERSION.into(),
        command_line,
        began,
        finished: timestamp(),
        tasks: spec.threads * coord.size(),
        fs: super::fs_stats(&path),
        path: path.display().to_string(),
        items_all: spec.total_files() * coord.size() as u64,
        files,
        dirs,
        iterations: spec.reps,
        rate_and_time: a.rate_and_time,
    };
    let text = if a.time_only && !a.rate_and_time {
        time_only(&info, rs)?
    } else {
        MdtestTextExporter { info }.render(rs)?
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&text);
    let _ = out.flush();
    for n in &outcome.notes {
        eprintln!("mdtest: {n}");
    }
    if made_dir && is_empty_dir(&spec.target) {
        let _ = std::fs::remove_dir(&spec.target);
    }
    Ok(outcome.exit_code())
}

/// `-Z`: the time table in place of the rate table.
fn time_only(info: &MdtestInfo, rs: &report::ResultSet) -> anyhow::Result<Vec<u8>> {
    let both = MdtestTextExporter {
        info: MdtestInfo {
            rate_and_time: true,
            ..info.clone()
        },
    }
    .render(rs)?;
    let text = String::from_utf8_lossy(&both).into_owned();
    // Drop the rate table: from "\nSUMMARY rate" up to "\nSUMMARY time".
    let (Some(a), Some(b)) = (text.find("\nSUMMARY rate"), text.find("\nSUMMARY time")) else {
        return Ok(both);
    };
    Ok(format!("{}{}", &text[..a], &text[b..]).into_bytes())
}

fn is_empty_dir(p: &Path) -> bool {
    std::fs::read_dir(p).is_ok_and(|mut d| d.next().is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn spec(s: &str) -> spec::MetaSpec {
        to_raw(&parse(&argv(s)).unwrap())
            .unwrap()
            .0
            .build()
            .unwrap()
    }

    #[test]
    fn default_iteration_is_dirs_then_files() {
        let s = spec("-n 10 -d /x");
        assert_eq!(
            s.ops,
            vec![
                MetaOp::Mkdir,
                MetaOp::StatDir,
                MetaOp::Rmdir,
                MetaOp::Create,
                MetaOp::Stat,
                MetaOp::Read,
                MetaOp::Delete
            ]
        );
        assert!(s.same_dir && !s.keep);
        let s = spec("-n=10 -FC -u -d /x --tasks 4");
        assert_eq!(s.ops, vec![MetaOp::Create]);
        assert!(!s.same_dir && s.keep);
        assert_eq!(s.threads, 4);
    }

    #[test]
    fn tree_shape_follows_mdtest() {
        assert_eq!(dirs_in_tree(2, 3).unwrap(), 13);
        assert_eq!(dirs_in_tree(3, 1).unwrap(), 4);
        let s = spec("-I 10 -z 2 -b 3 -d /x");
        assert_eq!((s.files, s.files_per_dir, s.dirs_per_dir), (130, 10, 3));
        let s = spec("-n 100 -z 1 -b 4 -d /x");
        assert_eq!((s.files, s.files_per_dir), (100, 20));
    }

    #[test]
    fn leaf_stride_sync_verify() {
        // -L -z 2 -b 2: 4 leaves; -n 10 rounds to 2 per leaf, mdtest's way.
        let s = spec("-n 10 -z 2 -b 2 -L -d /x");
        assert_eq!((s.files, s.files_per_dir, s.dirs_per_dir), (8, 2, 2));
        assert_eq!(s.leaf_depth, Some(2));
        assert_eq!(s.first_node(), 3);
        let s = spec("-I 3 -z 2 -b 2 -L -d /x");
        assert_eq!((s.files, s.files_per_dir), (12, 3));
        // A chain (-b 1): everything in the one leaf at depth 3.
        let s = spec("-n 7 -z 3 -L -d /x");
        assert_eq!((s.files, s.files_per_dir, s.first_node()), (7, 7, 3));
        let s = spec("-n 4 -N 1 -Y -X -w 8 -e 8 -d /x --tasks 3");
        assert_eq!(s.stride, 1);
        assert!(s.sync_phase && s.verify);
        assert_eq!(s.owner_of(MetaOp::Read, 2), 0);
        assert_eq!(s.owner_of(MetaOp::Create, 2), 2);
        // A stride that wraps to the task itself is its own items.
        let (raw, notes) = to_raw(&parse(&argv("-n 4 -N 2 -d /x --tasks 2")).unwrap()).unwrap();
        assert_eq!(raw.stride, None);
        assert!(notes[0].contains("-N 2"), "{notes:?}");
        assert!(parse(&argv("-n 4 --verify-read -d /x")).unwrap().verify);
    }

    #[test]
    fn refusals_name_the_option() {
        for (line, opt) in [("-n 5 -B", "-B"), ("-n 5 -k", "-k")] {
            let e = parse(&argv(line))
                .and_then(|a| to_raw(&a).map(|_| ()))
                .unwrap_err()
                .to_string();
            assert!(e.contains(opt), "{line}: {e}");
        }
    }
}
