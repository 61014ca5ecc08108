//! Live progress of the front-ends (`ior`, `mdtest`, `smallfile`, `dd`,
//! `fio`): on standard error only, nothing when it is not a terminal
//! unless asked (`--progress plain` or `IOSCALE_PROGRESS=plain`), the live
//! line on a terminal, and the emulated tool's standard output unchanged.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;

fn front(args: &[&str], env: Option<&str>) -> Output {
    let mut c = ioscale();
    c.args(args);
    match env {
        Some(v) => c.env("IOSCALE_PROGRESS", v),
        None => c.env_remove("IOSCALE_PROGRESS"),
    };
    c.output().unwrap()
}

/// The progress lines of a plain display: "ioscale: OP rep r/m: …".
fn progress_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.starts_with("ioscale: ") && l.contains(" rep "))
        .collect()
}

/// Each front-end's command line on `d`, and the phases it records.
fn cases(d: &Path) -> Vec<(Vec<String>, Vec<&'static str>)> {
    let p = |x: &str| d.join(x).display().to_string();
    let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    std::fs::create_dir_all(d.join("sf")).unwrap();
    vec![
        (
            v(&[
                "ior",
                "-w",
                "-r",
                "-t",
                "64k",
                "-b",
                "256k",
                "-o",
                &p("ior.bin"),
            ]),
            vec!["write", "read"],
        ),
        (
            v(&["mdtest", "-F", "-n", "20", "-d", &p("md")]),
            vec!["create", "stat", "read", "delete"],
        ),
        (
            v(&[
                "smallfile",
                "--top",
                &p("sf"),
                "--operation",
                "create",
                "--files",
                "20",
                "--threads",
                "1",
                "--file-size",
                "4",
            ]),
            vec!["create"],
        ),
        (
            v(&[
                "dd",
                "if=/dev/zero",
                &format!("of={}", p("dd.bin")),
                "bs=64k",
                "count=4",
                "--rm",
            ]),
            vec!["write"],
        ),
        (
            v(&[
                "fio",
                "--name=j",
                "--rw=write",
                "--bs=64k",
                "--size=256k",
                &format!("--directory={}", d.display()),
                "--unlink=1",
            ]),
            vec!["write"],
        ),
    ]
}

#[test]
fn not_a_terminal_means_no_progress_unless_asked() {
    for how in ["none-by-default", "flag", "env"] {
        let dir = scratch();
        for (args, ops) in cases(dir.path()) {
            let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
            let env = match how {
                "flag" => {
                    // Each front-end takes --progress in its own syntax.
                    if a[0] == "fio" {
                        a.push("--progress=plain");
                    } else {
                        a.insert(1, "--progress");
                        a.insert(2, "plain");
                    }
                    None
                }
                "env" => Some("plain"),
                _ => None,
            };
            let out = front(&a, env);
            assert_code(&out, 0);
            let (o, e) = (stdout(&out), stderr(&out));
            // Never on standard output.
            assert!(progress_lines(&o).is_empty(), "{}: {o}", a[0]);
            let lines = progress_lines(&e);
            if how == "none-by-default" {
                assert!(lines.is_empty(), "{} printed progress: {e}", a[0]);
                continue;
            }
            // One line per recorded phase, with measured figures.
            let seen: Vec<&str> = lines
                .iter()
                .map(|l| l["ioscale: ".len()..].split(' ').next().unwrap())
                .collect();
            assert_eq!(seen, ops, "{}: {e}", a[0]);
            for l in &lines {
                assert!(l.contains(" rep 1/1: "), "{l}");
                assert!(l.ends_with(" IOPS") || l.ends_with(" files/s"), "{l}");
            }
        }
        // smallfile's create keeps its tree: its cleanup removes it.
        let sf = dir.path().join("sf").display().to_string();
        let out = front(
            &[
                "smallfile",
                "--top",
                &sf,
                "--operation",
                "cleanup",
                "--files",
                "20",
                "--threads",
                "1",
                "--file-size",
                "4",
            ],
            None,
        );
        assert_code(&out, 0);
        std::fs::remove_dir(&sf).unwrap();
        assert_empty(dir.path());
    }
}

#[test]
fn bad_progress_values_name_the_flag_or_variable() {
    let dir = scratch();
    let f = dir.path().join("f").display().to_string();
    let out = front(&["ior", "-w", "--progress", "loud", "-o", &f], None);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("--progress loud"), "{}", stderr(&out));
    let out = front(&["ior", "-w", "-o", &f], Some("loud"));
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("IOSCALE_PROGRESS=loud"),
        "{}",
        stderr(&out)
    );
    let of = format!("of={f}");
    let out = front(&["dd", "if=/dev/zero", &of, "--progress=x"], None);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("--progress x"), "{}", stderr(&out));
    let out = front(&["fio", "--name=j", "--rw=write", "--progress=x"], None);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("--progress x"), "{}", stderr(&out));
    // Nothing was made.
    assert_empty(dir.path());
}

#[test]
fn dd_status_none_stays_silent() {
    let dir = scratch();
    let of = format!("of={}", dir.path().join("f").display());
    let out = front(
        &[
            "dd",
            "if=/dev/zero",
            &of,
            "bs=64k",
            "count=2",
            "status=none",
            "--rm",
        ],
        Some("plain"),
    );
    assert_code(&out, 0);
    assert_eq!(stderr(&out), "", "status=none prints nothing");
    assert_empty(dir.path());
}

/// On a terminal (script(1) gives one) the IOR front-end shows the live
/// line of a phase longer than a second, and clears it.
#[test]
fn ior_on_a_terminal_shows_the_live_line() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` (util-linux)");
        return;
    }
    let dir = scratch();
    // O_SYNC 4 KiB writes (-Y: fsync after each) for two seconds (-D 2).
    let cmd = format!(
        "{} ior -w -Y -t 4k -b 256m -D 2 -o {}",
        ioscale_path().display(),
        dir.path().join("ior.bin").display()
    );
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_remove("IOSCALE_PROGRESS")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let frames: Vec<&str> = text
        .split(['\r', '\n'])
        .map(|f| f.trim_start_matches("\x1b[K"))
        .filter(|f| f.starts_with("rep "))
        .collect();
    assert!(!frames.is_empty(), "{text:?}");
    for f in &frames {
        assert!(f.starts_with("rep 1/1 write ["), "{f:?}");
        assert!(f.contains(" MiB/s"), "{f:?}");
    }
    // IOR's own report is there too.
    assert!(text.contains("Summary of all tests"), "{text:?}");
    assert_empty(dir.path());
}

/// `--progress` inside a fio sweep's job would be ignored (the sweep has
/// its own display): it is refused with where it goes instead.
#[test]
fn progress_inside_a_fio_sweep_says_where_it_goes() {
    let dir = scratch();
    let d = format!("--directory={}", dir.path().display());
    let out = front(
        &[
            "sweep",
            "--threads",
            "1",
            "--",
            "fio",
            "--name=j",
            "--rw=write",
            "--bs=64k",
            "--size=256k",
            &d,
            "--progress=plain",
        ],
        None,
    );
    assert_code(&out, 2);
    let e = stderr(&out);
    assert!(e.contains("--progress") && e.contains("before --"), "{e}");
    assert_empty(dir.path());
}
