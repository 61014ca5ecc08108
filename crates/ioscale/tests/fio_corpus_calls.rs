//! Every job file of the fio corpus (tests/fio/) that runs on the
//! synchronous engine for a fixed amount of data, run by fio 3.33 and by
//! `ioscale fio` on the same file system under `strace -f -y`: the calls
//! on the job's own files, counted by kind — each read and write by its
//! size, each `posix_fadvise` by its advice, fsync and fdatasync — are
//! equal (issue 25: "system-call counts per kind equal on a small size").
//! A mixed job's transfers are compared by size, reads and writes
//! together (the split is each tool's random draw).
//! The layout of a file (from its `fallocate` to the `posix_fadvise` that
//! ends it) is compared by its bytes, syncs and advice: fio writes it in
//! `bs`-sized write(2) calls, ioscale in pwrite64(2) calls of up to 1 MiB
//! (docs/compat.md).
//! fio's synchronous engines differ only in their calls: `psync` makes
//! pread64/pwrite64, `sync` lseek then read/write (the lseek left out
//! where the file position is already the offset), `pvsync`
//! preadv/pwritev and `pvsync2` preadv2/pwritev2 with one iovec of the
//! request's size; each is counted by its call and size, lseeks by
//! number. In a random-order job the lseeks fio leaves out are the draws
//! that happen to follow the previous request, which each tool draws in
//! its own order: there both make an lseek before at least half their
//! transfers and never more lseeks than transfers.
//! Left out, with the reason: time-based jobs (their counts are the
//! clock's), io_uring and libaio jobs (their transfers are ring entries and
//! iocbs, which tests/fio_libaio.rs and crates/engine/tests/fio_blocks.rs
//! count), and drawn sizes (each tool's random draw; tests/fio_bs_sizes.rs
//! compares their bytes and shares).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn corpus() -> Vec<PathBuf> {
    strace::fio_corpus()
}

/// Why a job file's calls are not compared one by one, if they are not.
fn left_out(text: &str) -> Option<&'static str> {
    let has = |k: &str| text.lines().any(|l| l.trim().starts_with(k));
    if has("time_based") {
        Some("time-based")
    } else if text.contains("ioengine=io_uring") || text.contains("ioengine=libaio") {
        Some("queued engine")
    } else if has("bsrange") || has("bssplit") {
        Some("drawn sizes")
    } else {
        None
    }
}

/// A file's layout as the trace shows it: from its `fallocate` (or
/// `ftruncate`) to the first `posix_fadvise` after it, the bytes written,
/// the syncs and that advice.
#[derive(Default)]
struct Layout {
    bytes: usize,
    syncs: usize,
    advice: Option<String>,
}

/// The calls on the files in `dir` (by their names as `-y` shows them),
/// counted by kind: `pread64 4096`, `fadvise64 POSIX_FADV_DONTNEED`, …;
/// a file's layout is counted apart (`layout bytes`, `layout fsync`,
/// `layout fadvise64 …`), the last one per file only: fio lays a shared
/// file out again for each clone's region, ioscale once to the furthest.
fn calls(trace: &str, dir: &Path, random: &[String]) -> BTreeMap<String, usize> {
    let prefix = format!("<{}/", dir.display());
    let mut m = BTreeMap::new();
    let mut layouts: BTreeMap<String, Layout> = BTreeMap::new();
    for l in whole_lines(trace) {
        // "call(FD</dir/name>, …) = R"
        let l = l.as_str();
        let Some((call, rest)) = l.split_once('(') else {
            continue;
        };
        if !rest.contains(&prefix) {
            continue;
        }
        let Some(file) = rest.split('<').nth(1).and_then(|p| p.split('>').next()) else {
            continue;
        };
        // ioscale's O_DIRECT probe file, anything deleted, and fio's
        // verify state (docs/compat.md) are not job files.
        if file.contains(" (deleted)") || file.contains('#') || file.ends_with("-verify.state") {
            continue;
        }
        let args: Vec<&str> = rest
            .rsplit_once(')')
            .map_or(rest, |(a, _)| a)
            .split(", ")
            .collect();
        let n = args.get(2).copied().unwrap_or("?");
        let advice = args.last().copied().unwrap_or("?");
        if matches!(call, "fallocate" | "ftruncate") {
            layouts.insert(file.to_string(), Layout::default());
            continue;
        }
        if let Some(lay) = layouts.get_mut(file).filter(|l| l.advice.is_none()) {
            match call {
                "pwrite64" | "write" => lay.bytes += n.parse::<usize>().unwrap_or(0),
                "fsync" | "fdatasync" => lay.syncs += 1,
                "fadvise64" => lay.advice = Some(advice.to_string()),
                _ => {}
            }
            continue;
        }
        let in_random = random
            .iter()
            .any(|j| file.rsplit('/').next() == Some(j.as_str()));
        if in_random && matches!(call, "read" | "write") {
            *m.entry("read/write (random order)".into()).or_insert(0) += 1;
        }
        let key = match call {
            "pread64" | "pwrite64" | "read" | "write" => format!("{call} {n}"),
            "preadv" | "pwritev" | "preadv2" | "pwritev2" => format!("{call} {}", iov_lens(rest)),
            "fadvise64" => format!("{call} {advice}"),
            "lseek" if in_random => "lseek (random order)".into(),
            _ => call.to_string(),
        };
        *m.entry(key).or_insert(0) += 1;
    }
    for lay in layouts.into_values() {
        *m.entry("layout bytes".into()).or_insert(0) += lay.bytes;
        *m.entry("layout fsync".into()).or_insert(0) += lay.syncs;
        let a = lay.advice.unwrap_or_else(|| "none".into());
        *m.entry(format!("layout fadvise64 {a}")).or_insert(0) += 1;
    }
    m
}

/// A vector call's iovecs as `count x len+len…` (fio's engines pass one).
fn iov_lens(args: &str) -> String {
    let lens: Vec<&str> = args
        .split("iov_len=")
        .skip(1)
        .map(|p| p.split(|c: char| !c.is_ascii_digit()).next().unwrap_or("?"))
        .collect();
    format!("{}x{}", lens.len(), lens.join("+"))
}

/// The files of the random-order jobs of a job file (`rw=randread`, …,
/// in the job's section or `[global]`), by the name both tools give the
/// first file of the first clone: `JOB.0.0`.
fn random_files(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut section, mut global_random) = (String::new(), false);
    let mut random: Option<bool> = None;
    let close = |section: &str, random: Option<bool>, global: bool, out: &mut Vec<String>| {
        if !section.is_empty() && section != "global" && random.unwrap_or(global) {
            out.push(format!("{section}.0.0"));
        }
    };
    for l in text.lines().map(str::trim) {
        if let Some(name) = l.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            close(&section, random, global_random, &mut out);
            (section, random) = (name.to_string(), None);
        } else if let Some(v) = l.strip_prefix("rw=").or(l.strip_prefix("readwrite=")) {
            let r = v.trim().starts_with("rand");
            if section == "global" {
                global_random = r;
            } else {
                random = Some(r);
            }
        }
    }
    close(&section, random, global_random, &mut out);
    out
}

/// Takes a random-order job's lseek count out of `c` (each tool's draw,
/// see the module's note) and checks what holds whatever the draw.
fn random_lseeks(name: &str, who: &str, c: &mut BTreeMap<String, usize>) {
    let seeks = c.remove("lseek (random order)").unwrap_or(0);
    let moved = c.get("read/write (random order)").copied().unwrap_or(0);
    assert!(
        seeks <= moved && seeks * 2 >= moved,
        "{name} ({who}): {seeks} lseeks for {moved} read/write calls of random-order jobs"
    );
}

/// The trace's calls, one line each without the PID: a call that
/// another thread's call interrupted (`… <unfinished ...>`, later
/// `PID <... call resumed>…`) joined into one line.
fn whole_lines(trace: &str) -> Vec<String> {
    let mut open: BTreeMap<&str, String> = BTreeMap::new();
    let mut out = Vec::new();
    for l in trace.lines() {
        let (pid, rest) = l.split_once(' ').unwrap_or(("", l));
        let rest = rest.trim_start();
        if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            open.insert(pid, head.to_string());
        } else if let Some(tail) = rest.strip_prefix("<... ") {
            let tail = tail.split_once(" resumed>").map_or(tail, |(_, t)| t);
            if let Some(head) = open.remove(pid) {
                out.push(format!("{head}{tail}"));
            }
        } else {
            out.push(rest.to_string());
        }
    }
    out
}

/// A job of reads and writes mixed (`rw=rw`, `readwrite`, `randrw`).
fn mixed(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim().replace(' ', "");
        let v = l
            .strip_prefix("rw=")
            .or(l.strip_prefix("readwrite="))
            .unwrap_or("");
        matches!(v, "rw" | "randrw" | "readwrite")
    })
}

#[test]
fn the_corpus_jobs_make_fios_calls_on_their_files() {
    let have = |t: &str| {
        Command::new(t)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    assert!(have("fio") && have("strace"), "needs fio and strace");
    let base = scratch();
    // -s 0: no data in the trace (a buffer's bytes may hold ", ").
    let flags = [
        "-y",
        "-s",
        "0",
        "-e",
        "trace=fadvise64,fsync,fdatasync,pread64,pwrite64,read,write,fallocate,ftruncate,\
         lseek,preadv,pwritev,preadv2,pwritev2",
    ];
    let mut compared = 0;
    let mut skipped = Vec::new();
    for job in corpus() {
        let text = std::fs::read_to_string(&job).unwrap();
        let name = job.file_stem().unwrap().to_string_lossy().into_owned();
        if let Some(why) = left_out(&text) {
            skipped.push(format!("{name} ({why})"));
            continue;
        }
        let mut seen = Vec::new();
        for real in [true, false] {
            let d = base
                .path()
                .join(format!("{name}-{}", if real { "fio" } else { "ioscale" }));
            std::fs::create_dir(&d).unwrap();
            let args = ["--output=/dev/null", job.to_str().unwrap()];
            let (t, _) = strace::fio_traced_env(real, &flags, &args, &d, &[("DIR", &d)]);
            let mut c = calls(&t, &d, &random_files(&text));
            random_lseeks(&name, if real { "fio" } else { "ioscale" }, &mut c);
            if mixed(&text) {
                // A mix's split between reads and writes is each tool's
                // random draw: the transfers of each size are compared.
                c = c.into_iter().fold(BTreeMap::new(), |mut m, (k, n)| {
                    let k = k
                        .strip_prefix("pread64 ")
                        .or(k.strip_prefix("pwrite64 "))
                        .map_or(k.clone(), |size| format!("transfer {size}"));
                    *m.entry(k).or_insert(0) += n;
                    m
                });
            }
            seen.push(c);
        }
        assert!(!seen[0].is_empty(), "{name}: no calls on the job's files");
        assert_eq!(
            seen[0], seen[1],
            "{name}: fio's calls (left), ioscale's (right)"
        );
        compared += 1;
    }
    println!("compared {compared}; left out: {}", skipped.join(", "));
    assert!(compared >= 25, "only {compared} job files compared");
}
