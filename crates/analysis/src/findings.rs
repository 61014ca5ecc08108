//! The analysis: what a sweep's curve says, and why, in plain sentences.
//!
//! Each line of a sweep (one series, one operation) is read for its peak,
//! the smallest thread count that gets close to it, a Universal Scalability
//! Law fit (see [`crate::usl`]), the per-operation latency implied by
//! Little's law (`L = λW`, J. D. C. Little, Operations Research 9(3),
//! 1961: with N operations always in flight and X completed per second,
//! each takes `W = N / X`), and the likely limit where the curve flattens.
//! Lines that differ in one swept value (two targets, two layouts) are
//! compared for where one catches up with the other. Everything is
//! computed from the numbers alone, so it can be unit-tested on synthetic
//! curves.

use serde::{Deserialize, Serialize};

use crate::model::SweepRecord;
use crate::usl::{self, UslFit};

/// Share of the peak a thread count must reach to count as "enough".
pub const ENOUGH_SHARE: f64 = 0.95;

/// Latency growth (against the fewest threads) still read as "unchanged".
const LATENCY_STEADY: f64 = 1.25;

/// Everything the analysis found in a sweep.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// One entry per line (series and operation).
    pub curves: Vec<CurveAnalysis>,
    /// Where lines that differ in one swept value cross.
    pub comparisons: Vec<Comparison>,
}

impl Analysis {
    /// Every sentence, each line's prefixed with its name, in order.
    pub fn sentences(&self) -> Vec<String> {
        let mut out = Vec::new();
        for c in &self.curves {
            for s in &c.sentences {
                out.push(format!("{}: {s}", c.name()));
            }
        }
        for c in &self.comparisons {
            out.push(format!("{}: {}", c.op, c.sentence));
        }
        out
    }
}

/// One measured point of a line, as the analysis sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Workers.
    pub threads: u32,
    /// Central throughput in the line's unit (MiB/s, or ops/s).
    pub value: f64,
    /// Lowest repetition.
    pub min: f64,
    /// Highest repetition.
    pub max: f64,
    /// Central duration, seconds.
    pub elapsed_s: f64,
    /// Operations per second.
    pub iops: f64,
    /// Bytes per operation (0 for metadata operations).
    pub bytes_per_op: f64,
    /// CPUs kept busy (CPU seconds per second).
    pub cpu_busy: f64,
    /// CPU seconds per operation.
    pub cpu_s_per_op: f64,
}

/// Facts about the machine that explain a limit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Context {
    /// Online CPUs.
    pub cpus: u32,
    /// File-system type of the target (`ext4`, `tmpfs`, `nfs4`, `fuse.*`…).
    pub fs_type: String,
}

/// What limits a line where it flattens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    /// The process keeps (nearly) every CPU busy.
    Cpu,
    /// More threads than CPUs, and CPU time per operation rises.
    CpuContention,
    /// Memory (tmpfs / ramfs).
    Memory,
    /// The server or network of a remote or user-space file system.
    Network,
    /// The local device.
    Device,
}

/// Little's law at one thread count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LittlePoint {
    /// Workers (operations in flight).
    pub threads: u32,
    /// Operations per second.
    pub iops: f64,
    /// `threads ÷ iops`, seconds.
    pub latency_s: f64,
}

/// The reading of one line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurveAnalysis {
    /// Series label (the swept values other than threads; may be empty).
    pub series: String,
    /// Operation.
    pub op: String,
    /// Unit of `points[].value`: `MiB/s` or `ops/s`.
    pub unit: String,
    /// The line, by thread count.
    pub points: Vec<CurvePoint>,
    /// Highest throughput measured.
    pub peak: f64,
    /// Thread count that measured it.
    pub peak_threads: u32,
    /// Smallest thread count within 5 % of the peak.
    pub enough_threads: u32,
    /// Throughput there.
    pub enough_value: f64,
    /// USL fit; `None` with fewer than 3 thread counts or no sensible fit.
    pub usl: Option<UslFit>,
    /// Per-op latency by Little's law at each thread count.
    pub little: Vec<LittlePoint>,
    /// Largest thread count whose latency stays within 25 % of the
    /// fewest-threads latency (the threads that hide it).
    pub hidden_up_to: Option<u32>,
    /// Where the line flattens, what limits it.
    pub limit: Option<Limit>,
    /// The findings in words.
    pub sentences: Vec<String>,
}

impl CurveAnalysis {
    /// `op` or `op (series)`.
    pub fn name(&self) -> String {
        if self.series.is_empty() {
            self.op.clone()
        } else {
            format!("{} ({})", self.op, self.series)
        }
    }
}

/// Where two lines cross.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Operation.
    pub op: String,
    /// First line's series label.
    pub a: String,
    /// Second line's series label.
    pub b: String,
    /// Thread count at which the line that was behind first matches or
    /// passes the other; `None` when the order never changes.
    pub catch_up_threads: Option<u32>,
    /// The finding in words.
    pub sentence: String,
}

/// Reads one line. `points` need not be sorted; at most one per thread
/// count is expected.
pub fn analyse_curve(
    series: &str,
    op: &str,
    unit: &str,
    points: &[CurvePoint],
    ctx: &Context,
) -> CurveAnalysis {
    let mut pts = points.to_vec();
    pts.sort_by_key(|p| p.threads);
    let mut out = CurveAnalysis {
        series: series.to_string(),
        op: op.to_string(),
        unit: unit.to_string(),
        points: pts.clone(),
        peak: 0.0,
        peak_threads: 0,
        enough_threads: 0,
        enough_value: 0.0,
        usl: None,
        little: Vec::new(),
        hidden_up_to: None,
        limit: None,
        sentences: Vec::new(),
    };
    let Some(peak_pt) = pts
        .iter()
        .copied()
        .max_by(|a, b| a.value.total_cmp(&b.value))
    else {
        return out;
    };
    out.peak = peak_pt.value;
    out.peak_threads = peak_pt.threads;
    let enough = pts
        .iter()
        .find(|p| p.value >= ENOUGH_SHARE * peak_pt.value)
        .copied()
        .unwrap_or(peak_pt);
    out.enough_threads = enough.threads;
    out.enough_value = enough.value;
    let first = pts[0];
    let last = *pts.last().expect("non-empty");
    let u = unit;
    if pts.len() == 1 {
        out.sentences.push(format!(
            "{} {u} at {} — one thread count only; sweep several (e.g. --threads 1..64x2) to see how it scales.",
            num(first.value),
            threads(first.threads)
        ));
    } else {
        let gain = if first.value > 0.0 {
            format!(
                ", {}× the {} of {}",
                num(peak_pt.value / first.value),
                u,
                threads(first.threads)
            )
        } else {
            String::new()
        };
        let mut s = format!(
            "Peak {} {u} at {}{gain}.",
            num(peak_pt.value),
            threads(peak_pt.threads)
        );
        if peak_pt.threads == last.threads && enough.threads == last.threads {
            s.push_str(&format!(
                " It is still rising at the largest thread count tested ({}); try more threads.",
                last.threads
            ));
        } else if enough.threads < peak_pt.threads {
            s.push_str(&format!(
                " {} already reach{} within 5 % of it ({} {u}), so {} {} enough here.",
                cap(&threads(enough.threads)),
                if enough.threads == 1 { "es" } else { "" },
                num(enough.value),
                threads(enough.threads),
                if enough.threads == 1 { "is" } else { "are" },
            ));
        } else {
            s.push_str(&format!(
                " Fewer threads stay more than 5 % below it, so {} {} enough here.",
                threads(enough.threads),
                if enough.threads == 1 { "is" } else { "are" },
            ));
        }
        out.sentences.push(s);
    }

    // Little's law.
    out.little = pts
        .iter()
        .filter(|p| p.iops > 0.0)
        .map(|p| LittlePoint {
            threads: p.threads,
            iops: p.iops,
            latency_s: p.threads as f64 / p.iops,
        })
        .collect();
    if let Some(l0) = out.little.first().copied() {
        let per_worker = 1.0 / l0.latency_s;
        let data = if first.bytes_per_op > 0.0 {
            format!(
                " ({} MiB/s at {} per operation)",
                num(per_worker * first.bytes_per_op / 1_048_576.0),
                bytes(first.bytes_per_op)
            )
        } else {
            String::new()
        };
        out.sentences.push(format!(
            "Per-operation latency ≈ {} at {} (Little's law: threads ÷ operations per second), so one {} cannot exceed {} operations/s{data}.",
            dur(l0.latency_s),
            threads(l0.threads),
            if l0.threads == 1 { "thread" } else { "worker" },
            num(per_worker),
        ));
        out.hidden_up_to = out
            .little
            .iter()
            .skip(1)
            .take_while(|l| l.latency_s <= LATENCY_STEADY * l0.latency_s)
            .last()
            .map(|l| l.threads);
        if let Some(h) = out.hidden_up_to {
            let at = pts
                .iter()
                .find(|p| p.threads == h)
                .copied()
                .unwrap_or(first);
            out.sentences.push(format!(
                "The latency stays near that up to {h} threads, so {h} threads hide it: they keep {h} operations in flight and reach {}× the {} of {}.",
                num(if first.value > 0.0 { at.value / first.value } else { 0.0 }),
                u,
                threads(first.threads)
            ));
        }
        let queued = out
            .little
            .iter()
            .find(|l| l.latency_s > LATENCY_STEADY * l0.latency_s);
        let worst = out.little.last().copied().expect("non-empty");
        if let Some(q) = queued {
            if worst.latency_s > 1.5 * l0.latency_s {
                out.sentences.push(format!(
                    "From {} on the latency grows with the thread count ({} at {}): operations queue at a shared limit, so more threads add waiting, not throughput.",
                    threads(q.threads),
                    dur(worst.latency_s),
                    threads(worst.threads)
                ));
            }
        }
    }

    // USL.
    let fit_pts: Vec<(f64, f64)> = pts.iter().map(|p| (p.threads as f64, p.value)).collect();
    out.usl = usl::fit(&fit_pts);
    if pts.len() > 1 {
        out.sentences.push(match &out.usl {
            None if fit_pts.len() < 3 => {
                "Too few thread counts for a scalability fit (the USL needs 3 or more).".to_string()
            }
            None => "No sensible USL fit: the curve rises faster than linearly (a cache warming up, or noise); look at the repetitions.".to_string(),
            Some(f) => usl_sentence(f, u),
        });
    }

    // Where it flattens, and why.
    let tail: Vec<CurvePoint> = pts
        .iter()
        .filter(|p| p.threads >= enough.threads)
        .copied()
        .collect();
    if pts.len() > 1 && tail.len() > 1 {
        let busy = tail.iter().map(|p| p.cpu_busy).fold(0.0f64, f64::max);
        let cpus = ctx.cpus.max(1);
        let cpu_grew = first.cpu_s_per_op > 0.0 && last.cpu_s_per_op > 1.5 * first.cpu_s_per_op;
        let fs = ctx.fs_type.as_str();
        let limit = if busy >= 0.8 * cpus as f64 {
            Limit::Cpu
        } else if last.threads > cpus && cpu_grew {
            Limit::CpuContention
        } else if matches!(fs, "tmpfs" | "ramfs") {
            Limit::Memory
        } else if is_remote(fs) {
            Limit::Network
        } else {
            Limit::Device
        };
        out.limit = Some(limit);
        let from = format!("The curve flattens from {}", threads(enough.threads));
        out.sentences.push(match limit {
            Limit::Cpu => format!(
                "{from}, where the process keeps {} of {cpus} CPUs busy: a CPU limit — more threads cannot run at once.",
                num(busy)
            ),
            Limit::CpuContention => format!(
                "{from}; with more threads ({}) than CPUs ({cpus}) the CPU time per operation rose from {} to {}: the threads compete for the CPUs.",
                last.threads,
                dur(first.cpu_s_per_op),
                dur(last.cpu_s_per_op)
            ),
            Limit::Memory => format!(
                "{from}: the target is {fs}, so the limit is memory copy speed, not storage ({} of {cpus} CPUs busy).",
                num(busy)
            ),
            Limit::Network => format!(
                "{from} while only {} of {cpus} CPUs are busy: the limit is the {fs} server or the network (≈ {} {u} for this workload), not this machine.",
                num(busy),
                num(out.peak)
            ),
            Limit::Device => format!(
                "{from} while only {} of {cpus} CPUs are busy: the limit is the device (≈ {} {u} for this workload), not the CPUs.",
                num(busy),
                num(out.peak)
            ),
        });
        if enough.threads > cpus && !matches!(limit, Limit::Cpu | Limit::CpuContention) {
            out.sentences.push(format!(
                "Threads beyond the {cpus} CPUs still helped (up to {}): they wait on I/O, not on the CPU.",
                enough.threads
            ));
        }
        if last.value < 0.9 * out.peak && last.threads > out.peak_threads {
            out.sentences.push(format!(
                "Past {} throughput falls ({} {u} at {}, {}% below the peak): more threads cost more in contention than they bring.",
                threads(out.peak_threads),
                num(last.value),
                threads(last.threads),
                ((1.0 - last.value / out.peak) * 100.0).round()
            ));
        }
    }
    out
}

fn usl_sentence(f: &UslFit, u: &str) -> String {
    let head = format!(
        "USL fit (Gunther): σ = {:.4} (contention), κ = {:.6} (coherency), R² = {:.3}",
        f.sigma, f.kappa, f.r2
    );
    match (f.peak_threads, f.ceiling) {
        (Some(n), Some(c)) => format!(
            "{head}; it predicts a peak at N* = √((1−σ)/κ) ≈ {} threads with a ceiling of ≈ {} {u}.",
            num(n),
            num(c)
        ),
        (None, Some(c)) => format!(
            "{head}; κ ≈ 0, so there is no finite peak: throughput levels off towards λ/σ ≈ {} {u}.",
            num(c)
        ),
        _ => format!("{head}; it scales linearly over the range tested, with no ceiling in sight."),
    }
}

/// File-system types served over a network or by a user-space daemon.
fn is_remote(fs: &str) -> bool {
    fs.starts_with("nfs")
        || fs.starts_with("fuse")
        || fs.starts_with("cifs")
        || fs.starts_with("smb")
        || matches!(
            fs,
            "lustre" | "ceph" | "9p" | "glusterfs" | "gpfs" | "beegfs" | "efs" | "virtiofs"
        )
}

/// Compares two lines of the same operation at their common thread counts.
pub fn compare_curves(a: &CurveAnalysis, b: &CurveAnalysis) -> Option<Comparison> {
    let common: Vec<(u32, f64, f64)> = a
        .points
        .iter()
        .filter_map(|p| {
            b.points
                .iter()
                .find(|q| q.threads == p.threads)
                .map(|q| (p.threads, p.value, q.value))
        })
        .collect();
    let &(n0, a0, b0) = common.first()?;
    let u = &a.unit;
    let (lead, trail) = if a0 >= b0 {
        (&a.series, &b.series)
    } else {
        (&b.series, &a.series)
    };
    let a_leads = a0 >= b0;
    let cross = common
        .iter()
        .find(|&&(_, x, y)| if a_leads { y >= x } else { x >= y });
    let (catch_up_threads, sentence) = match cross {
        Some(&(n, x, y)) if n != n0 || a0 != b0 => {
            let (tv, lv) = if a_leads { (y, x) } else { (x, y) };
            (
                Some(n),
                format!(
                    "{trail} catches up with {lead} at {} ({} vs {} {u}); below that {lead} is faster ({} vs {} at {}).",
                    threads(n),
                    num(tv),
                    num(lv),
                    num(a0.max(b0)),
                    num(a0.min(b0)),
                    threads(n0)
                ),
            )
        }
        Some(_) => (
            None,
            format!(
                "{} and {} start level at {}.",
                a.series,
                b.series,
                threads(n0)
            ),
        ),
        None => {
            let ratios: Vec<f64> = common
                .iter()
                .map(|&(_, x, y)| {
                    if a_leads {
                        x / y.max(1e-300)
                    } else {
                        y / x.max(1e-300)
                    }
                })
                .collect();
            let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = ratios.iter().copied().fold(0.0f64, f64::max);
            let last = common.last().expect("non-empty").0;
            (
                None,
                format!(
                    "{lead} is faster than {trail} at every thread count tested ({n0}–{last}), by {}× to {}×; {trail} never catches up.",
                    num(lo),
                    num(hi)
                ),
            )
        }
    };
    Some(Comparison {
        op: a.op.clone(),
        a: a.series.clone(),
        b: b.series.clone(),
        catch_up_threads,
        sentence,
    })
}

/// Which swept values a series has: (target, layout, xfer).
type Dims = (String, String, u64);

/// Analyses a whole sweep: one line per series and operation, and the
/// crossings of lines that differ in exactly one swept value.
pub fn analyse(rec: &SweepRecord) -> Analysis {
    let ctx = Context {
        cpus: rec.host.cpus,
        fs_type: rec.host.fs_type.clone(),
    };
    // Lines in first-seen order.
    let mut lines: Vec<(Dims, String, String, String, Vec<CurvePoint>, String)> = Vec::new();
    for p in &rec.points {
        let dims: Dims = (p.target.clone(), p.layout.clone(), p.xfer);
        let fs = if p.result.host.fs_type.is_empty() {
            ctx.fs_type.clone()
        } else {
            p.result.host.fs_type.clone()
        };
        for o in &p.ops {
            let data = o.moves_data();
            let unit = if data { "MiB/s" } else { "ops/s" };
            let (value, min, max) = if data {
                (o.center_bw_mib_s(), o.bw_mib_s.min, o.bw_mib_s.max)
            } else {
                (o.center_iops(), o.iops.min, o.iops.max)
            };
            let cp = CurvePoint {
                threads: p.threads,
                value,
                min,
                max,
                elapsed_s: o.center_elapsed_s(),
                iops: o.center_iops(),
                bytes_per_op: if o.iops.mean > 0.0 {
                    o.bw_mib_s.mean * 1_048_576.0 / o.iops.mean
                } else {
                    0.0
                },
                cpu_busy: o.cpu_busy,
                cpu_s_per_op: o.cpu_s_per_op,
            };
            match lines
                .iter_mut()
                .find(|l| l.0 == dims && l.2 == o.op && l.3 == unit)
            {
                Some(l) => l.4.push(cp),
                None => lines.push((
                    dims.clone(),
                    p.series.clone(),
                    o.op.clone(),
                    unit.to_string(),
                    vec![cp],
                    fs.clone(),
                )),
            }
        }
    }
    let curves: Vec<CurveAnalysis> = lines
        .iter()
        .map(|(_, series, op, unit, pts, fs)| {
            let c = Context {
                cpus: ctx.cpus,
                fs_type: fs.clone(),
            };
            analyse_curve(series, op, unit, pts, &c)
        })
        .collect();
    let mut comparisons = Vec::new();
    for i in 0..lines.len() {
        for j in i + 1..lines.len() {
            let (da, db) = (&lines[i].0, &lines[j].0);
            let differ = (da.0 != db.0) as u8 + (da.1 != db.1) as u8 + (da.2 != db.2) as u8;
            if differ == 1 && lines[i].2 == lines[j].2 && lines[i].3 == lines[j].3 {
                if let Some(c) = compare_curves(&curves[i], &curves[j]) {
                    comparisons.push(c);
                }
            }
        }
    }
    Analysis {
        curves,
        comparisons,
    }
}

fn cap(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// "1 thread", "8 threads".
pub fn threads(n: u32) -> String {
    if n == 1 {
        "1 thread".into()
    } else {
        format!("{n} threads")
    }
}

/// A number with about three significant digits, no exponent.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        format!("{v}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a == 0.0 {
        "0".into()
    } else {
        format!("{v:.3}")
    }
}

/// A duration in the unit that reads best: `4.0 ms`, `250 µs`, `1.50 s`.
pub fn dur(s: f64) -> String {
    if s >= 1.0 {
        format!("{} s", num(s))
    } else if s >= 1e-3 {
        format!("{} ms", num(s * 1e3))
    } else if s >= 1e-6 {
        format!("{} µs", num(s * 1e6))
    } else {
        format!("{} ns", num(s * 1e9))
    }
}

fn bytes(b: f64) -> String {
    spec::format_size(b.round().max(0.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line following the USL, with Little's-law-consistent rates for
    /// `bytes_per_op`-sized operations.
    fn usl_line(
        lambda: f64,
        sigma: f64,
        kappa: f64,
        ns: &[u32],
        bytes_per_op: f64,
    ) -> Vec<CurvePoint> {
        ns.iter()
            .map(|&n| {
                let nf = n as f64;
                let v = lambda * nf / (1.0 + sigma * (nf - 1.0) + kappa * nf * (nf - 1.0));
                CurvePoint {
                    threads: n,
                    value: v,
                    min: v * 0.98,
                    max: v * 1.02,
                    elapsed_s: 2048.0 / v,
                    iops: v * 1_048_576.0 / bytes_per_op,
                    bytes_per_op,
                    cpu_busy: 0.1,
                    cpu_s_per_op: 20e-6,
                }
            })
            .collect()
    }

    const NS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

    fn ctx(fs: &str) -> Context {
        Context {
            cpus: 2,
            fs_type: fs.into(),
        }
    }

    #[test]
    fn recovers_usl_and_peak() {
        let pts = usl_line(25.0, 0.02, 0.0004, &NS, 1_048_576.0);
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("nfs4"));
        let f = a.usl.unwrap();
        assert!((f.sigma - 0.02).abs() < 1e-9 && (f.kappa - 0.0004).abs() < 1e-12);
        // N* = sqrt(0.98 / 0.0004) ≈ 49.5; measured peak at 32 or 64.
        assert!((f.peak_threads.unwrap() - 49.497).abs() < 0.01);
        let best = pts
            .iter()
            .max_by(|a, b| a.value.total_cmp(&b.value))
            .unwrap();
        assert_eq!(a.peak_threads, best.threads);
        assert_eq!(a.limit, Some(Limit::Network));
        let text = a.sentences.join("\n");
        assert!(text.contains("N* = √((1−σ)/κ) ≈ 49.5 threads"), "{text}");
    }

    #[test]
    fn knee_is_smallest_within_five_percent() {
        let mut pts = usl_line(10.0, 0.0, 0.0, &NS, 4096.0);
        // Flat from 16 threads: 16 → 100, 32 → 103, 64 → 104.
        for (n, v) in [(16, 100.0), (32, 103.0), (64, 104.0)] {
            let p = pts.iter_mut().find(|p| p.threads == n).unwrap();
            p.value = v;
            p.iops = v * 1_048_576.0 / 4096.0;
        }
        let a = analyse_curve("shared", "write", "MiB/s", &pts, &ctx("ext4"));
        assert_eq!(a.peak_threads, 64);
        assert_eq!(a.enough_threads, 16, "100 ≥ 0.95 × 104");
        assert_eq!(a.limit, Some(Limit::Device));
        assert!(
            a.sentences[0].contains("so 16 threads are enough here"),
            "{:?}",
            a.sentences
        );
        assert!(a
            .sentences
            .iter()
            .any(|s| s.contains("Threads beyond the 2 CPUs still helped")));
    }

    #[test]
    fn still_rising_says_so() {
        let pts = usl_line(10.0, 0.0, 0.0, &[1, 2, 4], 4096.0);
        let a = analyse_curve("", "read", "MiB/s", &pts, &ctx("ext4"));
        assert_eq!(a.enough_threads, 4);
        assert!(a.sentences[0].contains("still rising"), "{:?}", a.sentences);
        assert_eq!(a.limit, None);
        let f = a.usl.unwrap();
        assert_eq!(f.ceiling, None);
    }

    #[test]
    fn little_law_numbers() {
        // 4 ms per 1 MiB operation, perfectly hidden up to 16 threads, then
        // the service saturates at 16 in flight.
        let d = 0.004;
        let pts: Vec<CurvePoint> = NS
            .iter()
            .map(|&n| {
                let iops = n.min(16) as f64 / d;
                CurvePoint {
                    threads: n,
                    value: iops,
                    min: iops,
                    max: iops,
                    elapsed_s: 1.0,
                    iops,
                    bytes_per_op: 1_048_576.0,
                    cpu_busy: 0.05,
                    cpu_s_per_op: 10e-6,
                }
            })
            .collect();
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("fuse.ioscale-testfs"));
        assert!((a.little[0].latency_s - 0.004).abs() < 1e-12);
        assert!((a.little[6].latency_s - 0.016).abs() < 1e-12, "64 / 4000");
        assert_eq!(a.hidden_up_to, Some(16));
        let text = a.sentences.join("\n");
        assert!(text.contains("latency ≈ 4.00 ms at 1 thread"), "{text}");
        assert!(
            text.contains("cannot exceed 250 operations/s (250 MiB/s at 1 MiB per operation)"),
            "{text}"
        );
        assert!(text.contains("so 16 threads hide it"), "{text}");
        assert!(
            text.contains("From 32 threads on the latency grows"),
            "{text}"
        );
        assert_eq!(a.limit, Some(Limit::Network));
    }

    #[test]
    fn cpu_limits_are_named() {
        let mut pts = usl_line(100.0, 0.3, 0.0, &NS, 4096.0);
        for p in &mut pts {
            p.cpu_busy = if p.threads >= 2 { 1.9 } else { 1.0 };
        }
        let a = analyse_curve("", "randread", "MiB/s", &pts, &ctx("ext4"));
        assert_eq!(a.limit, Some(Limit::Cpu), "{:?}", a.sentences);
        let mut pts = usl_line(100.0, 0.3, 0.0, &NS, 4096.0);
        for p in &mut pts {
            p.cpu_s_per_op = 10e-6 * p.threads as f64;
        }
        let a = analyse_curve("", "randread", "MiB/s", &pts, &ctx("ext4"));
        assert_eq!(a.limit, Some(Limit::CpuContention), "{:?}", a.sentences);
        let a = analyse_curve(
            "",
            "write",
            "MiB/s",
            &usl_line(100.0, 0.3, 0.0, &NS, 4096.0),
            &ctx("tmpfs"),
        );
        assert_eq!(a.limit, Some(Limit::Memory));
    }

    #[test]
    fn retrograde_fall_is_reported() {
        let pts = usl_line(10.0, 0.05, 0.01, &NS, 4096.0);
        let a = analyse_curve("", "write", "MiB/s", &pts, &ctx("ext4"));
        assert!(
            a.sentences.iter().any(|s| s.contains("throughput falls")),
            "{:?}",
            a.sentences
        );
    }

    #[test]
    fn single_point_and_empty() {
        let a = analyse_curve(
            "",
            "write",
            "MiB/s",
            &usl_line(5.0, 0.0, 0.0, &[4], 4096.0),
            &ctx("ext4"),
        );
        assert_eq!(a.peak_threads, 4);
        assert!(a.sentences[0].contains("one thread count only"));
        assert!(a.usl.is_none());
        let e = analyse_curve("", "write", "MiB/s", &[], &ctx("ext4"));
        assert!(e.sentences.is_empty());
    }

    #[test]
    fn catch_up_point() {
        // EBS flat at 136 MB/s; EFS 24 per thread (seed 001's shape).
        let ebs: Vec<CurvePoint> = [1u32, 4, 16]
            .iter()
            .map(|&n| CurvePoint {
                threads: n,
                value: 136.0,
                ..Default::default()
            })
            .collect();
        let efs: Vec<CurvePoint> = [(1u32, 23.6), (4, 87.9), (16, 193.6)]
            .iter()
            .map(|&(n, v)| CurvePoint {
                threads: n,
                value: v,
                ..Default::default()
            })
            .collect();
        let a = analyse_curve("/ebs", "write", "MiB/s", &ebs, &ctx("ext4"));
        let b = analyse_curve("/efs", "write", "MiB/s", &efs, &ctx("nfs4"));
        let c = compare_curves(&a, &b).unwrap();
        assert_eq!(c.catch_up_threads, Some(16));
        assert!(
            c.sentence
                .starts_with("/efs catches up with /ebs at 16 threads"),
            "{}",
            c.sentence
        );
        let c = compare_curves(&b, &a).unwrap();
        assert_eq!(c.catch_up_threads, Some(16));
        let slow: Vec<CurvePoint> = efs
            .iter()
            .map(|p| CurvePoint {
                value: p.value / 10.0,
                ..*p
            })
            .collect();
        let s = analyse_curve("/slow", "write", "MiB/s", &slow, &ctx("nfs4"));
        let c = compare_curves(&a, &s).unwrap();
        assert_eq!(c.catch_up_threads, None);
        assert!(c.sentence.contains("never catches up"), "{}", c.sentence);
    }

    #[test]
    fn formats() {
        assert_eq!(num(281.12), "281");
        assert_eq!(num(49.497), "49.5");
        assert_eq!(num(4.0), "4.00");
        assert_eq!(num(0.0), "0");
        assert_eq!(dur(0.004), "4.00 ms");
        assert_eq!(dur(250e-6), "250 µs");
        assert_eq!(threads(1), "1 thread");
    }
}
