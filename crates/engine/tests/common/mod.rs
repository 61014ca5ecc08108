//! A small local driver for the engine's tests and examples: lays out the
//! root and thread directories, runs one metadata phase on T threads with
//! a start barrier, and returns the samples. (The real driver, with
//! markers, teardown and reduction, lives above the engine.)
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier};

use engine::meta::{MetaPlan, MetaSample};
use engine::registry::MetaEngineConfig;
use engine::runner::run_meta_worker_with;
use engine::PhaseControl;
use spec::{MetaOp, MetaSpec, RawMeta, TreeState};

/// A metadata spec over `target` with `threads` × `files` of `size` bytes.
pub fn meta_spec(target: &Path, threads: u64, files: u64, size: u64, ops: &[MetaOp]) -> MetaSpec {
    meta_raw(target, threads, files, size, ops)
        .build()
        .expect("valid spec")
}

/// The raw form of [`meta_spec`], to adjust before building.
pub fn meta_raw(target: &Path, threads: u64, files: u64, size: u64, ops: &[MetaOp]) -> RawMeta {
    RawMeta {
        target: Some(target.to_path_buf()),
        ops: ops.to_vec(),
        threads: Some(threads),
        files: Some(files),
        file_size: Some(spec::FileSize::Fixed { bytes: size }),
        ..Default::default()
    }
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
    let plan: MetaPlan = MetaPlan {
        spec,
        op,
        root: root.to_path_buf(),
        rep: 0,
        state,
        limit: None,
        timed: true,
        root_dir: None,
        kept_before: None,
        series: None,
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

/// A fresh tmpfs with mount options `opts` (e.g. `size=256k`,
/// `nr_inodes=64`), unmounted on drop. Needs root.
pub struct Tmpfs(pub PathBuf);

impl Tmpfs {
    pub fn mount(tag: &str, opts: &str) -> Tmpfs {
        let p = std::env::temp_dir().join(format!("ioscale-engine-{tag}-{}", std::process::id()));
        let _ = std::process::Command::new("umount").arg(&p).status();
        std::fs::create_dir_all(&p).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", opts, "tmpfs"])
            .arg(&p)
            .status()
            .unwrap()
            .success();
        assert!(
            ok,
            "mount -t tmpfs -o {opts} {} (these tests need root)",
            p.display()
        );
        Tmpfs(p)
    }

    /// Unmounts now; false if the file system is busy (a file still open).
    pub fn unmount(&self) -> bool {
        std::process::Command::new("umount")
            .arg(&self.0)
            .status()
            .unwrap()
            .success()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn testfs_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("IOSCALE_TESTFS") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/<test> → target/<profile>/ioscale-testfs
    let beside = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("ioscale-testfs");
    if beside.is_file() {
        return beside;
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testfs/Cargo.toml");
    let target_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/engine-testfs");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let ok = std::process::Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "--bin",
            "ioscale-testfs",
            "--manifest-path",
        ])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target_dir)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "building ioscale-testfs");
    target_dir.join("debug/ioscale-testfs")
}

fn fuse_mounted(mp: &Path) -> bool {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = mp.to_string_lossy();
    info.lines().any(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        f.len() > 4
            && f[4] == want
            && (l.contains(" - fuse ioscale-testfs ") || l.contains(" - fuse.ioscale-testfs "))
    })
}

/// A mounted `ioscale-testfs` (the fault-injecting FUSE file system) with
/// the given flags; stopped and unmounted on drop.
pub struct TestFs {
    child: Option<std::process::Child>,
    pub mnt: PathBuf,
    src: PathBuf,
}

impl TestFs {
    pub fn mount(tag: &str, flags: &[&str]) -> TestFs {
        let base = std::env::temp_dir();
        let id = format!("{tag}-{}", std::process::id());
        let src = base.join(format!("ioscale-engine-src-{id}"));
        let mnt = base.join(format!("ioscale-engine-mnt-{id}"));
        let _ = std::process::Command::new("umount").arg(&mnt).status();
        let _ = std::fs::remove_dir_all(&src);
        std::fs::create_dir_all(&src).unwrap();
        std::fs::create_dir_all(&mnt).unwrap();
        let child = std::process::Command::new(testfs_bin())
            .args(flags)
            .args(["-q", "--no-auto-unmount"])
            .arg(&src)
            .arg(&mnt)
            .stdin(std::process::Stdio::null())
            .spawn()
            .expect("starting ioscale-testfs");
        let mut fs = TestFs {
            child: Some(child),
            mnt,
            src,
        };
        let t0 = std::time::Instant::now();
        while !fuse_mounted(&fs.mnt) {
            if let Some(st) = fs.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("ioscale-testfs exited ({st}) before mounting");
            }
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(20),
                "ioscale-testfs did not mount within 20 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        fs
    }
}

impl Drop for TestFs {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: signalling our own child by its pid.
            unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
            let _ = c.wait();
        }
        let _ = std::process::Command::new("umount").arg(&self.mnt).status();
        let _ = std::fs::remove_dir(&self.mnt);
        let _ = std::fs::remove_dir_all(&self.src);
    }
}

/// Regular files anywhere under `dir`.
pub fn count_files(dir: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        if t.is_dir() {
            n += count_files(&e.path());
        } else if t.is_file() {
            n += 1;
        }
    }
    n
}
