//! The ioscale binary on 4 simulated nodes × 2 ranks (`scripts/mpi-nodes`:
//! one Open MPI daemon per node name in its own UTS namespace, ranks of
//! different nodes over TCP), as a black box: the IOR header's nodes,
//! tasks and clients per node, and the JSON record's per-node totals.
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
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mpi-nodes");
    let out = Command::new("timeout")
        .arg("300")
        .arg(script)
        .args(["run", "4", "2", "--"])
        .arg(env!("CARGO_BIN_EXE_ioscale"))
        .args(args)
        .output()
        .expect("running scripts/mpi-nodes");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
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
        }
    }
}
