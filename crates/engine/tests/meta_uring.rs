//! The io_uring metadata engine on real file systems: the same results as
//! the synchronous engine on tmpfs and ext4, every opcode's error path
//! (ENOSPC from a small tmpfs, EIO from the fault FUSE fs), short
//! completions finished by continuation chains, and a clean stop with
//! requests in flight.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{count_files, make_root, run_phase, Scratch, TestFs, Tmpfs};
use engine::meta::MetaSample;
use engine::registry::MetaEngineConfig;
use spec::{FileSize, MetaOp, MetaSpec, RawMeta, TreeState};

fn uring(depth: u32) -> MetaEngineConfig {
    MetaEngineConfig {
        engine: "io_uring",
        iodepth: depth,
    }
}

fn raw(target: &Path, threads: u64, files: u64, size: u64) -> RawMeta {
    RawMeta {
        target: Some(target.to_path_buf()),
        ops: vec![MetaOp::Create],
        threads: Some(threads),
        files: Some(files),
        file_size: Some(FileSize::Fixed { bytes: size }),
        ..Default::default()
    }
}

fn no_stop() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}

fn total(samples: &[MetaSample]) -> (u64, u64) {
    (
        samples.iter().map(|s| s.files).sum(),
        samples.iter().map(|s| s.errors).sum(),
    )
}

fn failure(samples: &[MetaSample]) -> &engine::IoFailure {
    samples
        .iter()
        .find_map(|s| s.failure.as_ref())
        .expect("a failure was recorded")
}

/// Every phase the engine runs, with --verify, over several hashed
/// directories, multi-record files: counts match and the data reads back.
fn full_cycle(dir: &Path) {
    let mut r = raw(dir, 2, 150, 10_000);
    r.record_size = Some(4096);
    r.verify = true;
    r.files_per_dir = Some(40);
    r.dirs_per_dir = Some(4);
    let spec: MetaSpec = r.build().unwrap();
    let root = make_root(&spec);
    let want = 2 * 150;
    let mut state = TreeState::default();
    let ops = [
        MetaOp::Create,
        MetaOp::Stat,
        MetaOp::Read,
        MetaOp::Overwrite,
        MetaOp::TruncateOverwrite,
        MetaOp::Read,
        MetaOp::Symlink,
        MetaOp::Rename,
        MetaOp::Stat,
        MetaOp::Delete,
        MetaOp::Mkdir,
        MetaOp::StatDir,
        MetaOp::Rmdir,
    ];
    for op in ops {
        let (s, _) = run_phase(&spec, &root, op, state, uring(16), no_stop());
        let (files, errors) = total(&s);
        if let Some(f) = s.iter().find_map(|s| s.failure.as_ref()) {
            panic!("{op:?}: {f}");
        }
        assert_eq!((files, errors), (want, 0), "{op:?}");
        match op {
            MetaOp::Create => {
                assert_eq!(count_files(&root), want);
                let bytes: u64 = s.iter().map(|s| s.write_bytes).sum();
                assert_eq!(bytes, want * 10_000);
                // Three records per file (4096 + 4096 + 1808).
                assert_eq!(s.iter().map(|s| s.records).sum::<u64>(), want * 3);
            }
            MetaOp::Read => {
                assert_eq!(
                    s.iter().map(|s| s.checked_bytes).sum::<u64>(),
                    want * 10_000
                );
                assert_eq!(s.iter().map(|s| s.bad_bytes).sum::<u64>(), 0);
            }
            MetaOp::Delete => assert_eq!(count_files(&root), 0),
            _ => {}
        }
        state = state.after(op).unwrap();
        if matches!(
            op,
            MetaOp::Create | MetaOp::Overwrite | MetaOp::TruncateOverwrite
        ) {
            state.pattern = Some(spec.seed);
        }
    }
    // The symlinks are left (the engine has no cleanup of its own).
    let links = std::fs::read_dir(root.join("thr.000")).unwrap().count();
    assert!(links > 0);
}

#[test]
fn full_cycle_on_tmpfs() {
    let t = Tmpfs::mount("cycle", "size=64m");
    full_cycle(&t.0);
}

#[test]
fn full_cycle_on_ext4() {
    // The repository's own file system (ext4 on this machine's disk).
    let s = Scratch::new(Path::new(env!("CARGO_TARGET_TMPDIR")), "cycle");
    full_cycle(&s.0);
}

#[test]
fn create_without_inodes_is_enospc_and_counts_what_was_made() {
    let t = Tmpfs::mount("inodes", "size=16m,nr_inodes=64");
    let spec = raw(&t.0, 1, 500, 0).build().unwrap();
    let root = make_root(&spec);
    let (s, _) = run_phase(
        &spec,
        &root,
        MetaOp::Create,
        TreeState::default(),
        uring(32),
        no_stop(),
    );
    let f = failure(&s);
    assert_eq!(f.op, "create");
    assert_eq!(f.errno, Some(libc::ENOSPC));
    assert!(
        f.message.contains("out of space or inodes"),
        "{}",
        f.message
    );
    // Every file the engine counted exists; in-flight creates that
    // succeeded after the failure are counted too.
    assert_eq!(s[0].files, count_files(&root));
    assert!(s[0].touched > s[0].files);
    // Nothing is held open: the tmpfs unmounts.
    drop(s);
    assert!(t.unmount(), "tmpfs busy after the failed phase");
}

#[test]
fn write_into_full_tmpfs_is_enospc() {
    let t = Tmpfs::mount("full", "size=512k");
    let mut r = raw(&t.0, 1, 64, 64 << 10);
    r.record_size = Some(16 << 10);
    let spec = r.build().unwrap();
    let root = make_root(&spec);
    let (s, _) = run_phase(
        &spec,
        &root,
        MetaOp::Create,
        TreeState::default(),
        uring(8),
        no_stop(),
    );
    let f = failure(&s);
    assert_eq!(f.op, "write", "{f}");
    assert_eq!(f.errno, Some(libc::ENOSPC), "{f}");
    assert!(f.offset.is_some());
    assert!(s[0].files < 64);
    assert!(
        t.unmount(),
        "tmpfs busy after the failed phase: a file was left open"
    );
}

#[test]
fn eio_from_the_fault_fs_names_write_and_read() {
    // Writes: the data requests after the first 10 fail.
    let fs = TestFs::mount("eio-w", &["--eio-after-ops", "10"]);
    let spec = raw(&fs.mnt, 1, 40, 4096).build().unwrap();
    let root = make_root(&spec);
    let (s, _) = run_phase(
        &spec,
        &root,
        MetaOp::Create,
        TreeState::default(),
        uring(8),
        no_stop(),
    );
    let f = failure(&s);
    assert_eq!((f.op.as_str(), f.errno), ("write", Some(libc::EIO)), "{f}");
    assert_eq!(f.offset, Some(0));
    assert!(s[0].files >= 10 && s[0].files < 40, "{}", s[0].files);
    drop(fs);

    // Reads: 20 files written, then the reads after the 25th request fail.
    let fs = TestFs::mount("eio-r", &["--eio-after-ops", "25"]);
    let spec = raw(&fs.mnt, 1, 20, 4096).build().unwrap();
    let root = make_root(&spec);
    let (s, _) = run_phase(
        &spec,
        &root,
        MetaOp::Create,
        TreeState::default(),
        MetaEngineConfig::default(),
        no_stop(),
    );
    assert_eq!(total(&s), (20, 0));
    let st = TreeState::default().after(MetaOp::Create).unwrap();
    let (s, _) = run_phase(&spec, &root, MetaOp::Read, st, uring(8), no_stop());
    let f = failure(&s);
    assert_eq!((f.op.as_str(), f.errno), ("read", Some(libc::EIO)), "{f}");
    assert!(
        f.path.to_string_lossy().contains("ioscale-meta.d/thr.000/"),
        "{f}"
    );
}

#[test]
fn missing_entries_fail_stat_unlink_rename_rmdir_with_enoent() {
    let t = Tmpfs::mount("enoent", "size=16m");
    let spec = raw(&t.0, 1, 20, 0).build().unwrap();
    let root = make_root(&spec);
    let full = TreeState::default().after(MetaOp::Create).unwrap();
    for (op, call) in [
        (MetaOp::Stat, "stat"),
        (MetaOp::Delete, "unlink"),
        (MetaOp::Rename, "rename"),
        (MetaOp::Read, "open"),
        (MetaOp::Overwrite, "open"),
    ] {
        let (s, _) = run_phase(&spec, &root, op, full, uring(8), no_stop());
        let f = failure(&s);
        assert_eq!(f.op, call, "{op:?}: {f}");
        assert_eq!(f.errno, Some(libc::ENOENT), "{op:?}: {f}");
    }
    // Symlinks may dangle: the first pass makes them, the second finds
    // them there (EEXIST, on the link's name).
    let (s, _) = run_phase(&spec, &root, MetaOp::Symlink, full, uring(8), no_stop());
    assert_eq!(total(&s), (20, 0));
    let (s, _) = run_phase(&spec, &root, MetaOp::Symlink, full, uring(8), no_stop());
    let f = failure(&s);
    assert_eq!(
        (f.op.as_str(), f.errno),
        ("symlink", Some(libc::EEXIST)),
        "{f}"
    );
    assert!(f.path.to_string_lossy().contains("/l"), "{f}");
    let dirs = TreeState {
        dirs: true,
        ..Default::default()
    };
    for (op, call) in [(MetaOp::Rmdir, "rmdir"), (MetaOp::StatDir, "stat")] {
        let (s, _) = run_phase(&spec, &root, op, dirs, uring(8), no_stop());
        let f = failure(&s);
        assert_eq!(
            (f.op.as_str(), f.errno),
            (call, Some(libc::ENOENT)),
            "{op:?}: {f}"
        );
    }
    // mkdir over existing directories: EEXIST.
    let (s, _) = run_phase(
        &spec,
        &root,
        MetaOp::Mkdir,
        TreeState::default(),
        uring(8),
        no_stop(),
    );
    assert_eq!(total(&s), (20, 0));
    let (s, _) = run_phase(
        &spec,
        &root,
        MetaOp::Mkdir,
        TreeState::default(),
        uring(8),
        no_stop(),
    );
    let f = failure(&s);
    assert_eq!(
        (f.op.as_str(), f.errno),
        ("mkdir", Some(libc::EEXIST)),
        "{f}"
    );
    // create over existing files: EEXIST, and the chain's write and close
    // are cancelled (the file keeps its size 0).
    let (s, _) = run_phase(
        &spec,
        &root,
        MetaOp::Create,
        TreeState::default(),
        uring(8),
        no_stop(),
    );
    assert_eq!(total(&s), (20, 0));
    let mut r = raw(&t.0, 1, 20, 4096);
    r.ops = vec![MetaOp::Create];
    let spec4 = r.build().unwrap();
    let (s, _) = run_phase(
        &spec4,
        &root,
        MetaOp::Create,
        TreeState::default(),
        uring(8),
        no_stop(),
    );
    let f = failure(&s);
    assert_eq!(
        (f.op.as_str(), f.errno),
        ("create", Some(libc::EEXIST)),
        "{f}"
    );
    assert_eq!(s[0].write_bytes, 0);
}

#[test]
fn short_writes_are_continued() {
    // Each write is served at most half: the engine must issue
    // continuation chains until the file is whole.
    let fs = TestFs::mount("short", &["--short-writes"]);
    let mut r = raw(&fs.mnt, 1, 12, 20_000);
    r.record_size = Some(8192);
    r.verify = true;
    let spec = r.build().unwrap();
    let root = make_root(&spec);
    let (s, _) = run_phase(
        &spec,
        &root,
        MetaOp::Create,
        TreeState::default(),
        uring(4),
        no_stop(),
    );
    if let Some(f) = s[0].failure.as_ref() {
        panic!("{f}");
    }
    assert_eq!(s[0].files, 12);
    assert_eq!(s[0].write_bytes, 12 * 20_000);
    assert!(
        s[0].records > 12 * 3,
        "short writes must have been continued"
    );
    for e in std::fs::read_dir(root.join("thr.000")).unwrap() {
        assert_eq!(e.unwrap().metadata().unwrap().len(), 20_000);
    }
    // The synchronous engine reads every byte back as written.
    let mut st = TreeState::default().after(MetaOp::Create).unwrap();
    st.pattern = Some(spec.seed);
    let (s, _) = run_phase(
        &spec,
        &root,
        MetaOp::Read,
        st,
        MetaEngineConfig::default(),
        no_stop(),
    );
    assert_eq!((s[0].checked_bytes, s[0].bad_bytes), (12 * 20_000, 0));
}

#[test]
fn short_reads_of_truncated_files_count_missing_bytes() {
    // A file cut short after it was written: the read chain comes back
    // short, the continuation meets end of file, and --verify counts the
    // missing bytes as bad (as the synchronous engine does).
    let t = Tmpfs::mount("shortread", "size=16m");
    let mut r = raw(&t.0, 1, 10, 10_000);
    r.verify = true;
    let spec = r.build().unwrap();
    let root = make_root(&spec);
    let (s, _) = run_phase(
        &spec,
        &root,
        MetaOp::Create,
        TreeState::default(),
        uring(4),
        no_stop(),
    );
    assert_eq!(total(&s), (10, 0));
    let victim = std::fs::read_dir(root.join("thr.000"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&victim)
        .unwrap()
        .set_len(3000)
        .unwrap();
    let mut st = TreeState::default().after(MetaOp::Create).unwrap();
    st.pattern = Some(spec.seed);
    let (s, _) = run_phase(&spec, &root, MetaOp::Read, st, uring(4), no_stop());
    assert_eq!(total(&s), (10, 0));
    assert_eq!(s[0].read_bytes, 9 * 10_000 + 3000);
    assert_eq!(s[0].bad_bytes, 7000);
    assert_eq!(s[0].mismatches.len(), 1);
    assert_eq!(s[0].mismatches[0].0, victim);
    assert_eq!(s[0].mismatches[0].1, 3000);
}

#[test]
fn stop_with_requests_in_flight_drains_and_counts_them() {
    // 2 ms per metadata request: 32 creates in flight at any moment.
    let fs = TestFs::mount("stop", &["--meta-delay", "2ms", "--threads", "64"]);
    let spec = raw(&fs.mnt, 1, 100_000, 0).build().unwrap();
    let root = make_root(&spec);
    let stop = no_stop();
    let s2 = stop.clone();
    // Stops once more than a queue's worth of files exists (not after a
    // fixed time: on a loaded machine the first 32 took over 300 ms).
    let mnt = fs.mnt.clone();
    let stopper = std::thread::spawn(move || {
        let t0 = std::time::Instant::now();
        while count_files(&mnt) < 64 && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(5));
        }
        s2.store(true, Ordering::Relaxed);
    });
    let (s, _) = run_phase(
        &spec,
        &root,
        MetaOp::Create,
        TreeState::default(),
        uring(32),
        stop,
    );
    stopper.join().unwrap();
    assert!(s[0].failure.is_none());
    assert!(s[0].files > 32 && s[0].files < 100_000, "{}", s[0].files);
    // Every request that was in flight at the stop completed and was
    // counted: the files on disk are exactly the ones counted, and
    // cleanup (which covers `touched`) reaches them all.
    assert_eq!(count_files(&fs.mnt), s[0].files);
    assert_eq!(s[0].touched, s[0].files);
}
