//! ioscale's JSON record of an io500 run (`--json`): the run, each phase's
//! figures as the executor measured them, and the score. A figure that
//! was not measured is `null` (the timestamp phase's work, latencies and
//! CPU time; a failed phase's latencies and CPU time), never a stand-in 0.

use coord::Coordinator;
use serde_json::{json, Value};

use super::phases::{Group, Kind};
use super::runner::{Done, Figures};
use super::{Start, Verdict, IO500_VERSION};

fn lat(f: &Figures) -> Value {
    match &f.lat {
        Some(s) => {
            json!({"mean": s.mean, "p50": s.p50, "p99": s.p99, "p999": s.p999, "max": s.max, "min": s.min})
        }
        None => Value::Null,
    }
}

/// Each task's items and, where the executor kept its row, bytes and
/// how it ended.
fn tasks(f: &Figures) -> Vec<Value> {
    f.items
        .iter()
        .enumerate()
        .map(|(t, &items)| {
            let mut v = json!({"task": t, "items": items});
            if let Some(r) = f.data_rows.iter().find(|r| r.worker as usize == t) {
                v["bytes"] = json!(r.bytes);
            }
            if let Some(r) = f.meta_rows.iter().find(|r| r.thread as usize == t) {
                v["status"] = json!(r.status);
                if let Some(m) = r.matched {
                    v["found"] = json!(m);
                }
            }
            v
        })
        .collect()
}

/// One phase's entry.
fn phase(d: &Done, workers: u32) -> Value {
    let empty = Figures::default();
    let f = d.fig.as_ref().unwrap_or(&empty);
    let elapsed = f.elapsed_s;
    let rate = |x: u64| {
        if elapsed > 0.0 {
            x as f64 / elapsed
        } else {
            0.0
        }
    };
    let scored = d.phase.kind != Kind::Timestamp;
    // Work the executor did not count is not shown as 0.
    let counted = |v: Value| if f.counted { v } else { Value::Null };
    json!({
        "name": d.phase.name,
        "op": d.phase.name,
        "group": match d.phase.group { Group::Bw => "BW", Group::Md => "MD", Group::None => "none" },
        "optional": d.phase.optional,
        "score": if scored { json!(d.score) } else { Value::Null },
        "unit": d.phase.unit(),
        "valid": d.valid,
        "invalid_reasons": d.reasons().collect::<Vec<_>>(),
        "t_start": d.t_start.rfc3339,
        "t_end": d.t_end.rfc3339,
        "threads": workers,
        "bytes": counted(json!(f.bytes)),
        "ops": counted(json!(f.ops)),
        "elapsed_s": elapsed,
        "bw_mib_s": counted(json!(rate(f.bytes) / (1u64 << 20) as f64)),
        "iops": counted(json!(rate(f.ops))),
        "lat_us": lat(f),
        "cpu_user_s": f.cpu.map(|c| c.0),
        "cpu_sys_s": f.cpu.map(|c| c.1),
        "stonewall": f.stonewall.map(|(s, items, bytes)| json!({"s": s, "items": items, "bytes": bytes})),
        "found": f.found,
        "bad_bytes": f.bad_bytes,
        "errors": f.errors,
        "error": f.error,
        "interrupted": f.interrupted,
        "resources": f.resources,
        "gathered_bytes": f.gathered_bytes,
        "tasks": tasks(f),
    })
}

/// ioscale's JSON record of the run.
pub(super) fn record(start: &Start, coord: &dyn Coordinator, done: &[Done], v: &Verdict) -> Value {
    let (a, cfg) = (&start.a, &start.cfg);
    let phases: Vec<Value> = done.iter().map(|d| phase(d, start.workers)).collect();
    json!({
        "schema": 1,
        "tool": "ioscale",
        "command": "io500",
        "version": env!("CARGO_PKG_VERSION"),
        "io500": IO500_VERSION,
        "mode": start.mode(),
        "argv": std::env::args().collect::<Vec<_>>(),
        "ranks": coord.size(),
        "rank_hosts": start.hosts,
        "tasks_per_rank": a.tasks,
        "tasks": start.workers,
        "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "stonewall_s": cfg.stonewall_s,
        "datadir": cfg.datadir,
        "resultdir": cfg.resultdir,
        "config_hash": format!("{:X}", cfg.hash()),
        "interrupted": v.interrupted,
        "phases": phases,
        "score": {"bw_gib_s": v.score.bw, "md_kiops": v.score.md, "total": v.score.total, "valid": v.valid, "invalid_reasons": v.reasons},
        "scorex": v.ext.map(|(x, ok)| json!({"bw_gib_s": x.bw, "md_kiops": x.md, "total": x.total, "valid": ok})),
    })
}
