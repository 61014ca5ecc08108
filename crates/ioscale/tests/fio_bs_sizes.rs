//! fio's drawn block sizes (`bsrange=MIN-MAX`, `bssplit=SIZE/PCT:…`)
//! against fio 3.33: the same job on tmpfs under strace, the data
//! transfers on the job's file counted by size. Both move the same bytes
//! each way; a `bssplit` job's requests fall in each size as often as
//! fio's (within a few percent of all requests); a `bsrange` job's are all
//! multiples of the smallest size within the range; and the job line says
//! the range as fio's does.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::*;

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs fio (`real`) or `ioscale fio` with `args` in `dir` under strace;
/// returns the trace and the standard output.
fn traced(real: bool, args: &[&str], dir: &Path) -> (String, String) {
    let flags = ["-y", "-e", "trace=pread64,pwrite64"];
    let (t, out) = common::strace::fio_traced(real, &flags, args, dir);
    (t, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Requests on the job's file `d/x` by (write, size), at most `max` bytes
/// each (a layout's larger writes left out).
fn sizes(trace: &str, max: u64) -> BTreeMap<(bool, u64), u64> {
    let mut m = BTreeMap::new();
    for l in trace.lines().filter(|l| l.contains("/d/x>")) {
        let write = l.contains("pwrite64(");
        // `…, LEN, OFFSET) = DONE`
        let Some((call, done)) = l.rsplit_once(") = ") else {
            continue;
        };
        let mut tail = call.rsplitn(3, ", ");
        let (_off, len) = (tail.next(), tail.next());
        let len: u64 = len.and_then(|x| x.trim().parse().ok()).unwrap();
        assert_eq!(done.trim().parse::<u64>().ok(), Some(len), "short: {l}");
        if len <= max {
            *m.entry((write, len)).or_insert(0) += 1;
        }
    }
    m
}

fn bytes(m: &BTreeMap<(bool, u64), u64>) -> [u64; 2] {
    let mut b = [0; 2];
    for (&(w, s), &n) in m {
        b[usize::from(w)] += s * n;
    }
    b
}

/// rw, size option, size, smallest, largest, and the bssplit shares to
/// check (none for a random walk, whose requests are cut where they meet
/// a block already done).
type Job<'a> = (&'a str, &'a str, &'a str, u64, u64, &'a [(u64, f64)]);

#[test]
fn drawn_sizes_are_fios() {
    if !have("fio") || !have("strace") {
        eprintln!("SKIPPED: fio or strace not installed");
        return;
    }
    let Some(m) = tmpfs("size=200m") else { return };
    let dir = m.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let split: &[(u64, f64)] = &[(4096, 0.3), (16384, 0.5), (65536, 0.2)];
    let jobs: &[Job] = &[
        (
            "write",
            "--bssplit=4k/30:16k/50:64k/20",
            "64m",
            4096,
            65536,
            split,
        ),
        (
            "read",
            "--bssplit=4k/30:16k/50:64k/20",
            "64m",
            4096,
            65536,
            split,
        ),
        (
            "randwrite",
            "--bssplit=4k/30:16k/50:64k/20",
            "16m",
            4096,
            65536,
            &[],
        ),
        ("read", "--bsrange=4k-12k", "1000k", 4096, 12288, &[]),
        ("randread", "--bsrange=8k-64k", "8m", 8192, 65536, &[]),
    ];
    for &(rw, opt, size, min, max, split) in jobs {
        let rw = format!("--rw={rw}");
        let size_opt = format!("--size={size}");
        let args = ["--name=x", "--filename=x", &rw, opt, &size_opt];
        let (ft, fout) = traced(true, &args, &dir);
        std::fs::remove_file(dir.join("x")).unwrap();
        let (ot, oout) = traced(false, &args, &dir);
        std::fs::remove_file(dir.join("x")).unwrap();
        let (want, got) = (sizes(&ft, max), sizes(&ot, max));
        let case = format!("{rw} {opt}");
        assert_eq!(bytes(&got), bytes(&want), "{case}: bytes (read, write)");
        assert!(bytes(&got).iter().sum::<u64>() > 0, "{case}");
        for &(_, s) in got.keys() {
            assert!(
                s >= min && s <= max && s % min == 0,
                "{case}: a request of {s}"
            );
        }
        let all = |m: &BTreeMap<(bool, u64), u64>| m.values().sum::<u64>() as f64;
        for &(s, pct) in split {
            let share = |m: &BTreeMap<(bool, u64), u64>| {
                m.iter().filter(|e| e.0 .1 == s).map(|e| *e.1).sum::<u64>() as f64 / all(m)
            };
            let (g, w) = (share(&got), share(&want));
            assert!(
                (g - w).abs() < 0.03 && (g - pct).abs() < 0.03,
                "{case}: {s}-byte requests are {g:.3} of ioscale's, {w:.3} of fio's"
            );
        }
        // The job line, as fio writes it.
        let first = |o: &str| o.lines().next().unwrap_or("").to_string();
        assert_eq!(first(&oout), first(&fout), "{case}");
    }
}

#[test]
fn bad_size_lists_exit_2_naming_the_option() {
    let d = scratch();
    for (args, want) in [
        (&["--bssplit=4k/50:8k/60"][..], "bssplit="),
        (&["--bssplit=6k/50:4k/50"][..], "multiple"),
        (&["--bsrange=64k-4k"][..], "bsrange="),
        (&["--bsrange=4k-64k", "--rw=randrw"][..], "mixed"),
        (&["--bssplit=4k/50:16k/50", "--verify=md5"][..], "verify"),
        (&["--blockalign=8k"][..], "blockalign"),
    ] {
        let out = ioscale()
            .env("IOSCALE_HISTORY", "off")
            .current_dir(d.path())
            .args(["fio", "--name=x", "--size=1m"])
            .args(args)
            .output()
            .unwrap();
        assert_code(&out, 2);
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
        assert_empty(d.path());
    }
}
