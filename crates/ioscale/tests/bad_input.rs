//! Usage and setup errors: each exits 2 with one line on standard error
//! that names the flag (or TARGET), creates nothing, and never panics.

mod common;

use std::path::Path;

use common::*;

/// Runs `ioscale run ARGS TARGET` and checks the refusal.
fn refused(args: &[&str], target: &Path, names: &str) {
    let mut all = vec!["run"];
    all.extend(args);
    all.push(s(target));
    let out = run(&all);
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?}: expected exit 2\nstderr:\n{err}"
    );
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line on stderr, got:\n{err}");
    assert!(
        lines[0].contains(names),
        "{args:?}: the message should name {names}: {err}"
    );
    assert!(out.stdout.is_empty(), "{args:?}: stdout: {}", stdout(&out));
}

#[test]
fn bad_flags_are_refused_and_create_nothing() {
    let t = scratch();
    let tp = t.path();
    let cases: &[(&[&str], &str)] = &[
        (&["--xfer", "2m", "--size", "1m"], "--xfer"),
        (&["--block", "3m", "--xfer", "2m"], "--xfer"),
        (&["--size", "0"], "--size"),
        (&["--size", "-4k"], "--size"),
        (&["--size=-4k"], "--size"),
        (&["--size", "4q"], "--size"),
        (&["--size", "99999999999999t"], "--size"),
        (&["--threads", "0"], "--threads"),
        (&["--threads", "-2"], "--threads"),
        (&["--op", "bogus"], "--op"),
        (&["--op", "write,bogus"], "--op"),
        (&["--layout", "bogus"], "--layout"),
        (&["--sync", "bogus"], "--sync"),
        (&["--sync", "every:0"], "--sync"),
        (&["--iodepth", "8"], "--iodepth"),
        (&["--rwmix", "150", "--op", "rw"], "--rwmix"),
        (&["--reps", "0"], "--reps"),
        (&["--time", "-1s"], "--time"),
        (&["--time", "0"], "--time"),
        (
            &["--direct", "--xfer", "1000", "--size", "1000k"],
            "--direct",
        ),
        (&["--size", "1m", "--total", "2m"], "--total"),
    ];
    for (args, names) in cases {
        refused(args, tp, names);
        assert_empty(tp);
    }
}

#[test]
fn bad_targets_are_refused() {
    let base = scratch();
    let missing = base.path().join("no-such-dir");
    refused(&["--size", "1m"], &missing, "TARGET");
    assert!(!missing.exists());

    let file = base.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    refused(&["--size", "1m"], &file, "TARGET");
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
    assert_eq!(names(base.path()), vec!["a-file".to_string()]);
}

#[test]
fn read_only_target_is_refused() {
    let Some(m) = tmpfs("size=4m,ro") else { return };
    refused(&["--size", "1m"], m.path(), "read-only");
    assert_empty(m.path());
}

#[test]
fn output_path_in_a_missing_directory_is_refused() {
    let t = scratch();
    let out = run(&[
        "run",
        "--size",
        "1m",
        "--json",
        "/nonexistent-dir/r.json",
        s(t.path()),
    ]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("--json"), "{}", stderr(&out));
    assert_empty(t.path());
}

#[test]
fn clean_without_kept_files_is_refused() {
    let t = scratch();
    let out = run(&["clean", s(t.path())]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("nothing to clean"),
        "{}",
        stderr(&out)
    );
    assert_empty(t.path());
}

#[test]
fn unknown_subcommand_and_flag_exit_2() {
    let t = scratch();
    for args in [
        vec!["frobnicate"],
        vec!["run", "--no-such-flag", s(t.path())],
        vec!["run"],
    ] {
        let out = run(&args);
        assert_code(&out, 2);
        assert!(!stderr(&out).is_empty());
    }
    assert_empty(t.path());
}

#[test]
#[cfg(not(feature = "mpi"))]
fn a_launch_error_is_printed_by_task_0_only() {
    // Four tasks of an ioscale built without MPI: each is refused, and
    // only task 0 says why (not four copies of the same message).
    let t = scratch();
    for (rank, prints) in [("0", true), ("1", false), ("3", false)] {
        for args in [
            vec!["run", "--op", "write", s(t.path())],
            vec!["ior", "-w", "-o", "x"],
            vec!["dd", "if=/dev/zero", "of=x", "count=1"],
            vec!["run", "--size", "bogus", s(t.path())],
        ] {
            let out = ioscale()
                .args(&args)
                .env("OMPI_COMM_WORLD_SIZE", "4")
                .env("OMPI_COMM_WORLD_RANK", rank)
                .output()
                .unwrap();
            assert_code(&out, 2);
            assert_eq!(
                !stderr(&out).is_empty(),
                prints,
                "rank {rank} {args:?}: {}",
                stderr(&out)
            );
        }
    }
    assert_empty(t.path());
}

/// `refused`, under an address-space limit of 4 GiB where `prlimit` is
/// there, so that a regression aborts instead of waking the OOM killer.
fn refused_in_4g(args: &[&str], target: &Path, names: &str) {
    let bin = ioscale_path();
    let mut all = vec!["--as=4294967296", s(&bin), "run"];
    all.extend(args);
    all.push(s(target));
    let out = match std::process::Command::new("prlimit").args(&all).output() {
        Ok(o) => o,
        Err(_) => return refused(args, target, names),
    };
    assert_no_panic(&out);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    assert!(err.contains(names), "{args:?}: should name {names}: {err}");
}

#[test]
fn transfer_buffers_larger_than_memory_are_refused() {
    // 4096 workers × 2 GiB (sync) and 64 × 4096 × 1 GiB (io_uring) of
    // buffers, more than any machine holds: refused before anything is
    // made (before, the sync case filled buffers until the OOM killer
    // ended it), never an allocation that aborts.
    let t = scratch();
    let tp = t.path();
    refused_in_4g(
        &["--xfer", "2g", "--size", "2g", "--threads", "4096"],
        tp,
        "--xfer",
    );
    assert_empty(tp);
    let uring = [
        "--xfer",
        "1g",
        "--size",
        "1g",
        "--threads",
        "64",
        "--engine",
        "io_uring",
        "--iodepth",
        "4096",
    ];
    refused_in_4g(&uring, tp, "--iodepth");
    assert_empty(tp);
}

/// `ioscale ARGS` under an address-space limit of 1 GiB (where `prlimit`
/// is there): exit 2, one line naming `names`.
fn refused_any_in_1g(args: &[&str], names: &str) {
    let bin = ioscale_path();
    let mut all = vec!["--as=1073741824", s(&bin)];
    all.extend(args);
    let out = match std::process::Command::new("prlimit").args(&all).output() {
        Ok(o) => o,
        Err(_) => run(args),
    };
    assert_no_panic(&out);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    assert!(err.contains(names), "{args:?}: should name {names}: {err}");
}

#[test]
fn a_range_of_more_values_than_a_list_takes_is_refused_not_an_abort() {
    // A range is checked against the most values a list takes (1,000,000)
    // while it is expanded: before, `1..2^64-1` was expanded in full first
    // (an abort under this limit; without one, memory until the OOM
    // killer), and `1..100000000` was called "not a valid range".
    let t = scratch();
    let tp = t.path();
    let max = u64::MAX.to_string();
    let whole = format!("1..{max}");
    for (flag, list) in [
        ("--threads", whole.as_str()),
        ("--threads", "1..100000000"),
        ("--xfer", "1..16t+1"),
        ("--nodes", whole.as_str()),
    ] {
        let mut args = vec!["sweep", flag, list];
        if flag != "--threads" {
            args.extend(["--threads", "1"]);
        }
        args.extend(["--", "run", "--op", "write", s(tp)]);
        refused_any_in_1g(
            &args,
            &format!("{flag}: '{list}' gives more than 1000000 values"),
        );
    }
    assert_empty(tp);
    refused_any_in_1g(
        &[
            "slurm",
            "--nodes",
            "4",
            "--node-counts",
            &whole,
            "--",
            "run",
            "/x",
        ],
        "--node-counts",
    );
}
