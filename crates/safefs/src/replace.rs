//! Replacing a small file (a marker, a result record) so a reader never
//! sees half of it — on targets without `rename` too — and recognising
//! ioscale's own temporary names.
//!
//! [`replace_at`] writes `.<name>.ioscale-tmp.<pid>.<n>` beside `name`,
//! `fsync`s it and renames it over `name`. When the file system refuses the
//! rename (EROFS, ENOSYS, EPERM, EXDEV, EOPNOTSUPP, EINVAL) it writes `name`
//! in place instead (write, truncate to length, `fsync`). Whatever fails,
//! the temporary file is removed. [`is_own_temp_name`] lets `clean` remove
//! leftovers of an earlier crash.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::io::Errno;

use crate::dir::{Access, DirHandle, Kind};
use crate::error::{Error, Refusal, Result};

/// The tag every temporary name of ioscale carries.
pub const TEMP_TAG: &str = ".ioscale-tmp.";

static SEQ: AtomicU64 = AtomicU64::new(0);

/// A fresh temporary name for `name`: `.<name>.ioscale-tmp.<pid>.<n>`.
pub fn temp_name(name: impl AsRef<OsStr>) -> OsString {
    let mut v = Vec::from(&b"."[..]);
    v.extend_from_slice(name.as_ref().as_bytes());
    v.extend_from_slice(TEMP_TAG.as_bytes());
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    v.extend_from_slice(format!("{}.{n}", std::process::id()).as_bytes());
    OsString::from_vec(v)
}

/// The name a temporary name stands for, when `name` is one of ioscale's
/// own: `.<name>.ioscale-tmp.<pid>.<n>` (this crate) or an older
/// `<marker>.tmp` of the markers (`.ioscale-marker.tmp`,
/// `.ioscale-meta-marker.tmp`, `.NAME.ioscale-marker.tmp`).
pub fn temp_base(name: impl AsRef<OsStr>) -> Option<OsString> {
    let b = name.as_ref().as_bytes();
    if let Some(pos) = find(b, TEMP_TAG.as_bytes()) {
        let tail = &b[pos + TEMP_TAG.len()..];
        let mut parts = tail.split(|&c| c == b'.');
        let digits =
            |p: Option<&[u8]>| p.is_some_and(|p| !p.is_empty() && p.iter().all(u8::is_ascii_digit));
        let ok = b.first() == Some(&b'.')
            && pos > 1
            && digits(parts.next())
            && digits(parts.next())
            && parts.next().is_none();
        return ok.then(|| OsStr::from_bytes(&b[1..pos]).to_os_string());
    }
    for legacy in [&b".ioscale-marker.tmp"[..], b".ioscale-meta-marker.tmp"] {
        if b == legacy {
            return Some(OsStr::from_bytes(&legacy[..legacy.len() - 4]).to_os_string());
        }
    }
    let sidecar = b".ioscale-marker.tmp";
    if b.len() > sidecar.len() + 1 && b[0] == b'.' && b.ends_with(sidecar) {
        return Some(OsStr::from_bytes(&b[..b.len() - 4]).to_os_string());
    }
    None
}

/// Whether `name` is one of ioscale's own temporary names ([`temp_base`]).
pub fn is_own_temp_name(name: impl AsRef<OsStr>) -> bool {
    temp_base(name).is_some()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// How a file was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// A temporary file renamed over the name: readers saw the old or the
    /// new content, never half.
    Renamed,
    /// The file system cannot rename: written in place and `fsync`ed.
    InPlace,
}

/// Whether a rename error means "this file system does not rename here".
pub fn rename_unsupported(errno: i32) -> bool {
    [
        Errno::ROFS,
        Errno::NOSYS,
        Errno::PERM,
        Errno::XDEV,
        Errno::OPNOTSUPP,
        Errno::INVAL,
    ]
    .iter()
    .any(|e| e.raw_os_error() == errno)
}

/// Writes `bytes` as `name` in `dir` (see the module docs). An existing
/// `name` that is not a regular file is refused, never replaced.
pub fn replace_at(dir: &DirHandle, name: impl AsRef<OsStr>, bytes: &[u8]) -> Result<Written> {
    replace_with(dir, name.as_ref(), bytes, &|d, from, to| {
        d.rename_at(from, to)
    })
}

/// [`replace_at`] without the `fsync` of the new content: for a record
/// rewritten before every phase of a run (the metadata tree's marker),
/// where an `fsync` per rewrite would cost more than it protects and a
/// file system whose `fsync` fails must still let the run reach the phase
/// that reports it. The replace is still atomic for readers.
pub fn replace_at_unsynced(
    dir: &DirHandle,
    name: impl AsRef<OsStr>,
    bytes: &[u8],
) -> Result<Written> {
    replace_opts(
        dir,
        name.as_ref(),
        bytes,
        &|d, from, to| d.rename_at(from, to),
        false,
    )
}

type RenameFn = dyn Fn(&DirHandle, &OsStr, &OsStr) -> Result<()>;

/// Refuses an existing `name` that is not a regular file.
fn check_replaceable(dir: &DirHandle, name: &OsStr) -> Result<()> {
    if let Some(info) = dir.stat_at(name)? {
        if info.kind != Kind::File {
            let r = if info.kind == Kind::Symlink {
                Refusal::Symlink
            } else {
                Refusal::WrongKind {
                    expected: "regular file",
                    found: info.kind.name(),
                }
            };
            return Err(Error::refused("write", dir.child_path(name), r));
        }
    }
    Ok(())
}

pub(crate) fn replace_with(
    dir: &DirHandle,
    name: &OsStr,
    bytes: &[u8],
    rename: &RenameFn,
) -> Result<Written> {
    replace_opts(dir, name, bytes, rename, true)
}

fn replace_opts(
    dir: &DirHandle,
    name: &OsStr,
    bytes: &[u8],
    rename: &RenameFn,
    sync: bool,
) -> Result<Written> {
    check_replaceable(dir, name)?;
    // The new file keeps the permission bits of the one it replaces: a
    // 0600 record must not come back readable by everyone (set before a
    // byte is written).
    let old_mode = rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .filter(|st| Kind::of(st.st_mode) == Kind::File)
        .map(|st| st.st_mode & 0o777);
    let tmp = temp_name(name);
    let (mut f, _) = dir.create_at(&tmp, 0o644)?;
    let tp = dir.child_path(&tmp);
    if let Some(m) = old_mode {
        // Best effort: a file system without modes (vfat) still gets the
        // record.
        let _ = rustix::fs::fchmod(&f, rustix::fs::Mode::from_raw_mode(m));
    }
    let written = f
        .write_all(bytes)
        .and_then(|()| if sync { f.sync_all() } else { Ok(()) })
        .map_err(|e| Error::io("write", &tp, e));
    drop(f);
    // Checked again just before the rename: a device or FIFO that appeared
    // at the name meanwhile is refused, not replaced.
    let written = written.and_then(|()| check_replaceable(dir, name));
    let result = written.and_then(|()| match rename(dir, &tmp, name) {
        Ok(()) => Ok(Written::Renamed),
        Err(e) if e.raw_os_error().is_some_and(rename_unsupported) => {
            write_in_place(dir, name, bytes).map(|()| Written::InPlace)
        }
        Err(e) => Err(e),
    });
    if !matches!(result, Ok(Written::Renamed)) {
        let _ = dir.unlink_at(&tmp, None);
    }
    result
}

/// Writes `bytes` over the regular file `name` in place (creating it when
/// missing), truncates it to their length and `fsync`s it. Never follows a
/// link; refuses anything but a regular file.
pub fn write_in_place(dir: &DirHandle, name: impl AsRef<OsStr>, bytes: &[u8]) -> Result<()> {
    let name = name.as_ref();
    let p = dir.child_path(name);
    let mut f = match dir.open_file_at(name, Access::Write, None) {
        Ok((f, _)) => f,
        Err(e) if e.is_not_found() => dir.create_at(name, 0o644)?.0,
        Err(e) => return Err(e),
    };
    f.write_all(bytes)
        .and_then(|()| f.set_len(bytes.len() as u64))
        .and_then(|()| f.sync_all())
        .map_err(|e| Error::io("write", p, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_recognised_and_others_are_not() {
        let t = temp_name(".ioscale-marker");
        assert!(is_own_temp_name(&t), "{t:?}");
        assert_eq!(temp_base(&t).unwrap(), ".ioscale-marker");
        let t = temp_name("r.json");
        assert_eq!(temp_base(&t).unwrap(), "r.json");
        for legacy in [
            ".ioscale-marker.tmp",
            ".ioscale-meta-marker.tmp",
            ".ior.bin.ioscale-marker.tmp",
        ] {
            assert!(is_own_temp_name(legacy), "{legacy}");
        }
        for other in [
            "file.00000000",
            ".ioscale-marker",
            "x.ioscale-tmp.1.2",
            ".x.ioscale-tmp.1",
            ".x.ioscale-tmp.1.2.3",
            ".x.ioscale-tmp.a.2",
            ".ioscale-tmp.1.2",
            ".ioscale-marker.tmp.bak",
            "ioscale-marker.tmp",
            ".ioscale-marker.tmp-1",
        ] {
            assert!(!is_own_temp_name(other), "{other}");
        }
    }

    #[test]
    fn unsupported_rename_falls_back_to_writing_in_place() {
        let d = std::env::temp_dir().join(format!("safefs-norename-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("m"), b"an older, longer content").unwrap();
        let h = DirHandle::open(&d).unwrap();
        for errno in [Errno::ROFS, Errno::NOSYS, Errno::PERM, Errno::XDEV] {
            let refuse = move |d: &DirHandle, _: &OsStr, to: &OsStr| {
                Err(Error::io("rename", d.child_path(to), errno))
            };
            let w = replace_with(&h, OsStr::new("m"), b"new", &refuse).unwrap();
            assert_eq!(w, Written::InPlace);
            assert_eq!(std::fs::read(d.join("m")).unwrap(), b"new");
            assert_eq!(
                h.list().unwrap(),
                vec![OsString::from("m")],
                "the temporary file is removed"
            );
        }
        // Another rename error is an error, and the temp file still goes.
        let refuse = |d: &DirHandle, _: &OsStr, to: &OsStr| {
            Err(Error::io("rename", d.child_path(to), Errno::IO))
        };
        let e = replace_with(&h, OsStr::new("m"), b"newer", &refuse).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc_eio()));
        assert_eq!(std::fs::read(d.join("m")).unwrap(), b"new");
        assert_eq!(h.list().unwrap(), vec![OsString::from("m")]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn libc_eio() -> i32 {
        Errno::IO.raw_os_error()
    }
}
