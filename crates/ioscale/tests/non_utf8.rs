//! An argument that is not UTF-8 (a path with bytes 0xff 0xfe, which
//! Linux allows): before, every command panicked reading argv (exit 101,
//! "called `Result::unwrap()` on an `Err` value"). Now it is exit 2 with
//! one line naming the argument, and nothing is made. Found by the fourth
//! adversarial pass.

mod common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use common::*;

#[test]
fn a_non_utf8_argument_is_exit_2_naming_it_not_a_panic() {
    let t = scratch();
    let bad = t.path().join(OsStr::from_bytes(b"dir-\xff\xfe"));
    std::fs::create_dir(&bad).unwrap();
    let b = bad.as_os_str();
    for words in [
        &["meta", "--files", "2"][..],
        &["run", "--op", "write", "--size", "4k", "--xfer", "4k"][..],
        &["clean"][..],
        &["mdtest", "-n", "2", "-d"][..],
        &["smallfile", "--operation", "create", "--top"][..],
        &["sweep", "--threads", "1", "--", "meta", "--files", "2"][..],
        &["slurm", "--", "meta"][..],
    ] {
        let out = ioscale().args(words).arg(b).output().unwrap();
        assert_no_panic(&out);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains("error:") && err.contains("UTF-8"),
            "{words:?}: {err}"
        );
        assert!(
            err.contains("dir-"),
            "{words:?}: the argument is named: {err}"
        );
        assert_eq!(names(&bad), Vec::<String>::new(), "{words:?}");
    }
}
