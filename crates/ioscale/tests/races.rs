//! Races against ioscale's own paths (issue 13, item 1 and the race
//! harness): a working directory swapped for a link while the workers are
//! still to open their files, and a saboteur that swaps, deletes and renames
//! paths under the target at random moments while `run`, `meta` and
//! `clean` work on it. Foreign files (the harness's VICTIM) are planted
//! first and checked by kind, length and content hash after every
//! iteration: nothing of them may be lost, changed or added.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::fuse::TestFs;
use common::*;
use safefs::testing::{race, run_bounded, RaceConfig, Victim};

/// Waits until `p` exists (at most 20 s).
fn wait_for(p: &Path) {
    let t0 = Instant::now();
    while std::fs::symlink_metadata(p).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{} never appeared",
            p.display()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// `T/ioscale.d` is swapped for a link to a directory of foreign files
/// after setup, while repetitions are still to come: every later open
/// and removal goes through the directory setup made and holds, so the
/// foreign files are untouched (before the fix each repetition removed
/// `VICTIM/file.0000000N` through the link and the workers wrote their
/// own files there).
#[test]
fn swapped_working_directory_is_never_followed() {
    // A FUSE target with a delay per request: each repetition takes tens
    // of milliseconds whatever the machine, so the swap lands mid-run.
    let Some(fs) = TestFs::mount(&["--delay", "500us"]) else {
        return;
    };
    let o = scratch();
    let victim = Victim::plant(&o.path().join("VICTIM"), 7).unwrap();
    let t = fs.path().join("t");
    std::fs::create_dir(&t).unwrap();
    let mut child = Command::new(ioscale_path())
        .args([
            "run",
            "--op",
            "write",
            "--reps",
            "100",
            "--threads",
            "2",
            "--size",
            "1m",
            "--xfer",
            "64k",
            "-q",
        ])
        .arg(&t)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let root = t.join("ioscale.d");
    wait_for(&root.join(".ioscale-marker"));
    wait_for(&root.join("file.00000001"));
    std::thread::sleep(Duration::from_millis(50));
    std::fs::rename(&root, t.join("moved")).unwrap();
    std::os::unix::fs::symlink(victim.path(), &root).unwrap();
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run ended before the swap: the test proves nothing"
    );
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "the run hung");
        std::thread::sleep(Duration::from_millis(10));
    };
    let err = {
        use std::io::Read;
        let mut e = String::new();
        child.stderr.take().unwrap().read_to_string(&mut e).unwrap();
        e
    };
    println!("exit {status:?}; stderr:\n{err}");
    victim.check().unwrap();
    assert_ne!(status.code(), Some(101), "{err}");
    // The link is still there, refused, not followed or removed.
    assert!(std::fs::symlink_metadata(&root)
        .unwrap()
        .file_type()
        .is_symlink());
    // What the run made it removed through its handles, in the directory
    // it made (now `moved`): no data file, marker or lock is left there.
    let left: Vec<_> = std::fs::read_dir(t.join("moved"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left in the moved directory: {left:?}");
    assert!(
        err.contains("ioscale.d"),
        "the refused name is reported: {err}"
    );
}

/// The harness's seed: `default`, or `IOSCALE_RACE_SEED` to replay a
/// failure or try others.
fn seed(default: u64) -> u64 {
    std::env::var("IOSCALE_RACE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Runs the race harness (`safefs::testing::race`) with `iterations`
/// iterations within `wall`, each running the commands `plan(i)` (each
/// the words before TARGET) one after another on a fresh target while a
/// saboteur strikes under it. Panics on damage to the VICTIM, on a panic
/// (exit 101), a signal or a hang of a command.
fn harness(
    seed: u64,
    iterations: u32,
    wall: Duration,
    plan: impl Fn(u32) -> Vec<Vec<&'static str>>,
) {
    harness_env(seed, iterations, wall, &[], plan)
}

/// [`harness`] with extra environment variables for every command.
fn harness_env(
    seed: u64,
    iterations: u32,
    wall: Duration,
    env: &[(&str, &str)],
    plan: impl Fn(u32) -> Vec<Vec<&'static str>>,
) {
    let o = scratch();
    let bin = ioscale_path();
    let limit = Duration::from_secs(30);
    let cfg = RaceConfig {
        seed,
        iterations,
        wall_limit: wall,
        max_pause: Duration::from_millis(2),
        ..RaceConfig::default()
    };
    let (mut commands, mut refused) = (0u32, 0u32);
    let report = race(&cfg, &o.path().join("race"), |target, i| {
        for args in plan(i) {
            let st = run_bounded(
                Command::new(&bin)
                    .args(&args)
                    .arg(target)
                    .envs(env.iter().copied())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null()),
                limit,
            )
            .unwrap();
            let cmd = args.join(" ");
            let Some(st) = st else {
                panic!("seed {seed} iteration {i}: `ioscale {cmd}` hung for {limit:?}");
            };
            assert_ne!(
                st.code(),
                Some(101),
                "seed {seed} iteration {i}: `ioscale {cmd}` panicked"
            );
            assert!(
                st.code().is_some(),
                "seed {seed} iteration {i}: `ioscale {cmd}` killed by {st:?}"
            );
            commands += 1;
            refused += u32::from(st.code() == Some(2));
        }
    })
    .unwrap_or_else(|e| panic!("{e}"));
    println!(
        "{} iterations, {commands} commands ({refused} refused with exit 2), {} strikes",
        report.iterations, report.strikes
    );
    assert!(
        report.iterations >= iterations.min(30),
        "too few iterations within {wall:?}: {}",
        report.iterations
    );
    assert!(report.strikes > 0, "the saboteur never struck");
}

/// The race harness of issue 13 in CI: 200 iterations (at most a minute)
/// of `run` (write and read, two repetitions) and of `run --keep` then
/// `clean`, on a fresh target each, while a saboteur swaps directories
/// for links to the VICTIM, swaps files for links, deletes and renames
/// files and trees, and plants links, FIFOs and hard links under
/// ioscale's names at random moments. After every iteration the VICTIM
/// must be exactly as planted, and no command may panic or hang.
#[test]
fn saboteur_never_damages_foreign_files_run_and_clean() {
    harness(seed(13), 200, Duration::from_secs(60), |i| {
        if i % 2 == 0 {
            vec![vec![
                "run",
                "--op",
                "write,read",
                "--reps",
                "2",
                "--threads",
                "2",
                "--size",
                "256k",
                "--xfer",
                "64k",
                "-q",
            ]]
        } else {
            vec![
                vec![
                    "run",
                    "--op",
                    "write",
                    "--threads",
                    "2",
                    "--size",
                    "128k",
                    "--xfer",
                    "64k",
                    "--keep",
                    "-q",
                ],
                vec!["clean"],
            ]
        }
    });
}

/// The same for `meta` (create, stat, delete of a small tree).
///
/// Before the tree was held and locked (sets3), seed 13 iteration 13 had
/// the cleanup remove VICTIM/thr.000/f0.0, VICTIM/thr.000 and
/// VICTIM/.ioscale-meta-marker through a swapped `ioscale-meta.d`.
#[test]
fn saboteur_never_damages_foreign_files_meta() {
    harness(seed(13), 200, Duration::from_secs(60), |_| {
        vec![vec!["meta", "--files", "40", "--threads", "2", "-q"]]
    });
}

/// `meta` on a hashed tree (`--files-per-dir 2 --dirs-per-dir 2`, so the
/// engine opens multi-component paths) through the walk kernels without
/// `openat2` get (`IOSCALE_NO_OPENAT2=1`): the same harness, 100
/// iterations within 30 s.
#[test]
fn saboteur_never_damages_foreign_files_meta_without_openat2() {
    let env = [("IOSCALE_NO_OPENAT2", "1")];
    harness_env(seed(13), 100, Duration::from_secs(30), &env, |_| {
        vec![vec![
            "meta",
            "--files",
            "40",
            "--threads",
            "2",
            "--files-per-dir",
            "2",
            "--dirs-per-dir",
            "2",
            "-q",
        ]]
    });
}

/// `meta --engine io_uring` on a hashed tree: one thread's requests go
/// round robin over its directories, which it makes and opens together
/// through a ring of their own (`mkdirat` and `openat2` relative to their
/// parents' descriptors) instead of one after another: the same harness,
/// 100 iterations within 30 s.
#[test]
fn saboteur_never_damages_foreign_files_meta_io_uring() {
    harness(seed(13), 100, Duration::from_secs(30), |_| {
        vec![vec![
            "meta",
            "--engine",
            "io_uring",
            "--iodepth",
            "8",
            "--files",
            "40",
            "--threads",
            "2",
            "--files-per-dir",
            "2",
            "--dirs-per-dir",
            "2",
            "-q",
        ]]
    });
}

/// `meta` with every per-file phase (reads, writes in place, truncation,
/// chmod, xattrs, links, renames) on a hashed tree: the storage backend's
/// loop calls never follow a link planted under a file name or swapped in
/// for a directory (`O_NOFOLLOW` on every open, `fchmodat2` and
/// `setxattrat` with `AT_SYMLINK_NOFOLLOW` relative to the held
/// directory) and never hang on a FIFO (`O_NONBLOCK`). The VICTIM check
/// covers permission bits and the `user.ioscale` attribute too. Before
/// the backend table, overwrite and truncate-overwrite wrote through a
/// planted link, chmod changed the victim's mode and a read of a planted
/// FIFO hung; seed 2 caught it at iteration 30 (`file.00000000` of the
/// VICTIM rewritten through a link): 100 iterations within 40 s.
#[test]
fn saboteur_never_damages_foreign_files_meta_every_op() {
    harness(seed(2), 100, Duration::from_secs(40), |_| {
        vec![vec![
            "meta",
            "--ops",
            "create,stat,read,append,overwrite,truncate-overwrite,chmod,setxattr,getxattr,\
             symlink,readdir,rename,delete,mkdir,stat-dir,rmdir",
            "--files",
            "24",
            "--threads",
            "2",
            "--files-per-dir",
            "4",
            "--dirs-per-dir",
            "2",
            "-q",
        ]]
    });
}
