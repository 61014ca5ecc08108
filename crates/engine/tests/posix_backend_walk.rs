//! The POSIX backend's directory walk for kernels without `openat2`
//! (before 5.6, or a seccomp filter refusing it), forced with
//! `IOSCALE_NO_OPENAT2=1` (read once per process: hence a test binary of
//! its own): a link at any component, a file, a FIFO or `..` is refused,
//! and nothing is made through a link.

use std::fs;

use engine::backend::posix::Posix;
use engine::backend::Backend;

#[test]
fn the_walk_refuses_links_and_dotdot_at_every_component() {
    std::env::set_var("IOSCALE_NO_OPENAT2", "1");
    let tmp = tempfile::Builder::new()
        .prefix("ioscale-posix-walk-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let (held, victim) = (tmp.path().join("held"), tmp.path().join("victim"));
    fs::create_dir_all(held.join("thr.000/h0")).unwrap();
    fs::create_dir(&victim).unwrap();
    fs::write(victim.join("keep"), b"foreign").unwrap();
    std::os::unix::fs::symlink(&victim, held.join("thr.001")).unwrap();
    std::os::unix::fs::symlink(&victim, held.join("thr.000/h1")).unwrap();
    fs::write(held.join("thr.002"), b"x").unwrap();
    let at = Posix::at_path(&held).unwrap();
    for rel in [
        &b"thr.001\0"[..],
        b"thr.001/h0\0",
        b"thr.000/h1\0",
        b"thr.000/h1/h0\0",
        b"thr.002\0",
        b"..\0",
        b"thr.000/..\0",
        b"thr.000/../../victim\0",
    ] {
        assert!(
            Posix::open_beneath(&at, rel).is_err(),
            "{}: opened",
            String::from_utf8_lossy(rel)
        );
    }
    for rel in [
        &b"thr.001/new\0"[..],
        b"thr.000/h1/new\0",
        b"../victim/new\0",
    ] {
        assert!(Posix::mkdir_beneath(&at, rel, 0o755).is_err());
    }
    let names: Vec<_> = fs::read_dir(&victim).unwrap().collect();
    assert_eq!(names.len(), 1, "something was made in the victim");
    Posix::open_beneath(&at, b"thr.000/h0\0").unwrap();
    Posix::mkdir_beneath(&at, b"thr.000/h0/h2\0", 0o755).unwrap();
    assert!(held.join("thr.000/h0/h2").is_dir());
}
