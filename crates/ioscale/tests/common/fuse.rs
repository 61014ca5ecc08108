//! Mounting `ioscale-testfs` (crates/testfs) for a test: a SOURCE directory
//! on the repository's file system, a fresh mount point in /tmp, the daemon
//! in the foreground with its stderr in a log, and a guard that unmounts
//! and stops it on drop, whatever the test did.
//!
//! The binary is found beside the test executable (`target/<profile>/`),
//! where `cargo test --workspace` builds it because the testfs package has
//! integration tests of its own; `IOSCALE_TESTFS` overrides the path. When
//! it is missing (`cargo test -p ioscale` alone), it is built once with
//! cargo into a separate target directory, since the outer cargo holds the
//! lock on the main one.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tempfile::TempDir;

fn build_testfs() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    // target/<profile>/deps/<test> → target/<profile>/ioscale-testfs
    let profile_dir = exe.parent()?.parent()?;
    let beside = profile_dir.join("ioscale-testfs");
    if beside.is_file() {
        return Some(beside);
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testfs/Cargo.toml");
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("testfs-build");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!(
        "note: {} is not built; building it with cargo into {}",
        beside.display(),
        target_dir.display()
    );
    let ok = Command::new(cargo)
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
    let built = target_dir.join("debug/ioscale-testfs");
    (ok && built.is_file()).then_some(built)
}

/// Path of the ioscale-testfs binary (built on first use if needed).
pub fn testfs_bin() -> Option<PathBuf> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("IOSCALE_TESTFS") {
            return Some(PathBuf::from(p));
        }
        build_testfs()
    })
    .clone()
}

/// Why FUSE cannot be used here, if it cannot: no /dev/fuse, or neither
/// root nor fusermount3. On a machine that has what it takes, a mount that
/// then fails is a test failure, not a skip.
pub fn fuse_unavailable() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing".into());
    }
    // SAFETY: geteuid has no failure mode.
    let root = unsafe { libc::geteuid() } == 0;
    if !root && !Path::new("/usr/bin/fusermount3").exists() {
        return Some("not root and no fusermount3 (apt-get install fuse3)".into());
    }
    None
}

fn mounted_at(mp: &Path) -> bool {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = mp.to_string_lossy();
    info.lines().any(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        f.len() > 4 && f[4] == want && l.contains(" - fuse.ioscale-testfs ")
    })
}

/// A mounted ioscale-testfs, unmounted and stopped on drop.
pub struct TestFs {
    child: Option<Child>,
    source: TempDir,
    mnt: TempDir,
    log: PathBuf,
    _logdir: TempDir,
}

impl TestFs {
    /// Mounts a fresh SOURCE with the given daemon flags, or returns `None`
    /// with a note when FUSE is not available on this machine.
    pub fn mount(flags: &[&str]) -> Option<TestFs> {
        if let Some(why) = fuse_unavailable() {
            eprintln!("note: skipping a FUSE test: {why}");
            return None;
        }
        let bin = testfs_bin().expect("building ioscale-testfs");
        let source = super::scratch();
        let mnt = tempfile::Builder::new()
            .prefix("ioscale-fuse-")
            .tempdir()
            .unwrap();
        let logdir = super::scratch();
        let log = logdir.path().join("testfs.log");
        let child = Command::new(&bin)
            .args(flags)
            .arg(source.path())
            .arg(mnt.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let mut fs = TestFs {
            child: Some(child),
            source,
            mnt,
            log,
            _logdir: logdir,
        };
        let mp = fs.mnt.path().canonicalize().unwrap();
        let t0 = Instant::now();
        while !mounted_at(&mp) {
            if let Some(st) = fs.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "ioscale-testfs exited ({st}) before mounting {}:\n{}",
                    mp.display(),
                    fs.log_text()
                );
            }
            if t0.elapsed() > Duration::from_secs(20) {
                panic!(
                    "ioscale-testfs did not mount {} within 20 s:\n{}",
                    mp.display(),
                    fs.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(fs)
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        self.mnt.path()
    }

    /// The directory the file system passes through to.
    pub fn source(&self) -> &Path {
        self.source.path()
    }

    /// What the daemon printed so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops the daemon with SIGTERM and returns its exit status and log;
    /// fails the test if it does not exit or unmount within 10 s.
    pub fn stop(mut self) -> (ExitStatus, String) {
        let mut child = self.child.take().unwrap();
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let t0 = Instant::now();
        let st = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if t0.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "ioscale-testfs ignored SIGTERM for 10 s:\n{}",
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mp = self.mnt.path().canonicalize().unwrap();
        assert!(!mounted_at(&mp), "still mounted after the daemon exited");
        (st, self.log_text())
    }
}

impl Drop for TestFs {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.mnt.path())
            .stderr(Stdio::null())
            .status();
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The tracefs directory with the FUSE events, mounting tracefs when
/// needed; `None` (with a note) only where it cannot be had: not root, or
/// a kernel without the events.
pub fn tracefs() -> Option<PathBuf> {
    // SAFETY: geteuid has no failure mode.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("note: skipping: tracing FUSE requests needs root");
        return None;
    }
    let root = PathBuf::from("/sys/kernel/tracing");
    if !root.join("instances").is_dir() {
        let st = Command::new("mount")
            .args(["-t", "tracefs", "nodev"])
            .arg(&root)
            .status()
            .expect("running mount");
        assert!(st.success(), "mount -t tracefs nodev {}", root.display());
    }
    if !root.join("events/fuse/fuse_request_send").is_dir() {
        eprintln!("note: skipping: this kernel has no fuse trace events");
        return None;
    }
    Some(root)
}
