//! The POSIX backend under attack on a real file system: a symbolic link
//! (to a foreign file, a foreign directory, a device), a FIFO, a device
//! node, a hard link of a foreign file and `..`, planted at every kind of
//! name the backend is handed — a data file's name, a metadata loop's
//! file name, a directory below a held one, a held directory's entries —
//! and each call either refuses or works on ioscale's own entry, never
//! through what was planted. Every foreign file is checked by content,
//! permission bits and extended attributes afterwards. The FIFO cases run
//! on a watchdog thread: an open that blocks is a failure, not a hang.

use std::ffi::{CStr, CString, OsStr};
use std::fs;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use engine::backend::posix::Posix;
use engine::backend::{Access, Backend, Create, DataFile, Dir, Kind, OpenHow, Refusal, Removal};

const KEY: &CStr = c"user.ioscale";

/// A foreign file, checked by content, mode and xattr.
struct Foreign {
    path: PathBuf,
    data: Vec<u8>,
    mode: u32,
}

impl Foreign {
    fn plant(path: PathBuf) -> Foreign {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7 + 3) as u8).collect();
        fs::write(&path, &data).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o604)).unwrap();
        Foreign {
            path,
            data,
            mode: 0o604,
        }
    }

    fn assert_intact(&self, what: &str) {
        let m = fs::symlink_metadata(&self.path).unwrap();
        assert!(m.is_file(), "{what}: {} replaced", self.path.display());
        let now = fs::read(&self.path).unwrap();
        assert!(
            now == self.data,
            "{what}: {} rewritten ({} bytes, planted {})",
            self.path.display(),
            now.len(),
            self.data.len()
        );
        assert_eq!(
            m.permissions().mode() & 0o7777,
            self.mode,
            "{what}: {} chmod'ed",
            self.path.display()
        );
        let mut buf = [0u8; 64];
        assert!(
            rustix_free_getxattr(&self.path, &mut buf).is_err(),
            "{what}: {} got an xattr",
            self.path.display()
        );
    }
}

/// lgetxattr without another dependency: through the backend's own call,
/// relative to the file's directory.
fn rustix_free_getxattr(p: &Path, out: &mut [u8]) -> std::io::Result<usize> {
    let dir = Posix::at_path(p.parent().unwrap()).unwrap();
    Posix::get_xattr(&dir, &nul(p.file_name().unwrap()), KEY, out)
}

fn nul(s: &OsStr) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

/// A scratch directory with a held directory `held/` and a foreign
/// directory `victim/` holding a foreign file.
struct Scene {
    _tmp: tempfile::TempDir,
    held: PathBuf,
    victim_dir: PathBuf,
    victim: Foreign,
}

impl Scene {
    fn new() -> Scene {
        let tmp = tempfile::Builder::new()
            .prefix("ioscale-posix-backend-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let held = tmp.path().join("held");
        let victim_dir = tmp.path().join("victim");
        fs::create_dir(&held).unwrap();
        fs::create_dir(&victim_dir).unwrap();
        let victim = Foreign::plant(victim_dir.join("file.00000000"));
        Scene {
            _tmp: tmp,
            held,
            victim_dir,
            victim,
        }
    }

    fn at(&self) -> OwnedFd {
        Posix::at_path(&self.held).unwrap()
    }

    fn dir(&self) -> safefs::DirHandle {
        Posix.open_target(&self.held).unwrap()
    }

    /// Plants `what` at `held/name`.
    fn plant(&self, name: &str, what: Plant) {
        let p = self.held.join(name);
        let _ = fs::remove_file(&p);
        match what {
            Plant::LinkToFile => std::os::unix::fs::symlink(&self.victim.path, &p).unwrap(),
            Plant::LinkToDir => std::os::unix::fs::symlink(&self.victim_dir, &p).unwrap(),
            Plant::Fifo => mknod(&p, libc::S_IFIFO, 0),
            Plant::CharDevice => mknod(&p, libc::S_IFCHR, libc::makedev(1, 3)),
            Plant::HardLink => fs::hard_link(&self.victim.path, &p).unwrap(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Plant {
    LinkToFile,
    LinkToDir,
    Fifo,
    CharDevice,
    HardLink,
}

const FILE_PLANTS: [Plant; 5] = [
    Plant::LinkToFile,
    Plant::LinkToDir,
    Plant::Fifo,
    Plant::CharDevice,
    Plant::HardLink,
];

fn mknod(p: &Path, kind: libc::mode_t, dev: libc::dev_t) {
    let c = CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; no other memory is passed.
    let r = unsafe { libc::mknod(c.as_ptr(), kind | 0o666, dev) };
    assert_eq!(
        r,
        0,
        "mknod {}: {}",
        p.display(),
        std::io::Error::last_os_error()
    );
}

/// Runs `f` on a thread and fails if it has not returned within 10 s (an
/// open blocked on a FIFO): the test reports instead of hanging.
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("{what}: blocked (a FIFO opened without O_NONBLOCK?)"))
}

/// Every way the loops and the data path open a file.
fn opens() -> Vec<(&'static str, OpenHow)> {
    let w = OpenHow {
        write: true,
        ..OpenHow::default()
    };
    vec![
        (
            "read",
            OpenHow {
                read: true,
                ..OpenHow::default()
            },
        ),
        ("overwrite", w),
        (
            "truncate",
            OpenHow {
                truncate: true,
                ..w
            },
        ),
        ("append", OpenHow { append: true, ..w }),
        (
            "write, made if missing",
            OpenHow {
                create: Create::IfMissing,
                ..w
            },
        ),
        ("read-write", OpenHow { read: true, ..w }),
    ]
}

/// A data file's name (the data worker's open, once per phase): a link,
/// a FIFO, a device or a hard link of a foreign file is refused by every
/// kind of open, promptly, and the foreign file is untouched.
#[test]
fn a_data_file_name_refuses_everything_but_ioscales_own_file() {
    let s = Scene::new();
    let name = c"file.00000000";
    for plant in FILE_PLANTS {
        s.plant("file.00000000", plant);
        for (what, how) in opens() {
            let at = s.at();
            let r = bounded(what, move || {
                Posix::open_data(&at, name, how).map(|f| f.close())
            });
            assert!(r.is_err(), "{plant:?}, {what}: opened");
            s.victim.assert_intact(&format!("{plant:?}, {what}"));
        }
        // The old entry point (the POSIX FileAnchor) is the same call.
        let anchor = engine::FileAnchor::<Posix> {
            dir: std::sync::Arc::new(s.at()),
            name: name.to_owned(),
        };
        let r = bounded("anchor", move || anchor.open(libc::O_RDWR, 0o644).map(drop));
        assert!(r.is_err(), "{plant:?}: the anchor opened it");
    }
    // ioscale's own file opens.
    fs::remove_file(s.held.join("file.00000000")).unwrap();
    let f = Posix::open_data(&s.at(), name, opens()[4].1).unwrap();
    assert_eq!(f.write_at(b"ok", 0).unwrap(), 2);
    f.close().unwrap();
    s.victim.assert_intact("own file");
}

/// A metadata loop's file name (one system call per file): every open
/// refuses a link (ELOOP), none blocks on a FIFO; chmod, setxattr and
/// getxattr refuse a link; stat sees the link itself; unlink and rename
/// act on the link, never on what it points to.
#[test]
fn a_loop_file_name_is_never_followed_and_never_blocks() {
    let s = Scene::new();
    let name = b"f0.0\0";
    for plant in [Plant::LinkToFile, Plant::LinkToDir] {
        s.plant("f0.0", plant);
        for (what, how) in opens() {
            let e = Posix::open(&s.at(), name, Posix::flags(how), 0o644).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{plant:?} {what}");
        }
        assert!(
            Posix::chmod(&s.at(), name, 0o640).is_err(),
            "{plant:?} chmod"
        );
        let v = [7u8; 32];
        assert!(
            Posix::set_xattr(&s.at(), name, KEY, &v).is_err(),
            "{plant:?}"
        );
        let mut out = [0u8; 64];
        assert!(Posix::get_xattr(&s.at(), name, KEY, &mut out).is_err());
        assert_eq!(Posix::lstat(&s.at(), name).unwrap(), Kind::Symlink);
        s.victim.assert_intact(&format!("{plant:?}"));
        Posix::rename(&s.at(), name, b"f0.0.moved\0").unwrap();
        Posix::unlink(&s.at(), b"f0.0.moved\0").unwrap();
        s.victim.assert_intact(&format!("{plant:?} after unlink"));
        assert!(s.victim_dir.is_dir());
    }
    s.plant("f0.0", Plant::Fifo);
    for (what, how) in opens() {
        let at = s.at();
        let r = bounded(what, move || {
            Posix::open(&at, name, Posix::flags(how), 0o644).and_then(|mut f| {
                let mut b = [0u8; 16];
                if how.read {
                    let _ = f.read(&mut b)?;
                }
                f.close()
            })
        });
        // A read of a FIFO with no writer sees an end of file; a write
        // open with no reader fails (ENXIO): neither waits.
        if how.write && !how.read {
            assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::ENXIO), "{what}");
        }
    }
    // The calls work on ioscale's own entry.
    fs::remove_file(s.held.join("f0.0")).unwrap();
    let own = OpenHow {
        create: Create::Exclusive,
        ..opens()[1].1
    };
    let mut f = Posix::open(&s.at(), name, Posix::flags(own), 0o644).unwrap();
    assert_eq!(f.write(b"abc").unwrap(), 3);
    f.close().unwrap();
    Posix::chmod(&s.at(), name, 0o600).unwrap();
    let m = fs::metadata(s.held.join("f0.0")).unwrap();
    assert_eq!(m.permissions().mode() & 0o777, 0o600);
    match Posix::set_xattr(&s.at(), name, KEY, &[1u8; 32]) {
        Ok(()) => {
            let mut out = [0u8; 64];
            assert_eq!(Posix::get_xattr(&s.at(), name, KEY, &mut out).unwrap(), 32);
        }
        // A file system without user xattrs says so; nothing to check.
        Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP)),
    }
}

/// A directory below a held one (thread and hashed directories): a link
/// at any component, a file, a FIFO, `..` or an absolute path is refused
/// by `open_beneath` and `mkdir_beneath`, and nothing is made in the
/// foreign directory.
#[test]
fn a_directory_beneath_is_never_reached_through_a_link_or_dotdot() {
    let s = Scene::new();
    fs::create_dir_all(s.held.join("thr.000/h0")).unwrap();
    std::os::unix::fs::symlink(&s.victim_dir, s.held.join("thr.001")).unwrap();
    std::os::unix::fs::symlink(&s.victim_dir, s.held.join("thr.000/h1")).unwrap();
    mknod(&s.held.join("thr.002"), libc::S_IFIFO, 0);
    fs::write(s.held.join("thr.003"), b"x").unwrap();
    let before: Vec<_> = fs::read_dir(&s.victim_dir).unwrap().collect();
    for rel in [
        &b"thr.001\0"[..],
        b"thr.001/h0\0",
        b"thr.000/h1\0",
        b"thr.000/h1/h0\0",
        b"thr.002\0",
        b"thr.003\0",
        b"..\0",
        b"thr.000/../..\0",
        b"../victim\0",
    ] {
        let at = s.at();
        let r = bounded("open_beneath", move || {
            Posix::open_beneath(&at, rel).map(drop)
        });
        assert!(r.is_err(), "{}: opened", String::from_utf8_lossy(rel));
    }
    for rel in [
        &b"thr.001/new\0"[..],
        b"thr.000/h1/new\0",
        b"../victim/new\0",
        b"thr.000/../../victim/new\0",
    ] {
        assert!(
            Posix::mkdir_beneath(&s.at(), rel, 0o755).is_err(),
            "{}: made",
            String::from_utf8_lossy(rel)
        );
    }
    let after: Vec<_> = fs::read_dir(&s.victim_dir).unwrap().collect();
    assert_eq!(
        before.len(),
        after.len(),
        "something was made in the victim"
    );
    s.victim.assert_intact("beneath");
    // ioscale's own directories open.
    Posix::open_beneath(&s.at(), b"thr.000/h0\0").unwrap();
    Posix::mkdir_beneath(&s.at(), b"thr.000/h0/h2\0", 0o755).unwrap();
    assert!(s.held.join("thr.000/h0/h2").is_dir());
}

/// A held directory's entries (setup and cleanup): every call of the
/// backend's `Dir` refuses what was planted under an entry's name, and
/// `..` or a name with a `/` as a name.
#[test]
fn a_held_directorys_entries_refuse_what_was_planted() {
    let s = Scene::new();
    let d = s.dir();
    for plant in FILE_PLANTS {
        s.plant("e", plant);
        let why = format!("{plant:?}");
        assert!(Dir::open_dir_at(&d, "e", None).is_err(), "{why}: open dir");
        assert!(Dir::mkdir_at(&d, "e", 0o755).is_err(), "{why}: mkdir");
        assert!(Dir::create_at(&d, "e", 0o644).is_err(), "{why}: create");
        let r = bounded("open_file_at", {
            let d = s.dir();
            move || Dir::open_file_at(&d, "e", Access::ReadWrite, None).map(drop)
        });
        // A hard link is a regular file to open_file_at: the lock file's
        // check refuses it; reading a marker through it reads the victim
        // and changes nothing.
        if !matches!(plant, Plant::HardLink) {
            assert!(r.is_err(), "{why}: opened");
        }
        let r = bounded("read_small", {
            let d = s.dir();
            move || d.read_small("e", 1 << 20)
        });
        if !matches!(plant, Plant::HardLink) {
            assert!(r.is_none(), "{why}: read");
        }
        assert!(Dir::rmdir_at(&d, "e", None).is_err(), "{why}: rmdir");
        if !matches!(plant, Plant::HardLink) {
            assert!(Dir::unlink_at(&d, "e", None).is_err(), "{why}: unlink");
            assert!(
                Dir::replace_at(&d, "e", b"{}", true).is_err(),
                "{why}: replace"
            );
        }
        s.victim.assert_intact(&why);
        assert!(fs::symlink_metadata(s.held.join("e")).is_ok() || matches!(plant, Plant::HardLink));
    }
    for bad in ["..", ".", "a/b", ""] {
        let e = Dir::open_dir_at(&d, bad, None).unwrap_err();
        assert_eq!(e.refusal(), Some(&Refusal::BadName), "{bad:?}");
        assert!(Dir::unlink_at(&d, bad, None).is_err());
        assert!(Dir::mkdir_at(&d, bad, 0o755).is_err());
    }
    s.victim.assert_intact("names");
}

/// The removal of a set: a link at a file's or a directory's name, or a
/// directory swapped for another after its identity was recorded, is
/// left and reported; nothing foreign is removed.
#[test]
fn a_removal_leaves_whatever_is_not_ioscales() {
    let s = Scene::new();
    let d = s.dir();
    let made = Dir::mkdir_at(&d, "dir.00000000", 0o755).unwrap();
    let id = Dir::id(&made);
    drop(made);
    // Swap the directory for another holding a file of the scheme's name.
    fs::rename(s.held.join("dir.00000000"), s.held.join("moved")).unwrap();
    fs::create_dir(s.held.join("dir.00000000")).unwrap();
    let other = Foreign::plant(s.held.join("dir.00000000/file.00000000"));
    s.plant("file.00000001", Plant::LinkToFile);
    let mut r = Removal::new();
    r.expect("dir.00000000", id)
        .file("dir.00000000/file.00000000")
        .file("file.00000001")
        .dir("dir.00000000");
    let rep = Dir::remove(&d, &r);
    assert!(!rep.is_complete());
    assert!(rep.left_total >= 2, "{:?}", rep.describe());
    other.assert_intact("swapped directory");
    s.victim.assert_intact("link");
    assert!(fs::symlink_metadata(s.held.join("file.00000001"))
        .unwrap()
        .file_type()
        .is_symlink());
}

/// The user's own paths (dd's and the IOR front-end's files, whose links
/// the tools follow): a link to a regular file opens that file; a FIFO,
/// a device or a directory is refused without blocking.
#[test]
fn a_users_path_opens_regular_files_only() {
    let s = Scene::new();
    let p = s.held.join("u");
    std::os::unix::fs::symlink(&s.victim.path, &p).unwrap();
    let how = OpenHow {
        read: true,
        ..OpenHow::default()
    };
    let mut f = Posix::open_path(&p, how).unwrap();
    let mut b = [0u8; 4];
    assert_eq!(f.read(&mut b).unwrap(), 4);
    for plant in [Plant::Fifo, Plant::CharDevice] {
        s.plant("u", plant);
        for (what, how) in opens() {
            let p = p.clone();
            let r = bounded(what, move || Posix::open_path(&p, how).map(drop));
            assert!(r.is_err(), "{plant:?} {what}: opened");
        }
    }
    let _ = fs::remove_file(&p);
    fs::create_dir(&p).unwrap();
    assert!(Posix::open_path(&p, how).is_err());
    s.victim.assert_intact("user paths");
}

/// A symbolic link to a block device (a loop device over a file of known
/// bytes), and a block device node, under a data file's name: every open
/// is refused and the device's bytes are unchanged.
#[test]
fn a_block_device_under_a_data_name_is_never_written() {
    let s = Scene::new();
    let backing = s.held.parent().unwrap().join("loop.img");
    let pattern: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
    fs::write(&backing, &pattern).unwrap();
    let out = std::process::Command::new("losetup")
        .args(["--find", "--show"])
        .arg(&backing)
        .output();
    let dev = match out {
        Ok(o) if o.status.success() => String::from_utf8(o.stdout).unwrap().trim().to_string(),
        _ => {
            eprintln!("skipped: no loop device (losetup failed; needs root)");
            return;
        }
    };
    let rdev = fs::metadata(&dev).unwrap().rdev();
    std::os::unix::fs::symlink(&dev, s.held.join("file.00000000")).unwrap();
    mknod(&s.held.join("file.00000001"), libc::S_IFBLK, rdev);
    for name in [c"file.00000000", c"file.00000001"] {
        for (what, how) in opens() {
            let at = s.at();
            let r = Posix::open_data(&at, name, how);
            assert!(r.is_err(), "{name:?} {what}: opened the device");
            let r = Posix::open(&at, name.to_bytes_with_nul(), Posix::flags(how), 0o644);
            if name == c"file.00000000" {
                assert!(r.is_err(), "{name:?} {what}: the loop opened the link");
            }
        }
    }
    let _ = std::process::Command::new("losetup")
        .args(["-d", &dev])
        .status();
    assert!(fs::metadata(s.held.join("file.00000001"))
        .unwrap()
        .file_type()
        .is_block_device());
    assert!(
        fs::read(&backing).unwrap() == pattern,
        "the device was written"
    );
}
