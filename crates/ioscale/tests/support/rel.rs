//! Helpers of the reliability tests (reliability.rs, interrupt.rs,
//! integrity.rs, stress.rs): look-alike files that ioscale must never take
//! for its own, a child process interrupted by a signal at a chosen moment,
//! and the error line every failed run must print.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// Plants `plant_foreign`'s unrelated files plus files and directories
/// whose names look like ioscale's own but carry no (valid) marker:
/// `file.00000000` outside the working directory, a nested `ioscale.d` and
/// `ioscale-meta.d` holding data-file names, IOR-style `ior.bin.00000001`,
/// dd-style `dd-3`, and marker-like files full of garbage.
pub fn plant_lookalikes(dir: &Path) {
    use std::fs;
    plant_foreign(dir);
    let nested = dir.join("sub/ioscale.d");
    fs::create_dir_all(nested.join("dir.00000000")).unwrap();
    fs::write(
        nested.join("file.00000000"),
        b"someone else's file.00000000",
    )
    .unwrap();
    fs::write(nested.join("file.00000001"), vec![7u8; 70_000]).unwrap();
    fs::write(nested.join("shared.dat"), b"not a shared data file").unwrap();
    fs::write(nested.join("dir.00000000/file.00000000"), b"deep").unwrap();
    fs::write(nested.join(".ioscale-marker"), b"\x00garbage{not json").unwrap();
    let meta = dir.join("sub/ioscale-meta.d/thr.000");
    fs::create_dir_all(&meta).unwrap();
    fs::write(meta.join("f0.0"), b"a user's f0.0").unwrap();
    fs::write(
        dir.join("sub/ioscale-meta.d/.ioscale-meta-marker"),
        br#"{"tool":"not-ioscale"}"#,
    )
    .unwrap();
    fs::write(dir.join("ior.bin.00000001"), b"not made by ioscale ior").unwrap();
    fs::write(dir.join("dd-3"), b"dd job 3 was never run").unwrap();
    fs::write(
        dir.join(".ioscale-marker"),
        br#"{"tool":"ioscale","garbage":1"#,
    )
    .unwrap();
    fs::write(dir.join(".other.ioscale-marker"), b"\xff\xfe").unwrap();
}

/// Starts ioscale with `args`, standard output discarded, standard error
/// captured.
pub fn spawn(args: &[&str]) -> Child {
    spawn_env(args, &[])
}

/// [`spawn`] with extra environment variables (test hooks such as
/// `IOSCALE_NO_OPENAT2=1`).
pub fn spawn_env(args: &[&str], env: &[(&str, &str)]) -> Child {
    Command::new(ioscale_path())
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting ioscale")
}

/// Waits until `ready()` holds while the child runs (at most 60 s), so a
/// signal sent next lands inside the work, not before or after it.
pub fn wait_until(child: &mut Child, what: &str, ready: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !ready() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "ioscale ended before {what}; make the workload bigger"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no {what} after 60 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "ioscale ended before {what}; make the workload bigger"
    );
}

/// Sends `sig` to the child.
pub fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child's pid, which has not been reaped.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    assert_eq!(rc, 0, "kill({sig})");
}

/// Waits for the child (at most `limit`), failing the test if it hangs.
pub fn finish(mut child: Child, limit: Duration) -> Output {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "ioscale did not exit within {limit:?} of the signal:\n{}",
                stderr(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    assert_no_panic(&out);
    out
}

/// Bytes in the file at `p` (0 when missing).
pub fn len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// Number of entries below `dir` (0 when missing).
pub fn count_entries(dir: &Path) -> usize {
    fn walk(d: &Path) -> usize {
        let Ok(rd) = std::fs::read_dir(d) else {
            return 0;
        };
        rd.flatten()
            .map(|e| {
                1 + if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    walk(&e.path())
                } else {
                    0
                }
            })
            .sum()
    }
    walk(dir)
}

/// The one error line that names `op` and `file` (and `at offset N` when
/// `offset` is given); fails the test when there is none. Returns it.
pub fn error_line(err: &str, op: &str, file: &str, offset: Option<u64>) -> String {
    let line = err
        .lines()
        .find(|l| l.contains(" error: ") && l.contains(&format!("{op} {file}")))
        .unwrap_or_else(|| panic!("no error line naming `{op} {file}` in:\n{err}"))
        .to_string();
    if let Some(o) = offset {
        assert!(line.contains(&format!("at offset {o}")), "{line}");
    }
    line
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no failure mode.
    unsafe { libc::geteuid() == 0 }
}

/// Whether `prog` can be run (it answers `--version`).
pub fn have(prog: &str) -> bool {
    Command::new(prog)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Asserts that `dir` holds exactly `before`, byte for byte; on failure
/// names the entries that differ instead of printing the contents.
pub fn assert_intact(dir: &Path, before: &Tree, ctx: &str) {
    let now = snapshot(dir);
    if &now == before {
        return;
    }
    let mut diff = Vec::new();
    for (k, v) in before {
        match now.get(k) {
            None => diff.push(format!("removed {k}")),
            Some(n) if n != v => diff.push(format!("changed {k}")),
            _ => {}
        }
    }
    for k in now.keys() {
        if !before.contains_key(k) {
            diff.push(format!("added {k}"));
        }
    }
    panic!("{} is not as it was ({ctx}): {diff:?}", dir.display());
}
