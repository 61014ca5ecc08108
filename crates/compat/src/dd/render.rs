//! dd's closing lines, for `ioscale dd`.
//!
//! Whoever ran `dd … conv=fsync` reads three lines on standard error:
//! records in, records out, and `N bytes (SI, IEC) copied, S s, R MB/s`.
//! This exporter renders them from the canonical record, one block per dd
//! job (worker), and with `--jobs N` a closing total over all jobs whose
//! rate is total bytes ÷ (first start to last finish) — what
//! `time seq 1 N | parallel dd …` measures — then, labelled as such, the
//! sum of each job's own rate (what adding up the dd lines gives).

use serde::{Deserialize, Serialize};

use report::{ExportError, Exporter, PhaseRecord, ResultSet};

/// What dd's `status=` asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DdStatus {
    /// The three closing lines (also `status=progress`).
    #[default]
    Default,
    /// Records lines only (`status=noxfer`).
    Noxfer,
    /// Nothing (`status=none`).
    None,
}

/// The dd-only facts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DdInfo {
    /// `status=`.
    pub status: DdStatus,
    /// Parallel copies (`--jobs`).
    pub jobs: u32,
}

/// dd's closing lines.
#[derive(Debug, Clone, Default)]
pub struct DdTextExporter {
    /// dd-only facts.
    pub info: DdInfo,
}

/// GNU's `human_autoscale | human_round_to_nearest`: one decimal below 10
/// of the unit, none from 10 up.
fn human(v: f64, base: f64, units: &[&str]) -> String {
    let mut x = v;
    let mut i = 0;
    while x >= base && i + 1 < units.len() {
        x /= base;
        i += 1;
    }
    if i == 0 {
        return format!("{} {}", v.round(), units[0]);
    }
    let tenth = (x * 10.0).round() / 10.0;
    if tenth < 10.0 {
        format!("{tenth:.1} {}", units[i])
    } else {
        format!("{:.0} {}", x.round(), units[i])
    }
}

const SI: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
const IEC: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/// C's `%g`: 6 significant digits, trailing zeros dropped.
fn g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let exp = v.abs().log10().floor() as i32;
    if !(-5..6).contains(&exp) {
        return format!("{v:e}");
    }
    let decimals = (5 - exp).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// `N bytes (2.1 GB, 2.0 GiB) copied, 15.826 s, 136 MB/s`.
pub fn copied_line(bytes: u64, secs: f64) -> String {
    let size = if bytes == 1 {
        "1 byte".to_string()
    } else if bytes < 1000 {
        format!("{bytes} bytes")
    } else if bytes < 1024 {
        format!("{bytes} bytes ({})", human(bytes as f64, 1000.0, &SI))
    } else {
        format!(
            "{bytes} bytes ({}, {})",
            human(bytes as f64, 1000.0, &SI),
            human(bytes as f64, 1024.0, &IEC)
        )
    };
    let rate = if secs > 0.0 {
        format!("{}/s", human(bytes as f64 / secs, 1000.0, &SI))
    } else {
        "Infinity B/s".to_string()
    };
    format!("{size} copied, {} s, {rate}", g(secs))
}

/// One dd job's figures in a phase: records, bytes, and its start and
/// finish (seconds since the phase's first start).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Job {
    /// Records (requests) copied.
    pub ops: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// Its start.
    pub start_s: f64,
    /// Its finish.
    pub end_s: f64,
}

/// The jobs of phase `index` (`p`): its per-worker rows; under MPI
/// without them (node summaries, which dd asks for when each rank runs
/// one job) the per-rank rows, each then one job's own figures.
pub fn jobs(rs: &ResultSet, index: usize, p: &PhaseRecord) -> Vec<Job> {
    if !p.workers.is_empty() {
        return p
            .workers
            .iter()
            .map(|w| Job {
                ops: w.ops,
                bytes: w.bytes,
                start_s: w.start_s,
                end_s: w.end_s,
            })
            .collect();
    }
    let ranks = rs.host.cluster.iter().flat_map(|c| &c.rank_phases);
    ranks
        .filter(|r| r.phase == index && r.workers == 1)
        .map(|r| Job {
            ops: r.ops,
            bytes: r.bytes,
            start_s: r.start_s,
            end_s: r.end_s,
        })
        .collect()
}

/// A `--jobs` phase's two totals: the seconds from the first job's start
/// to the last job's finish (the honest total's time), and the sum of
/// each job's own rate in bytes per second (dd's figures added up).
pub fn jobs_rates(p: &PhaseRecord, jobs: &[Job]) -> (f64, f64) {
    let wall = if jobs.is_empty() {
        p.elapsed_s
    } else {
        let first = jobs.iter().map(|w| w.start_s).fold(f64::MAX, f64::min);
        let last = jobs.iter().map(|w| w.end_s).fold(f64::MIN, f64::max);
        (last - first).max(0.0)
    };
    let summed = jobs
        .iter()
        .filter(|w| w.end_s > w.start_s)
        .map(|w| w.bytes as f64 / (w.end_s - w.start_s))
        .sum();
    (wall, summed)
}

impl Exporter for DdTextExporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, ExportError> {
        let mut out = String::new();
        if self.info.status == DdStatus::None {
            return Ok(Vec::new());
        }
        for (i, p) in rs.phases.iter().enumerate() {
            let jobs = jobs(rs, i, p);
            for w in &jobs {
                out.push_str(&format!(
                    "{}+0 records in\n{}+0 records out\n",
                    w.ops, w.ops
                ));
                if self.info.status == DdStatus::Default {
                    out.push_str(&copied_line(w.bytes, w.end_s - w.start_s));
                    out.push('\n');
                }
            }
            if jobs.len() > 1 && self.info.status == DdStatus::Default {
                let (wall, summed) = jobs_rates(p, &jobs);
                out.push_str(&format!(
                    "total of {} jobs: {}\n",
                    jobs.len(),
                    copied_line(p.bytes, wall)
                ));
                // What adding up each dd's own closing rate gives: above
                // the real throughput whenever the jobs did not all run
                // side by side for the whole time.
                out.push_str(&format!(
                    "sum of the {} jobs' own dd rates: {}/s (each job's bytes ÷ its own time, added up; not a throughput)\n",
                    jobs.len(),
                    human(summed, 1000.0, &SI)
                ));
            }
        }
        for f in &rs.failed_phases {
            // As GNU dd after an error: the records copied before it; but
            // no rate, since a copy an error stopped is no result.
            let n = f.partial_ops;
            out.push_str(&format!("{n}+0 records in\n{n}+0 records out\n"));
            if self.info.status == DdStatus::Default {
                out.push_str(&format!(
                    "{} bytes copied before the error, in {:.6} s (no rate: the copy failed)\n",
                    f.partial_bytes, f.partial_elapsed_s
                ));
            }
        }
        Ok(out.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gnu_dd_closing_line() {
        assert_eq!(
            copied_line(2_147_483_648, 15.826),
            "2147483648 bytes (2.1 GB, 2.0 GiB) copied, 15.826 s, 136 MB/s"
        );
        assert_eq!(
            copied_line(1_073_741_824, 1.27455),
            "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 1.27455 s, 842 MB/s"
        );
        assert_eq!(
            copied_line(512, 0.000123),
            "512 bytes copied, 0.000123 s, 4.2 MB/s"
        );
    }
}
