//! fio's output layouts — normal text, JSON and terse — from measured
//! figures.
//!
//! What ioscale measures: bytes and requests per direction, run time, the
//! latencies of every request by direction — fio's `lat` (preparation to
//! completion), and for io_uring `slat` (to the return of the submit call
//! that handed it over) and `clat` (from there to completion) — in
//! log-linear histograms per worker (min, max and mean exact; stdev,
//! percentiles and fio's latency buckets from the histogram, whose buckets
//! are within 1/64 of their value), bandwidth and IOPS per interval of each
//! worker and direction (fio's bw/iops samples), CPU time, context
//! switches and page faults of the run, and the block device's counters.
//! What fio prints beyond that (IO depth distribution) is left out; where
//! fio itself prints zeros for a direction that did nothing, so does this.

use serde_json::{json, Map, Value};
use stats::LatencyHistogram;

use super::parse::Job;

/// fio's default `percentile_list`.
pub const FIO_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// The latency of one entry's direction: every request's, in a histogram.
#[derive(Clone)]
pub struct Lat {
    /// Issue to completion, ns.
    pub hist: LatencyHistogram,
}

impl std::fmt::Debug for Lat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Lat(n={})", self.hist.count())
    }
}

impl Lat {
    fn n(&self) -> u64 {
        self.hist.count()
    }
    fn min(&self) -> u64 {
        self.hist.min()
    }
    fn max(&self) -> u64 {
        self.hist.max()
    }
    fn mean(&self) -> f64 {
        self.hist.mean_ns()
    }
    fn dev(&self) -> f64 {
        self.hist.stddev_ns()
    }
    /// ns at percentile `q` (0..=100).
    fn at(&self, q: f64) -> u64 {
        self.hist.value_at_quantile(q / 100.0)
    }
}

/// Summary of per-interval samples (fio's bw/iops lines): fio's `io_stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SampleStat {
    /// Lowest sample.
    pub min: f64,
    /// Highest sample.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Sum of squared deviations from the mean.
    pub s: f64,
    /// Samples.
    pub n: u64,
}

impl SampleStat {
    /// The summary of some samples; `None` when there are none.
    pub fn of(xs: &[f64]) -> Option<SampleStat> {
        if xs.is_empty() {
            return None;
        }
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        Some(SampleStat {
            min: xs.iter().cloned().fold(f64::MAX, f64::min),
            max: xs.iter().cloned().fold(f64::MIN, f64::max),
            mean,
            s: xs.iter().map(|x| (x - mean) * (x - mean)).sum(),
            n: xs.len() as u64,
        })
    }
    /// Two clones' summaries added up, as fio sums a group's bw and iops:
    /// min, max and mean are the sums (the group's rate), samples counted.
    pub fn sum(a: Option<SampleStat>, b: Option<SampleStat>) -> Option<SampleStat> {
        match (a, b) {
            (Some(a), Some(b)) => Some(SampleStat {
                min: a.min + b.min,
                max: a.max + b.max,
                mean: a.mean + b.mean,
                s: a.s + b.s,
                n: a.n + b.n,
            }),
            (x, None) | (None, x) => x,
        }
    }
    /// Sample standard deviation (n − 1), 0 with one sample.
    pub fn dev(&self) -> f64 {
        if self.n > 1 {
            (self.s / (self.n - 1) as f64).sqrt()
        } else {
            0.0
        }
    }
}

/// One direction of one entry.
#[derive(Debug, Clone, Default)]
pub struct DirStats {
    /// Bytes moved.
    pub bytes: u64,
    /// Requests completed.
    pub ios: u64,
    /// Seconds the direction was active.
    pub runtime_s: f64,
    /// Latency from a request's preparation to its completion (fio's
    /// `lat`), where measured for this entry alone.
    pub lat: Option<Lat>,
    /// From its hand-over to the kernel to its completion (fio's `clat`);
    /// `None`: the same as `lat` (a request handed over in the wait).
    pub clat: Option<Lat>,
    /// From its preparation to the return of its submit call (fio's
    /// `slat`), where the engine hands requests over apart from the wait.
    pub slat: Option<Lat>,
    /// Bandwidth samples, KiB/s.
    pub bw_stat: Option<SampleStat>,
    /// IOPS samples.
    pub iops_stat: Option<SampleStat>,
    /// Transfers done in part and issued again for the rest (fio's
    /// `short_ios`).
    pub short: u64,
}

impl DirStats {
    /// fio's clat: the completion latency, or the whole latency where the
    /// two are one.
    fn clat(&self) -> Option<&Lat> {
        self.clat.as_ref().or(self.lat.as_ref())
    }
    fn bw(&self) -> f64 {
        if self.runtime_s > 0.0 {
            self.bytes as f64 / self.runtime_s
        } else {
            0.0
        }
    }
    fn iops(&self) -> f64 {
        if self.runtime_s > 0.0 {
            self.ios as f64 / self.runtime_s
        } else {
            0.0
        }
    }
    fn ms(&self) -> u64 {
        (self.runtime_s * 1000.0).round() as u64
    }
}

/// One reported job (a clone, or a job with `group_reporting`).
#[derive(Debug, Clone)]
pub struct Entry {
    /// Job name.
    pub name: String,
    /// fio group id.
    pub group: usize,
    /// Clones covered.
    pub jobs: u64,
    /// Reads.
    pub read: DirStats,
    /// Writes.
    pub write: DirStats,
    /// Seconds of all phases.
    pub runtime_s: f64,
    /// CPU seconds (user, system) of the run, where it covers the run.
    pub cpu_s: Option<(f64, f64)>,
    /// Context switches, major and minor faults of the run, likewise.
    pub faults: Option<(u64, u64, u64)>,
    /// fio's latency buckets (`lat (nsec/usec/msec)`), of every request.
    pub buckets: Option<LatBuckets>,
    /// The engine is synchronous (no submission latency, depth 1).
    pub sync_engine: bool,
    /// Bandwidth and IOPS were sampled per interval for this entry.
    pub sampled: bool,
    /// Queue depth.
    pub iodepth: u64,
    /// First error's errno, 0 when none.
    pub error: i32,
    /// The job's own options.
    pub options: Vec<(String, String)>,
    /// `percentile_list=`.
    pub percentiles: Option<Vec<f64>>,
    /// `lat_percentiles=1`.
    pub lat_percentiles: bool,
    /// Seconds each clone ran, summed (fio's `job_runtime`; one clone's
    /// own without `group_reporting`).
    pub clones_runtime_s: f64,
    /// fio's IO depth tallies of the entry's clones.
    pub depths: engine::worker::Depths,
    /// The latency of each fsync/fdatasync between writes (fio's `sync`).
    pub syncs: Option<Lat>,
    /// `steadystate=`: what the job's steady-state watch measured.
    pub steadystate: Option<SteadyState>,
}

/// fio's `steadystate` object of a job, from the executor's record of its
/// steady-state watch (`phases[].steady`): the rule, whether it was met,
/// and the last window's one-second samples with the figures fio derives
/// from them (mean, largest deviation from it, least-squares slope, and
/// the criterion: the deviation or slope, as a share of the mean when the
/// limit is a percentage).
#[derive(Debug, Clone, PartialEq)]
pub struct SteadyState {
    /// `iops:5.000000%`, as fio prints the rule.
    pub rule: String,
    /// The window, seconds.
    pub duration: u64,
    /// Steady before the job ended.
    pub attained: bool,
    /// The criterion's value, as fio prints it (`21.929239%`).
    pub criterion: String,
    /// The same value as a number (a percentage when the limit is one).
    pub criterion_value: f64,
    /// Whether the limit, and so the criterion, is a percentage.
    pub pct: bool,
    /// What the normal output names the criterion (`iops mean dev`,
    /// `bw slope`).
    pub label: String,
    /// Largest distance of a sample from the window's mean (deviation
    /// criteria; 0 for a slope), in IOPS or bytes/s.
    pub max_deviation: f64,
    /// Least-squares slope of the samples per second (slope criteria; 0
    /// otherwise), in IOPS or bytes/s.
    pub slope: f64,
    /// Mean bytes/s and IOPS of the window.
    pub bw_mean: u64,
    /// Mean IOPS of the window.
    pub iops_mean: u64,
    /// Each second's IOPS.
    pub iops: Vec<u64>,
    /// Each second's bytes/s.
    pub bw: Vec<u64>,
}

impl SteadyState {
    /// fio's object from the executor's record `st` of one phase.
    pub fn of(st: &report::SteadyRecord) -> SteadyState {
        let bw_kind = st.criterion.starts_with("bw");
        let slope_kind = st.criterion.ends_with("_slope");
        let data: Vec<f64> = if bw_kind {
            st.sample_bytes.iter().map(|&b| b as f64).collect()
        } else {
            st.sample_ops.iter().map(|&o| o as f64).collect()
        };
        let n = data.len() as f64;
        let mean = if data.is_empty() {
            0.0
        } else {
            data.iter().sum::<f64>() / n
        };
        let dev = data.iter().map(|v| (v - mean).abs()).fold(0.0, f64::max);
        let slope = if slope_kind { slope_of(&data) } else { 0.0 };
        let raw = if slope_kind { slope } else { dev };
        let (crit, unit) = if st.limit_pct {
            (if mean > 0.0 { 100.0 * raw / mean } else { 0.0 }, "%")
        } else {
            (raw, "")
        };
        // The record's bandwidth limit is in MiB/s; fio states bytes/s.
        let limit = if bw_kind && !st.limit_pct {
            st.limit * 1_048_576.0
        } else {
            st.limit
        };
        let mean_of = |v: &[u64]| {
            v.iter()
                .sum::<u64>()
                .checked_div(v.len() as u64)
                .unwrap_or(0)
        };
        SteadyState {
            rule: format!("{}:{limit:.6}{unit}", st.criterion),
            duration: st.window_s as u64,
            attained: st.reached,
            criterion: format!("{crit:.6}{unit}"),
            criterion_value: crit,
            pct: st.limit_pct,
            label: format!(
                "{} {}",
                if bw_kind { "bw" } else { "iops" },
                if slope_kind { "slope" } else { "mean dev" }
            ),
            max_deviation: if slope_kind { 0.0 } else { dev },
            slope,
            bw_mean: mean_of(&st.sample_bytes),
            iops_mean: mean_of(&st.sample_ops),
            iops: st.sample_ops.clone(),
            bw: st.sample_bytes.clone(),
        }
    }
}

/// Least-squares slope of `v` against its index (one per second).
fn slope_of(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    if v.len() < 2 {
        return 0.0;
    }
    let mx = (n - 1.0) / 2.0;
    let my = v.iter().sum::<f64>() / n;
    let (num, den) = v.iter().enumerate().fold((0.0, 0.0), |(a, b), (i, y)| {
        let dx = i as f64 - mx;
        (a + dx * (y - my), b + dx * dx)
    });
    num / den
}

/// A job's line at the top of the normal output.
#[derive(Debug, Clone)]
pub struct Header {
    name: String,
    group: usize,
    rw: String,
    /// Smallest and largest request, read, write and trim.
    bs: [(u64, u64); 3],
    ioengine: String,
    iodepth: u64,
    clones: u64,
}

impl Header {
    /// The header of a job.
    pub fn of(j: &Job) -> Header {
        Header {
            name: j.name.clone(),
            group: j.group,
            rw: j.rw_text.clone(),
            bs: j.bs_dirs.clone().map(|z| (z.min, z.max)),
            ioengine: j.ioengine.clone(),
            iodepth: j.iodepth,
            clones: j.numjobs,
        }
    }
}

/// Block-device counters over the whole command, as fio's `Disk stats`:
/// the change of the device's eleven counters (`/proc/diskstats` fields
/// 4–14, measured by the probe crate, `probe::disk_counters` in the
/// binary) between two readings.
#[derive(Debug, Clone)]
pub struct DiskUtil {
    name: String,
    d: [u64; 11],
    ms: u64,
}

impl DiskUtil {
    /// The change between two readings `ms` milliseconds apart.
    pub fn between(name: &str, a: &[u64; 11], b: &[u64; 11], ms: u64) -> DiskUtil {
        let mut d = [0u64; 11];
        for i in 0..11 {
            d[i] = b[i].saturating_sub(a[i]);
        }
        DiskUtil {
            name: name.to_string(),
            d,
            ms,
        }
    }
    fn util(&self) -> f64 {
        if self.ms == 0 {
            0.0
        } else {
            (self.d[9] as f64 / self.ms as f64 * 100.0).min(100.0)
        }
    }
}

/// Everything printed.
pub struct Report {
    /// Our version string.
    pub version: String,
    /// When the command started.
    pub started: std::time::SystemTime,
    /// The same in C's `ctime` form, local time (fio's date style).
    pub started_text: String,
    /// When the jobs ended (fio's JSON `timestamp`), and in `ctime` form.
    pub ended: std::time::SystemTime,
    /// [`Report::ended`] in C's `ctime` form.
    pub ended_text: String,
    /// `[global]` options.
    pub global: Vec<(String, String)>,
    /// One per job.
    pub headers: Vec<Header>,
    /// One per reported job.
    pub entries: Vec<Entry>,
    /// Devices under the targets.
    pub disks: Vec<DiskUtil>,
    /// "Laying out IO file" lines.
    pub layout_lines: Vec<String>,
    /// Process id.
    pub pid: u32,
}

/// fio's number style: at most four digits before the unit, decimals to
/// fill the rest once divided (`491k`, `48.1MiB`, `1918MiB`, `5.12k`,
/// `32.0MiB`).
fn num(v: f64, base: f64, units: &[&str]) -> String {
    let mut x = v;
    let mut i = 0;
    while x >= 10000.0 && i + 1 < units.len() {
        x /= base;
        i += 1;
    }
    let digits = (x.trunc() as u64).to_string().len();
    let dec = 4usize.saturating_sub(digits + 1);
    if i == 0 || dec == 0 {
        format!("{}{}", x.round() as u64, units[i])
    } else {
        format!("{x:.dec$}{}", units[i])
    }
}

const IEC: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
const SI: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];

/// A size as fio prints it (`4096KiB`, `1024MiB`).
pub fn size_text(b: u64) -> String {
    num(b as f64, 1024.0, &IEC)
}

fn bw_pair(bps: f64) -> (String, String) {
    (
        format!("{}/s", num(bps, 1024.0, &IEC)),
        format!("{}/s", num(bps, 1000.0, &SI)),
    )
}

/// fio's latency-line unit: nsec, or usec (then msec) while the minimum,
/// the mean and the stdev are all at least 10000 of the smaller unit.
fn lat_unit(min: f64, mean: f64, dev: f64) -> (&'static str, f64) {
    let over = |d: f64| min / d >= 10_000.0 && mean / d >= 10_000.0 && dev / d >= 10_000.0;
    if over(1e3) {
        ("msec", 1e6)
    } else if over(1.0) {
        ("usec", 1e3)
    } else {
        ("nsec", 1.0)
    }
}

/// A whole number in at most six digits, as fio prints a latency's min
/// and max (`10846k`).
fn six_digits(v: f64) -> String {
    let mut x = v;
    let mut i = 0;
    let units = ["", "k", "M", "G", "T"];
    while x.round() >= 1e6 && i + 1 < units.len() {
        x /= 1000.0;
        i += 1;
    }
    format!("{}{}", x.round() as u64, units[i])
}

/// The percentiles an entry prints: (percentile, ns).
fn percentiles_of(e: &Entry, l: &Lat) -> Vec<(f64, u64)> {
    let want: &[f64] = e.percentiles.as_deref().unwrap_or(&FIO_PERCENTILES);
    want.iter().map(|&q| (q, l.at(q))).collect()
}

/// fio's latency buckets: counts of requests per range, by the upper
/// bound of the range (`750` counts 500..749).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatBuckets {
    /// ns: below 2, 4, 10, 20, 50, 100, 250, 500, 750, 1000.
    pub ns: [u64; 10],
    /// µs, the same bounds.
    pub us: [u64; 10],
    /// ms: the same bounds, then below 2000 and at least 2000.
    pub ms: [u64; 12],
    /// Requests counted.
    pub total: u64,
}

const LAT_BOUNDS: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
const MS_NAMES: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];

impl LatBuckets {
    /// Adds every request of a histogram (each bucket by its midpoint,
    /// clamped to the exact min and max).
    pub fn add(&mut self, h: &LatencyHistogram) {
        let slot = |v: u64| LAT_BOUNDS.iter().position(|&b| v < b).unwrap_or(9);
        for (lo, hi, n) in h.buckets() {
            let v = (lo + (hi - lo) / 2).clamp(h.min(), h.max());
            if v < 1000 {
                self.ns[slot(v)] += n;
            } else if v < 1_000_000 {
                self.us[slot(v / 1000)] += n;
            } else {
                let ms = v / 1_000_000;
                let i = if ms < 1000 {
                    slot(ms)
                } else if ms < 2000 {
                    10
                } else {
                    11
                };
                self.ms[i] += n;
            }
            self.total += n;
        }
    }
    /// Percent of the requests, as fio gives it (a non-empty bucket shows
    /// at least 0.01).
    fn pct(&self, n: u64) -> f64 {
        if self.total == 0 || n == 0 {
            return 0.0;
        }
        (n as f64 / self.total as f64 * 100.0).max(0.01)
    }
    fn rows(&self) -> [(&'static str, Vec<(String, f64)>); 3] {
        let named = |c: &[u64], names: &[&str]| -> Vec<(String, f64)> {
            c.iter()
                .zip(names)
                .map(|(&n, name)| (name.to_string(), self.pct(n)))
                .collect()
        };
        let names: Vec<String> = LAT_BOUNDS.iter().map(u64::to_string).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        [
            ("nsec", named(&self.ns, &names)),
            ("usec", named(&self.us, &names)),
            ("msec", named(&self.ms, &MS_NAMES)),
        ]
    }
}

/// fio's `lat (nsec)   : 750=16.55%, 1000=29.15%` lines: the non-empty
/// buckets, five to a line.
fn normal_buckets(out: &mut String, b: &LatBuckets) {
    for (unit, row) in b.rows() {
        let shown: Vec<String> = row
            .iter()
            .filter(|(_, p)| *p > 0.0)
            .map(|(n, p)| format!("{n}={p:.2}%"))
            .collect();
        for line in shown.chunks(5) {
            out.push_str(&format!("  lat ({unit})   : {}\n", line.join(", ")));
        }
    }
}

/// One `slat`/`clat`/`lat` line, in its own unit as fio chooses it.
fn normal_lat_line(out: &mut String, indent: &str, name: &str, l: &Lat) {
    let (unit, div) = lat_unit(l.min() as f64, l.mean(), l.dev());
    out.push_str(&format!(
        "{indent}{name} ({unit}): min={}, max={}, avg={:5.2}, stdev={:5.2}\n",
        six_digits(l.min() as f64 / div),
        six_digits(l.max() as f64 / div),
        l.mean() / div,
        l.dev() / div
    ));
}

/// fio's `clat percentiles (usec):` table of one latency.
fn normal_pct_table(out: &mut String, name: &str, e: &Entry, l: &Lat) {
    let pct = percentiles_of(e, l);
    if pct.is_empty() {
        return;
    }
    let lo = pct.iter().map(|p| p.1).min().unwrap_or(0);
    let hi = pct.iter().map(|p| p.1).max().unwrap_or(0);
    let (punit, pdiv) = if lo > 2_000_000 && hi > 99_999_999 {
        ("msec", 1_000_000)
    } else if lo > 2000 && hi > 99_999 {
        ("usec", 1000)
    } else {
        ("nsec", 1)
    };
    let vals: Vec<u64> = pct.iter().map(|p| p.1.div_ceil(pdiv)).collect();
    let width = vals
        .iter()
        .map(|v| v.to_string().len())
        .max()
        .unwrap_or(1)
        .max(5);
    // fio prints as many decimals as the list needs.
    let prec = pct
        .iter()
        .map(|(q, _)| {
            (0..6)
                .find(|&d| {
                    let x = q * 10f64.powi(d);
                    (x - x.round()).abs() < 1e-6
                })
                .unwrap_or(6) as usize
        })
        .max()
        .unwrap_or(0);
    let per_line = (73 / (prec + 10 + width)).max(1);
    let qw = prec + 3;
    let items: Vec<String> = pct
        .iter()
        .zip(&vals)
        .map(|((q, _), v)| format!("{q:qw$.prec$}th=[{v:width$}]"))
        .collect();
    let rows: Vec<&[String]> = items.chunks(per_line).collect();
    out.push_str(&format!("    {name} percentiles ({punit}):\n"));
    for (i, r) in rows.iter().enumerate() {
        out.push_str(&format!(
            "     | {}{}\n",
            r.join(", "),
            if i + 1 < rows.len() { "," } else { "" }
        ));
    }
}

fn normal_dir(out: &mut String, label: &str, d: &DirStats, e: &Entry, agg_kib: f64) {
    let (bw_i, bw_s) = bw_pair(d.bw());
    out.push_str(&format!(
        "  {label}: IOPS={}, BW={bw_i} ({bw_s})({}/{}msec){}\n",
        num(d.iops(), 1000.0, &["", "k", "M", "G", "T"]),
        size_text(d.bytes),
        d.ms(),
        if label == "write" {
            "; 0 zone resets"
        } else {
            ""
        }
    ));
    if let Some(sl) = d.slat.as_ref().filter(|l| l.n() > 0) {
        normal_lat_line(out, "    ", "slat", sl);
    }
    if let (Some(cl), Some(l)) = (d.clat(), &d.lat) {
        normal_lat_line(out, "    ", "clat", cl);
        normal_lat_line(out, "     ", "lat", l);
        // clat's table (fio's default), and lat's with lat_percentiles.
        normal_pct_table(out, "clat", e, cl);
        if e.lat_percentiles {
            normal_pct_table(out, "lat", e, l);
        }
    }
    normal_samples(out, d, agg_kib);
}

/// fio's `bw (KiB/s):` and `iops:` lines of one direction.
fn normal_samples(out: &mut String, d: &DirStats, agg_kib: f64) {
    if let Some(b) = &d.bw_stat {
        let (unit, k) = if b.mean > 1024.0 * 1024.0 {
            ("MiB", 1024.0)
        } else {
            ("KiB", 1.0)
        };
        let per = if agg_kib > 0.0 {
            b.mean * 100.0 / agg_kib
        } else {
            0.0
        };
        out.push_str(&format!(
            "   bw ({unit:>5}/s): min={:5}, max={:5}, per={per:3.2}%, avg={:5.2}, stdev={:5.2}, samples={}\n",
            (b.min / k) as u64,
            (b.max / k) as u64,
            b.mean / k,
            b.dev() / k,
            b.n
        ));
    }
    if let Some(i) = &d.iops_stat {
        out.push_str(&format!(
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}\n",
            i.min as u64,
            i.max as u64,
            i.mean,
            i.dev(),
            i.n
        ));
    }
}

/// fio's normal output.
pub fn normal(r: &Report) -> String {
    let mut out = String::new();
    normal_headers(&mut out, r);
    for e in &r.entries {
        normal_entry(&mut out, r, e);
    }
    normal_groups(&mut out, r);
    normal_disks(&mut out, r);
    out
}

/// The job lines, version, thread count and layout lines.
fn normal_headers(out: &mut String, r: &Report) {
    let mut last = None;
    for h in &r.headers {
        if last == Some(h.name.clone()) {
            continue;
        }
        last = Some(h.name.clone());
        let [r, w, t] =
            h.bs.map(|(lo, hi)| format!("{}-{}", size_text(lo), size_text(hi)));
        out.push_str(&format!(
            "{}: (g={}): rw={}, bs=(R) {r}, (W) {w}, (T) {t}, ioengine={}, iodepth={}\n",
            h.name, h.group, h.rw, h.ioengine, h.iodepth
        ));
        if h.clones > 1 {
            out.push_str("...\n");
        }
    }
    let threads: u64 = r.headers.iter().map(|h| h.clones).sum();
    out.push_str(&format!("{}\n", r.version));
    out.push_str(&format!(
        "Starting {threads} thread{}\n",
        if threads == 1 { "" } else { "s" }
    ));
    for l in &r.layout_lines {
        out.push_str(l);
        out.push('\n');
    }
    out.push('\n');
}

/// One entry's block: its directions, buckets, cpu, issued and latency
/// lines.
fn normal_entry(out: &mut String, r: &Report, e: &Entry) {
    out.push_str(&format!(
        "{}: (groupid={}, jobs={}): err={:2}: pid={}: {}\n",
        e.name, e.group, e.jobs, e.error, r.pid, r.started_text
    ));
    if e.read.ios > 0 || e.read.bytes > 0 {
        let agg = group_agg(r, e.group, true) / 1024.0;
        normal_dir(out, "read", &e.read, e, agg);
    }
    if e.write.ios > 0 || e.write.bytes > 0 {
        let agg = group_agg(r, e.group, false) / 1024.0;
        normal_dir(out, "write", &e.write, e, agg);
    }
    if let Some(b) = &e.buckets {
        normal_buckets(out, b);
    }
    if let Some((u, s)) = e.cpu_s {
        let (u, s) = cpu_pct(e, u, s);
        out.push_str(&format!("  cpu          : usr={u:.2}%, sys={s:.2}%"));
        if let Some((ctx, majf, minf)) = e.faults {
            out.push_str(&format!(", ctx={ctx}, majf={majf}, minf={minf}"));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "     issued rwts: total={},{},0,0\n",
        e.read.ios, e.write.ios
    ));
    out.push_str(&format!(
        "     latency   : target=0, window=0, percentile=100.00%, depth={}\n",
        e.iodepth
    ));
    if let Some(ss) = &e.steadystate {
        normal_ss(out, ss);
    }
    out.push('\n');
}

/// fio's `steadystate  :` line (fio 3.33's layout): attained or not, the
/// judged window's mean bandwidth and IOPS, and the criterion to three
/// decimals. fio turns the mean into whole KiB/s first and reads that
/// same count as kB/s for the decimal figure in parentheses, so that
/// figure is 1.024 times the true MB/s; it is printed as fio prints it.
fn normal_ss(out: &mut String, ss: &SteadyState) {
    let kib = (ss.bw_mean / 1024) as f64;
    out.push_str(&format!(
        "  steadystate  : attained={}, bw={}/s ({}/s), iops={}, {}={:.3}{}\n",
        if ss.attained { "yes" } else { "no" },
        num(kib, 1024.0, &IEC[1..]),
        num(kib, 1000.0, &SI[1..]),
        num(ss.iops_mean as f64, 1000.0, &["", "k", "M", "G", "T"]),
        ss.label,
        ss.criterion_value,
        if ss.pct { "%" } else { "" }
    ));
}

/// The `Run status group N (all jobs):` summaries.
fn normal_groups(out: &mut String, r: &Report) {
    let mut groups: Vec<usize> = r.entries.iter().map(|e| e.group).collect();
    groups.dedup();
    for g in groups {
        out.push_str(&format!("Run status group {g} (all jobs):\n"));
        let members: Vec<&Entry> = r.entries.iter().filter(|e| e.group == g).collect();
        for (label, pick) in [
            (
                "   READ",
                (|e: &Entry| e.read.clone()) as fn(&Entry) -> DirStats,
            ),
            ("  WRITE", |e: &Entry| e.write.clone()),
        ] {
            let ds: Vec<DirStats> = members
                .iter()
                .map(|e| pick(e))
                .filter(|d| d.bytes > 0)
                .collect();
            if ds.is_empty() {
                continue;
            }
            let bytes: u64 = ds.iter().map(|d| d.bytes).sum();
            let max_s = ds.iter().map(|d| d.runtime_s).fold(0.0, f64::max);
            let agg = if max_s > 0.0 {
                bytes as f64 / max_s
            } else {
                0.0
            };
            let lo = ds.iter().map(DirStats::bw).fold(f64::MAX, f64::min);
            let hi = ds.iter().map(DirStats::bw).fold(0.0, f64::max);
            let ms_lo = ds.iter().map(DirStats::ms).min().unwrap_or(0);
            let ms_hi = ds.iter().map(DirStats::ms).max().unwrap_or(0);
            let (a_i, a_s) = bw_pair(agg);
            let (lo_i, lo_s) = bw_pair(lo);
            let (hi_i, hi_s) = bw_pair(hi);
            out.push_str(&format!(
                "{label}: bw={a_i} ({a_s}), {lo_i}-{hi_i} ({lo_s}-{hi_s}), io={} ({}), run={ms_lo}-{ms_hi}msec\n",
                size_text(bytes),
                num(bytes as f64, 1000.0, &SI)
            ));
        }
        out.push('\n');
    }
}

/// fio's `Disk stats (read/write):` lines.
fn normal_disks(out: &mut String, r: &Report) {
    if !r.disks.is_empty() {
        out.push_str("Disk stats (read/write):\n");
        for d in &r.disks {
            let x = &d.d;
            out.push_str(&format!(
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%\n",
                d.name,
                x[0],
                x[4],
                x[1],
                x[5],
                x[3],
                x[7],
                x[10],
                d.util()
            ));
        }
    }
}

/// A group's aggregate bandwidth of one direction (bytes/s): all its
/// bytes over its longest entry's run time, as fio's `Run status` line.
fn group_agg(r: &Report, g: usize, read: bool) -> f64 {
    let ds: Vec<&DirStats> = r
        .entries
        .iter()
        .filter(|e| e.group == g)
        .map(|e| if read { &e.read } else { &e.write })
        .filter(|d| d.bytes > 0)
        .collect();
    let bytes: u64 = ds.iter().map(|d| d.bytes).sum();
    let max_s = ds.iter().map(|d| d.runtime_s).fold(0.0, f64::max);
    if max_s > 0.0 {
        bytes as f64 / max_s
    } else {
        0.0
    }
}

/// CPU percent as fio gives it: CPU seconds over the run time of every
/// clone (so one busy thread is 100%).
fn cpu_pct(e: &Entry, u: f64, s: f64) -> (f64, f64) {
    let denom = e.runtime_s * e.jobs.max(1) as f64;
    if denom > 0.0 {
        (u / denom * 100.0, s / denom * 100.0)
    } else {
        (0.0, 0.0)
    }
}

fn zero_lat() -> Value {
    json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0})
}

/// A direction that did nothing, exactly as fio prints one.
fn idle_dir() -> Value {
    json!({
        "io_bytes": 0, "io_kbytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0, "runtime": 0,
        "total_ios": 0, "short_ios": 0, "drop_ios": 0,
        "slat_ns": zero_lat(), "clat_ns": zero_lat(), "lat_ns": zero_lat(),
        "bw_min": 0, "bw_max": 0, "bw_agg": 0.0, "bw_mean": 0.0, "bw_dev": 0.0, "bw_samples": 0,
        "iops_min": 0, "iops_max": 0, "iops_mean": 0.0, "iops_stddev": 0.0, "iops_samples": 0
    })
}

/// Options (`name`, `value`) as fio's JSON object of them.
fn options_json(opts: &[(String, String)]) -> Value {
    Value::Object(
        opts.iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect::<Map<String, Value>>(),
    )
}

/// fio's object of one latency: min, max, mean, stddev, N and, with
/// `with_pct`, the percentiles, and with `plus` too (json+) the
/// histogram's bins ([`fio_bins`]).
fn lat_body(e: &Entry, l: &Lat, with_pct: bool, plus: bool) -> Value {
    let mut o = Map::new();
    o.insert("min".into(), json!(l.min()));
    o.insert("max".into(), json!(l.max()));
    o.insert("mean".into(), json!(l.mean()));
    o.insert("stddev".into(), json!(l.dev()));
    o.insert("N".into(), json!(l.n()));
    if with_pct {
        let mut p = Map::new();
        for (q, v) in percentiles_of(e, l) {
            p.insert(format!("{q:.6}"), json!(v));
        }
        o.insert("percentile".into(), Value::Object(p));
    }
    if with_pct && plus && l.n() > 0 {
        o.insert("bins".into(), fio_bins(&l.hist));
    }
    Value::Object(o)
}

/// The bins of fio's json+: each non-empty bucket of the histogram as
/// fio names it (`plat_idx_to_val`), with its count. ioscale's buckets
/// are fio's (exact below 128 ns, then 64 per power of two), so each maps
/// to one of fio's, named by the middle of its range; fio's last bucket
/// (from 2^33 + 63 × 2^27 ns, about 17 s) takes everything beyond.
fn fio_bins(h: &stats::LatencyHistogram) -> Value {
    // fio's last bucket: group 28 (27 error bits), sub-bucket 63.
    const LAST_LOW: u64 = (1 << 33) + 63 * (1 << 27);
    let name = |low: u64, high: u64| {
        if low < 128 {
            low
        } else if low >= LAST_LOW {
            LAST_LOW + (1 << 26)
        } else {
            low + (high - low).div_ceil(2)
        }
    };
    let mut bins = Map::new();
    for (low, high, n) in h.buckets() {
        let k = name(low, high).to_string();
        let had = bins.get(&k).and_then(Value::as_u64).unwrap_or(0);
        bins.insert(k, json!(had + n));
    }
    Value::Object(bins)
}

/// fio's `sync` object: the syncs between writes and their latency.
fn json_sync(e: &Entry, plus: bool) -> Value {
    match e.syncs.as_ref().filter(|l| l.n() > 0) {
        Some(l) => json!({ "total_ios": l.n(), "lat_ns": lat_body(e, l, true, plus) }),
        None => json!({ "total_ios": 0, "lat_ns": zero_lat() }),
    }
}

/// fio's `iodepth_level`, `iodepth_submit` and `iodepth_complete`: the
/// tallies in percent, the level of the reads and writes (fio divides by
/// those alone, so syncs at depth 1 can take it past 100), the others of
/// all submit calls and waits.
fn json_depths(j: &mut Map<String, Value>, e: &Entry) {
    let pct = |n: u64, of: u64| {
        if of == 0 {
            0.0
        } else {
            n as f64 * 100.0 / of as f64
        }
    };
    let d = &e.depths;
    let rw = e.read.ios + e.write.ios;
    let level = ["1", "2", "4", "8", "16", "32", ">=64"];
    let batch = ["0", "4", "8", "16", "32", "64", ">=64"];
    let obj = |keys: [&str; 7], v: &[u64; 7], of: u64| {
        Value::Object(
            keys.iter()
                .zip(v)
                .map(|(k, n)| (k.to_string(), json!(pct(*n, of))))
                .collect(),
        )
    };
    j.insert("iodepth_level".into(), obj(level, &d.level, rw));
    let all = |v: &[u64; 7]| v.iter().sum::<u64>();
    j.insert(
        "iodepth_submit".into(),
        obj(batch, &d.submit, all(&d.submit)),
    );
    j.insert(
        "iodepth_complete".into(),
        obj(batch, &d.complete, all(&d.complete)),
    );
}

fn json_dir(d: &DirStats, e: &Entry, agg_kib: f64, plus: bool) -> Value {
    if d.ios == 0 && d.bytes == 0 {
        return idle_dir();
    }
    let bw_bytes = d.bw().round() as u64;
    let mut m = Map::new();
    m.insert("io_bytes".into(), json!(d.bytes));
    m.insert("io_kbytes".into(), json!(d.bytes / 1024));
    m.insert("bw_bytes".into(), json!(bw_bytes));
    m.insert("bw".into(), json!(bw_bytes / 1024));
    m.insert("iops".into(), json!(d.iops()));
    m.insert("runtime".into(), json!(d.ms()));
    m.insert("total_ios".into(), json!(d.ios));
    m.insert("short_ios".into(), json!(d.short));
    // ioscale discards no request it issued (fio's drop_ios counts those
    // it did): 0 by construction.
    m.insert("drop_ios".into(), json!(0));
    let body = |l: &Lat, with_pct: bool| lat_body(e, l, with_pct, plus);
    // fio prints zeros when it does not time submissions (psync).
    match d.slat.as_ref().filter(|l| l.n() > 0) {
        Some(sl) => m.insert("slat_ns".into(), body(sl, false)),
        None => m.insert("slat_ns".into(), zero_lat()),
    };
    if let (Some(cl), Some(l)) = (d.clat(), &d.lat) {
        m.insert("clat_ns".into(), body(cl, true));
        m.insert("lat_ns".into(), body(l, e.lat_percentiles));
    }
    if e.sampled {
        // No sample (a run shorter than one interval) gives fio's zeros.
        let b = d.bw_stat.unwrap_or_default();
        let i = d.iops_stat.unwrap_or_default();
        let per = if agg_kib > 0.0 && b.n > 0 {
            b.mean * 100.0 / agg_kib
        } else {
            0.0
        };
        m.insert("bw_min".into(), json!(b.min as u64));
        m.insert("bw_max".into(), json!(b.max as u64));
        m.insert("bw_agg".into(), json!(per));
        m.insert("bw_mean".into(), json!(b.mean));
        m.insert("bw_dev".into(), json!(b.dev()));
        m.insert("bw_samples".into(), json!(b.n));
        m.insert("iops_min".into(), json!(i.min as u64));
        m.insert("iops_max".into(), json!(i.max as u64));
        m.insert("iops_mean".into(), json!(i.mean));
        m.insert("iops_stddev".into(), json!(i.dev()));
        m.insert("iops_samples".into(), json!(i.n));
    }
    Value::Object(m)
}

/// fio's `latency_ns`/`latency_us`/`latency_ms` objects (percent of the
/// fio's `steadystate` object (keys and types as fio 3.33 writes them).
fn json_ss(ss: &SteadyState) -> Value {
    json!({
        "ss": ss.rule,
        "duration": ss.duration,
        "attained": u8::from(ss.attained),
        "criterion": ss.criterion,
        "max_deviation": ss.max_deviation,
        "slope": ss.slope,
        "data": {
            "bw_mean": ss.bw_mean,
            "iops_mean": ss.iops_mean,
            "iops": ss.iops,
            "bw": ss.bw,
        },
    })
}

/// requests per bucket).
fn json_buckets(j: &mut Map<String, Value>, b: &LatBuckets) {
    for ((unit, row), key) in b
        .rows()
        .into_iter()
        .zip(["latency_ns", "latency_us", "latency_ms"])
    {
        let _ = unit;
        let o: Map<String, Value> = row.into_iter().map(|(n, p)| (n, json!(p))).collect();
        j.insert(key.into(), Value::Object(o));
    }
}

/// One direction's fields of the terse line.
fn terse_dir(f: &mut Vec<String>, r: &Report, e: &Entry, d: &DirStats, read: bool) {
    let active = d.ios > 0 || d.bytes > 0;
    f.push((d.bytes / 1024).to_string());
    f.push((d.bw() / 1024.0).round().to_string());
    f.push((d.iops().round() as u64).to_string());
    f.push(d.ms().to_string());
    let lat4 = |l: Option<&Lat>| -> Vec<String> {
        match l {
            Some(l) => vec![
                (l.min() / 1000).to_string(),
                (l.max() / 1000).to_string(),
                format!("{:.6}", l.mean() / 1000.0),
                format!("{:.6}", l.dev() / 1000.0),
            ],
            None if active => vec![String::new(); 4],
            None => vec!["0".into(), "0".into(), "0.000000".into(), "0.000000".into()],
        }
    };
    // slat: fio's zeros for a sync engine; empty if not measured.
    match d.slat.as_ref().filter(|l| l.n() > 0) {
        Some(sl) => f.extend(lat4(Some(sl))),
        None if e.sync_engine || !active => {
            f.extend(["0", "0", "0.000000", "0.000000"].map(String::from))
        }
        None => f.extend(vec![String::new(); 4]),
    }
    f.extend(lat4(d.clat()));
    let pct = d.clat().map(|l| percentiles_of(e, l)).unwrap_or_else(|| {
        let want: &[f64] = e.percentiles.as_deref().unwrap_or(&FIO_PERCENTILES);
        want.iter().map(|&q| (q, 0)).collect()
    });
    for i in 0..20 {
        f.push(match pct.get(i) {
            Some((q, v)) => format!("{q:.6}%={}", v / 1000),
            None => "0%=0".into(),
        });
    }
    f.extend(lat4(d.lat.as_ref()));
    let agg = group_agg(r, e.group, read) / 1024.0;
    match d.bw_stat.filter(|_| e.sampled) {
        Some(b) => {
            let per = if agg > 0.0 { b.mean * 100.0 / agg } else { 0.0 };
            f.push((b.min as u64).to_string());
            f.push((b.max as u64).to_string());
            f.push(format!("{per:.6}%"));
            f.push(format!("{:.6}", b.mean));
            f.push(format!("{:.6}", b.dev()));
        }
        None if active && !e.sampled => f.extend(vec![String::new(); 5]),
        None => f.extend([
            "0".into(),
            "0".into(),
            "0.000000%".into(),
            "0.000000".into(),
            "0.000000".into(),
        ]),
    }
}

/// fio's terse output, version 3: one `;`-separated line per entry.
/// A field ioscale does not measure (slat, IO depths under io_uring) is
/// left empty rather than filled in; its place is kept so fields are found
/// by position as in fio's.
pub fn terse(r: &Report) -> String {
    let mut out = String::new();
    for e in &r.entries {
        let mut f: Vec<String> = vec![
            "3".into(),
            r.version.clone(),
            e.name.clone(),
            e.group.to_string(),
            e.error.to_string(),
        ];
        for (d, read) in [(&e.read, true), (&e.write, false)] {
            terse_dir(&mut f, r, e, d, read);
        }
        match e.cpu_s {
            Some((u, s)) => {
                let (u, s) = cpu_pct(e, u, s);
                f.push(format!("{u:.6}%"));
                f.push(format!("{s:.6}%"));
            }
            None => f.extend(vec![String::new(); 2]),
        }
        match e.faults {
            Some((c, ma, mi)) => f.extend([c.to_string(), ma.to_string(), mi.to_string()]),
            None => f.extend(vec![String::new(); 3]),
        }
        // IO depths: every request of a sync engine is issued alone.
        for i in 0..7 {
            f.push(if !e.sync_engine {
                String::new()
            } else if i == 0 {
                "100.0%".into()
            } else {
                "0.0%".into()
            });
        }
        match &e.buckets {
            Some(b) => {
                let ns: u64 = b.ns.iter().sum();
                for (i, n) in b.us.iter().enumerate() {
                    let n = if i == 0 { n + ns } else { *n };
                    f.push(format!("{:.2}%", b.pct(n)));
                }
                for n in &b.ms {
                    f.push(format!("{:.2}%", b.pct(*n)));
                }
            }
            None => f.extend(vec![String::new(); 22]),
        }
        for d in &r.disks {
            let x = &d.d;
            f.extend([
                d.name.clone(),
                x[0].to_string(),
                x[4].to_string(),
                x[1].to_string(),
                x[5].to_string(),
                x[3].to_string(),
                x[7].to_string(),
                x[10].to_string(),
                format!("{:.2}%", d.util()),
            ]);
        }
        out.push_str(&f.join(";"));
        out.push('\n');
    }
    out
}

/// fio's JSON output; with `plus`, fio's json+ (the latency bins too).
pub fn json(r: &Report, plus: bool) -> Value {
    // fio stamps its JSON when it writes it, after the jobs.
    let t = r
        .ended
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut top = Map::new();
    top.insert("fio version".into(), json!(r.version));
    top.insert("timestamp".into(), json!(t.as_secs()));
    top.insert("timestamp_ms".into(), json!(t.as_millis() as u64));
    top.insert("time".into(), json!(r.ended_text));
    if !r.global.is_empty() {
        top.insert("global options".into(), options_json(&r.global));
    }
    let jobs: Vec<Value> = r
        .entries
        .iter()
        .map(|e| {
            let mut j = Map::new();
            j.insert("jobname".into(), json!(e.name));
            j.insert("groupid".into(), json!(e.group));
            j.insert("error".into(), json!(e.error));
            j.insert("eta".into(), json!(0));
            j.insert("elapsed".into(), json!(e.runtime_s.ceil() as u64));
            j.insert("job options".into(), options_json(&e.options));
            j.insert(
                "read".into(),
                json_dir(&e.read, e, group_agg(r, e.group, true) / 1024.0, plus),
            );
            j.insert(
                "write".into(),
                json_dir(&e.write, e, group_agg(r, e.group, false) / 1024.0, plus),
            );
            j.insert("trim".into(), idle_dir());
            j.insert("sync".into(), json_sync(e, plus));
            j.insert(
                "job_runtime".into(),
                json!((e.clones_runtime_s * 1000.0).round() as u64),
            );
            if let Some((u, s)) = e.cpu_s {
                let (u, s) = cpu_pct(e, u, s);
                j.insert("usr_cpu".into(), json!(u));
                j.insert("sys_cpu".into(), json!(s));
            }
            if let Some((ctx, majf, minf)) = e.faults {
                j.insert("ctx".into(), json!(ctx));
                j.insert("majf".into(), json!(majf));
                j.insert("minf".into(), json!(minf));
            }
            json_depths(&mut j, e);
            if let Some(b) = &e.buckets {
                json_buckets(&mut j, b);
            }
            j.insert("latency_depth".into(), json!(e.iodepth));
            j.insert("latency_target".into(), json!(0));
            j.insert("latency_percentile".into(), json!(100.0));
            j.insert("latency_window".into(), json!(0));
            if let Some(ss) = &e.steadystate {
                j.insert("steadystate".into(), json_ss(ss));
            }
            Value::Object(j)
        })
        .collect();
    top.insert("jobs".into(), Value::Array(jobs));
    if !r.disks.is_empty() {
        let disks: Vec<Value> = r
            .disks
            .iter()
            .map(|d| {
                let x = &d.d;
                json!({
                    "name": d.name,
                    "read_ios": x[0], "write_ios": x[4],
                    "read_merges": x[1], "write_merges": x[5],
                    "read_ticks": x[3], "write_ticks": x[7],
                    "in_queue": x[10],
                    "util": d.util()
                })
            })
            .collect();
        top.insert("disk_util".into(), Value::Array(disks));
    }
    Value::Object(top)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steadystate_figures_are_fio_s() {
        let rec = |criterion: &str, pct: bool, ops: &[u64]| report::SteadyRecord {
            criterion: criterion.into(),
            limit: 2.0,
            limit_pct: pct,
            window_s: ops.len() as f64,
            reached: true,
            sample_ops: ops.to_vec(),
            sample_bytes: ops.iter().map(|o| o * 4096).collect(),
            ..Default::default()
        };
        // A slope of 10 a second against a mean of 115: 8.695652%.
        let s = SteadyState::of(&rec("iops_slope", true, &[100, 110, 120, 130]));
        assert_eq!(s.rule, "iops_slope:2.000000%");
        assert!((s.slope - 10.0).abs() < 1e-9);
        assert_eq!((s.criterion.as_str(), s.max_deviation), ("8.695652%", 0.0));
        assert_eq!((s.iops_mean, s.bw_mean, s.duration), (115, 115 * 4096, 4));
        // Deviation in bytes/s; an absolute bandwidth limit in bytes/s.
        let s = SteadyState::of(&rec("bw", false, &[100, 90, 110]));
        assert_eq!(s.rule, "bw:2097152.000000");
        assert_eq!(s.max_deviation, 10.0 * 4096.0);
        assert_eq!((s.criterion.as_str(), s.slope), ("40960.000000", 0.0));
        assert_eq!(s.bw, vec![409_600, 368_640, 450_560]);
        // No samples: zeros, not a division by zero.
        let s = SteadyState::of(&rec("iops", true, &[]));
        assert_eq!((s.criterion.as_str(), s.iops_mean), ("0.000000%", 0));
    }

    /// The normal output's line, fio 3.33's for the same window: its
    /// means, fio's bandwidth pair (KiB read as kB in parentheses), and
    /// the criterion named and to three decimals.
    #[test]
    fn steadystate_line_is_fio_s() {
        let ss = |criterion: &str, pct: bool, ops: &[u64]| {
            let mut out = String::new();
            normal_ss(
                &mut out,
                &SteadyState::of(&report::SteadyRecord {
                    criterion: criterion.into(),
                    limit: 5.0,
                    limit_pct: pct,
                    window_s: ops.len() as f64,
                    reached: false,
                    sample_ops: ops.to_vec(),
                    sample_bytes: ops.iter().map(|o| o * 4096).collect(),
                    ..Default::default()
                }),
            );
            out
        };
        // 222k IOPS of 4 KiB: 867 MiB/s, and fio's 888 "MB/s"; the
        // largest deviation 30k of the mean 222k.
        assert_eq!(
            ss("iops", true, &[192_000, 252_000, 222_000]),
            "  steadystate  : attained=no, bw=867MiB/s (888MB/s), iops=222k, \
             iops mean dev=13.514%\n"
        );
        // A bandwidth slope in bytes/s a second, without a percentage.
        assert_eq!(
            ss("bw_slope", false, &[100, 110]),
            "  steadystate  : attained=no, bw=420KiB/s (420kB/s), iops=105, \
             bw slope=40960.000\n"
        );
    }

    #[test]
    fn numbers_in_fio_style() {
        assert_eq!(num(491_000.0, 1000.0, &["", "k", "M"]), "491k");
        assert_eq!(size_text(4096), "4096B");
        assert_eq!(size_text(1 << 20), "1024KiB");
        assert_eq!(size_text(4_022_272), "3928KiB");
        assert_eq!(num(50_436_096.0, 1024.0, &IEC), "48.1MiB");
        assert_eq!(num(12_345.0, 1000.0, &["", "k"]), "12.3k");
        assert_eq!(num(7.0, 1000.0, &["", "k"]), "7");
        // fio keeps the decimal of a whole number after a division.
        assert_eq!(size_text(32 << 20), "32.0MiB");
    }
}
