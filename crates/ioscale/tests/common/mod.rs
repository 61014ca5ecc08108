//! Shared helpers for the CLI integration tests: scratch directories on the
//! repository's real file system, tmpfs and loop-mounted ext4 mounts that
//! are undone on drop, snapshots of directory trees, and checks on the JSON
//! record that every test applies the same way.

#![allow(dead_code)]

pub mod fuse;
pub mod io500;
pub mod strace;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

/// The ioscale binary under test.
pub fn ioscale() -> Command {
    sandbox_history();
    Command::cargo_bin("ioscale").expect("the ioscale binary is built")
}

/// Path of the binary, for tests that drive the child process themselves.
pub fn ioscale_path() -> PathBuf {
    sandbox_history();
    PathBuf::from(env!("CARGO_BIN_EXE_ioscale"))
}

/// Every measuring command records its run in the results history, by
/// default under the user's data directory. The tests must never write
/// there: before the first binary is started, this test process points
/// `XDG_DATA_HOME` at a directory under the target dir (children inherit
/// it), and drops the user's own `IOSCALE_HISTORY`, `IOSCALE_BASELINE`
/// and `IOSCALE_THRESHOLD`. Every helper that names the binary calls it.
pub fn sandbox_history() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("history-sandbox");
        std::fs::create_dir_all(&dir).expect("making the history sandbox");
        // Set once, before this process starts any child; std's own
        // environment lock orders it with every spawn.
        std::env::set_var("XDG_DATA_HOME", &dir);
        for k in ["IOSCALE_HISTORY", "IOSCALE_BASELINE", "IOSCALE_THRESHOLD"] {
            std::env::remove_var(k);
        }
        default_signals();
    });
}

/// A signal ignored by whoever started the tests (`nohup`, a background
/// job of a shell without job control ignores SIGINT) stays ignored in
/// every child, and ioscale rightly keeps ignoring it: the tests of its
/// signal handling would then see exit 0 for a hang-up. The test process
/// puts SIGHUP, SIGINT and SIGTERM back to their defaults before it starts
/// any child, so the children start as from a terminal; a test that wants
/// a signal ignored sets that in its own child.
fn default_signals() {
    for sig in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM] {
        // SAFETY: only changes this process's disposition of `sig` from
        // "ignored" to the default; no handler is installed.
        unsafe {
            let old = libc::signal(sig, libc::SIG_DFL);
            if old != libc::SIG_IGN && old != libc::SIG_ERR {
                // It had a handler or the default: put it back as it was.
                libc::signal(sig, old);
            }
        }
    }
}

/// A fresh directory under the target dir (on the repository's file system).
pub fn scratch() -> TempDir {
    sandbox_history();
    tempfile::Builder::new()
        .prefix("ioscale-it-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("creating a scratch directory")
}

/// File-system type of `dir`, from /proc/self/mountinfo (longest matching
/// mount point).
pub fn fs_type(dir: &Path) -> String {
    let dir = dir.canonicalize().unwrap();
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mut best: Option<(usize, String)> = None;
    for line in info.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let mp = Path::new(fields[4]);
        let sep = fields.iter().position(|f| *f == "-").unwrap();
        let ty = fields[sep + 1].to_string();
        if dir.starts_with(mp) {
            let len = mp.as_os_str().len();
            if best.as_ref().is_none_or(|(l, _)| len >= *l) {
                best = Some((len, ty));
            }
        }
    }
    best.map(|b| b.1).unwrap_or_default()
}

/// A mount made by a test, undone (and its mount point removed) on drop.
pub struct Mount {
    dir: TempDir,
    _backing: Option<TempDir>,
}

impl Mount {
    /// The mount point.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let ok = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
    }
}

fn sh(cmd: &str, args: &[&str]) -> bool {
    std::process::Command::new(cmd)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Mounts a tmpfs with the given options (e.g. `size=64m`), or returns
/// `None` with a note when this is not possible here (not root, no mount).
pub fn tmpfs(opts: &str) -> Option<Mount> {
    let dir = tempfile::Builder::new()
        .prefix("ioscale-mnt-")
        .tempdir()
        .unwrap();
    let p = dir.path().to_str().unwrap().to_string();
    if !sh("mount", &["-t", "tmpfs", "-o", opts, "tmpfs", &p]) {
        eprintln!("note: cannot mount a tmpfs at {p} (needs root); skipping this part");
        return None;
    }
    Some(Mount {
        dir,
        _backing: None,
    })
}

/// Makes an ext4 image of `size` (e.g. `32M`) and loop-mounts it, or
/// returns `None` with a note when loop devices or mounts are unavailable.
pub fn loop_ext4(size: &str) -> Option<Mount> {
    let backing = scratch();
    let img = backing.path().join("fs.img");
    let img_s = img.to_str().unwrap();
    if !sh("truncate", &["-s", size, img_s]) || !sh("mkfs.ext4", &["-q", "-F", img_s]) {
        eprintln!("note: cannot make an ext4 image (mkfs.ext4 missing?); skipping this part");
        return None;
    }
    let dir = tempfile::Builder::new()
        .prefix("ioscale-loop-")
        .tempdir()
        .unwrap();
    let p = dir.path().to_str().unwrap().to_string();
    if !sh("mount", &["-o", "loop", img_s, &p]) {
        eprintln!("note: cannot loop-mount an ext4 image at {p}; skipping this part");
        return None;
    }
    Some(Mount {
        dir,
        _backing: Some(backing),
    })
}

/// Runs ioscale with `args` and returns its output; fails the test if it
/// panicked.
pub fn run(args: &[&str]) -> Output {
    let out = ioscale().args(args).output().expect("running ioscale");
    assert_no_panic(&out);
    out
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Standard output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Fails if the process panicked or died from a signal.
pub fn assert_no_panic(out: &Output) {
    let err = stderr(out);
    assert!(
        !err.contains("panicked"),
        "ioscale panicked:\n{err}\nstdout:\n{}",
        stdout(out)
    );
    assert!(
        out.status.code().is_some(),
        "ioscale died from a signal: {:?}\n{err}",
        out.status
    );
}

/// Asserts the exit code, showing both streams when it differs.
pub fn assert_code(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "unexpected exit code\nstderr:\n{}\nstdout:\n{}",
        stderr(out),
        stdout(out)
    );
}

/// Reads and parses a JSON record.
pub fn json(path: &Path) -> Value {
    let text = std::fs::read(path)
        .unwrap_or_else(|e| panic!("reading the JSON record {}: {e}", path.display()));
    serde_json::from_slice(&text).expect("the JSON record parses")
}

/// The phases of a record.
pub fn phases(v: &Value) -> &Vec<Value> {
    v["phases"].as_array().expect("phases is an array")
}

/// Checks one phase record: the contract fields are present and numeric,
/// the op and thread count are right, and bytes/ops match the workload.
pub fn check_phase(p: &Value, op: &str, threads: u64, bytes: u64, xfer: u64) {
    for f in [
        "op",
        "threads",
        "bytes",
        "ops",
        "elapsed_s",
        "bw_mib_s",
        "iops",
        "lat_us",
        "cpu_user_s",
        "cpu_sys_s",
    ] {
        assert!(p.get(f).is_some(), "phase lacks field {f}: {p}");
    }
    for f in ["elapsed_s", "bw_mib_s", "iops", "cpu_user_s", "cpu_sys_s"] {
        assert!(p[f].is_number(), "phase field {f} is not a number: {p}");
    }
    for f in ["p50", "p99", "p999", "max"] {
        assert!(
            p["lat_us"][f].is_number(),
            "lat_us lacks a numeric {f}: {}",
            p["lat_us"]
        );
    }
    assert_eq!(p["op"], op, "op of {p}");
    assert_eq!(p["threads"].as_u64(), Some(threads), "threads of {op}");
    assert_eq!(p["bytes"].as_u64(), Some(bytes), "bytes of {op}");
    assert_eq!(p["ops"].as_u64(), Some(bytes / xfer), "ops of {op}");
    assert_eq!(p["errors"].as_u64(), Some(0), "errors of {op}");
    assert!(p["elapsed_s"].as_f64().unwrap() > 0.0, "elapsed_s of {op}");
}

/// Checks a read phase's verify record: everything checked, nothing bad.
pub fn check_verified(p: &Value, bytes: u64) {
    let v = &p["verify"];
    assert_eq!(v["checked_bytes"].as_u64(), Some(bytes), "verify of {p}");
    assert_eq!(v["bad_bytes"].as_u64(), Some(0), "verify of {p}");
    assert_eq!(v["mismatches"].as_array().map(|a| a.len()), Some(0));
}

/// What a directory tree holds: relative path → contents (`None` for
/// directories, `Some(bytes)` for files, the link text for symlinks).
pub type Tree = BTreeMap<String, Option<Vec<u8>>>;

/// Snapshot of everything under `dir`.
pub fn snapshot(dir: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let ft = e.file_type().unwrap();
            if ft.is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.insert(rel, Some(format!("-> {}", t.display()).into_bytes()));
            } else if ft.is_dir() {
                out.insert(rel, None);
                walk(root, &p, out);
            } else {
                out.insert(rel, Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Tree::new();
    walk(dir, dir, &mut out);
    out
}

/// Names of everything under `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    snapshot(dir).into_keys().collect()
}

/// Asserts that `dir` exists and holds nothing.
pub fn assert_empty(dir: &Path) {
    let left = names(dir);
    assert!(left.is_empty(), "{} is not empty: {left:?}", dir.display());
}

/// Fills `dir` with unrelated files, directories and a symlink, to check
/// that ioscale never touches what it did not create.
pub fn plant_foreign(dir: &Path) {
    use std::fs;
    fs::write(dir.join("notes.txt"), b"user data, keep me\n").unwrap();
    fs::write(dir.join(".hidden"), vec![0xa5u8; 5000]).unwrap();
    fs::write(dir.join("file.00000000"), b"not ioscale's file").unwrap();
    fs::create_dir_all(dir.join("project/sub")).unwrap();
    fs::write(
        dir.join("project/sub/data.bin"),
        (0..70_000u32).map(|i| (i % 251) as u8).collect::<Vec<u8>>(),
    )
    .unwrap();
    fs::create_dir(dir.join("empty-dir")).unwrap();
    std::os::unix::fs::symlink("notes.txt", dir.join("link")).unwrap();
}

/// Flips one byte of `file` at `offset` (xor 0xff) in place.
pub fn flip_byte(file: &Path, offset: u64) {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(file)
        .unwrap();
    let mut b = [0u8; 1];
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.read_exact(&mut b).unwrap();
    b[0] ^= 0xff;
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(&b).unwrap();
    f.sync_all().unwrap();
}

/// A path as a &str (test paths are always UTF-8).
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// 1 KiB, 1 MiB.
pub const K: u64 = 1024;
/// 1 MiB.
pub const M: u64 = 1024 * 1024;

/// Whether a front-end's refusal names something to use instead — a
/// native option, the tool's own option for it, or an ioscale command —
/// or says plainly that there is none, rather than only pointing at the
/// help text.
pub fn names_a_native_option(err: &str) -> bool {
    [
        "use -",
        "use --",
        "`ioscale run",
        "`ioscale meta",
        "`ioscale sweep",
        "nearest is",
        "(nearest: ",
        "no nearest option",
    ]
    .iter()
    .any(|k| err.contains(k))
}
