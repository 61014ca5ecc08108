//! The smallfile front-end's hints on a kept tree come from the typed
//! reason (`spec::Conflict`), not from searching the message: a second
//! create names smallfile's cleanup, a verifying read over unverifiable
//! data names `--verify-read Y`. Both refuse with exit 2 and leave the tree.

mod common;

use common::*;

fn sf(top: &str, extra: &[&str]) -> std::process::Output {
    let mut a = vec![
        "smallfile",
        "--top",
        top,
        "--threads",
        "1",
        "--files",
        "5",
        "--file-size",
        "4",
    ];
    a.extend_from_slice(extra);
    run(&a)
}

#[test]
fn kept_tree_refusals_carry_smallfiles_hint() {
    let dir = scratch();
    let top = s(dir.path());
    assert_code(&sf(top, &["--operation", "create"]), 0);
    let before = snapshot(dir.path());

    let again = sf(top, &["--operation", "create"]);
    assert_code(&again, 2);
    let err = stderr(&again);
    assert!(err.contains("the files already exist"), "{err}");
    assert!(err.contains("run `--operation cleanup`"), "{err}");
    assert!(!err.contains("--verify-read Y"), "{err}");

    let read = sf(top, &["--operation", "read", "--verify-read", "Y"]);
    assert_code(&read, 2);
    let err = stderr(&read);
    assert!(err.contains("cannot be checked"), "{err}");
    assert!(err.contains("give --verify-read Y to the create"), "{err}");
    assert!(!err.contains("run `--operation cleanup`"), "{err}");

    assert_eq!(snapshot(dir.path()), before, "a refusal changed the tree");
    assert_code(&sf(top, &["--operation", "cleanup"]), 0);
}
