//! The data set and the metadata tree are backend-agnostic: prepared,
//! used by the engine's loops, kept, read again, cleaned and removed on
//! the in-memory test double ([`engine::backend::mem`], a test double, not
//! a file system ioscale offers), with no path of theirs reached but
//! through the backend; a backend that lacks what a workload needs refuses
//! it before anything is made.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};

use engine::backend::mem::{Mem, MemObjects};
use engine::backend::{Backend, Dir};
use engine::meta::MetaPlan;
use engine::runner::{run_meta_worker, run_worker, Prepared};
use engine::{PhaseControl, PhasePlan};
use spec::{Layout, MetaOp, Op, SyncMode, TreeState, WorkloadSpec};

use super::{clean_all_on, tree, DataSet, Error};

fn data_spec(ops: &[Op], layout: Layout, keep: bool) -> WorkloadSpec {
    spec::RawWorkload {
        target: Some("/t".into()),
        ops: ops.to_vec(),
        threads: Some(2),
        layout: Some(layout),
        size: Some(64 << 10),
        xfer: Some(4096),
        verify: true,
        keep,
        ..Default::default()
    }
    .build()
    .expect("a valid spec")
}

/// One data phase of `spec` on the set's anchors, as the executor runs it.
fn data_phase<B: engine::registry::Engines>(ds: &DataSet<B>, spec: &WorkloadSpec, op: Op) {
    let plan = PhasePlan::<B> {
        sync: SyncMode::End,
        reorder_offset: 0,
        time_limit: None,
        anchors: ds.anchors().unwrap(),
        ..PhasePlan::new(Arc::new(spec.clone()), spec.threads, op, ds.files.clone())
    };
    let ctl = PhaseControl::new(Arc::new(AtomicBool::new(false)));
    for w in 0..spec.threads {
        let prep = Prepared::<B>::new(&plan, w).unwrap();
        let (s, _) = run_worker(w, &plan, &ctl, &Barrier::new(1), prep);
        assert!(s.failure.is_none(), "{op:?}: {:?}", s.failure);
        assert_eq!(s.verify.bad_bytes, 0);
    }
}

#[test]
fn a_native_set_lives_and_goes_through_the_backend_only() {
    let mem = Mem::new();
    mem.mkdir_all(Path::new("/t"));
    let spec = data_spec(&[Op::Write, Op::Read], Layout::PerThreadDir, false);
    let mut ds = DataSet::prepare_on(mem.clone(), &spec, "run-1").unwrap();
    assert!(ds.created_root);
    let made = mem.entries();
    for e in [
        "/t/ioscale.d/",
        "/t/ioscale.d/.ioscale-marker",
        "/t/ioscale.d/.ioscale-marker.lock",
        "/t/ioscale.d/dir.00000000/",
        "/t/ioscale.d/dir.00000001/",
    ] {
        assert!(made.iter().any(|m| m == e), "{e} not made: {made:?}");
    }
    data_phase(&ds, &spec, Op::Write);
    ds.mark_complete("run-1", spec.file_size(), spec.seed, true);
    data_phase(&ds, &spec, Op::Read);
    let data = mem
        .read(Path::new("/t/ioscale.d/dir.00000001/file.00000001"))
        .unwrap();
    assert_eq!(data.len() as u64, spec.file_size());
    assert_eq!(ds.remove(), Vec::<String>::new());
    assert_eq!(mem.entries(), ["/t/"]);
}

#[test]
fn a_kept_set_is_read_again_cleaned_and_foreign_files_stay() {
    let mem = Mem::new();
    mem.mkdir_all(Path::new("/t"));
    let spec = data_spec(&[Op::Write], Layout::PerThread, true);
    let mut ds = DataSet::prepare_on(mem.clone(), &spec, "run-1").unwrap();
    data_phase(&ds, &spec, Op::Write);
    ds.mark_complete("run-1", spec.file_size(), spec.seed, true);
    assert!(ds.kept_note(&spec).is_some());
    drop(ds);
    // The lock went with the run; the set and its marker stay.
    assert!(!mem.entries().iter().any(|e| e.ends_with(".lock")));
    let read = data_spec(&[Op::Read], Layout::PerThread, false);
    let ds2 = DataSet::prepare_on(mem.clone(), &read, "run-2").unwrap();
    assert!(ds2.had_data);
    data_phase(&ds2, &read, Op::Read);
    // A second run on a set held by a live one is refused.
    let e = DataSet::prepare_on(mem.clone(), &read, "run-3").unwrap_err();
    assert!(matches!(e, Error::Refused(_)), "{e}");
    drop(ds2);
    // A foreign file in the working directory is left, and so is the
    // directory holding it; everything ioscale's goes.
    let root = mem.open_target(Path::new("/t/ioscale.d")).unwrap();
    let (f, _) = root.create_at("user.txt", 0o644).unwrap();
    drop(f);
    let rep = clean_all_on(&mem, Path::new("/t"), safefs::LockOptions::default()).unwrap();
    assert_eq!(rep.cleaned.len(), 1, "{:?}", rep.refused);
    assert!(
        rep.cleaned[0].left.iter().any(|l| l.contains("ioscale.d")),
        "{:?}",
        rep.cleaned[0].left
    );
    assert_eq!(
        mem.entries(),
        ["/t/", "/t/ioscale.d/", "/t/ioscale.d/user.txt"]
    );
}

#[test]
fn what_a_backend_lacks_is_refused_before_anything_is_made() {
    let objects = MemObjects::new();
    objects.mkdir_all(Path::new("/t"));
    // Two writers of one file: an object is written whole, by one writer.
    let shared = data_spec(&[Op::Write], Layout::Shared, false);
    let e = DataSet::prepare_on(objects.clone(), &shared, "r").unwrap_err();
    assert!(
        matches!(&e, Error::Usage(m) if m.starts_with("--op write: the mem-objects backend")),
        "{e}"
    );
    let random = data_spec(&[Op::Write, Op::Randwrite], Layout::PerThread, false);
    assert!(DataSet::prepare_on(objects.clone(), &random, "r").is_err());
    // The IOR front-end's and dd's names are the user's own paths.
    let mut ior = data_spec(&[Op::Write], Layout::PerThread, false);
    ior.naming = spec::FileNaming::Ior {
        path: "/t/ior.bin".into(),
    };
    assert!(DataSet::prepare_on(Mem::new(), &ior, "r").is_err());
    let meta = meta_spec(&[MetaOp::Create, MetaOp::Rename, MetaOp::Delete]);
    let e = tree::prepare_on(&objects, &meta, "r", &mut Vec::new())
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "--ops rename: the mem-objects backend has no atomic rename"
    );
    assert_eq!(objects.entries(), ["/t/"], "something was made");
    // What it does have runs: one writer per object, read back.
    let ok = data_spec(&[Op::Write, Op::Read], Layout::PerThread, false);
    let mut ds = DataSet::prepare_on(objects.clone(), &ok, "r").unwrap();
    data_phase(&ds, &ok, Op::Write);
    data_phase(&ds, &ok, Op::Read);
    assert!(ds.remove().is_empty());
    assert_eq!(objects.entries(), ["/t/"]);
}

fn meta_spec(ops: &[MetaOp]) -> spec::MetaSpec {
    spec::RawMeta {
        target: Some("/t".into()),
        ops: ops.to_vec(),
        threads: Some(2),
        files: Some(12),
        files_per_dir: Some(4),
        dirs_per_dir: Some(2),
        ..Default::default()
    }
    .build()
    .expect("a valid spec")
}

#[test]
fn a_metadata_tree_is_made_used_kept_and_torn_down_through_the_backend() {
    let mem = Mem::new();
    mem.mkdir_all(Path::new("/t"));
    let mut spec = meta_spec(&[MetaOp::Create, MetaOp::Stat]);
    spec.keep = true;
    let mut notes = Vec::new();
    let mut t = tree::prepare_on(&mem, &spec, "run-1", &mut notes).unwrap();
    let plan = MetaPlan::<Mem> {
        spec: &spec,
        op: MetaOp::Create,
        root: t.root.clone(),
        rep: 0,
        state: TreeState::default(),
        limit: None,
        timed: true,
        root_dir: t.root_dir(),
        kept_before: None,
        series: None,
    };
    let ctl = PhaseControl::new(Arc::new(AtomicBool::new(false)));
    for w in 0..spec.threads {
        let s = run_meta_worker(w, &plan, &ctl, &Barrier::new(1));
        assert!(s.failure.is_none(), "{:?}", s.failure);
    }
    t.marker.state = spec
        .state_after(TreeState::default(), MetaOp::Create)
        .unwrap();
    t.marker.extent = spec.files;
    tree::close(&spec, &mut t, false, &mut notes);
    drop(t);
    assert!(
        notes.iter().any(|n| n.starts_with("kept the tree")),
        "{notes:?}"
    );
    let kept = mem.entries();
    assert!(kept.iter().any(|e| e.ends_with("/f1.11")), "{kept:?}");
    // `clean` finds the kept tree by its marker and removes all of it.
    let rep = clean_all_on(&mem, Path::new("/t"), safefs::LockOptions::default()).unwrap();
    assert_eq!(rep.cleaned.len(), 1);
    assert!(rep.cleaned[0].left.is_empty(), "{:?}", rep.cleaned[0].left);
    assert_eq!(mem.entries(), ["/t/"]);
}

#[test]
fn a_file_put_under_a_kept_sets_name_stays_on_any_backend() {
    let mem = Mem::new();
    mem.mkdir_all(Path::new("/t"));
    let spec = data_spec(&[Op::Write], Layout::PerThread, true);
    let mut ds = DataSet::prepare_on(mem.clone(), &spec, "run-1").unwrap();
    data_phase(&ds, &spec, Op::Write);
    ds.mark_complete("run-1", spec.file_size(), spec.seed, true);
    drop(ds);
    // The user replaces one of ioscale's files with one of their own.
    let root = mem.open_target(Path::new("/t/ioscale.d")).unwrap();
    root.unlink_at("file.00000000", None).unwrap();
    let (f, _) = root.create_at("file.00000000", 0o644).unwrap();
    drop(f);
    let rep = clean_all_on(&mem, Path::new("/t"), safefs::LockOptions::default()).unwrap();
    let left = &rep.cleaned[0].left;
    assert!(
        left.iter()
            .any(|l| l.contains("file.00000000: not the file ioscale left there")),
        "{left:?}"
    );
    // ioscale's other file went; the user's and the marker (so `clean`
    // can finish once the user's file is dealt with) stay.
    assert_eq!(
        mem.entries(),
        [
            "/t/",
            "/t/ioscale.d/",
            "/t/ioscale.d/.ioscale-marker",
            "/t/ioscale.d/file.00000000"
        ]
    );
}

#[test]
fn an_entry_put_under_a_kept_trees_name_stays_on_any_backend() {
    let mem = Mem::new();
    mem.mkdir_all(Path::new("/t"));
    let mut spec = meta_spec(&[MetaOp::Create]);
    spec.keep = true;
    let mut notes = Vec::new();
    let mut t = tree::prepare_on(&mem, &spec, "run-1", &mut notes).unwrap();
    let plan = MetaPlan::<Mem> {
        spec: &spec,
        op: MetaOp::Create,
        root: t.root.clone(),
        rep: 0,
        state: TreeState::default(),
        limit: None,
        timed: true,
        root_dir: t.root_dir(),
        kept_before: None,
        series: None,
    };
    let ctl = PhaseControl::new(Arc::new(AtomicBool::new(false)));
    for w in 0..spec.threads {
        let s = run_meta_worker(w, &plan, &ctl, &Barrier::new(1));
        assert!(s.failure.is_none(), "{:?}", s.failure);
    }
    t.marker.state = spec
        .state_after(TreeState::default(), MetaOp::Create)
        .unwrap();
    t.marker.extent = spec.files;
    tree::close(&spec, &mut t, false, &mut notes);
    drop(t);
    // After the tree was kept, the user puts a file of their own under
    // the name of one of ioscale's.
    let thr = mem
        .open_target(Path::new("/t/ioscale-meta.d/thr.000"))
        .unwrap();
    thr.unlink_at("f0.0", None).unwrap();
    let (f, _) = thr.create_at("f0.0", 0o644).unwrap();
    drop(f);
    let rep = clean_all_on(&mem, Path::new("/t"), safefs::LockOptions::default()).unwrap();
    let left = &rep.cleaned[0].left;
    assert!(
        left.iter().any(|l| l.contains("thr.000/f0.0 and 0 more")),
        "{left:?}"
    );
    let kept = mem.entries();
    assert!(
        kept.iter().any(|e| e.ends_with("/thr.000/f0.0")),
        "{kept:?}"
    );
    // Every entry of ioscale's went.
    assert!(!kept.iter().any(|e| e.ends_with("/f0.1")), "{kept:?}");
    assert!(!kept.iter().any(|e| e.contains("thr.001")), "{kept:?}");
}
