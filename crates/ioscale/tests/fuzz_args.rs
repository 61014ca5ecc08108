//! Fuzzing every front-end's argument parser with proptest, for a fixed
//! budget (PROPTEST_CASES, 256 by default, per parser): random command
//! lines built from each parser's real vocabulary — the flags its own
//! `--help` lists, dd's operands — with valid, borderline and garbage
//! values. No input may panic or hang; every rejection exits 2 with a
//! message that names the flag (or operand, or TARGET) it refuses.
//!
//! The edge families (`edges_*`) give durations and counts at and past the
//! u64 edges (0, 1, -1, 2^63, 2^64-1, 1e20, 1e30, with and without units)
//! to the value flags of every front-end — run, meta, sweep, ior, mdtest,
//! smallfile, dd, fio, io500 (flags and .ini keys) — and hold them to the
//! same rules: never exit 101, exit 0 or 2 naming the flag.
//!
//! Nothing can be written: `run`, `meta` and `sweep` get a TARGET that does
//! not exist (checked before any file is made), `ior` and `dd` get
//! `--print-spec`, and the child runs in an empty scratch directory that
//! must still be empty afterwards.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// A TARGET that does not exist, so no run ever starts.
const TARGET: &str = "/nonexistent-ioscale-fuzz/t";

/// Values a flag may get: valid, borderline and garbage.
const VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "7",
    "64",
    "100",
    "101",
    "257",
    "-1",
    "4k",
    "64k",
    "1m",
    "1MiB",
    "1MB",
    "3g",
    "16e",
    "1.5",
    "1e3",
    "0x10",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999g",
    "1..64x2",
    "1..13",
    "4..16+4",
    "8..1",
    "1..0x2",
    "1..4x0",
    "1..4x1",
    "1,2,4",
    "1,,2",
    ",",
    "..",
    "4k..1k",
    "0..0",
    "1s",
    "500us",
    "2ms",
    "1.5s",
    "0s",
    "5m",
    "1h",
    "-5s",
    "nan",
    "inf",
    "write",
    "read,write",
    "randrw",
    "create,stat,delete",
    "create,create",
    "cleanup",
    "shared",
    "per-thread",
    "per-thread-dir",
    "same-dir",
    "sync",
    "io_uring",
    "each",
    "end",
    "every:4",
    "every:0",
    "dsync",
    "json",
    "csv",
    "text",
    "total",
    "JSON",
    "POSIX",
    "MPIIO",
    "summaryFormat=JSON",
    "summaryFormat=bogus",
    "stoneWallingWearOut=1",
    "",
    " ",
    "=",
    "-",
    "--",
    "\u{e9}t\u{e9}",
    "\u{ff}",
    "a b",
    "relative/out.json",
];

/// `--help` of `ioscale ARGS`, once.
fn help_of(args: &[&str]) -> String {
    let out = Command::new(ioscale_path())
        .args(args)
        .output()
        .expect("running ioscale --help");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Long and short flags in a clap `--help` text.
fn clap_flags(help: &str) -> Vec<String> {
    let mut flags = Vec::new();
    for l in help.lines() {
        let t = l.trim_start();
        if !t.starts_with('-') || !(l.starts_with("  ") || l.starts_with("      ")) {
            continue;
        }
        for tok in t.split([',', ' ']) {
            if tok.starts_with('-') && tok.len() > 1 && !tok.contains('<') {
                flags.push(tok.to_string());
            }
        }
    }
    flags.sort();
    flags.dedup();
    assert!(flags.len() >= 5, "too few flags found in:\n{help}");
    flags
}

/// IOR's options from its help text (`-a S`, `--posix.odirect`, …).
fn ior_flags() -> Vec<String> {
    let help = help_of(&["ior", "--help"]);
    let mut flags: Vec<String> = help
        .split_whitespace()
        .filter(|t| {
            let t = t.trim_end_matches(',');
            t.starts_with('-') && t.len() >= 2 && t != "--print-spec" && t != "-h" && t != "--help"
        })
        .map(|t| t.trim_end_matches([',', ')']).to_string())
        .filter(|t| !t.starts_with("-O=") && !t.contains('|'))
        .collect();
    flags.extend(["-O".into(), "-vvv".into(), "-wrk".into(), "-X".into()]);
    flags.sort();
    flags.dedup();
    flags
}

/// dd's operand keys and ioscale's extra flags.
fn dd_words() -> Vec<String> {
    [
        "if=", "of=", "bs=", "ibs=", "obs=", "count=", "skip=", "seek=", "conv=", "oflag=",
        "iflag=", "status=", "--jobs", "--rm", "-j", "bogus=",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Values dd's operands take besides [`VALUES`].
const DD_VALUES: &[&str] = &[
    "/dev/zero",
    "/dev/null",
    "/dev/urandom",
    "/nonexistent-ioscale-fuzz/f",
    "fsync",
    "fdatasync",
    "notrunc",
    "sync,direct",
    "direct",
    "progress",
    "noxfer",
    "none",
    "1M",
    "512",
    "2x4k",
    "0",
];

/// One token of a command line: a flag, a value, or garbage.
fn token(flags: Vec<String>, values: Vec<&'static str>) -> impl Strategy<Value = String> {
    let n = flags.len();
    let nv = values.len();
    prop_oneof![
        4 => (0..n).prop_map({
            let flags = flags.clone();
            move |i| flags[i].clone()
        }),
        4 => (0..nv).prop_map(move |i| values[i].to_string()),
        1 => (0..n, 0..VALUES.len()).prop_map(move |(i, v)| format!("{}={}", flags[i], VALUES[v])),
        1 => "[ -~]{0,10}",
    ]
}

fn argv(flags: Vec<String>, values: Vec<&'static str>) -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(token(flags, values), 0..10)
}

/// Runs ioscale with `args` in the empty `cwd`, at most 20 s.
fn run_in(cwd: &Path, args: &[String]) -> Output {
    let mut child = Command::new(ioscale_path())
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting ioscale");
    let t0 = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ioscale {args:?} hung for 20 s");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.wait_with_output().unwrap()
}

/// Whether `err` holds `w` as a word of its own (`-n` in "-n N", not in
/// "--nodes").
fn contains_word(err: &str, w: &str) -> bool {
    let w = w.trim_end_matches('=');
    if w.len() < 2 {
        return false;
    }
    err.match_indices(w).any(|(i, _)| {
        let before = err[..i].chars().next_back();
        let after = err[i + w.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '-')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
    })
}

/// Whether a refusal names what it refuses: one of the flags or operands
/// on the command line, the TARGET, or the word clap quotes.
fn names_something(err: &str, args: &[String], words: &[String]) -> bool {
    if err.contains("TARGET") || err.contains(TARGET) || err.contains("<COMMAND>") {
        return true;
    }
    let mentioned = |w: &str| {
        let key = w.split('=').next().unwrap_or(w);
        let key = if key.is_empty() { w } else { key };
        !key.is_empty() && err.contains(key)
    };
    // A long flag or operand of the parser's vocabulary (clap names the
    // long form of a short flag it refuses), or one from the command line.
    words.iter().any(|w| contains_word(err, w))
        || args
            .iter()
            .filter(|a| a.starts_with('-') || a.contains('=') || words.contains(a))
            .any(|a| mentioned(a))
        || args
            .iter()
            .any(|a| !a.trim().is_empty() && err.contains(&format!("'{a}'")))
}

/// Checks one command line's outcome.
fn check(cwd: &Path, args: &[String], words: &[String]) -> Result<(), TestCaseError> {
    let out = run_in(cwd, args);
    let err = stderr(&out);
    prop_assert!(
        !err.contains("panicked"),
        "ioscale {:?} panicked:\n{}",
        args,
        err
    );
    let code = out.status.code();
    prop_assert!(code.is_some(), "ioscale {:?} died: {:?}", args, out.status);
    prop_assert!(
        code == Some(0) || code == Some(2),
        "ioscale {:?} exited {:?}:\n{}",
        args,
        code,
        err
    );
    if code == Some(2) {
        prop_assert!(
            names_something(&err, args, words),
            "ioscale {:?} refused without naming the flag:\n{}",
            args,
            err
        );
    }
    prop_assert!(
        names(cwd).is_empty(),
        "ioscale {:?} wrote {:?}",
        args,
        names(cwd)
    );
    Ok(())
}

fn runner() -> TestRunner {
    // Config::default() reads PROPTEST_CASES (256 unless set).
    TestRunner::new(Config {
        failure_persistence: None,
        ..Config::default()
    })
}

/// Fuzzes `ioscale PREFIX <random> SUFFIX`.
fn fuzz(prefix: &[&str], suffix: &[&str], words: Vec<String>, values: Vec<&'static str>) {
    let cwd = scratch();
    let prefix: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
    let suffix: Vec<String> = suffix.iter().map(|s| s.to_string()).collect();
    runner()
        .run(&argv(words.clone(), values), |mid| {
            let mut args = prefix.clone();
            args.extend(mid.iter().filter(|a| !a.starts_with("--help")).cloned());
            args.extend(suffix.iter().cloned());
            check(cwd.path(), &args, &words)
        })
        .unwrap();
}

fn run_words() -> &'static Vec<String> {
    static W: OnceLock<Vec<String>> = OnceLock::new();
    W.get_or_init(|| clap_flags(&help_of(&["run", "--help"])))
}

fn no_help(words: Vec<String>) -> Vec<String> {
    words
        .into_iter()
        .filter(|w| w != "-h" && w != "--help" && w != "-V" && w != "--version")
        .collect()
}

#[test]
fn fuzz_run_args() {
    fuzz(
        &["run"],
        &[TARGET],
        no_help(run_words().clone()),
        VALUES.to_vec(),
    );
}

#[test]
fn fuzz_meta_args() {
    let words = no_help(clap_flags(&help_of(&["meta", "--help"])));
    fuzz(&["meta"], &[TARGET], words, VALUES.to_vec());
}

#[test]
fn fuzz_sweep_args() {
    // The sweep's own flags, then an inner `run` command line of its own
    // random flags (the inner parser is run's).
    let mut words = no_help(clap_flags(&help_of(&["sweep", "--help"])));
    words.extend(no_help(run_words().clone()));
    words.push("--".into());
    fuzz(
        &["sweep", "--threads", "1,2"],
        &["--", "run", "--size", "4k", TARGET],
        words,
        VALUES.to_vec(),
    );
}

#[test]
fn fuzz_ior_args() {
    fuzz(
        &["ior", "--print-spec"],
        &["-o", "/nonexistent-ioscale-fuzz/ior.bin"],
        ior_flags(),
        VALUES.to_vec(),
    );
}

#[test]
fn fuzz_dd_args() {
    let mut values = VALUES.to_vec();
    values.extend_from_slice(DD_VALUES);
    // Operands are `key=value`: glue a value to each key half the time.
    let keys = dd_words();
    let cwd = scratch();
    let words = keys.clone();
    let strat = proptest::collection::vec((0..keys.len(), 0..values.len(), any::<bool>()), 0..8);
    runner()
        .run(&strat, |picks| {
            let mut args = vec!["dd".to_string(), "--print-spec".to_string()];
            for (k, v, glue) in picks {
                if glue && keys[k].ends_with('=') {
                    args.push(format!("{}{}", keys[k], values[v]));
                } else {
                    args.push(keys[k].clone());
                    args.push(values[v].to_string());
                }
            }
            check(cwd.path(), &args, &words)
        })
        .unwrap();
}

/// The front-ends being written now (mdtest, smallfile) are fuzzed the
/// same way once they exist: their `--help` gives the vocabulary.
#[test]
fn fuzz_newer_front_ends_if_present() {
    for fe in ["mdtest", "smallfile"] {
        let out = Command::new(ioscale_path())
            .args([fe, "--help"])
            .output()
            .unwrap();
        if out.status.code() != Some(0) {
            eprintln!("note: `ioscale {fe}` does not exist yet; not fuzzed");
            continue;
        }
        let help = String::from_utf8_lossy(&out.stdout).into_owned();
        if !help.contains("--print-spec") {
            // Without a parse-only mode a valid command line would run.
            eprintln!("note: `ioscale {fe}` has no --print-spec; not fuzzed");
            continue;
        }
        let words: Vec<String> = help
            .split_whitespace()
            .map(|t| t.trim_end_matches([',', ')', ']']).to_string())
            .filter(|t| t.starts_with('-') && t.len() >= 2 && !t.contains('<'))
            .filter(|t| !t.starts_with("--help") && t != "-h")
            .collect();
        if words.is_empty() {
            continue;
        }
        fuzz(&[fe, "--print-spec"], &[], words, VALUES.to_vec());
    }
}

// ------------------------------------------------ durations and counts at the u64 edges

/// Durations and counts at and past the u64 edges, bare and with units.
const EDGES: &[&str] = &[
    "0",
    "1",
    "-1",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775808",
    "9223372036854775807",
    "1e20",
    "1e30",
    "-1e30",
    "18446744073709551615s",
    "1e20s",
    "1e30h",
    "18446744073709551615m",
    "18446744073709551615us",
    "9223372036854775808k",
    "18446744073709551615k",
    "18446744073709551615g",
];

/// 1 to 4 (flag, edge value) picks of `flags`.
fn edge_picks(flags: usize) -> impl Strategy<Value = Vec<(usize, usize)>> {
    proptest::collection::vec((0..flags, 0..EDGES.len()), 1..5)
}

/// Fuzzes `ioscale PREFIX <flag edge>... SUFFIX`, each picked flag given an
/// edge value by `token` (as one `key=value` word or two words): no panic
/// (exit 101), exit 0 or 2 naming what it refuses, nothing written.
fn fuzz_edges(
    prefix: &[&str],
    suffix: &[&str],
    flags: Vec<String>,
    words: Vec<String>,
    token: fn(&str, &str) -> Vec<String>,
) {
    let cwd = scratch();
    runner()
        .run(&edge_picks(flags.len()), |picks| {
            let mut args: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
            for (f, v) in picks {
                args.extend(token(&flags[f], EDGES[v]));
            }
            args.extend(suffix.iter().map(|s| s.to_string()));
            check(cwd.path(), &args, &words)
        })
        .unwrap();
}

fn two_words(flag: &str, v: &str) -> Vec<String> {
    vec![flag.to_string(), v.to_string()]
}

fn glued(flag: &str, v: &str) -> Vec<String> {
    vec![format!("{flag}{v}")]
}

/// Flags of a clap `--help` that take a value (`--time <DURATION>`).
fn clap_value_flags(args: &[&str]) -> Vec<String> {
    let help = help_of(args);
    let mut flags: Vec<String> = help
        .lines()
        .filter(|l| l.trim_start().starts_with('-') && l.contains(" <"))
        .filter_map(|l| {
            l.split([',', ' '])
                .find(|t| t.starts_with("--") && t.len() > 2)
                .map(String::from)
        })
        .collect();
    flags.sort();
    flags.dedup();
    assert!(flags.len() >= 3, "too few value flags in:\n{help}");
    flags
}

#[test]
fn edges_run() {
    let flags = clap_value_flags(&["run", "--help"]);
    fuzz_edges(&["run"], &[TARGET], flags.clone(), flags, two_words);
}

#[test]
fn edges_meta() {
    let flags = clap_value_flags(&["meta", "--help"]);
    fuzz_edges(&["meta"], &[TARGET], flags.clone(), flags, two_words);
}

#[test]
fn edges_sweep() {
    // The sweep's own flags; the inner run's get edges in edges_run, and
    // here once more behind `--` (the sweep checks the inner command).
    let mut flags = clap_value_flags(&["sweep", "--help"]);
    flags.retain(|f| f != "--threads" && f != "--json" && f != "--csv" && f != "--html");
    let mut words = flags.clone();
    words.extend(clap_value_flags(&["run", "--help"]));
    fuzz_edges(
        &["sweep", "--threads", "1,2"],
        &["--", "run", "--size", "4k", "--time", "1e20", TARGET],
        flags,
        words,
        two_words,
    );
}

#[test]
fn edges_ior() {
    let flags: Vec<String> = [
        "-b", "-t", "-s", "-i", "-d", "-D", "-T", "-N", "-Q", "-G", "-j", "-J", "-l", "-X", "-O",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let token = |f: &str, v: &str| {
        if f == "-O" {
            vec![f.to_string(), format!("stoneWallingWearOut={v}")]
        } else {
            two_words(f, v)
        }
    };
    fuzz_edges(
        &["ior", "--print-spec"],
        &["-o", "/nonexistent-ioscale-fuzz/ior.bin"],
        flags,
        ior_flags(),
        token,
    );
}

#[test]
fn edges_mdtest() {
    let flags: Vec<String> = [
        "-n", "-I", "-z", "-b", "-i", "-W", "-w", "-e", "-N", "-S", "-x",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    fuzz_edges(
        &["mdtest", "--print-spec"],
        &["-d", "/nonexistent-ioscale-fuzz/m"],
        flags.clone(),
        flags,
        two_words,
    );
}

#[test]
fn edges_smallfile() {
    let flags: Vec<String> = [
        "--threads",
        "--files",
        "--file-size",
        "--record-size",
        "--files-per-dir",
        "--dirs-per-dir",
        "--cleanup-delay-usec-per-file",
        "--pause",
        "--xattr-size",
        "--xattr-count",
        "--stonewall",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    fuzz_edges(
        &["smallfile", "--print-spec", "--operation", "create"],
        &["--top", "/nonexistent-ioscale-fuzz/s"],
        flags.clone(),
        flags,
        two_words,
    );
}

#[test]
fn edges_dd() {
    let flags: Vec<String> = ["bs=", "ibs=", "obs=", "count=", "skip=", "seek=", "--jobs"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let token = |f: &str, v: &str| {
        if f.ends_with('=') {
            glued(f, v)
        } else {
            two_words(f, v)
        }
    };
    fuzz_edges(
        &["dd", "--print-spec", "if=/dev/zero"],
        &["of=/nonexistent-ioscale-fuzz/dd"],
        flags.clone(),
        flags,
        token,
    );
}

#[test]
fn edges_fio() {
    let names = [
        "size",
        "filesize",
        "bs",
        "nrfiles",
        "numjobs",
        "iodepth",
        "runtime",
        "startdelay",
        "loops",
        "randseed",
        "rwmixread",
        "rwmixwrite",
        "ramp_time",
        "offset",
        "offset_increment",
    ];
    let flags: Vec<String> = names.iter().map(|n| format!("--{n}=")).collect();
    let words: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    fuzz_edges(
        &[
            "fio",
            "--print-spec",
            "--name=j",
            "--directory=/nonexistent-ioscale-fuzz",
            "--rw=write",
            "--size=64k",
        ],
        &[],
        flags,
        words,
        glued,
    );
}

#[test]
fn edges_io500() {
    // The data and result directories are below a regular file, so nothing
    // can be created: every command line ends in a refusal or at the
    // mkdir of the data directory (exit 2, naming it).
    let side = scratch();
    let file = side.path().join("file");
    std::fs::write(&file, b"not a directory").unwrap();
    let data = file.join("d");
    let res = file.join("r");
    let flags: Vec<String> = ["--tasks", "--stonewall"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut words = flags.clone();
    words.push(s(&data).to_string());
    fuzz_edges(
        &["io500", "--resultdir", s(&res)],
        &[s(&data)],
        flags,
        words.clone(),
        two_words,
    );
    // The same edges in an io500 .ini file.
    let keys = [
        ("debug", "stonewall-time"),
        ("ior-easy", "transferSize"),
        ("ior-easy", "blockSize"),
        ("ior-hard", "segmentCount"),
        ("mdtest-easy", "n"),
        ("mdtest-hard", "n"),
    ];
    let ini = side.path().join("c.ini");
    let cwd = scratch();
    words.extend(keys.iter().map(|(_, k)| k.to_string()));
    words.push(s(&ini).to_string());
    runner()
        .run(&edge_picks(keys.len()), |picks| {
            let mut text = format!(
                "[global]\ndatadir = {}\nresultdir = {}\n",
                s(&data),
                s(&res)
            );
            for (k, v) in picks {
                text.push_str(&format!("[{}]\n{} = {}\n", keys[k].0, keys[k].1, EDGES[v]));
            }
            std::fs::write(&ini, &text).unwrap();
            check(
                cwd.path(),
                &["io500".to_string(), s(&ini).to_string()],
                &words,
            )
        })
        .unwrap();
}

/// What the edge families found, kept as fixed cases: each was a panic
/// (exit 101) and is now exit 2 naming the flag.
#[test]
fn edge_panics_found_are_exit_2_naming_the_flag() {
    let side = scratch();
    let file = side.path().join("file");
    std::fs::write(&file, b"not a directory").unwrap();
    let data = file.join("d");
    let res = file.join("r");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "mdtest",
                "--print-spec",
                "-z",
                "18446744073709551615",
                "-b",
                "1",
                "-n",
                "4",
            ],
            "-z",
        ),
        (
            vec!["mdtest", "--print-spec", "-n", "18446744073709551615"],
            "-n",
        ),
        (
            vec![
                "smallfile",
                "--print-spec",
                "--file-size",
                "18446744073709551615",
            ],
            "--file-size",
        ),
        (
            vec![
                "dd",
                "--print-spec",
                "if=/dev/zero",
                "--jobs",
                "9223372036854775808",
            ],
            "--jobs",
        ),
        (
            vec![
                "fio",
                "--print-spec",
                "--name=j",
                "--directory=/nonexistent-ioscale-fuzz",
                "--rw=write",
                "--size=64k",
                "--numjobs=9223372036854775808",
            ],
            "numjobs",
        ),
        (
            vec![
                "io500",
                "--stonewall",
                "18446744073709551615m",
                "--resultdir",
                s(&res),
                s(&data),
            ],
            "--stonewall",
        ),
    ];
    let cwd = scratch();
    for (mut args, flag) in cases {
        match args[0] {
            "mdtest" => args.extend(["-d", "/nonexistent-ioscale-fuzz/m"]),
            "smallfile" => args.extend(["--top", "/nonexistent-ioscale-fuzz/s"]),
            "dd" => args.push("of=/nonexistent-ioscale-fuzz/dd"),
            _ => {}
        }
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let out = run_in(cwd.path(), &args);
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            contains_word(&err, flag),
            "{args:?} does not name {flag}: {err}"
        );
        assert!(names(cwd.path()).is_empty());
    }
}
