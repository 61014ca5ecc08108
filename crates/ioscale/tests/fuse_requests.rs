//! The FUSE requests the kernel sends, measured by the sweep's probe from
//! the kernel's `fuse` trace events (crates/probe/src/fusetrace.rs), on
//! `ioscale-testfs` mounts whose negotiated `max_write` is known: the
//! requests carry exactly the bytes the phase wrote, none larger than
//! `max_write`, and their size follows it. The private trace instance is
//! gone after a run, after SIGINT in the middle of a phase, and one left by
//! a killed process is removed by the next run. Without tracefs the record
//! says the requests were not measured, and why. Metadata phases (`meta`
//! create, stat, read, delete) are explained per file in the requests of
//! every opcode, and those counts equal what the daemon itself counted.
//!
//! The harness mounts tracefs when it is not mounted (as root), as CI's
//! fresh machines may not have it.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::fuse::{tracefs, TestFs};
use common::*;
use serde_json::Value;

/// One FUSE test at a time: each measures a whole connection.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The trace instances of process `pid`.
fn instances_of(root: &Path, pid: u32) -> Vec<String> {
    let pre = format!("ioscale-{pid}-");
    std::fs::read_dir(root.join("instances"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&pre))
        .collect()
}

/// `ioscale sweep --threads 1 -- run --op write --size SIZE --xfer 1m DIR`
/// with `env`, returning the record and ioscale's pid.
fn write_sweep(dir: &Path, size: &str, env: &[(&str, &str)]) -> (Value, u32) {
    sweep_ops(dir, "write", size, env)
}

/// The same with the phases `ops`.
fn sweep_ops(dir: &Path, ops: &str, size: &str, env: &[(&str, &str)]) -> (Value, u32) {
    let o = scratch();
    let j = o.path().join("s.json");
    let mut cmd = Command::new(ioscale_path());
    cmd.args(["sweep", "--threads", "1", "--quiet", "--json", s(&j)])
        .args(["--", "run", "--op", ops, "--size", size, "--xfer", "1m"])
        .arg(dir)
        .envs(env.iter().copied());
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_no_panic(&out);
    assert_code(&out, 0);
    (json(&j), pid)
}

/// The write phase's byte count and FUSE connection record.
fn write_phase(v: &Value) -> (u64, &Value) {
    let p = &v["points"][0];
    let probes = p["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 1, "{p:#}");
    let fuse = &probes[0]["resources"]["fuse"];
    assert!(fuse.is_object(), "no FUSE record: {:#}", probes[0]);
    let phases = p["result"]["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 1, "{p:#}");
    let bytes = phases[0]["bytes"].as_u64().unwrap();
    (bytes, fuse)
}

#[test]
fn write_requests_follow_max_write() {
    let _t = turn();
    let Some(root) = tracefs() else { return };
    let mut means = Vec::new();
    for (flag, max_write) in [("128k", 131_072u64), ("1m", 1_048_576)] {
        let Some(fs) = TestFs::mount(&["--max-write", flag]) else {
            return;
        };
        let (v, pid) = write_sweep(fs.path(), "8m", &[]);
        let (bytes, fuse) = write_phase(&v);
        assert_eq!(bytes, 8 << 20, "{:#}", v["points"][0]["result"]);
        let w = &fuse["requests"]["write"];
        println!("max_write {flag}: FUSE_WRITE {w}");
        assert!(fuse["requests_note"].is_null(), "{fuse:#}");
        assert_eq!(fuse["requests"]["lost_events"], 0, "{fuse:#}");
        let count = w["count"].as_u64().unwrap();
        let sent = w["bytes"].as_u64().unwrap();
        let mean = w["mean_bytes"].as_f64().unwrap();
        // Every byte the phase wrote reached the daemon, and nothing else
        // was written on the connection while the phase ran.
        assert_eq!(sent, bytes, "{fuse:#}");
        assert_eq!(count as f64 * mean, sent as f64, "{fuse:#}");
        assert!(w["max_bytes"].as_u64().unwrap() <= max_write, "{fuse:#}");
        // Each 1 MiB write is split into requests of at most max_write.
        assert!(count >= bytes / max_write, "{fuse:#}");
        means.push(mean);
        assert!(instances_of(&root, pid).is_empty(), "instance left behind");
        // The analysis explains Little's law in measured requests.
        let said = v["analysis"].to_string();
        assert!(said.contains("FUSE_WRITE requests"), "{said}");
    }
    // 128 KiB requests: eight per 1 MiB write; 1 MiB requests: fewer.
    assert_eq!(means[0], 131_072.0);
    assert!(means[1] > 2.0 * means[0], "{means:?}");
}

#[test]
fn two_runs_at_once_count_only_their_own_requests() {
    let _t = turn();
    let Some(root) = tracefs() else { return };
    // Two mounts served at 5 ms per request: 24 writes of 1 MiB take over
    // 0.1 s, so the two runs' phases overlap on most machines; each must
    // count exactly its own mount's bytes whether they overlap or not.
    let (Some(a), Some(b)) = (
        TestFs::mount(&["--delay", "5ms"]),
        TestFs::mount(&["--delay", "5ms", "--max-write", "256k"]),
    ) else {
        return;
    };
    let (ra, rb) = std::thread::scope(|s| {
        let ha = s.spawn(|| write_sweep(a.path(), "24m", &[]));
        let hb = s.spawn(|| write_sweep(b.path(), "24m", &[]));
        (ha.join().unwrap(), hb.join().unwrap())
    });
    for ((v, pid), max_write) in [(ra, 1u64 << 20), (rb, 256 << 10)] {
        let (bytes, fuse) = write_phase(&v);
        let w = &fuse["requests"]["write"];
        println!("max_write {max_write}: FUSE_WRITE {w}");
        assert_eq!(w["bytes"].as_u64(), Some(bytes), "{fuse:#}");
        assert_eq!(w["max_bytes"].as_u64(), Some(max_write), "{fuse:#}");
        assert!(instances_of(&root, pid).is_empty(), "instance left behind");
    }
}

/// The number of milliseconds in "≈ 10.4 ms" right after `after`.
fn ms_after(text: &str, after: &str) -> f64 {
    let rest = &text[text
        .find(after)
        .unwrap_or_else(|| panic!("no {after:?} in {text}"))
        + after.len()..];
    let mut w = rest.split_whitespace();
    let v: f64 = w.next().unwrap().parse().unwrap();
    match w.next().unwrap().trim_end_matches([',', ';', '.']) {
        "ms" => v,
        "µs" => v / 1e3,
        "s" => v * 1e3,
        u => panic!("unit {u} in {rest}"),
    }
}

/// Known answer (issue 12, case 1 in kernel requests): a 10 ms delay per
/// request and 128 KiB requests. A 1 MiB write is eight requests, so
/// Little's law gives about 80 ms per write, and the analysis must bring
/// it back to the time per request: the per-write latency Little's law
/// measured ÷ the eight requests, which the 10 ms delay is a floor of;
/// the kernel's own send-to-reply time must be the record's and have that
/// floor too. How far above the floor both land depends on how busy the
/// machine is (13.4 ms with the CPUs loaded), so no ceiling is asserted.
#[test]
fn little_law_per_kernel_request_recovers_the_delay() {
    let _t = turn();
    let Some(_root) = tracefs() else { return };
    let Some(fs) = TestFs::mount(&["--delay", "10ms", "--max-write", "128k"]) else {
        return;
    };
    let o = scratch();
    let j = o.path().join("s.json");
    let out = run(&[
        "sweep",
        "--threads",
        "1",
        "--reps",
        "3",
        "--quiet",
        "--json",
        s(&j),
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "4m",
        "--xfer",
        "1m",
        s(fs.path()),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    let c = &v["analysis"]["curves"][0];
    let said = c["sentences"].to_string();
    println!("{said}");
    assert!(
        said.contains("as 8.0 requests of 128 KiB on average"),
        "{said}"
    );
    // Three significant digits are printed.
    let near = |a: f64, b: f64| (a - b).abs() <= 0.006 * b;
    let per_write_ms = c["little"][0]["latency_s"].as_f64().unwrap() * 1e3;
    let per_request = ms_after(&said, "per request ≈ ");
    assert!(
        near(per_request, per_write_ms / 8.0),
        "per request {per_request} ms, Little's law {per_write_ms} ms per write: {said}"
    );
    assert!(per_request >= 9.95, "per request {per_request} ms: {said}");
    let q = &v["points"][0]["ops"][0]["resources"]["fuse"]["requests"]["write"];
    let kernel = ms_after(&said, "the kernel measured ");
    let recorded = q["time_s"].as_f64().unwrap() * 1e3 / q["answered"].as_f64().unwrap();
    assert!(near(kernel, recorded), "kernel {kernel} ms, record {q:#}");
    assert!(kernel >= 9.95, "kernel {kernel} ms: {said}");
    // Three repetitions of 32 requests, added up.
    assert_eq!(q["count"], 96, "{q:#}");
}

#[test]
fn read_requests_carry_the_bytes_read() {
    let _t = turn();
    let Some(_root) = tracefs() else { return };
    let Some(fs) = TestFs::mount(&[]) else { return };
    let (v, _) = sweep_ops(fs.path(), "write,read", "4m", &[]);
    let p = &v["points"][0];
    let phases = p["result"]["phases"].as_array().unwrap();
    let probes = p["probes"].as_array().unwrap();
    assert_eq!((phases.len(), probes.len()), (2, 2), "{p:#}");
    assert_eq!(probes[1]["op"], "read");
    let bytes = phases[1]["bytes"].as_u64().unwrap();
    let q = &probes[1]["resources"]["fuse"]["requests"];
    println!("read phase: FUSE_READ {}", q["read"]);
    // FOPEN_DIRECT_IO: every byte read came from the daemon, in requests
    // of at most 1 MiB; the read phase wrote nothing.
    assert_eq!(q["read"]["bytes"].as_u64(), Some(bytes), "{q:#}");
    assert!(q["read"]["max_bytes"].as_u64().unwrap() <= 1 << 20, "{q:#}");
    assert_eq!(q["read"]["answered"], q["read"]["count"], "{q:#}");
    assert_eq!(q["write"]["count"], 0, "{q:#}");
    let said = v["analysis"].to_string();
    assert!(said.contains("FUSE_READ requests"), "{said}");
}

#[test]
fn without_tracefs_the_record_says_why() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&[]) else { return };
    let (v, _) = write_sweep(fs.path(), "2m", &[("IOSCALE_TRACEFS", "/nonexistent")]);
    let (_, fuse) = write_phase(&v);
    assert!(fuse["requests"].is_null(), "{fuse:#}");
    let note = fuse["requests_note"].as_str().unwrap_or_default();
    println!("requests_note: {note}");
    assert!(
        note.contains("tracefs not mounted at /nonexistent"),
        "{fuse:#}"
    );
    let said = v["analysis"].to_string();
    assert!(said.contains("not measured"), "{said}");
}

/// Every file below `dir` with its contents (directories as `None`).
fn contents(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.push((p.clone(), None));
            out.extend(contents(&p));
        } else {
            out.push((p.clone(), Some(std::fs::read(&p).unwrap())));
        }
    }
    out.sort();
    out
}

/// `IOSCALE_TRACEFS` naming a directory that looks like tracefs (an
/// `instances` directory, the real event formats and page header copied
/// in) but is not one, a FIFO, or a symbolic link to such a directory:
/// the tracer writes nothing there and the record says why. Before, it
/// made `instances/ioscale-PID-0/` with `tracing_on` and `buffer_size_kb`
/// files in the user's directory and left them.
#[test]
fn a_directory_that_is_not_tracefs_is_never_written() {
    let _t = turn();
    let Some(root) = tracefs() else { return };
    let Some(fs) = TestFs::mount(&[]) else { return };
    let fake = scratch();
    let f = fake.path();
    std::fs::create_dir(f.join("instances")).unwrap();
    for rel in [
        "events/header_page",
        "events/fuse/fuse_request_send/format",
        "events/fuse/fuse_request_end/format",
    ] {
        std::fs::create_dir_all(f.join(rel).parent().unwrap()).unwrap();
        std::fs::write(f.join(rel), std::fs::read(root.join(rel)).unwrap()).unwrap();
    }
    let link = scratch();
    let l = link.path().join("tracing");
    std::os::unix::fs::symlink(f, &l).unwrap();
    let before = contents(f);
    for env in [s(f), s(&l)] {
        let (v, _) = write_sweep(fs.path(), "2m", &[("IOSCALE_TRACEFS", env)]);
        let (_, fuse) = write_phase(&v);
        assert!(fuse["requests"].is_null(), "{fuse:#}");
        let note = fuse["requests_note"].as_str().unwrap_or_default();
        assert!(note.contains("is not a tracefs mount"), "{env}: {fuse:#}");
        assert_eq!(contents(f), before, "{env}: the directory was written");
    }
}

#[test]
fn sigint_mid_phase_removes_the_instance() {
    let _t = turn();
    let Some(root) = tracefs() else { return };
    // 20 ms per request, 1 MiB requests, 256 MiB: the phase would take
    // over 5 s; it is interrupted as soon as its instance exists.
    let Some(fs) = TestFs::mount(&["--delay", "20ms"]) else {
        return;
    };
    let o = scratch();
    let j = o.path().join("s.json");
    let mut child = Command::new(ioscale_path())
        .args(["sweep", "--threads", "1", "--quiet", "--json", s(&j)])
        .args([
            "--", "run", "--op", "write", "--size", "256m", "--xfer", "1m",
        ])
        .arg(fs.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let t0 = Instant::now();
    while instances_of(&root, pid).is_empty() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "ioscale ended before its phase was traced"
        );
        assert!(t0.elapsed() < Duration::from_secs(60), "no trace instance");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill(2) on our own child's pid, which has not been reaped.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_no_panic(&out);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        instances_of(&root, pid).is_empty(),
        "instance left behind after SIGINT"
    );
}

/// A second SIGINT (or SIGTERM) ends ioscale at once (exit 130); the
/// phase's trace instance, live at that moment, is turned off and removed
/// first. Before, it was left with tracing on, recording the connection's
/// requests into its buffers, until another traced run came by. Each
/// write takes 2 s in the daemon, so the phase is still running when both
/// signals arrive; the test waits until the instance's events are
/// enabled, the tracer's last step before the phase starts.
#[test]
fn a_second_signal_removes_the_live_instance() {
    let _t = turn();
    let Some(root) = tracefs() else { return };
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // A mount of its own each time: the set a second signal cut short
        // is left in it, as `ioscale clean` would find it.
        let Some(fs) = TestFs::mount(&["--delay", "2s"]) else {
            return;
        };
        let o = scratch();
        let j = o.path().join("s.json");
        let child = Command::new(ioscale_path())
            .args(["sweep", "--threads", "1", "--quiet", "--json", s(&j)])
            .args([
                "--", "run", "--op", "write", "--size", "64m", "--xfer", "1m",
            ])
            .arg(fs.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let t0 = Instant::now();
        let enabled = || {
            instances_of(&root, pid).iter().any(|n| {
                let f = root.join("instances").join(n).join("events/fuse/enable");
                std::fs::read_to_string(f).is_ok_and(|v| v.trim() == "1")
            })
        };
        while !enabled() {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "no live trace instance"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        // Two signals, the second once the first is delivered (a signal
        // sent while the same one is pending is merged into it; while its
        // handler runs, the second waits for it to return).
        let pending = || {
            let st = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            st.lines()
                .filter(|l| l.starts_with("ShdPnd:") || l.starts_with("SigPnd:"))
                .filter_map(|l| u64::from_str_radix(l.split(':').nth(1)?.trim(), 16).ok())
                .any(|m| m & (1 << (sig - 1)) != 0)
        };
        // SAFETY: kill(2) on our own child's pid, not yet reaped.
        assert_eq!(unsafe { libc::kill(pid as libc::pid_t, sig) }, 0);
        while pending() {
            std::thread::sleep(Duration::from_millis(1));
        }
        // SAFETY: as above.
        assert_eq!(unsafe { libc::kill(pid as libc::pid_t, sig) }, 0);
        let out = child.wait_with_output().unwrap();
        assert_no_panic(&out);
        assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
        let left = instances_of(&root, pid);
        for n in &left {
            let _ = std::fs::remove_dir(root.join("instances").join(n));
        }
        assert!(left.is_empty(), "signal {sig}: instance left: {left:?}");
    }
}

#[test]
fn an_instance_of_a_killed_run_is_removed() {
    let _t = turn();
    let Some(root) = tracefs() else { return };
    // A pid that no longer exists, as a run killed with SIGKILL leaves.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let stale = root.join("instances").join(format!("ioscale-{dead}-0"));
    std::fs::create_dir(&stale).unwrap();
    // Someone else's instances, named like ioscale's but not of its form
    // `ioscale-PID-N`: never removed (before, the first was).
    let foreign: Vec<PathBuf> = [format!("ioscale-{dead}-mine"), format!("ioscale-{dead}-")]
        .iter()
        .map(|n| root.join("instances").join(n))
        .collect();
    for f in &foreign {
        std::fs::create_dir(f).unwrap();
    }
    let tidy = || {
        for d in foreign.iter().chain([&stale]) {
            let _ = std::fs::remove_dir(d);
        }
    };
    let Some(fs) = TestFs::mount(&[]) else {
        tidy();
        return;
    };
    let (_, pid) = write_sweep(fs.path(), "1m", &[]);
    let left = stale.exists();
    let kept: Vec<bool> = foreign.iter().map(|f| f.exists()).collect();
    tidy();
    assert!(!left, "the stale instance of pid {dead} is still there");
    assert_eq!(kept, [true, true], "a foreign instance was removed");
    assert!(instances_of(&root, pid).is_empty());
}

/// `ioscale sweep --threads 1 -- meta --ops OPS -n FILES …` on `dir`
/// with `env`, returning the record.
fn meta_sweep(dir: &Path, ops: &str, files: &str, more: &[&str], env: &[(&str, &str)]) -> Value {
    let o = scratch();
    let j = o.path().join("s.json");
    let out = Command::new(ioscale_path())
        .args(["sweep", "--threads", "1", "--quiet", "--json", s(&j)])
        .args(["--", "meta", "--ops", ops, "-n", files])
        .args(more)
        .arg(dir)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert_no_panic(&out);
    assert_code(&out, 0);
    json(&j)
}

/// Every traced request of one operation at the first point, by opcode
/// (FUSE_READ and FUSE_WRITE included), and the files it did.
fn traced(v: &Value, op: &str) -> (std::collections::BTreeMap<String, u64>, u64) {
    let o = v["points"][0]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == op)
        .unwrap_or_else(|| panic!("no {op} in {:#}", v["points"][0]["ops"]));
    let q = &o["resources"]["fuse"]["requests"];
    assert!(q.is_object(), "{op} not traced: {:#}", o["resources"]);
    assert_eq!(q["lost_events"], 0, "{q:#}");
    let mut by: std::collections::BTreeMap<String, u64> = q["other"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
        .collect();
    for (k, d) in [("FUSE_WRITE", "write"), ("FUSE_READ", "read")] {
        let n = q[d]["count"].as_u64().unwrap();
        if n > 0 {
            by.insert(k.into(), n);
        }
    }
    (by, o["ops_total"].as_u64().unwrap())
}

/// The analysis sentences of the line of `op`.
fn said_of(v: &Value, op: &str) -> String {
    v["analysis"]["curves"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["op"] == op)
        .unwrap_or_else(|| panic!("no {op} line in {:#}", v["analysis"]))["sentences"]
        .to_string()
}

/// The mean time of opcode `name` in "(CREATE 10.2 ms, LOOKUP …)".
/// Whether a delayed request's measured time holds the 10 ms delay.
fn delayed(ms: f64) -> bool {
    (10.0..1000.0).contains(&ms)
}

fn opcode_ms(said: &str, name: &str) -> f64 {
    let list = &said[said.find("from send to reply (").expect(said) + 20..];
    let list = &list[..list.find(')').unwrap()];
    ms_after(&format!("{list},"), &format!("{name} "))
}

/// Known answer for metadata: a 10 ms delay on every metadata request.
/// Each create, stat and delete is explained in the requests the trace
/// counted: per file, the traced count ÷ the files done, every create a
/// FUSE_CREATE, a FUSE_FLUSH and a FUSE_RELEASE, every stat a
/// FUSE_GETATTR, every delete a FUSE_UNLINK; the kernel's time per delayed
/// request is at least the delay (how far above it depends on how late
/// the daemon's thread wakes up: 17 ms seen on a loaded CI machine, so
/// only an absurd figure is refused above).
#[test]
fn meta_requests_per_file_are_explained() {
    let _t = turn();
    let Some(_root) = tracefs() else { return };
    // No entry or attribute caching, so each stat reaches the daemon.
    let Some(fs) = TestFs::mount(&["--meta-delay", "10ms", "--attr-ttl", "0"]) else {
        return;
    };
    let v = meta_sweep(
        fs.path(),
        "create,stat,delete",
        "8",
        &["--file-size", "0"],
        &[],
    );
    for op in ["create", "stat", "delete"] {
        let (by, files) = traced(&v, op);
        let total: u64 = by.values().sum();
        let said = said_of(&v, op);
        println!("{op}: {by:?} for {files} files\n{said}");
        assert_eq!(files, 8, "{op}");
        let per_file = total as f64 / files as f64;
        assert!(
            said.contains(&format!(
                "Each {op} reached the FUSE daemon as {per_file:.1} requests ("
            )),
            "{said}"
        );
        assert!(
            said.contains(&format!(
                "measured: {total} requests for {files} {op}s in the traced phases"
            )),
            "{said}"
        );
        let exactly = |name: &str| {
            assert_eq!(by.get(name), Some(&files), "{op}: {name} in {by:?}");
        };
        match op {
            "create" => {
                for name in ["FUSE_CREATE", "FUSE_FLUSH", "FUSE_RELEASE"] {
                    exactly(name);
                }
                for name in ["CREATE", "FLUSH"] {
                    let ms = opcode_ms(&said, name);
                    assert!(delayed(ms), "{name} {ms} ms: {said}");
                }
            }
            "delete" => {
                exactly("FUSE_UNLINK");
                let ms = opcode_ms(&said, "UNLINK");
                assert!(delayed(ms), "UNLINK {ms} ms: {said}");
            }
            _ => {
                // Without attribute caching every stat asks for them.
                exactly("FUSE_GETATTR");
                let ms = opcode_ms(&said, "GETATTR");
                assert!(delayed(ms), "GETATTR {ms} ms: {said}");
            }
        }
    }
}

/// The requests by opcode the daemon itself counted (its last log line).
fn daemon_counts(log: &str) -> std::collections::BTreeMap<String, u64> {
    let line = log
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("ioscale-testfs: requests by opcode: "))
        .unwrap_or_else(|| panic!("no request counts in the log:\n{log}"));
    line.split(", ")
        .filter(|p| *p != "none")
        .map(|p| {
            let (k, n) = p.rsplit_once(' ').unwrap();
            (k.to_string(), n.parse().unwrap())
        })
        .collect()
}

/// The trace counts what the daemon received, opcode by opcode, exactly.
/// A run also sends requests outside its phases (its marker, the tree,
/// the cleanup) that the daemon counts and the trace does not; they do
/// not depend on the number of files, so between a run of 24 files and
/// one of 8 (each on a fresh mount, no caching: `--attr-ttl 0`) the
/// daemon's counts and the traced counts differ by the same amounts.
#[test]
fn traced_opcodes_match_the_daemons_own_counts() {
    let _t = turn();
    let Some(_root) = tracefs() else { return };
    let mut runs = Vec::new();
    for files in ["8", "24"] {
        let Some(fs) = TestFs::mount(&["--attr-ttl", "0"]) else {
            return;
        };
        let v = meta_sweep(fs.path(), "create,stat,read,delete", files, &[], &[]);
        let mut traced_all = std::collections::BTreeMap::<String, i64>::new();
        for op in ["create", "stat", "read", "delete"] {
            for (k, n) in traced(&v, op).0 {
                *traced_all.entry(k).or_default() += n as i64;
            }
        }
        let (st, log) = fs.stop();
        assert!(st.success(), "{log}");
        runs.push((traced_all, daemon_counts(&log)));
    }
    let (t8, d8) = &runs[0];
    let (t24, d24) = &runs[1];
    let names: std::collections::BTreeSet<&String> = t8
        .keys()
        .chain(t24.keys())
        .chain(d8.keys())
        .chain(d24.keys())
        .collect();
    let mut compared = 0;
    for k in names {
        let get = |m: &std::collections::BTreeMap<String, i64>| m.get(k).copied().unwrap_or(0);
        let getd =
            |m: &std::collections::BTreeMap<String, u64>| m.get(k).copied().unwrap_or(0) as i64;
        let (traced, daemon) = (get(t24) - get(t8), getd(d24) - getd(d8));
        println!("{k}: traced +{traced}, daemon +{daemon}");
        assert_eq!(
            traced, daemon,
            "{k}: traced {t8:?} / {t24:?}, daemon {d8:?} / {d24:?}"
        );
        compared += usize::from(traced > 0);
    }
    // 16 more files: creates, flushes, releases, opens, reads, unlinks…
    assert!(compared >= 6, "only {compared} opcodes grew with the files");
}

#[test]
fn meta_without_tracefs_says_why_and_explains_nothing() {
    let _t = turn();
    let Some(fs) = TestFs::mount(&[]) else { return };
    let v = meta_sweep(
        fs.path(),
        "create,stat,delete",
        "4",
        &[],
        &[("IOSCALE_TRACEFS", "/nonexistent")],
    );
    for o in v["points"][0]["ops"].as_array().unwrap() {
        let f = &o["resources"]["fuse"];
        assert!(f["requests"].is_null(), "{f:#}");
        let note = f["requests_note"].as_str().unwrap_or_default();
        assert!(
            note.contains("tracefs not mounted at /nonexistent"),
            "{f:#}"
        );
    }
    let said = v["analysis"].to_string();
    println!("{said}");
    assert!(!said.contains("reached the FUSE daemon"), "{said}");
    // The 4 KiB creates keep the data path's note.
    assert!(
        said.contains(
            "The FUSE request size was not measured (tracefs not mounted at /nonexistent"
        ),
        "{said}"
    );
}

/// Known answer for several workers: four threads creating files on a
/// server that takes 10 ms per metadata request and serves 16 at once
/// spend nearly all their time waiting for requests, one each, so Little's
/// law over the traced time puts between 2 and 4 requests in flight (a
/// background FUSE_RELEASE can add a little); the figure is the record's
/// summed send-to-reply time ÷ traced time.
#[test]
fn meta_with_four_workers_gives_the_requests_in_flight() {
    let _t = turn();
    let Some(_root) = tracefs() else { return };
    let Some(fs) = TestFs::mount(&["--meta-delay", "10ms", "--attr-ttl", "0"]) else {
        return;
    };
    let o = scratch();
    let j = o.path().join("s.json");
    let out = run(&[
        "sweep",
        "--threads",
        "4",
        "--quiet",
        "--json",
        s(&j),
        "--",
        "meta",
        "--ops",
        "create,delete",
        "-n",
        "8",
        "--file-size",
        "0",
        s(fs.path()),
    ]);
    assert_code(&out, 0);
    let v = json(&j);
    let said = said_of(&v, "create");
    println!("{said}");
    assert!(!said.contains("at most"), "{said}");
    let at = "at 4 workers and ";
    assert!(said.contains(at), "{said}");
    let k: f64 = said[said.find("that is ≈ ").unwrap() + "that is ≈ ".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let o = &v["points"][0]["ops"][0];
    assert_eq!(o["op"], "create");
    let q = &o["resources"]["fuse"]["requests"];
    let time: f64 = q["other_replies"]
        .as_object()
        .unwrap()
        .values()
        .map(|r| r["time_s"].as_f64().unwrap())
        .sum::<f64>()
        + q["write"]["time_s"].as_f64().unwrap()
        + q["read"]["time_s"].as_f64().unwrap();
    let window = o["resources"]["elapsed_s"].as_f64().unwrap();
    assert!(
        ((time / window) - k).abs() <= 0.01 * k,
        "{k} vs {time} / {window}"
    );
    assert!(k > 2.0 && k <= 4.2, "{k} requests in flight: {said}");
}
