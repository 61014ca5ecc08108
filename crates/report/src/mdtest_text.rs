//! mdtest's output layout, for `ioscale mdtest`.
//!
//! Whoever ran mdtest reads (and greps) its header — `-- started at`, the
//! `was launched with N total task(s)` line, `Command line used`, `Path`,
//! `FS` — the `N tasks, M files/directories` line, and the `SUMMARY rate:
//! (of N iterations)` table with one row per operation (Max, Min, Mean,
//! Std Dev over the iterations). With `-P` a `SUMMARY time:` table follows
//! in the same layout. This exporter renders that layout from the
//! canonical [`ResultSet`] of an `ioscale meta` run plus an [`MdtestInfo`]
//! holding the few mdtest-only facts.
//!
//! Definitions follow mdtest: a rate is the items of all tasks ÷ the
//! phase's time from the barrier before it to the last task's end (the
//! record's `iops`); statistics over iterations use the population
//! standard deviation; an operation that did not run in an iteration
//! counts 0, as in mdtest. ioscale creates the tree's directories inside
//! the timed creation phase and removes them in its untimed cleanup, so
//! the `Tree creation`/`Tree removal` rows print `NA` (docs/compat.md).

use serde::{Deserialize, Serialize};

use crate::export::{ExportError, Exporter};
use crate::ior_text::FsStats;
use crate::model::ResultSet;

/// What mdtest's layout shows beyond the canonical record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MdtestInfo {
    /// The mdtest version whose layout is followed (`3.3.0`).
    pub mdtest_version: String,
    /// `mdtest "-n" "10" …`, as mdtest echoes it.
    pub command_line: String,
    /// `-- started at` time stamp (`%m/%d/%Y %T`).
    pub began: String,
    /// `-- finished at` time stamp.
    pub finished: String,
    /// Tasks (threads).
    pub tasks: u32,
    /// The directory shown on the `Path:` line.
    pub path: String,
    /// Capacity of that file system, when it could be read.
    pub fs: Option<FsStats>,
    /// Items of all tasks (`N tasks, M files`).
    pub items_all: u64,
    /// The file rows are shown (-F, or neither -F nor -D).
    pub files: bool,
    /// The directory rows are shown (-D, or neither).
    pub dirs: bool,
    /// -i.
    pub iterations: u32,
    /// -P: the time table follows the rate table.
    pub rate_and_time: bool,
}

/// mdtest's text layout.
#[derive(Debug, Clone, Default)]
pub struct MdtestTextExporter {
    /// mdtest-only facts.
    pub info: MdtestInfo,
}

/// mdtest's rows: label and the ioscale operation behind it (`None`: the
/// tree rows, which ioscale does not time separately).
const ROWS: [(&str, Option<&str>, bool); 9] = [
    ("Directory creation:", Some("mkdir"), true),
    ("Directory stat    :", Some("stat-dir"), true),
    ("Directory removal :", Some("rmdir"), true),
    ("File creation     :", Some("create"), false),
    ("File stat         :", Some("stat"), false),
    ("File read         :", Some("read"), false),
    ("File removal      :", Some("delete"), false),
    ("Tree creation     :", None, false),
    ("Tree removal      :", None, false),
];

/// Max, min, mean and population standard deviation.
fn stats(v: &[f64]) -> (f64, f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let max = v.iter().cloned().fold(f64::MIN, f64::max);
    let min = v.iter().cloned().fold(f64::MAX, f64::min);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
    (max, min, mean, var.sqrt())
}

/// The `FS:` line: capacity in GiB (TiB above 1024 GiB), inodes in Mi.
pub fn fs_line(fs: &FsStats) -> String {
    let mut size = fs.total_bytes as f64 / (1u64 << 30) as f64;
    let mut unit = "GiB";
    if size > 1024.0 {
        size /= 1024.0;
        unit = "TiB";
    }
    let pct = |used: u64, total: u64| {
        if total == 0 {
            0.0
        } else {
            used as f64 * 100.0 / total as f64
        }
    };
    format!(
        "FS: {size:.1} {unit}   Used FS: {:2.1}%   Inodes: {:.1} Mi   Used Inodes: {:2.1}%",
        pct(fs.used_bytes, fs.total_bytes),
        fs.inodes as f64 / (1u64 << 20) as f64,
        pct(fs.used_inodes, fs.inodes)
    )
}

impl MdtestTextExporter {
    fn table(&self, rs: &ResultSet, time: bool) -> String {
        let iters = self.info.iterations.max(1) as usize;
        let mut out = format!(
            "\nSUMMARY {}: (of {} iterations)\n",
            if time { "time" } else { "rate" },
            self.info.iterations
        );
        out.push_str(
            "   Operation                      Max            Min           Mean        Std Dev\n",
        );
        out.push_str(
            "   ---------                      ---            ---           ----        -------\n",
        );
        for (label, op, dir_row) in ROWS {
            let shown = match op {
                None => true,
                Some(_) if dir_row => self.info.dirs,
                Some(_) => self.info.files,
            };
            if !shown {
                continue;
            }
            let Some(op) = op else {
                out.push_str(&format!(
                    "   {label} {:>14} {:>14} {:>14} {:>14}\n",
                    "NA", "NA", "NA", "NA"
                ));
                continue;
            };
            let mut v = vec![0.0; iters];
            for p in rs.phases.iter().filter(|p| p.op == op) {
                if let Some(slot) = v.get_mut(p.rep as usize) {
                    *slot = if time { p.elapsed_s } else { p.iops };
                }
            }
            let (max, min, mean, sd) = stats(&v);
            out.push_str(&format!(
                "   {label} {max:14.3} {min:14.3} {mean:14.3} {sd:14.3}\n"
            ));
        }
        out
    }
}

impl Exporter for MdtestTextExporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, ExportError> {
        let i = &self.info;
        let mut out = format!("-- started at {} --\n\n", i.began);
        out.push_str(&format!(
            "mdtest-{} compatible (ioscale {}) was launched with {} total task(s) on 1 node(s)\n",
            i.mdtest_version, rs.version, i.tasks
        ));
        out.push_str(&format!("Command line used: {}\n", i.command_line));
        out.push_str(&format!("Path: {}\n", i.path));
        if let Some(fs) = &i.fs {
            out.push_str(&fs_line(fs));
            out.push('\n');
        }
        let what = match (i.files, i.dirs) {
            (true, true) => "files/directories",
            (true, false) => "files",
            _ => "directories",
        };
        out.push_str(&format!("\n{} tasks, {} {what}\n", i.tasks, i.items_all));
        out.push_str(&self.table(rs, false));
        if i.rate_and_time {
            out.push_str(&self.table(rs, true));
        }
        out.push_str(&format!("\n-- finished at {} --\n", i.finished));
        Ok(out.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fs_line_and_stats() {
        let fs = FsStats {
            total_bytes: 40 << 30,
            used_bytes: 10 << 30,
            inodes: 2 << 20,
            used_inodes: 1 << 19,
        };
        assert_eq!(
            fs_line(&fs),
            "FS: 40.0 GiB   Used FS: 25.0%   Inodes: 2.0 Mi   Used Inodes: 25.0%"
        );
        let (max, min, mean, sd) = stats(&[2.0, 4.0]);
        assert_eq!((max, min, mean, sd), (4.0, 2.0, 3.0, 1.0));
    }
}
