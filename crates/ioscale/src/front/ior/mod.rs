//! `ioscale ior …` (and the binary started as `ior`): IOR's command line.
//!
//! Options are read the way IOR reads them — `-b 1m`, `-b=256m`, `-b1m`
//! and bundled flags such as `-wrk` — into a [`RawWorkload`](spec::RawWorkload) with IOR's
//! defaults (`-t 256k -b 1m -s 1`, write and read when neither -w nor -r
//! is given). Tasks (-N) run as threads of one process, or, started by
//! mpirun or srun, as one MPI rank each. Files are named as
//! IOR names them (see [`bench::dataset::ior_names`]) and removed at the end
//! unless -k, by the same safety rules as every ioscale run.

use std::io::Write;
use std::time::Duration;

use report::Exporter;
use spec::WorkloadSpec;

use coord::Coordinator;
use report::ResultSet;

use super::{Call, Front, Usage};
use crate::exit::{Exit, Failure};

use render::{IorCsvExporter, IorInfo, IorJsonExporter, IorTextExporter};

pub use compat::ior::{parse, render};

use parse::*;

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
data check, 2 usage or setup error, 130 interrupted (SIGINT, SIGTERM), 129 hung
up (SIGHUP).
";

/// IOR's header facts; `ranks` ranks run `spec.threads` tasks each.
fn info_for(a: &IorArgs, spec: &WorkloadSpec, command_line: String, ranks: u32) -> IorInfo {
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
        tasks: spec.threads * ranks,
        repetitions: spec.reps,
        xfer: spec.xfer,
        block: spec.block,
        segments: spec.segments,
        verbose: a.verbose,
        deadline_s: a.deadline,
        wearout: a.wearout,
        ref_num: a.ref_num,
        read_is_check: a.check_write && !a.read && a.write,
        removals: Vec::new(),
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

/// IOR: `ioscale ior …`, or the binary started as `ior`. Started by mpirun
/// or srun, each IOR task is one MPI rank, as with IOR itself.
pub struct Ior;

impl Front for Ior {
    const COMMAND: &'static str = "ior";
    const PROGRAM: &'static str = "ior";
    const SHOWN_AS: &'static str = "ioscale ior";
    const HELP: &'static str = HELP;
    type Request = IorArgs;
    type Info = IorInfo;

    const PARSE: fn(&[String]) -> Result<IorArgs, Usage> = parse;

    /// Runs the request as one rank of `coord`; rank 0 prints in IOR's layout.
    fn run(call: &Call<'_>, mut a: IorArgs, coord: &dyn Coordinator) -> Exit {
        let root = coord.rank() == 0;
        let ranks = coord.size();
        let progress = super::progress_mode(a.progress)?;
        let shown_offset = a.task_offset.unwrap_or(1) as u32;
        fit_to_ranks(&mut a, coord)?;
        let spec = build(&a, ranks)?;
        if a.print_spec {
            return super::print_spec(root, &spec);
        }
        let outputs = [("-O summaryFile", a.summary_file.as_deref())];
        crate::launch::check_outputs(coord, &outputs)?;
        if root {
            print_notes(&a);
        }
        let mut command_line = vec![call.prog.to_string()];
        command_line.extend(call.args.iter().cloned());
        let mut info = info_for(&a, &spec, command_line.join(" "), ranks);
        info.task_offset = shown_offset;
        let plan = plan(&a, spec);
        let stop = crate::launch::install_signals()?;
        info.began = super::ctime_now();
        let live = super::live_plan(progress, root, &plan, ranks);
        let done = super::run_plan(call, "ior", &plan, live, coord, stop)?;
        let timed_out = done.timed_out;
        let outcome = done.into_single();
        if !root {
            return Ok(outcome.exit_code());
        }
        info.finished = super::ctime_now();
        let Some(bench::plan::Work::Data(spec)) = plan.first() else {
            unreachable!("an IOR plan is one data step")
        };
        print_results(&a, info, spec, &outcome, timed_out)
    }

    fn render(info: &IorInfo, rs: &ResultSet) -> anyhow::Result<Vec<u8>> {
        Ok(IorTextExporter { info: info.clone() }.render(rs)?)
    }
}

/// Under mpirun or srun each IOR task is a rank: -N may only repeat their
/// number, and -C's offset (-Q) counts tasks per node, so the reader sits
/// on another node than the writer. A usage failure when -N is refused.
fn fit_to_ranks(a: &mut IorArgs, coord: &dyn Coordinator) -> Result<(), Failure> {
    let ranks = coord.size();
    if ranks <= 1 {
        return Ok(());
    }
    if let Some(n) = a.tasks.filter(|&n| n != ranks as u64) {
        return Err(Failure::usage(format!(
            "-N {n}: the launcher started {ranks} tasks; under mpirun or srun                      every rank is one IOR task, so drop -N or start {n} ranks (mpirun -np {n})"
        )));
    }
    a.tasks = Some(ranks as u64);
    if a.reorder {
        let layout = bench::cluster::Layout::discover(coord, 1)?;
        if layout.nodes() > 1 {
            let q = a.task_offset.unwrap_or(1);
            a.task_offset = Some(q.saturating_mul(layout.tasks_per_node() as u64));
        }
    }
    Ok(())
}

/// The workload of the command line, checked for all tasks; a refusal
/// names IOR's options beside ioscale's. Under mpirun or srun each of the
/// `ranks` ranks is one IOR task (one worker).
fn build(a: &IorArgs, ranks: u32) -> Result<WorkloadSpec, Usage> {
    to_raw(a).and_then(|mut r| {
        if ranks > 1 {
            // -N was checked against the ranks: each runs one task.
            r.threads = Some(1);
        }
        r.build_across(ranks).map_err(|e| {
            let msg = e.to_string();
            usage(super::in_tool_terms("IOR", &msg, &e.flags(), NATIVE_FLAGS))
        })
    })
}

/// The plan of a checked workload: one data step in IOR's layout, rank 0
/// receiving one merged summary per node and each task's brief line (its
/// open, transfer and close times: IOR's open/wr-rd/close(s) are spans
/// over the tasks), and -T's limit on the whole test.
fn plan(a: &IorArgs, spec: WorkloadSpec) -> bench::plan::Plan {
    let mut plan = bench::plan::Plan::single(spec)
        .with_options(bench::plan::Options {
            node_summary: true,
            brief_rows: true,
            ..Default::default()
        })
        .rendered_by(bench::plan::Render::Ior);
    if a.max_minutes > 0 {
        plan.rules.time_limit = Some(Duration::from_secs(a.max_minutes.saturating_mul(60)));
    }
    plan
}

/// What -x and -E mean here, said before the run.
fn print_notes(a: &IorArgs) {
    if a.single_xfer {
        eprintln!(
            "ior: note: -x: ioscale completes a short transfer by issuing the rest (as IOR does without -x); \
             a transfer that cannot complete is an error either way"
        );
    }
    if a.existing {
        eprintln!(
            "ior: note: -E: ioscale writes into an existing test file only if an earlier ioscale run made it \
             (its marker says so); it never overwrites other files"
        );
    }
}

/// Rank 0's end of a run: errors and warnings on standard error, IOR's
/// layout (or its -O summaryFormat document) on standard output and in
/// -O summaryFile. Returns the exit code.
fn print_results(
    a: &IorArgs,
    mut info: IorInfo,
    spec: &WorkloadSpec,
    outcome: &bench::run::Outcome,
    timed_out: bool,
) -> Exit {
    let rs = &outcome.results;
    info.machine = format!("Linux {}", rs.host.hostname);
    info.fs = super::fs_stats(&spec.target);
    info.removals = outcome
        .removals
        .iter()
        .map(|r| (r.rep, r.seconds))
        .collect();
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
    let text = Ior::render(&info, rs)?;
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
    let mut code = outcome.exit_code();
    if timed_out {
        eprintln!(
            "ior: -T {}: the test stopped after {} minute(s); the figures cover the work done until then",
            a.max_minutes, a.max_minutes
        );
        if code == 130 {
            code = if clean(rs) { 0 } else { 1 };
        }
    }
    if let Some(e) = write_err {
        eprintln!("ior: error: {e:#}");
        code = code.max(1);
    }
    Ok(code)
}

/// No I/O error and no failed data check in the run.
fn clean(rs: &ResultSet) -> bool {
    rs.errors.is_empty()
        && !rs
            .phases
            .iter()
            .any(|p| p.errors > 0 || p.verify.as_ref().is_some_and(|v| v.bad_bytes > 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use spec::Op;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_refusal_names_ior_options_for_the_flags_it_carries() {
        let e = |s: &str| build(&parse(&argv(s)).unwrap(), 1).unwrap_err().0;
        assert_eq!(
            e("-w -t 3m -b 4m"),
            "the block (--block or --size: 4 MiB) is not a multiple of --xfer 3 MiB; make the \
             block a whole number of transfers (in IOR's terms: -t is --xfer, -b is --block, \
             -b × -s is --size)"
        );
        // A path that reads like a flag is the user's text, not a flag the
        // refusal names: no terms follow it.
        assert_eq!(
            e("-w -o /tmp/--xfer/.."),
            "-o /tmp/--xfer/..: name a file, not a directory"
        );
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
