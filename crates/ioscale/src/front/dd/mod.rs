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

use coord::Coordinator;
use report::{Exporter, ResultSet};
use spec::WorkloadSpec;

use super::{Call, Front, Usage};
use crate::exit::{Exit, Failure};
use render::{DdInfo, DdStatus, DdTextExporter};

pub use compat::dd::{parse, render};

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
  --record FILE also write ioscale's JSON record of the run to FILE, as
                `ioscale run --json` does
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

/// dd: `ioscale dd …`, or the binary started as `dd`. Started by mpirun or
/// srun, each rank runs `--jobs` threads (rank 0 prints the transfer lines).
pub struct Dd;

impl Front for Dd {
    const COMMAND: &'static str = "dd";
    const PROGRAM: &'static str = "dd";
    const SHOWN_AS: &'static str = "dd";
    const HELP: &'static str = HELP;
    type Request = DdArgs;
    type Info = DdInfo;

    const PARSE: fn(&[String]) -> Result<DdArgs, Usage> = parse;

    /// Runs the request as one rank of `coord`; rank 0 prints dd's lines.
    fn run(call: &Call<'_>, a: DdArgs, coord: &dyn Coordinator) -> Exit {
        let root = coord.rank() == 0;
        let ranks = coord.size();
        // status=none keeps standard error silent, as dd's does, unless
        // --progress asks otherwise.
        let flag = a
            .progress
            .or((a.status == DdStatus::None).then_some(crate::progress::ProgressMode::None));
        let progress = super::progress_mode(flag)?;
        let (spec, notes) = build(&a, ranks).map_err(Failure::Usage)?;
        if a.print_spec {
            return super::print_spec(root, &spec);
        }
        let quiet = a.status == DdStatus::None;
        if !quiet && root {
            for n in &notes {
                eprintln!("dd: note: {n}");
            }
        }
        // The record must not replace a file dd reads or writes.
        let operand = if matches!(spec.ops.first(), Some(spec::Op::Read)) {
            "if="
        } else {
            "of="
        };
        let data: Vec<(&str, &std::path::Path)> = match &spec.naming {
            spec::FileNaming::Dd { paths, .. } => {
                paths.iter().map(|p| (operand, p.as_path())).collect()
            }
            _ => Vec::new(),
        };
        crate::launch::check_outputs_beside(coord, &[("--record", a.record.as_deref())], &data)?;
        let info = DdInfo {
            status: a.status,
            jobs: spec.threads * ranks,
        };
        // dd prints each job's records, bytes and time: with one job per
        // rank the per-rank rows of the node summaries are exactly those;
        // with several, rank 0 receives those few numbers per job (its
        // brief), never every job's sample.
        let opts = bench::plan::Options {
            node_summary: true,
            brief_rows: spec.threads > 1,
            ..Default::default()
        };
        let plan = bench::plan::Plan::single(spec)
            .with_options(opts)
            .rendered_by(bench::plan::Render::Dd);
        let stop = crate::launch::install_signals()?;
        let live = super::live_plan(progress, root, &plan, ranks);
        let outcome = super::run_plan(call, "dd", &plan, live, coord, stop)?.into_single();
        if !root {
            return Ok(outcome.exit_code());
        }
        let code = print_results(&info, &outcome)?;
        let written = super::write_record("dd", a.record.as_deref(), &outcome.results);
        Ok(code.max(written))
    }

    fn render(info: &DdInfo, rs: &ResultSet) -> anyhow::Result<Vec<u8>> {
        Ok(DdTextExporter { info: info.clone() }.render(rs)?)
    }
}

/// The workload of the operands, checked for the jobs of all `ranks`
/// (a refusal names dd's operands beside ioscale's flags), and the notes
/// to say before the run.
fn build(a: &DdArgs, ranks: u32) -> Result<(WorkloadSpec, Vec<String>), String> {
    // Under mpirun each rank runs its jobs on its own files: the jobs of
    // all ranks are numbered as one --jobs, rank r holding r*jobs+1 ..
    // (r+1)*jobs, so the names are every rank's jobs'.
    let jobs = a.jobs.unwrap_or(1);
    let mut all = a.clone();
    if ranks > 1 {
        all.jobs = Some(jobs.saturating_mul(ranks as u64));
    }
    let (mut raw, notes) = to_raw(&all, &mut look).map_err(|e| e.to_string())?;
    // Workers per process: this rank's jobs.
    raw.threads = Some(jobs);
    let spec = raw.build_across(ranks).map_err(|e| {
        const NATIVE_FLAGS: &[(&str, &str)] = &[
            ("--xfer", "bs="),
            ("--size", "bs= × count="),
            ("--block", "bs= × count="),
            ("--threads", "--jobs"),
            ("--direct", "oflag=direct/iflag=direct"),
        ];
        super::in_tool_terms("dd", &e.to_string(), &e.flags(), NATIVE_FLAGS)
    })?;
    Ok((spec, notes))
}

/// What is at one of dd's files, as the storage backend finds it
/// ([`bench::dataset::user_file`]): the parser's view of the user's files.
fn look(p: &std::path::Path) -> Found {
    match bench::dataset::user_file(p) {
        Ok(None) => Found::Missing,
        Ok(Some(e)) if e.kind == safefs::Kind::File => Found::File(e.size),
        Ok(Some(_)) => Found::Other,
        Err(e) => Found::Failed(e.to_string()),
    }
}

/// Rank 0's end of a run: errors, dd's closing lines, then (unless
/// status=none) warnings and notes, all on standard error as dd's are.
fn print_results(info: &DdInfo, outcome: &bench::run::Outcome) -> Exit {
    let rs = &outcome.results;
    super::print_errors("dd", rs);
    let lines = Dd::render(info, rs)?;
    eprint!("{}", String::from_utf8_lossy(&lines));
    if info.status != DdStatus::None {
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
        let (raw, _) = to_raw(&a, &mut look).unwrap();
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
        let (raw, _) = to_raw(&a, &mut look).unwrap();
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
    fn record_takes_a_file() {
        let a = parse(&argv("if=/dev/zero of=x bs=1M count=1 --record r.json")).unwrap();
        assert_eq!(a.record, Some(PathBuf::from("r.json")));
        let a = parse(&argv("--record=s.json if=/dev/zero of=x bs=1M count=1")).unwrap();
        assert_eq!(a.record, Some(PathBuf::from("s.json")));
        let e = parse(&argv("if=/dev/zero of=x --record")).unwrap_err();
        assert!(e.to_string().contains("--record"), "{e}");
    }

    #[test]
    fn sizes_and_refusals() {
        assert_eq!(dd_size("bs", "2b").unwrap(), 1024);
        assert_eq!(dd_size("bs", "1MB").unwrap(), 1_000_000);
        let e = parse(&argv("if=/dev/zero of=x skip=3"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("skip=") && e.contains("--segments"), "{e}");
        let e = to_raw(&parse(&argv("if=/dev/zero of=x bs=1M")).unwrap(), &mut look)
            .unwrap_err()
            .to_string();
        assert!(e.contains("count=") && e.contains("--size"), "{e}");
    }
}
