//! mdtest's output layout, for `ioscale mdtest`.
//!
//! Whoever ran mdtest reads (and greps) its header — `-- started at`, the
//! `was launched with N total task(s)` line, `Command line used`, `Path`,
//! `FS`, `Nodemap` — the `N tasks, M files/directories` line, and the `SUMMARY rate:
//! (of N iterations)` table with one row per operation (Max, Min, Mean,
//! Std Dev over the iterations). With `-P` a `SUMMARY time:` table follows
//! in the same layout. This exporter renders that layout from the
//! canonical [`ResultSet`] of an `ioscale meta` run plus an [`MdtestInfo`]
//! holding the few mdtest-only facts.
//!
//! Definitions follow mdtest: a rate is the items of all tasks ÷ the
//! phase's time from the barrier before it to the last task's end (the
//! record's `iops`); statistics over iterations use the sample standard
//! deviation (n − 1, 0 for one iteration), as mdtest 4.0 does; an
//! operation that did not run in an iteration counts 0, as in mdtest. ioscale creates the tree's directories inside
//! the timed creation phase and removes them in its untimed cleanup, so
//! the `Tree creation`/`Tree removal` rows print `NA` (docs/compat.md).

use serde::{Deserialize, Serialize};

use report::{ExportError, Exporter, ResultSet};

use crate::FsStats;

/// What mdtest's layout shows beyond the canonical record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MdtestInfo {
    /// The mdtest version whose layout is followed (`4.0.0`).
    pub mdtest_version: String,
    /// `mdtest '-n' '10' …`, as mdtest 4.0 echoes it.
    pub command_line: String,
    /// `-- started at` time stamp (`%m/%d/%Y %T`).
    pub began: String,
    /// `-- finished at` time stamp.
    pub finished: String,
    /// Tasks (threads).
    pub tasks: u32,
    /// The directory shown on the `Path` line (mdtest 4.0: the `-d` directory).
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

/// mdtest 4.0's rows, in its order: label, the ioscale operation behind
/// it (`None`: not done by ioscale, see below) and whether it is a
/// directory row. `Directory rename` is the `rename-dir` phase, which
/// runs, as in mdtest 4.0, only when no phase is named (no -C, -T, -E,
/// -r) and shows 0 otherwise, as mdtest shows it.
const ROWS: [(&str, Option<&str>, bool); 8] = [
    ("Directory creation", Some("mkdir"), true),
    ("Directory stat", Some("stat-dir"), true),
    ("Directory rename", Some("rename-dir"), true),
    ("Directory removal", Some("rmdir"), true),
    ("File creation", Some("create"), false),
    ("File stat", Some("stat"), false),
    ("File read", Some("read"), false),
    ("File removal", Some("delete"), false),
];

/// The tree rows: ioscale makes the tree's directories inside the timed
/// creation phase and removes them untimed, so it has no figure for them.
const TREE_ROWS: [&str; 2] = ["Tree creation", "Tree removal"];

/// Max, min, mean and standard deviation over iterations, as mdtest 4.0
/// computes them: the sample standard deviation (n − 1), 0 for one
/// iteration.
fn stats(v: &[f64]) -> (f64, f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let max = v.iter().cloned().fold(f64::MIN, f64::max);
    let min = v.iter().cloned().fold(f64::MAX, f64::min);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    if v.len() < 2 {
        return (max, min, mean, 0.0);
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
    (max, min, mean, var.sqrt())
}

/// The `FS` figures: capacity in GiB (TiB above 1024 GiB), inodes in Mi.
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
        "{size:.1} {unit}   Used FS: {:2.1}%   Inodes: {:.1} Mi   Used Inodes: {:2.1}%",
        pct(fs.used_bytes, fs.total_bytes),
        fs.inodes as f64 / (1u64 << 20) as f64,
        pct(fs.used_inodes, fs.inodes)
    )
}

/// mdtest's `Nodemap`: one digit per task, 1 when the task runs on rank
/// 0's host. Tasks are threads of ranks (worker `w` is thread
/// `w % threads_per_rank` of rank `w / threads_per_rank`).
pub fn nodemap(rs: &ResultSet, tasks: u32) -> String {
    match &rs.host.cluster {
        Some(c) if !c.hosts.is_empty() => {
            let per = c.threads_per_rank.max(1) as usize;
            let root = &c.hosts[0];
            (0..tasks as usize)
                .map(|t| match c.hosts.get(t / per) {
                    Some(h) if h == root => '1',
                    Some(_) => '0',
                    None => '1',
                })
                .collect()
        }
        _ => "1".repeat(tasks as usize),
    }
}

impl MdtestTextExporter {
    fn table(&self, rs: &ResultSet, time: bool) -> String {
        // The iterations that ran: one an error or a signal stopped before
        // it began is no measurement, not a rate of 0 in Min and Mean.
        let ran = rs
            .phases
            .iter()
            .map(|p| p.rep as usize + 1)
            .max()
            .unwrap_or(0)
            .min(self.info.iterations.max(1) as usize);
        let iters = if rs.failed_phases.is_empty() && !rs.interrupted {
            self.info.iterations.max(1) as usize
        } else {
            ran.max(1)
        };
        let mut out = format!(
            "\nSUMMARY {}: (of {} iterations)\n",
            if time { "time" } else { "rate" },
            iters
        );
        out.push_str(
            "   Operation                     Max            Min           Mean        Std Dev\n",
        );
        out.push_str(
            "   ---------                     ---            ---           ----        -------\n",
        );
        for (label, op, dir_row) in ROWS {
            let shown = if dir_row {
                self.info.dirs
            } else {
                self.info.files
            };
            if !shown {
                continue;
            }
            // A phase an error stopped is no result, and neither is one
            // that never ran after it: NA, not a rate of 0.
            let failed = op.is_some_and(|op| {
                rs.failed_phases.iter().any(|f| f.op == op)
                    || (!rs.failed_phases.is_empty() && !rs.phases.iter().any(|p| p.op == op))
            });
            if failed {
                out.push_str(&format!(
                    "   {label:<18}     {:>14} {:>14} {:>14} {:>14}\n",
                    "NA", "NA", "NA", "NA"
                ));
                continue;
            }
            let mut v = vec![0.0; iters];
            if let Some(op) = op {
                let mut got = vec![None; iters];
                for p in rs.phases.iter().filter(|p| p.op == op) {
                    if let Some(slot) = got.get_mut(p.rep as usize) {
                        *slot = Some(if time { p.elapsed_s } else { p.iops });
                    }
                }
                // Only the iterations in which this phase ran (the last
                // one may have stopped before it).
                v = got.into_iter().flatten().collect();
                if v.is_empty() {
                    v.push(0.0);
                }
            }
            let (max, min, mean, sd) = stats(&v);
            out.push_str(&format!(
                "   {label:<18}     {max:14.3} {min:14.3} {mean:14.3} {sd:14.3}\n"
            ));
        }
        for label in TREE_ROWS {
            out.push_str(&format!(
                "   {label:<22} {:>14} {:>14} {:>14} {:>14}\n",
                "NA", "NA", "NA", "NA"
            ));
        }
        out
    }
}

impl Exporter for MdtestTextExporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, ExportError> {
        let i = &self.info;
        let nodes = rs.host.cluster.as_ref().map_or(1, |c| c.nodes.max(1));
        let mut out = format!("-- started at {} --\n\n", i.began);
        out.push_str(&format!(
            "mdtest-{} was launched with {} total task(s) on {} node(s)\n",
            i.mdtest_version, i.tasks, nodes
        ));
        out.push_str(&format!("Command line used: {}\n", i.command_line));
        out.push_str(&format!("{:<20}: {}\n", "Path", i.path));
        if let Some(fs) = &i.fs {
            out.push_str(&format!("{:<20}: {}\n", "FS", fs_line(fs)));
        }
        out.push_str(&format!("Nodemap: {}\n", nodemap(rs, i.tasks)));
        let what = match (i.files, i.dirs) {
            (true, true) => "files/directories",
            (true, false) => "files",
            _ => "directories",
        };
        out.push_str(&format!("{} tasks, {} {what}\n", i.tasks, i.items_all));
        out.push_str(&self.table(rs, false));
        if i.rate_and_time {
            out.push_str(&self.table(rs, true));
        }
        out.push_str(&format!("-- finished at {} --\n\n", i.finished));
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
            "40.0 GiB   Used FS: 25.0%   Inodes: 2.0 Mi   Used Inodes: 25.0%"
        );
        // mdtest 4.0: the sample standard deviation, 0 for one iteration.
        let (max, min, mean, sd) = stats(&[2.0, 4.0]);
        assert_eq!((max, min, mean), (4.0, 2.0, 3.0));
        assert!((sd - 2f64.sqrt()).abs() < 1e-12, "{sd}");
        assert_eq!(stats(&[5.0]).3, 0.0);
    }
}
