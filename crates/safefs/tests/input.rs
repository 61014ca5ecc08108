//! Record input: only regular files, and no more than the limit.

mod common;

use std::fs;
use std::io::{Read, Write};
use std::path::Path;

use common::Tmpfs;
use safefs::{open_bounded, read_bounded, FlagErrorKind, MAX_RECORD_BYTES};

fn refused(e: &safefs::FlagError, why: &str) {
    assert_eq!(e.exit_code(), 2, "{e}");
    assert!(
        matches!(&e.kind, FlagErrorKind::Refused(w) if w.contains(why)),
        "{e}"
    );
}

#[test]
fn devices_fifos_and_directories_are_refused_before_reading() {
    let e = read_bounded("RECORD", Path::new("/dev/zero"), MAX_RECORD_BYTES).unwrap_err();
    refused(&e, "character device");
    assert!(e.to_string().starts_with("RECORD /dev/zero: "), "{e}");
    let fs_ = Tmpfs::new("4m");
    let d = safefs::DirHandle::open(fs_.path()).unwrap();
    // A FIFO with no writer: refused, not a hang.
    rustix::fs::mknodat(
        &d,
        "pipe",
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    refused(
        &read_bounded("--resume", &fs_.join("pipe"), 1024).unwrap_err(),
        "FIFO",
    );
    refused(
        &read_bounded("RECORD", fs_.path(), 1024).unwrap_err(),
        "directory",
    );
    let e = read_bounded("RECORD", &fs_.join("missing.json"), 1024).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(2));
}

#[test]
fn files_over_the_limit_are_refused_and_the_limit_itself_is_read() {
    let fs_ = Tmpfs::new("4m");
    let p = fs_.join("r.json");
    fs::write(&p, vec![b'a'; 4096]).unwrap();
    let e = read_bounded("RECORD", &p, 4095).unwrap_err();
    refused(&e, "4096 bytes, more than the 4095");
    assert_eq!(read_bounded("RECORD", &p, 4096).unwrap().len(), 4096);
    let (mut r, size) = open_bounded("RECORD", &p, 4096).unwrap();
    assert_eq!(size, 4096);
    // The file grows after the open: the reader still stops at the limit.
    fs::OpenOptions::new()
        .append(true)
        .open(&p)
        .unwrap()
        .write_all(&[b'b'; 100])
        .unwrap();
    let mut got = Vec::new();
    r.read_to_end(&mut got).unwrap();
    assert_eq!(got.len(), 4096);
    assert!(read_bounded("RECORD", &p, 4096).is_err());
    // A link to a regular file is the user's choice and is read.
    std::os::unix::fs::symlink(&p, fs_.join("l.json")).unwrap();
    assert_eq!(
        read_bounded("RECORD", &fs_.join("l.json"), 8192)
            .unwrap()
            .len(),
        4196
    );
}
