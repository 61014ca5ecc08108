//! IOR's output layouts, for `ioscale ior`.
//!
//! People who run IOR read its text layout by eye and parse it with
//! scripts: the header, the `Options:` block, the `Results:` table with
//! IOR's column widths, the `Max Write:`/`Max Read:` lines and the
//! `Summary of all tests:` table. These exporters render that layout (and
//! IOR's `summaryFormat=JSON|CSV` documents) from the same [`ResultSet`] as
//! every other output, plus an [`IorInfo`] with the few IOR-only facts
//! (the command line as typed, the `-o` name, verbosity) that the canonical
//! record does not hold. Like every exporter they return bytes.
//!
//! Definitions follow IOR: bandwidth is bytes ÷ (first open to last
//! close); the table's IOPS is transfers ÷ the transfer phase (IOR's
//! `wr/rd(s)`), the summary's OPs transfers ÷ the whole phase; statistics
//! over repetitions use the population standard deviation, as IOR does.
//! Where ioscale differs on purpose — the latency column is the mean
//! request latency over all workers, where IOR prints the lowest per-task
//! average — docs/compat.md says so.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use report::{ExportError, Exporter, PhaseRecord, ResultSet};

use crate::FsStats;

const MIB: f64 = 1024.0 * 1024.0;
const MB: f64 = 1_000_000.0;

/// What the IOR layouts show beyond the canonical record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IorInfo {
    /// The IOR version whose layout is followed (`4.0.0`).
    pub ior_version: String,
    /// The command line as typed (`ior -w -o /x ...`).
    pub command_line: String,
    /// When the run began, in IOR's `ctime` form.
    pub began: String,
    /// When it finished, in the same form.
    pub finished: String,
    /// `Linux <hostname>`.
    pub machine: String,
    /// The `-o` value.
    pub test_filename: String,
    /// IOR's `Path`: the name of the first task's file (`-o` for a shared
    /// file, `NAME.00000000` with -F, `DIR/0/BASE.00000000` with -F -u).
    pub path: String,
    /// Capacity of the file system, when it could be read.
    pub fs: Option<FsStats>,
    /// `POSIX`.
    pub api: String,
    /// -F.
    pub file_per_proc: bool,
    /// -u.
    pub unique_dir: bool,
    /// -z.
    pub random_offsets: bool,
    /// -C (or -Q).
    pub reorder_tasks: bool,
    /// -Q (1 unless given).
    pub task_offset: u32,
    /// Tasks (-N, or 1).
    pub tasks: u32,
    /// -i.
    pub repetitions: u32,
    /// -t in bytes.
    pub xfer: u64,
    /// -b in bytes.
    pub block: u64,
    /// -s.
    pub segments: u64,
    /// How many -v.
    pub verbose: u32,
    /// -D in seconds (0 = no stonewall deadline).
    pub deadline_s: u64,
    /// -O stoneWallingWearOut=1.
    pub wearout: bool,
    /// -A.
    pub ref_num: i64,
    /// -W without -r: the read phases only check what was written and are
    /// not shown as measured reads.
    pub read_is_check: bool,
    /// The executor's timed removals of each repetition's files
    /// (repetition, seconds): IOR's `remove` rows under -v.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removals: Vec<(u32, f64)>,
    /// -w was given (or neither -w nor -r): IOR's `writeFile`.
    #[serde(default)]
    pub write_file: bool,
    /// -r was given (or neither): IOR's `readFile`.
    #[serde(default)]
    pub read_file: bool,
    /// -W.
    #[serde(default)]
    pub check_write: bool,
    /// -R.
    #[serde(default)]
    pub check_read: bool,
    /// -k.
    #[serde(default)]
    pub keep_file: bool,
    /// -E.
    #[serde(default)]
    pub use_existing: bool,
    /// -e.
    #[serde(default)]
    pub fsync: bool,
    /// -Y.
    #[serde(default)]
    pub fsync_per_write: bool,
    /// -x.
    #[serde(default)]
    pub single_xfer: bool,
    /// -d, seconds.
    #[serde(default)]
    pub inter_test_delay: u64,
    /// -T, minutes.
    #[serde(default)]
    pub max_minutes: u64,
    /// -G (0 when not given).
    #[serde(default)]
    pub seed: i64,
}

/// The IOR text layout.
#[derive(Debug, Clone, Default)]
pub struct IorTextExporter {
    /// IOR-only facts.
    pub info: IorInfo,
}

/// IOR's `-O summaryFormat=JSON` document.
#[derive(Debug, Clone, Default)]
pub struct IorJsonExporter {
    /// IOR-only facts.
    pub info: IorInfo,
}

/// IOR's `-O summaryFormat=CSV` document, as IOR 4.0 writes it: the
/// results table's header and one row per measured phase (`%.4f` figures,
/// the task count, the repetition).
#[derive(Debug, Clone, Default)]
pub struct IorCsvExporter {
    /// IOR-only facts.
    pub info: IorInfo,
}

/// `write` or `read`, as IOR names the access of a phase.
fn access(p: &PhaseRecord) -> &'static str {
    if p.write_bytes > 0 || (p.read_bytes == 0 && p.op.contains("write")) {
        "write"
    } else {
        "read"
    }
}

/// The phases shown as measured results (check-only reads left out).
fn measured<'a>(rs: &'a ResultSet, info: &IorInfo) -> Vec<&'a PhaseRecord> {
    rs.phases
        .iter()
        .filter(|p| !(info.read_is_check && access(p) == "read"))
        .collect()
}

/// Transfers per second over the transfer section (IOR's table IOPS:
/// every task's transfers over the span from the first task's first
/// transfer to the last task's last).
fn table_iops(p: &PhaseRecord) -> f64 {
    let io = spans(p).1;
    if io > 0.0 {
        p.ops as f64 / io
    } else {
        0.0
    }
}

/// IOR's `open(s)`, `wr/rd(s)` and `close(s)` of a phase: each the span
/// from the earliest task's start of that step to the latest task's end
/// of it (IOR reduces its start timers by minimum and its stop timers by
/// maximum; with no barrier before close, a task that finished early
/// starts its close early). From the workers' recorded times; the longest
/// single worker's where the record has no per-worker rows.
fn spans(p: &PhaseRecord) -> (f64, f64, f64) {
    if p.workers.is_empty() {
        return (p.open_s, p.io_s, p.close_s);
    }
    let span = |start: &dyn Fn(&report::WorkerRecord) -> f64,
                stop: &dyn Fn(&report::WorkerRecord) -> f64| {
        let first = p.workers.iter().map(start).fold(f64::INFINITY, f64::min);
        let last = p.workers.iter().map(stop).fold(f64::NEG_INFINITY, f64::max);
        (last - first).max(0.0)
    };
    (
        span(&|w| w.start_s, &|w| w.start_s + w.open_s),
        span(&|w| w.start_s + w.open_s, &|w| w.end_s - w.close_s),
        span(&|w| w.end_s - w.close_s, &|w| w.end_s),
    )
}

/// IOR's `remove` row of repetition `rep` under -v (none without -v, or
/// when this run removed no files after it). With -k IOR keeps a
/// repetition's files and removes them, untimed, only before the next
/// write: so does ioscale, and neither prints a row.
fn remove_row(i: &IorInfo, rep: u32) -> Option<String> {
    if i.verbose == 0 || i.keep_file {
        return None;
    }
    let secs = i.removals.iter().find(|r| r.0 == rep)?.1;
    // The dashes stand under the columns before `total(s)`; the time
    // itself is left-justified as every other figure.
    let dashes = ["-"; 8]
        .iter()
        .enumerate()
        .map(|(k, d)| format!("{d:<width$}", width = if k == 2 { 12 } else { 11 }))
        .collect::<String>();
    Some(format!("{:<10}{dashes}{}{rep:<4}", "remove", pp(secs, " ")))
}

/// IOR's `PPDouble`: left-justified, width 10, 6 decimals below 1,
/// 2 below 3600, none above; `-` for negatives.
fn pp(v: f64, append: &str) -> String {
    if v < 0.0 || !v.is_finite() {
        return format!("   -      {append}");
    }
    let prec = if v < 1.0 {
        6
    } else if v < 3600.0 {
        2
    } else {
        0
    };
    format!("{v:<10.prec$}{append}")
}

/// IOR's `HumanReadable(…, BASE_TWO)`.
pub fn human_base_two(v: u64) -> String {
    const M: u64 = 1 << 20;
    const G: u64 = 1 << 30;
    if v >= G {
        if !v.is_multiple_of(G) {
            format!("{:.2} GiB", v as f64 / G as f64)
        } else {
            format!("{} GiB", v / G)
        }
    } else if v >= M {
        if !v.is_multiple_of(M) {
            format!("{:.2} MiB", v as f64 / M as f64)
        } else {
            format!("{} MiB", v / M)
        }
    } else {
        format!("{v} bytes")
    }
}

fn kv(key: &str, value: impl std::fmt::Display) -> String {
    format!("{key:<20}: {value}")
}

/// Statistics of one access over the repetitions, as IOR computes them.
struct OpStats {
    access: &'static str,
    bw: [f64; 4],
    ops: [f64; 4],
    mean_s: f64,
    /// IOR's `Stonewall(s)`: the mean over repetitions of the time to the
    /// stonewall.
    stonewall_s: f64,
    /// IOR's `Stonewall(MiB)` (and JSON `StoneWallbwMeanMIB`), which is a
    /// rate per task despite its header: the mean data one task had moved
    /// by the stonewall, summed over repetitions, ÷ the summed stonewall
    /// times, in MiB/s.
    stonewall_task_mib_s: f64,
    agg_mib: f64,
}

/// max, min, mean, population stddev.
fn stats(v: &[f64]) -> [f64; 4] {
    if v.is_empty() {
        return [0.0; 4];
    }
    let n = v.len() as f64;
    let max = v.iter().cloned().fold(f64::MIN, f64::max);
    let min = v.iter().cloned().fold(f64::MAX, f64::min);
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    [max, min, mean, var.sqrt()]
}

fn op_stats(rs: &ResultSet, info: &IorInfo) -> Vec<OpStats> {
    let shown = measured(rs, info);
    ["write", "read"]
        .into_iter()
        .filter_map(|a| {
            let ps: Vec<&PhaseRecord> = shown
                .iter()
                .copied()
                .filter(|p| access(p) == a && !p.interrupted)
                .collect();
            if ps.is_empty() {
                return None;
            }
            let rate = |x: f64, p: &PhaseRecord| {
                if p.elapsed_s > 0.0 {
                    x / p.elapsed_s
                } else {
                    0.0
                }
            };
            let bw: Vec<f64> = ps.iter().map(|p| rate(p.bytes as f64, p) / MIB).collect();
            let ops: Vec<f64> = ps.iter().map(|p| rate(p.ops as f64, p)).collect();
            let n = ps.len() as f64;
            let sw_s: f64 = ps.iter().map(|p| p.stonewall.s).sum();
            // ior.c: each repetition's total ÷ numTasks, summed, ÷ the
            // summed stonewall times (ior-output.c prints it as MiB/s).
            let per_task: f64 = ps
                .iter()
                .map(|p| p.stonewall.bytes as f64 / info.tasks.max(1) as f64)
                .sum();
            Some(OpStats {
                access: a,
                bw: stats(&bw),
                ops: stats(&ops),
                mean_s: ps.iter().map(|p| p.elapsed_s).sum::<f64>() / n,
                stonewall_s: sw_s / n,
                stonewall_task_mib_s: if sw_s > 0.0 {
                    per_task / sw_s / MIB
                } else {
                    0.0
                },
                agg_mib: ps[0].bytes as f64 / MIB,
            })
        })
        .collect()
}

fn max_bw(rs: &ResultSet, info: &IorInfo, a: &str) -> Option<f64> {
    measured(rs, info)
        .into_iter()
        .filter(|p| access(p) == a && p.elapsed_s > 0.0)
        .map(|p| p.bytes as f64 / p.elapsed_s)
        .reduce(f64::max)
}

/// The `Summary of all tests:` header line, with IOR's widths.
pub const SUMMARY_HEADER: &str = "Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  Mean(OPs)     StdDev    Mean(s) Stonewall(s) Stonewall(MiB) Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt   blksiz    xsize aggs(MiB)   API RefNum";

/// The `Results:` table header and rule.
pub const RESULTS_HEADER: [&str; 2] = [
    "access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   total(s)   iter",
    "------    ---------  ----       ----------  ---------- ---------  --------   --------   --------   --------   ----",
];

/// Where IOR's tasks ran: (nodes, tasks per node). Under MPI the record's
/// cluster facts say (each rank's threads are tasks too); one process is
/// one node with every task on it.
fn placement(rs: &ResultSet, info: &IorInfo) -> (u32, u32) {
    match &rs.host.cluster {
        Some(c) => (
            c.nodes.max(1),
            (c.tasks_per_node * c.threads_per_rank.max(1)).max(1),
        ),
        None => (1, info.tasks),
    }
}

fn summary_row(s: &OpStats, info: &IorInfo, tpn: u32) -> String {
    let (sw_s, sw_mib) = if info.deadline_s > 0 {
        (
            format!("{:>10.2}", s.stonewall_s),
            format!("{:>13.2}", s.stonewall_task_mib_s),
        )
    } else {
        (format!("{:>10}", "NA"), format!("{:>13}", "NA"))
    };
    let mut out = format!("{:<9} ", s.access);
    for v in s.bw {
        out.push_str(&format!("{:>10.2} ", v));
    }
    for v in s.ops {
        out.push_str(&format!("{:>10.2} ", v));
    }
    out.push_str(&format!("{:>10.5} ", s.mean_s));
    out.push_str(&format!("{sw_s} {sw_mib} "));
    out.push_str(&format!(
        "{:>5} {:>6} {:>3} {:>4} {:>3} {:>5} {:>8} {:>9} {:>4} {:>6} {:>8} {:>8} {:>9.1} {:>3} {:>6}",
        0,
        info.tasks,
        tpn,
        info.repetitions,
        info.file_per_proc as u8,
        info.reorder_tasks as u8,
        info.task_offset,
        0,
        0,
        info.segments,
        info.block,
        info.xfer,
        s.agg_mib,
        info.api,
        info.ref_num
    ));
    out
}

/// How far apart the tasks started in a phase, the largest over the
/// phases, from what the record measured: the spread of the ranks' start
/// barrier exits ([`PhaseRecord::start_skew_s`], 0 with one process) plus
/// the spread of the workers' starts after their barrier
/// ([`PhaseRecord::worker_start_spread_s`]; for a record without it, the
/// per-worker start times). The two add up to an upper bound of the true
/// spread. `None` when nothing was measured.
///
/// [`PhaseRecord::start_skew_s`]: report::PhaseRecord::start_skew_s
/// [`PhaseRecord::worker_start_spread_s`]: report::PhaseRecord::worker_start_spread_s
pub fn start_skew_s(rs: &ResultSet) -> Option<f64> {
    rs.phases
        .iter()
        .filter_map(|p| {
            let workers = p.worker_start_spread_s.or_else(|| {
                let starts = p.workers.iter().map(|w| w.start_s);
                let first = starts.clone().reduce(f64::min)?;
                let last = starts.reduce(f64::max)?;
                Some(last - first)
            });
            match (p.start_skew_s, workers) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
            }
        })
        .reduce(f64::max)
}

/// IOR's header: version, start, command line, machine, path, FS.
fn text_header(l: &mut Vec<String>, i: &IorInfo, rs: &ResultSet) {
    l.push(format!(
        "IOR-{}: MPI Coordinated Test of Parallel I/O",
        i.ior_version
    ));
    l.push(kv("Began", &i.began));
    l.push(kv("Command line", &i.command_line));
    l.push(kv("Machine", &i.machine));
    if i.verbose >= 1 {
        // IOR 4.0 no longer prints this line; ioscale prints it with
        // -v from the workers' measured start times (docs/compat.md).
        if let Some(skew) = start_skew_s(rs) {
            l.push(format!("Start time skew across all tasks: {skew:.2} sec"));
        }
    }
    l.push(kv("TestID", 0));
    l.push(kv("StartTime", &i.began));
    l.push(kv("Path", &i.path));
    if let Some(fs) = &i.fs {
        l.push(kv("FS", fs_line(fs)));
    }
    if i.verbose >= 1 {
        l.push(format!("Participating tasks : {}", i.tasks));
        if i.reorder_tasks {
            l.push("Using reorderTasks '-C' (useful to avoid read cache in client)".into());
        }
    }
}

/// IOR's `Options:` block.
fn text_options(l: &mut Vec<String>, i: &IorInfo, rs: &ResultSet) {
    l.push(String::new());
    l.push("Options: ".into());
    l.push(kv("api", &i.api));
    l.push(kv("apiVersion", ""));
    l.push(kv("test filename", &i.test_filename));
    l.push(kv(
        "access",
        if i.file_per_proc {
            "file-per-process"
        } else {
            "single-shared-file"
        },
    ));
    l.push(kv("type", "independent"));
    l.push(kv("segments", i.segments));
    l.push(kv(
        "ordering in a file",
        if i.random_offsets {
            "random"
        } else {
            "sequential"
        },
    ));
    if i.reorder_tasks {
        l.push(kv("ordering inter file", "constant task offset"));
        l.push(kv("task offset", i.task_offset));
    } else {
        l.push(kv("ordering inter file", "no tasks offsets"));
    }
    let (nodes, tpn) = placement(rs, i);
    l.push(kv("nodes", nodes));
    l.push(kv("tasks", i.tasks));
    l.push(kv("clients per node", tpn));
    l.push(kv("repetitions", i.repetitions));
    l.push(kv("xfersize", human_base_two(i.xfer)));
    l.push(kv("blocksize", human_base_two(i.block)));
    l.push(kv(
        "aggregate filesize",
        human_base_two(i.block * i.segments * i.tasks as u64),
    ));
    if i.verbose >= 1 {
        l.push(kv("verbose", i.verbose));
    }
    if i.deadline_s > 0 {
        l.push(kv("stonewallingTime", i.deadline_s));
        l.push(kv("stoneWallingWearOut", i.wearout as u8));
    }
}

/// IOR's `Results:` table, one row per measured phase, then the data-check
/// lines and, with -v, the `Max Write:`/`Max Read:` lines.
fn text_results(l: &mut Vec<String>, i: &IorInfo, rs: &ResultSet) {
    l.push(String::new());
    l.push("Results: ".into());
    l.push(String::new());
    l.extend(RESULTS_HEADER.iter().map(|s| s.to_string()));
    let rows = measured(rs, i);
    for (k, p) in rows.iter().enumerate() {
        let (open, io, close) = spans(p);
        l.push(format!(
            "{:<10}{}{}{}{}{}{}{}{}{}{:<4}",
            access(p),
            pp(p.bw_mib_s, " "),
            pp(table_iops(p), " "),
            pp(p.lat_us.mean / 1e6, "  "),
            pp(i.block as f64 / 1024.0, " "),
            pp(i.xfer as f64 / 1024.0, " "),
            pp(open, " "),
            pp(io, " "),
            pp(close, " "),
            pp(p.elapsed_s, " "),
            p.rep
        ));
        // IOR removes a repetition's files after its last phase and, with
        // -v, prints the removal's time as a row of its own.
        let last_of_rep = rows.get(k + 1).is_none_or(|q| q.rep != p.rep);
        if last_of_rep {
            l.extend(remove_row(i, p.rep));
        }
    }
    l.extend(check_lines(rs, i));
    // IOR 4.0 prints the Max lines only when verbose.
    if i.verbose >= 1 {
        if let Some(bw) = max_bw(rs, i, "write") {
            l.push(format!(
                "Max Write: {:.2} MiB/sec ({:.2} MB/sec)",
                bw / MIB,
                bw / MB
            ));
        }
        if let Some(bw) = max_bw(rs, i, "read") {
            l.push(format!(
                "Max Read:  {:.2} MiB/sec ({:.2} MB/sec)",
                bw / MIB,
                bw / MB
            ));
        }
    }
}

/// IOR's `Summary of all tests:` table.
fn text_summary(l: &mut Vec<String>, i: &IorInfo, rs: &ResultSet) {
    l.push(String::new());
    l.push("Summary of all tests:".into());
    l.push(SUMMARY_HEADER.into());
    for s in op_stats(rs, i) {
        l.push(summary_row(&s, i, placement(rs, i).1));
    }
    if rs.interrupted {
        l.push(
            "ior WARNING: interrupted; repetitions cut short are left out of the summary".into(),
        );
    }
}

impl Exporter for IorTextExporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, ExportError> {
        let i = &self.info;
        let mut l: Vec<String> = Vec::new();
        text_header(&mut l, i, rs);
        text_options(&mut l, i, rs);
        text_results(&mut l, i, rs);
        text_summary(&mut l, i, rs);
        l.push(kv("Finished", &i.finished));
        // Lines keep IOR's trailing blanks (`Options: `, the `iter` column),
        // so the layout compares byte for byte with IOR's.
        let mut out = l.join("\n");
        out.push('\n');
        Ok(out.into_bytes())
    }
}

/// IOR's `FS` line: size, used %, inodes in Mi, used inodes %.
fn fs_line(fs: &FsStats) -> String {
    let gib = fs.total_bytes as f64 / (1u64 << 30) as f64;
    let (size, unit) = if gib >= 1024.0 {
        (gib / 1024.0, "TiB")
    } else {
        (gib, "GiB")
    };
    let pct = |used: u64, total: u64| {
        if total > 0 {
            format!("{:.1}%", used as f64 * 100.0 / total as f64)
        } else {
            "-nan%".to_string()
        }
    };
    format!(
        "{size:.1} {unit}   Used FS: {}   Inodes: {:.1} Mi   Used Inodes: {}",
        pct(fs.used_bytes, fs.total_bytes),
        fs.inodes as f64 / MIB,
        pct(fs.used_inodes, fs.inodes)
    )
}

/// The data-check lines: IOR's `Verifying contents…` and a warning per
/// phase whose data did not match, naming the file and offset.
fn check_lines(rs: &ResultSet, i: &IorInfo) -> Vec<String> {
    let mut l = Vec::new();
    for p in &rs.phases {
        let Some(v) = &p.verify else { continue };
        if i.read_is_check {
            l.push("Verifying contents of the file(s) just written.".into());
        }
        if v.bad_bytes > 0 {
            l.push(format!(
                "ior WARNING: incorrect data on {} (iter {}): {} of {} bytes differ",
                if i.read_is_check { "write" } else { "read" },
                p.rep,
                v.bad_bytes,
                v.checked_bytes
            ));
            for m in &v.mismatches {
                l.push(format!(
                    "ior WARNING: first difference in {} at offset {}",
                    m.file, m.offset
                ));
            }
        }
    }
    l
}

/// A CSV field, quoted when it holds a comma, quote or line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn o_insert_xsize(v: &mut Value, agg_mib: f64) {
    if let Some(o) = v.as_object_mut() {
        o.insert("xsizeMiB".into(), json!(agg_mib));
    }
}

fn summary_json(rs: &ResultSet, i: &IorInfo) -> Vec<Value> {
    op_stats(rs, i)
        .iter()
        .map(|s| {
            let mut v = json!({
                "operation": s.access,
                "API": i.api,
                "TestID": 0,
                "ReferenceNumber": i.ref_num,
                "segmentCount": i.segments,
                "blockSize": i.block,
                "transferSize": i.xfer,
                "numTasks": i.tasks,
                "tasksPerNode": placement(rs, i).1,
                "repetitions": i.repetitions,
                "filePerProc": i.file_per_proc as u8,
                "reorderTasks": i.reorder_tasks as u8,
                "taskPerNodeOffset": i.task_offset,
                "reorderTasksRandom": 0,
                "reorderTasksRandomSeed": 0,
                "bwMaxMIB": s.bw[0],
                "bwMinMIB": s.bw[1],
                "bwMeanMIB": s.bw[2],
                "bwStdMIB": s.bw[3],
                "OPsMax": s.ops[0],
                "OPsMin": s.ops[1],
                "OPsMean": s.ops[2],
                "OPsSD": s.ops[3],
                "MeanTime": s.mean_s,
            });
            // IOR 4.0 adds the stonewall fields only when a stonewall
            // applied; ioscale's stonewall is the -D deadline.
            if i.deadline_s > 0 {
                let o = v.as_object_mut().expect("an object");
                o.insert("StoneWallTime".into(), json!(s.stonewall_s));
                o.insert("StoneWallbwMeanMIB".into(), json!(s.stonewall_task_mib_s));
            }
            o_insert_xsize(&mut v, s.agg_mib);
            v
        })
        .collect()
}

/// The data checks of a run, for the JSON and CSV documents: one entry per
/// checked phase, with every file whose data differed.
fn data_checks(rs: &ResultSet, i: &IorInfo) -> Vec<Value> {
    rs.phases
        .iter()
        .filter_map(|p| {
            let v = p.verify.as_ref()?;
            Some(json!({
                "access": if i.read_is_check { "write" } else { access(p) },
                "iter": p.rep,
                "checkedBytes": v.checked_bytes,
                "badBytes": v.bad_bytes,
                "mismatches": v.mismatches.iter().map(|m| json!({
                    "file": m.file,
                    "offset": m.offset,
                    "badBytes": m.bad_bytes,
                })).collect::<Vec<_>>(),
            }))
        })
        .collect()
}

/// `used` of `total` in percent, as IOR's `%2.1f%%`.
fn pct(used: u64, total: u64) -> String {
    if total > 0 {
        format!("{:.1}%", used as f64 * 100.0 / total as f64)
    } else {
        "-nan%".to_string()
    }
}

/// IOR's `Parameters` object: its test parameters, named as IOR names
/// them.
fn json_parameters(i: &IorInfo, nodes: u32, tpn: u32) -> Value {
    let packet = i.check_write || i.check_read;
    let params: Vec<(&str, Value)> = vec![
        ("testID", json!(0)),
        ("refnum", json!(i.ref_num)),
        ("api", json!(i.api)),
        (
            "platform",
            json!(i.machine.strip_prefix("Linux ").unwrap_or(&i.machine)),
        ),
        ("testFileName", json!(i.test_filename)),
        ("deadlineForStonewall", json!(i.deadline_s)),
        ("stoneWallingWearOut", json!(i.wearout as u8)),
        ("maxTimeDuration", json!(i.max_minutes)),
        ("outlierThreshold", json!(0)),
        ("options", json!("")),
        ("dryRun", json!(0)),
        ("nodes", json!(nodes)),
        ("memoryPerTask", json!(0)),
        ("memoryPerNode", json!(0)),
        ("tasksPerNode", json!(tpn)),
        ("repetitions", json!(i.repetitions)),
        ("multiFile", json!(0)),
        ("interTestDelay", json!(i.inter_test_delay)),
        ("fsync", json!(i.fsync as u8)),
        ("fsyncperwrite", json!(i.fsync_per_write as u8)),
        ("useExistingTestFile", json!(i.use_existing as u8)),
        ("uniqueDir", json!(i.unique_dir as u8)),
        ("singleXferAttempt", json!(i.single_xfer as u8)),
        ("readFile", json!(i.read_file as u8)),
        ("writeFile", json!(i.write_file as u8)),
        ("filePerProc", json!(i.file_per_proc as u8)),
        ("reorderTasks", json!(i.reorder_tasks as u8)),
        ("reorderTasksRandom", json!(0)),
        ("reorderTasksRandomSeed", json!(0)),
        ("randomOffset", json!(i.random_offsets as u8)),
        ("checkWrite", json!(i.check_write as u8)),
        ("checkRead", json!(i.check_read as u8)),
        ("dataPacketType", json!(if packet { 2 } else { 3 })),
        ("keepFile", json!(i.keep_file as u8)),
        ("keepFileWithError", json!(0)),
        ("warningAsErrors", json!(0)),
        ("verbose", json!(i.verbose)),
        ("data packet type", json!(if packet { "o" } else { "i" })),
        ("setTimeStampSignature/incompressibleSeed", json!(i.seed)),
        ("collective", json!(0)),
        ("segmentCount", json!(i.segments)),
        ("transferSize", json!(i.xfer)),
        ("blockSize", json!(i.block)),
    ];
    Value::Object(
        params
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// IOR's `Options` object, as its text layout's `Options:` block.
fn json_options(i: &IorInfo, nodes: u32, tpn: u32) -> Value {
    let mut options = json!({
        "api": i.api,
        "apiVersion": "",
        "test filename": i.test_filename,
        "access": if i.file_per_proc { "file-per-process" } else { "single-shared-file" },
        "type": "independent",
        "segments": i.segments,
        "ordering in a file": if i.random_offsets { "random" } else { "sequential" },
        "ordering inter file": if i.reorder_tasks { "constant task offset" } else { "no tasks offsets" },
    });
    let o = options.as_object_mut().expect("an object");
    if i.reorder_tasks {
        o.insert("task offset".into(), json!(i.task_offset));
    }
    o.insert("nodes".into(), json!(nodes));
    o.insert("tasks".into(), json!(i.tasks));
    o.insert("clients per node".into(), json!(tpn));
    o.insert("repetitions".into(), json!(i.repetitions));
    o.insert("xfersize".into(), json!(human_base_two(i.xfer)));
    o.insert("blocksize".into(), json!(human_base_two(i.block)));
    o.insert(
        "aggregate filesize".into(),
        json!(human_base_two(i.block * i.segments * i.tasks as u64)),
    );
    if i.verbose >= 1 {
        o.insert("verbose".into(), json!(i.verbose));
    }
    if i.deadline_s > 0 {
        o.insert("stonewallingTime".into(), json!(i.deadline_s));
        o.insert("stoneWallingWearOut".into(), json!(i.wearout as u8));
    }
    options
}

/// The `max` object ioscale adds with -v: the best write and read
/// bandwidth, as IOR's `Max Write:`/`Max Read:` lines.
fn json_max(rs: &ResultSet, i: &IorInfo) -> Value {
    let mut max = serde_json::Map::new();
    if let Some(bw) = max_bw(rs, i, "write") {
        max.insert("writeMiB".into(), json!(bw / MIB));
        max.insert("writeMB".into(), json!(bw / MB));
    }
    if let Some(bw) = max_bw(rs, i, "read") {
        max.insert("readMiB".into(), json!(bw / MIB));
        max.insert("readMB".into(), json!(bw / MB));
    }
    Value::Object(max)
}

/// IOR's capacity fields of the test object, from the `FS` figures.
fn json_capacity(test: &mut serde_json::Map<String, Value>, f: &FsStats) {
    let line = fs_line(f);
    let size = line.split("   ").next().unwrap_or_default().to_string();
    test.insert("Capacity".into(), json!(size));
    test.insert(
        "Used Capacity".into(),
        json!(pct(f.used_bytes, f.total_bytes)),
    );
    test.insert(
        "Inodes".into(),
        json!(format!("{:.1} Mi", f.inodes as f64 / MIB)),
    );
    test.insert("Used Inodes".into(), json!(pct(f.used_inodes, f.inodes)));
}

impl Exporter for IorJsonExporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, ExportError> {
        let i = &self.info;
        let (nodes, tpn) = placement(rs, i);
        // IOR 4.0's `Results` is one flat list: each measured phase of each
        // repetition in the order run, without a repetition number.
        let rows = measured(rs, i);
        let mut results: Vec<Value> = Vec::with_capacity(rows.len());
        for (k, p) in rows.iter().enumerate() {
            let (open, io, close) = spans(p);
            results.push(json!({
                "access": access(p),
                "bwMiB": p.bw_mib_s,
                "blockKiB": i.block as f64 / 1024.0,
                "xferKiB": i.xfer as f64 / 1024.0,
                "iops": table_iops(p),
                "latency": p.lat_us.mean / 1e6,
                "openTime": open,
                "wrRdTime": io,
                "closeTime": close,
                "totalTime": p.elapsed_s,
            }));
            // With -v IOR adds each repetition's removal to the same list.
            let last_of_rep = rows.get(k + 1).is_none_or(|q| q.rep != p.rep);
            if let Some(r) = i.removals.iter().find(|r| r.0 == p.rep) {
                if last_of_rep && i.verbose >= 1 && !i.keep_file {
                    results.push(json!({"access": "remove", "totalTime": r.1}));
                }
            }
        }
        let mut test = serde_json::Map::new();
        test.insert("TestID".into(), json!(0));
        test.insert("StartTime".into(), json!(i.began));
        test.insert("Path".into(), json!(i.path));
        if let Some(f) = &i.fs {
            json_capacity(&mut test, f);
        }
        test.insert("Parameters".into(), json_parameters(i, nodes, tpn));
        test.insert("Options".into(), json_options(i, nodes, tpn));
        test.insert("Results".into(), Value::Array(results));
        let checks = data_checks(rs, i);
        if !checks.is_empty() {
            // Not in IOR's document: a failed data check must be visible in
            // every format, not only on standard error.
            test.insert("dataCheck".into(), Value::Array(checks));
        }
        if i.verbose >= 1 {
            test.insert("max".into(), json_max(rs, i));
        }
        let doc = json!({
            "Version": i.ior_version,
            "Began": i.began,
            "Command line": i.command_line,
            "Machine": i.machine,
            "tests": [Value::Object(test)],
            "summary": summary_json(rs, i),
            "Finished": i.finished,
        });
        let mut out = serde_json::to_vec_pretty(&doc)?;
        out.push(b'\n');
        Ok(out)
    }
}

impl Exporter for IorCsvExporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, ExportError> {
        let i = &self.info;
        let mut out = String::from(
            "access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),open(s),wr/rd(s),close(s),total(s),numTasks,iter\n",
        );
        for p in measured(rs, i) {
            let (open, io, close) = spans(p);
            out.push_str(&format!(
                "{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{},{}\n",
                access(p),
                p.bw_mib_s,
                table_iops(p),
                p.lat_us.mean / 1e6,
                i.block as f64 / 1024.0,
                i.xfer as f64 / 1024.0,
                open,
                io,
                close,
                p.elapsed_s,
                i.tasks,
                p.rep
            ));
        }
        // Not in IOR's CSV: the data checks, after a blank line, so a
        // failed check is visible in this format too.
        let checks = data_checks(rs, i);
        if !checks.is_empty() {
            out.push_str("\nDataCheck,access,iter,checkedBytes,badBytes,file,offset\n");
            for c in &checks {
                let head = format!(
                    "{},{},{},{}",
                    c["access"].as_str().unwrap_or_default(),
                    c["iter"],
                    c["checkedBytes"],
                    c["badBytes"]
                );
                let ms = c["mismatches"].as_array().cloned().unwrap_or_default();
                if ms.is_empty() {
                    out.push_str(&format!("check,{head},,\n"));
                }
                for m in ms {
                    out.push_str(&format!(
                        "check,{head},{},{}\n",
                        csv_field(m["file"].as_str().unwrap_or_default()),
                        m["offset"]
                    ));
                }
            }
        }
        Ok(out.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ppdouble_matches_ior() {
        assert_eq!(pp(24.38, " "), "24.38      ");
        assert_eq!(pp(0.004828, " "), "0.004828   ");
        assert_eq!(pp(262144.0, " "), "262144     ");
        assert_eq!(pp(-1.0, " "), "   -       ");
    }

    /// A worker of a phase: starts at `start`, opens for `open`, moves
    /// data for `io`, closes for `close` (seconds).
    fn worker(start: f64, open: f64, io: f64, close: f64) -> report::WorkerRecord {
        report::WorkerRecord {
            start_s: start,
            open_s: open,
            io_s: io,
            close_s: close,
            end_s: start + open + io + close,
            ..Default::default()
        }
    }

    #[test]
    fn open_io_and_close_are_spans_over_the_tasks_as_ior_reduces_them() {
        // Task 0 finishes its transfers at 1.0 s and closes at once; task 1
        // at 2.0 s. IOR's close(s) runs from task 0's close to task 1's end.
        let p = PhaseRecord {
            open_s: 0.02,
            io_s: 1.98,
            close_s: 0.01,
            ops: 300,
            workers: vec![worker(0.0, 0.01, 0.99, 0.01), worker(0.0, 0.02, 1.98, 0.01)],
            ..Default::default()
        };
        let (open, io, close) = spans(&p);
        assert!((open - 0.02).abs() < 1e-9, "{open}");
        assert!((io - (2.0 - 0.01)).abs() < 1e-9, "{io}");
        assert!((close - 1.01).abs() < 1e-9, "{close}");
        // IOPS over the transfer span, as IOR's table.
        assert!((table_iops(&p) - 300.0 / 1.99).abs() < 1e-6);
        // No per-worker rows: the record's own figures.
        let q = PhaseRecord {
            workers: Vec::new(),
            ..p
        };
        assert_eq!(spans(&q), (0.02, 1.98, 0.01));
    }

    #[test]
    fn the_remove_row_lines_up_with_ior_and_only_under_v() {
        let mut info = IorInfo {
            removals: vec![(0, 0.000314), (1, 0.000809)],
            ..Default::default()
        };
        assert_eq!(remove_row(&info, 0), None);
        info.verbose = 1;
        // IOR 4.0 -v, as printed by it (the last column is the repetition).
        assert_eq!(
            remove_row(&info, 1).unwrap(),
            "remove    -          -          -           -          -          -          -          -          0.000809   1   "
        );
        assert_eq!(remove_row(&info, 2), None);
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human_base_two(1 << 20), "1 MiB");
        assert_eq!(human_base_two(2 << 30), "2 GiB");
        assert_eq!(human_base_two(262_144), "262144 bytes");
        assert_eq!(human_base_two(3 << 19), "1.50 MiB");
    }

    #[test]
    fn summary_columns_line_up_with_the_header() {
        let info = IorInfo {
            api: "POSIX".into(),
            tasks: 1,
            repetitions: 1,
            segments: 2048,
            block: 1 << 20,
            xfer: 1 << 20,
            task_offset: 1,
            ..Default::default()
        };
        let s = OpStats {
            access: "write",
            bw: [24.38; 4],
            ops: [24.38; 4],
            mean_s: 83.99048,
            stonewall_s: 0.0,
            stonewall_task_mib_s: 0.0,
            agg_mib: 2048.0,
        };
        let row = summary_row(&s, &info, info.tasks);
        // Right edges of the columns in IOR's own output (seed 000).
        let want = "write          24.38      24.38      24.38      24.38      24.38      24.38      24.38      24.38   83.99048         NA            NA     0      1   1    1   0     0        1         0    0   2048  1048576  1048576    2048.0 POSIX      0";
        assert_eq!(row, want);
    }
}
