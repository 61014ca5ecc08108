//! The stonewall wear-out and the item counts a cut-short write carries to
//! the phases after it, on a real file system: every worker of a
//! time-limited write goes on to the busiest worker's count; a later run
//! of the same files, given those counts, reads (stats, removes) exactly
//! what was written and nothing is laid out again.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use bench::plan::{Plan, Work};
use bench::run::{Options, Outcome};
use spec::{FileNaming, Layout, MetaNaming, MetaOp, Op, RawMeta, RawWorkload};

fn opts() -> Options {
    Options {
        share_items: true,
        ..Default::default()
    }
}

fn stop() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}

/// A write far larger than 300 ms allows, stopped there and worn out.
fn cut_short_write(dir: &Path, wearout: bool) -> RawWorkload {
    RawWorkload {
        target: Some(dir.to_path_buf()),
        ops: vec![Op::Write],
        threads: Some(3),
        layout: Some(Layout::PerThread),
        xfer: Some(4096),
        block: Some(1 << 40),
        time_limit: Some(Duration::from_millis(300)),
        wearout,
        verify: true,
        keep: true,
        naming: Some(FileNaming::Ior {
            path: dir.join("data"),
        }),
        ..Default::default()
    }
}

/// One step of `work` on the executor, with [`opts`].
fn exec(work: impl Into<Work>) -> Result<Outcome, bench::Error> {
    let plan = Plan::single(work).with_options(opts());
    bench::exec::execute(
        &plan,
        bench::exec::Env::new(Vec::new(), stop(), &coord::Solo),
    )
    .map(bench::exec::Executed::into_single)
}

fn run(spec: &RawWorkload) -> Outcome {
    let spec = spec.build().expect("a valid spec");
    exec(spec).expect("the run")
}

#[test]
fn a_worn_out_write_leaves_every_worker_the_busiest_count_and_the_read_reads_just_that() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&cut_short_write(dir.path(), true));
    assert_eq!(out.exit_code(), 0, "{:?}", out.results.errors);
    let p = &out.results.phases[0];
    assert!(p.time_limited, "the limit ended the write");
    let counts = &out.items[0];
    assert_eq!(counts.len(), 3);
    assert!(
        counts.iter().all(|&c| c == counts[0] && c > 0),
        "{counts:?}"
    );
    // The stonewall figure is the work done by the limit: at most all.
    assert!(p.stonewall.bytes <= p.bytes, "{:?}", p.stonewall);
    for (w, row) in p.workers.iter().enumerate() {
        assert_eq!(row.ops, counts[w]);
        let f = dir.path().join(format!("data.{w:08}"));
        assert_eq!(std::fs::metadata(f).unwrap().len(), counts[w] * 4096);
    }
    // The read, told what exists: those transfers, checked, no layout.
    let mut read = cut_short_write(dir.path(), false);
    read.ops = vec![Op::Read];
    read.time_limit = None;
    read.reorder = Some(1);
    read.item_counts = counts.clone();
    read.keep = false;
    let out = run(&read);
    assert_eq!(out.exit_code(), 0, "{:?}", out.results.errors);
    let r = &out.results.phases[0];
    assert_eq!(r.ops, counts.iter().sum::<u64>());
    assert_eq!(r.verify.as_ref().unwrap().bad_bytes, 0);
    assert!(
        !out.results.warnings.iter().any(|w| w.contains("laid out")),
        "{:?}",
        out.results.warnings
    );
    assert_eq!(out.items[0], *counts);
}

#[test]
fn without_the_wear_out_the_limit_leaves_what_each_worker_did() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&cut_short_write(dir.path(), false));
    assert_eq!(out.exit_code(), 0);
    let p = &out.results.phases[0];
    assert!(p.time_limited);
    // Each worker stopped where the limit found it: the record's rows
    // and the shared counts agree, whatever they are.
    let rows: Vec<u64> = p.workers.iter().map(|r| r.ops).collect();
    assert_eq!(rows, out.items[0]);
}

#[test]
fn the_wear_out_needs_a_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = cut_short_write(dir.path(), true);
    r.time_limit = None;
    let e = r.build().unwrap_err();
    assert!(e.to_string().contains("wear-out"), "{e}");
    assert_eq!(e.flags(), ["--time"]);
}

/// mdtest's tree: creates stopped at the limit and worn out, each thread's
/// files under mdtest's names; the stat of the neighbour's files and the
/// delete, given the counts, handle exactly those.
#[test]
fn mdtest_named_creates_wear_out_and_the_later_phases_take_their_counts() {
    let dir = tempfile::tempdir().unwrap();
    let meta = |ops: Vec<MetaOp>, counts: Vec<u64>| RawMeta {
        target: Some(dir.path().to_path_buf()),
        ops,
        threads: Some(3),
        files: Some(100_000_000),
        file_size: Some(spec::FileSize::Fixed { bytes: 0 }),
        time_limit: Some(Duration::from_millis(300)),
        wearout: counts.is_empty(),
        item_counts: counts,
        stride: Some(1),
        keep: true,
        naming: Some(MetaNaming::Mdtest),
        ..Default::default()
    };
    let run_meta = |r: RawMeta| {
        let spec = r.build().expect("a valid spec");
        exec(spec).expect("the run")
    };
    let out = run_meta(meta(vec![MetaOp::Create], Vec::new()));
    assert_eq!(out.exit_code(), 0, "{:?}", out.results.errors);
    let counts = out.items[0].clone();
    assert!(
        counts.iter().all(|&c| c == counts[0] && c > 0),
        "{counts:?}"
    );
    let top = dir.path().join("test-dir.0-0");
    for (w, &c) in counts.iter().enumerate() {
        let d = top.join(format!("mdtest_tree.{w}.0"));
        let mut names: Vec<String> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        let mut want: Vec<String> = (0..c).map(|i| format!("file.mdtest.{w}.{i}")).collect();
        want.sort();
        assert_eq!(names, want, "thread {w}");
    }
    let mut stat = meta(vec![MetaOp::Stat], counts.clone());
    stat.time_limit = None;
    let out = run_meta(stat);
    assert_eq!(out.exit_code(), 0, "{:?}", out.results.errors);
    assert_eq!(out.results.phases[0].ops, counts.iter().sum::<u64>());
    let mut del = meta(vec![MetaOp::Delete], counts.clone());
    del.time_limit = None;
    del.keep = false;
    let out = run_meta(del);
    assert_eq!(out.exit_code(), 0, "{:?}", out.results.errors);
    assert_eq!(out.results.phases[0].ops, counts.iter().sum::<u64>());
    assert!(!top.exists(), "the tree is gone with its last phase");
}

/// `ioscale clean` recognises a tree with mdtest's names by its marker,
/// and leaves a real mdtest's directory (no marker) alone.
#[test]
fn clean_removes_an_mdtest_named_tree_and_leaves_a_foreign_one() {
    let dir = tempfile::tempdir().unwrap();
    let spec = RawMeta {
        target: Some(dir.path().to_path_buf()),
        ops: vec![MetaOp::Create],
        threads: Some(2),
        files: Some(10),
        file_size: Some(spec::FileSize::Fixed { bytes: 0 }),
        keep: true,
        naming: Some(MetaNaming::Mdtest),
        ..Default::default()
    }
    .build()
    .unwrap();
    let out = exec(spec).unwrap();
    assert_eq!(out.exit_code(), 0);
    let rep = bench::dataset::clean_all(dir.path(), Default::default()).unwrap();
    assert_eq!(rep.cleaned.len(), 1, "{:?}", rep.refused);
    assert!(rep.cleaned[0].left.is_empty(), "{:?}", rep.cleaned[0].left);
    assert!(!dir.path().join("test-dir.0-0").exists());
    // A real mdtest's directory: no marker, not ioscale's.
    let real = dir.path().join("test-dir.0-0/mdtest_tree.0.0");
    std::fs::create_dir_all(&real).unwrap();
    std::fs::write(real.join("file.mdtest.0.0"), b"").unwrap();
    assert!(bench::dataset::clean_all(dir.path(), Default::default()).is_err());
    assert!(real.join("file.mdtest.0.0").exists());
}

/// mdtest's `-e N`: a read phase reads N bytes of each file, checked,
/// whatever the file holds beyond them.
#[test]
fn a_read_of_a_fixed_size_reads_that_many_bytes_of_each_file() {
    let dir = tempfile::tempdir().unwrap();
    let meta = |ops: Vec<MetaOp>, read_bytes: Option<u64>| {
        RawMeta {
            target: Some(dir.path().to_path_buf()),
            ops,
            threads: Some(2),
            files: Some(50),
            file_size: Some(spec::FileSize::Fixed { bytes: 3901 }),
            record_size: Some(3901),
            same_dir: true,
            verify: true,
            keep: true,
            read_bytes,
            naming: Some(MetaNaming::Mdtest),
            ..Default::default()
        }
        .build()
        .unwrap()
    };
    let go = |s: &spec::MetaSpec| {
        let out = exec(s.clone()).unwrap();
        assert_eq!(out.exit_code(), 0, "{:?}", out.results.errors);
        out.results.phases[0].clone()
    };
    go(&meta(vec![MetaOp::Create], None));
    for (n, bytes) in [(Some(3901), 3901u64), (Some(1000), 1000), (None, 3901)] {
        let p = go(&meta(vec![MetaOp::Read], n));
        assert_eq!(p.read_bytes, 100 * bytes, "{n:?}");
        assert_eq!(p.files.as_ref().unwrap().records, 100, "one read a file");
        let v = p.verify.unwrap();
        assert_eq!((v.checked_bytes, v.bad_bytes), (100 * bytes, 0));
    }
}
