//! The S3 backend against a real S3 server (s3s-fs on loopback, started
//! by objstore's `testing` feature): the data loop, the metadata loop and
//! the held directories run on it as on the in-memory double, and every
//! byte they write is in the server's directory.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};

use objstore::testing::{skip_without_server, Server};
use objstore::{Client, RetryPolicy};
use spec::{Layout, MetaOp, Op, TreeState};

use super::{S3At, S3};
use crate::backend::{Backend, Capabilities, DataFile, Dir, Kind, Locked, Removal};
use crate::meta::{MetaPlan, MetaSample};
use crate::registry::MetaEngineConfig;
use crate::runner::{run_meta_worker_with, run_worker, Prepared};
use crate::worker::{FileAnchor, PhaseControl, PhasePlan, WorkerSample};

const BUCKET: &str = "bkt";

fn start() -> Option<(Server, S3)> {
    if skip_without_server() {
        return None;
    }
    let server = Server::start(&[BUCKET]).expect("s3s-fs starts");
    let client = Client::new(&server.settings(), BUCKET, RetryPolicy::default()).unwrap();
    Some((server, S3::new(client)))
}

fn data_plan(s3: &S3, op: Op, target: &str, xfer: u64, block: u64, segs: u64) -> PhasePlan<S3> {
    let held = s3.open_target(Path::new(target)).unwrap();
    let at = Arc::new(S3::at_of(&held).unwrap());
    let workers = 2;
    let anchors = (0..workers)
        .map(|i| {
            Some(FileAnchor::<S3> {
                dir: Arc::clone(&at),
                name: CString::new(format!("file.{i:08}")).unwrap(),
            })
        })
        .collect();
    let spec = spec::RawWorkload {
        target: Some(target.into()),
        ops: vec![op],
        threads: Some(u64::from(workers)),
        layout: Some(Layout::PerThread),
        xfer: Some(xfer),
        block: Some(block),
        segments: Some(segs),
        engine: Some("sync".into()),
        iodepth: Some(1),
        seed: Some(5),
        verify: true,
        ..Default::default()
    }
    .build()
    .expect("a valid workload");
    S3::capabilities().check_data(&spec).expect("S3 runs it");
    let files = (0..workers)
        .map(|i| PathBuf::from(target).join(format!("file.{i:08}")))
        .collect();
    PhasePlan {
        anchors,
        ..PhasePlan::new(Arc::new(spec), workers, op, files)
    }
}

fn data_phase(plan: &PhasePlan<S3>) -> Vec<WorkerSample> {
    let ctl = PhaseControl::new(Arc::new(AtomicBool::new(false)));
    (0..plan.workers)
        .map(|w| {
            let prep = Prepared::<S3>::new(plan, w).unwrap();
            run_worker(w, plan, &ctl, &Barrier::new(1), prep).0
        })
        .collect()
}

/// Writes, then reads back and verifies, `segs` transfers of `xfer`
/// bytes per worker; the server's files hold every byte.
fn write_then_verify(server: &Server, s3: &S3, target: &str, xfer: u64, segs: u64) {
    let size = xfer * segs;
    for op in [Op::Write, Op::Read, Op::Randread] {
        let plan = data_plan(s3, op, target, xfer, xfer, segs);
        for s in data_phase(&plan) {
            assert!(s.failure.is_none(), "{op:?}: {:?}", s.failure);
            assert_eq!(s.counters.bytes, size, "{op:?}");
            if op.reads() {
                assert_eq!(s.verify.checked_bytes, size, "{op:?}");
                assert_eq!(s.verify.bad_bytes, 0, "{op:?}");
            }
        }
    }
    let prefix = target.strip_prefix(&format!("s3://{BUCKET}/")).unwrap();
    for i in 0..2 {
        let p = server.object_path(BUCKET, &format!("{prefix}/file.{i:08}"));
        assert_eq!(
            std::fs::metadata(&p).unwrap().len(),
            size,
            "{}",
            p.display()
        );
    }
}

#[test]
fn the_data_loop_puts_and_gets_whole_objects() {
    let Some((server, s3)) = start() else { return };
    write_then_verify(&server, &s3, "s3://bkt/d", 64 << 10, 1);
}

#[test]
fn a_multipart_upload_of_xfer_parts_is_read_back_by_ranges() {
    let Some((server, s3)) = start() else { return };
    write_then_verify(&server, &s3, "s3://bkt/mp", 5 << 20, 2);
}

#[test]
fn parts_smaller_than_5_mib_are_refused_before_anything_is_made() {
    let spec = spec::RawWorkload {
        target: Some("s3://bkt/x".into()),
        ops: vec![Op::Write],
        xfer: Some(1 << 20),
        block: Some(8 << 20),
        ..Default::default()
    }
    .build()
    .unwrap();
    let e = S3::capabilities()
        .check_data(&spec)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("--xfer 1048576: the s3 backend"), "{e}");
    assert!(e.contains("at least 5 MiB"), "{e}");
    // One part (the object is --xfer bytes) is a single PUT: fine.
    let one = spec::RawWorkload {
        target: Some("s3://bkt/x".into()),
        ops: vec![Op::Write],
        xfer: Some(1 << 20),
        block: Some(1 << 20),
        ..Default::default()
    }
    .build()
    .unwrap();
    S3::capabilities().check_data(&one).unwrap();
    // What an object store lacks is refused, naming the flag.
    let caps: &Capabilities = S3::capabilities();
    let meta = spec::RawMeta {
        target: Some("s3://bkt/m".into()),
        ops: vec![MetaOp::Create, MetaOp::Rename],
        ..Default::default()
    }
    .build()
    .unwrap();
    let e = caps.check_meta(&meta).unwrap_err().to_string();
    assert_eq!(e, "--ops rename: the s3 backend has no atomic rename");
}

fn meta_phase(
    s3: &S3,
    spec: &spec::MetaSpec,
    root: &S3At,
    op: MetaOp,
    state: TreeState,
) -> Vec<MetaSample> {
    let plan = MetaPlan::<S3> {
        spec,
        op,
        root: PathBuf::from("s3://bkt/m/ioscale-meta.d"),
        rep: 0,
        state,
        limit: None,
        timed: op != MetaOp::Cleanup,
        root_dir: Some(Arc::new(S3::dup_at(root).unwrap())),
        kept_before: None,
        series: crate::series::SeriesGrid::every(1_000_000),
    };
    let _ = s3;
    let ctl = PhaseControl::new(Arc::new(AtomicBool::new(false)));
    (0..spec.threads)
        .map(|w| {
            run_meta_worker_with(
                w,
                &plan,
                &MetaEngineConfig::default(),
                &ctl,
                &Barrier::new(1),
            )
        })
        .collect()
}

#[test]
fn the_metadata_loop_puts_heads_gets_lists_and_deletes() {
    let Some((server, s3)) = start() else { return };
    let ops = [
        MetaOp::Create,
        MetaOp::Stat,
        MetaOp::Read,
        MetaOp::Readdir,
        MetaOp::Delete,
    ];
    let spec = spec::RawMeta {
        target: Some("s3://bkt/m".into()),
        ops: ops.to_vec(),
        threads: Some(2),
        files: Some(12),
        file_size: Some(spec::FileSize::Fixed { bytes: 1000 }),
        record_size: Some(256),
        verify: true,
        ..Default::default()
    }
    .build()
    .unwrap();
    S3::capabilities().check_meta(&spec).unwrap();
    let target = s3.open_target(Path::new("s3://bkt/m")).unwrap();
    let root = target.mkdir_at("ioscale-meta.d", 0o755).unwrap();
    for w in 0..spec.threads {
        if let Some(d) = spec.thread_dir(w) {
            root.mkdir_at(d, 0o755).unwrap();
        }
    }
    let at = S3::at_of(&root).unwrap();
    let objects = || {
        walkdir(&server.object_path(BUCKET, "m/ioscale-meta.d"))
            .into_iter()
            .filter(|p| !p.ends_with(super::DIR_MARK))
            .collect::<Vec<_>>()
    };
    let mut state = TreeState::default();
    for op in ops {
        let samples = meta_phase(&s3, &spec, &at, op, state);
        for s in &samples {
            assert!(s.failure.is_none(), "{op}: {:?}", s.failure);
            assert_eq!((s.errors, s.bad_bytes), (0, 0), "{op}");
        }
        let files: u64 = samples.iter().map(|s| s.files).sum();
        assert_eq!(files, 24, "{op}");
        match op {
            MetaOp::Create => {
                let objs = objects();
                assert_eq!(objs.len(), 24);
                for o in objs {
                    assert_eq!(std::fs::metadata(&o).unwrap().len(), 1000);
                }
            }
            MetaOp::Read => {
                let checked: u64 = samples.iter().map(|s| s.checked_bytes).sum();
                assert_eq!(checked, 24 * 1000);
            }
            MetaOp::Delete => assert!(objects().is_empty()),
            _ => {}
        }
        state = spec.state_after(state, op).unwrap();
    }
}

/// Every regular file below `dir` in the server's directory.
fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn held_prefixes_refuse_a_swapped_marker_and_leave_foreign_objects() {
    let Some((server, s3)) = start() else { return };
    let top = s3.open_target(Path::new("s3://bkt/h")).unwrap();
    let d = top.mkdir_at("ioscale.d", 0o755).unwrap();
    assert_eq!(
        top.mkdir_at("ioscale.d", 0o755).unwrap_err().raw_os_error(),
        Some(libc::EEXIST)
    );
    let (f, _) = d.create_at("a", 0o644).unwrap();
    f.write_at(b"hello", 0).unwrap();
    f.close().unwrap();
    assert!(d.create_at("a", 0o644).is_err(), "create is exclusive");
    assert_eq!(
        std::fs::read(server.object_path(BUCKET, "h/ioscale.d/a")).unwrap(),
        b"hello"
    );
    let info = top.stat_at("ioscale.d").unwrap().unwrap();
    assert_eq!((info.kind, info.id), (Kind::Dir, d.id()));
    let mut names = d.list().unwrap();
    names.sort();
    assert_eq!(names, ["a"], "the marker is never listed");
    // Someone else's object beside ioscale's: removal names only ours.
    let client = s3
        .client()
        .connect(9)
        .put("h/ioscale.d/theirs", b"keep")
        .map(drop);
    client.unwrap();
    let a = d.stat_at("a").unwrap().unwrap();
    let (f, _) = d
        .open_file_at("a", crate::backend::Access::Write, None)
        .unwrap();
    f.write_at(b"rewritten", 0).unwrap();
    f.close().unwrap();
    let e = d.unlink_at("a", Some(a.id)).unwrap_err();
    assert!(
        e.to_string().contains("ioscale.d/a"),
        "a rewritten object is another: {e}"
    );
    let mut r = Removal::new();
    r.file("a").file("missing");
    let rep = d.remove(&r);
    assert_eq!((rep.removed, rep.absent, rep.left_total), (1, 1, 0));
    // Not empty: the directory stays, and so does the foreign object.
    assert!(top.rmdir_at("ioscale.d", Some(d.id())).is_err());
    assert_eq!(
        std::fs::read(server.object_path(BUCKET, "h/ioscale.d/theirs")).unwrap(),
        b"keep"
    );
    // The marker rewritten by someone else: a swapped directory, refused.
    s3.client().connect(9).delete("h/ioscale.d/theirs").unwrap();
    s3.client()
        .connect(9)
        .put("h/ioscale.d/.ioscale-dir", b"other")
        .unwrap();
    let e = top.rmdir_at("ioscale.d", Some(d.id())).unwrap_err();
    assert!(e.to_string().contains("ioscale.d"), "{e}");
    assert!(top.open_dir_at("ioscale.d", Some(d.id())).is_err());
    // The lock is exclusive while held.
    let lock = match top.try_lock("lk", "test", Default::default()).unwrap() {
        Locked::Acquired(l) => l,
        Locked::Held { .. } => panic!("a free lock"),
    };
    assert!(matches!(
        top.try_lock("lk", "test", Default::default()).unwrap(),
        Locked::Held { .. }
    ));
    top.unlock(lock, "lk").unwrap();
    assert!(matches!(
        top.try_lock("lk", "t", Default::default()).unwrap(),
        Locked::Acquired(_)
    ));
    // Names that would leave the prefix are refused.
    for bad in ["..", "a/b", ""] {
        assert!(top.stat_at(bad).is_err(), "{bad:?}");
    }
    assert!(S3::open_beneath(&S3::at_of(&top).unwrap(), b"../x\0").is_err());
}

/// A read opened without the size known is GETs alone (the first one's
/// Content-Range gives the size: no HEAD before it), and a stat's
/// modification time is the store's Last-Modified, not (0, 0).
#[test]
fn reads_need_no_head_and_stat_gives_the_stores_time() {
    use objstore::testing::{Action, FaultProxy, Rule};
    if skip_without_server() {
        return;
    }
    let server = Server::start(&[BUCKET]).expect("s3s-fs starts");
    // Rules that forward at once, there to count HEADs and GETs.
    let proxy = FaultProxy::start(
        server.addr(),
        vec![
            Rule::new(Action::Delay(std::time::Duration::ZERO)).method("HEAD"),
            Rule::new(Action::Delay(std::time::Duration::ZERO))
                .method("GET")
                .path_contains("/r/obj"),
        ],
    )
    .unwrap();
    let mut settings = server.settings();
    settings.endpoint = proxy.endpoint();
    let client = Client::new(&settings, BUCKET, RetryPolicy::default()).unwrap();
    let body: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    client.connect(9).put("r/obj", &body).unwrap();
    client.connect(9).put("r/empty", b"").unwrap();
    let s3 = S3::new(client);
    let at = S3::at_of(&s3.open_target(Path::new("s3://bkt/r")).unwrap()).unwrap();
    let how = crate::backend::OpenHow {
        read: true,
        ..Default::default()
    };
    let mut f = S3::open(&at, b"obj\0", how, 0).unwrap();
    let (mut got, mut buf) = (Vec::new(), [0u8; 256]);
    loop {
        match f.read(&mut buf).unwrap() {
            0 => break,
            n => got.extend_from_slice(&buf[..n]),
        }
    }
    f.close().unwrap();
    assert_eq!(got, body);
    // 4 ranged GETs of 256 bytes (the last one short); no HEAD, and the
    // end found from the size, not by a fifth GET.
    assert_eq!(proxy.stats().picked, vec![0, 4]);
    // A read past the end of an object of unknown size reads nothing.
    let g = S3::open(&at, b"obj\0", how, 0).unwrap();
    assert_eq!(g.read_at(&mut buf, 1000).unwrap(), 0);
    assert_eq!(g.read_at(&mut buf, 5000).unwrap(), 0);
    let empty = S3::open(&at, b"empty\0", how, 0).unwrap();
    assert_eq!(empty.read_at(&mut buf, 0).unwrap(), 0);
    let missing = S3::open(&at, b"none\0", how, 0).unwrap();
    let e = missing.read_at(&mut buf, 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");

    let st = S3::stat(&at, b"obj\0").unwrap();
    assert_eq!((st.kind, st.size), (Kind::File, 1000));
    let on_disk = std::fs::metadata(server.object_path(BUCKET, "r/obj")).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(st.modified, (on_disk.mtime(), 0));
}
