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

/// Requests on the job's file `d/x` as (write, length, offset), at most
/// `max` bytes each (a layout's larger writes left out).
fn requests(trace: &str, max: u64) -> Vec<(bool, u64, u64)> {
    let mut v = Vec::new();
    for l in trace.lines().filter(|l| l.contains("/d/x>")) {
        let Some((call, _)) = l.rsplit_once(") = ") else {
            continue;
        };
        let mut tail = call.rsplitn(3, ", ");
        let off: u64 = tail.next().and_then(|x| x.trim().parse().ok()).unwrap();
        let len: u64 = tail.next().and_then(|x| x.trim().parse().ok()).unwrap();
        if len <= max {
            v.push((l.contains("pwrite64("), len, off));
        }
    }
    v
}

/// One direction's requests in a sequential mixed job: each from the
/// start of the file, one after the other.
fn in_order(reqs: &[(bool, u64, u64)], write: bool, case: &str) {
    let mut at = 0;
    for &(_, len, off) in reqs.iter().filter(|r| r.0 == write) {
        assert_eq!(off, at, "{case}: write={write}");
        at += len;
    }
}

/// Sizes per direction (`bs=R,W`, `bsrange=`/`bssplit=` with a list each
/// way) and drawn sizes in rw/randrw jobs, beside fio 3.33: reads and
/// writes each of their own sizes; where fio's direction draw decides
/// nothing (rwmix 100 or 0, read or write jobs) the requests per size
/// equal fio's; where it does, the share of reads is fio's within 0.1
/// and the bytes end where fio's do (a sequential job: at the size, past
/// it by less than one request; a random job with one list: the size
/// exactly; a random job with sizes per direction: short of the size, as
/// fio's random map ends it, even with writes only, whose numbers it
/// scales by 64 KiB in a map of 4 KiB blocks; when is a random event,
/// 3.8 MiB (ioscale) and 13.9 MiB (fio) of 16 MiB here).
#[test]
fn sizes_per_direction_are_fios() {
    if !have("fio") || !have("strace") {
        eprintln!("SKIPPED: fio or strace not installed");
        return;
    }
    let Some(m) = tmpfs("size=200m") else { return };
    let dir = m.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let per_dir = "--bs=4k,64k";
    let one_list = "--bssplit=4k/50:64k/50";
    // (args, size, exact, sequential, (read sizes, write sizes))
    type Case<'a> = (&'a [&'a str], u64, bool, bool, [(u64, u64); 2]);
    let (k4, k64) = ((4096, 4096), (65536, 65536));
    let range = (4096, 65536);
    let cases: &[Case] = &[
        (&["--rw=read", per_dir], 4 << 20, true, true, [k4, k4]),
        (&["--rw=write", per_dir], 4 << 20, true, true, [k64, k64]),
        (
            &["--rw=rw", "--rwmixread=100", per_dir],
            4 << 20,
            true,
            true,
            [k4, k64],
        ),
        (
            &["--rw=randrw", "--rwmixwrite=100", per_dir],
            4 << 20,
            false,
            false,
            [k4, k64],
        ),
        (&["--rw=rw", per_dir], 16 << 20, false, true, [k4, k64]),
        (
            &["--rw=rw", "--bs=64k,4k"],
            16 << 20,
            false,
            true,
            [k64, k4],
        ),
        (&["--rw=randrw", per_dir], 16 << 20, false, false, [k4, k64]),
        (
            &["--rw=rw", one_list],
            16 << 20,
            false,
            true,
            [range, range],
        ),
        (
            &["--rw=randrw", one_list],
            16 << 20,
            false,
            false,
            [range, range],
        ),
        (
            &["--rw=randrw", "--bsrange=4k-16k"],
            16 << 20,
            false,
            false,
            [(4096, 16384); 2],
        ),
        (
            &["--rw=rw", "--bsrange=4k-8k,16k-64k"],
            16 << 20,
            false,
            true,
            [(4096, 8192), (16384, 65536)],
        ),
    ];
    for &(opts, size, exact, seq, dirs) in cases {
        let size_opt = format!("--size={size}");
        let mut args = vec!["--name=x", "--filename=x", &size_opt];
        args.extend_from_slice(opts);
        let (ft, fout) = traced(true, &args, &dir);
        std::fs::remove_file(dir.join("x")).unwrap();
        let (ot, oout) = traced(false, &args, &dir);
        std::fs::remove_file(dir.join("x")).unwrap();
        let case = opts.join(" ");
        let (want, got) = (requests(&ft, 65536), requests(&ot, 65536));
        let first = |o: &str| o.lines().next().unwrap_or("").to_string();
        assert_eq!(first(&oout), first(&fout), "{case}: the job line");
        for (who, reqs) in [("fio", &want), ("ioscale", &got)] {
            for &(w, len, off) in reqs.iter() {
                let (lo, hi) = dirs[usize::from(w)];
                assert!(
                    (lo..=hi).contains(&len) && len % lo == 0 && off % lo == 0,
                    "{case}: {who}'s {} of {len} at {off}",
                    if w { "write" } else { "read" }
                );
            }
            if seq {
                in_order(reqs, false, &case);
                in_order(reqs, true, &case);
            }
        }
        if exact {
            assert_eq!(
                sizes(&ot, 65536),
                sizes(&ft, 65536),
                "{case}: requests by (write, size)"
            );
            continue;
        }
        let total = |r: &[(bool, u64, u64)]| r.iter().map(|x| x.1).sum::<u64>();
        let reads =
            |r: &[(bool, u64, u64)]| r.iter().filter(|x| !x.0).count() as f64 / r.len() as f64;
        let (g, w) = (reads(&got), reads(&want));
        assert!(
            (g - w).abs() < 0.1,
            "{case}: reads are {g:.3} of ioscale's requests, {w:.3} of fio's"
        );
        let (tg, tw) = (total(&got), total(&want));
        if seq {
            for t in [tg, tw] {
                assert!(
                    t >= size && t < size + 65536,
                    "{case}: {t} bytes (fio {tw})"
                );
            }
        } else if dirs[0] == dirs[1] {
            assert_eq!((tg, tw), (size, size), "{case}: bytes, ioscale then fio");
        } else {
            // fio's map ends the job short of its size when a block
            // number falls past the file (see docs/compat.md), a random
            // event: both stop short; where is the draws' affair.
            assert!(tg < size && tw < size, "{case}: {tg} bytes (fio {tw})");
        }
    }
}

/// `blockalign=` (where it is fio's default or fio ignores it) and
/// `bs_unaligned=1` with one size, beside fio 3.33: every offset a
/// multiple of the direction's alignment in both traces, the requests per
/// size equal, and a sequential job's offsets (which fio does not align)
/// fio's one for one.
#[test]
fn blockalign_is_fios() {
    if !have("fio") || !have("strace") {
        eprintln!("SKIPPED: fio or strace not installed");
        return;
    }
    let Some(m) = tmpfs("size=100m") else { return };
    let dir = m.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    // (args, alignment of reads and writes, sequential)
    let cases: &[(&[&str], [u64; 2], bool)] = &[
        (
            &["--rw=randread", "--bs=16k", "--blockalign=16k"],
            [16384; 2],
            false,
        ),
        (
            &["--rw=randwrite", "--bs=8k", "--ba=8k", "--bs_unaligned=1"],
            [8192; 2],
            false,
        ),
        (
            &[
                "--rw=randrw",
                "--rwmixwrite=100",
                "--bs=4k,64k",
                "--ba=4k,64k",
            ],
            [4096, 65536],
            false,
        ),
        (
            &["--rw=read", "--bs=4k", "--blockalign=8k"],
            [4096; 2],
            true,
        ),
        (
            &["--rw=write", "--bsrange=4k-16k", "--blockalign=64k"],
            [4096; 2],
            true,
        ),
    ];
    for &(opts, align, seq) in cases {
        let mut args = vec!["--name=x", "--filename=x", "--size=4m"];
        args.extend_from_slice(opts);
        let case = opts.join(" ");
        let (ft, _) = traced(true, &args, &dir);
        std::fs::remove_file(dir.join("x")).unwrap();
        let (ot, _) = traced(false, &args, &dir);
        std::fs::remove_file(dir.join("x")).unwrap();
        let (want, got) = (requests(&ft, 65536), requests(&ot, 65536));
        assert!(!got.is_empty(), "{case}");
        for (who, reqs) in [("fio", &want), ("ioscale", &got)] {
            for &(w, len, off) in reqs.iter() {
                let a = align[usize::from(w)];
                assert_eq!(off % a, 0, "{case}: {who}'s request of {len} at {off}");
            }
        }
        if seq {
            let offs = |r: &[(bool, u64, u64)]| r.iter().map(|x| (x.0, x.2)).collect::<Vec<_>>();
            if opts.iter().any(|o| o.starts_with("--bsrange")) {
                in_order(&got, true, &case);
            } else {
                assert_eq!(offs(&got), offs(&want), "{case}: offsets");
            }
        }
        if !opts
            .iter()
            .any(|o| o.starts_with("--bsrange") || o.contains("randrw"))
        {
            assert_eq!(
                sizes(&ot, 65536),
                sizes(&ft, 65536),
                "{case}: requests by size"
            );
        }
    }
}

#[test]
fn bad_size_lists_exit_2_naming_the_option() {
    let d = scratch();
    for (args, want) in [
        (&["--bssplit=4k/50:8k/60"][..], "bssplit="),
        (&["--bssplit=6k/50:4k/50"][..], "multiple"),
        (&["--bsrange=64k-4k"][..], "bsrange="),
        (&["--bs=4k,6k", "--rw=rw"][..], "multiples"),
        (&["--bs=4k,8k,16k,32k"][..], "three"),
        (&["--bs=4k,64k", "--rw=rw", "--verify=md5"][..], "verify"),
        (&["--bssplit=4k/50:16k/50", "--verify=md5"][..], "verify"),
        (&["--blockalign=8k", "--rw=randread"][..], "blockalign="),
        (&["--ba=4k,16k", "--rw=randrw"][..], "blockalign="),
        (
            &["--bsrange=4k-16k", "--bs_unaligned=1"][..],
            "bs_unaligned",
        ),
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
