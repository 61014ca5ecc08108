//! The probe on real things: a thread and a process burning CPU, and an
//! ext4 file system on a loop device written with O_DIRECT.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use probe::Probe;

fn spin(d: Duration) -> u64 {
    let t0 = Instant::now();
    let mut x = 0u64;
    while t0.elapsed() < d {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
    }
    x
}

#[test]
fn own_cpu_and_machine_cpu_are_measured() {
    let p = Probe::start(Path::new("."));
    std::hint::black_box(spin(Duration::from_millis(600)));
    let r = p.finish();
    eprintln!("{r:?}");
    assert!(r.cpus >= 1);
    // A spinning thread used CPU; on a machine shared with other work it
    // may get less than a whole core, but it cannot get none.
    assert!(r.self_cores > 0.1, "{r:?}");
    assert!(r.machine_busy_cores >= r.self_cores * 0.8, "{r:?}");
    assert!(r.machine_busy_cores <= r.cpus as f64 * 1.05, "{r:?}");
}

#[test]
fn threads_waiting_for_a_cpu_are_measured() {
    // Twice as many spinning threads as CPUs: some must wait for a CPU.
    let n = 2 * probe::online_cpus() as usize;
    let p = Probe::start(Path::new("."));
    std::thread::scope(|s| {
        for _ in 0..n {
            s.spawn(|| std::hint::black_box(spin(Duration::from_millis(400))));
        }
    });
    let r = p.finish();
    eprintln!("{r:?}");
    let w = r.self_cpu_wait.expect("schedstat is available");
    assert!(
        w > 0.2,
        "{n} spinners on {} CPUs waited only {w} s/s",
        r.cpus
    );
}

#[test]
fn a_busy_other_process_is_found() {
    let mut child = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let p = Probe::start(Path::new("."));
    std::thread::sleep(Duration::from_millis(800));
    let r = p.finish();
    let _ = child.kill();
    let _ = child.wait();
    eprintln!("{r:?}");
    let top = r.top_other.clone().expect("some other process ran");
    assert_ne!(top.pid, std::process::id());
    // The spinner is sleeping-free, so something used a real share of a
    // core; and it is not this (sleeping) process.
    assert!(top.cores > 0.2, "{top:?}");
}

fn root() -> bool {
    // SAFETY: geteuid has no failure mode.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn loop_device_with_ext4_under_direct_writes() {
    if !root() || !Path::new("/dev/loop-control").exists() {
        eprintln!("note: skipping: needs root and loop devices");
        return;
    }
    // In the repository's directory (ext4), not /tmp (may be tmpfs).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let img = dir.path().join("img");
    let mnt = dir.path().join("mnt");
    fs::create_dir(&mnt).unwrap();
    let f = fs::File::create(&img).unwrap();
    f.set_len(96 << 20).unwrap();
    drop(f);
    let out = Command::new("losetup")
        .args(["--find", "--show"])
        .arg(&img)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let loopdev = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let cleanup = |mounted: bool| {
        if mounted {
            let _ = Command::new("umount").arg(&mnt).status();
        }
        let _ = Command::new("losetup").args(["-d", &loopdev]).status();
    };
    let ok = Command::new("mkfs.ext4")
        .args(["-q", "-F", &loopdev])
        .status()
        .unwrap()
        .success()
        && Command::new("mount")
            .arg(&loopdev)
            .arg(&mnt)
            .status()
            .unwrap()
            .success();
    if !ok {
        cleanup(false);
        panic!("mkfs/mount of {loopdev} failed");
    }
    let name = probe::device_of(&mnt);
    let p = Probe::start(&mnt);
    let res = (|| -> std::io::Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .custom_flags(libc::O_DIRECT)
            .open(mnt.join("data"))?;
        let layout = std::alloc::Layout::from_size_align(1 << 20, 4096).unwrap();
        // SAFETY: layout is non-zero sized; the buffer is freed below.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        // SAFETY: ptr points to 1 MiB we own.
        let buf = unsafe { std::slice::from_raw_parts(ptr, 1 << 20) };
        let mut r = Ok(());
        for _ in 0..48 {
            if let Err(e) = f.write_all(buf) {
                r = Err(e);
                break;
            }
        }
        // SAFETY: allocated above with this layout.
        unsafe { std::alloc::dealloc(ptr, layout) };
        r?;
        f.sync_all()
    })();
    let r = p.finish();
    cleanup(true);
    res.unwrap();
    eprintln!("{r:?}");
    assert_eq!(r.fs_type, "ext4");
    let d = r
        .device
        .expect("a block device under ext4 on a loop device");
    assert_eq!(Some(d.name.clone()), name);
    assert_eq!(format!("/dev/{}", d.name), loopdev);
    assert_eq!(
        d.backing.as_deref().map(Path::new),
        Some(img.canonicalize().unwrap().as_path())
    );
    // 48 MiB went to the device: at least that much was written, in
    // requests of a real size, and the device was busy some of the time.
    assert!(d.write_mib_s * r.elapsed_s >= 47.0, "{d:?}");
    assert!(d.avg_request_bytes >= 4096.0, "{d:?}");
    assert!(d.util > 0.0 && d.util <= 1.0, "{d:?}");
    assert!(d.avg_queue > 0.0, "{d:?}");
}

#[test]
fn tmpfs_has_no_device() {
    let r = Probe::start(Path::new("/dev/shm")).finish();
    assert_eq!(r.fs_type, "tmpfs");
    assert!(r.device.is_none() && r.fuse.is_none(), "{r:?}");
    let j = serde_json::to_string(&r).unwrap();
    let back: probe::Resources = serde_json::from_str(&j).unwrap();
    // serde_json's default float parsing may differ in the last bit, so
    // the round trip is compared field by field, floats to 1e-12.
    assert_eq!((back.cpus, &back.fs_type), (r.cpus, &r.fs_type));
    for (a, b) in [
        (back.elapsed_s, r.elapsed_s),
        (back.self_cores, r.self_cores),
        (back.machine_busy_cores, r.machine_busy_cores),
    ] {
        assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} vs {b}");
    }
    assert!(back.device.is_none() && back.fuse.is_none(), "{back:?}");
}
