//! `ioscale fio …` (and the binary started as `fio`): fio's command lines
//! and job files, run on ioscale's engine, printed in fio's layouts.
//!
//! [`parse`] reads the syntax into typed jobs; this module groups them into
//! runs (jobs that fio would start together, up to the next `stonewall`),
//! maps each run to one [`spec::WorkloadSpec`] with fio's file names
//! (`directory/jobname.CLONE.0`, or `filename=`), runs it on the same driver
//! as `ioscale run`, and [`render`] prints fio's normal or JSON output from
//! the measured figures only.

pub mod parse;
pub mod render;
pub mod sample;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use spec::{FileNaming, Layout, Op, RawWorkload, SyncMode, WorkloadSpec};

use self::parse::{EngineKind, Format, Job};
use self::render::{DirStats, Entry, Header, Lat, LatBuckets, Report, SampleStat};
use self::sample::{Sampled, Sampler, Tick};
use super::Usage;
use crate::exit::{Exit, Failure};

/// `ioscale fio --help`.
pub const HELP: &str = "\
ioscale fio: run fio job files and command lines on ioscale's engine

Usage: ioscale fio [--output=FILE] [--output-format=normal|json|json+|terse]
                   [--ioscale-json=FILE] [JOBFILE]... [--OPTION=VALUE]...
                   [--name=JOB --OPTION=VALUE...]...
       (or a symlink named `fio` to the ioscale binary)

Job options (fio's names and units; k/m/g are powers of 2 unless kb_base=1000):
  name filename directory nrfiles size filesize rw/readwrite bs bsrange(one size)
  rwmixread rwmixwrite numjobs thread iodepth ioengine(psync|sync|pvsync|io_uring)
  direct buffered sync(0|1|dsync) dsync fsync fdatasync end_fsync fsync_on_close
  runtime time_based ramp_time startdelay loops randrepeat
  randseed norandommap verify(crc32c|md5|pattern) create_on_open unlink
  group_reporting lat_percentiles percentile_list stonewall wait_for_previous
  new_group kb_base offset offset_increment
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
Jobs that fio would run at the same time must have the same workload shape
(rw, bs, size, engine…); separate others with `stonewall`. What ioscale does
not measure (IO depth distribution) is left out of the output;
docs/compat.md lists every difference.
";

/// One run: the jobs fio would start together.
struct Run {
    jobs: Vec<Job>,
}

/// Splits the jobs at each `stonewall` and checks that jobs running
/// together share one workload shape (ioscale runs one shape at a time).
fn plan_runs(jobs: Vec<Job>) -> Result<Vec<Run>, Usage> {
    let mut runs: Vec<Run> = Vec::new();
    for j in jobs {
        match runs.last_mut() {
            Some(r) if !j.stonewall => {
                let first = &r.jobs[0];
                if let Some(diff) = shape_differs(first, &j) {
                    return Err(Usage(format!(
                        "job '{}' would run at the same time as '{}' (fio starts jobs together unless \
                         `stonewall`), but its {diff} differs; ioscale runs one workload shape at a time: \
                         add `stonewall` to '{}' to run it after",
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

/// Which workload setting two concurrent jobs disagree on, if any.
fn shape_differs(a: &Job, b: &Job) -> Option<&'static str> {
    let checks: [(&'static str, bool); 15] = [
        ("nrfiles", a.nrfiles == b.nrfiles),
        ("rw", a.op == b.op),
        ("bs", a.bs == b.bs),
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
            a.runtime == b.runtime && a.time_based == b.time_based && a.ramp_time == b.ramp_time,
        ),
        ("loops", a.loops == b.loops),
        ("startdelay", a.startdelay == b.startdelay),
        ("randseed", a.seed == b.seed),
        ("verify", a.verify == b.verify),
        ("unlink", a.unlink == b.unlink),
        ("rwmixread", a.rwmixread == b.rwmixread),
    ];
    checks.iter().find(|(_, same)| !same).map(|(n, _)| *n)
}

/// The files of a job's clones, as fio names them: file `f` of each clone
/// (`name.CLONE.f`).
fn job_paths(j: &Job, f: u64) -> Result<Vec<PathBuf>, Usage> {
    if let Some(d) = &j.directory {
        if d.contains(':') {
            return Err(Usage(format!(
                "directory={d}: several directories are not supported; give one"
            )));
        }
    }
    let dir = PathBuf::from(j.directory.as_deref().unwrap_or("."));
    if let Some(f) = &j.filename {
        if f.contains(':') {
            return Err(Usage(format!(
                "filename={f}: several files per job are not supported; give one"
            )));
        }
        if f.starts_with("/dev/") {
            return Err(Usage(format!(
                "filename={f}: ioscale works on regular files only, never devices"
            )));
        }
        let p = if Path::new(f).is_absolute() {
            PathBuf::from(f)
        } else {
            dir.join(f)
        };
        // Every clone uses the one file, as in fio.
        return Ok(vec![p; j.numjobs as usize]);
    }
    Ok((0..j.numjobs)
        .map(|c| dir.join(format!("{}.{c}.{f}", j.name)))
        .collect())
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
    if j.nrfiles > 1 && j.filesize.is_some() {
        return Err(Usage(format!(
            "nrfiles={} with filesize= (job '{n}'): give size= (the bytes each clone moves, \
             split evenly over its files)",
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

/// The size of each clone's file and the bytes of I/O it does.
fn job_size(j: &Job, paths: &[PathBuf]) -> Result<u64, Usage> {
    let size = match (j.size, j.filesize) {
        (Some(s), Some(f)) if s != f => {
            return Err(Usage(format!(
                "size={s} and filesize={f} (job '{}'): ioscale moves the whole file once per loop; give one",
                j.name
            )))
        }
        (Some(s), _) | (None, Some(s)) => s,
        (None, None) => {
            // fio uses an existing file's size when none is given.
            match std::fs::metadata(&paths[0]) {
                Ok(m) if m.is_file() && m.len() >= j.bs => m.len() / j.bs * j.bs,
                _ => {
                    return Err(Usage(format!(
                        "job '{}': size= is required (the bytes each clone moves, e.g. size=1g)",
                        j.name
                    )))
                }
            }
        }
    };
    if j.bs == 0 {
        return Err(Usage(format!(
            "bs=0 (job '{}'): must be at least 1",
            j.name
        )));
    }
    // nrfiles share size= (filesize= is each file's).
    let size = if j.nrfiles > 1 && j.filesize.is_none() {
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

/// One run as an ioscale workload over file `f` of each clone
/// (`nrfiles`), and the notes it needs.
fn to_raw(run: &Run, f: u64) -> Result<(RawWorkload, Vec<PathBuf>, Vec<String>), Usage> {
    let j = &run.jobs[0];
    let mut notes = Vec::new();
    let mut paths = Vec::new();
    // fio's clone k of a job starts at offset + k × offset_increment.
    let mut starts = Vec::new();
    for job in &run.jobs {
        refuse_unsupported(job)?;
        paths.extend(job_paths(job, f)?);
        starts.extend((0..job.numjobs).map(|k| job.offset + k * job.offset_increment));
    }
    if starts.iter().all(|&o| o == 0) {
        starts.clear();
    }
    let size = job_size(j, &paths)?;
    let mut ops = vec![j.op];
    if j.verify.is_some() {
        ops.push(if j.op == Op::Randwrite {
            Op::Randread
        } else {
            Op::Read
        });
        notes.push(format!(
            "verify={}: ioscale writes its own checkable pattern and reads it back after the write \
             (the read-back is reported as reads, as fio does)",
            j.verify.as_deref().unwrap_or("")
        ));
    }
    let sync = if j.osync {
        SyncMode::Each
    } else if j.odsync {
        SyncMode::Dsync
    } else if j.fsync > 0 {
        SyncMode::Every(j.fsync)
    } else if j.fdatasync > 0 {
        notes.push("fdatasync=N: ioscale issues fsync (data and metadata) instead".into());
        SyncMode::Every(j.fdatasync)
    } else if j.end_fsync || j.fsync_on_close {
        SyncMode::End
    } else {
        SyncMode::None
    };
    let iodepth = match j.engine {
        EngineKind::Sync => {
            if j.iodepth > 1 {
                notes.push(format!(
                    "ioengine={} is synchronous: queue depth capped at 1 (as fio does)",
                    j.ioengine
                ));
            }
            1
        }
        EngineKind::IoUring => j.iodepth.max(1),
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
            nofollow: false,
        }),
        start_offsets: starts,
        ..Default::default()
    };
    Ok((raw, paths, notes))
}

/// fio lays out a file before a job uses it, untimed: each file up to the
/// end of the furthest region a clone moves in it (its start offset plus
/// `size`). For a read job (`fill`) it writes the data; for a write job it
/// allocates the blocks (fio's default `fallocate=native`), so the timed
/// writes do not allocate, as fio's do not. Records in `out` (worker,
/// bytes) for each file laid out; returns the files this created.
fn lay_out(
    paths: &[PathBuf],
    starts: &[u64],
    size: u64,
    fill: bool,
    out: &mut Vec<(usize, u64)>,
) -> std::io::Result<Vec<PathBuf>> {
    let mut created = Vec::new();
    let mut need: Vec<(PathBuf, u64, usize)> = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let end = starts.get(i).copied().unwrap_or(0) + size;
        match need.iter_mut().find(|(q, _, _)| q == p) {
            Some((_, n, _)) => *n = (*n).max(end),
            None => need.push((p.clone(), end, i)),
        }
    }
    let chunk = vec![0xa5u8; 1 << 20];
    for (p, size, worker) in &need {
        let (p, size) = (p, *size);
        let have = std::fs::metadata(p).map(|m| m.len()).ok();
        if have.is_some_and(|l| l >= size) {
            continue;
        }
        if have.is_none() {
            created.push(p.clone());
        }
        out.push((*worker, size));
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(p)?;
        if !fill {
            use std::os::fd::AsRawFd;
            // SAFETY: a valid descriptor and a range; no memory involved.
            let rc = unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, size as libc::off_t) };
            // A file system without fallocate gets its blocks from the
            // writes, as fio's fallback does.
            if rc != 0 && rc != libc::EOPNOTSUPP && rc != libc::EINVAL {
                return Err(std::io::Error::from_raw_os_error(rc));
            }
            continue;
        }
        use std::io::{Seek, SeekFrom};
        let mut at = have.unwrap_or(0);
        f.seek(SeekFrom::Start(at))?;
        while at < size {
            let n = (size - at).min(chunk.len() as u64) as usize;
            f.write_all(&chunk[..n])?;
            at += n as u64;
        }
        f.sync_all()?;
    }
    Ok(created)
}

/// fio's `Laying out IO file` lines: one per clone that had files laid
/// out, with their number and total size in whole MiB.
fn layout_lines(run: &Run, laid: &[(usize, u64)]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut first = 0usize;
    for j in &run.jobs {
        for w in first..first + j.numjobs as usize {
            let mine: Vec<u64> = laid
                .iter()
                .filter(|(x, _)| *x == w)
                .map(|(_, b)| *b)
                .collect();
            let mib = mine.iter().sum::<u64>() >> 20;
            match mine.len() {
                0 => {}
                1 => lines.push(format!(
                    "{}: Laying out IO file (1 file / {mib}MiB)",
                    j.name
                )),
                n => lines.push(format!(
                    "{}: Laying out IO files ({n} files / total {mib}MiB)",
                    j.name
                )),
            }
        }
        first += j.numjobs as usize;
    }
    lines
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
    let (raw, paths, _) = to_raw(&run, 0)?;
    let spec = raw.build().map_err(|e| {
        Usage(super::in_tool_terms(
            "fio",
            &e.to_string(),
            &e.flags(),
            &[("--xfer", "bs=")],
        ))
    })?;
    let reads = spec.ops.iter().all(|o| !o.writes());
    if reads || spec.ops.iter().all(|o| !o.reads()) {
        lay_out(
            &paths,
            &spec.start_offsets,
            spec.file_size(),
            reads,
            &mut Vec::new(),
        )
        .map_err(|e| Usage(format!("laying out {}: {e}", paths[0].display())))?;
    }
    Ok(spec)
}

/// Runs the fio front-end.
pub fn main(args: &[String]) -> Exit {
    crate::launch::as_ranks(|coord| ranks_main(args, coord))
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
    // fio's figures: latencies by direction, submission latency.
    engine::worker::set_detail(true);
    let progress = super::progress_mode(cli.progress)?;
    let (jobs, global) = parse::jobs(&cli)?;
    // fio logs every I/O of a job with logs and no log_avg_msec; a sized
    // job's ramp is cut out of its requests afterwards.
    engine::worker::set_io_log(
        jobs.iter()
            .any(|j| (has_logs(j) && j.log_avg_msec == 0) || sized_ramp(j)),
    );
    // Check every run before the first one starts.
    let planned = plan_runs(jobs).and_then(plan_specs)?;
    if cli.print_spec {
        let specs: Vec<&WorkloadSpec> = planned
            .iter()
            .flat_map(|p| p.files.iter().map(|(s, _)| s))
            .collect();
        println!("{}", serde_json::to_string_pretty(&specs)?);
        return Ok(0);
    }
    crate::output::check_output_set(
        &[
            ("--output", cli.output.as_deref()),
            ("--ioscale-json", cli.ioscale_json.as_deref()),
        ],
        &[],
    )
    .map_err(Failure::refused)?;
    let stop = crate::launch::install_signals()?;
    let mut argv = vec!["fio".to_string()];
    argv.extend(args.iter().cloned());
    let mut st = Session::new(global);
    let ctx = RunCtx {
        argv: &argv,
        stop: &stop,
        coord,
        progress,
    };
    for p in &planned {
        match st.run(p, &ctx) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(Failure::Refused(e)),
        }
    }
    st.finish_disks();
    emit(&cli, &st.report, &st.records)?;
    Ok(st.code)
}

/// One run with its workloads (one per file of each clone, `nrfiles`)
/// and the notes made while mapping it.
struct Planned {
    run: Run,
    files: Vec<(WorkloadSpec, Vec<PathBuf>)>,
    notes: Vec<String>,
}

/// Maps every run to its workloads, refusing what ioscale cannot run.
fn plan_specs(runs: Vec<Run>) -> Result<Vec<Planned>, Usage> {
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
        let mut files = Vec::new();
        let mut notes = Vec::new();
        for f in 0..run.jobs[0].nrfiles.max(1) {
            let (raw, paths, n) = to_raw(&run, f)?;
            notes = n;
            let spec = raw.build().map_err(|e| {
                let msg = e.to_string();
                Usage(super::in_tool_terms("fio", &msg, &e.flags(), NATIVE_FLAGS))
            })?;
            files.push((spec, paths));
        }
        planned.push(Planned { run, files, notes });
    }
    Ok(planned)
}

/// What every run of a command shares.
struct RunCtx<'a> {
    argv: &'a [String],
    stop: &'a std::sync::Arc<std::sync::atomic::AtomicBool>,
    coord: &'a dyn coord::Coordinator,
    progress: crate::progress::ProgressMode,
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
}

impl Session {
    fn new(global: Vec<(String, String)>) -> Session {
        Session {
            report: Report {
                version: format!("ioscale-{}", env!("CARGO_PKG_VERSION")),
                started: std::time::SystemTime::now(),
                started_text: super::ctime_now(),
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
        }
    }

    /// Runs one run and adds its entries; `Ok(false)`: interrupted, stop.
    fn run(&mut self, p: &Planned, ctx: &RunCtx<'_>) -> Result<bool, String> {
        let (run, files) = (&p.run, &p.files);
        let (spec, paths) = (&files[0].0, &files[0].1);
        for n in &p.notes {
            eprintln!("fio: note: {n}");
        }
        for j in &run.jobs {
            self.report.headers.push(Header::of(j));
        }
        if !run.jobs[0].startdelay.is_zero()
            && safefs::sleep_or_stop(run.jobs[0].startdelay, ctx.stop) == safefs::Waited::Stopped
        {
            self.code = 130;
            return Ok(false);
        }
        let created = self.lay_out_files(run, files)?;
        if self.disk_dev.is_none() {
            let host = bench::host::collect(&spec.target);
            self.disk_dev = render::disk_name(&host.fs_source);
            self.disk_before = self.disk_dev.as_deref().and_then(render::read_diskstats);
        }
        let workers = paths.len() as u32;
        let every = run
            .jobs
            .iter()
            .filter(|j| has_logs(j) && j.log_avg_msec > 0)
            .map(|j| j.log_avg_msec)
            .min()
            .unwrap_or(BW_AVG_MSEC);
        let specs: Vec<WorkloadSpec> = files.iter().map(|(s, _)| s.clone()).collect();
        let live = super::live(ctx.progress, true, spec.reps, spec.ops.len(), 1);
        let passes = run_passes(
            &specs,
            run,
            ctx,
            workers,
            std::time::Duration::from_millis(every),
        );
        drop(live);
        let (passes, c, mut sampled) = passes?;
        let cut = sized_ramp(&run.jobs[0]).then(|| sampled.t0 + run.jobs[0].ramp_time);
        if let Some(cut) = cut {
            cut_ticks(&mut sampled, cut);
        }
        self.code = self.code.max(c);
        for p in &passes {
            super::print_errors("fio", &p.rs);
            super::print_mismatches("fio", &p.rs);
        }
        self.report
            .entries
            .extend(entries_of(run, spec, &passes, &sampled.ticks, cut));
        if let Err(e) = write_logs(run, &passes, &sampled, self.thread_base, cut) {
            eprintln!("fio: error: {e}");
            self.code = self.code.max(1);
        }
        self.thread_base += u64::from(workers);
        self.records.extend(passes.into_iter().map(|p| p.rs));
        if run.jobs[0].unlink {
            for p in &created {
                let _ = std::fs::remove_file(p);
            }
        }
        Ok(self.code != 130)
    }

    /// Lays out a run's files (fio's `Laying out IO file` lines); returns
    /// the files it created.
    fn lay_out_files(
        &mut self,
        run: &Run,
        files: &[(WorkloadSpec, Vec<PathBuf>)],
    ) -> Result<Vec<PathBuf>, String> {
        let mut created = Vec::new();
        let mut laid = Vec::new();
        for (spec, paths) in files {
            // Files a job reads (a mix too) are written out first, as fio
            // lays them out; files it only writes are allocated.
            let reads = spec.ops.iter().any(|o| o.reads());
            let c = lay_out(
                paths,
                &spec.start_offsets,
                spec.file_size(),
                reads,
                &mut laid,
            )
            .map_err(|e| format!("laying out {}: {e}", paths[0].display()))?;
            created.extend(c);
        }
        self.report.layout_lines.extend(layout_lines(run, &laid));
        Ok(created)
    }

    /// The disk's counters over the whole command.
    fn finish_disks(&mut self) {
        if let (Some(dev), Some(before)) = (&self.disk_dev, &self.disk_before) {
            if let Some(after) = render::read_diskstats(dev) {
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

/// Prints (or writes to `--output`) the report in each asked format, and
/// writes `--ioscale-json`.
fn emit(cli: &parse::Cli, report: &Report, records: &[report::ResultSet]) -> anyhow::Result<()> {
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
                if *f == Format::JsonPlus {
                    eprintln!(
                        "fio: note: json+: ioscale keeps no per-bucket latency bins; the output is fio's json"
                    );
                }
                text.push_str(&serde_json::to_string_pretty(&render::json(report))?);
                text.push('\n');
            }
            Format::Terse => text.push_str(&render::terse(report)),
        }
    }
    match &cli.output {
        Some(p) => crate::output::write_atomic(p, text.as_bytes())
            .map_err(|e| anyhow::anyhow!("--output {}: {e:#}", p.display()))?,
        None => std::io::stdout().write_all(text.as_bytes())?,
    }
    if let Some(p) = &cli.ioscale_json {
        let v = if records.len() == 1 {
            serde_json::to_value(&records[0])?
        } else {
            serde_json::to_value(records)?
        };
        crate::output::write_atomic(p, serde_json::to_string_pretty(&v)?.as_bytes())
            .map_err(|e| anyhow::anyhow!("--ioscale-json {}: {e:#}", p.display()))?;
    }
    let mut said = std::collections::BTreeSet::new();
    for w in records.iter().flat_map(|rs| &rs.warnings) {
        if said.insert(w) {
            eprintln!("fio: warning: {w}");
        }
    }
    Ok(())
}

/// One pass of a run's spec: its record and each phase's per-worker
/// latency histograms.
struct Pass {
    rs: report::ResultSet,
    lat: Vec<bench::run::PhaseLatency>,
}

/// fio's `bw_avg_time`/`iops_avg_time` default: one bw/iops sample per
/// 500 ms.
const BW_AVG_MSEC: u64 = 500;

fn has_logs(j: &Job) -> bool {
    j.bw_log.is_some() || j.lat_log.is_some() || j.iops_log.is_some()
}

/// Runs one run's specs (one per file of each clone, `nrfiles`) in turn:
/// once, or (with `time_based`) again and again until `runtime` has
/// passed, as fio loops over its files until time is up.
/// A `ramp_time` runs first as passes that are not kept, as fio leaves
/// the ramp out of its figures. Returns the measured passes, the exit code
/// and each worker's per-interval figures.
#[allow(clippy::type_complexity)]
fn run_passes(
    specs: &[WorkloadSpec],
    run: &Run,
    ctx: &RunCtx<'_>,
    workers: u32,
    every: std::time::Duration,
) -> Result<(Vec<Pass>, i32, Sampled), String> {
    let j = &run.jobs[0];
    let pass = |i: usize, limit: Option<std::time::Duration>| {
        let mut s = specs[i % specs.len()].clone();
        if limit.is_some() {
            s.time_limit = limit;
        }
        bench::run::run_with(&s, ctx.argv.to_vec(), ctx.stop.clone(), ctx.coord)
            .map_err(|e| e.to_string())
    };
    if !j.ramp_time.is_zero() && j.time_based {
        let t0 = Instant::now();
        for i in 0.. {
            let left = j.ramp_time.saturating_sub(t0.elapsed());
            if left.is_zero() {
                break;
            }
            let o = pass(i, Some(left))?;
            let code = o.exit_code();
            if code != 0 {
                return Ok((
                    vec![Pass {
                        rs: o.results,
                        lat: o.latency,
                    }],
                    code,
                    Sampled {
                        ticks: Vec::new(),
                        t0: Instant::now(),
                    },
                ));
            }
        }
    }
    let sampler = Sampler::start(workers, every, specs[0].ops[0]);
    let t0 = Instant::now();
    let mut out = Vec::new();
    let mut code = 0;
    loop {
        let limit = match j.runtime {
            Some(rt) => {
                let left = rt.saturating_sub(t0.elapsed());
                if left.is_zero() {
                    break;
                }
                Some(left)
            }
            None => None,
        };
        let o = match pass(out.len(), limit) {
            Ok(o) => o,
            Err(e) => {
                sampler.finish();
                return Err(e);
            }
        };
        code = o.exit_code();
        let done = o
            .results
            .phases
            .iter()
            .any(|p| p.time_limited || p.interrupted);
        out.push(Pass {
            rs: o.results,
            lat: o.latency,
        });
        // Without time_based, one pass over each file.
        let once = !j.time_based || j.runtime.is_none();
        if code != 0 || done || (once && out.len() == specs.len()) || out.len() > 1_000_000 {
            break;
        }
    }
    Ok((out, code, sampler.finish()))
}

/// Writes fio's logs of the jobs that ask for them: `NAME_bw.N.log`,
/// `NAME_iops.N.log`, `NAME_lat.N.log`, `_clat` and `_slat` (empty for a
/// sync engine, which times no submission), N numbering every clone from 1
/// as fio does. With `log_avg_msec=M` a line per M ms interval and
/// direction, `msec, value, ddir, 0, 0` (the interval's KiB/s, IOPS or
/// mean ns); without, a line per request, `msec, value, ddir, bs, 0`, as
/// fio logs every I/O.
fn write_logs(
    run: &Run,
    passes: &[Pass],
    sampled: &Sampled,
    thread_base: u64,
    cut: Option<Instant>,
) -> Result<(), String> {
    let mut w = 0usize;
    for j in &run.jobs {
        for _ in 0..j.numjobs {
            let n = thread_base + w as u64 + 1;
            let files = if j.log_avg_msec > 0 {
                let mine: &[Tick] = sampled.ticks.get(w).map(Vec::as_slice).unwrap_or(&[]);
                interval_logs(j, mine, n)
            } else {
                let mine: Vec<&engine::IoLogEntry> = passes
                    .iter()
                    .flat_map(|p| &p.lat)
                    .flat_map(|pl| &pl.detail)
                    .filter(|(x, _)| *x as usize == w)
                    .flat_map(|(_, d)| &d.log)
                    .filter(|e| cut.is_none_or(|c| e.done >= c))
                    .collect();
                io_logs(j, &mine, sampled.t0, n)
            };
            for (path, body) in files {
                std::fs::write(&path, body).map_err(|e| format!("writing the log {path}: {e}"))?;
            }
            w += 1;
        }
    }
    Ok(())
}

/// The log files of a job with `log_avg_msec`: (path, text).
fn interval_logs(j: &Job, mine: &[Tick], n: u64) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = Vec::new();
    let line = |t: &Tick, v: u64| format!("{}, {v}, {}, 0, 0\n", t.t_ms, t.ddir());
    let whole = || mine.iter().filter(|t| t.full);
    if let Some(p) = &j.bw_log {
        let body: String = whole().map(|t| line(t, t.kib_s() as u64)).collect();
        files.push((format!("{p}_bw.{n}.log"), body));
    }
    if let Some(p) = &j.iops_log {
        let body: String = whole().map(|t| line(t, t.iops() as u64)).collect();
        files.push((format!("{p}_iops.{n}.log"), body));
    }
    if let Some(p) = &j.lat_log {
        let avg = |f: fn(&Tick) -> u64| -> String {
            mine.iter().map(|t| line(t, f(t) / t.ios.max(1))).collect()
        };
        files.push((format!("{p}_lat.{n}.log"), avg(|t| t.lat_ns)));
        files.push((
            format!("{p}_clat.{n}.log"),
            avg(|t| t.lat_ns.saturating_sub(t.slat_ns)),
        ));
        // A sync engine times no submission: fio's empty file.
        let slat = if j.engine == EngineKind::Sync {
            String::new()
        } else {
            avg(|t| t.slat_ns)
        };
        files.push((format!("{p}_slat.{n}.log"), slat));
    }
    files
}

/// The log files of a job without `log_avg_msec`: a line per request,
/// at its completion (its submission for slat), ms since the job started.
/// bw is the request's bytes over its clat, in fio's unit
/// (bytes × 10⁶ ÷ ns); iops is 1 per request.
fn io_logs(j: &Job, mine: &[&engine::IoLogEntry], t0: Instant, n: u64) -> Vec<(String, String)> {
    let ms = |t: Instant| t.saturating_duration_since(t0).as_millis() as u64;
    let line = |t: u64, v: u64, e: &engine::IoLogEntry| {
        format!("{t}, {v}, {}, {}, 0\n", u8::from(e.write), e.len)
    };
    let clat = |e: &engine::IoLogEntry| e.lat_ns - e.slat_ns.unwrap_or(0).min(e.lat_ns);
    let each = |f: &dyn Fn(&engine::IoLogEntry) -> u64| -> String {
        mine.iter().map(|e| line(ms(e.done), f(e), e)).collect()
    };
    let mut files: Vec<(String, String)> = Vec::new();
    if let Some(p) = &j.bw_log {
        let bw =
            |e: &engine::IoLogEntry| (e.len as u64 * 1_000_000).checked_div(clat(e)).unwrap_or(0);
        files.push((format!("{p}_bw.{n}.log"), each(&bw)));
    }
    if let Some(p) = &j.iops_log {
        files.push((format!("{p}_iops.{n}.log"), each(&|_| 1)));
    }
    if let Some(p) = &j.lat_log {
        files.push((format!("{p}_lat.{n}.log"), each(&|e| e.lat_ns)));
        files.push((format!("{p}_clat.{n}.log"), each(&clat)));
        // Logged when the request was handed over, as fio does.
        let slat: String = mine
            .iter()
            .filter_map(|e| {
                let sl = e.slat_ns?;
                let issued = e.done - std::time::Duration::from_nanos(clat(e));
                Some(line(ms(issued), sl, e))
            })
            .collect();
        files.push((format!("{p}_slat.{n}.log"), slat));
    }
    files
}

/// The report entries of one run: per job clone, or per job with
/// `group_reporting`. Latency, bandwidth and IOPS samples, CPU time and
/// faults are measured per worker (thread), so every entry has them.
fn entries_of(
    run: &Run,
    spec: &WorkloadSpec,
    passes: &[Pass],
    ticks: &[Vec<Tick>],
    cut: Option<Instant>,
) -> Vec<Entry> {
    let total_workers: u64 = run.jobs.iter().map(|j| j.numjobs).sum();
    let mut out = Vec::new();
    let mut first = 0u64;
    for j in &run.jobs {
        let grouped = j.group_reporting || j.numjobs == 1;
        let sets: Vec<Vec<u32>> = if grouped {
            vec![(first..first + j.numjobs).map(|w| w as u32).collect()]
        } else {
            (first..first + j.numjobs).map(|w| vec![w as u32]).collect()
        };
        for ws in sets {
            let whole = ws.len() as u64 == total_workers;
            let mut e = entry(j, spec, passes, &ws, whole);
            if let Some(cut) = cut {
                after_ramp(&mut e, &ws, passes, cut);
            }
            e.sampled = true;
            for (d, reads) in [(&mut e.read, true), (&mut e.write, false)] {
                for &w in &ws {
                    let t = ticks.get(w as usize).map(Vec::as_slice).unwrap_or(&[]);
                    let (bw, iops) = sample::samples(t, reads);
                    d.bw_stat = SampleStat::sum(d.bw_stat, SampleStat::of(&bw));
                    d.iops_stat = SampleStat::sum(d.iops_stat, SampleStat::of(&iops));
                }
            }
            out.push(e);
        }
        first += j.numjobs;
    }
    out
}

fn entry(j: &Job, spec: &WorkloadSpec, passes: &[Pass], ws: &[u32], whole: bool) -> Entry {
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
        sync_engine: j.engine == EngineKind::Sync,
        sampled: false,
        iodepth: spec.iodepth as u64,
        error: 0,
        options: j.own.clone(),
        percentiles: j.percentiles.clone(),
        lat_percentiles: j.lat_percentiles,
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

/// A sized job with `ramp_time`: its figures leave out what completed in
/// the ramp, as fio resets a job's statistics when its ramp ends.
fn sized_ramp(j: &Job) -> bool {
    !j.ramp_time.is_zero() && !j.time_based
}

/// Drops the intervals that began before the ramp ended.
fn cut_ticks(sampled: &mut Sampled, cut: Instant) {
    let ramp_ms = cut.saturating_duration_since(sampled.t0).as_millis() as f64;
    for t in &mut sampled.ticks {
        t.retain(|x| x.t_ms as f64 - x.dt_ms >= ramp_ms - 0.5);
    }
}

/// An entry's bytes, requests, latencies and run time from its requests
/// that completed at or after `cut` (the end of the ramp), as fio counts a
/// sized job after its ramp. Workers that were done before the ramp ended
/// keep all their figures: fio resets only a job still running then.
fn after_ramp(e: &mut Entry, ws: &[u32], passes: &[Pass], cut: Instant) {
    let logs: Vec<&[engine::IoLogEntry]> = passes
        .iter()
        .flat_map(|p| &p.lat)
        .flat_map(|pl| &pl.detail)
        .filter(|(w, _)| ws.contains(w))
        .map(|(_, d)| d.log.as_slice())
        .collect();
    let last = logs.iter().flat_map(|l| l.iter()).map(|x| x.done).max();
    let Some(last) = last.filter(|&l| l >= cut) else {
        return;
    };
    let mut d = engine::DirLatency::new();
    let mut bytes = [0u64; 2];
    for x in logs.iter().flat_map(|l| l.iter()).filter(|x| x.done >= cut) {
        let k = usize::from(x.write);
        d.lat[k].record(x.lat_ns);
        d.clat[k].record(x.lat_ns - x.slat_ns.unwrap_or(0).min(x.lat_ns));
        if let Some(sl) = x.slat_ns {
            d.slat[k].record(sl);
        }
        bytes[k] += u64::from(x.len);
    }
    let secs = last.duration_since(cut).as_secs_f64();
    e.runtime_s = secs;
    let mut buckets = LatBuckets::default();
    for (k, ds) in [(0, &mut e.read), (1, &mut e.write)] {
        *ds = DirStats {
            bytes: bytes[k],
            ios: d.lat[k].count(),
            runtime_s: secs,
            ..DirStats::default()
        };
        if ds.ios == 0 {
            ds.runtime_s = 0.0;
        }
        add_lat(&mut ds.lat, &d.lat[k]);
        if d.clat[k] != d.lat[k] {
            add_lat(&mut ds.clat, &d.clat[k]);
        }
        add_lat(&mut ds.slat, &d.slat[k]);
        buckets.add(&d.lat[k]);
    }
    e.buckets = (buckets.total > 0).then_some(buckets);
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
            FileNaming::Dd { paths, notrunc, .. } => {
                assert!(*notrunc);
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
    fn concurrent_jobs_of_another_shape_are_refused() {
        let c = parse::parse_cli(&argv(
            "--name=a --rw=write --size=1m --name=b --rw=write --size=2m",
        ))
        .unwrap();
        let (jobs, _) = parse::jobs(&c).unwrap();
        let e = plan_runs(jobs).err().unwrap().0;
        assert!(e.contains("size") && e.contains("stonewall"), "{e}");
    }
}
