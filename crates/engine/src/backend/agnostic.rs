//! The loops are backend-agnostic: the metadata loop, the data loop, the
//! engine tables and the tree removal run unchanged on the in-memory test
//! double ([`super::mem::Mem`], a test double, not a file system ioscale
//! offers), and every byte and entry they make is where the double says.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};

use spec::{Layout, MetaOp, MetaSpec, Op, SyncMode, TreeState};

use super::mem::Mem;
use super::{Backend, Dir};
use crate::meta::{remove_tree, MetaPlan, MetaSample};
use crate::registry::{self, MetaEngineConfig};
use crate::runner::{run_meta_worker_with, run_worker, Prepared};
use crate::series::SeriesGrid;
use crate::worker::{FileAnchor, PhaseControl, PhasePlan, WorkerSample};

const ROOT: &str = "/t/ioscale-meta.d";

fn meta_spec(ops: &[MetaOp]) -> MetaSpec {
    spec::RawMeta {
        target: Some("/t".into()),
        ops: ops.to_vec(),
        threads: Some(2),
        files: Some(30),
        file_size: Some(spec::FileSize::Fixed { bytes: 1000 }),
        record_size: Some(256),
        files_per_dir: Some(4),
        dirs_per_dir: Some(3),
        verify: true,
        ..Default::default()
    }
    .build()
    .expect("a valid spec")
}

/// One phase on every thread, one thread after the other.
fn phase(mem: &Mem, spec: &MetaSpec, op: MetaOp, state: TreeState) -> Vec<MetaSample> {
    let root = mem.open_target(Path::new(ROOT)).unwrap();
    let plan = MetaPlan::<Mem> {
        spec,
        op,
        root: PathBuf::from(ROOT),
        rep: 0,
        state,
        limit: None,
        timed: op != MetaOp::Cleanup,
        root_dir: Some(Arc::new(Mem::at_of(&root).unwrap())),
        kept_before: None,
        // Every phase records its series, checked against the counts.
        series: SeriesGrid::every(1_000_000),
    };
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
        .inspect(series_adds_up)
        .collect()
}

/// A thread's series holds what its counts do: every file, byte and
/// latency sample, each in one interval.
fn series_adds_up(s: &MetaSample) {
    let Some(series) = &s.series else {
        assert!(s.failure.is_some(), "a thread that ran has a series");
        return;
    };
    let t = series.total();
    assert_eq!(t.io.ops, s.files);
    assert_eq!(
        (t.io.read_bytes, t.io.write_bytes),
        (s.read_bytes, s.write_bytes)
    );
    assert_eq!(t.lat.count(), s.hist.count());
    assert_eq!(t.io.errors, s.errors);
}

/// Files (not directories) the store holds below the working root.
fn files_below(mem: &Mem) -> usize {
    mem.entries()
        .iter()
        .filter(|e| e.starts_with(ROOT) && !e.ends_with('/'))
        .count()
}

#[test]
fn the_metadata_loop_runs_every_operation_on_the_double() {
    let ops = [
        MetaOp::Create,
        MetaOp::Stat,
        MetaOp::Read,
        MetaOp::Append,
        MetaOp::Overwrite,
        MetaOp::TruncateOverwrite,
        MetaOp::Chmod,
        MetaOp::Setxattr,
        MetaOp::Getxattr,
        MetaOp::Symlink,
        MetaOp::Readdir,
        MetaOp::Rename,
        MetaOp::Read,
        MetaOp::Delete,
        MetaOp::Mkdir,
        MetaOp::StatDir,
        MetaOp::RenameDir,
        MetaOp::Rmdir,
    ];
    let spec = meta_spec(&ops);
    let mem = Mem::new();
    mem.mkdir_all(Path::new(ROOT));
    let root = mem.open_target(Path::new(ROOT)).unwrap();
    for w in 0..spec.threads {
        if let Some(d) = spec.thread_dir(w) {
            root.mkdir_at(d, 0o755).unwrap();
        }
    }
    let mut state = TreeState::default();
    for op in ops {
        let samples = phase(&mem, &spec, op, state);
        for s in &samples {
            assert!(s.failure.is_none(), "{op}: {:?}", s.failure);
            assert_eq!(s.errors, 0, "{op}");
            assert_eq!(s.bad_bytes, 0, "{op}: the data read back differs");
            if op != MetaOp::Readdir {
                assert_eq!(s.files, 30, "{op}");
            }
        }
        match op {
            MetaOp::Create => assert_eq!(files_below(&mem), 60),
            MetaOp::Read => {
                let checked: u64 = samples.iter().map(|s| s.checked_bytes).sum();
                assert!(checked >= 60 * 1000, "{checked} bytes checked");
            }
            MetaOp::Symlink => assert_eq!(files_below(&mem), 120),
            // Files and links, every one of them listed and stat'ed.
            MetaOp::Readdir => assert_eq!(samples.iter().map(|s| s.files).sum::<u64>(), 120),
            MetaOp::Delete => assert_eq!(files_below(&mem), 60, "the links are left"),
            _ => {}
        }
        state = spec.state_after(state, op).unwrap();
    }
    // The teardown: every entry the state allows, then the directories.
    let s = phase(&mem, &spec, MetaOp::Cleanup, state);
    assert!(s.iter().all(|s| s.failure.is_none() && s.left == 0));
    let at = Mem::at_of(&root).unwrap();
    for w in 0..spec.threads {
        let left = remove_tree::<Mem>(&spec, &at, Path::new(ROOT), w, 30);
        assert!(left.is_empty(), "{left:?}");
    }
    assert_eq!(mem.entries(), ["/t/", "/t/ioscale-meta.d/"]);
    // Every operation went through the backend's calls.
    let calls = mem.calls();
    for c in [
        "open", "write", "read", "close", "stat", "chmod", "setxattr", "getxattr", "symlink",
        "rename", "unlink", "mkdir", "rmdir", "readdir",
    ] {
        assert!(
            calls.get(c).copied().unwrap_or(0) > 0,
            "no {c} call: {calls:?}"
        );
    }
}

fn data_plan(mem: &Mem, op: Op, dir: &Path) -> PhasePlan<Mem> {
    let held = mem.open_target(dir).unwrap();
    let at = Arc::new(Mem::at_of(&held).unwrap());
    let anchors = (0..2)
        .map(|i| {
            Some(FileAnchor::<Mem> {
                dir: Arc::clone(&at),
                name: std::ffi::CString::new(format!("file.{i:08}")).unwrap(),
            })
        })
        .collect();
    let spec = spec::RawWorkload {
        target: Some(dir.to_path_buf()),
        ops: vec![op],
        threads: Some(2),
        layout: Some(Layout::PerThread),
        xfer: Some(4096),
        block: Some(64 << 10),
        segments: Some(2),
        sync: Some(SyncMode::End),
        engine: Some("sync".into()),
        iodepth: Some(1),
        seed: Some(5),
        verify: true,
        ..Default::default()
    }
    .build()
    .expect("a valid workload");
    let files = (0..2).map(|i| dir.join(format!("file.{i:08}"))).collect();
    PhasePlan {
        anchors,
        series: SeriesGrid::every(1_000_000),
        ..PhasePlan::new(Arc::new(spec), 2, op, files)
    }
}

fn data_phase(plan: &PhasePlan<Mem>) -> Vec<WorkerSample> {
    let ctl = PhaseControl::new(Arc::new(AtomicBool::new(false)));
    (0..plan.workers)
        .map(|w| {
            let prep = Prepared::<Mem>::new(plan, w).unwrap();
            run_worker(w, plan, &ctl, &Barrier::new(1), prep).0
        })
        .collect()
}

#[test]
fn the_data_loop_writes_and_verifies_through_the_double() {
    let mem = Mem::new();
    let dir = Path::new("/d");
    mem.mkdir_all(dir);
    for op in [Op::Write, Op::Read, Op::Randread, Op::Randwrite, Op::Read] {
        let plan = data_plan(&mem, op, dir);
        for s in data_phase(&plan) {
            assert!(s.failure.is_none(), "{op:?}: {:?}", s.failure);
            assert_eq!(s.counters.bytes, 128 << 10, "{op:?}");
            let series = s.series.as_ref().expect("a series");
            assert_eq!(series.total().io, s.counters, "{op:?}");
            assert_eq!(series.total().lat.count(), s.hist.count(), "{op:?}");
            assert!(series.total().busy_ns > 0, "{op:?}");
            if op.reads() {
                assert_eq!(s.verify.checked_bytes, 128 << 10, "{op:?}");
                assert_eq!(s.verify.bad_bytes, 0, "{op:?}");
            }
        }
    }
    for i in 0..2 {
        let data = mem.read(&dir.join(format!("file.{i:08}"))).unwrap();
        assert_eq!(data.len(), 128 << 10);
    }
    assert!(mem.calls()["fsync"] >= 4, "the end-of-phase fsync");
    // A file missing under its anchor is a failure of that worker, named.
    let held = mem.open_target(dir).unwrap();
    held.unlink_at("file.00000001", None).unwrap();
    let s = data_phase(&data_plan(&mem, Op::Read, dir));
    let f = s[1].failure.as_ref().expect("the missing file fails");
    assert_eq!((f.op.as_str(), f.errno), ("open", Some(libc::ENOENT)));
}

#[test]
fn a_backend_has_its_own_engine_table() {
    // The io_uring engines submit the kernel's opcodes on descriptors:
    // POSIX's, not the double's.
    assert!(registry::data_engine_of::<Mem>("io_uring").is_err());
    assert!(registry::meta_engine_of::<Mem>("io_uring").is_err());
    assert!(registry::data_engine_of::<Mem>("sync").is_ok());
    assert!(registry::check_data_of::<super::posix::Posix>("io_uring", 32, true).is_ok());
    let e = registry::check_meta_of::<Mem>("io_uring", 8, &[MetaOp::Create]);
    assert!(e.err().unwrap().to_string().contains("unknown engine"));
}

#[test]
fn the_find_walk_runs_on_the_double_and_never_walks_a_link() {
    let mem = Mem::new();
    mem.mkdir_all(Path::new("/f/a/b"));
    let top = mem.open_target(Path::new("/f")).unwrap();
    let a = top.open_dir_at("a", None).unwrap();
    let b = a.open_dir_at("b", None).unwrap();
    for (d, name, len) in [
        (&top, "x01", 3),
        (&a, "y01", 3),
        (&b, "z01", 5),
        (&b, "q", 3),
    ] {
        let (f, _) = d.create_at(name, 0o644).unwrap();
        crate::backend::DataFile::write_at(&f, &vec![0u8; len], 0).unwrap();
    }
    // A link to a directory full of matches: examined as an entry, never
    // walked into.
    mem.mkdir_all(Path::new("/outside"));
    let out = mem.open_target(Path::new("/outside")).unwrap();
    for i in 0..20 {
        out.create_at(format!("f01.{i}"), 0o644).unwrap();
    }
    Mem::symlink(b"/outside\0", &Mem::at_of(&a).unwrap(), b"link01\0").unwrap();
    let spec = spec::RawFind {
        root: Some("/f".into()),
        name: Some("*01*".into()),
        size: Some(3),
        ..Default::default()
    }
    .build()
    .unwrap();
    for workers in [1u32, 3] {
        let plan = crate::find::FindPlan::<Mem> {
            spec: &spec,
            workers,
            root: Some(Arc::new(Mem::at_of(&top).unwrap())),
        };
        let ctl = PhaseControl::new(Arc::new(AtomicBool::new(false)));
        let all: Vec<MetaSample> = (0..workers)
            .map(|w| crate::find::run_find_worker(w, &plan, &ctl, &Barrier::new(1)))
            .collect();
        assert!(all.iter().all(|s| s.failure.is_none()), "{workers} workers");
        // x01, y01, z01, q and the link: five entries, each examined once.
        assert_eq!(all.iter().map(|s| s.files).sum::<u64>(), 5, "{workers}");
        // x01 and y01 (z01 is 5 bytes; the link's 8 bytes are not 3).
        assert_eq!(all.iter().map(|s| s.matched).sum::<u64>(), 2, "{workers}");
    }
}
