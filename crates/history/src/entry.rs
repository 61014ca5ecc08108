//! What one row of the history holds, made from a finished run's record.
//!
//! Every measuring command ends with a record: a [`report::ResultSet`]
//! (`run`, `meta`, a sweep's point, the ior, mdtest, dd, smallfile and fio
//! front-ends) or io500's own JSON record. An [`Entry`] is that record
//! with what the history needs to find and judge it without reading it
//! again: when, the command line, the workload key, the host and target
//! prints, the outcome, and the headline figures with their 95 %
//! intervals, computed by the same statistics `ioscale report` and
//! `compare` use ([`analysis::model::point_stats`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use analysis::model::{default_trim, point_stats, run_threads_and_reps};
use report::{HostInfo, ResultSet};

use crate::fingerprint::{HostPrint, TargetPrint};
use crate::key::{self, Workload};

/// How a recorded run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Ran to its end without an I/O error or a failed data check.
    Ok,
    /// Ran, but saw I/O errors or a failed data check (exit 1).
    Errors,
    /// Cut short by a signal (exit 130 or 129).
    Interrupted,
}

impl Status {
    /// Its word in the database and in every output.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Errors => "errors",
            Status::Interrupted => "interrupted",
        }
    }

    /// The status a word names.
    pub fn parse(s: &str) -> Option<Status> {
        match s {
            "ok" => Some(Status::Ok),
            "errors" => Some(Status::Errors),
            "interrupted" => Some(Status::Interrupted),
            _ => None,
        }
    }
}

/// One figure of one operation of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Operation (`write`, `create`, io500's `ior-easy-write`, `score`).
    pub op: String,
    /// What is measured: `bw_mib_s`, `iops`, `lat_p50_us`, `lat_p99_us`,
    /// or io500's `score`, `bw_gib_s`, `md_kiops`, `total`.
    pub metric: String,
    /// Its unit (`MiB/s`, `ops/s`, `files/s`, `µs`, `GiB/s`, `kIOPS`).
    pub unit: String,
    /// The central value over the good repetitions (the trimmed mean when
    /// trimming is on, else the mean).
    pub value: f64,
    /// Lower end of the 95 % bootstrap interval; `None` with one
    /// repetition (no noise was measured).
    pub lo: Option<f64>,
    /// Upper end of the interval.
    pub hi: Option<f64>,
    /// Good repetitions it rests on.
    pub reps: u32,
    /// Whether more is better (rates) or worse (latencies).
    pub higher_is_better: bool,
    /// Whether it is the figure the operation is judged by: the bandwidth
    /// of an operation that moves data, the rate of one that does not,
    /// io500's scores.
    pub headline: bool,
}

/// Facts about this machine and the target that the record does not
/// hold, read by the caller when it recorded the run (empty for an
/// imported record: it may come from another machine).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extra {
    /// CPU model.
    pub cpu_model: String,
    /// The target's block device model.
    pub device_model: String,
    /// The target file system's size in bytes.
    pub size_bytes: Option<u64>,
}

/// One row of the history, before it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// When the run began, RFC 3339 UTC.
    pub started: String,
    /// The command that made it: `run`, `meta`, `sweep`, `ior`, `mdtest`,
    /// `dd`, `smallfile`, `fio`, `io500`, or `import`.
    pub source: String,
    /// The command line, word by word.
    pub command: Vec<String>,
    /// `run` (data), `meta` (metadata) or `io500`.
    pub kind: String,
    /// The workload key and its description.
    pub workload: Workload,
    /// The host print.
    pub host: HostPrint,
    /// The target print (its path is the row's target).
    pub target: TargetPrint,
    /// How it ended.
    pub status: Status,
    /// The ioscale version that ran it.
    pub version: String,
    /// Headline figures.
    pub figures: Vec<Figure>,
    /// The full record, as compact JSON.
    pub record: String,
    /// `r-` and 16 hexadecimal digits of the record's text: the same
    /// record is kept once (importing a run's `--json` file again adds
    /// nothing).
    pub digest: String,
}

fn digest_of(record: &str) -> String {
    format!("r-{:016x}", key::fnv1a(record.as_bytes()))
}

/// The host and target prints of a record's host facts and `extra`.
pub fn prints_of(h: &HostInfo, extra: &Extra) -> (HostPrint, TargetPrint) {
    (
        HostPrint {
            hostname: h.hostname.clone(),
            kernel: h.kernel.clone(),
            cpu_model: extra.cpu_model.clone(),
            cpus: h.cpus,
            mem_bytes: h.mem_bytes,
        },
        TargetPrint {
            path: h.target.clone(),
            fs_type: h.fs_type.clone(),
            fs_source: h.fs_source.clone(),
            device_model: extra.device_model.clone(),
            mount_options: h.mount_options.clone(),
            size_bytes: extra.size_bytes,
        },
    )
}

impl Entry {
    /// The entry of a run record made by `source`.
    pub fn of_run(rs: &ResultSet, source: &str, extra: &Extra) -> Result<Entry, serde_json::Error> {
        let record = serde_json::to_string(rs)?;
        let ranks = rs.host.cluster.as_ref().map_or(1, |c| c.ranks.max(1));
        let (host, target) = prints_of(&rs.host, extra);
        Ok(Entry {
            started: rs.started.clone(),
            source: source.to_string(),
            command: rs.command.clone(),
            kind: if rs.spec.as_run().is_some() {
                "run"
            } else {
                "meta"
            }
            .into(),
            workload: key::of_spec(&rs.spec, ranks),
            host,
            target,
            status: status_of(rs),
            version: rs.version.clone(),
            figures: figures_of_run(rs),
            digest: digest_of(&record),
            record,
        })
    }

    /// The entry of an io500 record made by `source`; `host` holds the
    /// facts of the machine and of the data directory's file system.
    pub fn of_io500(rec: &Value, host: &HostInfo, source: &str, extra: &Extra) -> Entry {
        let record = rec.to_string();
        let (host, mut target) = prints_of(host, extra);
        target.path = io500_target(rec);
        let text = |k: &str| rec.get(k).and_then(Value::as_str).unwrap_or_default();
        let started = rec
            .get("phases")
            .and_then(|p| p.get(0))
            .and_then(|p| p.get("t_start"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        Entry {
            started: started.to_string(),
            source: source.to_string(),
            command: rec
                .get("argv")
                .and_then(|a| serde_json::from_value(a.clone()).ok())
                .unwrap_or_default(),
            kind: "io500".into(),
            workload: key::of_io500(rec),
            host,
            target,
            status: io500_status(rec),
            version: text("version").to_string(),
            figures: figures_of_io500(rec),
            digest: digest_of(&record),
            record,
        }
    }
}

/// The host facts an io500 record holds itself (its first rank's host and
/// the CPU count; its data directory as the target), for a record read
/// back from a file.
pub fn io500_host(rec: &Value) -> HostInfo {
    HostInfo {
        hostname: rec
            .get("rank_hosts")
            .and_then(|h| h.get(0))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        cpus: rec.get("cpus").and_then(Value::as_u64).unwrap_or(0) as u32,
        target: io500_target(rec),
        ..HostInfo::default()
    }
}

/// Whether a JSON document is an io500 record.
pub fn is_io500(rec: &Value) -> bool {
    rec.get("command").and_then(Value::as_str) == Some("io500")
        && rec.get("tool").and_then(Value::as_str) == Some("ioscale")
}

/// io500's data directory, without the time stamp io500 adds to it
/// (`timestamp-datadir`): the directory the user named, the same for
/// every run.
fn io500_target(rec: &Value) -> String {
    let dir = rec
        .get("datadir")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match dir.rsplit_once('/') {
        Some((parent, last)) if is_stamp(last) && !parent.is_empty() => parent.to_string(),
        _ => dir.to_string(),
    }
}

/// `YYYY.MM.DD-HH.MM.SS`.
fn is_stamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 19
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 | 13 | 16 => *c == b'.',
            10 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}

/// A run's outcome as its exit code says it (see
/// `bench::run::Outcome::exit_code`): interrupted, errors or a failed data
/// check, or clean.
fn status_of(rs: &ResultSet) -> Status {
    let bad_check = rs
        .phases
        .iter()
        .any(|p| p.errors > 0 || p.verify.as_ref().is_some_and(|v| v.bad_bytes > 0));
    if rs.interrupted {
        Status::Interrupted
    } else if !rs.errors.is_empty() || !rs.failed_phases.is_empty() || bad_check {
        Status::Errors
    } else {
        Status::Ok
    }
}

fn io500_status(rec: &Value) -> Status {
    let phases = rec.get("phases").and_then(Value::as_array);
    let bad = phases.is_some_and(|ps| {
        ps.iter().any(|p| {
            p.get("bad_bytes").and_then(Value::as_u64).unwrap_or(0) > 0
                || p.get("tasks").and_then(Value::as_array).is_some_and(|ts| {
                    ts.iter()
                        .any(|t| t.get("error").is_some_and(|e| !e.is_null()))
                })
        })
    });
    if rec.get("interrupted").and_then(Value::as_bool) == Some(true) {
        Status::Interrupted
    } else if bad {
        Status::Errors
    } else {
        Status::Ok
    }
}

/// The figures of a run record: per operation with a good repetition, its
/// bandwidth (data) or rate, each with its interval, and its median and
/// 99th-percentile latency (means over the good repetitions).
pub fn figures_of_run(rs: &ResultSet) -> Vec<Figure> {
    let (threads, reps) = run_threads_and_reps(rs);
    let (ops, _, _) = point_stats(rs, threads, default_trim(reps));
    let mut out = Vec::new();
    for o in ops.iter().filter(|o| o.reps > 0) {
        let data = o.rate_is_data();
        let ci = o.rate_ci().filter(|c| c.n > 1);
        let rate = |metric: &str, unit: &str, value: f64, scale: f64, headline: bool| Figure {
            op: o.op.clone(),
            metric: metric.into(),
            unit: unit.into(),
            value,
            lo: ci.map(|c| c.lo * scale),
            hi: ci.map(|c| c.hi * scale),
            reps: o.reps as u32,
            higher_is_better: true,
            headline,
        };
        let (bw, iops) = (o.center_bw_mib_s(), o.center_iops());
        if data {
            out.push(rate("bw_mib_s", "MiB/s", bw, 1.0, true));
            let k = if bw > 0.0 { iops / bw } else { 0.0 };
            out.push(rate("iops", "ops/s", iops, k, false));
        } else {
            let unit = if o.counts_files { "files/s" } else { "ops/s" };
            out.push(rate("iops", unit, iops, 1.0, true));
        }
        for (metric, v) in [("lat_p50_us", o.lat_p50_us), ("lat_p99_us", o.lat_p99_us)] {
            if let Some(v) = v.filter(|v| *v > 0.0) {
                out.push(Figure {
                    op: o.op.clone(),
                    metric: metric.into(),
                    unit: "µs".into(),
                    value: v,
                    lo: None,
                    hi: None,
                    reps: o.reps as u32,
                    higher_is_better: false,
                    headline: false,
                });
            }
        }
    }
    out
}

/// The figures of an io500 record: each phase's score (GiB/s or kIOPS)
/// and the run's bandwidth, metadata and total scores.
pub fn figures_of_io500(rec: &Value) -> Vec<Figure> {
    let fig = |op: &str, metric: &str, unit: &str, value: f64| Figure {
        op: op.into(),
        metric: metric.into(),
        unit: unit.into(),
        value,
        lo: None,
        hi: None,
        reps: 1,
        higher_is_better: true,
        headline: true,
    };
    let mut out = Vec::new();
    for p in rec
        .get("phases")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(name), Some(score)) = (
            p.get("name").and_then(Value::as_str),
            p.get("score").and_then(Value::as_f64),
        ) else {
            continue;
        };
        if p.get("interrupted").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let unit = p.get("unit").and_then(Value::as_str).unwrap_or("");
        out.push(fig(name, "score", unit, score));
    }
    if let Some(s) = rec.get("score") {
        for (metric, unit) in [("bw_gib_s", "GiB/s"), ("md_kiops", "kIOPS"), ("total", "")] {
            if let Some(v) = s.get(metric).and_then(Value::as_f64) {
                out.push(fig("score", metric, unit, v));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io500_stamps_are_taken_off_the_data_directory() {
        let rec = serde_json::json!({"datadir": "/mnt/fs/io500/2026.11.22-10.01.02"});
        assert_eq!(io500_target(&rec), "/mnt/fs/io500");
        let rec = serde_json::json!({"datadir": "/mnt/fs/io500/data"});
        assert_eq!(io500_target(&rec), "/mnt/fs/io500/data");
        assert!(!is_stamp("2026.11.22-10.01.0x"));
    }

    #[test]
    fn statuses_round_trip_through_their_words() {
        for s in [Status::Ok, Status::Errors, Status::Interrupted] {
            assert_eq!(Status::parse(s.as_str()), Some(s));
        }
        assert_eq!(Status::parse("fine"), None);
    }
}
