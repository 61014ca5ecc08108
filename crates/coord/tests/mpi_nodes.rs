//! The MPI coordinator over four simulated nodes (`scripts/mpi-nodes`:
//! one Open MPI daemon per node name, each in its own UTS namespace, ranks
//! of different nodes talking over TCP). Needs Open MPI and root (for
//! `unshare --uts`); run with `cargo test -p ioscale-coord --features mpi`.
#![cfg(feature = "mpi")]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/mpi-nodes")
}

struct Out {
    ok: bool,
    stdout: String,
    all: String,
}

/// Runs coord-probe on 4 nodes × 2 ranks with a coordination timeout.
fn probe(timeout_s: &str, args: &[&str]) -> Out {
    let out = Command::new(script())
        .args(["run", "4", "2", "-x", "IOSCALE_COORD_TIMEOUT", "--"])
        .arg(env!("CARGO_BIN_EXE_coord-probe"))
        .args(args)
        .env("IOSCALE_COORD_TIMEOUT", timeout_s)
        .output()
        .expect("running scripts/mpi-nodes (needs mpirun and unshare)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let all = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    Out {
        ok: out.status.success(),
        stdout,
        all,
    }
}

/// `key value` pairs of a probe line.
fn fields(line: &str) -> BTreeMap<String, String> {
    let w: Vec<&str> = line.split_whitespace().collect();
    w.chunks(2)
        .filter(|c| c.len() == 2)
        .map(|c| (c[0].to_string(), c[1].to_string()))
        .collect()
}

#[test]
fn four_nodes_see_their_names_and_the_collectives_agree() {
    let o = probe(
        "60",
        &[
            "--phases",
            "3",
            "--work-ms",
            "30",
            "--abort-phase",
            "2",
            "--rows",
        ],
    );
    assert!(o.ok, "{}", o.all);
    let hosts: Vec<&str> = o
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("hosts "))
        .expect("rank 0 prints the hosts")
        .split(',')
        .collect();
    assert_eq!(hosts.len(), 8);
    for (r, h) in hosts.iter().enumerate() {
        // Open MPI fills nodes in order: ranks 2n and 2n+1 on node n.
        assert_eq!(*h, format!("ioscale-sim-node{}", r / 2), "{hosts:?}");
    }
    for phase in 1..=3u64 {
        let agree: Vec<BTreeMap<String, String>> = o
            .stdout
            .lines()
            .filter_map(|l| l.strip_prefix("agree "))
            .map(fields)
            .filter(|f| f["phase"] == phase.to_string())
            .collect();
        assert_eq!(agree.len(), 8, "every rank ends phase {phase}: {}", o.all);
        for f in &agree {
            // The designated rank's first finish is the earliest of all.
            assert_eq!(f["first"], (1000 + phase).to_string(), "{f:?}");
            assert_eq!(f["abort"], if phase == 2 { "1" } else { "0" }, "{f:?}");
            // Rank r raises flag r % 8: all eight bits on every rank.
            assert_eq!(f["flags"], "255", "{f:?}");
        }
        let root = o
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("phase {phase} ")))
            .map(fields)
            .expect("rank 0 reports the phase");
        assert_eq!(root["merged_ok"], "1", "node-merged counters add up");
        assert_eq!(root["rows_ok"], "1", "per-rank rows arrive by rank");
        // Per rank: at most 3 tree messages per signal kind, plus a
        // length and a payload per gather (merged and rows).
        let p2p: u64 = root["p2p_max"].parse().unwrap();
        assert!(p2p <= 10, "{p2p} messages on one rank in phase {phase}");
        assert_eq!(root["coll_max"], "2", "barrier and the phase-end reduction");
    }
}

#[test]
fn a_stopped_rank_is_named_with_its_node() {
    let o = probe(
        "2",
        &["--phases", "3", "--stall-rank", "5", "--stall-phase", "2"],
    );
    assert!(!o.ok, "{}", o.all);
    assert!(
        o.all
            .contains("rank 5 (ioscale-sim-node2) did not reach the end of phase 2"),
        "{}",
        o.all
    );
    assert!(!o.stdout.contains("phase 2 ranks"), "{}", o.all);
}

#[test]
fn a_slow_rank_that_answers_is_waited_for() {
    let o = probe(
        "1",
        &["--phases", "2", "--slow-rank", "3", "--slow-ms", "3000"],
    );
    assert!(o.ok, "{}", o.all);
    assert_eq!(
        o.stdout.lines().filter(|l| l.starts_with("agree ")).count(),
        16
    );
}

#[test]
fn a_slow_rank_0_still_settles_the_tally() {
    // Rank 0 works on while the others' waits run out: it answers their
    // reports from its in-phase polling.
    let o = probe(
        "1",
        &["--phases", "2", "--slow-rank", "0", "--slow-ms", "3000"],
    );
    assert!(o.ok, "{}", o.all);
    assert_eq!(
        o.stdout.lines().filter(|l| l.starts_with("agree ")).count(),
        16
    );
}

#[test]
fn a_killed_rank_stops_the_others() {
    let o = probe(
        "5",
        &["--phases", "3", "--kill-rank", "5", "--kill-phase", "2"],
    );
    assert!(!o.ok, "{}", o.all);
    // Open MPI's daemons see the death first and name the rank and node.
    assert!(
        o.all.contains("rank 5") && o.all.contains("ioscale-sim-node2"),
        "{}",
        o.all
    );
    assert!(!o.stdout.contains("phase 2 ranks"), "{}", o.all);
}
