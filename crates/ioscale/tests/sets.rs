//! The other data sets (issue 13 items 1 and 3, issue 14's `clean`): the
//! metadata tree of `meta`, mdtest and smallfile (`T/ioscale-meta.d`) and
//! the IOR front-end's kept files (`-o PATH`, with `-F` and `-F -u`, and
//! their sidecar marker) are locked for the run's lifetime, removed
//! through held handles (a swapped name is refused, never followed), and
//! `ioscale clean` removes them.
//!
//! A live set is held still with SIGSTOP while the second command runs, so
//! no test depends on how fast anything is: a stopped run holds its lock
//! however long the check takes.

mod common;
#[path = "support/rel.rs"]
mod rel;

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

use common::*;
use rel::*;

const META_LOCK: &str = "ioscale-meta.d/.ioscale-meta-marker.lock";

/// Whether the lock file at `p` holds a holder record (the run has taken
/// its lock).
fn locked(p: &Path) -> bool {
    std::fs::read(p).is_ok_and(|b| b.starts_with(b"{"))
}

/// Stops the child with SIGSTOP and waits until every one of its threads
/// is stopped (`T` in /proc/PID/task/*/stat): kill(2) returns before the
/// signal has taken effect, and a worker could still make a file.
fn stop(child: &Child) {
    signal(child, libc::SIGSTOP);
    let t0 = std::time::Instant::now();
    loop {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", child.id())).unwrap();
        let all = tasks.flatten().all(|t| {
            std::fs::read_to_string(t.path().join("stat")).is_ok_and(|st| {
                // The state follows the command name in parentheses.
                st.rsplit_once(") ")
                    .is_some_and(|(_, rest)| rest.starts_with('T') || rest.starts_with('t'))
            })
        });
        if all {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the child did not stop"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Entries directly in `d` (0 when missing).
fn entries(d: &Path) -> usize {
    std::fs::read_dir(d).map(|r| r.count()).unwrap_or(0)
}

/// A metadata run that lasts (a million files per thread), stopped with
/// SIGSTOP once it holds its tree and has made files in it.
fn stopped_meta(args: &[&str], target: &Path) -> Child {
    stopped_meta_when(args, target, true)
}

/// [`stopped_meta`]; without `lock`, only the files are waited for (the
/// swap tests hold without a lock file too).
fn stopped_meta_when(args: &[&str], target: &Path, lock: bool) -> Child {
    let mut a = args.to_vec();
    a.push(s(target));
    let mut child = spawn(&a);
    let lockf = target.join(META_LOCK);
    let thr = target.join("ioscale-meta.d/thr.000");
    wait_until(&mut child, "the tree's lock and files", || {
        (!lock || locked(&lockf)) && entries(&thr) > 0
    });
    stop(&child);
    child
}

/// Lets a stopped run go on, interrupts it and waits: exit 130 (it was
/// interrupted) and its own cleanup ran.
fn resume_and_stop(child: Child) -> std::process::Output {
    signal(&child, libc::SIGCONT);
    signal(&child, libc::SIGINT);
    let out = finish(child, Duration::from_secs(120));
    assert_code(&out, 130);
    out
}

fn assert_names_pid(out: &std::process::Output, pid: u32) {
    assert_code(out, 2);
    let err = stderr(out);
    assert!(err.contains(&format!("pid {pid}")), "{err}");
}

const META_LONG: &[&str] = &[
    "meta",
    "--ops",
    "create",
    "--threads",
    "2",
    "--files",
    "1000000",
    "--file-size",
    "0",
    "-q",
];

#[test]
fn a_live_meta_tree_is_refused_by_clean_cleanup_and_a_second_run() {
    let t = scratch();
    let child = stopped_meta(META_LONG, t.path());
    let pid = child.id();
    let thr = t.path().join("ioscale-meta.d/thr.000");
    let before = entries(&thr);
    assert_names_pid(&run(&["clean", s(t.path())]), pid);
    assert_names_pid(
        &run(&[
            "meta",
            "--ops",
            "cleanup",
            "--threads",
            "2",
            "--files",
            "1000000",
            "-q",
            s(t.path()),
        ]),
        pid,
    );
    assert_names_pid(
        &run(&[
            "meta",
            "--ops",
            "create",
            "--files",
            "10",
            "-q",
            s(t.path()),
        ]),
        pid,
    );
    assert_eq!(entries(&thr), before, "a refused command removed files");
    let out = resume_and_stop(child);
    assert!(
        !t.path().join("ioscale-meta.d").exists(),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_live_smallfile_tree_is_refused_by_clean_and_a_second_run() {
    let t = scratch();
    let job = t.path().join("job");
    std::fs::create_dir(&job).unwrap();
    let child = stopped_meta(
        &[
            "smallfile",
            "--operation",
            "create",
            "--threads",
            "2",
            "--files",
            "1000000",
            "--file-size",
            "0",
            "--top",
        ],
        &job,
    );
    let pid = child.id();
    assert_names_pid(&run(&["clean", s(&job)]), pid);
    assert_names_pid(
        &run(&[
            "smallfile",
            "--operation",
            "cleanup",
            "--threads",
            "2",
            "--files",
            "1000000",
            "--top",
            s(&job),
        ]),
        pid,
    );
    assert!(entries(&job.join("ioscale-meta.d/thr.000")) > 0);
    // Interrupted, the create keeps what it made (smallfile's create keeps
    // its tree); `clean` removes it now that the run is over.
    let _ = resume_and_stop(child);
    let out = run(&["clean", s(&job)]);
    assert_code(&out, 0);
    assert!(
        stderr(&out).contains("removed the metadata tree"),
        "{}",
        stderr(&out)
    );
    assert_eq!(entries(&job), 0, "{}", stderr(&out));
}

#[test]
fn a_stale_meta_tree_is_taken_over_and_cleaned() {
    let t = scratch();
    let child = stopped_meta(META_LONG, t.path());
    let pid = child.id();
    signal(&child, libc::SIGKILL);
    let mut child = child;
    let _ = child.wait();
    let out = run(&["clean", s(t.path())]);
    assert_code(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains("took over") && err.contains(&format!("pid {pid}")),
        "{err}"
    );
    assert_eq!(entries(t.path()), 0, "{err}");
}

/// The names below `root` (files only), relative.
fn files_below(root: &Path) -> Vec<PathBuf> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}

/// Plants in `victim` a copy of each name of `names` (foreign content),
/// returning the files and their content.
fn plant_copies(victim: &Path, names: &[PathBuf]) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for n in names {
        let p = victim.join(n);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let body = format!("foreign {}", p.display()).into_bytes();
        std::fs::write(&p, &body).unwrap();
        out.push((p, body));
    }
    out
}

fn assert_intact(planted: &[(PathBuf, Vec<u8>)]) {
    assert!(!planted.is_empty());
    for (p, body) in planted {
        let got = std::fs::read(p).unwrap_or_else(|e| panic!("{} is gone: {e}", p.display()));
        assert!(got == *body, "{} was changed", p.display());
    }
}

#[test]
fn a_meta_tree_root_swapped_for_a_link_before_cleanup_leaves_the_victim_alone() {
    let t = scratch();
    let target = t.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let child = stopped_meta_when(META_LONG, &target, false);
    // A victim holding every name the run has made so far (and a marker
    // look-alike), swapped in under the tree's name.
    let root = target.join("ioscale-meta.d");
    let mut names: Vec<PathBuf> = files_below(&root)
        .into_iter()
        .filter(|n| !n.to_string_lossy().contains(".lock"))
        .take(2000)
        .collect();
    names.push(PathBuf::from("thr.001/zz-foreign"));
    let victim = t.path().join("victim");
    let planted = plant_copies(&victim, &names);
    let moved = t.path().join("moved");
    std::fs::rename(&root, &moved).unwrap();
    std::os::unix::fs::symlink(&victim, &root).unwrap();
    let out = resume_and_stop(child);
    assert_intact(&planted);
    // What the run made was removed where it really was (through the
    // held handle); the moved directory itself stays, its name refused.
    assert_eq!(entries(&moved), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
}

/// Issue 13: `ioscale-meta.d` swapped for a link to a VICTIM during the
/// create phase (holding copies of every name made so far): the delete
/// phase after it opens each thread's directory through the held working
/// directory, so it deletes the run's own files where they really are and
/// never the VICTIM's (before, it opened `TARGET/ioscale-meta.d/thr.000`
/// by path, through the link, and deleted the VICTIM's copies).
#[test]
fn a_meta_tree_root_swapped_for_a_link_between_phases_leaves_the_victim_alone() {
    let t = scratch();
    let target = t.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let args = [
        "meta",
        "--ops",
        "create,delete",
        "--threads",
        "2",
        "--files",
        "20000",
        "--file-size",
        "0",
        "-q",
    ];
    let child = stopped_meta_when(&args, &target, false);
    let root = target.join("ioscale-meta.d");
    let names: Vec<PathBuf> = files_below(&root)
        .into_iter()
        .filter(|n| n.starts_with("thr.000") || n.starts_with("thr.001"))
        .collect();
    let victim = t.path().join("victim");
    let planted = plant_copies(&victim, &names);
    let moved = t.path().join("moved");
    std::fs::rename(&root, &moved).unwrap();
    std::os::unix::fs::symlink(&victim, &root).unwrap();
    signal(&child, libc::SIGCONT);
    let out = finish(child, Duration::from_secs(120));
    println!("exit {:?}; stderr:\n{}", out.status, stderr(&out));
    assert_intact(&planted);
    // The run's own files went where they really were.
    assert_eq!(files_below(&moved).len(), 0, "{}", stderr(&out));
}

#[test]
fn a_thread_dir_swapped_for_a_link_before_cleanup_leaves_the_victim_alone() {
    let t = scratch();
    let target = t.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let child = stopped_meta_when(META_LONG, &target, false);
    let thr = target.join("ioscale-meta.d/thr.000");
    let names = files_below(&thr);
    let victim = t.path().join("victim");
    let planted = plant_copies(&victim, &names);
    std::fs::rename(&thr, t.path().join("moved-thr")).unwrap();
    std::os::unix::fs::symlink(&victim, &thr).unwrap();
    let out = resume_and_stop(child);
    assert_intact(&planted);
    let err = stderr(&out);
    assert!(
        err.contains("thr.000"),
        "the refused directory is named: {err}"
    );
}

#[test]
fn clean_removes_a_kept_meta_tree_and_a_smallfile_job_tree() {
    let t = scratch();
    let out = run(&[
        "meta",
        "--ops",
        "create",
        "--threads",
        "2",
        "--files",
        "50",
        "--keep",
        "-q",
        s(t.path()),
    ]);
    assert_code(&out, 0);
    assert!(t.path().join("ioscale-meta.d/thr.001").is_dir());
    let out = run(&["clean", s(t.path())]);
    assert_code(&out, 0);
    assert!(
        stderr(&out).contains("removed the metadata tree"),
        "{}",
        stderr(&out)
    );
    assert_eq!(entries(t.path()), 0);

    let job = t.path().join("job");
    std::fs::create_dir(&job).unwrap();
    std::fs::write(job.join("mine"), b"a user's file").unwrap();
    let out = run(&[
        "smallfile",
        "--operation",
        "create",
        "--threads",
        "2",
        "--files",
        "64",
        "--file-size",
        "4",
        "--hash-into-dirs",
        "Y",
        "--files-per-dir",
        "8",
        "--dirs-per-dir",
        "4",
        "--top",
        s(&job),
    ]);
    assert_code(&out, 0);
    assert!(job.join("ioscale-meta.d").is_dir());
    let out = run(&["clean", s(&job)]);
    assert_code(&out, 0);
    assert!(!job.join("ioscale-meta.d").exists(), "{}", stderr(&out));
    assert_eq!(std::fs::read(job.join("mine")).unwrap(), b"a user's file");
    // Nothing left to clean is an error naming what it looked for.
    let out = run(&["clean", s(&job)]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("nothing to clean"),
        "{}",
        stderr(&out)
    );
}

/// An IOR write that lasts (1 GiB per task in 4 KiB transfers), stopped
/// with SIGSTOP once it holds its set and has written data.
fn stopped_ior(o: &Path, extra: &[&str], first_file: &Path) -> Child {
    stopped_ior_when(o, extra, first_file, true)
}

/// [`stopped_ior`]; without `need_lock`, only the data is waited for.
fn stopped_ior_when(o: &Path, extra: &[&str], first_file: &Path, need_lock: bool) -> Child {
    let mut a = vec!["ior", "-w", "-t", "4k", "-b", "1g", "-N", "2"];
    a.extend_from_slice(extra);
    a.extend_from_slice(&["-o", s(o)]);
    let mut child = spawn(&a);
    let name = o.file_name().unwrap().to_string_lossy();
    let lock = o
        .parent()
        .unwrap()
        .join(format!(".{name}.ioscale-marker.lock"));
    wait_until(&mut child, "the IOR set's lock and data", || {
        (!need_lock || locked(&lock)) && len(first_file) > 0
    });
    stop(&child);
    child
}

#[test]
fn two_ior_runs_on_one_file_never_share_it() {
    let t = scratch();
    let o = t.path().join("same.bin");
    let child = stopped_ior(&o, &[], &o);
    let pid = child.id();
    let size = len(&o);
    // The second writer, a clean of the file and of its directory: all
    // refused, naming the first run.
    let out = run(&["ior", "-w", "-t", "4k", "-b", "64k", "-o", s(&o)]);
    assert_names_pid(&out, pid);
    assert_names_pid(&run(&["clean", s(&o)]), pid);
    assert_names_pid(&run(&["clean", s(t.path())]), pid);
    assert_eq!(len(&o), size, "a refused command touched the live file");
    let out = resume_and_stop(child);
    // Interrupted without -k: its files, marker and lock are gone.
    assert_eq!(entries(t.path()), 0, "{}", stderr(&out));
}

#[test]
fn a_live_ior_set_per_task_dir_is_refused_and_a_stale_one_cleaned() {
    let t = scratch();
    let o = t.path().join("x.bin");
    let first = t.path().join("0/x.bin.00000000");
    let child = stopped_ior(&o, &["-F", "-u", "-k"], &first);
    let pid = child.id();
    assert_names_pid(&run(&["clean", s(t.path())]), pid);
    assert!(len(&first) > 0);
    signal(&child, libc::SIGKILL);
    let mut child = child;
    let _ = child.wait();
    let out = run(&["clean", s(&o)]);
    assert_code(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains("took over") && err.contains(&format!("pid {pid}")),
        "{err}"
    );
    assert_eq!(entries(t.path()), 0, "{err}");
}

#[test]
fn an_ior_task_dir_swapped_for_a_link_before_cleanup_leaves_the_victim_alone() {
    let t = scratch();
    let dir = t.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let o = dir.join("x.bin");
    let first = dir.join("0/x.bin.00000000");
    let child = stopped_ior_when(&o, &["-F", "-u"], &first, false);
    let victim = t.path().join("victim");
    let planted = plant_copies(&victim, &[PathBuf::from("x.bin.00000000")]);
    std::fs::rename(dir.join("0"), t.path().join("moved0")).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("0")).unwrap();
    let out = resume_and_stop(child);
    assert_intact(&planted);
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
}

#[test]
fn clean_removes_ior_kept_files_by_path_or_directory() {
    let t = scratch();
    let d = t.path();
    std::fs::write(d.join("mine.bin"), b"a user's file").unwrap();
    for (o, extra) in [
        ("shared.bin", &[][..]),
        ("fpp.bin", &["-F"][..]),
        ("dpt.bin", &["-F", "-u"][..]),
    ] {
        let mut a = vec!["ior", "-w", "-k", "-t", "4k", "-b", "16k", "-N", "2"];
        a.extend_from_slice(extra);
        let p = d.join(o);
        a.extend_from_slice(&["-o", s(&p)]);
        assert_code(&run(&a), 0);
        assert!(d.join(format!(".{o}.ioscale-marker")).exists());
    }
    // By its -o path: that set only.
    let out = run(&["clean", s(&d.join("fpp.bin"))]);
    assert_code(&out, 0);
    assert!(stderr(&out).contains("removed the IOR"), "{}", stderr(&out));
    assert!(!d.join("fpp.bin.00000000").exists());
    assert!(!d.join(".fpp.bin.ioscale-marker").exists());
    assert!(d.join("shared.bin").exists());
    // By its directory: the rest, the user's file left.
    let out = run(&["clean", s(d)]);
    assert_code(&out, 0);
    let mut left: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["mine.bin"], "{}", stderr(&out));
}

#[test]
fn a_failed_ior_setup_leaves_no_lock_or_marker() {
    let t = scratch();
    let o = t.path().join("taken.bin");
    std::fs::write(&o, b"someone else's").unwrap();
    let out = run(&["ior", "-w", "-t", "4k", "-b", "16k", "-o", s(&o)]);
    assert_code(&out, 2);
    assert_eq!(entries(t.path()), 1, "{}", stderr(&out));
    assert_eq!(std::fs::read(&o).unwrap(), b"someone else's");
}

#[test]
fn a_set_held_on_another_host_needs_clean_force() {
    let t = scratch();
    let out = run(&[
        "meta",
        "--ops",
        "create",
        "--threads",
        "1",
        "--files",
        "20",
        "--keep",
        "-q",
        s(t.path()),
    ]);
    assert_code(&out, 0);
    // The record a run on another node leaves where flock is node-local.
    let holder = r#"{"pid":4242,"host":"node-elsewhere","boot_id":null,"start_ticks":null,"since_unix":1,"command":"ioscale meta /shared"}"#;
    std::fs::write(t.path().join(META_LOCK), holder).unwrap();
    let out = run(&["clean", s(t.path())]);
    assert_code(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("node-elsewhere") && err.contains("clean --force"),
        "the refusal says who and how to take over: {err}"
    );
    assert!(t.path().join("ioscale-meta.d/thr.000").is_dir());
    let out = run(&["clean", "--force", s(t.path())]);
    assert_code(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains("took over") && err.contains("node-elsewhere"),
        "{err}"
    );
    assert_eq!(entries(t.path()), 0, "{err}");
}

#[test]
fn a_hashed_directory_swapped_for_a_link_before_cleanup_leaves_the_victim_alone() {
    hashed_directory_swapped(&[]);
}

/// The same through the walk that kernels without `openat2` (before 5.6)
/// get: every component below the held directory opened with `O_NOFOLLOW`.
#[test]
fn a_hashed_directory_swapped_for_a_link_is_refused_without_openat2_too() {
    hashed_directory_swapped(&[("IOSCALE_NO_OPENAT2", "1")]);
}

fn hashed_directory_swapped(env: &[(&str, &str)]) {
    let t = scratch();
    let target = t.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let mut args = META_LONG.to_vec();
    args.extend_from_slice(&["--files-per-dir", "2", "--dirs-per-dir", "2"]);
    let mut child = spawn_env(&[args.as_slice(), &[s(&target)]].concat(), env);
    let h = target.join("ioscale-meta.d/thr.000/h0");
    // Wait for a few levels below h0, so the cleanup opens paths through it.
    wait_until(&mut child, "a hashed tree three levels deep", || {
        h.join("h0/h0").is_dir()
    });
    stop(&child);
    let names = files_below(&h);
    let victim = t.path().join("victim");
    let planted = plant_copies(&victim, &names);
    std::fs::rename(&h, t.path().join("moved-h0")).unwrap();
    std::os::unix::fs::symlink(&victim, &h).unwrap();
    // Resumed, a worker may reach the link before the SIGINT lands (seen
    // on a quiet machine): then the run stops on the refused link (exit 1,
    // "Too many levels of symbolic links") instead of the signal (130).
    signal(&child, libc::SIGCONT);
    signal(&child, libc::SIGINT);
    let out = finish(child, Duration::from_secs(120));
    assert!(
        matches!(out.status.code(), Some(130) | Some(1)),
        "{:?}: {}",
        out.status,
        stderr(&out)
    );
    assert_intact(&planted);
    assert!(
        stderr(&out).contains("h0"),
        "the refused directory is named: {}",
        stderr(&out)
    );
}

/// Issue 13: dd's `--rm` removes the very file this run created. The
/// directory of `of=` swapped (while dd writes) for a link to a VICTIM
/// directory holding a file of the same name: the removal finds another
/// file there (another inode) and refuses it, naming it; the VICTIM's
/// file is intact (before, `--rm` removed it by path, through the link).
#[test]
fn dd_rm_never_removes_a_file_it_did_not_create() {
    let t = scratch();
    let d = t.path().join("d");
    std::fs::create_dir(&d).unwrap();
    let of = format!("of={}", d.join("out").display());
    let mut child = spawn(&[
        "dd",
        "--rm",
        "if=/dev/zero",
        &of,
        "bs=64k",
        "count=16384",
        "oflag=sync",
    ]);
    let out_file = d.join("out");
    wait_until(&mut child, "data was written", || {
        std::fs::metadata(&out_file).is_ok_and(|m| m.len() > 0)
    });
    stop(&child);
    let victim = t.path().join("victim");
    let planted = plant_copies(&victim, &[PathBuf::from("out")]);
    std::fs::rename(&d, t.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(&victim, &d).unwrap();
    let out = resume_and_stop(child);
    assert_intact(&planted);
    let err = stderr(&out);
    assert!(err.contains("out"), "the refused file is named: {err}");
}

/// Issue 13: a hashed directory made below a swapped one. `meta` on a
/// hashed tree (`--files-per-dir 2 --dirs-per-dir 2`, FUSE at 0.5 ms a
/// metadata request so the tree grows slowly), stopped once a node at
/// depth 8 exists — before its children are made — and that node swapped
/// for a link to a VICTIM directory. Making its children opens the parent
/// with `O_NOFOLLOW` at every component and makes the child relative to
/// it: refused, nothing added to the VICTIM (before, `mkdirat` of the
/// whole path `h0/…/h0/h0` went through the link and made `VICTIM/h0`;
/// found by the race harness without `openat2`).
#[test]
fn a_hashed_directory_is_never_made_through_a_swapped_parent() {
    let Some(fs) = common::fuse::TestFs::mount(&["--meta-delay", "500us"]) else {
        return;
    };
    let target = fs.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let mut child = spawn(&[
        "meta",
        "--ops",
        "create",
        "--threads",
        "1",
        "--files",
        "1200",
        "--file-size",
        "0",
        "--files-per-dir",
        "2",
        "--dirs-per-dir",
        "2",
        "-q",
        s(&target),
    ]);
    let d = target.join("ioscale-meta.d/thr.000/h0/h0/h0/h0/h0/h0/h0/h0");
    wait_until(&mut child, "a node at depth 8", || d.is_dir());
    stop(&child);
    assert!(
        !d.join("h0").exists(),
        "its children exist already: the test proves nothing"
    );
    let o = scratch();
    let victim = o.path().join("victim");
    let planted = plant_copies(&victim, &[PathBuf::from("keep.txt")]);
    std::fs::rename(&d, d.with_file_name("moved")).unwrap();
    std::os::unix::fs::symlink(&victim, &d).unwrap();
    signal(&child, libc::SIGCONT);
    let out = finish(child, Duration::from_secs(120));
    println!("exit {:?}; stderr:\n{}", out.status, stderr(&out));
    assert_intact(&planted);
    assert_eq!(entries(&victim), 1, "nothing added: {}", stderr(&out));
}
