//! smallfile's result lines, for `ioscale smallfile`.
//!
//! smallfile_cli.py ends every run with one line per thread
//! (`host = …,thr = 00,elapsed = …,files = …,records = …,status = ok`) and
//! its totals: `total threads`, `total files`, `total IOPS`, `total data`,
//! the `% of requested files processed, warning threshold` line,
//! `elapsed time`, `files/sec`, `IOPS` and `MiB/sec`. This exporter renders
//! them from the canonical [`ResultSet`] of an `ioscale meta` run, one
//! block per timed phase.
//!
//! smallfile's `files/sec`, `IOPS` and `MiB/sec` are the sums of each
//! thread's own rate (its files, records or bytes ÷ its own elapsed time);
//! `elapsed time` is the longest thread's, and `total IOPS` is the summed
//! IOPS truncated to an integer. With its stonewall (the default) a
//! thread's files, records and elapsed time are those at the moment it
//! saw the first thread finish (smallfile's `filenum_final`, `rq_final`),
//! so the thread lines, `total files`, the percentage and those rates
//! count the work done by the first thread's finish, not every file. Adding up per-thread rates overstates
//! the aggregate when threads do not run side by side (more threads than
//! cores), so each of those lines is preceded by the honest aggregate —
//! all threads' work ÷ (first start to last finish), the headline,
//! labelled `(all threads, wall clock)` — and followed by a note naming
//! smallfile's definition. docs/compat.md compares the two.

use serde::{Deserialize, Serialize};

use report::{ExportError, Exporter, PhaseRecord, ResultSet, ThreadFiles};

/// smallfile's warning threshold for the files processed, in percent.
pub const PCT_FILES_MIN: f64 = 70.0;

/// What smallfile's lines show beyond the canonical record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SmallfileInfo {
    /// Host name as smallfile shows it (the short name).
    pub host: String,
    /// `--response-times Y`: add the latency percentiles.
    pub response_times: bool,
    /// `--stonewall Y` (smallfile's default): threads count the files done
    /// when the first thread finished.
    #[serde(default)]
    pub stonewall: bool,
}

/// smallfile's result lines.
#[derive(Debug, Clone, Default)]
pub struct SmallfileTextExporter {
    /// smallfile-only facts.
    pub info: SmallfileInfo,
}

/// smallfile's totals of one phase, as its `output_results` adds them up.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SmallfileTotals {
    /// Threads.
    pub threads: usize,
    /// Files counted (by the first thread's finish, with the stonewall).
    pub files: u64,
    /// Every file processed (the honest aggregate's numerator).
    pub all_files: u64,
    /// Every data call.
    pub all_records: u64,
    /// Every byte moved.
    pub all_bytes: u64,
    /// Data calls.
    pub records: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// The longest thread's elapsed seconds.
    pub elapsed: f64,
    /// Sum of each thread's files ÷ its elapsed time.
    pub files_per_sec: f64,
    /// Sum of each thread's records ÷ its elapsed time.
    pub iops: f64,
    /// Sum of each thread's MiB ÷ its elapsed time.
    pub mib_per_sec: f64,
    /// Files processed ÷ files requested, percent.
    pub pct_files: f64,
    /// Every thread finished with `ok`.
    pub ok: bool,
    /// First thread's start to last thread's finish, seconds (the phase's
    /// `elapsed_s`, or the span of its workers' start and end).
    pub wall_s: f64,
    /// files ÷ wall_s: the honest aggregate.
    pub files_per_sec_wall: f64,
    /// records ÷ wall_s.
    pub iops_wall: f64,
    /// MiB ÷ wall_s.
    pub mib_per_sec_wall: f64,
}

/// First start to last finish of a phase, seconds: from the workers'
/// start and end when the record has them, else the phase's `elapsed_s`
/// (which the driver measures over the same span).
pub fn wall_s(p: &PhaseRecord) -> f64 {
    if p.workers.is_empty() {
        return p.elapsed_s;
    }
    let first = p.workers.iter().map(|w| w.start_s).fold(f64::MAX, f64::min);
    let last = p.workers.iter().map(|w| w.end_s).fold(f64::MIN, f64::max);
    (last - first).max(0.0)
}

/// The bytes thread `thread` of a phase moved (0 when it has no record).
pub fn thread_bytes(p: &PhaseRecord, thread: u32) -> u64 {
    p.workers
        .iter()
        .find(|w| w.worker == thread)
        .map_or(0, |w| w.bytes)
}

/// What smallfile counts of one thread: (files, records, bytes, elapsed
/// seconds). With its stonewall, the work done when the thread saw the
/// first thread finish and the time it took; the records then are the
/// thread's records per file (fixed-size files take the same number
/// each) times those files. Without it, everything.
pub fn counted(p: &PhaseRecord, th: &ThreadFiles, stonewall: bool) -> (u64, u64, u64, f64) {
    if !stonewall || th.stonewall_files >= th.files {
        return (
            th.files,
            th.records,
            thread_bytes(p, th.thread),
            th.elapsed_s,
        );
    }
    let records = if th.files > 0 {
        (th.records as u128 * th.stonewall_files as u128 / th.files as u128) as u64
    } else {
        0
    };
    (
        th.stonewall_files,
        records,
        th.stonewall_bytes,
        th.stonewall_s,
    )
}

/// Adds up a phase the way smallfile does (`stonewall`: smallfile's
/// `--stonewall Y`).
pub fn totals(p: &PhaseRecord, stonewall: bool) -> SmallfileTotals {
    let mut t = SmallfileTotals {
        ok: true,
        ..Default::default()
    };
    let Some(f) = &p.files else {
        return t;
    };
    for th in &f.threads {
        let (files, records, bytes, elapsed) = counted(p, th, stonewall);
        t.threads += 1;
        t.files += files;
        t.records += records;
        t.bytes += bytes;
        t.all_files += th.files;
        t.all_records += th.records;
        t.all_bytes += thread_bytes(p, th.thread);
        t.elapsed = t.elapsed.max(elapsed);
        if elapsed > 0.0 {
            t.files_per_sec += files as f64 / elapsed;
            t.iops += records as f64 / elapsed;
            t.mib_per_sec += bytes as f64 / (1024.0 * 1024.0) / elapsed;
        }
        t.ok &= th.status == "ok";
    }
    t.wall_s = wall_s(p);
    if t.wall_s > 0.0 {
        t.files_per_sec_wall = t.all_files as f64 / t.wall_s;
        t.iops_wall = t.all_records as f64 / t.wall_s;
        t.mib_per_sec_wall = t.all_bytes as f64 / (1024.0 * 1024.0) / t.wall_s;
    }
    t.pct_files = if f.requested > 0 {
        100.0 * t.files as f64 / f.requested as f64
    } else {
        100.0
    };
    t
}

/// A float as Python's `str` prints it (smallfile's per-thread `elapsed`):
/// the shortest form that reads back the same, with `.0` on whole numbers.
pub fn py_float(v: f64) -> String {
    let s = format!("{v}");
    if v.is_finite() && !s.contains(['.', 'e']) {
        format!("{s}.0")
    } else {
        s
    }
}

impl SmallfileTextExporter {
    fn phase(&self, p: &PhaseRecord, out: &mut String) {
        let Some(f) = &p.files else {
            return;
        };
        for th in &f.threads {
            let status = if th.status == "ok" {
                "ok".to_string()
            } else {
                format!("ERR: {}", th.status)
            };
            let (files, records, _, elapsed) = counted(p, th, self.info.stonewall);
            out.push_str(&format!(
                "host = {},thr = {:02},elapsed = {},files = {files},records = {records},status = {status}\n",
                self.info.host,
                th.thread,
                py_float(elapsed),
            ));
        }
        let t = totals(p, self.info.stonewall);
        out.push_str(&format!("total threads = {}\n", t.threads));
        out.push_str(&format!("total files = {}\n", t.files));
        if t.records > 0 {
            out.push_str(&format!("total IOPS = {}\n", t.iops as u64));
            out.push_str(&format!(
                "total data = {:9.3} GiB\n",
                t.bytes as f64 / (1u64 << 30) as f64
            ));
        }
        out.push_str(&format!(
            "{:6.2}% of requested files processed, warning threshold is {PCT_FILES_MIN:6.2}%\n",
            t.pct_files
        ));
        out.push_str(&format!("elapsed time = {:9.3}\n", t.elapsed));
        if t.elapsed < 0.001 {
            out.push_str("WARNING: test must run longer than a millisecond\n");
        } else {
            // The honest aggregate first, then smallfile's figure where
            // smallfile prints it, its definition named after the number
            // (so `awk '{print $3}'` still finds the number).
            let def = if self.info.stonewall && t.files < t.all_files {
                "(smallfile's definition: the sum of each thread's own rate, counting the files done when the first thread finished)"
            } else {
                "(smallfile's definition: the sum of each thread's own rate)"
            };
            out.push_str(&format!(
                "files/sec (all threads, wall clock) = {:.6}\n",
                t.files_per_sec_wall
            ));
            out.push_str(&format!("files/sec = {:.6} {def}\n", t.files_per_sec));
            if t.records > 0 {
                out.push_str(&format!(
                    "IOPS (all threads, wall clock) = {:.6}\n",
                    t.iops_wall
                ));
                out.push_str(&format!("IOPS = {:.6} {def}\n", t.iops));
                out.push_str(&format!(
                    "MiB/sec (all threads, wall clock) = {:.6}\n",
                    t.mib_per_sec_wall
                ));
                out.push_str(&format!("MiB/sec = {:.6} {def}\n", t.mib_per_sec));
            }
        }
        if self.info.response_times {
            let l = &p.lat_us;
            out.push_str(&format!(
                "response times (usec): p50 {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1}\n",
                l.p50, l.p99, l.p999, l.max
            ));
        }
        if !t.ok {
            out.push_str(
                "WARNING: at least one thread encountered error, test may be incomplete\n",
            );
        } else if t.pct_files < PCT_FILES_MIN {
            out.push_str(
                "WARNING: not enough total files processed before 1st thread finished, change test parameters\n",
            );
        }
    }
}

impl Exporter for SmallfileTextExporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, ExportError> {
        let mut out = String::new();
        for p in &rs.phases {
            self.phase(p, &mut out);
        }
        Ok(out.into_bytes())
    }
}
