//! The ioscale binary on 4 simulated nodes × 2 ranks (`scripts/mpi-nodes`:
//! one Open MPI daemon per node name in its own UTS namespace, ranks of
//! different nodes over TCP), as a black box: the IOR header's nodes,
//! tasks and clients per node, the JSON record's per-node totals and rates
//! (and the text report's per-node rows), reordered reads from the next
//! node (strace per rank), one deadline and the recorded start skew, and
//! a rank that stops answering named with its node.
//! Needs mpirun and root (`unshare --uts`); built only with
//! `--features mpi`.

#![cfg(feature = "mpi")]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;

/// One MPI job at a time: 2 cores.
static SERIAL: Mutex<()> = Mutex::new(());

fn nodes_run(args: &[&str]) -> (bool, String) {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = nodes_command(&[], args)
        .output()
        .expect("running scripts/mpi-nodes");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The job over 4 nodes × 2 ranks, with `mpirun` options `mpi`.
fn nodes_command(mpi: &[&str], args: &[&str]) -> Command {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mpi-nodes");
    let mut c = Command::new("timeout");
    c.arg("300")
        .arg(script)
        .args(["run", "4", "2"])
        .args(mpi)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_ioscale"))
        .args(args);
    c
}

/// A scratch directory in RAM (/dev/shm) for the time-limited phases,
/// whose volume depends on the machine's speed; elsewhere when absent.
fn shm_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")))
        .unwrap()
}

fn header(text: &str, key: &str) -> String {
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no `{key}` line in:\n{text}"))
}

#[test]
fn ior_header_counts_nodes_and_clients_per_node() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("f");
    let (ok, text) = nodes_run(&[
        "ior",
        "-w",
        "-r",
        "-b",
        "1m",
        "-t",
        "256k",
        "-F",
        "-C",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(ok, "{text}");
    assert_eq!(header(&text, "nodes"), "4");
    assert_eq!(header(&text, "tasks"), "8");
    assert_eq!(header(&text, "clients per node"), "2");
    assert_eq!(header(&text, "aggregate filesize"), "8 MiB");
    assert!(
        header(&text, "Machine").ends_with("ioscale-sim-node0"),
        "{text}"
    );
    // Summary rows: #Tasks 8, tPN 2.
    let write = text
        .lines()
        .find(|l| l.starts_with("write ") && l.contains("POSIX"))
        .expect("a summary row for write");
    let cols: Vec<&str> = write.split_whitespace().collect();
    let tasks = cols.iter().position(|c| *c == "8").expect("#Tasks column");
    assert_eq!(cols[tasks + 1], "2", "tPN in {write}");
}

#[test]
fn run_records_every_node_and_its_totals() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let json = dir.path().join("r.json");
    let (ok, text) = nodes_run(&[
        "run",
        "--op",
        "write,read",
        "--layout",
        "per-thread",
        "--xfer",
        "256k",
        "--size",
        "1m",
        "--reorder",
        "--json",
        json.to_str().unwrap(),
        target.to_str().unwrap(),
    ]);
    assert!(ok, "{text}");
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let c = &v["host"]["cluster"];
    assert_eq!(c["ranks"], 8, "{c}");
    assert_eq!(c["nodes"], 4, "{c}");
    assert_eq!(c["tasks_per_node"], 2, "{c}");
    let hosts: Vec<&str> = c["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    for (r, h) in hosts.iter().enumerate() {
        assert_eq!(*h, format!("ioscale-sim-node{}", r / 2));
    }
    let nodes = c["node_phases"].as_array().unwrap();
    for phase in [0u64, 1] {
        let of: Vec<&Value> = nodes.iter().filter(|n| n["phase"] == phase).collect();
        assert_eq!(of.len(), 4, "one entry per node in phase {phase}: {c}");
        for n in &of {
            assert_eq!(n["ranks"], 2);
            // 2 ranks × 1 thread × 1 MiB each.
            assert_eq!(n["bytes"], 2 << 20, "{n}");
            // The node's own rate: its bytes over its own span.
            let (bw, el) = (
                n["bw_mib_s"].as_f64().unwrap(),
                n["elapsed_s"].as_f64().unwrap(),
            );
            assert!(el > 0.0 && bw > 0.0, "{n}");
            assert!((bw - 2.0 / el).abs() <= 1e-6 * bw, "{n}");
            // The text report shows it: one row per phase and node.
            let row = [
                n["op"].as_str().unwrap().to_string(),
                "0".into(),
                n["host"].as_str().unwrap().to_string(),
                "2".into(),
                "2.00".into(),
                format!("{bw:.2}"),
            ];
            assert!(
                text.lines().any(|l| {
                    let cols: Vec<&str> = l.split_whitespace().collect();
                    cols.len() == 7 && cols[..6] == row
                }),
                "no per-node row {row:?} in:\n{text}"
            );
        }
    }
}

#[test]
fn a_time_limited_phase_ends_at_one_deadline_and_records_the_skew() {
    let dir = shm_dir();
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let json = dir.path().join("r.json");
    let (ok, text) = nodes_run(&[
        "run",
        "--op",
        "write",
        "--layout",
        "per-thread",
        "--xfer",
        "4k",
        "--size",
        // More than 8 workers can write to tmpfs in a second on a quiet
        // machine (2 GiB took 0.89 s), so the time limit, not the size,
        // ends the phase; the files are removed at the end.
        "2g",
        "--time",
        "1s",
        "--json",
        json.to_str().unwrap(),
        target.to_str().unwrap(),
    ]);
    assert!(ok, "{text}");
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let p = &v["phases"][0];
    assert_eq!(p["time_limited"], true, "{p}");
    // The ranks' barrier exits: measured, so never exactly equal across
    // 8 processes, and far below a second.
    let skew = p["start_skew_s"].as_f64().expect("start_skew_s recorded");
    assert!(skew > 0.0 && skew < 1.0, "start skew {skew}");
    let spread = p["worker_start_spread_s"]
        .as_f64()
        .expect("worker_start_spread_s recorded");
    assert!((0.0..1.0).contains(&spread), "worker start spread {spread}");
    // One deadline: the phase's barrier + 1 s for every worker of every
    // rank. Times are against the earliest start, which is at or after
    // the barrier, so no worker may end later than 1 s plus the one
    // request in hand and its close.
    let workers = p["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 8);
    for w in workers {
        let end = w["end_s"].as_f64().unwrap();
        assert!(
            end <= 1.5,
            "a worker ended {end} s after the first start: {w}"
        );
    }
}

#[test]
fn ior_verbose_prints_a_measured_start_skew() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("f");
    let (ok, text) = nodes_run(&[
        "ior",
        "-v",
        "-w",
        "-b",
        "1m",
        "-t",
        "256k",
        "-F",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert!(ok, "{text}");
    let printed = header(&text, "Start time skew across all tasks");
    let secs: f64 = printed
        .strip_suffix(" sec")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("skew line: {printed}"));
    assert!((0.0..1.0).contains(&secs), "{text}");
}

/// The pid of rank `rank` of a job of this test's ioscale binary.
fn rank_pid(rank: u32) -> Option<u32> {
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_ioscale")).ok()?;
    let want = format!("OMPI_COMM_WORLD_RANK={rank}");
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if std::fs::read_link(e.path().join("exe")).ok().as_ref() != Some(&exe) {
            continue;
        }
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|kv| kv == want.as_bytes()) {
            return Some(pid);
        }
    }
    None
}

#[test]
fn a_rank_that_stops_answering_is_named_with_its_node() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = shm_dir();
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let child = nodes_command(
        &["-x", "IOSCALE_COORD_TIMEOUT=2"],
        &[
            "run",
            "--op",
            "write",
            "--layout",
            "per-thread",
            "--xfer",
            "4k",
            "--size",
            "256m",
            "--time",
            "3s",
            target.to_str().unwrap(),
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    // Rank 5 runs on node 2; freeze it once it is up (SIGSTOP: alive to
    // the MPI daemons, silent to its peers).
    let mut pid = None;
    for _ in 0..600 {
        pid = rank_pid(5);
        if pid.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let pid = pid.expect("rank 5 of the job started");
    // Inside the phase: rank 5's worker thread (global worker 5) runs.
    let in_phase = || {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).into_iter();
        tasks.flatten().flatten().any(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == "ioscale-w5")
        })
    };
    for _ in 0..3000 {
        if in_phase() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let stopped = Command::new("kill")
        .args(["-STOP", &pid.to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let out = child.wait_with_output().unwrap();
    // Leave nothing frozen behind, whatever happened.
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    // Not `timeout`'s 124: the ranks gave up by themselves.
    assert_ne!(out.status.code(), Some(124), "{text}");
    assert!(
        text.contains("rank 5 (ioscale-sim-node2)"),
        "the error names the rank and its node: {text}"
    );
}

#[test]
fn reordered_reads_come_from_the_next_node() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = shm_dir();
    let target = dir.path().join("t");
    let traces = dir.path().join("traces");
    std::fs::create_dir(&target).unwrap();
    std::fs::create_dir(&traces).unwrap();
    // Every rank under strace, its trace named by its rank: which data
    // file each rank opens read-only is which data it reads.
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mpi-nodes");
    let out = Command::new("timeout")
        .arg("300")
        .arg(script)
        .args(["run", "4", "2", "--", "sh", "-c"])
        .arg(r#"exec strace -f -qq --seccomp-bpf -e trace=openat -o "$0/rank$OMPI_COMM_WORLD_RANK" "$@""#)
        .arg(&traces)
        .arg(env!("CARGO_BIN_EXE_ioscale"))
        .args(["run", "--op", "write,read", "--layout", "per-thread"])
        .args(["--xfer", "256k", "--size", "1m", "--reorder"])
        .arg(&target)
        .output()
        .expect("running scripts/mpi-nodes");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    for rank in 0..8u32 {
        let trace = std::fs::read_to_string(traces.join(format!("rank{rank}"))).unwrap();
        let read: Vec<u32> = trace
            .lines()
            .filter(|l| l.contains("O_RDONLY") && !l.contains("O_CREAT"))
            .filter_map(|l| {
                // By path, or (rank 0, which holds ioscale.d) by name
                // relative to the held directory.
                let at = l.find("/file.").or_else(|| l.find("\"file."))? + "/file.".len();
                l.get(at..at + 8)?.parse().ok()
            })
            .collect();
        // One thread per rank, 2 ranks per node: IOR -C's shift by the
        // tasks per node, so each rank reads the file of the rank 2 further
        // on, which ran on the next node.
        let want = (rank + 2) % 8;
        assert_eq!(
            read,
            vec![want],
            "rank {rank} read files {read:?}:\n{trace}"
        );
    }
}

/// Issue 13, across nodes: `ioscale.d` renamed away and another directory
/// made in its place, holding a copy of rank 0's marker (its token too),
/// while the other ranks are held right before they open it (the test hook
/// `IOSCALE_TEST_PEER_PAUSE`). Rank 1 (rank 0's node) compares (device,
/// inode); the ranks of the other simulated nodes compare the inode alone
/// and the token: every one refuses, exit 2 naming ranks of other nodes,
/// and nothing is written into the intruder's directory.
#[test]
fn ranks_on_other_nodes_refuse_a_directory_renamed_into_place() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let target = dir.path().join("t");
    std::fs::create_dir(&target).unwrap();
    let hook = dir.path().join("go");
    let waiting = dir.path().join("go.waiting");
    let x = format!("IOSCALE_TEST_PEER_PAUSE={}", hook.display());
    let child = nodes_command(&["-x", &x], &["run", "--op", "write", "--size", "1m", "-q"])
        .arg(&target)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !waiting.exists() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(120),
            "no rank reached the hook"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let root = target.join("ioscale.d");
    let moved = target.join("moved");
    std::fs::rename(&root, &moved).unwrap();
    std::fs::create_dir(&root).unwrap();
    std::fs::copy(moved.join(".ioscale-marker"), root.join(".ioscale-marker")).unwrap();
    std::fs::write(&hook, b"").unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(2), "{text}");
    for r in [1, 2, 7] {
        assert!(
            text.contains(&format!("rank {r}: ")),
            "rank {r} refuses: {text}"
        );
    }
    assert!(text.contains("ioscale-sim-node3"), "names the host: {text}");
    let names: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, [".ioscale-marker"], "{text}");
}
