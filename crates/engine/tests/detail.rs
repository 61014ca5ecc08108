//! What the engine keeps for `ioscale fio` when asked (`set_detail`,
//! `set_io_log`): latencies by direction, io_uring's submission latency
//! (slat) and every request, for each io_uring option set and for the
//! sync engine, on a mixed phase. A binary of its own: the switches are
//! per process.

mod common;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};

use common::Tmpfs;
use engine::registry::EngineOptions;
use engine::uring::{SubmitMode, UringOptions};
use engine::{run_worker, PhaseControl, PhasePlan, Prepared};
use spec::{Layout, Op, SyncMode};

fn plan(op: Op, file: PathBuf, engine: &str) -> PhasePlan {
    PhasePlan {
        op,
        threads: 1,
        layout: Layout::PerThread,
        xfer: 4096,
        block: 1 << 20,
        segments: 1,
        direct: false,
        sync: SyncMode::None,
        engine: engine.into(),
        iodepth: 8,
        seed: 11,
        verify: false,
        rwmix_read: 50,
        reorder_offset: 0,
        start_offsets: Vec::new(),
        files: vec![file],
        align: 4096,
        time_limit: None,
        rep: 0,
        anchors: Vec::new(),
    }
}

#[test]
fn slat_clat_and_lat_add_up_by_direction_for_every_engine_setting() {
    engine::worker::set_detail(true);
    engine::worker::set_io_log(true);
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
            let d = s.detail.as_deref().expect("kept while set_detail is on");
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
