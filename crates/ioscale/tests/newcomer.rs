//! What a new user trips on first: `--resume` typed at the end of the
//! same sweep line, the message of a sweep stopped by a setup error, the
//! examples of every subcommand's `--help`, and the live progress
//! (`--progress plain|none|bar`) on tmpfs and under a pseudo-terminal.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// The same sweep line plus `--resume` at its very end (after `--`) is
/// what users type; it resumes instead of failing in the inner parser.
#[test]
fn resume_at_the_end_of_the_line_is_accepted() {
    let dir = scratch();
    let out = scratch();
    let json = out.path().join("s.json");
    let line = |extra: &[&str]| {
        let mut a = vec![
            "sweep",
            "--threads",
            "1,2",
            "--json",
            s(&json),
            "--progress",
            "none",
            "--",
            "run",
            "--op",
            "write",
            "--size",
            "256k",
            "--xfer",
            "64k",
            s(dir.path()),
        ];
        a.extend_from_slice(extra);
        run(&a)
    };
    let r = line(&[]);
    assert_code(&r, 0);
    let first = common::json(&json);
    let r = line(&["--resume"]);
    assert_code(&r, 0);
    assert!(
        stderr(&r).contains("2 of 2 points already done"),
        "{}",
        stderr(&r)
    );
    let again = common::json(&json);
    // Nothing re-ran: the record's points are those of the first run.
    assert_eq!(first["points"], again["points"]);
    assert_eq!(again["config"], first["config"]);
    assert_empty(dir.path());
}

/// `--resume` at the end without `--json` says what it needs.
#[test]
fn resume_at_the_end_without_json_names_the_flag() {
    let dir = scratch();
    let r = run(&[
        "sweep",
        "--threads",
        "1",
        "--",
        "run",
        "--size",
        "64k",
        s(dir.path()),
        "--resume",
    ]);
    assert_code(&r, 2);
    let e = stderr(&r);
    assert!(e.contains("--resume") && e.contains("--json"), "{e}");
}

/// A sweep stopped by a setup error (exit 2) was not interrupted: it says
/// what failed and does not tell the user to run it again with --resume.
#[test]
fn setup_error_is_not_called_an_interruption() {
    let out = scratch();
    let json = out.path().join("s.json");
    let missing = out.path().join("no-such-dir");
    let r = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--json",
        s(&json),
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "1m",
        s(&missing),
    ]);
    assert_code(&r, 2);
    let (o, e) = (stdout(&r), stderr(&r));
    let all = format!("{o}{e}");
    assert!(!all.contains("interrupted"), "{all}");
    assert!(!all.contains("same command with --resume"), "{all}");
    assert!(e.contains("no-such-dir"), "{e}");
    assert!(e.contains("No such file or directory"), "{e}");
    assert!(o.contains("unfinished: 0 of 2 points"), "{o}");
    let v: Value = common::json(&json);
    assert_eq!(v["interrupted"], false);
    assert_eq!(v["points"].as_array().unwrap().len(), 0);
}

/// The figures after "in" on a progress line: a positive number and a unit.
fn measured(line: &str, unit: &str) -> f64 {
    let at = line
        .find(unit)
        .unwrap_or_else(|| panic!("no {unit} in {line}"));
    let num = line[..at].trim_end().rsplit(' ').next().unwrap();
    let v: f64 = num
        .parse()
        .unwrap_or_else(|_| panic!("{num:?} before {unit} in {line}"));
    assert!(v > 0.0, "{line}");
    v
}

/// Not on a terminal (a batch log): one line per finished phase with its
/// recorded figures, the same as in the JSON record.
#[test]
fn plain_progress_prints_one_line_per_phase_with_its_figures() {
    let dir = scratch();
    let out = scratch();
    let json = out.path().join("r.json");
    let r = run(&[
        "run",
        "--op",
        "write,read",
        "--reps",
        "2",
        "--size",
        "1m",
        "--xfer",
        "64k",
        "-t",
        "2",
        "-q",
        "--json",
        s(&json),
        s(dir.path()),
    ]);
    assert_code(&r, 0);
    let e = stderr(&r);
    let lines: Vec<&str> = e.lines().filter(|l| l.contains(" rep ")).collect();
    let want = [
        "write rep 1/2",
        "read rep 1/2",
        "write rep 2/2",
        "read rep 2/2",
    ];
    assert_eq!(lines.len(), 4, "{e}");
    let v = common::json(&json);
    for ((l, w), p) in lines.iter().zip(want).zip(phases(&v)) {
        assert!(l.starts_with(&format!("ioscale: {w}: 2 MiB in ")), "{l}");
        let rate = measured(l, " MiB/s");
        let rec = p["bw_mib_s"].as_f64().unwrap();
        assert_eq!(format!("{rate:.1}"), format!("{rec:.1}"), "{l}");
        measured(l, " IOPS");
    }
    assert!(!e.contains('\r') && !e.contains("\x1b["), "{e:?}");

    let r = run(&[
        "meta",
        "--op",
        "create,delete",
        "--files",
        "50",
        "-q",
        "--progress",
        "plain",
        s(dir.path()),
    ]);
    assert_code(&r, 0);
    let e = stderr(&r);
    assert!(e.contains("ioscale: create rep 1/1: 50 files in "), "{e}");
    assert!(e.contains("ioscale: delete rep 1/1: 50 files in "), "{e}");
    for l in e.lines().filter(|l| l.contains(" rep ")) {
        measured(l, " files/s");
    }
    assert_empty(dir.path());
}

/// A sweep's log names the point of each phase and says when each point
/// is done, with its figures and what is left.
#[test]
fn plain_progress_of_a_sweep_names_points() {
    let dir = scratch();
    let r = run(&[
        "sweep",
        "--threads",
        "1,2",
        "-q",
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "512k",
        "--xfer",
        "64k",
        s(dir.path()),
    ]);
    assert_code(&r, 0);
    let e = stderr(&r);
    let l: Vec<&str> = e.lines().collect();
    assert_eq!(l.len(), 4, "{e}");
    assert!(
        l[0].starts_with("ioscale: [point 1/2] threads=1 xfer=64 KiB write rep 1/1: 512 KiB in "),
        "{e}"
    );
    assert!(
        l[1].starts_with("ioscale: [point 1/2] threads=1 xfer=64 KiB done in "),
        "{e}"
    );
    measured(l[1], " MiB/s;");
    assert!(l[1].contains("; 1 left, ETA "), "{e}");
    assert!(
        l[2].starts_with("ioscale: [point 2/2] threads=2 xfer=64 KiB write rep 1/1: 1 MiB in "),
        "{e}"
    );
    assert!(
        l[3].contains("[point 2/2] threads=2 xfer=64 KiB done in "),
        "{e}"
    );
    assert!(!l[3].contains("ETA"), "{e}");
    assert_empty(dir.path());
}

/// A sweep over transfer sizes and layouts names each axis of a point
/// once (it read `threads=1 64 KiB xfer=64 KiB`: the series label and the
/// transfer size both).
#[test]
fn sweep_points_name_each_axis_once() {
    let dir = scratch();
    let r = run(&[
        "sweep",
        "--threads",
        "1",
        "--xfer",
        "64k,128k",
        "--layout",
        "shared,per-thread",
        "-q",
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "256k",
        s(dir.path()),
    ]);
    assert_code(&r, 0);
    let e = stderr(&r);
    let names: Vec<&str> = e
        .lines()
        .filter(|l| l.contains(" done in "))
        .map(|l| {
            l.split("] ")
                .nth(1)
                .unwrap()
                .split(" done in ")
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(
        names,
        [
            "threads=1 layout=shared xfer=64 KiB",
            "threads=1 layout=shared xfer=128 KiB",
            "threads=1 layout=per-thread xfer=64 KiB",
            "threads=1 layout=per-thread xfer=128 KiB"
        ],
        "{e}"
    );
    assert_empty(dir.path());
}

/// `--progress none` prints nothing on standard error.
#[test]
fn progress_none_is_silent() {
    let dir = scratch();
    for args in [
        &["run", "--size", "256k", "--xfer", "64k"][..],
        &["meta", "--op", "create,delete", "--files", "20"][..],
    ] {
        let mut a = args.to_vec();
        a.extend_from_slice(&["-q", "--progress", "none", s(dir.path())]);
        let r = run(&a);
        assert_code(&r, 0);
        assert_eq!(stderr(&r), "", "{a:?}");
    }
    let r = run(&[
        "sweep",
        "--threads",
        "1,2",
        "-q",
        "--progress",
        "none",
        "--",
        "run",
        "--size",
        "256k",
        "--xfer",
        "64k",
        s(dir.path()),
    ]);
    assert_code(&r, 0);
    assert_eq!(stderr(&r), "");
    assert_empty(dir.path());
}

/// On a terminal (a pseudo-terminal made by `script` from util-linux),
/// the live line of a phase longer than a second shows the repetition,
/// the phase, its share done and its live rate.
#[test]
fn bar_on_a_terminal_shows_phase_and_live_rate() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no `script` (util-linux)");
        return;
    }
    let dir = scratch();
    // O_SYNC 4 KiB writes (a journal commit each on the repository's file
    // system) for two seconds (--time): long enough for the live line,
    // which a run shows after its phase's first second.
    let cmd = format!(
        "{} run -q --op write --size 256m --xfer 4k --sync each --time 2 {}",
        ioscale_path().display(),
        dir.path().display()
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
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
        measured(f, "%");
        measured(f, " MiB/s");
    }
    // The line is cleared at the end: nothing but the frames was printed.
    assert!(!text.contains("ioscale: write rep"), "{text:?}");
    assert_empty(dir.path());
}

/// Checks the examples of one `--help`: there are some, every line fits
/// 80 columns, and a command that goes on over several lines ends each
/// but the last with ` \` (so it pastes into a shell as one command).
fn check_examples(what: &str, help: &str) {
    let lines: Vec<&str> = help.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("Example"))
        .unwrap_or_else(|| panic!("`{what}` has no examples:\n{help}"));
    let mut commands = 0;
    let mut goes_on = false;
    let mut prose = false;
    for l in &lines[start + 1..] {
        if prose || (!l.is_empty() && !l.starts_with(' ')) {
            // The prose after the examples: read in the same terminal.
            prose = true;
            assert!(
                l.chars().count() <= 80,
                "`{what}`: line after the examples longer than 80 columns:\n{l}"
            );
            continue;
        }
        assert!(
            l.chars().count() <= 80,
            "`{what}`: example line longer than 80 columns:\n{l}"
        );
        let t = l.trim_start();
        let indent = l.len() - t.len();
        if t.is_empty() {
            assert!(!goes_on, "`{what}`: a line ending in \\ before a blank");
            continue;
        }
        if goes_on {
            assert!(indent > 2, "`{what}`: continuation not indented:\n{l}");
        } else if !t.starts_with('#') {
            let first = t.split(' ').next().unwrap();
            assert!(
                indent == 2 && ["ioscale", "sbatch", "mpirun"].contains(&first),
                "`{what}`: a wrapped line without a trailing \\ before it:\n{l}"
            );
            commands += 1;
        }
        goes_on = t.ends_with('\\');
    }
    assert!(!goes_on, "`{what}`: the last example ends in \\");
    assert!(commands > 0, "`{what}`: no example command:\n{help}");
}

/// Every subcommand's `--help` (and `ioscale --help`) has examples that
/// can be copied as they are shown.
#[test]
fn every_help_has_examples_that_paste() {
    let top = run(&["--help"]);
    assert_code(&top, 0);
    let text = stdout(&top);
    check_examples("ioscale --help", &text);
    let subs: Vec<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|c| c != "help")
        .collect();
    for want in ["run", "meta", "sweep", "clean", "ior", "dd", "completions"] {
        assert!(subs.iter().any(|s| s == want), "{want} missing: {subs:?}");
    }
    for sub in &subs {
        let r = run(&[sub, "--help"]);
        assert_code(&r, 0);
        check_examples(&format!("ioscale {sub} --help"), &stdout(&r));
    }
}

/// `--progress` given to the inner command of a sweep would be ignored:
/// it is refused with where it goes instead.
#[test]
fn progress_after_the_double_dash_says_where_it_goes() {
    let dir = scratch();
    let r = run(&[
        "sweep",
        "--threads",
        "1",
        "--",
        "run",
        "--progress",
        "none",
        "--size",
        "64k",
        s(dir.path()),
    ]);
    assert_code(&r, 2);
    let e = stderr(&r);
    assert!(e.contains("--progress") && e.contains("before --"), "{e}");
    assert_empty(dir.path());
}

/// What bash completes after `words` (the last one being completed), in
/// `dir`, with the script `ioscale completions bash` printed.
fn bash_completes(script: &Path, dir: &Path, words: &[&str]) -> Vec<String> {
    let arr: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let prog = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{}'; COMP_POINT=${{#COMP_LINE}}; _ioscale ioscale '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        arr.join(" "),
        words.len() - 1,
        words.join(" "),
        words[words.len() - 1],
        words[words.len() - 2]
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &prog])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    v.sort();
    v
}

/// Completion offers the words `--op`, `--layout` and `--engine` take,
/// not the file names of the working directory (it offered `rfile` after
/// `--op r`); the zsh and fish scripts list the same words.
#[test]
fn completions_offer_the_words_a_flag_takes() {
    let d = scratch();
    std::fs::write(d.path().join("rfile"), "").unwrap();
    std::fs::write(d.path().join("sfile"), "").unwrap();
    let out = run(&["completions", "bash"]);
    assert_code(&out, 0);
    let script = d.path().join("ioscale.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let got = |w: &[&str]| bash_completes(&script, d.path(), w);
    assert_eq!(
        got(&["ioscale", "run", "--op", "r"]),
        ["randread", "randrw", "randwrite", "read", "rw"]
    );
    assert_eq!(
        got(&["ioscale", "run", "--layout", ""]),
        ["per-thread", "per-thread-dir", "shared"]
    );
    assert_eq!(got(&["ioscale", "run", "--engine", "s"]), ["sync"]);
    assert_eq!(
        got(&["ioscale", "meta", "--engine", ""]),
        ["io_uring", "sync"]
    );
    assert!(got(&["ioscale", "meta", "--ops", "st"]).contains(&"stat".to_string()));
    assert!(got(&["ioscale", "sweep", "--layout", "s"]).contains(&"same-dir".to_string()));
    // A flag that takes a file still completes file names.
    assert_eq!(got(&["ioscale", "run", "--json", "r"]), ["rfile"]);
    let zsh = stdout(&run(&["completions", "zsh"]));
    assert!(
        zsh.contains(":LIST:(write read randwrite randread rw randrw)")
            && zsh.contains(":LAYOUT:(shared per-thread per-thread-dir)")
            && zsh.contains(":NAME:(sync io_uring)"),
        "zsh"
    );
    let fish = stdout(&run(&["completions", "fish"]));
    for (flag, first) in [("op", "write"), ("layout", "shared"), ("engine", "sync")] {
        assert!(
            fish.lines()
                .any(|l| l.contains("__fish_ioscale_using_subcommand run")
                    && l.contains(&format!(" -l {flag} "))
                    && l.contains(&format!("-r -f -a \"{first}\\t"))),
            "fish --{flag}"
        );
    }
}

/// `ioscale completions bash | head -1` ends quietly: a closed pipe cuts
/// the script short (clap_complete panicked on it).
#[test]
fn completions_into_a_closed_pipe_do_not_panic() {
    let out = std::process::Command::new("bash")
        .args([
            "-c",
            &format!("'{}' completions bash | head -1", ioscale_path().display()),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{out:?}"
    );
}

/// The table numbers repetitions as the progress log does, from 1: the
/// log said `rep 1/2` and `rep 2/2` of rows the table called 0 and 1.
#[test]
fn repetitions_are_numbered_alike_in_the_log_and_the_table() {
    let d = scratch();
    let out = run(&[
        "run",
        "--reps",
        "2",
        "--progress",
        "plain",
        "--op",
        "write",
        "--size",
        "64k",
        "--xfer",
        "64k",
        s(d.path()),
    ]);
    assert_code(&out, 0);
    let log = stderr(&out);
    assert!(
        log.contains("write rep 1/2") && log.contains("write rep 2/2"),
        "{log}"
    );
    let text = stdout(&out);
    let reps: Vec<String> = text
        .lines()
        .skip_while(|l| !(l.starts_with("op ") && l.contains(" rep ")))
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("write "))
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect();
    assert_eq!(reps, ["1", "2"], "{}", stdout(&out));
    assert_empty(d.path());
}
