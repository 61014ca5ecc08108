//! `ioscale fio …` (and the binary started as `fio`): fio's command lines
//! and job files, run on ioscale's engine, printed in fio's layouts.
//!
//! [`parse`] reads the syntax into typed jobs; this module groups them into
//! runs (jobs that fio would start together, up to the next `stonewall`),
//! maps each job to a [`spec::WorkloadSpec`] with fio's file names
//! (`directory/jobname.CLONE.0`, or `filename=`), runs each run as one
//! concurrency group of the executor (a step per job, its clones the
//! step's workers), and [`render`] prints fio's normal or JSON output from
//! each step's measured figures only. The front-end touches no path itself: the job
//! files are checked, laid out and removed through the driver library
//! (`files`), and the logs and `--output` are written through the binary's
//! one output routine (`logs`, [`crate::output`]), all checked before the
//! first run.

mod files;
mod logs;
mod ramp;
pub use compat::fio::{parse, render};
mod sample;

use std::io::Write;
use std::path::{Path, PathBuf};

use bench::dataset::user::{Made, UserFiles};
use spec::{Checksum, FileNaming, IoHints, Layout, Op, RawWorkload, SyncMode, WorkloadSpec};

use self::parse::{Format, Job};
use self::render::{DirStats, Entry, Header, Lat, LatBuckets, Report, SampleStat};
use super::Usage;
use crate::exit::{Exit, Failure};
use bench::sampling::{Sampled, Tick};

/// `ioscale fio --help`.
pub const HELP: &str = "\
ioscale fio: run fio job files and command lines on ioscale's engine

Usage: ioscale fio [--output=FILE] [--output-format=normal|json|json+|terse]
                   [--ioscale-json=FILE] [JOBFILE]... [--OPTION=VALUE]...
                   [--name=JOB --OPTION=VALUE...]...
       (or a symlink named `fio` to the ioscale binary)

Job options (fio's names and units; k/m/g are powers of 2 unless kb_base=1000):
  name filename directory nrfiles size filesize rw/readwrite bs bsrange bssplit
  rwmixread rwmixwrite blockalign/ba bs_unaligned numjobs thread iodepth
  ioengine(psync|sync|pvsync|pvsync2|io_uring|libaio) hipri(0) uncached(0) nowait(0)
  direct buffered sync(0|1|dsync) dsync fsync fdatasync end_fsync fsync_on_close
  runtime time_based ramp_time startdelay loops randrepeat
  randseed norandommap verify(crc32c|crc32c-intel|md5|sha1|xxhash|pattern)
  do_verify(1) verify_fatal invalidate fadvise_hint(0|1) allow_file_create(1)
  create_on_open unlink group_reporting lat_percentiles percentile_list
  stonewall wait_for_previous new_group kb_base offset offset_increment
  write_bw_log write_lat_log write_iops_log log_avg_msec
Job files: [global] and [job] sections, `include FILE`, ${ENV} expansion.
Options ioscale adds:
  --ioscale-json=FILE  ioscale's own record (for `ioscale report`, analysis, charts)
  --print-spec         print the ioscale workload of each run (JSON list) and exit
  --progress=M         live progress on standard error: auto (a live line when it
                       is a terminal, else nothing), bar, plain, none
                       [IOSCALE_PROGRESS]

Examples:
  ioscale fio --name=seqread --rw=read --bs=1m --size=1g --directory=/mnt/fs \\
      --direct=1
  ioscale fio --name=r --rw=randread --ioengine=io_uring --iodepth=32 \\
      --size=1g --numjobs=4 --group_reporting
  ioscale fio jobs.fio --output-format=json --output=out.json

Any other option is refused (exit 2) naming it and the nearest ioscale option.
Jobs run at the same time, as in fio, up to the next `stonewall`, each with
its own shape; jobs that run together must agree on nrfiles, loops,
time_based, ramp_time, verify, startdelay and unlink (the option is named
otherwise). What ioscale does not measure is left out of the output;
docs/compat.md lists every difference.
";

/// One run: the jobs fio would start together (up to the next
/// `stonewall`), each its own step of one concurrency group of the
/// executor, its `numjobs` clones that step's workers.
struct Run {
    jobs: Vec<Job>,
}

/// Splits the jobs at each `stonewall`, and checks that the jobs running
/// together can run in the executor's lockstep (see [`lockstep_differs`]).
fn plan_runs(jobs: Vec<Job>) -> Result<Vec<Run>, Usage> {
    let mut runs: Vec<Run> = Vec::new();
    for j in jobs {
        match runs.last_mut() {
            Some(r) if !j.stonewall => {
                let first = &r.jobs[0];
                if let Some(diff) = lockstep_differs(first, &j) {
                    return Err(Usage(format!(
                        "job '{}' runs at the same time as '{}' (fio starts jobs together unless \
                         `stonewall`), but its {diff} differs; ioscale runs jobs that run together \
                         pass by pass, each pass of every job starting at once, so they must agree \
                         on {diff}: give both the same, or add `stonewall` to '{}' to run it after",
                        j.name, first.name, j.name
                    )));
                }
                r.jobs.push(j);
            }
            _ => runs.push(Run { jobs: vec![j] }),
        }
    }
    Ok(runs)
}

/// Which setting two jobs that run together disagree on that the
/// executor's lockstep cannot carry, if any: the passes (one per file,
/// `nrfiles`; `loops`; `time_based` repeats them until `runtime`, which
/// then ends every job's pass at once), the phases of a pass (`verify`'s
/// read-back), the ramp (a rule of the whole run), when the run starts
/// (`startdelay`) and what happens to the files after it (`unlink`).
/// Everything else — rw, bs, size, engine, depth, direct, sync, a sized
/// job's own `runtime` — is each job's own.
fn lockstep_differs(a: &Job, b: &Job) -> Option<&'static str> {
    let passes = |j: &Job| j.time_based || j.nrfiles > 1;
    let checks: [(&'static str, bool); 9] = [
        ("nrfiles", a.nrfiles == b.nrfiles),
        ("loops", a.loops == b.loops),
        ("time_based", a.time_based == b.time_based),
        (
            "runtime",
            a.runtime == b.runtime || !(passes(a) || passes(b)),
        ),
        ("ramp_time", a.ramp_time == b.ramp_time),
        ("verify", a.verify.is_some() == b.verify.is_some()),
        ("startdelay", a.startdelay == b.startdelay),
        ("unlink", a.unlink == b.unlink),
        ("steadystate", a.steady == b.steady),
    ];
    checks.iter().find(|(_, same)| !same).map(|(n, _)| *n)
}

/// Which workload setting two jobs disagree on, if any: a sweep point
/// runs the jobs of a run as one workload, so they must share its shape.
fn shape_differs(a: &Job, b: &Job) -> Option<&'static str> {
    let checks: [(&'static str, bool); 16] = [
        ("nrfiles", a.nrfiles == b.nrfiles),
        ("rw", a.op == b.op),
        (
            "bs",
            a.bs == b.bs && a.bs_sizes == b.bs_sizes && a.bs_write == b.bs_write,
        ),
        ("size", a.size == b.size && a.filesize == b.filesize),
        ("ioengine", a.engine == b.engine),
        ("iodepth", a.iodepth == b.iodepth),
        ("direct", a.direct == b.direct),
        (
            "sync/fsync",
            a.osync == b.osync
                && a.odsync == b.odsync
                && a.fsync == b.fsync
                && a.fdatasync == b.fdatasync
                && a.end_fsync == b.end_fsync
                && a.fsync_on_close == b.fsync_on_close,
        ),
        (
            "runtime",
            a.runtime == b.runtime
                && a.time_based == b.time_based
                && a.ramp_time == b.ramp_time
                && a.steady == b.steady,
        ),
        ("loops", a.loops == b.loops),
        ("startdelay", a.startdelay == b.startdelay),
        ("randseed", a.seed == b.seed),
        (
            "verify",
            a.verify == b.verify && a.verify_fatal == b.verify_fatal,
        ),
        (
            "invalidate/fadvise_hint",
            a.invalidate == b.invalidate && a.fadvise_hint == b.fadvise_hint,
        ),
        ("unlink", a.unlink == b.unlink),
        ("rwmixread", a.rwmixread == b.rwmixread),
    ];
    checks.iter().find(|(_, same)| !same).map(|(n, _)| *n)
}

/// What fio options ask for that ioscale cannot do, refused up front.
fn refuse_unsupported(j: &Job) -> Result<(), Usage> {
    let n = &j.name;
    if j.nrfiles == 0 {
        return Err(Usage(format!("nrfiles=0 (job '{n}'): must be at least 1")));
    }
    if j.nrfiles > 1 && j.filename.is_some() {
        return Err(Usage(format!(
            "nrfiles={} with filename= (job '{n}'): not supported; give one or the other",
            j.nrfiles
        )));
    }
    if !j.ramp_time.is_zero() && j.time_based && j.runtime.is_none() {
        return Err(Usage(format!(
            "ramp_time with time_based (job '{n}'): give runtime= as well (ioscale runs the ramp as \
             untimed passes, then runtime= of measured ones)"
        )));
    }
    if j.numjobs == 0 {
        return Err(Usage(format!("numjobs=0 (job '{n}'): must be at least 1")));
    }
    // fio refuses iodepth=0 while parsing ("min value out of range"),
    // whatever the engine.
    if j.iodepth == 0 {
        return Err(Usage(format!("iodepth=0 (job '{n}'): must be at least 1")));
    }
    // Each clone is a thread with a file name made before the workload is
    // checked: the workload's thread limit, up front.
    const MAX_NUMJOBS: u64 = 4_096;
    if j.numjobs > MAX_NUMJOBS {
        return Err(Usage(format!(
            "numjobs={} (job '{n}'): at most {MAX_NUMJOBS} (one thread each)",
            j.numjobs
        )));
    }
    if j.verify.is_some() && !matches!(j.op, Op::Write | Op::Randwrite) {
        return Err(Usage(format!(
            "verify= (job '{n}'): ioscale checks data after a write job (rw=write or randwrite), which \
             it then reads back; rw={} is not supported with verify",
            j.rw_text
        )));
    }
    Ok(())
}

/// The size of each clone's file and the bytes of I/O it does; `existing`
/// is the size of the job's first file when it is there already (fio uses
/// it when no size is given).
fn job_size(j: &Job, existing: Option<u64>) -> Result<u64, Usage> {
    // With nrfiles, filesize= is each file's and size= the clone's total.
    let per_file = j.nrfiles > 1 && j.filesize.is_some();
    let total = j.filesize.map(|f| f.saturating_mul(j.nrfiles));
    let size = match (j.size, if per_file { total } else { j.filesize }) {
        (Some(s), Some(t)) if per_file && s != t => {
            return Err(Usage(format!(
                "size={s} with nrfiles={} and filesize={} (job '{}'): ioscale moves each file whole \
                 once per loop; give size={t} (nrfiles × filesize) or leave size= out",
                j.nrfiles,
                j.filesize.unwrap_or(0),
                j.name
            )))
        }
        (Some(s), Some(f)) if s != f => {
            return Err(Usage(format!(
                "size={s} and filesize={f} (job '{}'): ioscale moves the whole file once per loop; give one",
                j.name
            )))
        }
        (Some(s), _) | (None, Some(s)) => s,
        (None, None) => match existing {
            Some(len) if len >= j.bs && j.bs > 0 => len / j.bs * j.bs,
            _ => {
                return Err(Usage(format!(
                    "job '{}': size= is required (the bytes each clone moves, e.g. size=1g)",
                    j.name
                )))
            }
        },
    };
    if j.bs == 0 {
        return Err(Usage(format!(
            "bs=0 (job '{}'): must be at least 1",
            j.name
        )));
    }
    // No file is larger than the largest file offset.
    if size > i64::MAX as u64 {
        let opt = if j.size.is_some() { "size" } else { "filesize" };
        return Err(Usage(format!(
            "{opt}={size} (job '{}'): past the largest file offset (2^63-1 bytes)",
            j.name
        )));
    }
    // nrfiles share size= (filesize= is each file's, so the total splits
    // evenly too).
    let size = if j.nrfiles > 1 {
        if !size.is_multiple_of(j.nrfiles) || !(size / j.nrfiles).is_multiple_of(j.bs) {
            return Err(Usage(format!(
                "size={size} over nrfiles={} (job '{}'): each file must be a whole number of bs={} \
                 blocks (fio would make files of size/nrfiles bytes and leave a part block unused)",
                j.nrfiles, j.name, j.bs
            )));
        }
        size / j.nrfiles
    } else {
        size
    };
    // fio does whole blocks only.
    let whole = size / j.bs * j.bs;
    if whole == 0 {
        return Err(Usage(format!(
            "size= (job '{}') is smaller than one block of bs={}",
            j.name, j.bs
        )));
    }
    Ok(whole)
}

/// Jobs of one shape (one job, or a sweep point's jobs) as an ioscale
/// workload over file `f` of each clone (`nrfiles`), and the notes it
/// needs. Only a job without `size=` looks at its first file here
/// (through `files`), for its size; every file is checked after the whole
/// command line is ([`files::check_run`]).
fn to_raw(
    jobs: &[Job],
    f: u64,
    files: &mut UserFiles,
) -> Result<(RawWorkload, Vec<PathBuf>, Vec<String>), Usage> {
    let j = &jobs[0];
    let mut notes = Vec::new();
    let mut paths = Vec::new();
    for job in jobs {
        refuse_unsupported(job)?;
        paths.extend(files::job_paths(job, f)?);
    }
    // fio uses an existing file's size when none is given.
    let existing = if j.size.is_none() && j.filesize.is_none() {
        files::size_of(files, j, &paths[0])?
    } else {
        None
    };
    let size = job_size(j, existing)?;
    let starts = files::starts(jobs, size)?;
    let mut ops = vec![j.op];
    let checksum = j.verify.as_deref().and_then(Checksum::parse);
    if let Some(v) = &j.verify {
        ops.push(if j.op == Op::Randwrite {
            Op::Randread
        } else {
            Op::Read
        });
        if checksum.is_none() {
            notes.push(format!(
                "verify={v}: ioscale writes its own checkable pattern and reads it back after the \
                 write (the read-back is reported as reads, as fio does)"
            ));
        }
    }
    if j.op == Op::Randrw && j.bs_write.is_some() {
        notes.push(format!(
            "bs (job '{}'): a randrw job with sizes per direction walks fio's random map, which \
             each direction indexes by its own size, so it ends short of size= as fio 3.33's does",
            j.name
        ));
    }
    if j.op == Op::Rw && j.bs_write.is_none() && j.bs_sizes.is_none() {
        notes.push(format!(
            "rw={} (job '{}'): ioscale's reads and writes share one walk through the file, each \
             block once; fio keeps a position per direction, each from the file's start, so its \
             reads and writes cover the same first blocks: the same bytes, other offsets \
             (docs/compat.md)",
            j.rw_text, j.name
        ));
    }
    let sync = sync_mode(j)?;
    let hints = IoHints {
        invalidate: j.invalidate,
        fadvise: j.fadvise_hint,
        checksum,
        end_sync: (j.fsync > 0 || j.fdatasync > 0) && (j.end_fsync || j.fsync_on_close),
        verify_fatal: j.verify_fatal,
    };
    let iodepth = match j.engine {
        e if e.is_sync() => {
            if j.iodepth > 1 {
                notes.push(format!(
                    "ioengine={} is synchronous: queue depth capped at 1 (as fio does)",
                    j.ioengine
                ));
            }
            1
        }
        _ => j.iodepth.max(1),
    };
    let target = paths[0]
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let raw = RawWorkload {
        target: Some(target),
        ops,
        threads: Some(paths.len() as u64),
        layout: Some(Layout::PerThread),
        xfer: Some(j.bs),
        xfer_sizes: j.bs_sizes.clone(),
        write_sizes: j.bs_write.clone(),
        size: Some(size),
        direct: j.direct,
        sync: Some(sync),
        engine: Some(j.engine.name().into()),
        iodepth: Some(iodepth),
        reps: Some(j.loops),
        time_limit: j.runtime,
        verify: j.verify.is_some(),
        keep: true,
        seed: j.seed,
        rwmix_read: matches!(j.op, Op::Rw | Op::Randrw).then(|| j.rwmixread.unwrap_or(50)),
        naming: Some(FileNaming::Dd {
            paths: paths.clone(),
            notrunc: true,
            nofollow: true,
        }),
        start_offsets: starts,
        hints,
        ..Default::default()
    };
    Ok((raw, paths, notes))
}

/// fio's syncs of a job: O_SYNC/O_DSYNC, or an fsync/fdatasync before
/// the write that follows every N (none after the last: an `end_fsync`
/// then is [`IoHints::end_sync`]), or one fsync at the end.
fn sync_mode(j: &Job) -> Result<SyncMode, Usage> {
    Ok(if j.osync {
        SyncMode::Each
    } else if j.odsync {
        SyncMode::Dsync
    } else if j.fsync > 0 && j.fdatasync > 0 {
        return Err(Usage(format!(
            "fsync={} with fdatasync={} (job '{}'): not supported; give one",
            j.fsync, j.fdatasync, j.name
        )));
    } else if j.fsync > 0 {
        SyncMode::Between(j.fsync)
    } else if j.fdatasync > 0 {
        SyncMode::DataBetween(j.fdatasync)
    } else if j.end_fsync || j.fsync_on_close {
        SyncMode::End
    } else {
        SyncMode::None
    })
}

/// The workload of a fio job with `numjobs` set to `clones`, for
/// `ioscale sweep … -- fio JOBFILE` (seed 004 sweeps fio's numjobs): the
/// command line must hold one job (or jobs that run together), not
/// `time_based` (a sweep point is one pass). A read job's files are laid
/// out here, and a write job's allocated, untimed, as fio does, so call it
/// right before the point runs.
pub fn sweep_point(args: &[String], clones: u32) -> Result<WorkloadSpec, Usage> {
    let cli = parse::parse_cli(args)?;
    if cli.output.is_some() || !cli.formats.is_empty() || cli.ioscale_json.is_some() {
        return Err(Usage(
            "give --json, --csv and --format to sweep (before --), not --output/--output-format to the inner fio".into(),
        ));
    }
    if cli.progress.is_some() {
        return Err(Usage(
            "give --progress to sweep (before --), not to the inner fio".into(),
        ));
    }
    let (mut jobs, _) = parse::jobs(&cli)?;
    for j in &mut jobs {
        j.numjobs = u64::from(clones);
        if j.time_based {
            return Err(Usage(format!(
                "job '{}': time_based in a sweep is not supported (each point is one pass); give size= alone \
                 or runtime= without time_based",
                j.name
            )));
        }
    }
    let mut runs = plan_runs(jobs)?;
    if runs.len() != 1 {
        return Err(Usage(
            "a sweep runs one fio job (or jobs that run together); this one has `stonewall` steps: \
             sweep each step's job file on its own"
                .into(),
        ));
    }
    let run = runs.remove(0);
    if run.jobs[0].nrfiles > 1 {
        return Err(Usage(
            "a sweep runs a job with one file per clone; this one has nrfiles > 1".into(),
        ));
    }
    // A point is one workload: jobs that run together must share its shape.
    if let Some(j) = run.jobs.get(1) {
        if let Some(diff) = shape_differs(&run.jobs[0], j) {
            return Err(Usage(format!(
                "a sweep point runs the jobs that run together as one workload, but job '{}' has \
                 another {diff} than '{}'; sweep each job's file on its own",
                j.name, run.jobs[0].name
            )));
        }
    }
    let mut files = UserFiles::new();
    let (raw, paths, _) = to_raw(&run.jobs, 0, &mut files)?;
    let spec = raw.build().map_err(|e| {
        Usage(super::in_tool_terms(
            "fio",
            &e.to_string(),
            &e.flags(),
            &[("--xfer", "bs=")],
        ))
    })?;
    files::check_run(&mut files, &run)?;
    let reads = spec.ops.iter().all(|o| !o.writes());
    if reads || spec.ops.iter().all(|o| !o.reads()) {
        // The sweep's own signal handling stops between points.
        let never = std::sync::atomic::AtomicBool::new(false);
        let mut laid = files::LaidOut::default();
        files::lay_out(&mut files, &spec, &paths, reads, &never, &mut laid)
            .map_err(|e| Usage(format!("job '{}': {e}", run.jobs[0].name)))?;
    }
    Ok(spec)
}

/// Runs the fio front-end.
pub fn main(args: &[String]) -> Exit {
    crate::launch::as_ranks("fio", |coord| ranks_main(args, coord))
}

fn ranks_main(args: &[String], coord: &dyn coord::Coordinator) -> Exit {
    if coord.size() > 1 {
        return Err(Failure::usage(
            "ioscale fio runs on one node; for several, use `ioscale run` under mpirun",
        ));
    }
    let cli = parse::parse_cli(args)?;
    if cli.help {
        print!("{HELP}");
        return Ok(0);
    }
    if cli.version {
        println!("ioscale-{} (fio front-end)", env!("CARGO_PKG_VERSION"));
        return Ok(0);
    }
    crate::history_run::check_env()?;
    let progress = super::progress_mode(cli.progress)?;
    let (jobs, global) = parse::jobs(&cli)?;
    // fio's figures: latencies by direction, submission latency; and every
    // I/O of a job with logs and no log_avg_msec (a sized job's ramp is
    // cut out of its requests afterwards). Plan fields of each run.
    let detail = if jobs
        .iter()
        .any(|j| (logs::has_logs(j) && j.log_avg_msec == 0) || ramp::sized(j))
    {
        engine::Detail::IoLog
    } else {
        engine::Detail::Latency
    };
    // Check every run before the first one starts.
    let mut files = UserFiles::new();
    let planned = plan_runs(jobs).and_then(|r| plan_specs(r, &mut files))?;
    if cli.print_spec {
        let specs: Vec<&WorkloadSpec> = planned
            .iter()
            .flat_map(|p| p.all().map(|(s, _)| s))
            .collect();
        println!("{}", serde_json::to_string_pretty(&specs)?);
        return Ok(0);
    }
    // Then every file of every run, and every output, before any byte is
    // written.
    for p in &planned {
        files::check_run(&mut files, &p.run)?;
    }
    check_outputs(&cli, &planned)?;
    let stop = crate::launch::install_signals()?;
    let mut argv = vec!["fio".to_string()];
    argv.extend(args.iter().cloned());
    let mut st = Session::new(global, files);
    let ctx = RunCtx {
        argv: &argv,
        stop: &stop,
        coord,
        progress,
        detail,
    };
    for p in &planned {
        if !st.run(p, &ctx)? {
            break;
        }
    }
    st.finish_disks();
    st.report.ended = std::time::SystemTime::now();
    st.report.ended_text = super::ctime_now();
    let code = emit(&cli, &st.report, &st.records).max(st.code);
    Ok(crate::history_run::record_front("fio", &st.records, code))
}

/// Checks every output of the command before the first run, as every
/// command does: `--output`, `--ioscale-json` and each job's logs
/// (`write_*_log`), none of them the same file as another or as a job's
/// data file.
fn check_outputs(cli: &parse::Cli, planned: &[Planned]) -> Result<(), Failure> {
    let logs = logs::outputs(planned);
    let mut outputs: Vec<(&str, Option<&Path>)> = vec![
        ("--output", cli.output.as_deref()),
        ("--ioscale-json", cli.ioscale_json.as_deref()),
    ];
    outputs.extend(logs.iter().map(|(o, p)| (*o, Some(p.as_path()))));
    let data: Vec<(&str, &Path)> = planned
        .iter()
        .flat_map(Planned::all)
        .flat_map(|(_, paths)| paths)
        .map(|p| ("the data file ", p.as_path()))
        .collect();
    crate::output::check_output_set(&outputs, &data).map_err(Failure::refused)?;
    // A log's name is predictable: a link planted there is refused, not
    // written through (fio would follow it).
    for (o, p) in &logs {
        crate::output::check_not_link(o, p).map_err(Failure::refused)?;
    }
    Ok(())
}

/// One run with its workloads and the notes made while mapping it:
/// `files[f][i]` is job `i`'s workload over file `f` of each of its
/// clones (`nrfiles`), with those files.
struct Planned {
    run: Run,
    files: Vec<Vec<(WorkloadSpec, Vec<PathBuf>)>>,
    notes: Vec<String>,
}

impl Planned {
    /// Every workload with its files.
    fn all(&self) -> impl Iterator<Item = &(WorkloadSpec, Vec<PathBuf>)> {
        self.files.iter().flatten()
    }
}

/// Maps every run to its workloads, one per job and file, refusing what
/// ioscale cannot run (`files`: see [`to_raw`]).
fn plan_specs(runs: Vec<Run>, files: &mut UserFiles) -> Result<Vec<Planned>, Usage> {
    const NATIVE_FLAGS: &[(&str, &str)] = &[
        ("--xfer", "bs="),
        ("--size", "size="),
        ("--block", "size="),
        ("--threads", "numjobs="),
        ("--iodepth", "iodepth="),
        ("--direct", "direct="),
        ("--rwmix", "rwmixread="),
        ("--time", "runtime="),
        ("--reps", "loops="),
    ];
    let mut planned = Vec::new();
    for run in runs {
        let mut per_file = Vec::new();
        let mut notes = Vec::new();
        for f in 0..run.jobs[0].nrfiles.max(1) {
            let mut specs = Vec::new();
            for j in &run.jobs {
                let (raw, paths, n) = to_raw(std::slice::from_ref(j), f, files)?;
                for n in n {
                    if !notes.contains(&n) {
                        notes.push(n);
                    }
                }
                let together = run.jobs.len() > 1;
                let spec = raw.build().map_err(|e| {
                    let msg = match together {
                        true => format!("job '{}': {e}", j.name),
                        false => e.to_string(),
                    };
                    Usage(super::in_tool_terms("fio", &msg, &e.flags(), NATIVE_FLAGS))
                })?;
                specs.push((spec, paths));
            }
            shared_file(&run, &specs)?;
            per_file.push(specs);
        }
        planned.push(Planned {
            run,
            files: per_file,
            notes,
        });
    }
    Ok(planned)
}

/// Refuses jobs of one run that name the same file (`filename=`): each
/// step of a concurrency group works on files of its own.
fn shared_file(run: &Run, specs: &[(WorkloadSpec, Vec<PathBuf>)]) -> Result<(), Usage> {
    for (i, (_, paths)) in specs.iter().enumerate() {
        for (k, (_, other)) in specs.iter().enumerate().skip(i + 1) {
            if let Some(p) = paths.iter().find(|p| other.contains(p)) {
                return Err(Usage(format!(
                    "jobs '{}' and '{}' run at the same time on the same file {} (filename=); \
                     ioscale gives each job that runs together files of its own: give each its \
                     own filename=, or add `stonewall` to '{}'",
                    run.jobs[i].name,
                    run.jobs[k].name,
                    p.display(),
                    run.jobs[k].name
                )));
            }
        }
    }
    Ok(())
}

/// What every run of a command shares.
struct RunCtx<'a> {
    argv: &'a [String],
    stop: &'a std::sync::Arc<std::sync::atomic::AtomicBool>,
    coord: &'a dyn coord::Coordinator,
    progress: crate::progress::ProgressMode,
    /// What the engine keeps for fio's figures and logs.
    detail: engine::Detail,
}

/// The command's results so far.
struct Session {
    report: Report,
    records: Vec<report::ResultSet>,
    code: i32,
    disk_dev: Option<String>,
    disk_before: Option<[u64; 11]>,
    /// fio numbers every clone of every job from 1 (its log file names).
    thread_base: u64,
    /// The job files' directories, held since they were checked.
    files: UserFiles,
}

/// How a run ended before its results were in.
enum Stopped {
    /// Refused before it measured anything (exit 2 when no run had
    /// results yet).
    Refused(bench::Error),
    /// An I/O error laying out its files (exit 1, fio's job error).
    Failed(bench::Error),
}

impl Session {
    fn new(global: Vec<(String, String)>, files: UserFiles) -> Session {
        Session {
            report: Report {
                version: format!("ioscale-{}", env!("CARGO_PKG_VERSION")),
                started: std::time::SystemTime::now(),
                started_text: super::ctime_now(),
                ended: std::time::SystemTime::now(),
                ended_text: super::ctime_now(),
                global,
                headers: Vec::new(),
                entries: Vec::new(),
                disks: Vec::new(),
                layout_lines: Vec::new(),
                pid: std::process::id(),
            },
            records: Vec::new(),
            code: 0,
            disk_dev: None,
            disk_before: None,
            thread_base: 0,
            files,
        }
    }

    /// Runs one run and adds its entries; `Ok(false)`: stopped (a signal
    /// or an error, said and in `code`), run no more. A run refused before
    /// any run had results is the command's failure (exit 2, and the files
    /// it made are removed again).
    fn run(&mut self, p: &Planned, ctx: &RunCtx<'_>) -> Result<bool, Failure> {
        let run = &p.run;
        for n in &p.notes {
            eprintln!("fio: note: {n}");
        }
        for j in &run.jobs {
            self.report.headers.push(Header::of(j));
        }
        let mut laid = files::LaidOut::default();
        let r = self
            .lay_out_files(p, ctx.stop, &mut laid)
            .and_then(|()| self.measure(p, ctx).map_err(Stopped::Refused));
        let laid_all = r.is_ok();
        let go_on = match r {
            Ok(go_on) => go_on,
            Err(e) => self.stopped(e, &laid.made)?,
        };
        if run.jobs[0].unlink {
            self.unlink(&laid.made);
            let found = if laid_all {
                files::found(p.all().flat_map(|(_, paths)| paths), &laid.made)
            } else {
                Vec::new()
            };
            for p in found {
                eprintln!(
                    "fio: note: unlink=1: left {} in place: it was there before this run, and \
                     ioscale removes only the files it made",
                    p.display()
                );
            }
        }
        Ok(go_on)
    }

    /// The passes of a run on its laid-out files, its entries, records and
    /// logs; `Ok(false)`: interrupted.
    fn measure(&mut self, p: &Planned, ctx: &RunCtx<'_>) -> Result<bool, bench::Error> {
        let run = &p.run;
        let spec = &p.files[0][0].0;
        if self.disk_dev.is_none() {
            self.disk_dev = probe::device_of(&spec.target);
            self.disk_before = self.disk_dev.as_deref().and_then(probe::disk_counters);
        }
        let every = run
            .jobs
            .iter()
            .filter(|j| logs::has_logs(j) && j.log_avg_msec > 0)
            .map(|j| j.log_avg_msec)
            .min()
            .unwrap_or(BW_AVG_MSEC);
        let specs: Vec<Vec<WorkloadSpec>> = p
            .files
            .iter()
            .map(|per_job| per_job.iter().map(|(s, _)| s.clone()).collect())
            .collect();
        let live = super::live(ctx.progress, true, spec.reps, spec.ops.len(), 1);
        let passes = run_passes(
            &specs,
            run,
            ctx,
            &self.files,
            std::time::Duration::from_millis(every),
        );
        drop(live);
        let Measured {
            passes,
            code: c,
            sampled,
            cut,
        } = passes?;
        self.code = self.code.max(c);
        // Nothing ran when interrupted before the first pass (in its
        // startdelay); the executor's samples start at the first.
        let (false, Some(mut sampled)) = (passes.is_empty(), sampled) else {
            return Ok(self.code != 130);
        };
        if let Some(cut) = cut {
            ramp::cut_ticks(&mut sampled, cut);
        }
        for p in passes.iter().flatten() {
            super::print_errors("fio", &p.rs);
            super::print_mismatches("fio", &p.rs);
        }
        self.report
            .entries
            .extend(entries_of(run, &specs[0], &passes, &sampled, cut));
        for e in logs::write(run, &passes, &sampled, self.thread_base, cut) {
            eprintln!("fio: error: {e}");
            self.code = self.code.max(output_failure_code());
        }
        self.thread_base += run.jobs.iter().map(|j| j.numjobs).sum::<u64>();
        self.records
            .extend(passes.into_iter().flatten().map(|p| p.rs));
        Ok(self.code != 130)
    }

    /// A run that stopped on `e`: an interruption ends the command with
    /// 130 and a failure with 1, both with the results so far; a refusal
    /// before any run had results is the command's failure (exit 2), with
    /// the files this run made removed again (nothing was measured on
    /// them). `Ok(false)`: run no more.
    fn stopped(&mut self, e: Stopped, made: &[Made]) -> Result<bool, Failure> {
        let (e, refused) = match e {
            Stopped::Refused(e) => (e, true),
            Stopped::Failed(e) => (e, false),
        };
        if matches!(e, bench::Error::Interrupted) {
            self.code = 130;
            return Ok(false);
        }
        if refused && self.records.is_empty() && e.exit_code() == 2 {
            self.unlink(made);
            return Err(Failure::Bench(e));
        }
        eprintln!("fio: error: {e}");
        self.code = self.code.max(1);
        Ok(false)
    }

    /// Removes the files a run made (`unlink=1`), only while each is still
    /// the very file made, and says what stayed.
    fn unlink(&self, made: &[Made]) {
        for l in self.files.remove(made) {
            eprintln!("fio: warning: unlink: left {l}");
        }
    }

    /// Lays out a run's files (fio's `Laying out IO file` lines) through
    /// the held directories, after checking that each is still the one
    /// opened at the start; what it made is in `laid`, also on failure.
    fn lay_out_files(
        &mut self,
        p: &Planned,
        stop: &std::sync::atomic::AtomicBool,
        laid: &mut files::LaidOut,
    ) -> Result<(), Stopped> {
        self.files.check_dirs().map_err(Stopped::Refused)?;
        for per_job in &p.files {
            let mut base = 0usize;
            for (j, (spec, paths)) in p.run.jobs.iter().zip(per_job) {
                // Files a job reads (a mix too) are written out first, as
                // fio lays them out; files it only writes are allocated (a
                // verify job's too: it reads back only what it wrote).
                let reads = spec.ops.first().is_some_and(|o| o.reads());
                let mut mine = files::LaidOut::default();
                let r = files::lay_out(&mut self.files, spec, paths, reads, stop, &mut mine);
                laid.made.append(&mut mine.made);
                laid.lines
                    .extend(mine.lines.into_iter().map(|(w, b)| (base + w, b)));
                base += j.numjobs as usize;
                if let Err(e) = r {
                    let name = &j.name;
                    return Err(match e {
                        bench::Error::Interrupted => Stopped::Failed(e),
                        bench::Error::Setup { what, source } => {
                            Stopped::Failed(bench::Error::Setup {
                                what: format!("job '{name}': {what}"),
                                source,
                            })
                        }
                        e => Stopped::Refused(bench::Error::Refused(format!("job '{name}': {e}"))),
                    });
                }
            }
        }
        self.report
            .layout_lines
            .extend(files::layout_lines(&p.run, &laid.lines));
        Ok(())
    }

    /// The disk's counters over the whole command.
    fn finish_disks(&mut self) {
        if let (Some(dev), Some(before)) = (&self.disk_dev, &self.disk_before) {
            if let Some(after) = probe::disk_counters(dev) {
                let ms = self
                    .report
                    .started
                    .elapsed()
                    .map(|d| d.as_millis() as u64)
                    .unwrap_or(0);
                self.report
                    .disks
                    .push(render::DiskUtil::between(dev, before, &after, ms));
            }
        }
    }
}

/// The exit code of a result that could not be written: 1, as an I/O
/// error, or 130 when a signal ended the wait for a FIFO's reader.
fn output_failure_code() -> i32 {
    if crate::output::interrupted() {
        130
    } else {
        1
    }
}

/// The report in each asked format.
fn render_report(cli: &parse::Cli, report: &Report) -> String {
    let mut text = String::new();
    let formats = if cli.formats.is_empty() {
        vec![Format::Normal]
    } else {
        cli.formats.clone()
    };
    for f in &formats {
        match f {
            Format::Normal => text.push_str(&render::normal(report)),
            Format::Json | Format::JsonPlus => {
                let v = render::json(report, *f == Format::JsonPlus);
                text.push_str(&serde_json::to_string_pretty(&v).unwrap_or_default());
                text.push('\n');
            }
            Format::Terse => text.push_str(&render::terse(report)),
        }
    }
    text
}

/// Prints (or writes to `--output`) the report in each asked format, and
/// writes `--ioscale-json`, as every command writes its results: an
/// output that cannot be written is named on standard error and ends the
/// command with 1 (130 when a signal ended the wait for a FIFO's reader),
/// the results kept — a report `--output` could not take is printed on
/// standard output instead. Returns that code (0 when all was written).
fn emit(cli: &parse::Cli, report: &Report, records: &[report::ResultSet]) -> i32 {
    let text = render_report(cli, report);
    let mut code = 0;
    let mut fail = |what: String| {
        eprintln!("fio: error: {what}");
        code = output_failure_code();
    };
    let to_stdout = match &cli.output {
        Some(p) => match crate::output::write_named("--output", p, text.as_bytes()) {
            Ok(()) => false,
            Err(e) => {
                fail(format!("{e:#}; the report follows on standard output"));
                true
            }
        },
        None => true,
    };
    if to_stdout {
        let mut out = std::io::stdout().lock();
        // A closed pipe (ioscale fio … | head) is not worth a panic.
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
    if let Some(p) = &cli.ioscale_json {
        let v = if records.len() == 1 {
            serde_json::to_value(&records[0])
        } else {
            serde_json::to_value(records)
        };
        let bytes = v.and_then(|v| serde_json::to_vec_pretty(&v));
        let r = bytes
            .map_err(anyhow::Error::from)
            .and_then(|b| crate::output::write_named("--ioscale-json", p, &b));
        if let Err(e) = r {
            fail(format!("{e:#}"));
        }
    }
    let mut said = std::collections::BTreeSet::new();
    for w in records.iter().flat_map(|rs| &rs.warnings) {
        if said.insert(w) {
            eprintln!("fio: warning: {w}");
        }
    }
    code
}

/// One job's part of a pass: its step's record and each phase's
/// per-worker latency histograms (workers numbered from 0 in the job).
struct Pass {
    rs: report::ResultSet,
    lat: Vec<bench::run::PhaseLatency>,
}

/// Job `i`'s parts of every pass.
fn of_job(passes: &[Vec<Pass>], i: usize) -> Vec<&Pass> {
    passes.iter().filter_map(|p| p.get(i)).collect()
}

/// fio's `bw_avg_time`/`iops_avg_time` default: one bw/iops sample per
/// 500 ms.
const BW_AVG_MSEC: u64 = 500;

/// Runs a run's passes as one plan: a stage per file of every clone
/// (`specs[f][job]`, `nrfiles`), each stage one concurrency group with a
/// step per job (its clones the step's workers). The executor keeps the
/// clock ([`bench::plan::Passes`]): `startdelay`, a `time_based` job's
/// ramp as passes that are not kept, then the passes — once per file, or
/// (with `time_based`) again and again until `runtime` has passed, as fio
/// loops over its files until time is up. Before the run the job files'
/// directories are checked to be the ones opened at the start (`files`).
/// The executor also takes each worker's per-interval figures every
/// `every` from the first recorded pass (the plan's `samples` rule).
/// Returns the measured passes (each a [`Pass`] per job) with where a
/// sized job's ramp ends, the exit code and those figures (workers
/// numbered across the jobs); a pass that fails after others were
/// measured ends the run with those (said, exit code 1), the first one's
/// failure is the caller's.
fn run_passes(
    specs: &[Vec<WorkloadSpec>],
    run: &Run,
    ctx: &RunCtx<'_>,
    files: &UserFiles,
    every: std::time::Duration,
) -> Result<Measured, bench::Error> {
    let j = &run.jobs[0];
    let stages = specs
        .iter()
        .map(|per_job| bench::plan::Stage {
            steps: run
                .jobs
                .iter()
                .zip(per_job)
                .map(|(job, s)| {
                    let mut step = bench::plan::Step::new(s.clone());
                    step.name = job.name.clone();
                    step
                })
                .collect(),
        })
        .collect();
    let mut plan = bench::plan::Plan::of_stages(stages)
        .with_detail(ctx.detail)
        .rendered_by(bench::plan::Render::Fio);
    plan.options.steady = j.steady;
    plan.rules.samples = Some(every);
    let repeat = j.time_based && j.runtime.is_some();
    plan.rules.passes = Some(bench::plan::Passes {
        delay: (!j.startdelay.is_zero()).then_some(j.startdelay),
        ramp: (!j.ramp_time.is_zero() && j.time_based).then_some(j.ramp_time),
        // One deadline over the passes; a single pass keeps each job's.
        runtime: j.runtime.filter(|_| repeat || specs.len() > 1),
        repeat,
    });
    let mut hooks = PassHooks { files };
    let env = bench::exec::Env::new(ctx.argv.to_vec(), ctx.stop.clone(), ctx.coord)
        .with_hooks(&mut hooks);
    let done = bench::exec::execute(&plan, env)?;
    let mut code = done.exit_code();
    match &done.refused {
        Some((_, bench::Error::Interrupted)) => code = 130,
        Some((_, e)) => {
            eprintln!("fio: error: {e}");
            code = code.max(1);
        }
        None if done.interrupted => code = 130,
        None => {}
    }
    // A sized job's ramp ends ramp_time after the executor started its
    // first pass.
    let sampled = done.samples;
    let cut = done
        .passes
        .first()
        .zip(sampled.as_ref())
        .and_then(|(p, s)| ramp::sized_cut(j, s.since(p.started)));
    let passes = done
        .passes
        .into_iter()
        .map(|p| {
            p.steps
                .into_iter()
                .map(|o| Pass {
                    rs: o.results,
                    lat: o.latency,
                })
                .collect()
        })
        .collect();
    Ok(Measured {
        passes,
        code,
        sampled,
        cut,
    })
}

/// What the fio front-end does between the executor's passes: checks
/// that the job files' directories are still the ones opened at the start
/// (a directory swapped for a link meanwhile ends the run).
struct PassHooks<'a> {
    files: &'a UserFiles,
}

impl bench::exec::Hooks for PassHooks<'_> {
    fn before_pass(&mut self, _stage: usize, _recorded: bool) -> Result<(), bench::Error> {
        self.files.check_dirs()
    }
}

/// A run's measured passes (each a [`Pass`] per job), the exit code,
/// each worker's intervals as the executor sampled them (none when no
/// pass was recorded) and where a sized job's ramp ends.
struct Measured {
    passes: Vec<Vec<Pass>>,
    code: i32,
    sampled: Option<Sampled>,
    cut: Option<ramp::Cut>,
}

/// The report entries of one run: per job clone, or, with
/// `group_reporting`, one per reporting group (the jobs of one group
/// merged under the first one's name, as fio reports them). Latency,
/// bandwidth and IOPS samples, CPU time and faults are measured per
/// worker (thread), so every entry has them.
fn entries_of(
    run: &Run,
    specs: &[WorkloadSpec],
    passes: &[Vec<Pass>],
    sampled: &Sampled,
    cut: Option<ramp::Cut>,
) -> Vec<Entry> {
    let ticks: &[Vec<Tick>] = &sampled.ticks;
    let mut out: Vec<Entry> = Vec::new();
    // The entry a job's group_reporting merges into: (group, index).
    let mut grouped_at: Vec<(usize, usize)> = Vec::new();
    let mut first = 0u64;
    for (i, (j, spec)) in run.jobs.iter().zip(specs).enumerate() {
        let mine = of_job(passes, i);
        let n = j.numjobs as u32;
        let sets: Vec<Vec<u32>> = if j.group_reporting || n == 1 {
            vec![(0..n).collect()]
        } else {
            (0..n).map(|w| vec![w]).collect()
        };
        for ws in sets {
            let mut e = entry(j, spec, &mine, &ws, ws.len() == n as usize);
            if let Some(cut) = cut {
                ramp::after_ramp(&mut e, &ws, &mine, (cut, sampled));
            }
            e.sampled = true;
            for (d, reads) in [(&mut e.read, true), (&mut e.write, false)] {
                for &w in &ws {
                    let t = ticks.get((first + u64::from(w)) as usize);
                    let (bw, iops) = sample::samples(t.map(Vec::as_slice).unwrap_or(&[]), reads);
                    d.bw_stat = SampleStat::sum(d.bw_stat, SampleStat::of(&bw));
                    d.iops_stat = SampleStat::sum(d.iops_stat, SampleStat::of(&iops));
                }
            }
            match grouped_at.iter().find(|(g, _)| *g == j.group) {
                Some(&(_, k)) if j.group_reporting => merge_entry(&mut out[k], e),
                _ => {
                    if j.group_reporting {
                        grouped_at.push((j.group, out.len()));
                    }
                    out.push(e);
                }
            }
        }
        first += j.numjobs;
    }
    out
}

/// Adds the entry of a later job of a reporting group to the group's
/// (fio's `group_reporting` across jobs): bytes, requests, latencies,
/// samples, CPU and faults summed; each direction's run time and the
/// entry's the longest; the clones' run times summed; the first error.
/// The name stays the first job's and the "job options" become the last
/// one's, as fio 3.33 writes them (tests/fio/42_together_clones_fsync.fio).
fn merge_entry(to: &mut Entry, e: Entry) {
    to.jobs += e.jobs;
    to.options = e.options.clone();
    to.runtime_s = to.runtime_s.max(e.runtime_s);
    to.clones_runtime_s += e.clones_runtime_s;
    for (a, b) in [(&mut to.read, e.read), (&mut to.write, e.write)] {
        a.bytes += b.bytes;
        a.ios += b.ios;
        a.short += b.short;
        a.runtime_s = a.runtime_s.max(b.runtime_s);
        for (x, y) in [
            (&mut a.lat, b.lat),
            (&mut a.clat, b.clat),
            (&mut a.slat, b.slat),
        ] {
            if let Some(y) = y {
                add_lat(x, &y.hist);
            }
        }
        a.bw_stat = SampleStat::sum(a.bw_stat, b.bw_stat);
        a.iops_stat = SampleStat::sum(a.iops_stat, b.iops_stat);
    }
    to.cpu_s = match (to.cpu_s, e.cpu_s) {
        (Some(a), Some(b)) => Some((a.0 + b.0, a.1 + b.1)),
        (a, b) => a.or(b),
    };
    to.faults = match (to.faults, e.faults) {
        (Some(a), Some(b)) => Some((a.0 + b.0, a.1 + b.1, a.2 + b.2)),
        (a, b) => a.or(b),
    };
    to.buckets = match (to.buckets.take(), e.buckets) {
        (Some(mut a), Some(b)) => {
            let add = |x: &mut [u64], y: &[u64]| x.iter_mut().zip(y).for_each(|(x, y)| *x += y);
            add(&mut a.ns, &b.ns);
            add(&mut a.us, &b.us);
            add(&mut a.ms, &b.ms);
            a.total += b.total;
            Some(a)
        }
        (a, b) => a.or(b),
    };
    to.depths.merge(&e.depths);
    if let Some(y) = e.syncs {
        add_lat(&mut to.syncs, &y.hist);
    }
    if to.error == 0 {
        to.error = e.error;
    }
}

fn entry(j: &Job, spec: &WorkloadSpec, passes: &[&Pass], ws: &[u32], whole: bool) -> Entry {
    let mut e = Entry {
        name: j.name.clone(),
        group: j.group,
        jobs: ws.len() as u64,
        read: DirStats::default(),
        write: DirStats::default(),
        runtime_s: 0.0,
        cpu_s: None,
        faults: None,
        buckets: None,
        sync_engine: j.engine.is_sync(),
        sampled: false,
        iodepth: spec.iodepth as u64,
        error: 0,
        options: j.own.clone(),
        percentiles: j.percentiles.clone(),
        lat_percentiles: j.lat_percentiles,
        clones_runtime_s: 0.0,
        depths: Default::default(),
        syncs: None,
        // The steady-state watch of the job's last measured pass.
        steadystate: passes
            .iter()
            .rev()
            .find_map(|p| p.rs.phases.iter().find_map(|ph| ph.steady.as_ref()))
            .map(compat::fio::render::SteadyState::of),
    };
    let mut usage = ThreadUse::default();
    let mut buckets = LatBuckets::default();
    for pass in passes {
        let rs = &pass.rs;
        if let Some(err) = rs.errors.first() {
            // fio's error is an errno; a failure ioscale has none for is
            // reported as EIO.
            e.error = err.errno.unwrap_or(libc::EIO);
        }
        for (idx, p) in rs.phases.iter().enumerate() {
            if p.verify.as_ref().is_some_and(|v| v.bad_bytes > 0) && e.error == 0 {
                // fio reports a failed verify as EILSEQ.
                e.error = libc::EILSEQ;
            }
            let pl = pass.lat.iter().find(|l| l.phase == idx);
            let lat = phase_latency(pl, ws, &mut usage, &mut buckets);
            add_phase(&mut e, j, p, ws, whole, lat);
        }
    }
    if usage.measured {
        e.cpu_s = Some(usage.cpu);
        e.faults = Some(usage.faults);
    }
    if buckets.total > 0 {
        e.buckets = Some(buckets);
    }
    e
}

/// An entry's workers' thread usage, summed over phases.
#[derive(Default)]
struct ThreadUse {
    measured: bool,
    cpu: (f64, f64),
    faults: (u64, u64, u64),
}

/// The latencies of an entry's workers in one phase, by direction, and
/// their thread usage and fio latency buckets added to the entry's.
fn phase_latency(
    pl: Option<&bench::run::PhaseLatency>,
    ws: &[u32],
    usage: &mut ThreadUse,
    buckets: &mut LatBuckets,
) -> engine::DirLatency {
    let mut d = engine::DirLatency::new();
    let Some(pl) = pl else { return d };
    let mut all = stats::LatencyHistogram::new();
    for (w, h) in pl.workers.iter().filter(|(w, _)| ws.contains(w)) {
        all += h;
        match pl.detail.iter().find(|(dw, _)| dw == w) {
            Some((_, x)) => d.merge(x),
            // No split kept (not expected under `ioscale fio`): every
            // request counts as a read, which the caller corrects for a
            // single-direction phase.
            None => d.lat[0] += h,
        }
    }
    for (_, u) in pl.usage.iter().filter(|(w, _)| ws.contains(w)) {
        usage.measured = true;
        usage.cpu.0 += u.user_ns as f64 / 1e9;
        usage.cpu.1 += u.sys_ns as f64 / 1e9;
        usage.faults.0 += u.ctx;
        usage.faults.1 += u.majf;
        usage.faults.2 += u.minf;
    }
    buckets.add(&all);
    d
}

/// Adds one phase's bytes, requests, time and latencies to an entry.
fn add_phase(
    e: &mut Entry,
    j: &Job,
    p: &report::PhaseRecord,
    ws: &[u32],
    whole: bool,
    mut lat: engine::DirLatency,
) {
    let op = Op::parse(&p.op).unwrap_or(j.op);
    let mine: Vec<&report::WorkerRecord> = p
        .workers
        .iter()
        .filter(|w| ws.contains(&w.worker))
        .collect();
    let (t0, t1) = mine.iter().fold((f64::MAX, 0.0f64), |(a, b), w| {
        (a.min(w.start_s), b.max(w.end_s))
    });
    let secs = if whole {
        p.elapsed_s
    } else if mine.is_empty() {
        0.0
    } else {
        (t1 - t0).max(0.0)
    };
    e.runtime_s += secs;
    e.clones_runtime_s += if mine.is_empty() {
        secs
    } else {
        mine.iter().map(|w| (w.end_s - w.start_s).max(0.0)).sum()
    };
    e.depths.merge(&lat.depths);
    add_lat(&mut e.syncs, &lat.syncs);
    let bytes: u64 = mine.iter().map(|w| w.bytes).sum();
    let ops: u64 = mine.iter().map(|w| w.ops).sum();
    let mixed = matches!(op, Op::Rw | Op::Randrw);
    if !mixed && !op.reads() && lat.lat[1].is_empty() {
        lat.lat.swap(0, 1);
        lat.clat.swap(0, 1);
        lat.slat.swap(0, 1);
    }
    // Each direction's requests and bytes: a mix's from its split
    // latencies (one per completed request) and the phase's byte counts.
    let (rb, wb, rio, wio) = match (mixed, op.reads()) {
        (false, true) => (bytes, 0, ops, 0),
        (false, false) => (0, bytes, 0, ops),
        (true, _) if whole => (
            p.read_bytes,
            p.write_bytes,
            lat.lat[0].count(),
            lat.lat[1].count(),
        ),
        (true, _) => {
            let (r, w) = (lat.lat[0].count(), lat.lat[1].count());
            let per = bytes.checked_div(r + w).unwrap_or(0);
            (r * per, w * per, r, w)
        }
    };
    for (k, d, b, n) in [(0, &mut e.read, rb, rio), (1, &mut e.write, wb, wio)] {
        if n == 0 && b == 0 {
            continue;
        }
        d.bytes += b;
        d.ios += n;
        d.short += lat.short[k];
        d.runtime_s += secs;
        add_lat(&mut d.lat, &lat.lat[k]);
        if lat.clat[k] != lat.lat[k] {
            add_lat(&mut d.clat, &lat.clat[k]);
        }
        add_lat(&mut d.slat, &lat.slat[k]);
    }
}

fn add_lat(to: &mut Option<Lat>, h: &stats::LatencyHistogram) {
    if h.is_empty() {
        return;
    }
    match to {
        Some(l) => l.hist += h,
        None => *to = Some(Lat { hist: h.clone() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn sweep_point_sets_the_clones_and_their_files() {
        let dir = std::env::temp_dir().join(format!("ioscale-fio-sweep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = argv(&format!(
            "--name=seq --rw=write --bs=64k --size=1m --directory={}",
            dir.display()
        ));
        let s = sweep_point(&a, 3).unwrap();
        assert_eq!(s.threads, 3);
        assert_eq!(s.bytes_per_worker(), 1 << 20);
        match &s.naming {
            FileNaming::Dd {
                paths,
                notrunc,
                nofollow,
            } => {
                assert!(*notrunc && *nofollow);
                assert_eq!(paths[2], dir.join("seq.2.0"));
            }
            n => panic!("{n:?}"),
        }
        // A write job's files are allocated for the point, as fio's are.
        assert_eq!(
            std::fs::metadata(dir.join("seq.2.0")).unwrap().len(),
            1 << 20
        );
        // A read job's files are laid out for the point.
        let r = argv(&format!(
            "--name=rd --rw=read --bs=64k --size=256k --directory={}",
            dir.display()
        ));
        sweep_point(&r, 2).unwrap();
        assert_eq!(
            std::fs::metadata(dir.join("rd.1.0")).unwrap().len(),
            256 << 10
        );
        let t = argv("--name=t --rw=read --size=1m --runtime=1 --time_based");
        assert!(sweep_point(&t, 1).unwrap_err().0.contains("time_based"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn concurrent_jobs_run_together_unless_the_lockstep_cannot_carry_them() {
        let runs = |a: &str| {
            let c = parse::parse_cli(&argv(a)).unwrap();
            plan_runs(parse::jobs(&c).unwrap().0)
        };
        // Other shapes run together: one run of two jobs.
        let r =
            runs("--name=a --rw=write --bs=4k --size=1m --name=b --rw=randread --size=2m").unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].jobs.len(), 2);
        // A stonewall starts the next run.
        let r =
            runs("--name=a --rw=write --size=1m --name=b --stonewall --rw=read --size=1m").unwrap();
        assert_eq!(r.len(), 2);
        for (opt, extra) in [
            ("loops", "--loops=2"),
            ("nrfiles", "--nrfiles=2"),
            ("time_based", "--time_based --runtime=1"),
            ("ramp_time", "--ramp_time=1"),
            ("verify", "--verify=md5"),
            ("unlink", "--unlink=1"),
        ] {
            let e = runs(&format!(
                "--name=a --rw=write --size=1m --name=b --rw=write --size=2m {extra}"
            ))
            .err()
            .unwrap()
            .0;
            assert!(e.contains(opt) && e.contains("stonewall"), "{opt}: {e}");
        }
        // A sized job's own runtime is its own deadline; with passes it is
        // the run's.
        assert!(runs("--name=a --size=1m --runtime=1 --name=b --size=1m --runtime=2").is_ok());
        let e = runs("--name=a --size=1m --nrfiles=2 --runtime=1 --name=b --size=1m --nrfiles=2")
            .err()
            .unwrap()
            .0;
        assert!(e.contains("runtime"), "{e}");
    }
}
