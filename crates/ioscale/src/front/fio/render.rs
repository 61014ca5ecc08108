//! fio's output layouts — normal text and JSON — from measured figures.
//!
//! What ioscale measures: bytes and requests per direction, run time, one
//! latency per request (issue to completion: min, mean, max and the 50th,
//! 99th and 99.9th percentiles), CPU time of the run, and the block
//! device's counters. What fio prints beyond that (slat, stdev, per-sample
//! bw/iops, latency buckets, IO depth distribution, ctx/majf/minf) is left
//! out; where fio itself prints zeros for a direction that did nothing,
//! so does this.

use serde_json::{json, Map, Value};

use super::parse::Job;

/// The percentiles ioscale's latency summary holds.
pub const MEASURED_PERCENTILES: [f64; 3] = [50.0, 99.0, 99.9];

/// One latency summary in µs.
#[derive(Debug, Clone)]
pub struct Lat {
    /// Minimum.
    pub min_us: f64,
    /// Maximum.
    pub max_us: f64,
    /// Mean.
    pub mean_us: f64,
    /// Requests measured.
    pub n: u64,
    /// (percentile, µs); `None` when several phases were merged.
    pub pct: Option<Vec<(f64, f64)>>,
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
    /// Latency, where measured for this entry alone.
    pub lat: Option<Lat>,
}

impl DirStats {
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
}

/// A job's line at the top of the normal output.
#[derive(Debug, Clone)]
pub struct Header {
    name: String,
    group: usize,
    rw: String,
    bs: u64,
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
            bs: j.bs,
            ioengine: j.ioengine.clone(),
            iodepth: j.iodepth,
            clones: j.numjobs,
        }
    }
}

/// Block-device counters over the whole command, as fio's `Disk stats`.
#[derive(Debug, Clone)]
pub struct DiskUtil {
    name: String,
    d: [u64; 11],
    ms: u64,
}

/// /proc/diskstats fields 4..14 of one device.
pub fn read_diskstats(dev: &str) -> Option<[u64; 11]> {
    let text = std::fs::read_to_string("/proc/diskstats").ok()?;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 14 && f[2] == dev {
            let mut d = [0u64; 11];
            for (i, x) in f[3..14].iter().enumerate() {
                d[i] = x.parse().ok()?;
            }
            return Some(d);
        }
    }
    None
}

/// The device name of a mount source (`/dev/sda1` → `sda1`), if it is one.
pub fn disk_name(source: &str) -> Option<String> {
    let p = std::fs::canonicalize(source).ok()?;
    let s = p.to_str()?.strip_prefix("/dev/")?;
    (!s.contains('/')).then(|| s.to_string())
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

/// Picks fio's unit for a latency line: nsec, then usec, then msec while
/// the minimum is at least 10000 of the unit.
fn lat_unit(min_ns: f64) -> (&'static str, f64) {
    if min_ns >= 10_000_000.0 {
        ("msec", 1e6)
    } else if min_ns >= 10_000.0 {
        ("usec", 1e3)
    } else {
        ("nsec", 1.0)
    }
}

fn percentiles_of(e: &Entry, l: &Lat) -> Vec<(f64, f64)> {
    let Some(p) = &l.pct else { return Vec::new() };
    match &e.percentiles {
        Some(want) => p
            .iter()
            .filter(|(q, _)| want.contains(q))
            .cloned()
            .collect(),
        None => p.clone(),
    }
}

fn normal_dir(out: &mut String, label: &str, d: &DirStats, e: &Entry) {
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
    let Some(l) = &d.lat else { return };
    let (unit, div) = lat_unit(l.min_us * 1e3);
    let line = |name: &str| {
        format!(
            "{name} ({unit}): min={}, max={}, avg={:.2}\n",
            (l.min_us * 1e3 / div).round() as u64,
            (l.max_us * 1e3 / div).round() as u64,
            l.mean_us * 1e3 / div
        )
    };
    out.push_str(&format!("    {}", line("clat")));
    out.push_str(&format!("     {}", line("lat")));
    let pct = percentiles_of(e, l);
    if pct.is_empty() {
        return;
    }
    let biggest = pct.iter().map(|(_, v)| *v * 1e3).fold(0.0, f64::max);
    let (punit, pdiv) = if biggest >= 1e8 {
        ("msec", 1e6)
    } else if biggest >= 1e5 {
        ("usec", 1e3)
    } else {
        ("nsec", 1.0)
    };
    out.push_str(&format!(
        "    {} percentiles ({punit}):\n",
        if e.lat_percentiles { "lat" } else { "clat" }
    ));
    let items: Vec<String> = pct
        .iter()
        .map(|(q, v)| format!("{q:5.2}th=[{:5}]", (v * 1e3 / pdiv).round() as u64))
        .collect();
    let rows: Vec<&[String]> = items.chunks(4).collect();
    for (i, r) in rows.iter().enumerate() {
        out.push_str(&format!(
            "     | {}{}\n",
            r.join(", "),
            if i + 1 < rows.len() { "," } else { "" }
        ));
    }
}

/// fio's normal output.
pub fn normal(r: &Report) -> String {
    let mut out = String::new();
    let mut last = None;
    for h in &r.headers {
        if last == Some(h.name.clone()) {
            continue;
        }
        last = Some(h.name.clone());
        let bs = format!("{}-{}", size_text(h.bs), size_text(h.bs));
        out.push_str(&format!(
            "{}: (g={}): rw={}, bs=(R) {bs}, (W) {bs}, (T) {bs}, ioengine={}, iodepth={}\n",
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
    let when = &r.started_text;
    for e in &r.entries {
        out.push_str(&format!(
            "{}: (groupid={}, jobs={}): err={:2}: pid={}: {when}\n",
            e.name, e.group, e.jobs, e.error, r.pid
        ));
        if e.read.ios > 0 || e.read.bytes > 0 {
            normal_dir(&mut out, "read", &e.read, e);
        }
        if e.write.ios > 0 || e.write.bytes > 0 {
            normal_dir(&mut out, "write", &e.write, e);
        }
        if let Some((u, s)) = e.cpu_s {
            let (u, s) = cpu_pct(e, u, s);
            out.push_str(&format!("  cpu          : usr={u:.2}%, sys={s:.2}%\n"));
        }
        out.push_str(&format!(
            "     issued rwts: total={},{},0,0\n",
            e.read.ios, e.write.ios
        ));
        out.push_str(&format!(
            "     latency   : target=0, window=0, percentile=100.00%, depth={}\n\n",
            e.iodepth
        ));
    }
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
    out
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

fn json_dir(d: &DirStats, e: &Entry) -> Value {
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
    // fio prints these zeros when it does not time submissions (psync).
    m.insert("slat_ns".into(), zero_lat());
    if let Some(l) = &d.lat {
        let ns = |us: f64| (us * 1e3).round() as u64;
        let body = |with_pct: bool| {
            let mut o = Map::new();
            o.insert("min".into(), json!(ns(l.min_us)));
            o.insert("max".into(), json!(ns(l.max_us)));
            o.insert("mean".into(), json!(l.mean_us * 1e3));
            o.insert("N".into(), json!(l.n));
            if with_pct {
                let pct = percentiles_of(e, l);
                if !pct.is_empty() {
                    let mut p = Map::new();
                    for (q, v) in pct {
                        p.insert(format!("{q:.6}"), json!(ns(v)));
                    }
                    o.insert("percentile".into(), Value::Object(p));
                }
            }
            Value::Object(o)
        };
        m.insert("clat_ns".into(), body(!e.lat_percentiles));
        m.insert("lat_ns".into(), body(e.lat_percentiles));
    }
    Value::Object(m)
}

/// fio's JSON output.
pub fn json(r: &Report) -> Value {
    let t = r
        .started
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut top = Map::new();
    top.insert("fio version".into(), json!(r.version));
    top.insert("timestamp".into(), json!(t.as_secs()));
    top.insert("timestamp_ms".into(), json!(t.as_millis() as u64));
    top.insert("time".into(), json!(r.started_text));
    if !r.global.is_empty() {
        let g: Map<String, Value> = r
            .global
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        top.insert("global options".into(), Value::Object(g));
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
            let opts: Map<String, Value> = e
                .options
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            j.insert("job options".into(), Value::Object(opts));
            j.insert("read".into(), json_dir(&e.read, e));
            j.insert("write".into(), json_dir(&e.write, e));
            j.insert("trim".into(), idle_dir());
            j.insert(
                "job_runtime".into(),
                json!((e.runtime_s * 1000.0).round() as u64),
            );
            if let Some((u, s)) = e.cpu_s {
                let (u, s) = cpu_pct(e, u, s);
                j.insert("usr_cpu".into(), json!(u));
                j.insert("sys_cpu".into(), json!(s));
            }
            j.insert("latency_depth".into(), json!(e.iodepth));
            j.insert("latency_target".into(), json!(0));
            j.insert("latency_percentile".into(), json!(100.0));
            j.insert("latency_window".into(), json!(0));
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
