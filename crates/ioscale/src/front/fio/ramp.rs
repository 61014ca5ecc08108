//! A sized job's `ramp_time`: fio resets a job's statistics when its ramp
//! ends, so its figures and logs leave out what completed before. The
//! executor keeps the clock (it starts the passes, times every request
//! and samples the intervals); this module only drops, after the run,
//! what its records say completed before the ramp's end.

use std::time::Duration;

use bench::sampling::Sampled;

use super::parse::Job;
use super::render::{DirStats, Entry, LatBuckets};
use super::{add_lat, Pass};

/// Where a ramp ends: a moment on the executor's samples' time axis
/// (after their origin, [`Sampled::since`]).
pub(super) type Cut = Duration;

/// A sized job with `ramp_time`: its figures leave out what completed in
/// the ramp, as fio resets a job's statistics when its ramp ends.
pub(super) fn sized(j: &Job) -> bool {
    !j.ramp_time.is_zero() && !j.time_based
}

/// Where job `j`'s ramp ends when it is a sized job with a ramp: its
/// `ramp_time` after the executor started its first pass (`started`, on
/// the samples' time axis).
pub(super) fn sized_cut(j: &Job, started: Cut) -> Option<Cut> {
    sized(j).then(|| started + j.ramp_time)
}

/// Drops the intervals that began before the ramp ended.
pub(super) fn cut_ticks(sampled: &mut Sampled, cut: Cut) {
    let ramp_ms = cut.as_millis() as f64;
    for t in &mut sampled.ticks {
        t.retain(|x| x.t_ms as f64 - x.dt_ms >= ramp_ms - 0.5);
    }
}

/// An entry's bytes, requests, latencies and run time from its requests
/// that completed at or after `cut` (the end of the ramp), as fio counts a
/// sized job after its ramp. Workers that were done before the ramp ended
/// keep all their figures: fio resets only a job still running then.
/// (`sampled` places the requests' completions on the cut's time axis.)
pub(super) fn after_ramp(
    e: &mut Entry,
    ws: &[u32],
    passes: &[&Pass],
    (cut, sampled): (Cut, &Sampled),
) {
    let logs: Vec<&[engine::IoLogEntry]> = passes
        .iter()
        .flat_map(|p| &p.lat)
        .flat_map(|pl| &pl.detail)
        .filter(|(w, _)| ws.contains(w))
        .map(|(_, d)| d.log.as_slice())
        .collect();
    let at = |x: &engine::IoLogEntry| sampled.since(x.done);
    let last = logs.iter().flat_map(|l| l.iter()).map(at).max();
    let Some(last) = last.filter(|&l| l >= cut) else {
        return;
    };
    let mut d = engine::DirLatency::new();
    let mut bytes = [0u64; 2];
    for x in logs.iter().flat_map(|l| l.iter()).filter(|x| at(x) >= cut) {
        let k = usize::from(x.write);
        d.lat[k].record(x.lat_ns);
        d.clat[k].record(x.lat_ns - x.slat_ns.unwrap_or(0).min(x.lat_ns));
        if let Some(sl) = x.slat_ns {
            d.slat[k].record(sl);
        }
        bytes[k] += u64::from(x.len);
    }
    let secs = last.saturating_sub(cut).as_secs_f64();
    e.runtime_s = secs;
    let mut buckets = LatBuckets::default();
    for (k, ds) in [(0, &mut e.read), (1, &mut e.write)] {
        *ds = DirStats {
            bytes: bytes[k],
            ios: d.lat[k].count(),
            runtime_s: secs,
            ..DirStats::default()
        };
        if ds.ios == 0 {
            ds.runtime_s = 0.0;
        }
        add_lat(&mut ds.lat, &d.lat[k]);
        if d.clat[k] != d.lat[k] {
            add_lat(&mut ds.clat, &d.clat[k]);
        }
        add_lat(&mut ds.slat, &d.slat[k]);
        buckets.add(&d.lat[k]);
    }
    e.buckets = (buckets.total > 0).then_some(buckets);
}
