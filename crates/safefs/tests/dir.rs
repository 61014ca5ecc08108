//! The directory handle and the tree remover on a real tmpfs: a swapped
//! path is refused and named, never followed.

mod common;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use common::Tmpfs;
use safefs::testing::Victim;
use safefs::{remove_tree, DirHandle, Refusal, Removed, Remover};

/// Makes `target/ioscale.d` with a marker, `file.0000000{0,1}` and
/// `dir.0000000{0,1}/file.00000000`, through the handles; returns the
/// handles and the naming scheme (files, dirs deepest first).
fn make_set(target: &Path) -> (DirHandle, DirHandle, Vec<PathBuf>, Vec<PathBuf>) {
    let t = DirHandle::open_target(target).unwrap();
    let root = t.mkdir_at("ioscale.d", 0o755).unwrap();
    safefs::replace_at(&root, ".ioscale-marker", b"{}").unwrap();
    let mut files = vec![PathBuf::from(".ioscale-marker")];
    let mut dirs = Vec::new();
    for i in 0..2 {
        let name = format!("file.{i:08}");
        root.create_at(&name, 0o644).unwrap();
        files.push(PathBuf::from(name));
        let d = format!("dir.{i:08}");
        let dh = root.mkdir_at(&d, 0o755).unwrap();
        let (mut f, _) = dh.create_at("file.00000000", 0o644).unwrap();
        std::io::Write::write_all(&mut f, b"ours").unwrap();
        files.push(Path::new(&d).join("file.00000000"));
        dirs.push(PathBuf::from(d));
    }
    (t, root, files, dirs)
}

#[test]
fn a_subdirectory_swapped_for_a_symlink_to_a_victim_is_refused_and_named() {
    let fs_ = Tmpfs::new("16m");
    let victim = Victim::plant(&fs_.join("VICTIM"), 1).unwrap();
    let target = fs_.join("T");
    fs::create_dir(&target).unwrap();
    let (_t, root, files, dirs) = make_set(&target);

    // Between open and remove: `mv dir.00000000 x; ln -s VICTIM dir.00000000`.
    let d0 = target.join("ioscale.d/dir.00000000");
    fs::rename(&d0, target.join("x")).unwrap();
    symlink(victim.path(), &d0).unwrap();

    let rep = remove_tree(&root, &files, &dirs);
    victim.check().unwrap();
    assert_eq!(rep.left.len(), 1, "{:?}", rep.describe());
    let left = &rep.left[0];
    assert_eq!(left.path, d0, "the error names the swapped path");
    assert_eq!(left.error.refusal(), Some(&Refusal::Symlink));
    assert!(
        left.error.to_string().contains("ioscale.d/dir.00000000"),
        "{}",
        left.error
    );
    assert!(
        left.error.to_string().contains("symbolic link"),
        "{}",
        left.error
    );
    // The directory and the one named file below it were left.
    assert_eq!(left.below, 1, "{:?}", rep.describe());
    assert_eq!(rep.left_total, 2);
    // Everything else of ours went: the marker, two files, dir.00000001
    // and its file.
    assert_eq!(rep.removed, 5);
    assert_eq!(
        common::listing(&target.join("ioscale.d")),
        vec!["dir.00000000"]
    );
    // The link is still a link, VICTIM still whole.
    assert!(fs::symlink_metadata(&d0).unwrap().file_type().is_symlink());
    victim.check().unwrap();

    // The same removal done by path, as ioscale did before this crate,
    // follows the link and deletes the victim's file: the check above can
    // fail.
    for f in &files {
        let _ = fs::remove_file(target.join("ioscale.d").join(f));
    }
    let e = victim.check().unwrap_err();
    assert!(e.contains("file.00000000 missing"), "{e}");
}

#[test]
fn the_working_directory_swapped_after_open_is_refused_at_rmdir() {
    let fs_ = Tmpfs::new("16m");
    let victim = Victim::plant(&fs_.join("VICTIM"), 2).unwrap();
    let target = fs_.join("T");
    fs::create_dir(&target).unwrap();
    let (t, root, files, dirs) = make_set(&target);

    // `mv T/ioscale.d x; ln -s VICTIM T/ioscale.d` while the run holds it.
    fs::rename(target.join("ioscale.d"), target.join("x")).unwrap();
    symlink(victim.path(), target.join("ioscale.d")).unwrap();

    // The held handle still reaches our own directory (now `x`).
    let rep = remove_tree(&root, &files, &dirs);
    assert!(rep.is_complete(), "{:?}", rep.describe());
    assert_eq!(rep.removed, 7);
    assert!(common::listing(&target.join("x")).is_empty());
    victim.check().unwrap();

    // Removing the working directory by name refuses the link.
    let e = t.rmdir_at("ioscale.d", Some(root.id())).unwrap_err();
    assert_eq!(e.refusal(), Some(&Refusal::Symlink));
    assert_eq!(e.path(), target.join("ioscale.d"));
    // Opening it again by name refuses it too.
    let e = t.open_dir_at("ioscale.d", Some(root.id())).unwrap_err();
    assert_eq!(e.refusal(), Some(&Refusal::Symlink));
    let e = DirHandle::open(target.join("ioscale.d")).unwrap_err();
    assert_eq!(e.refusal(), Some(&Refusal::Symlink));
    victim.check().unwrap();
}

#[test]
fn a_directory_swapped_for_another_directory_is_refused_by_identity() {
    let fs_ = Tmpfs::new("16m");
    let target = fs_.join("T");
    fs::create_dir(&target).unwrap();
    let (t, root, files, dirs) = make_set(&target);
    let id0 = root.open_dir_at("dir.00000000", None).unwrap().id();

    // A foreign directory with a file of the scheme's name moved into place.
    let foreign = fs_.join("foreign");
    fs::create_dir(&foreign).unwrap();
    fs::write(foreign.join("file.00000000"), b"not ioscale's").unwrap();
    fs::rename(target.join("ioscale.d/dir.00000000"), target.join("aside")).unwrap();
    fs::rename(&foreign, target.join("ioscale.d/dir.00000000")).unwrap();

    let e = root.open_dir_at("dir.00000000", Some(id0)).unwrap_err();
    assert!(
        matches!(e.refusal(), Some(Refusal::Replaced { expected, .. }) if *expected == id0),
        "{e}"
    );
    assert!(e.to_string().contains("replaced"), "{e}");

    let mut r = Remover::new(&root);
    r.expect("dir.00000000", id0);
    for f in &files {
        r.file(f);
    }
    for d in &dirs {
        r.dir_entry(d);
    }
    let rep = r.finish();
    assert_eq!(
        fs::read(target.join("ioscale.d/dir.00000000/file.00000000")).unwrap(),
        b"not ioscale's"
    );
    assert_eq!(rep.left.len(), 1);
    assert_eq!(rep.left[0].path, target.join("ioscale.d/dir.00000000"));
    // The working directory is not empty, so rmdir leaves it.
    let e = t.rmdir_at("ioscale.d", Some(root.id())).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(39), "ENOTEMPTY: {e}");
}

#[test]
fn single_entry_operations_never_follow_or_remove_foreign_kinds() {
    let fs_ = Tmpfs::new("16m");
    let d = DirHandle::open(fs_.path()).unwrap();
    fs::write(fs_.join("victim"), b"foreign").unwrap();
    symlink(fs_.join("victim"), fs_.join("link")).unwrap();
    fs::create_dir(fs_.join("sub")).unwrap();
    rustix::fs::mknodat(
        &d,
        "fifo",
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();

    // create_at never writes through a link or over anything.
    let e = d.create_at("link", 0o644).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(17), "EEXIST: {e}");
    assert_eq!(fs::read(fs_.join("victim")).unwrap(), b"foreign");

    // unlink_at: link, directory and FIFO refused; a file by identity.
    for (name, refusal) in [
        ("link", Refusal::Symlink),
        (
            "sub",
            Refusal::WrongKind {
                expected: "regular file",
                found: "directory",
            },
        ),
        (
            "fifo",
            Refusal::WrongKind {
                expected: "regular file",
                found: "FIFO",
            },
        ),
    ] {
        let e = d.unlink_at(name, None).unwrap_err();
        assert_eq!(e.refusal(), Some(&refusal), "{name}: {e}");
        assert_eq!(e.path(), fs_.join(name));
    }
    let (_, mine) = d.create_at("mine", 0o644).unwrap();
    let vid = d.stat_at("victim").unwrap().unwrap().id;
    let e = d.unlink_at("victim", Some(mine)).unwrap_err();
    assert!(matches!(e.refusal(), Some(Refusal::Replaced { .. })), "{e}");
    assert_eq!(d.unlink_at("victim", Some(vid)).unwrap(), Removed::Removed);
    assert_eq!(d.unlink_at("victim", None).unwrap(), Removed::Absent);
    assert_eq!(d.unlink_at("mine", Some(mine)).unwrap(), Removed::Removed);

    // rmdir_at refuses a link to a directory, removes only an empty one.
    symlink(fs_.join("sub"), fs_.join("dlink")).unwrap();
    assert_eq!(
        d.rmdir_at("dlink", None).unwrap_err().refusal(),
        Some(&Refusal::Symlink)
    );
    fs::write(fs_.join("sub/inside"), b"x").unwrap();
    assert_eq!(
        d.rmdir_at("sub", None).unwrap_err().raw_os_error(),
        Some(39)
    );
    assert_eq!(fs::read(fs_.join("sub/inside")).unwrap(), b"x");

    // open_file_at refuses the FIFO without blocking, and the link.
    let e = d
        .open_file_at("fifo", safefs::Access::Read, None)
        .unwrap_err();
    assert!(
        matches!(e.refusal(), Some(Refusal::WrongKind { found: "FIFO", .. })),
        "{e}"
    );
    let e = d
        .open_file_at("link", safefs::Access::Write, None)
        .unwrap_err();
    assert_eq!(e.refusal(), Some(&Refusal::Symlink), "{e}");

    // Names with a slash or dots are refused.
    for bad in ["a/b", "..", ".", ""] {
        assert_eq!(
            d.unlink_at(bad, None).unwrap_err().refusal(),
            Some(&Refusal::BadName),
            "{bad:?}"
        );
    }
    // open_dir_path walks components without following.
    fs::create_dir_all(fs_.join("a/b")).unwrap();
    assert!(d.open_dir_path("a/b").is_ok());
    symlink(fs_.join("a"), fs_.join("c")).unwrap();
    assert_eq!(
        d.open_dir_path("c/b").unwrap_err().refusal(),
        Some(&Refusal::Symlink)
    );
}

#[test]
fn a_directory_swapped_after_the_remover_closed_it_is_refused_on_reopen() {
    let fs_ = Tmpfs::new("16m");
    let root = DirHandle::open(fs_.path()).unwrap();
    let n = safefs::MAX_OPEN_DIRS + 10;
    for i in 0..n {
        let d = root.mkdir_at(format!("d{i}"), 0o755).unwrap();
        d.create_at("f", 0o644).unwrap();
        d.create_at("g", 0o644).unwrap();
    }
    let mut r = Remover::new(&root);
    r.file("d0/f");
    // Open more directories than the remover keeps: d0's handle is closed.
    for i in 1..n {
        r.file(format!("d{i}/f"));
    }
    // Now swap d0 for a foreign directory holding a `g`.
    fs::rename(fs_.join("d0"), fs_.join("aside")).unwrap();
    fs::create_dir(fs_.join("d0")).unwrap();
    fs::write(fs_.join("d0/g"), b"foreign").unwrap();
    r.file("d0/g");
    r.dir_entry("d0");
    for i in 1..n {
        r.file(format!("d{i}/g"));
        r.dir_entry(format!("d{i}"));
    }
    let rep = r.finish();
    assert_eq!(fs::read(fs_.join("d0/g")).unwrap(), b"foreign");
    assert_eq!(rep.left.len(), 1, "{:?}", rep.describe());
    assert_eq!(rep.left[0].path, fs_.join("d0"));
    assert!(matches!(
        rep.left[0].error.refusal(),
        Some(Refusal::Replaced { .. })
    ));
    assert_eq!(
        common::listing(fs_.path()),
        vec!["aside", "aside/g", "d0", "d0/g"]
    );
}
