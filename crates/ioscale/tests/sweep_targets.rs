//! A sweep checks every target before its first point (fourth adversarial
//! pass): `--target DIR,FILE` ran DIR's points, then stopped at FILE with
//! exit 2 ("TARGET … is not a directory") after measuring, where a bad
//! target is a setup error to refuse before any I/O.

mod common;

use common::*;

#[test]
fn a_target_that_is_no_directory_is_refused_before_the_first_point() {
    let t = scratch();
    let d = t.path();
    let good = d.join("good");
    std::fs::create_dir(&good).unwrap();
    let file = d.join("file");
    std::fs::write(&file, "a user's file").unwrap();
    let missing = d.join("missing");
    for bad in [&file, &missing] {
        let targets = format!("{},{}", s(&good), s(bad));
        let json = d.join("s.json");
        let out = run(&[
            "sweep",
            "--threads",
            "1",
            "--target",
            &targets,
            "--json",
            s(&json),
            "--",
            "meta",
            "--files",
            "2",
            s(&good),
        ]);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(err.contains(s(bad)), "{err}");
        assert!(!err.contains("create rep"), "no point ran: {err}");
        assert!(!json.exists(), "{err}");
        assert_eq!(names(&good), Vec::<String>::new());
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"a user's file");
}
