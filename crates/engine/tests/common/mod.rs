//! A small local driver for the engine's tests and examples: lays out the
//! root and thread directories, runs one metadata phase on T threads with
//! a start barrier, and returns the samples. (The real driver, with
//! markers, teardown and reduction, lives above the engine.)
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};

use engine::meta::{run_meta_worker_with, MetaPlan, MetaSample};
use engine::registry::MetaEngineConfig;
use engine::PhaseControl;
use spec::{MetaOp, MetaSpec, RawMeta, TreeState};

/// A metadata spec over `target` with `threads` × `files` of `size` bytes.
pub fn meta_spec(target: &Path, threads: u64, files: u64, size: u64, ops: &[MetaOp]) -> MetaSpec {
    let raw = RawMeta {
        target: Some(target.to_path_buf()),
        ops: ops.to_vec(),
        threads: Some(threads),
        files: Some(files),
        file_size: Some(spec::FileSize::Fixed { bytes: size }),
        ..Default::default()
    };
    raw.build().expect("valid spec")
}

/// The working root, created with its thread directories.
pub fn make_root(spec: &MetaSpec) -> PathBuf {
    let root = spec.target.join("ioscale-meta.d");
    std::fs::create_dir_all(&root).unwrap();
    for w in 0..spec.threads {
        if let Some(d) = spec.thread_dir(w) {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
    }
    root
}

/// Runs `op` on every thread of `spec` with `cfg`; `stop` may be set from
/// outside. Returns the samples and the phase's wall time in seconds.
pub fn run_phase(
    spec: &MetaSpec,
    root: &Path,
    op: MetaOp,
    state: TreeState,
    cfg: MetaEngineConfig,
    stop: Arc<AtomicBool>,
) -> (Vec<MetaSample>, f64) {
    let plan = MetaPlan {
        spec,
        op,
        root: root.to_path_buf(),
        rep: 0,
        state,
        limit: None,
        timed: true,
    };
    let ctl = PhaseControl::new(stop);
    let barrier = Barrier::new(spec.threads as usize);
    let samples: Vec<MetaSample> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..spec.threads)
            .map(|w| {
                let (plan, ctl, barrier) = (&plan, &ctl, &barrier);
                sc.spawn(move || run_meta_worker_with(w, plan, &cfg, ctl, barrier))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let start = samples.iter().map(|s| s.start_ns).min().unwrap_or(0);
    let end = samples.iter().map(|s| s.end_ns).max().unwrap_or(0);
    (samples, (end - start) as f64 / 1e9)
}

/// A scratch directory under `base` removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(base: &Path, tag: &str) -> Scratch {
        let p = base.join(format!("ioscale-engine-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
