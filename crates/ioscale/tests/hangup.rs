//! Issue 27: nothing lost when the terminal goes away. The workshops run
//! their benchmarks from a browser's SSH window; when the connection times
//! out the shell sends SIGHUP and every later write to the terminal fails
//! (EIO). SIGHUP is handled as SIGTERM is — the run stops at its next
//! boundary, keeps and writes what it measured, removes its files — and
//! exits 129; a write to a terminal or pipe that is gone never ends a run
//! or costs its records; a signal that arrives after the I/O ended still
//! decides the exit code, the same way for every command. The random
//! points are in signals_random.rs.

mod common;
#[path = "support/hup.rs"]
mod hup;
#[path = "support/rel.rs"]
mod rel;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::*;
use hup::*;
use rel::*;

/// Runs `case` to its end, frozen at the `done` hook (its outputs written,
/// its files removed), sends `sig` there and lets it exit.
fn signal_when_done(name: &'static str, sig: i32, code: i32) {
    let t = scratch();
    let tp = t.path();
    plant_lookalikes(tp);
    let before = snapshot(tp);
    let o = scratch();
    let c = case(name, tp, o.path(), Length::Short);
    let mut child = spawn_frozen(&c, "done");
    wait_stopped(&mut child, name);
    signal(&child, sig);
    resume(&child);
    let out = finish(child, Duration::from_secs(120));
    let ctx = format!("{name}: signal {sig} once the command was done");
    check_ending(&c, &out, code, tp, &before, &ctx);
    if let Some(r) = c.record.as_ref().filter(|_| c.native) {
        // The measurement itself was complete: the record says so.
        assert_eq!(json(r)["interrupted"], false, "{ctx}");
    }
}

#[test]
fn a_hangup_after_the_io_ended_is_exit_129_for_every_command() {
    // Before: a signal between the last phase and the exit was ignored
    // (exit 0). Now the exit code says that a signal came, whatever the
    // command; the record says the measurement was whole.
    for name in COMMANDS {
        signal_when_done(name, libc::SIGHUP, 129);
    }
}

#[test]
fn sigterm_and_sigint_after_the_io_ended_are_exit_130() {
    for (name, sig) in [
        ("run", libc::SIGTERM),
        ("meta", libc::SIGINT),
        ("fio", libc::SIGTERM),
        ("io500", libc::SIGINT),
    ] {
        signal_when_done(name, sig, 130);
    }
}

/// A `run` long enough to be interrupted: 2 workers writing 1 GiB each
/// with O_SYNC.
fn long_run(j: &Path, t: &Path) -> Vec<String> {
    [
        "run",
        "--op",
        "write,read",
        "--threads",
        "2",
        "--size",
        "1g",
        "--xfer",
        "64k",
        "--sync",
        "each",
        "--json",
        s(j),
        "-q",
        s(t),
    ]
    .iter()
    .map(|w| w.to_string())
    .collect()
}

#[test]
fn a_hangup_stops_a_run_keeps_its_record_and_removes_its_files() {
    // Sent twice, as a hang-up is (the shell passes it on, then the kernel
    // sends it again when the shell exits): the second SIGHUP does not cut
    // the cleanup or the record short, as a second Ctrl-C does.
    for twice in [false, true] {
        let t = scratch();
        let tp = t.path();
        plant_lookalikes(tp);
        let before = snapshot(tp);
        let o = scratch();
        let j = o.path().join("r.json");
        let c = o.path().join("r.csv");
        let mut a = long_run(&j, tp);
        a.extend(["--csv".to_string(), s(&c).to_string()]);
        let mut child = spawn(&a.iter().map(String::as_str).collect::<Vec<_>>());
        let data = tp.join("ioscale.d/file.00000001");
        wait_until(&mut child, "data was written", || len(&data) >= M);
        signal(&child, libc::SIGHUP);
        if twice {
            signal(&child, libc::SIGHUP);
        }
        let out = finish(child, Duration::from_secs(60));
        assert_code(&out, 129);
        let v = json(&j);
        assert_eq!(v["interrupted"], true);
        let ph = phases(&v);
        assert_eq!(ph.len(), 1, "the read phase never started");
        assert!(ph[0]["bytes"].as_u64().unwrap() >= M);
        // The CSV holds the same phase: a header and the write's row.
        let csv = std::fs::read_to_string(&c).expect("--csv written");
        let rows: Vec<&str> = csv.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(rows.len(), 2, "header + the write phase:\n{csv}");
        let header: Vec<&str> = rows[0].split(',').collect();
        let op = header
            .iter()
            .position(|h| *h == "op")
            .expect("an op column");
        let cols: Vec<&str> = rows[1].split(',').collect();
        assert_eq!(cols[op].trim_matches('"'), "write", "{csv}");
        assert_intact(tp, &before, &format!("twice {twice}"));
    }
}

#[test]
fn a_terminal_that_hangs_up_ends_the_run_with_129_and_its_record() {
    // The SSH connection drops: the terminal's master side closes, the
    // kernel sends SIGHUP to the session and every later write to the
    // terminal (the progress bar, the messages) fails with EIO. Before:
    // killed by the signal, no record, the files left behind.
    let t = scratch();
    let tp = t.path();
    plant_lookalikes(tp);
    let before = snapshot(tp);
    let o = scratch();
    let j = o.path().join("r.json");
    let mut a = long_run(&j, tp);
    a.retain(|w| w != "-q");
    let mut term = OnTerminal::spawn(&a, false);
    let data = tp.join("ioscale.d/file.00000001");
    term.wait_until("data was written", || len(&data) >= M);
    term.hang_up();
    let st = term.finish();
    assert_eq!(st.code(), Some(129), "{st}");
    let v = json(&j);
    assert_eq!(v["interrupted"], true);
    assert!(phases(&v)[0]["bytes"].as_u64().unwrap() >= M);
    assert_intact(tp, &before, "hung-up terminal");
}

#[test]
fn a_run_that_ignores_the_hangup_finishes_writing_to_a_dead_terminal() {
    // Under `nohup` (SIGHUP ignored from the start) with the terminal left
    // as the output, or started with `setsid`: the run goes on after the
    // hang-up, and every line it writes then — progress, the table, the
    // notes of a kept set — fails with EIO. Before: the first note
    // panicked (exit 101) after the record was written.
    for cmd in ["run", "meta", "sweep"] {
        let t = scratch();
        let tp = t.path();
        let o = scratch();
        let j = o.path().join("r.json");
        let target = s(tp).to_string();
        let mut a: Vec<String> = match cmd {
            "run" => vec!["run", "--op", "write,read", "--reps", "3", "--size", "48m"],
            "meta" => vec![
                "meta",
                "--ops",
                "create,stat",
                "--threads",
                "2",
                "--files",
                "5000",
            ],
            _ => vec![
                "sweep",
                "--threads",
                "1,2",
                "--reps",
                "3",
                "--",
                "run",
                "--op",
                "write",
                "--size",
                "48m",
            ],
        }
        .into_iter()
        .map(String::from)
        .collect();
        let first = if cmd == "sweep" { 1 } else { a.len() };
        a.splice(
            first..first,
            ["--json", s(&j), "--progress", "plain"].map(String::from),
        );
        if cmd != "sweep" {
            a.push("--keep".into());
        }
        a.push(target);
        let mut term = OnTerminal::spawn(&a, true);
        // Hung up at once: everything the run says is said to no one.
        term.wait_until("the run started", || {
            tp.read_dir().unwrap().next().is_some()
        });
        term.hang_up();
        let st = term.finish();
        assert_eq!(st.code(), Some(0), "{cmd}: {st}");
        let v = json(&j);
        assert_eq!(v["interrupted"], false, "{cmd}");
        assert_code(&run(&["report", "-q", s(&j)]), 0);
        if cmd != "sweep" {
            assert_code(&run(&["clean", s(tp)]), 0);
        }
        assert_empty(tp);
    }
}

/// Runs `args` with standard output and/or error a pipe whose reader is
/// gone (EPIPE on every write); returns the exit code.
fn with_closed_pipe(args: &[&str], out: bool, err: bool) -> Option<i32> {
    let mut fds = [0; 2];
    // SAFETY: pipe fills two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both are ours; the read end closes at once.
    let (r, w) = unsafe {
        use std::os::fd::FromRawFd;
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    drop(r);
    let pick = |closed: bool| -> Stdio {
        if closed {
            Stdio::from(w.try_clone().unwrap())
        } else {
            Stdio::null()
        }
    };
    let st = std::process::Command::new(ioscale_path())
        .args(args)
        .stdin(Stdio::null())
        .stdout(pick(out))
        .stderr(pick(err))
        .status()
        .unwrap();
    st.code()
}

#[test]
fn writes_to_a_closed_pipe_never_end_a_run_or_lose_its_records() {
    // `ioscale … | head -1`, or a log reader that quit. Before: a kept
    // set's note panicked (exit 101) on standard error.
    let t = scratch();
    let tp = t.path();
    let o = scratch();
    for (out, err) in [(true, false), (false, true), (true, true)] {
        for name in COMMANDS {
            let c = case(name, tp, o.path(), Length::Short);
            let mut a: Vec<&str> = c.args.iter().map(String::as_str).collect();
            if matches!(name, "run" | "meta") {
                // A kept set's note too, and the table (without -q).
                a.retain(|w| *w != "-q");
                a.insert(1, "--keep");
            }
            if let Some(r) = &c.record {
                let _ = std::fs::remove_file(r);
            }
            let ctx = format!("{name} (stdout closed {out}, stderr closed {err})");
            assert_eq!(with_closed_pipe(&a, out, err), Some(0), "{ctx}");
            if let Some(r) = &c.record {
                let v: serde_json::Value = serde_json::from_slice(&std::fs::read(r).unwrap())
                    .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                assert!(v.is_object(), "{ctx}");
            }
            if c.keeps || matches!(name, "run" | "meta") {
                assert_code(&run(&["clean", s(tp)]), 0);
            }
            assert_empty(tp);
        }
    }
}

#[test]
fn a_sweep_stopped_by_a_hangup_resumes() {
    let t = scratch();
    let tp = t.path();
    plant_lookalikes(tp);
    let before = snapshot(tp);
    let o = scratch();
    let j = o.path().join("s.json");
    let hold = o.path().join("hold");
    std::fs::write(&hold, b"").unwrap();
    let args = |resume: bool| {
        let mut a = vec!["sweep", "--threads", "1,2,4", "--json", s(&j), "-q"];
        if resume {
            a.push("--resume");
        }
        a.extend(["--", "run", "--op", "write", "--size", "1m", s(tp)]);
        a
    };
    let hold_s = s(&hold).to_string();
    let mut child = spawn_env(&args(false), &[("IOSCALE_TEST_SWEEP_HOLD", &hold_s)]);
    let held = o.path().join("hold.held");
    wait_until(&mut child, "the first point was journaled", || {
        held.exists()
    });
    signal(&child, libc::SIGHUP);
    let out = finish(child, Duration::from_secs(60));
    assert_code(&out, 129);
    let v = json(&j);
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["stop_reason"], "interrupted by SIGHUP");
    assert_eq!(v["points"].as_array().unwrap().len(), 1);
    assert!(stderr(&out).contains("--resume"), "{}", stderr(&out));
    assert_intact(tp, &before, "stopped sweep");
    let out = run(&args(true));
    assert_code(&out, 0);
    let v = json(&j);
    assert_eq!(v["interrupted"], false);
    assert_eq!(v["points"].as_array().unwrap().len(), 3);
    assert_intact(tp, &before, "resumed sweep");
}
