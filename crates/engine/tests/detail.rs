//! What the engine keeps for `ioscale fio` when its plan asks
//! (`PhasePlan::detail`, `Detail::IoLog`): latencies by direction,
//! io_uring's submission latency (slat) and every request, for each
//! io_uring option set and for the sync engine, on a mixed phase; and
//! nothing of it when the plan does not ask.

mod common;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier, Mutex};

use common::Tmpfs;
use engine::registry::EngineOptions;
use engine::uring::{SubmitMode, UringOptions};
use engine::{run_worker, Detail, PhaseControl, PhasePlan, Prepared};
use spec::Op;

/// The live totals are per worker slot and process-wide: the tests of this
/// file run worker 0 each, so one at a time (two at once counted each
/// other's requests in the totals).
static SLOT_0: Mutex<()> = Mutex::new(());

fn plan(op: Op, file: PathBuf, engine: &str) -> PhasePlan {
    let spec = spec::RawWorkload {
        target: file.parent().map(PathBuf::from),
        ops: vec![op],
        xfer: Some(4096),
        size: Some(1 << 20),
        engine: Some(engine.into()),
        iodepth: Some(8),
        seed: Some(11),
        rwmix_read: matches!(op, Op::Rw | Op::Randrw).then_some(50),
        ..Default::default()
    }
    .build()
    .expect("a valid workload");
    // What `ioscale fio` asks for: latencies by direction and every request.
    PhasePlan {
        detail: Detail::IoLog,
        ..PhasePlan::new(Arc::new(spec), 1, op, vec![file])
    }
}

#[test]
fn slat_clat_and_lat_add_up_by_direction_for_every_engine_setting() {
    let _one = SLOT_0.lock().unwrap_or_else(|e| e.into_inner());
    let t = Tmpfs::mount("detail", "size=32m");
    let base = UringOptions::default();
    let settings: Vec<(&str, UringOptions)> = vec![
        ("sync", base),
        ("io_uring", base),
        (
            "io_uring",
            UringOptions {
                submit: SubmitMode::Batch,
                ..base
            },
        ),
        ("io_uring", UringOptions::tuned()),
        (
            "io_uring",
            UringOptions {
                sqpoll_idle_ms: Some(50),
                ..UringOptions::tuned()
            },
        ),
    ];
    for (k, (eng, o)) in settings.into_iter().enumerate() {
        let what = format!("{eng} {o:?}");
        let file = t.0.join(format!("data.{k}"));
        let opts = EngineOptions { uring: o };
        // Lay the file out, then mix reads and writes over it.
        for op in [Op::Write, Op::Randrw] {
            let p = plan(op, file.clone(), eng);
            let prep = Prepared::with_options(&p, 0, &opts).unwrap();
            let ctl = PhaseControl::new(Arc::new(AtomicBool::new(false)));
            let before = engine::live::lifetime_dirs(0);
            let (s, _) = run_worker(0, &p, &ctl, &Barrier::new(1), prep);
            assert!(s.failure.is_none(), "{what}: {:?}", s.failure);
            assert_eq!(s.counters.ops, 256, "{what}");
            let d = s.detail.as_deref().expect("kept when the plan asks");
            let c = &s.counters;
            assert_eq!(d.lat[0].count(), c.read_ops, "{what} {op:?}");
            assert_eq!(d.lat[1].count(), c.write_ops, "{what} {op:?}");
            if op == Op::Randrw {
                assert!(c.read_ops > 0 && c.write_ops > 0, "{what}: {c:?}");
            }
            // The live totals count each direction apart, for the sampler.
            let after = engine::live::lifetime_dirs(0);
            assert_eq!(after[0].0 - before[0].0, c.read_ops, "{what}");
            assert_eq!(after[0].1 - before[0].1, c.read_bytes, "{what}");
            assert_eq!(after[1].0 - before[1].0, c.write_ops, "{what}");
            assert_eq!(after[1].1 - before[1].1, c.write_bytes, "{what}");
            for dir in 0..2 {
                let n = d.lat[dir].count();
                assert_eq!(d.clat[dir].count(), n, "{what}");
                if eng == "sync" {
                    // Handed over in the wait: no slat, clat is lat.
                    assert!(d.slat[dir].is_empty(), "{what}");
                    assert_eq!(d.clat[dir], d.lat[dir], "{what}");
                } else {
                    assert_eq!(d.slat[dir].count(), n, "{what}");
                    // Request by request lat = slat + clat, to the ns.
                    let sum = d.slat[dir].sum_ns() + d.clat[dir].sum_ns();
                    assert_eq!(sum, d.lat[dir].sum_ns(), "{what} dir {dir}");
                }
            }
            // Every request in the log, in completion order.
            assert_eq!(d.log.len() as u64, c.ops, "{what}");
            assert_eq!(
                d.log.iter().filter(|e| e.write).count() as u64,
                c.write_ops,
                "{what}"
            );
            assert!(d.log.windows(2).all(|w| w[0].done <= w[1].done), "{what}");
            assert!(d.log.iter().all(|e| e.len == 4096), "{what}");
            assert!(
                d.log.iter().all(|e| e.slat_ns.is_some() == (eng != "sync")
                    && e.slat_ns.unwrap_or(0) <= e.lat_ns),
                "{what}"
            );
        }
    }
}

/// The detail is the plan's, phase by phase: a plan that does not ask
/// keeps none, one that asks for latencies keeps them without the
/// per-request log, in the same process as the test above.
#[test]
fn each_plan_keeps_what_it_asks_for_and_no_more() {
    let _one = SLOT_0.lock().unwrap_or_else(|e| e.into_inner());
    let t = Tmpfs::mount("detail-off", "size=8m");
    let file = t.0.join("data");
    let opts = EngineOptions::default();
    for (detail, kept, logged) in [
        (Detail::Off, false, false),
        (Detail::Latency, true, false),
        (Detail::IoLog, true, true),
    ] {
        let p = PhasePlan {
            detail,
            ..plan(Op::Write, file.clone(), "sync")
        };
        let prep = Prepared::with_options(&p, 0, &opts).unwrap();
        let ctl = PhaseControl::new(Arc::new(AtomicBool::new(false)));
        let (s, _) = run_worker(0, &p, &ctl, &Barrier::new(1), prep);
        assert!(s.failure.is_none(), "{detail:?}: {:?}", s.failure);
        assert_eq!(s.detail.is_some(), kept, "{detail:?}");
        let log = s.detail.as_ref().map_or(0, |d| d.log.len() as u64);
        assert_eq!(log > 0, logged, "{detail:?}");
        if logged {
            assert_eq!(log, s.counters.ops, "{detail:?}");
        }
    }
}
