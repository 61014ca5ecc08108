//! `ioscale dd`: dd's operands, closing lines and file handling.

mod common;

use common::*;
use std::os::unix::fs::FileTypeExt;

fn dd(args: &[&str]) -> std::process::Output {
    let mut a = vec!["dd"];
    a.extend_from_slice(args);
    run(&a)
}

#[test]
fn write_prints_dds_closing_lines_on_stderr_and_keeps_the_file() {
    let dir = scratch();
    let f = dir.path().join("2G-dd");
    let of = format!("of={}", s(&f));
    let out = dd(&[
        "if=/dev/zero",
        &of,
        "bs=64k",
        "count=16",
        "status=progress",
        "conv=fsync",
    ]);
    assert_code(&out, 0);
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(
        err.contains("16+0 records in\n16+0 records out\n1048576 bytes (1.0 MB, 1.0 MiB) copied, "),
        "{err}"
    );
    assert!(
        err.contains(" MB/s") || err.contains(" GB/s") || err.contains(" kB/s"),
        "{err}"
    );
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 1 << 20);
    // dd truncates an existing of= file, unless conv=notrunc.
    let out = dd(&["if=/dev/zero", &of, "bs=64k", "count=2"]);
    assert_code(&out, 0);
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 128 << 10);
    std::fs::write(&f, vec![1u8; 1 << 20]).unwrap();
    assert_code(
        &dd(&["if=/dev/zero", &of, "bs=64k", "count=2", "conv=notrunc"]),
        0,
    );
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 1 << 20);
    // Reading it back: all whole blocks when count= is not given.
    let out = dd(&[&format!("if={}", s(&f)), "of=/dev/null", "bs=64k"]);
    assert_code(&out, 0);
    assert!(stderr(&out).contains("16+0 records in"), "{}", stderr(&out));
    let out = dd(&[
        &format!("if={}", s(&f)),
        "of=/dev/null",
        "bs=64k",
        "iflag=direct",
        "status=none",
    ]);
    assert_code(&out, 0);
    assert_eq!(stderr(&out), "");
}

#[test]
fn jobs_run_in_parallel_on_numbered_files_and_add_up() {
    let dir = scratch();
    let of = format!("of={}/f", s(dir.path()));
    let out = dd(&[
        "--jobs",
        "4",
        "if=/dev/zero",
        &of,
        "bs=64k",
        "count=4",
        "oflag=sync",
    ]);
    assert_code(&out, 0);
    let err = stderr(&out);
    assert_eq!(err.matches("4+0 records out").count(), 4, "{err}");
    assert!(err.contains("total of 4 jobs: 1048576 bytes"), "{err}");
    // The honest total first, then the jobs' own rates added up, named as
    // such (what summing the four dd lines gives).
    let lines: Vec<&str> = err.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("total of 4 jobs: "))
        .unwrap();
    assert!(
        lines[at + 1].starts_with("sum of the 4 jobs' own dd rates: ")
            && lines[at + 1]
                .ends_with("/s (each job's bytes ÷ its own time, added up; not a throughput)"),
        "{err}"
    );
    assert_eq!(names(dir.path()), vec!["f-1", "f-2", "f-3", "f-4"]);
    // --rm removes what this run created, and only that.
    std::fs::write(dir.path().join("g-2"), b"mine").unwrap();
    let of = format!("of={}/g-{{}}", s(dir.path()));
    assert_code(
        &dd(&[
            "--jobs",
            "2",
            "--rm",
            "if=/dev/zero",
            &of,
            "bs=4k",
            "count=1",
            "conv=notrunc",
        ]),
        0,
    );
    let left = names(dir.path());
    assert!(!left.contains(&"g-1".to_string()), "{left:?}");
    assert!(left.contains(&"g-2".to_string()), "{left:?}");
}

#[test]
fn the_binary_called_dd_is_the_front_end() {
    let dir = scratch();
    let link = dir.path().join("dd");
    std::os::unix::fs::symlink(ioscale_path(), &link).unwrap();
    let f = dir.path().join("out");
    let out = std::process::Command::new(&link)
        .args([
            "if=/dev/zero",
            &format!("of={}", s(&f)),
            "bs=1M",
            "count=2",
            "oflag=dsync",
        ])
        .output()
        .unwrap();
    assert_no_panic(&out);
    assert_code(&out, 0);
    assert!(stderr(&out).contains("2+0 records out"));
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 2 << 20);
}

#[test]
fn unsupported_operands_name_the_operand_and_the_native_option() {
    for (args, what, native) in [
        (vec!["if=/dev/zero", "of=x", "bs=1M"], "count=", "--size"),
        (
            vec!["if=/dev/zero", "of=x", "count=1", "skip=2"],
            "skip=",
            "--segments",
        ),
        (
            vec!["if=/dev/zero", "of=x", "count=1", "oflag=append"],
            "oflag=append",
            "--sync",
        ),
        (
            vec!["if=/dev/zero", "of=x", "count=1", "ibs=4k"],
            "ibs=",
            "--xfer",
        ),
        (
            vec!["if=/dev/zero", "of=x", "count=1", "conv=ucase"],
            "conv=ucase",
            "fsync",
        ),
        (vec!["of=x", "count=1"], "if=", "/dev/zero"),
        (
            vec!["if=/dev/zero", "of=/dev/full", "count=1"],
            "of=/dev/full",
            "regular files",
        ),
    ] {
        let out = dd(&args);
        assert_code(&out, 2);
        let err = stderr(&out);
        assert!(
            err.contains(what) && err.contains(native),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn print_spec_shows_the_workload() {
    let out = dd(&[
        "if=/dev/zero",
        "of=/efs/dd/f",
        "bs=16M",
        "count=128",
        "oflag=sync",
        "--print-spec",
    ]);
    assert_code(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["xfer"], 16 << 20);
    assert_eq!(v["sync"]["mode"], "each");
    assert_eq!(v["naming"]["scheme"], "dd");
    assert_eq!(v["keep"], true);
}

#[test]
fn a_directory_under_dev_is_a_place_for_files_and_only_devices_are_refused() {
    // /dev/shm is a tmpfs directory, not a device: dd writes there, and so
    // must ioscale dd. What is refused is a device node, found by stat.
    let shm = std::path::Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("SKIPPED: no /dev/shm here");
        return;
    }
    let dir = tempfile::tempdir_in(shm).unwrap();
    let f = dir.path().join("dd");
    let out = dd(&["if=/dev/zero", &format!("of={}", s(&f)), "bs=4k", "count=8"]);
    assert_code(&out, 0);
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 32 << 10);
    let out = dd(&[&format!("if={}", s(&f)), "of=/dev/null", "bs=4k"]);
    assert_code(&out, 0);
    assert!(stderr(&out).contains("8+0 records in"), "{}", stderr(&out));
    // A character device is refused, naming the operand.
    let out = dd(&["if=/dev/zero", "of=/dev/full", "bs=4k", "count=1"]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("of=/dev/full"), "{}", stderr(&out));
    let out = dd(&["if=/dev/urandom", "of=/dev/null", "bs=4k", "count=1"]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("if=/dev/urandom"), "{}", stderr(&out));
}

#[test]
fn the_page_cache_warning_follows_what_happened_in_dds_words() {
    let dir = scratch();
    let of = format!("of={}", s(&dir.path().join("f")));
    // Every write synchronous, or flushed before the clock stops: the
    // figure is storage's, whatever the page cache holds.
    for flag in ["oflag=sync", "oflag=dsync", "conv=fsync"] {
        let out = dd(&["if=/dev/zero", &of, "bs=64k", "count=4", flag]);
        assert_code(&out, 0);
        assert!(
            !stderr(&out).contains("page cache"),
            "{flag}: {}",
            stderr(&out)
        );
    }
    // Buffered and never flushed: warned, with dd's operand, not ioscale's.
    let out = dd(&["if=/dev/zero", &of, "bs=64k", "count=4"]);
    assert_code(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains("page cache") && err.contains("oflag=direct"),
        "{err}"
    );
    assert!(!err.contains("--direct"), "{err}");
    // A buffered read is warned about too, whatever the write did.
    let out = dd(&[
        &format!("if={}", s(&dir.path().join("f"))),
        "of=/dev/null",
        "bs=64k",
    ]);
    assert_code(&out, 0);
    assert!(stderr(&out).contains("iflag=direct"), "{}", stderr(&out));
}

/// `--record FILE` writes ioscale's record of the dd run (each job a
/// row); a path it could not be written to is refused before anything
/// runs, naming the flag.
#[test]
fn record_writes_the_run_record_and_a_bad_path_is_refused_first() {
    let dir = scratch();
    let of = format!("of={}", s(&dir.path().join("f")));
    let rec = dir.path().join("r.json");
    let out = dd(&[
        "if=/dev/zero",
        &of,
        "bs=64k",
        "count=4",
        "--jobs",
        "2",
        "--record",
        s(&rec),
    ]);
    assert_code(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&rec).unwrap()).unwrap();
    let p = &v["phases"][0];
    assert_eq!(
        (p["op"].clone(), p["bytes"].clone()),
        ("write".into(), (512u64 << 10).into())
    );
    let rows = p["workers"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{p}");
    assert!(
        rows.iter()
            .all(|w| w["bytes"] == 256 << 10 && w["ops"] == 4),
        "{p}"
    );
    let missing = dir.path().join("no/such/dir/r.json");
    let of2 = format!("of={}", s(&dir.path().join("g")));
    let out = dd(&[
        "if=/dev/zero",
        &of2,
        "bs=64k",
        "count=4",
        "--record",
        s(&missing),
    ]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("--record"), "{}", stderr(&out));
    assert!(!dir.path().join("g").exists(), "nothing ran");
}

/// `--record` naming one of dd's own files — the input a read phase reads
/// (directly, through a link, or as `sub/../in`), the output, a job's
/// numbered file — is refused before anything runs, naming the flag and
/// the operand: before, the record replaced the user's input file once
/// the run ended (exit 0, the data gone). A write the record cannot take
/// (`/dev/full`) names `--record`, not "output".
#[test]
fn a_record_that_would_replace_dds_own_files_is_refused_first() {
    let dir = scratch();
    let d = dir.path();
    let input = d.join("in.bin");
    let data: Vec<u8> = (0..256u32 << 10).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&input, &data).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    std::os::unix::fs::symlink(&input, d.join("link")).unwrap();
    let ifp = format!("if={}", s(&input));
    let of = format!("of={}", s(&d.join("out.bin")));
    let of_link = format!("if={}", s(&d.join("link")));
    let sub = d.join("sub/../in.bin");
    let out_bin = d.join("out.bin");
    let job2 = d.join("out.bin-2");
    let cases: Vec<(Vec<&str>, &std::path::Path, &str)> = vec![
        (vec![&ifp, "of=/dev/null", "bs=64k"], &input, "if="),
        (vec![&of_link, "of=/dev/null", "bs=64k"], &input, "if="),
        (vec![&ifp, "of=/dev/null", "bs=64k"], &sub, "if="),
        (
            vec!["if=/dev/zero", &of, "bs=64k", "count=2"],
            &out_bin,
            "of=",
        ),
        (
            vec!["if=/dev/zero", &of, "bs=64k", "count=2", "--jobs", "2"],
            &job2,
            "of=",
        ),
    ];
    for (ops, rec, operand) in cases {
        let mut args = ops.clone();
        args.extend(["--record", s(rec)]);
        let out = dd(&args);
        assert_no_panic(&out);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("--record") && err.contains(operand),
            "{args:?}: should name --record and {operand}: {err}"
        );
        assert_eq!(
            std::fs::read(&input).unwrap(),
            data,
            "{args:?}: input changed"
        );
        assert!(!out_bin.exists() && !job2.exists(), "{args:?}: it ran");
    }
    let out = dd(&[&ifp, "of=/dev/null", "bs=64k", "--record", "/dev/full"]);
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(err.contains("--record /dev/full"), "{err}");
    assert_eq!(std::fs::read(&input).unwrap(), data);
}

/// dd prints no stonewall figure, so none of its lines may point at one:
/// with `--jobs 16` on 2 CPUs the oversubscription warning said "the
/// stonewall figure shows the work done by the time the first worker
/// finished". The warning itself now comes only when the jobs' CPU time
/// shows the CPUs full (docs/analysis.md, "The warnings, from evidence").
#[test]
fn jobs_warnings_name_no_figure_dd_does_not_print() {
    let dir = scratch();
    let of = dir.path().join("f");
    let out = dd(&[
        "--jobs",
        "16",
        "if=/dev/zero",
        &format!("of={}", of.display()),
        "bs=64k",
        "count=16",
    ]);
    assert_code(&out, 0);
    let err = stderr(&out);
    assert!(err.contains("total of 16 jobs: "), "{err}");
    assert!(!err.to_lowercase().contains("stonewall"), "{err}");
    for w in err.lines().filter(|l| l.starts_with("dd: warning: ")) {
        assert!(!w.contains("take turns"), "a guess, not a measurement: {w}");
    }
}

/// What dd's parser learns of the user's files (a read's length, whether a
/// name is a regular file) comes from the storage backend, looked at
/// through the user's links as dd's open follows them and never opened: a
/// FIFO is refused without blocking, a link to a device is refused, a link
/// to a file is read to its last whole block, a link loop is said in the
/// system's words, and nothing named is changed.
#[test]
fn the_files_dd_names_are_looked_at_never_opened_and_links_followed_as_dd_does() {
    let dir = scratch();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    for args in [
        vec![
            "if=/dev/zero".to_string(),
            format!("of={}", s(&fifo)),
            "bs=4k".into(),
            "count=1".into(),
        ],
        vec![
            format!("if={}", s(&fifo)),
            "of=/dev/null".into(),
            "bs=4k".into(),
        ],
    ] {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = dd(&a);
        assert_code(&out, 2);
        assert!(
            stderr(&out).contains("not a regular file"),
            "{}",
            stderr(&out)
        );
    }
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());

    let dev = dir.path().join("zero");
    std::os::unix::fs::symlink("/dev/zero", &dev).unwrap();
    let out = dd(&[&format!("if={}", s(&dev)), "of=/dev/null", "bs=4k"]);
    assert_code(&out, 2);
    let want = format!("if={}: not a regular file", s(&dev));
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));

    let data = dir.path().join("data");
    std::fs::write(&data, vec![7u8; 10 * 1024 + 100]).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&data, &link).unwrap();
    let out = dd(&[&format!("if={}", s(&link)), "of=/dev/null", "bs=4k"]);
    assert_code(&out, 0);
    let err = stderr(&out);
    assert!(
        err.contains("2+0 records in\n2+0 records out\n8192 bytes"),
        "{err}"
    );
    assert!(
        err.contains("the last 2148 bytes (a partial block) are not read"),
        "{err}"
    );
    assert_eq!(std::fs::read(&data).unwrap(), vec![7u8; 10 * 1024 + 100]);

    let looped = dir.path().join("loop");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    let out = dd(&[&format!("if={}", s(&looped)), "of=/dev/null", "bs=4k"]);
    assert_code(&out, 2);
    let want = format!("if={}: Too many levels of symbolic links", s(&looped));
    assert!(stderr(&out).contains(&want), "{}", stderr(&out));
}
