//! `ioscale slurm --out FILE` writes the script as every other output is
//! written (checked first, replaced atomically) and makes executable only
//! the regular file it wrote. Found by the fourth adversarial pass: the
//! script was written with a plain `write` and then `chmod 0755` by path,
//! which turned a character device (`--out /dev/null`) into mode 0755 and
//! a user's 0600 file behind a link into a world-readable executable.

mod common;

use std::os::unix::fs::{FileTypeExt, PermissionsExt};

use common::*;

fn mode(p: &std::path::Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn slurm_out_never_changes_the_mode_of_what_it_does_not_own() {
    let t = scratch();
    let d = t.path();
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    // A character device of its own (the null device's numbers), 0666.
    let nul = d.join("nul");
    let made = std::process::Command::new("mknod")
        .args([&s(&nul), "c", "1", "3"])
        .status()
        .is_ok_and(|st| st.success());
    if made {
        std::fs::set_permissions(&nul, std::fs::Permissions::from_mode(0o666)).unwrap();
        let out = run(&["slurm", "--out", &s(&nul), "--", "run", "/cluster/fs"]);
        assert_code(&out, 0);
        assert!(std::fs::symlink_metadata(&nul)
            .unwrap()
            .file_type()
            .is_char_device());
        assert_eq!(mode(&nul), 0o666, "{}", stderr(&out));
    } else {
        eprintln!("skipping the device case: mknod needs root");
    }
    // A link to a user's private file: written through, as every output
    // is, but its mode is the user's.
    let private = d.join("private.txt");
    std::fs::write(&private, "old").unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = d.join("link");
    std::os::unix::fs::symlink(&private, &link).unwrap();
    let out = run(&["slurm", "--out", &s(&link), "--", "run", "/cluster/fs"]);
    assert_code(&out, 0);
    assert_eq!(mode(&private), 0o600, "{}", stderr(&out));
    assert!(std::fs::read_to_string(&private)
        .unwrap()
        .starts_with("#!/bin/bash"));
    // A new file is made executable, and its content is the whole script.
    let job = d.join("job.sbatch");
    let out = run(&["slurm", "--out", &s(&job), "--", "run", "/cluster/fs"]);
    assert_code(&out, 0);
    assert_eq!(mode(&job) & 0o111, 0o111, "{}", stderr(&out));
    let text = std::fs::read_to_string(&job).unwrap();
    assert!(text.ends_with("exit \"$status\"\n"), "{text}");
    // `--out -` is standard output: a file named `-` where it runs keeps
    // its mode.
    let dash = d.join("-");
    std::fs::write(&dash, "a user's file named -").unwrap();
    std::fs::set_permissions(&dash, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = ioscale()
        .current_dir(d)
        .args(["slurm", "--out", "-", "--", "run", "/cluster/fs"])
        .output()
        .unwrap();
    assert_code(&out, 0);
    assert!(stdout(&out).starts_with("#!/bin/bash"), "{}", stderr(&out));
    assert_eq!(mode(&dash), 0o600, "{}", stderr(&out));
    // A directory is refused naming the flag; /dev/full is an error, not 0.
    let out = run(&["slurm", "--out", &s(d), "--", "run", "/cluster/fs"]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("--out"), "{}", stderr(&out));
    let out = run(&["slurm", "--out", "/dev/full", "--", "run", "/cluster/fs"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("--out"), "{}", stderr(&out));
    let full = std::fs::symlink_metadata("/dev/full").unwrap();
    assert!(full.file_type().is_char_device());
}

#[test]
fn a_binary_named_like_an_option_is_not_handed_to_srun_as_one() {
    // Issue 27: `--binary -x` wrote `srun … "$IOSCALE" run …` with
    // IOSCALE=-x, which srun reads as its own -x (exclude the nodes named
    // by the next word, `run`): the job ran nothing it was asked to.
    let out = run(&[
        "slurm",
        "--binary",
        "-x",
        "--results",
        "-r",
        "--",
        "run",
        "/cluster/fs",
    ]);
    assert_code(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("\nIOSCALE=./-x\n"), "{text}");
    assert!(text.contains("\nRESULTS=./-r\n"), "{text}");
    let launch = text
        .lines()
        .find(|l| l.trim_start().starts_with("srun "))
        .unwrap();
    assert!(launch.contains(" \"$IOSCALE\" run "), "{launch}");
    // The script is valid bash.
    let dir = scratch();
    let p = dir.path().join("job.sbatch");
    std::fs::write(&p, &text).unwrap();
    let ok = std::process::Command::new("bash")
        .arg("-n")
        .arg(&p)
        .status()
        .unwrap();
    assert!(ok.success());
}
