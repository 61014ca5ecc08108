//! The set lock across two processes: this test binary re-runs itself as
//! the child that holds the lock.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use common::Tmpfs;
use safefs::{lock_name, DirHandle, Holder, Liveness, LockOptions, SetLock, TryLock};

const MARKER: &str = ".ioscale-marker";

/// Run only as the child: takes the lock on the directory in
/// `SAFEFS_HOLD`, says so, and holds it until its stdin closes.
#[test]
#[ignore = "the child half of the two-process lock tests"]
fn child_holds_the_lock() {
    let Ok(dir) = std::env::var("SAFEFS_HOLD") else {
        return;
    };
    let d = DirHandle::open(&dir).unwrap();
    let TryLock::Acquired(lock) = SetLock::try_lock(&d, lock_name(MARKER), "child run").unwrap()
    else {
        panic!("the child could not take the lock");
    };
    println!("LOCKED {}", lock.holder().pid);
    std::io::stdout().flush().unwrap();
    let mut s = String::new();
    let _ = std::io::stdin().read_line(&mut s);
    drop(lock);
    println!("RELEASED");
}

type Out = BufReader<std::process::ChildStdout>;

fn spawn_holder(dir: &std::path::Path) -> (Child, Out) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_holds_the_lock",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SAFEFS_HOLD", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the child ended before locking"
        );
        // libtest prints "test child_holds_the_lock ... " before it.
        if let Some(i) = line.find("LOCKED ") {
            assert_eq!(line[i + "LOCKED ".len()..].trim(), child.id().to_string());
            break;
        }
    }
    (child, out)
}

#[test]
fn a_live_holder_in_another_process_is_reported_then_released() {
    let fs_ = Tmpfs::new("4m");
    let d = DirHandle::open(fs_.path()).unwrap();
    let (mut child, mut out) = spawn_holder(fs_.path());

    match SetLock::try_lock(&d, lock_name(MARKER), "clean").unwrap() {
        TryLock::Held { holder, liveness } => {
            assert_eq!(liveness, Liveness::Live);
            let h = holder.expect("the holder record is readable");
            assert_eq!(h.pid, child.id());
            assert_eq!(h.command, "child run");
            assert!(
                h.describe().contains(&format!("pid {}", child.id())),
                "{}",
                h.describe()
            );
        }
        TryLock::Acquired(_) => panic!("took a lock another process holds"),
    }

    // The child releases it (clean exit): the lock is free, not stale.
    drop(child.stdin.take());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(rest.contains("RELEASED"), "{rest}");
    assert!(child.wait().unwrap().success());
    let TryLock::Acquired(lock) = SetLock::try_lock(&d, lock_name(MARKER), "clean").unwrap() else {
        panic!("a released lock is still held");
    };
    assert!(lock.stale_holder().is_none());
    assert_eq!(lock.holder().pid, std::process::id());
    // A second try in this very process is refused too (flock is per open).
    assert!(matches!(
        SetLock::try_lock(&d, lock_name(MARKER), "again").unwrap(),
        TryLock::Held {
            liveness: Liveness::Live,
            ..
        }
    ));
    lock.remove(&d, lock_name(MARKER)).unwrap();
    assert!(common::listing(fs_.path()).is_empty());
}

#[test]
fn a_killed_holder_is_stale_and_its_lock_can_be_taken() {
    let fs_ = Tmpfs::new("4m");
    let d = DirHandle::open(fs_.path()).unwrap();
    let (mut child, _out) = spawn_holder(fs_.path());
    let pid = child.id();
    child.kill().unwrap();
    child.wait().unwrap();

    let TryLock::Acquired(lock) = SetLock::try_lock(&d, lock_name(MARKER), "clean").unwrap() else {
        panic!("the lock of a killed process is still held");
    };
    let (h, why) = lock.stale_holder().expect("the dead holder is reported");
    assert_eq!(h.pid, pid);
    assert_eq!(why, "its process is gone");
}

fn plant_record(fs_: &Tmpfs, h: &Holder) {
    std::fs::write(fs_.join(lock_name(MARKER)), serde_json::to_vec(h).unwrap()).unwrap();
}

#[test]
fn the_record_decides_where_flock_is_not_shared() {
    let fs_ = Tmpfs::new("4m");
    let d = DirHandle::open(fs_.path()).unwrap();

    // A live process on this host named in the record (its flock lost, as
    // on a node-local flock): held.
    let me = Holder::current("run elsewhere");
    plant_record(&fs_, &me);
    assert!(matches!(
        SetLock::try_lock(&d, lock_name(MARKER), "clean").unwrap(),
        TryLock::Held {
            liveness: Liveness::Live,
            ..
        }
    ));

    // Our pid, but another start time: a reused pid, so stale.
    let reused = Holder {
        start_ticks: me.start_ticks.map(|t| t + 1),
        ..me.clone()
    };
    plant_record(&fs_, &reused);
    let TryLock::Acquired(lock) = SetLock::try_lock(&d, lock_name(MARKER), "clean").unwrap() else {
        panic!("a reused pid kept the lock");
    };
    assert_eq!(
        lock.stale_holder().unwrap().1,
        "its pid now belongs to another process"
    );
    drop(lock);

    // Another host: unknown, refused unless taken over on request.
    let other = Holder {
        host: "some-other-node".into(),
        ..me.clone()
    };
    plant_record(&fs_, &other);
    match SetLock::try_lock(&d, lock_name(MARKER), "clean").unwrap() {
        TryLock::Held { holder, liveness } => {
            assert_eq!(liveness, Liveness::Unknown);
            assert_eq!(holder.unwrap().host, "some-other-node");
        }
        TryLock::Acquired(_) => panic!("took a lock held on another host"),
    }
    let opts = LockOptions {
        take_over_other_host: true,
    };
    let TryLock::Acquired(lock) =
        SetLock::try_lock_with(&d, lock_name(MARKER), "clean --force", opts).unwrap()
    else {
        panic!("take-over refused");
    };
    assert_eq!(lock.stale_holder().unwrap().0.host, "some-other-node");
    drop(lock);
    // Dropping clears the record: the next one finds no holder.
    let TryLock::Acquired(lock) = SetLock::try_lock(&d, lock_name(MARKER), "clean").unwrap() else {
        panic!();
    };
    assert!(lock.stale_holder().is_none());

    // A gone pid (beyond pid_max) is stale.
    drop(lock);
    plant_record(&fs_, &Holder { pid: 1 << 30, ..me });
    let TryLock::Acquired(lock) = SetLock::try_lock(&d, lock_name(MARKER), "clean").unwrap() else {
        panic!();
    };
    assert_eq!(lock.stale_holder().unwrap().1, "its process is gone");
}

#[test]
fn the_lock_file_is_never_a_followed_link() {
    let fs_ = Tmpfs::new("4m");
    std::fs::write(fs_.join("victim"), b"foreign").unwrap();
    std::os::unix::fs::symlink(fs_.join("victim"), fs_.join(lock_name(MARKER))).unwrap();
    let d = DirHandle::open(fs_.path()).unwrap();
    let e = SetLock::try_lock(&d, lock_name(MARKER), "run").unwrap_err();
    assert_eq!(e.refusal(), Some(&safefs::Refusal::Symlink), "{e}");
    assert_eq!(std::fs::read(fs_.join("victim")).unwrap(), b"foreign");
}

#[test]
fn a_released_lock_is_free_while_another_thread_forks() {
    // Another thread of this process keeps starting children. Each child
    // briefly shares every open file between its fork and its exec; a lock
    // released only by closing our descriptor would stay held by that copy.
    let fs_ = Tmpfs::new("4m");
    let d = DirHandle::open(fs_.path()).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let spawner = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = Command::new("true").status();
            }
        })
    };
    let mut refused = 0;
    for _ in 0..3000 {
        match SetLock::try_lock(&d, lock_name(MARKER), "run").unwrap() {
            TryLock::Acquired(lock) => drop(lock),
            TryLock::Held { .. } => refused += 1,
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spawner.join().unwrap();
    assert_eq!(refused, 0, "a released lock was found held {refused} times");
}

/// A hard link to a foreign file planted under the lock's name is refused,
/// not truncated by the holder record (found by the race harness of
/// crates/ioscale/tests/races.rs: seed 13, iteration 106).
#[test]
fn a_hard_link_under_the_lock_name_is_refused_not_truncated() {
    let fs_ = Tmpfs::new("4m");
    let d = DirHandle::open(fs_.path()).unwrap();
    let foreign = fs_.join("foreign.txt");
    std::fs::write(&foreign, b"someone else's data").unwrap();
    std::fs::hard_link(&foreign, fs_.join(lock_name(MARKER))).unwrap();
    let e = match SetLock::try_lock(&d, lock_name(MARKER), "run") {
        Err(e) => e,
        Ok(_) => panic!("a hard-linked lock file was used"),
    };
    assert!(e.to_string().contains("hard links"), "{e}");
    assert_eq!(std::fs::read(&foreign).unwrap(), b"someone else's data");
}
