//! The native engines that make fio's synchronous calls (`--engine lseek`,
//! `pvsync`, `pvsync2`): each moves the right bytes to the right offsets
//! (the data pattern depends on the offset, so a read from a wrong
//! position fails verification) and its data files see only its calls,
//! traced with strace on a real file system.

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use common::*;

/// The calls on files named `file.*` under the trace's directory, by name.
fn data_calls(trace: &str) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for l in trace.lines() {
        let rest = l.split_once(' ').map_or(l, |(_, r)| r).trim_start();
        let Some((call, args)) = rest.split_once('(') else {
            continue;
        };
        if args.contains("/file.") {
            *m.entry(call.to_string()).or_insert(0) += 1;
        }
    }
    m
}

#[test]
fn each_styled_engine_moves_verified_data_with_its_own_calls() {
    let have = Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(have, "needs strace");
    let cases: [(&str, &[&str]); 3] = [
        ("lseek", &["lseek", "read", "write"]),
        ("pvsync", &["preadv", "pwritev"]),
        ("pvsync2", &["preadv2", "pwritev2"]),
    ];
    for (engine, own) in cases {
        let t = scratch();
        let j = t.path().join("r.json");
        let tr = t.path().join("trace");
        let data = t.path().join("d");
        std::fs::create_dir(&data).unwrap();
        let out = Command::new("strace")
            .args(["-f", "-qq", "-y", "-s", "0", "-o", s(&tr), "-e"])
            .arg("trace=lseek,read,write,pread64,pwrite64,preadv,pwritev,preadv2,pwritev2")
            .arg(ioscale_path())
            .args(["run", "--op", "write,randread,randwrite,read", "--verify"])
            .args(["--xfer", "4k", "--size", "256k", "--threads", "2"])
            .args(["--engine", engine, "--json", s(&j), "-q", s(&data)])
            .output()
            .unwrap();
        assert_no_panic(&out);
        assert_code(&out, 0);
        let v = json(&j);
        let ph = phases(&v);
        for (p, op) in ph.iter().zip(["write", "randread", "randwrite", "read"]) {
            check_phase(p, op, 2, 512 * 1024, 4096);
            if op.ends_with("read") {
                check_verified(p, 512 * 1024);
            }
        }
        let calls = data_calls(&std::fs::read_to_string(&tr).unwrap());
        for c in own {
            assert!(
                calls.get(*c).is_some_and(|&n| n > 0),
                "{engine}: no {c}: {calls:?}"
            );
        }
        for c in calls.keys() {
            assert!(
                own.contains(&c.as_str()),
                "{engine}: {c} on a data file: {calls:?}"
            );
        }
        // 4 phases × 2 workers × 64 requests, each one call.
        let moved: usize = calls
            .iter()
            .filter(|(k, _)| *k != "lseek")
            .map(|(_, n)| n)
            .sum();
        assert_eq!(moved, 4 * 2 * 64, "{engine}: {calls:?}");
        if engine == "lseek" {
            // Sequential phases need none (each file is opened at 0); the
            // random ones one per request that does not follow the last.
            let seeks = calls["lseek"];
            assert!(
                (2 * 64..=2 * 2 * 64).contains(&seeks),
                "lseek: {seeks} for 256 random requests"
            );
        }
    }
}
