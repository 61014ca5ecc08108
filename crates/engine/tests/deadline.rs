//! One deadline per phase (issue 11 item 9): a time limit counts from the
//! phase epoch (the ranks' start barrier), not from each worker's own
//! start, so a worker released late stops at the same moment as the
//! others instead of running its full limit past it.

mod common;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::{make_root, meta_spec};
use engine::meta::{MetaPlan, MetaSample};
use engine::registry::MetaEngineConfig;
use engine::runner::run_meta_worker_with;
use engine::PhaseControl;
use spec::{MetaOp, TreeState};

#[test]
fn workers_released_after_the_deadline_stop_at_once() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("deadline-late-release");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // Far more files than a thread creates in the limit.
    let mut spec = meta_spec(&dir, 2, 1_000_000, 0, &[MetaOp::Create]);
    spec.time_limit = Some(Duration::from_millis(300));
    let root = make_root(&spec);
    let plan: MetaPlan = MetaPlan {
        spec: &spec,
        op: MetaOp::Create,
        root: root.clone(),
        rep: 0,
        state: TreeState::default(),
        limit: None,
        timed: true,
        root_dir: None,
        kept_before: None,
        series: None,
    };
    let ctl = PhaseControl::new(Arc::new(AtomicBool::new(false)));
    // The threads are released well after the phase's deadline (a rank
    // that left the start barrier, then set up slowly).
    std::thread::sleep(Duration::from_millis(600));
    let barrier = Barrier::new(2);
    let samples: Vec<MetaSample> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..2)
            .map(|w| {
                let (plan, ctl, barrier) = (&plan, &ctl, &barrier);
                sc.spawn(move || {
                    run_meta_worker_with(w, plan, &MetaEngineConfig::default(), ctl, barrier)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for s in &samples {
        assert!(s.failure.is_none(), "{:?}", s.failure);
        assert!(
            s.hit_deadline,
            "worker {} did not stop at the deadline",
            s.worker
        );
        // Past the deadline already: at most the one create in hand.
        assert!(
            s.files <= 1,
            "worker {} created {} files after the phase's deadline",
            s.worker,
            s.files
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
