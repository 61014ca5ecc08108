//! fio, or `ioscale fio`, run under strace: the side-by-side system-call
//! checks of the fio front-end (fio_calls, fio_libaio, fio_together,
//! fio_bs_sizes, fio_corpus_calls) each trace both tools the same way,
//! and the corpus of job files they share.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// Runs fio 3.33 (`real`) or `ioscale fio` with `args` in `dir` under
/// `strace -f -qq FLAGS -o TRACE`, asserts it succeeded, and returns the
/// trace and the run's output. ioscale runs without its results history
/// (its SQLite pages are preads, pwrites and fsyncs too, which would be
/// counted as the job's). The trace goes beside `dir` under a name of its
/// own per call, so tests running at once never share one.
pub fn fio_traced(real: bool, flags: &[&str], args: &[&str], dir: &Path) -> (String, Output) {
    fio_traced_env(real, flags, args, dir, &[])
}

/// [`fio_traced`] with `env` set for the traced tool (a job file's
/// `${DIR}`).
pub fn fio_traced_env(
    real: bool,
    flags: &[&str],
    args: &[&str],
    dir: &Path,
    env: &[(&str, &Path)],
) -> (String, Output) {
    static N: AtomicU32 = AtomicU32::new(0);
    let trace = dir.join("..").join(format!(
        "fio-trace.{}.{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let mut c = Command::new("strace");
    c.args(["-f", "-qq"]).args(flags).arg("-o").arg(&trace);
    if real {
        c.arg("fio");
    } else {
        c.arg(super::ioscale_path())
            .arg("fio")
            .env("IOSCALE_HISTORY", "off");
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.args(args).current_dir(dir).output().unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        if real { "fio" } else { "ioscale fio" },
        String::from_utf8_lossy(&out.stderr)
    );
    let t = std::fs::read_to_string(&trace).unwrap();
    std::fs::remove_file(&trace).unwrap();
    (t, out)
}

/// The fio corpus: every job file in tests/fio/, in name order (fio_cli
/// runs each beside fio, fio_corpus_calls traces them).
pub fn fio_corpus() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fio");
    let mut v: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "fio"))
        .collect();
    v.sort();
    v
}
