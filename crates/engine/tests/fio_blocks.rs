//! fio's per-job options carried by the plan ([`spec::IoHints`],
//! `SyncMode::Between`/`DataBetween`), run by the worker on a real tmpfs
//! file for the sync and io_uring engines: fio's verify blocks written and
//! checked (a byte changed on the file is found with its block's offset),
//! and the syncs between writes counted as fio issues them (N writes, then
//! a sync before the next request; none after the last).

mod common;

use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};

use common::Tmpfs;
use engine::registry::EngineOptions;
use engine::{run_worker, Detail, PhaseControl, PhasePlan, Prepared, WorkerSample};
use spec::{Checksum, IoHints, Op, SyncMode};

const MIB: u64 = 1 << 20;

fn plan(op: Op, file: PathBuf, engine: &str, sync: SyncMode, sum: Checksum) -> PhasePlan {
    let spec = spec::RawWorkload {
        target: file.parent().map(PathBuf::from),
        ops: vec![op],
        xfer: Some(4096),
        size: Some(MIB),
        engine: Some(engine.into()),
        iodepth: Some(8),
        seed: Some(5),
        sync: Some(sync),
        verify: true,
        hints: IoHints {
            checksum: Some(sum),
            ..Default::default()
        },
        ..Default::default()
    }
    .build()
    .expect("a valid workload");
    PhasePlan {
        detail: Detail::Latency,
        ..PhasePlan::new(Arc::new(spec), 1, op, vec![file])
    }
}

/// [`plan`] without the read-back's pattern (no verify).
fn plan_unverified(op: Op, file: PathBuf, engine: &str, sync: SyncMode) -> PhasePlan {
    let p = plan(op, file, engine, sync, Checksum::Crc32c);
    let mut spec = (*p.spec).clone();
    spec.verify = false;
    PhasePlan {
        spec: Arc::new(spec),
        ..p
    }
}

fn run(p: &PhasePlan) -> WorkerSample {
    let prep = Prepared::with_options(p, 0, &EngineOptions::default()).unwrap();
    let ctl = PhaseControl::new(Arc::new(AtomicBool::new(false)));
    run_worker(0, p, &ctl, &Barrier::new(1), prep).0
}

#[test]
fn verify_blocks_are_written_checked_and_a_changed_byte_is_found() {
    let t = Tmpfs::mount("fio-blocks", "size=16m");
    for (k, eng) in ["sync", "io_uring"].into_iter().enumerate() {
        for sum in [
            Checksum::Crc32c,
            Checksum::Md5,
            Checksum::Sha1,
            Checksum::Xxhash,
        ] {
            let what = format!("{eng} {sum:?}");
            let file = t.0.join(format!("f.{k}.{}", sum.name()));
            let w = run(&plan(Op::Write, file.clone(), eng, SyncMode::None, sum));
            assert!(w.failure.is_none(), "{what}: {:?}", w.failure);
            // Every block opens with fio's magic and names its offset.
            let f = std::fs::File::open(&file).unwrap();
            let mut head = [0u8; 24];
            for off in [0, 4096, MIB - 4096] {
                f.read_exact_at(&mut head, off).unwrap();
                assert_eq!(head[..2], [0xca, 0xac], "{what} at {off}");
                assert_eq!(u64::from_le_bytes(head[16..24].try_into().unwrap()), off);
            }
            let read = plan(Op::Read, file.clone(), eng, SyncMode::None, sum);
            let r = run(&read);
            assert!(r.failure.is_none(), "{what}: {:?}", r.failure);
            assert_eq!(r.verify.checked_bytes, MIB, "{what}");
            assert_eq!(r.verify.bad_bytes, 0, "{what}");
            // One data byte of the third block, changed on the file.
            let g = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
            g.write_all_at(&[0x5a], 2 * 4096 + 1000).unwrap();
            let r = run(&read);
            assert_eq!(r.verify.bad_bytes, 4096, "{what}");
            assert_eq!(r.verify.first_bad.map(|x| x.1), Some(8192), "{what}");
        }
    }
}

#[test]
fn syncs_between_writes_are_counted_as_fio_issues_them() {
    let t = Tmpfs::mount("fio-syncs", "size=16m");
    for eng in ["sync", "io_uring"] {
        for (sync, n) in [
            (SyncMode::Between(4), 63),
            (SyncMode::DataBetween(1), 255),
            (SyncMode::DataBetween(256), 0),
            (SyncMode::Between(300), 0),
        ] {
            let what = format!("{eng} {sync:?}");
            let file = t.0.join(format!("s.{eng}"));
            let s = run(&plan_unverified(Op::Write, file, eng, sync));
            assert!(s.failure.is_none(), "{what}: {:?}", s.failure);
            assert_eq!(s.counters.write_ops, 256, "{what}");
            let d = s.detail.as_deref().unwrap();
            assert_eq!(d.syncs.count(), n, "{what}");
        }
    }
}
