//! The io_uring data engine with each ring option, on tmpfs and on ext4
//! with O_DIRECT: the data written reads back as written; a failing device
//! (the fault FUSE fs) is reported with file and offset; a stop with
//! requests in flight ends the phase cleanly and the state stays usable.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::{Scratch, TestFs, Tmpfs};
use engine::registry::EngineOptions;
use engine::uring::{SubmitMode, UringOptions};
use engine::{run_worker, PhaseControl, PhasePlan, Prepared, WorkerSample};
use spec::Op;

fn plan(op: Op, file: PathBuf, size: u64, depth: u32, direct: bool) -> PhasePlan {
    let spec = spec::RawWorkload {
        target: file.parent().map(PathBuf::from),
        ops: vec![op],
        xfer: Some(4096),
        size: Some(size),
        direct,
        engine: Some("io_uring".into()),
        iodepth: Some(depth.into()),
        seed: Some(7),
        verify: true,
        rwmix_read: matches!(op, Op::Rw | Op::Randrw).then_some(50),
        ..Default::default()
    }
    .build()
    .expect("a valid workload");
    PhasePlan::new(Arc::new(spec), 1, op, vec![file])
}

fn run(p: &PhasePlan, prep: Prepared, stop: Arc<AtomicBool>) -> (WorkerSample, Option<Prepared>) {
    let ctl = PhaseControl::new(stop);
    run_worker(0, p, &ctl, &Barrier::new(1), prep)
}

fn options() -> Vec<UringOptions> {
    let base = UringOptions::default();
    vec![
        base,
        UringOptions {
            fixed_buffers: true,
            ..base
        },
        UringOptions {
            register_files: true,
            submit: SubmitMode::Batch,
            ..base
        },
        UringOptions::tuned(),
        UringOptions {
            sqpoll_idle_ms: Some(50),
            ..UringOptions::tuned()
        },
        UringOptions {
            spin: true,
            ..UringOptions::tuned()
        },
        UringOptions {
            spin: true,
            fixed_buffers: true,
            submit: SubmitMode::Batch,
            ..base
        },
    ]
}

fn roundtrip(dir: &Path, direct: bool) {
    for (k, o) in options().into_iter().enumerate() {
        let file = dir.join(format!("data.{k}"));
        let opts = EngineOptions { uring: o };
        let w = plan(Op::Write, file.clone(), 4 << 20, 16, direct);
        let prep = Prepared::with_options(&w, 0, &opts).unwrap();
        let (s, prep) = run(&w, prep, Arc::new(AtomicBool::new(false)));
        assert!(s.failure.is_none(), "{o:?}: {:?}", s.failure);
        assert_eq!(s.counters.bytes, 4 << 20, "{o:?}");
        assert_eq!(std::fs::metadata(&file).unwrap().len(), 4 << 20);
        // The same prepared state (ring, registered buffers) serves the
        // next phase, here on another thread (SINGLE_ISSUER rebinds).
        let r = plan(Op::Randread, file.clone(), 4 << 20, 16, direct);
        let prep = prep.expect("state usable after the phase");
        let (s, _) = std::thread::scope(|sc| {
            sc.spawn(|| run(&r, prep, Arc::new(AtomicBool::new(false))))
                .join()
                .unwrap()
        });
        assert!(s.failure.is_none(), "{o:?}: {:?}", s.failure);
        assert_eq!(s.verify.checked_bytes, 4 << 20, "{o:?}");
        assert_eq!(s.verify.bad_bytes, 0, "{o:?}");
    }
}

#[test]
fn every_option_set_reads_back_what_it_wrote_on_tmpfs() {
    let t = Tmpfs::mount("data", "size=64m");
    roundtrip(&t.0, false);
}

#[test]
fn every_option_set_reads_back_what_it_wrote_on_ext4_with_o_direct() {
    let s = Scratch::new(Path::new(env!("CARGO_TARGET_TMPDIR")), "data");
    roundtrip(&s.0, true);
}

#[test]
fn eio_is_reported_with_file_and_offset_under_fixed_buffers_and_files() {
    let fs = TestFs::mount("data-eio", &["--eio-after-ops", "20"]);
    let file = fs.mnt.join("data");
    let opts = EngineOptions {
        uring: UringOptions::tuned(),
    };
    let w = plan(Op::Write, file.clone(), 1 << 20, 8, false);
    let prep = Prepared::with_options(&w, 0, &opts).unwrap();
    let (s, prep) = run(&w, prep, Arc::new(AtomicBool::new(false)));
    let f = s.failure.expect("EIO reported");
    assert_eq!((f.op.as_str(), f.errno), ("write", Some(libc::EIO)), "{f}");
    assert_eq!(f.path, file);
    assert!(
        f.offset.is_some_and(|o| o % 4096 == 0 && o >= 20 * 4096),
        "{f}"
    );
    assert!(s.counters.errors >= 1);
    assert!(prep.is_some(), "every request was reaped");
}

#[test]
fn a_stop_with_requests_in_flight_ends_cleanly() {
    // 2 ms per request: 32 requests are always in flight.
    let fs = TestFs::mount("data-stop", &["--delay", "2ms", "--threads", "64"]);
    let file = fs.mnt.join("data");
    std::fs::write(&file, vec![0u8; 64 << 20]).unwrap();
    let mut r = plan(Op::Randread, file, 64 << 20, 32, false);
    Arc::make_mut(&mut r.spec).verify = false;
    let opts = EngineOptions {
        uring: UringOptions::tuned(),
    };
    let prep = Prepared::with_options(&r, 0, &opts).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        s2.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let (s, prep) = run(&r, prep, stop);
    t.join().unwrap();
    assert!(s.failure.is_none(), "{:?}", s.failure);
    let total = (64 << 20) / 4096;
    assert!(
        // At least the first 32 (in flight when the stop came, reaped
        // before the state is handed back), and not all: stopped mid-phase.
        // (Not "more than 32": buffered io_uring reads on this FUSE fs are
        // served inline in the submitting thread, about 2.3 ms each, so on
        // a loaded machine the first refill can outlast the 200 ms.)
        s.counters.ops >= 32 && s.counters.ops < total,
        "{}",
        s.counters.ops
    );
    // Every request was reaped (none left in the kernel): the state is
    // handed back, and the file is not held by the ring.
    let prep = prep.expect("state usable after a stop");
    drop(prep);
    drop(fs);
}
