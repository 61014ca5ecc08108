//! Marker writing: atomic where the target renames, in place where it
//! cannot, no temporary file left on failure, leftovers recognised.

mod common;

use std::fs;
use std::os::unix::fs::MetadataExt;

use common::Tmpfs;
use safefs::{is_own_temp_name, replace_at, temp_base, DirHandle, Refusal, Written};

#[test]
fn a_marker_is_replaced_by_rename_and_never_through_a_link_or_device() {
    let fs_ = Tmpfs::new("4m");
    let d = DirHandle::open(fs_.path()).unwrap();
    assert_eq!(
        replace_at(&d, ".ioscale-marker", b"v1").unwrap(),
        Written::Renamed
    );
    let ino = fs::metadata(fs_.join(".ioscale-marker")).unwrap().ino();
    assert_eq!(
        replace_at(&d, ".ioscale-marker", b"v2").unwrap(),
        Written::Renamed
    );
    assert_eq!(fs::read(fs_.join(".ioscale-marker")).unwrap(), b"v2");
    assert_ne!(
        fs::metadata(fs_.join(".ioscale-marker")).unwrap().ino(),
        ino
    );

    fs::write(fs_.join("victim"), b"foreign").unwrap();
    std::os::unix::fs::symlink(fs_.join("victim"), fs_.join("m2")).unwrap();
    let e = replace_at(&d, "m2", b"x").unwrap_err();
    assert_eq!(e.refusal(), Some(&Refusal::Symlink));
    rustix::fs::mknodat(
        &d,
        "m3",
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let e = replace_at(&d, "m3", b"x").unwrap_err();
    assert!(
        matches!(e.refusal(), Some(Refusal::WrongKind { found: "FIFO", .. })),
        "{e}"
    );
    assert_eq!(fs::read(fs_.join("victim")).unwrap(), b"foreign");
    assert_eq!(
        common::listing(fs_.path()),
        vec![".ioscale-marker", "m2", "m3", "victim"]
    );
}

#[test]
fn a_full_file_system_leaves_the_old_marker_and_no_temporary_file() {
    let Some(fs_) = Tmpfs::small("64k") else {
        return;
    };
    let d = DirHandle::open(fs_.path()).unwrap();
    let sub = d.mkdir_at("ioscale.d", 0o755).unwrap();
    replace_at(&sub, ".ioscale-marker", b"the old marker").unwrap();
    let e = replace_at(&sub, ".ioscale-marker", &vec![b'm'; 1 << 20]).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(28), "{e}");
    assert_eq!(
        fs::read(fs_.join("ioscale.d/.ioscale-marker")).unwrap(),
        b"the old marker"
    );
    assert_eq!(
        common::listing(fs_.path()),
        vec!["ioscale.d", "ioscale.d/.ioscale-marker"]
    );
}

#[test]
fn clean_can_find_leftover_temporary_names() {
    let fs_ = Tmpfs::new("4m");
    let d = DirHandle::open(fs_.path()).unwrap();
    // What a crash between create and rename leaves, in the new scheme and
    // in the scheme ioscale used before.
    let t = safefs::temp_name(".ioscale-marker");
    d.create_at(&t, 0o644).unwrap();
    d.create_at(".ioscale-meta-marker.tmp", 0o644).unwrap();
    fs::write(fs_.join("file.00000000"), b"data").unwrap();
    fs::write(fs_.join("notes.tmp"), b"user's").unwrap();
    let mut own: Vec<_> = d
        .list()
        .unwrap()
        .into_iter()
        .filter(|n| is_own_temp_name(n))
        .collect();
    own.sort();
    assert_eq!(
        own,
        vec![
            t.clone(),
            std::ffi::OsString::from(".ioscale-meta-marker.tmp")
        ]
    );
    assert_eq!(temp_base(&t).unwrap(), ".ioscale-marker");
    for n in own {
        d.unlink_at(&n, None).unwrap();
    }
    assert_eq!(
        common::listing(fs_.path()),
        vec!["file.00000000", "notes.tmp"]
    );
}

/// A file replaced by rename keeps its mode (fourth adversarial pass:
/// a 0600 record, or a 0600 file behind an output link, came back 0644,
/// readable by everyone).
#[test]
fn a_replaced_file_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let fs_ = Tmpfs::new("4m");
    let d = DirHandle::open(fs_.path()).unwrap();
    let p = fs_.join("private.json");
    fs::write(&p, b"old").unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(
        replace_at(&d, "private.json", b"new").unwrap(),
        Written::Renamed
    );
    assert_eq!(fs::read(&p).unwrap(), b"new");
    assert_eq!(fs::metadata(&p).unwrap().mode() & 0o7777, 0o600);
    // A new file gets the usual mode.
    replace_at(&d, "fresh.json", b"x").unwrap();
    assert_eq!(
        fs::metadata(fs_.join("fresh.json")).unwrap().mode() & 0o600,
        0o600
    );
}
