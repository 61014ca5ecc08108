//! Output paths: devices and FIFOs are written into, never replaced;
//! regular files are replaced atomically; anything else is refused.

mod common;

use std::fs;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use common::Tmpfs;
use safefs::{check_output, write_output, FlagErrorKind, OutputTarget, OutputWritten, Written};

fn is_char_device(p: &str) -> bool {
    fs::symlink_metadata(p)
        .unwrap()
        .file_type()
        .is_char_device()
}

#[test]
fn dev_null_is_written_into_and_stays_a_device() {
    let w = write_output("--json", Path::new("/dev/null"), b"{}").unwrap();
    assert_eq!(w, OutputWritten::Stream);
    assert!(is_char_device("/dev/null"));
}

#[test]
fn dev_full_reports_enospc_and_stays_a_device() {
    let rdev = fs::metadata("/dev/full").unwrap().rdev();
    let e = write_output("--json", Path::new("/dev/full"), b"{\"phases\":[]}").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(28), "ENOSPC: {e}");
    assert_eq!(e.exit_code(), 1, "an I/O error, never exit 0");
    assert!(e.to_string().starts_with("--json /dev/full: "), "{e}");
    assert!(is_char_device("/dev/full"));
    assert_eq!(fs::metadata("/dev/full").unwrap().rdev(), rdev);
    // And no temporary file beside it.
    assert!(!fs::read_dir("/dev")
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().contains("ioscale-tmp")));
}

#[test]
fn a_fifo_is_written_into_for_its_reader() {
    let fs_ = Tmpfs::new("4m");
    let fifo = fs_.join("pipe");
    let d = safefs::DirHandle::open(fs_.path()).unwrap();
    rustix::fs::mknodat(
        &d,
        "pipe",
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    assert!(matches!(
        check_output("--csv", &fifo).unwrap(),
        OutputTarget::Stream { .. }
    ));
    let f2 = fifo.clone();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        fs::File::open(&f2).unwrap().read_to_string(&mut s).unwrap();
        s
    });
    let w = write_output("--csv", &fifo, b"op,bw\nwrite,1\n").unwrap();
    assert_eq!(w, OutputWritten::Stream);
    assert_eq!(reader.join().unwrap(), "op,bw\nwrite,1\n");
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(common::listing(fs_.path()), vec!["pipe"]);
}

#[test]
fn a_regular_file_is_replaced_atomically_and_a_link_to_one_stays_a_link() {
    let fs_ = Tmpfs::new("4m");
    let out = fs_.join("r.json");
    // A missing name in an existing directory.
    assert_eq!(
        write_output("--json", &out, b"first").unwrap(),
        OutputWritten::File(Written::Renamed)
    );
    let ino = fs::metadata(&out).unwrap().ino();
    assert_eq!(
        write_output("--json", &out, b"second").unwrap(),
        OutputWritten::File(Written::Renamed)
    );
    assert_eq!(fs::read(&out).unwrap(), b"second");
    assert_ne!(
        fs::metadata(&out).unwrap().ino(),
        ino,
        "replaced by rename, not rewritten"
    );

    // A link to a regular file: the file it names gets the content.
    fs::create_dir(fs_.join("real")).unwrap();
    fs::write(fs_.join("real/r.json"), b"old").unwrap();
    std::os::unix::fs::symlink("real/r.json", fs_.join("link.json")).unwrap();
    write_output("--html", &fs_.join("link.json"), b"new").unwrap();
    assert!(fs::symlink_metadata(fs_.join("link.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(fs_.join("real/r.json")).unwrap(), b"new");
    assert_eq!(
        common::listing(fs_.path()),
        vec!["link.json", "r.json", "real", "real/r.json"],
        "no temporary file left"
    );
}

#[test]
fn a_failed_write_of_a_regular_file_leaves_the_old_one_and_no_temp() {
    let Some(fs_) = Tmpfs::small("64k") else {
        return;
    };
    let out = fs_.join("r.json");
    fs::write(&out, b"the previous record").unwrap();
    let big = vec![b'x'; 1 << 20];
    let e = write_output("--json", &out, &big).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(28), "{e}");
    assert_eq!(e.exit_code(), 1);
    assert_eq!(fs::read(&out).unwrap(), b"the previous record");
    assert_eq!(common::listing(fs_.path()), vec!["r.json"]);
}

#[test]
fn directories_block_devices_sockets_dangling_links_and_missing_dirs_are_refused() {
    let fs_ = Tmpfs::new("4m");
    fs::create_dir(fs_.join("adir")).unwrap();
    let _sock = std::os::unix::net::UnixListener::bind(fs_.join("sock")).unwrap();
    std::os::unix::fs::symlink(fs_.join("nothing"), fs_.join("dangling")).unwrap();
    let d = safefs::DirHandle::open(fs_.path()).unwrap();
    // A block device node of our own (loop0's numbers), never opened.
    rustix::fs::mknodat(
        &d,
        "blk",
        rustix::fs::FileType::BlockDevice,
        rustix::fs::Mode::from_raw_mode(0o600),
        rustix::fs::makedev(7, 0),
    )
    .unwrap();
    std::os::unix::fs::symlink(fs_.join("blk"), fs_.join("blklink")).unwrap();
    let cases = [
        ("adir", "directory"),
        ("sock", "socket"),
        ("dangling", "symbolic link to nothing"),
        ("blk", "block device"),
        ("blklink", "block device"),
        ("missing/r.json", "does not exist"),
    ];
    for (name, why) in cases {
        let p = fs_.join(name);
        for e in [
            check_output("--json", &p).unwrap_err(),
            write_output("--json", &p, b"x").unwrap_err(),
        ] {
            assert_eq!(e.exit_code(), 2, "{name}: {e}");
            assert_eq!(e.flag, "--json");
            assert!(
                matches!(&e.kind, FlagErrorKind::Refused(w) if w.contains(why)),
                "{name}: {e}"
            );
            assert!(
                e.to_string()
                    .starts_with(&format!("--json {}", p.display())),
                "{e}"
            );
        }
    }
    // Nothing was created or changed.
    assert!(fs::symlink_metadata(fs_.join("blk"))
        .unwrap()
        .file_type()
        .is_block_device());
    assert!(!fs_.join("nothing").exists());
    assert_eq!(
        common::listing(fs_.path()),
        vec!["adir", "blk", "blklink", "dangling", "sock"]
    );
}

#[test]
fn dash_and_the_standard_descriptors_are_written_through_the_descriptor() {
    for p in ["-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"] {
        assert_eq!(
            check_output("--json", Path::new(p)).unwrap(),
            OutputTarget::Stdout,
            "{p}"
        );
    }
    assert_eq!(
        check_output("--json", Path::new("/dev/stderr")).unwrap(),
        OutputTarget::Stderr
    );
}

#[test]
fn dev_stdout_redirected_to_a_file_is_written_through_not_replaced() {
    // The test binary re-run as a child whose stdout is a regular file.
    if std::env::var_os("SAFEFS_STDOUT_CHILD").is_some() {
        print!("before ");
        write_output("--json", Path::new("/dev/stdout"), b"{\"r\":1}").unwrap();
        return;
    }
    let fs_ = Tmpfs::new("4m");
    let out = fs_.join("out.txt");
    let f = fs::File::create(&out).unwrap();
    let ino = fs::metadata(&out).unwrap().ino();
    let st = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "dev_stdout_redirected_to_a_file_is_written_through_not_replaced",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SAFEFS_STDOUT_CHILD", "1")
        .stdout(f)
        .status()
        .unwrap();
    assert!(st.success());
    let text = fs::read_to_string(&out).unwrap();
    assert!(text.contains("before {\"r\":1}"), "{text}");
    assert_eq!(
        fs::metadata(&out).unwrap().ino(),
        ino,
        "the same file, not a renamed one"
    );
    assert_eq!(common::listing(fs_.path()), vec!["out.txt"]);
}
