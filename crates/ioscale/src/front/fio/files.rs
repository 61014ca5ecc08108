//! A fio job's data files: which names fio gives them, where each
//! clone's region starts and ends, and which of them a run lays out and
//! removes. This module only computes names and sizes and says which job a
//! refusal is about; every look at, write to or removal of a file goes
//! through the driver library ([`bench::dataset::user::UserFiles`]), which
//! never follows a link, never opens a device, FIFO or socket, and removes
//! only the very files this command made.

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::AtomicBool;

use bench::dataset::user::{Made, UserFiles};
use spec::WorkloadSpec;

use super::parse::Job;
use super::{Run, Usage};

/// The files of a job's clones, as fio names them: file `f` of each clone
/// (`directory/name.CLONE.f`), or `filename=` (one file all clones share).
/// A name must stay inside `directory=`: a job name holding `/` and a
/// relative `filename=` of more than one component (`../x`, `sub/x`) are
/// refused; an absolute `filename=` names its own directory, as in fio.
pub(super) fn job_paths(j: &Job, f: u64) -> Result<Vec<PathBuf>, Usage> {
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
        let fp = Path::new(f);
        if fp.is_absolute() {
            return Ok(vec![fp.to_path_buf(); j.numjobs as usize]);
        }
        let mut parts = fp.components();
        if !matches!(
            (parts.next(), parts.next()),
            (Some(Component::Normal(_)), None)
        ) {
            return Err(Usage(format!(
                "filename={f} (job '{}'): give a file name in directory= (one path component) \
                 or an absolute path; ioscale creates nothing outside directory=",
                j.name
            )));
        }
        // Every clone uses the one file, as in fio.
        return Ok(vec![dir.join(fp); j.numjobs as usize]);
    }
    if j.name.contains('/') {
        return Err(Usage(format!(
            "job name '{}' holds a '/': fio names a job's files NAME.CLONE.FILE in directory=, \
             and ioscale creates nothing outside directory=; rename the job or give filename=",
            j.name
        )));
    }
    Ok((0..j.numjobs)
        .map(|c| dir.join(format!("{}.{c}.{f}", j.name)))
        .collect())
}

/// Looks at every file of a run's jobs (each of its `nrfiles`) before
/// anything is written, through `files`, which holds their directories
/// from now on: a link, a device, a FIFO, a socket, a directory or a
/// hard-linked file under a job's file name is refused naming the job and
/// the file, as is a directory that cannot be opened.
pub(super) fn check_run(files: &mut UserFiles, run: &Run) -> Result<(), Usage> {
    for j in &run.jobs {
        for f in 0..j.nrfiles.max(1) {
            for p in job_paths(j, f)? {
                files
                    .check(&p)
                    .map_err(|e| Usage(format!("job '{}': {e}", j.name)))?;
            }
        }
    }
    Ok(())
}

/// The size of job `j`'s file `p` when it is there (fio's size when none
/// is given): `None` when it is missing or its directory cannot be opened
/// (the job then needs `size=`); a name no job may use is refused.
pub(super) fn size_of(files: &mut UserFiles, j: &Job, p: &Path) -> Result<Option<u64>, Usage> {
    match files.check(p) {
        Ok(size) => Ok(size),
        Err(bench::Error::Setup { .. }) => Ok(None),
        Err(e) => Err(Usage(format!("job '{}': {e}", j.name))),
    }
}

/// Where each clone of `jobs` starts in its file: fio's clone k of a
/// job at `offset + k × offset_increment`, refused (naming the options)
/// when that, or its end after `size` bytes, is past the largest file
/// offset (2^63−1). Empty when every clone starts at 0.
pub(super) fn starts(jobs: &[Job], size: u64) -> Result<Vec<u64>, Usage> {
    let mut out = Vec::new();
    for j in jobs {
        for k in 0..j.numjobs {
            let start = k
                .checked_mul(j.offset_increment)
                .and_then(|x| x.checked_add(j.offset));
            let end = start.and_then(|s| s.checked_add(size));
            match (start, end) {
                (Some(s), Some(e)) if e <= i64::MAX as u64 => out.push(s),
                _ => {
                    let inc = if k > 0 && j.offset_increment > 0 {
                        format!(" and offset_increment={} (clone {k})", j.offset_increment)
                    } else {
                        String::new()
                    };
                    return Err(Usage(format!(
                        "offset={}{inc} (job '{}'): the region of size={size} would end past \
                         the largest file offset (2^63-1 bytes)",
                        j.offset, j.name
                    )));
                }
            }
        }
    }
    if out.iter().all(|&o| o == 0) {
        out.clear();
    }
    Ok(out)
}

/// What laying out a run's files did: fio's layout lines (worker, bytes)
/// and the files this made.
#[derive(Default)]
pub(super) struct LaidOut {
    pub lines: Vec<(usize, u64)>,
    pub made: Vec<Made>,
}

/// fio lays out a file before a job uses it, untimed: each file up to the
/// end of the furthest region a clone moves in it (its start offset plus
/// `size`). For a job that reads (`fill`) it writes the data; for a write
/// job it allocates the blocks (fio's default `fallocate=native`), so the
/// timed writes do not allocate, as fio's do not. What it laid out and
/// made goes into `out` (also when it fails part way: the caller removes
/// the files made under `unlink=1`).
pub(super) fn lay_out(
    files: &mut UserFiles,
    spec: &WorkloadSpec,
    paths: &[PathBuf],
    fill: bool,
    stop: &AtomicBool,
    out: &mut LaidOut,
) -> Result<(), bench::Error> {
    let size = spec.file_size();
    let mut need: Vec<(&PathBuf, u64, usize)> = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        // Checked when planned (`starts`): no overflow here.
        let end = spec.start_offsets.get(i).copied().unwrap_or(0) + size;
        match need.iter_mut().find(|(q, _, _)| *q == p) {
            Some((_, n, _)) => *n = (*n).max(end),
            None => need.push((p, end, i)),
        }
    }
    for (p, end, worker) in need {
        let laid = files.lay_out(p, end, fill, stop)?;
        if laid.extended {
            out.lines.push((worker, end));
        }
        out.made.extend(laid.made);
    }
    Ok(())
}

/// A run's files (`paths`) that it did not make (they were there before
/// it), once each: what `unlink=1` leaves in place.
pub(super) fn found<'a>(paths: impl Iterator<Item = &'a PathBuf>, made: &[Made]) -> Vec<&'a Path> {
    let mut out: Vec<&Path> = Vec::new();
    for p in paths {
        if !made.iter().any(|m| m.path == *p) && !out.contains(&p.as_path()) {
            out.push(p);
        }
    }
    out
}

/// fio's `Laying out IO file` lines: one per clone that had files laid
/// out, with their number and total size in whole MiB.
pub(super) fn layout_lines(run: &Run, laid: &[(usize, u64)]) -> Vec<String> {
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
