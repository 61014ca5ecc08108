//! fio's per-job logs (`write_bw_log`, `write_iops_log`, `write_lat_log`):
//! their names, known before the first run so that every one is checked
//! with the command's other outputs ([`outputs`]; a symbolic link at a
//! log's name is refused, exit 2: the names are predictable), and their
//! text, written through the binary's safe output routine
//! (`crate::output::write_named_nofollow`): a FIFO is written into (a
//! signal ends the wait for its reader), a device other than a character
//! device is refused, a regular file is replaced whole by name through its
//! held directory, and a link planted at the name meanwhile is refused,
//! never followed.

use std::path::PathBuf;
use std::time::Duration;

use bench::sampling::{Sampled, Tick};

use super::parse::Job;
use super::{Pass, Planned, Run};

/// One of the logs fio writes for a job.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Log {
    Bw,
    Iops,
    Lat,
    Clat,
    Slat,
}

impl Log {
    /// The option that asks for it (names it in messages).
    fn option(self) -> &'static str {
        match self {
            Log::Bw => "write_bw_log",
            Log::Iops => "write_iops_log",
            Log::Lat | Log::Clat | Log::Slat => "write_lat_log",
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            Log::Bw => "bw",
            Log::Iops => "iops",
            Log::Lat => "lat",
            Log::Clat => "clat",
            Log::Slat => "slat",
        }
    }
}

/// The logs job `j` asks for, with their name prefixes, in fio's order.
fn logs_of(j: &Job) -> Vec<(Log, &str)> {
    let mut v = Vec::new();
    if let Some(p) = &j.bw_log {
        v.push((Log::Bw, p.as_str()));
    }
    if let Some(p) = &j.iops_log {
        v.push((Log::Iops, p.as_str()));
    }
    if let Some(p) = &j.lat_log {
        v.extend([Log::Lat, Log::Clat, Log::Slat].map(|l| (l, p.as_str())));
    }
    v
}

/// fio's name of clone `n`'s log: `PREFIX_KIND.N.log`.
fn path_of(prefix: &str, log: Log, n: u64) -> PathBuf {
    PathBuf::from(format!("{prefix}_{}.{n}.log", log.suffix()))
}

/// Whether job `j` writes any log.
pub(super) fn has_logs(j: &Job) -> bool {
    j.bw_log.is_some() || j.lat_log.is_some() || j.iops_log.is_some()
}

/// Every log file the runs will write, with the option that names it,
/// numbering every clone of every job from 1 as fio does.
pub(super) fn outputs(planned: &[Planned]) -> Vec<(&'static str, PathBuf)> {
    let mut out = Vec::new();
    let mut n = 0u64;
    for p in planned {
        for j in &p.run.jobs {
            for _ in 0..j.numjobs {
                n += 1;
                for (log, prefix) in logs_of(j) {
                    out.push((log.option(), path_of(prefix, log, n)));
                }
            }
        }
    }
    out
}

/// Writes fio's logs of the jobs that ask for them: `NAME_bw.N.log`,
/// `NAME_iops.N.log`, `NAME_lat.N.log`, `_clat` and `_slat` (empty for a
/// sync engine, which times no submission), N numbering every clone from 1
/// as fio does. With `log_avg_msec=M` a line per M ms interval and
/// direction, `msec, value, ddir, 0, 0` (the interval's KiB/s, IOPS or
/// mean ns); without, a line per request, `msec, value, ddir, bs, 0`, as
/// fio logs every I/O. Returns the logs that could not be written, each
/// naming its option and file (the others are written all the same).
pub(super) fn write(
    run: &Run,
    passes: &[Vec<Pass>],
    sampled: &Sampled,
    thread_base: u64,
    cut: Option<super::ramp::Cut>,
) -> Vec<String> {
    let mut failed = Vec::new();
    let mut w = 0usize;
    for (i, j) in run.jobs.iter().enumerate() {
        let job_passes = super::of_job(passes, i);
        for clone in 0..j.numjobs as u32 {
            let n = thread_base + w as u64 + 1;
            let files = if j.log_avg_msec > 0 {
                let mine: &[Tick] = sampled.ticks.get(w).map(Vec::as_slice).unwrap_or(&[]);
                interval_logs(j, mine, n)
            } else {
                let mine: Vec<&engine::IoLogEntry> = job_passes
                    .iter()
                    .flat_map(|p| &p.lat)
                    .flat_map(|pl| &pl.detail)
                    .filter(|(x, _)| *x == clone)
                    .flat_map(|(_, d)| &d.log)
                    .filter(|e| cut.is_none_or(|c| sampled.since(e.done) >= c))
                    .collect();
                io_logs(j, &mine, sampled, n)
            };
            for (log, path, body) in files {
                if let Err(e) =
                    crate::output::write_named_nofollow(log.option(), &path, body.as_bytes())
                {
                    failed.push(format!("{e:#}"));
                }
            }
            w += 1;
        }
    }
    failed
}

/// The log files of a job with `log_avg_msec`: (log, path, text).
fn interval_logs(j: &Job, mine: &[Tick], n: u64) -> Vec<(Log, PathBuf, String)> {
    let line = |t: &Tick, v: u64| format!("{}, {v}, {}, 0, 0\n", t.t_ms, t.ddir());
    let whole = || mine.iter().filter(|t| t.full);
    let avg = |f: fn(&Tick) -> u64| -> String {
        mine.iter().map(|t| line(t, f(t) / t.ios.max(1))).collect()
    };
    logs_of(j)
        .into_iter()
        .map(|(log, prefix)| {
            let body = match log {
                Log::Bw => whole().map(|t| line(t, t.kib_s() as u64)).collect(),
                Log::Iops => whole().map(|t| line(t, t.iops() as u64)).collect(),
                Log::Lat => avg(|t| t.lat_ns),
                Log::Clat => avg(|t| t.lat_ns.saturating_sub(t.slat_ns)),
                // A sync engine times no submission: fio's empty file.
                Log::Slat if j.engine.is_sync() => String::new(),
                Log::Slat => avg(|t| t.slat_ns),
            };
            (log, path_of(prefix, log, n), body)
        })
        .collect()
}

/// The log files of a job without `log_avg_msec`: a line per request,
/// at its completion (its submission for slat), ms since the job started
/// (the samples' origin: the first recorded pass's start).
/// bw is the request's bytes over its clat, in fio's unit
/// (bytes × 10⁶ ÷ ns); iops is 1 per request.
fn io_logs(
    j: &Job,
    mine: &[&engine::IoLogEntry],
    sampled: &Sampled,
    n: u64,
) -> Vec<(Log, PathBuf, String)> {
    let ms = |t: Duration| t.as_millis() as u64;
    let line = |t: u64, v: u64, e: &engine::IoLogEntry| {
        format!("{t}, {v}, {}, {}, 0\n", u8::from(e.write), e.len)
    };
    let clat = |e: &engine::IoLogEntry| e.lat_ns - e.slat_ns.unwrap_or(0).min(e.lat_ns);
    let each = |f: &dyn Fn(&engine::IoLogEntry) -> u64| -> String {
        mine.iter()
            .map(|e| line(ms(sampled.since(e.done)), f(e), e))
            .collect()
    };
    let bw = |e: &engine::IoLogEntry| (e.len as u64 * 1_000_000).checked_div(clat(e)).unwrap_or(0);
    // Logged when the request was handed over, as fio does.
    let slat = || -> String {
        mine.iter()
            .filter_map(|e| {
                let sl = e.slat_ns?;
                let issued = sampled
                    .since(e.done)
                    .saturating_sub(Duration::from_nanos(clat(e)));
                Some(line(ms(issued), sl, e))
            })
            .collect()
    };
    logs_of(j)
        .into_iter()
        .map(|(log, prefix)| {
            let body = match log {
                Log::Bw => each(&bw),
                Log::Iops => each(&|_| 1),
                Log::Lat => each(&|e| e.lat_ns),
                Log::Clat => each(&clat),
                Log::Slat => slat(),
            };
            (log, path_of(prefix, log, n), body)
        })
        .collect()
}
