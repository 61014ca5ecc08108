//! `ioscale dd …` (and the binary started as `dd`): dd's operands.
//!
//! `if=/dev/zero of=FILE` is a write of one file, `if=FILE of=/dev/null` a
//! read; `bs=`, `count=`, `conv=fsync|fdatasync|notrunc`,
//! `oflag=sync|dsync|direct`, `iflag=direct` and `status=` keep dd's
//! meaning. `--jobs N` runs N copies at once, like
//! `seq 1 N | parallel dd … of=F-{}`, on files `F-1` … `F-N` (or with `{}`
//! in the name replaced by the job number). As with dd, the files are the
//! user's: an existing `of=` file is truncated unless `conv=notrunc`, and
//! nothing is removed afterwards unless `--rm` asks for it (and then only
//! files this run created). Under `mpirun -np N` each rank runs its jobs on
//! its own files, numbered as if `--jobs` were N × jobs (`F-1` … `F-N`
//! with one job per rank).

use std::path::{Path, PathBuf};

use report::Exporter;
use spec::{parse_count, parse_size, FileNaming, Layout, Op, RawWorkload, SyncMode};

use super::Usage;
use bench::dataset::parent_of;
use render::{DdInfo, DdStatus, DdTextExporter};

pub mod render;

/// `ioscale dd --help`.
pub const HELP: &str = "\
ioscale dd: run a dd command line on ioscale's engine

Usage: ioscale dd [OPERAND]... [--jobs N] [--rm] [--print-spec]
       (or a symlink named `dd` to the ioscale binary)

Operands (dd's):
  if=/dev/zero of=FILE   write FILE (bs x count bytes)
  if=FILE of=/dev/null   read FILE (bs x count bytes, or all whole blocks)
  bs=N                   block size (512, 4K, 1M, 16M; 1MB = 10^6) [512]
  count=N                blocks to copy
  conv=fsync|fdatasync   one flush at the end, timed (conv=notrunc keeps the length)
  oflag=sync|dsync|direct  O_SYNC, O_DSYNC, O_DIRECT on the output
  iflag=direct           O_DIRECT on the input file
  status=progress|noxfer|none
Options (ioscale's):
  --jobs N      N copies in parallel, on FILE-1 .. FILE-N ({} in FILE is replaced by the number)
                (under mpirun -np R: R x N copies, FILE-1 .. FILE-RN, each rank its own)
  --rm          remove the files afterwards (only those this run created)
  --progress M  live progress on standard error: auto (a live line when it is a
                terminal, else nothing), bar, plain, none [IOSCALE_PROGRESS];
                status=none means none
  --print-spec  print the ioscale workload the command line becomes, and exit

Examples (the EFS workshop's dd experiments):
  ioscale dd if=/dev/zero of=/efs/dd/2G-dd bs=1M count=2048 status=progress \\
      conv=fsync
  ioscale dd if=/dev/zero of=/efs/dd/2G-dd bs=16M count=128 status=progress \\
      oflag=sync
  ioscale dd --jobs 16 if=/dev/zero of=/efs/dd/2G-dd bs=1M count=128 oflag=sync
  ioscale dd if=/efs/dd/2G-dd of=/dev/null bs=1M iflag=direct

dd's closing lines (records in/out, bytes copied, seconds, rate) go to standard
error, as dd prints them. The mapping of every operand is in docs/compat.md.
";

#[derive(Debug, Default)]
struct DdArgs {
    input: Option<String>,
    output: Option<String>,
    bs: Option<u64>,
    count: Option<u64>,
    sync: Option<SyncMode>,
    fdatasync: bool,
    notrunc: bool,
    odirect: bool,
    idirect: bool,
    status: DdStatus,
    jobs: Option<u64>,
    rm: bool,
    print_spec: bool,
    /// `--progress MODE` (ioscale's).
    progress: Option<crate::progress::ProgressMode>,
    help: bool,
}

fn usage(msg: impl Into<String>) -> Usage {
    Usage(msg.into())
}

/// The most copies `--jobs` runs: the workload's thread limit.
const MAX_JOBS: u64 = 4_096;

/// `--jobs N`: a count of at least 1, at most [`MAX_JOBS`].
fn parse_jobs(flag: &str, v: &str) -> Result<u64, Usage> {
    match parse_count(v) {
        Ok(0) => Err(usage(format!("{flag} {v}: give at least 1 copy"))),
        // Each copy is a thread (and a file name made before any check of
        // the workload): the limit of the workload's threads.
        Ok(n) if n > MAX_JOBS => Err(usage(format!(
            "{flag} {v}: at most {MAX_JOBS} copies (one thread each)"
        ))),
        Ok(n) => Ok(n),
        Err(e) => Err(usage(format!("{flag} {v}: {e}"))),
    }
}

/// dd's size syntax: GNU's `c`, `w` and `b` multipliers, then ioscale's
/// sizes (`K`/`M`/`G` powers of 1024, `kB`/`MB`/`GB` powers of 1000).
fn dd_size(op: &str, v: &str) -> Result<u64, Usage> {
    let err = |e: String| usage(format!("{op}={v}: {e}"));
    let (num, mult) = match v.as_bytes().last() {
        Some(b'c') => (&v[..v.len() - 1], 1),
        Some(b'w') => (&v[..v.len() - 1], 2),
        Some(b'b') if v[..v.len() - 1].bytes().all(|c| c.is_ascii_digit()) => {
            (&v[..v.len() - 1], 512)
        }
        _ => (v, 1),
    };
    let n = parse_size(num).map_err(|e| err(e.to_string()))?;
    n.checked_mul(mult).ok_or_else(|| err("too large".into()))
}

fn parse(args: &[String]) -> Result<DdArgs, Usage> {
    let mut a = DdArgs::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        match arg.as_str() {
            "--help" | "-h" => {
                a.help = true;
                continue;
            }
            "--print-spec" => {
                a.print_spec = true;
                continue;
            }
            "--rm" => {
                a.rm = true;
                continue;
            }
            "--jobs" | "-j" => {
                let v = args
                    .get(i)
                    .ok_or_else(|| usage(format!("{arg} needs a number")))?;
                i += 1;
                a.jobs = Some(parse_jobs(arg, v)?);
                continue;
            }
            _ => {}
        }
        if let Some(v) = arg.strip_prefix("--jobs=") {
            a.jobs = Some(parse_jobs("--jobs", v)?);
            continue;
        }
        if arg == "--progress" {
            let v = args
                .get(i)
                .ok_or_else(|| usage("--progress needs auto, bar, plain or none"))?;
            i += 1;
            a.progress = Some(super::progress_value(v)?);
            continue;
        }
        if let Some(v) = arg.strip_prefix("--progress=") {
            a.progress = Some(super::progress_value(v)?);
            continue;
        }
        if arg.starts_with('-') {
            return Err(usage(format!(
                "{arg}: not an option ioscale dd knows (dd takes operands like bs=1M; ioscale adds --jobs, --rm, --progress, --print-spec)"
            )));
        }
        let Some((k, v)) = arg.split_once('=') else {
            return Err(usage(format!(
                "unexpected operand '{arg}': dd operands look like key=value (if=, of=, bs=, count=, …)"
            )));
        };
        match k {
            "if" => a.input = Some(v.to_string()),
            "of" => a.output = Some(v.to_string()),
            "bs" => a.bs = Some(dd_size(k, v)?),
            "count" => {
                a.count = Some(parse_count(v).map_err(|e| usage(format!("count={v}: {e}")))?)
            }
            "conv" => {
                for c in v.split(',') {
                    match c {
                        "fsync" => a.sync = Some(SyncMode::End),
                        "fdatasync" => {
                            a.sync = Some(SyncMode::End);
                            a.fdatasync = true;
                        }
                        "notrunc" => a.notrunc = true,
                        _ => {
                            return Err(usage(format!(
                                "conv={c}: not supported (ioscale dd knows fsync, fdatasync, notrunc; \
                                 data conversions do not change what storage sees)"
                            )))
                        }
                    }
                }
            }
            "oflag" => {
                for f in v.split(',') {
                    match f {
                        "sync" => a.sync = Some(SyncMode::Each),
                        "dsync" => a.sync = Some(SyncMode::Dsync),
                        "direct" => a.odirect = true,
                        _ => {
                            return Err(usage(format!(
                                "oflag={f}: not supported (ioscale dd knows sync, dsync, direct; \
                                 native: `ioscale run --sync each|dsync --direct`)"
                            )))
                        }
                    }
                }
            }
            "iflag" => {
                for f in v.split(',') {
                    match f {
                        "direct" => a.idirect = true,
                        "fullblock" => {}
                        _ => {
                            return Err(usage(format!(
                                "iflag={f}: not supported (ioscale dd knows direct and fullblock; native: `ioscale run --direct`)"
                            )))
                        }
                    }
                }
            }
            "status" => {
                a.status = match v {
                    "progress" => DdStatus::Default,
                    "noxfer" => DdStatus::Noxfer,
                    "none" => DdStatus::None,
                    _ => {
                        return Err(usage(format!(
                            "status={v}: use progress, noxfer or none"
                        )))
                    }
                }
            }
            "ibs" | "obs" | "cbs" => {
                return Err(usage(format!(
                    "{k}=: not supported: ioscale reads and writes in one block size; use bs= (native: --xfer)"
                )))
            }
            "skip" | "seek" | "iseek" | "oseek" => {
                return Err(usage(format!(
                    "{k}=: not supported: ioscale dd starts at offset 0; for IOR's segmented offsets use \
                     `ioscale ior -b -s` or `ioscale run --block --segments`"
                )))
            }
            _ => {
                return Err(usage(format!(
                    "{k}=: not a dd operand ioscale supports (if, of, bs, count, conv, oflag, iflag, status); see docs/compat.md"
                )))
            }
        }
    }
    Ok(a)
}

/// The file of job `j` (1-based): `{}` replaced by `j`, or `-j` appended.
fn job_path(name: &str, j: u64, jobs: Option<u64>) -> PathBuf {
    if name.contains("{}") {
        PathBuf::from(name.replace("{}", &j.to_string()))
    } else if jobs.is_some() {
        PathBuf::from(format!("{name}-{j}"))
    } else {
        PathBuf::from(name)
    }
}

fn is_dev(name: &str, dev: &str) -> bool {
    Path::new(name) == Path::new(dev)
}

/// Second stage: dd's meaning as an ioscale workload.
fn to_raw(a: &DdArgs) -> Result<(RawWorkload, Vec<String>), Usage> {
    let mut notes = Vec::new();
    let input = a.input.as_deref().ok_or_else(|| {
        usage("if= is required: ioscale does not read standard input; use if=/dev/zero to measure writes")
    })?;
    let output = a.output.as_deref().ok_or_else(|| {
        usage("of= is required: ioscale does not write standard output; use of=/dev/null to measure reads")
    })?;
    let jobs = a.jobs.unwrap_or(1);
    let bs = a.bs.unwrap_or(512);
    let write = match (is_dev(input, "/dev/zero"), is_dev(output, "/dev/null")) {
        (true, true) => {
            return Err(usage(
                "if=/dev/zero of=/dev/null moves memory, not storage: name a file in if= or of=",
            ))
        }
        (true, false) => true,
        (false, true) => false,
        (false, false) => {
            return Err(usage(format!(
                "if={input} of={output}: a copy reads and writes at once; ioscale measures one direction. \
                 Measure the write (if=/dev/zero of={output}) and the read (if={input} of=/dev/null) separately"
            )))
        }
    };
    let name = if write { output } else { input };
    let paths: Vec<PathBuf> = (1..=jobs).map(|j| job_path(name, j, a.jobs)).collect();
    // Devices and other special files are refused by what they are (stat),
    // not by where they live: /dev/shm is a tmpfs directory for files.
    for p in &paths {
        if let Ok(m) = std::fs::metadata(p) {
            if !m.is_file() {
                return Err(usage(format!(
                    "{}={}: not a regular file; ioscale dd works on regular files only, never devices",
                    if write { "of" } else { "if" },
                    p.display()
                )));
            }
        }
    }
    if write {
        if a.idirect {
            notes.push(
                "iflag=direct applies to reading if=; with if=/dev/zero it changes nothing".into(),
            );
        }
    } else {
        if a.odirect || a.sync.is_some() || a.notrunc {
            notes.push(
                "conv=/oflag= apply to writing of=; with of=/dev/null they change nothing".into(),
            );
        }
    }
    let count = match a.count {
        Some(c) => c,
        None if write => return Err(usage(
            "count= is required with if=/dev/zero (it never ends); give the size as bs= x count= \
                 (native: --size)",
        )),
        None => {
            let mut least = u64::MAX;
            for p in &paths {
                let len = std::fs::metadata(p)
                    .map_err(|e| usage(format!("if={}: {e}", p.display())))?
                    .len();
                least = least.min(len);
            }
            let n = least / bs;
            if n == 0 {
                return Err(usage(format!(
                    "if={name}: shorter than one block of bs={bs} bytes; give a smaller bs="
                )));
            }
            if !least.is_multiple_of(bs) {
                notes.push(format!(
                    "the last {} bytes (a partial block) are not read: ioscale reads whole blocks of bs= only",
                    least % bs
                ));
            }
            n
        }
    };
    if a.fdatasync {
        notes.push(
            "conv=fdatasync: ioscale flushes with fsync (data and metadata) at the end, like conv=fsync".into(),
        );
    }
    let size = bs
        .checked_mul(count)
        .ok_or_else(|| usage("bs= x count= overflows 64 bits"))?;
    let target = parent_of(&paths[0]);
    Ok((
        RawWorkload {
            target: Some(target),
            ops: vec![if write { Op::Write } else { Op::Read }],
            threads: Some(jobs),
            layout: Some(Layout::PerThread),
            xfer: Some(bs),
            size: Some(size),
            direct: if write { a.odirect } else { a.idirect },
            sync: Some(if write {
                a.sync.unwrap_or(SyncMode::None)
            } else {
                SyncMode::None
            }),
            keep: !a.rm,
            naming: Some(FileNaming::Dd {
                paths,
                notrunc: a.notrunc,
            }),
            ..Default::default()
        },
        notes,
    ))
}

/// Runs the dd front-end; started by mpirun or srun, as one MPI rank of
/// `jobs=` threads each (rank 0 prints the transfer lines).
pub fn main(args: &[String]) -> anyhow::Result<i32> {
    crate::as_ranks("dd", |coord| ranks_main(args, coord))
}

fn ranks_main(args: &[String], coord: &dyn coord::Coordinator) -> anyhow::Result<i32> {
    let root = coord.rank() == 0;
    let ranks = coord.size();
    let fail = |e: &dyn std::fmt::Display| {
        if root {
            eprintln!("dd: error: {e}");
        }
        Ok(2)
    };
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => return fail(&e),
    };
    if a.help {
        if root {
            print!("{HELP}");
        }
        return Ok(0);
    }
    // status=none keeps standard error silent, as dd's does, unless
    // --progress asks otherwise.
    let flag = a
        .progress
        .or((a.status == DdStatus::None).then_some(crate::progress::ProgressMode::None));
    let progress = match super::progress_mode("dd", flag, root) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    // Under mpirun each rank runs its jobs on its own files: the jobs of
    // all ranks are numbered as one --jobs, rank r holding r*jobs+1 ..
    // (r+1)*jobs, so names and sizes are checked for every rank's jobs.
    let jobs = a.jobs.unwrap_or(1);
    let mut a = a;
    if ranks > 1 {
        a.jobs = Some(jobs.saturating_mul(ranks as u64));
    }
    let (raw, notes) = match to_raw(&a) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let mut spec = match raw.build() {
        Ok(s) => s,
        Err(e) => {
            const NATIVE_FLAGS: &[(&str, &str)] = &[
                ("--xfer", "bs="),
                ("--size", "bs= × count="),
                ("--block", "bs= × count="),
                ("--threads", "--jobs"),
                ("--direct", "oflag=direct/iflag=direct"),
            ];
            return fail(&super::in_tool_terms("dd", &e.to_string(), NATIVE_FLAGS));
        }
    };
    if a.print_spec {
        if root {
            println!("{}", serde_json::to_string_pretty(&spec)?);
        }
        return Ok(0);
    }
    let all_jobs = spec.threads;
    spec.threads = jobs as u32;
    let quiet = a.status == DdStatus::None;
    if !quiet && root {
        for n in &notes {
            eprintln!("dd: note: {n}");
        }
    }
    let stop = crate::install_signals()?;
    let mut argv = vec!["dd".to_string()];
    argv.extend(args.iter().cloned());
    let live = super::live(progress, root, spec.reps, spec.ops.len(), ranks);
    let outcome = bench::run::run_with(&spec, argv, stop, coord);
    drop(live);
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return fail(&e),
    };
    if !root {
        return Ok(outcome.exit_code());
    }
    let rs = &outcome.results;
    super::print_errors("dd", rs);
    let lines = DdTextExporter {
        info: DdInfo {
            status: a.status,
            jobs: all_jobs,
        },
    }
    .render(rs)?;
    eprint!("{}", String::from_utf8_lossy(&lines));
    if !quiet {
        for w in &rs.warnings {
            // In dd's own words: O_DIRECT is an operand here.
            let w = w.replace(
                "Use --direct",
                "Use oflag=direct (writes) or iflag=direct (reads)",
            );
            eprintln!("dd: warning: {w}");
        }
        for n in &outcome.notes {
            eprintln!("dd: {n}");
        }
    }
    Ok(outcome.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn seed_001_write_with_fsync() {
        let a = parse(&argv(
            "if=/dev/zero of=/ebs/dd/f bs=1M count=2048 status=progress conv=fsync",
        ))
        .unwrap();
        let (raw, _) = to_raw(&a).unwrap();
        let s = raw.build().unwrap();
        assert_eq!(s.ops, vec![Op::Write]);
        assert_eq!(s.total_bytes(), 2 << 30);
        assert_eq!(s.sync, SyncMode::End);
        assert!(s.keep);
    }

    #[test]
    fn jobs_name_files_like_parallel() {
        let a = parse(&argv(
            "--jobs 4 if=/dev/zero of=/d/f-{} bs=1M count=512 oflag=sync",
        ))
        .unwrap();
        let (raw, _) = to_raw(&a).unwrap();
        let s = raw.build().unwrap();
        assert_eq!(s.threads, 4);
        assert_eq!(s.sync, SyncMode::Each);
        match s.naming {
            FileNaming::Dd { paths, .. } => assert_eq!(paths[3], PathBuf::from("/d/f-4")),
            n => panic!("{n:?}"),
        }
        assert_eq!(job_path("/d/f", 2, Some(2)), PathBuf::from("/d/f-2"));
    }

    #[test]
    fn sizes_and_refusals() {
        assert_eq!(dd_size("bs", "2b").unwrap(), 1024);
        assert_eq!(dd_size("bs", "1MB").unwrap(), 1_000_000);
        let e = parse(&argv("if=/dev/zero of=x skip=3"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("skip=") && e.contains("--segments"), "{e}");
        let e = to_raw(&parse(&argv("if=/dev/zero of=x bs=1M")).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("count=") && e.contains("--size"), "{e}");
    }
}
