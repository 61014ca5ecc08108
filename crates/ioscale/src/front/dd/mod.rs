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

use report::Exporter;

use render::{DdInfo, DdStatus, DdTextExporter};

mod parse;
pub mod render;

use parse::*;

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
    use spec::{FileNaming, Op, SyncMode};
    use std::path::PathBuf;

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
