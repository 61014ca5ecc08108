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
//! IOPS truncated to an integer. Adding up per-thread rates overstates
//! the aggregate when threads do not run side by side (more threads than
//! cores), so each of those lines is preceded by the honest aggregate —
//! all threads' work ÷ (first start to last finish), the headline,
//! labelled `(all threads, wall clock)` — and followed by a note naming
//! smallfile's definition. docs/compat.md compares the two.

use serde::{Deserialize, Serialize};

use report::{ExportError, Exporter, PhaseRecord, ResultSet};

/// smallfile's warning threshold for the files processed, in percent.
pub const PCT_FILES_MIN: f64 = 70.0;

/// What smallfile's lines show beyond the canonical record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SmallfileInfo {
    /// Host name as smallfile shows it (the short name).
    pub host: String,
    /// `--response-times Y`: add the latency percentiles.
    pub response_times: bool,
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
    /// Files processed.
    pub files: u64,
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

/// Adds up a phase the way smallfile does.
pub fn totals(p: &PhaseRecord) -> SmallfileTotals {
    let mut t = SmallfileTotals {
        ok: true,
        ..Default::default()
    };
    let Some(f) = &p.files else {
        return t;
    };
    for th in &f.threads {
        let bytes = thread_bytes(p, th.thread);
        t.threads += 1;
        t.files += th.files;
        t.records += th.records;
        t.bytes += bytes;
        t.elapsed = t.elapsed.max(th.elapsed_s);
        if th.elapsed_s > 0.0 {
            t.files_per_sec += th.files as f64 / th.elapsed_s;
            t.iops += th.records as f64 / th.elapsed_s;
            t.mib_per_sec += bytes as f64 / (1024.0 * 1024.0) / th.elapsed_s;
        }
        t.ok &= th.status == "ok";
    }
    t.wall_s = wall_s(p);
    if t.wall_s > 0.0 {
        t.files_per_sec_wall = t.files as f64 / t.wall_s;
        t.iops_wall = t.records as f64 / t.wall_s;
        t.mib_per_sec_wall = t.bytes as f64 / (1024.0 * 1024.0) / t.wall_s;
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
            out.push_str(&format!(
                "host = {},thr = {:02},elapsed = {},files = {},records = {},status = {status}\n",
                self.info.host,
                th.thread,
                py_float(th.elapsed_s),
                th.files,
                th.records
            ));
        }
        let t = totals(p);
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
            const DEF: &str = "(smallfile's definition: the sum of each thread's own rate)";
            out.push_str(&format!(
                "files/sec (all threads, wall clock) = {:.6}\n",
                t.files_per_sec_wall
            ));
            out.push_str(&format!("files/sec = {:.6} {DEF}\n", t.files_per_sec));
            if t.records > 0 {
                out.push_str(&format!(
                    "IOPS (all threads, wall clock) = {:.6}\n",
                    t.iops_wall
                ));
                out.push_str(&format!("IOPS = {:.6} {DEF}\n", t.iops));
                out.push_str(&format!(
                    "MiB/sec (all threads, wall clock) = {:.6}\n",
                    t.mib_per_sec_wall
                ));
                out.push_str(&format!("MiB/sec = {:.6} {DEF}\n", t.mib_per_sec));
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
