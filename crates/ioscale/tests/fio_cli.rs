//! `ioscale fio`: every job file in tests/fio/ is run by the real fio
//! (Debian's package) and by `ioscale fio`, on tmpfs and on ext4 (the
//! repository's disk, where O_DIRECT works). Both must create the same
//! files (names and sizes) and do the same number of I/Os and bytes per job
//! (the sum of reads and writes for a random mix, whose split is random);
//! ioscale's JSON must use real fio's keys, types and units.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

fn corpus() -> Vec<PathBuf> {
    strace::fio_corpus()
}

fn have_fio() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Runs a job file with `DIR` set to `dir`; returns the JSON.
fn run_job(real: bool, job: &Path, dir: &Path) -> Value {
    let mut c = if real {
        Command::new("fio")
    } else {
        let mut c = Command::new(ioscale_path());
        c.arg("fio");
        c
    };
    let out = c
        .arg("--output-format=json")
        .arg(job)
        .env("DIR", dir)
        .current_dir(dir)
        .output()
        .unwrap();
    let who = if real { "fio" } else { "ioscale fio" };
    assert!(
        out.status.success(),
        "{who} {}: {}\n{}",
        job.display(),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // fio may print notes before the JSON document.
    let at = text.find('{').unwrap_or(0);
    serde_json::from_str(&text[at..])
        .unwrap_or_else(|e| panic!("{who} {}: not JSON ({e}): {text}", job.display()))
}

fn files(dir: &Path) -> BTreeMap<String, u64> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        // fio saves its verify state beside the job (verify_state_save);
        // ioscale keeps no such file.
        .filter(|e| !e.file_name().to_string_lossy().ends_with("-verify.state"))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect()
}

fn u(v: &Value, path: &[&str]) -> u64 {
    let mut x = v;
    for p in path {
        x = &x[*p];
    }
    x.as_u64()
        .unwrap_or_else(|| panic!("{path:?} is not a count: {x}"))
}

/// Keys real fio prints that ioscale leaves out because it does not measure
/// them (docs/compat.md, fio: "What is measured, and what is left out").
const NOT_MEASURED: &[&str] = &[
    "sync",
    "iodepth_level",
    "iodepth_submit",
    "iodepth_complete",
    "short_ios",
    "drop_ios",
    "aggr_ios",
    "aggr_merges",
    "aggr_sectors",
    "aggr_ticks",
    "aggr_in_queue",
    "aggr_util",
];

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every key of ours is in fio's with the same type; every key of fio's
/// is in ours unless ioscale does not measure it. Option maps hold what
/// was written, so only their presence is compared.
fn same_keys(ours: &Value, real: &Value, at: &str, job: &Path) {
    match (ours, real) {
        (Value::Object(o), Value::Object(r)) => {
            for (k, v) in o {
                let here = format!("{at}.{k}");
                let Some(rv) = r.get(k) else {
                    panic!(
                        "{}: ioscale prints {here}, which fio does not",
                        job.display()
                    )
                };
                if k == "job options" || k == "global options" {
                    continue;
                }
                same_keys(v, rv, &here, job);
            }
            for k in r.keys() {
                let excused = NOT_MEASURED.contains(&k.as_str());
                if !o.contains_key(k) && !excused {
                    panic!("{}: ioscale leaves out {at}.{k}", job.display());
                }
            }
        }
        (Value::Array(o), Value::Array(r)) => {
            if let Some(r0) = r.first() {
                for (i, v) in o.iter().enumerate() {
                    same_keys(v, r.get(i).unwrap_or(r0), &format!("{at}[]"), job);
                }
            }
        }
        _ => {
            // fio prints whole-number floats such as 0.000000 as floats.
            let (a, b) = (kind(ours), kind(real));
            assert!(
                a == b || (a == "float" && b == "int" && at.ends_with("util")),
                "{}: {at} is {a} in ioscale's JSON, {b} in fio's",
                job.display()
            );
        }
    }
}

/// The units of a direction: bw in KiB/s, io_kbytes in KiB, runtime in ms,
/// latencies in ns and ordered.
fn check_units(d: &Value, what: &str, pcts: usize) {
    let io = u(d, &["io_bytes"]);
    assert_eq!(u(d, &["io_kbytes"]), io / 1024, "{what}");
    let bwb = u(d, &["bw_bytes"]);
    assert_eq!(u(d, &["bw"]), bwb / 1024, "{what}: bw is KiB/s");
    let rt = u(d, &["runtime"]);
    if rt >= 20 && io > 0 {
        let est = io as f64 / (rt as f64 / 1000.0);
        let r = est / bwb as f64;
        assert!(
            (0.9..1.1).contains(&r),
            "{what}: bw_bytes {bwb} vs io/runtime {est}"
        );
    }
    if let Some(c) = d.get("clat_ns").filter(|c| c["N"].as_u64() > Some(0)) {
        let (lo, hi) = (u(c, &["min"]), u(c, &["max"]));
        let mean = c["mean"].as_f64().unwrap();
        assert!(lo as f64 <= mean && mean <= hi as f64, "{what}: {c}");
        let sd = c["stddev"].as_f64().unwrap();
        assert!(sd >= 0.0 && sd <= (hi - lo) as f64, "{what}: {c}");
        // fio's percentile list, in order, within min and max.
        let p = c["percentile"].as_object().unwrap();
        assert_eq!(p.len(), pcts, "{what}: {p:?}");
        let mut by_q: Vec<(f64, u64)> = p
            .iter()
            .map(|(k, v)| (k.parse().unwrap(), v.as_u64().unwrap()))
            .collect();
        by_q.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut last = 0;
        for (q, v) in by_q {
            assert!(v >= last && v >= lo && v <= hi, "{what}: {q} in {p:?}");
            last = v;
        }
    }
}

fn nondeterministic(job: &Path) -> bool {
    std::fs::read_to_string(job).unwrap().contains("time_based")
}

/// Sizes drawn per request (`bsrange=`, `bssplit=`): the bytes are fio's,
/// the number of requests is the draw's (ioscale's generator is its own;
/// tests/fio_bs_sizes.rs compares the shares).
fn drawn(job: &Path) -> bool {
    let t = std::fs::read_to_string(job).unwrap();
    t.contains("bsrange=") || t.contains("bssplit=")
}

fn mixed(j: &Value) -> bool {
    j["job options"]["rw"]
        .as_str()
        .or(j["job options"]["readwrite"].as_str())
        .is_some_and(|r| r.contains("rw") || r == "readwrite")
}

fn compare(job: &Path, base: &Path, fs: &str) {
    let a = base.join(format!("fio-{fs}"));
    let b = base.join(format!("ioscale-{fs}"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let real = run_job(true, job, &a);
    let ours = run_job(false, job, &b);
    let name = format!("{} on {fs}", job.display());
    assert_eq!(files(&a), files(&b), "{name}: files created");
    same_keys(&ours, &real, "", job);
    let (rj, oj) = (
        real["jobs"].as_array().unwrap(),
        ours["jobs"].as_array().unwrap(),
    );
    assert_eq!(rj.len(), oj.len(), "{name}: job entries");
    // The options as written, with the directory each tool was given.
    let opts = |v: &Value, dir: &Path| {
        let mut m = v.as_object().cloned().unwrap_or_default();
        for (_, x) in m.iter_mut() {
            if x.as_str() == dir.to_str() {
                *x = Value::String("DIR".into());
            }
        }
        m
    };
    assert_eq!(
        opts(&real["global options"], &a),
        opts(&ours["global options"], &b),
        "{name}: global options"
    );
    for (r, o) in rj.iter().zip(oj) {
        assert_eq!(
            opts(&r["job options"], &a),
            opts(&o["job options"], &b),
            "{name}: job options"
        );
        assert_eq!(r["jobname"], o["jobname"], "{name}");
        assert_eq!(r["groupid"], o["groupid"], "{name}");
        let what = format!("{name}: job {}", r["jobname"]);
        // fio's 17 percentiles, or percentile_list's.
        let pcts = std::fs::read_to_string(job)
            .unwrap()
            .lines()
            .find_map(|l| l.trim().strip_prefix("percentile_list="))
            .map_or(17, |v| v.split(':').count());
        for d in ["read", "write"] {
            check_units(&o[d], &format!("{what} {d}"), pcts);
        }
        let total = |j: &Value, k: &str| u(j, &["read", k]) + u(j, &["write", k]);
        if nondeterministic(job) {
            assert!(total(o, "total_ios") > 0, "{what}");
            continue;
        }
        assert_eq!(total(r, "io_bytes"), total(o, "io_bytes"), "{what}: bytes");
        if drawn(job) {
            continue;
        }
        assert_eq!(total(r, "total_ios"), total(o, "total_ios"), "{what}: I/Os");
        // Each direction's latencies are its own requests', a mix's too.
        for d in ["read", "write"] {
            if let Some(n) = o[d]["clat_ns"]["N"].as_u64() {
                assert_eq!(n, u(o, &[d, "total_ios"]), "{what}: {d} clat N");
            }
        }
        if !mixed(r) {
            for d in ["read", "write"] {
                assert_eq!(
                    u(r, &[d, "total_ios"]),
                    u(o, &[d, "total_ios"]),
                    "{what}: {d} I/Os"
                );
            }
        }
    }
}

#[test]
fn corpus_matches_real_fio_on_tmpfs_and_ext4() {
    assert!(
        have_fio(),
        "this test compares with the real fio: install Debian's `fio` package"
    );
    let jobs = corpus();
    assert!(
        jobs.len() >= 40,
        "the corpus holds {} job files",
        jobs.len()
    );
    let mem = tmpfs("size=256m");
    let disk = scratch();
    for job in &jobs {
        let direct = std::fs::read_to_string(job)
            .unwrap()
            .lines()
            .any(|l| l.trim() == "direct=1" || l.trim() == "buffered=0");
        let name = job.file_stem().unwrap().to_string_lossy().into_owned();
        let d = disk.path().join(&name);
        compare(job, &d, "ext4");
        if let Some(m) = &mem {
            if !direct {
                compare(job, &m.path().join(&name), "tmpfs");
            }
        }
    }
}

fn fio(args: &[&str], dir: &Path) -> std::process::Output {
    let out = Command::new(ioscale_path())
        .arg("fio")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert_no_panic(&out);
    out
}

#[test]
fn normal_output_has_fios_lines() {
    let dir = scratch();
    let d = format!("--directory={}", s(dir.path()));
    let out = fio(
        &[
            "--name=seq",
            "--rw=write",
            "--bs=4k",
            "--size=1m",
            &d,
            "--name=rand",
            "--stonewall",
            "--rw=randread",
            "--bs=4k",
            "--size=1m",
            &d,
        ],
        dir.path(),
    );
    assert_code(&out, 0);
    let t = stdout(&out);
    for want in [
        "seq: (g=0): rw=write, bs=(R) 4096B-4096B",
        "rand: (g=1): rw=randread",
        "seq: (groupid=0, jobs=1): err= 0: pid=",
        "  write: IOPS=",
        "(1024KiB/",
        "    clat (",
        "     lat (",
        "    clat percentiles (",
        "50.00th=[",
        "  cpu          : usr=",
        "     issued rwts: total=0,256,0,0",
        "     issued rwts: total=256,0,0,0",
        "Run status group 0 (all jobs):",
        "Run status group 1 (all jobs):",
        "  WRITE: bw=",
        "   READ: bw=",
        "io=1024KiB (1049kB)",
    ] {
        assert!(t.contains(want), "missing {want:?} in:\n{t}");
    }
    // The disk's counters, where a block device is under the target.
    if ["ext4", "xfs", "btrfs"].contains(&fs_type(dir.path()).as_str()) {
        assert!(t.contains("Disk stats (read/write):\n  "), "{t}");
    }
    assert_eq!(
        names(dir.path()),
        vec!["rand.0.0".to_string(), "seq.0.0".to_string()]
    );
}

#[test]
fn refusals_exit_2_naming_the_option() {
    let dir = scratch();
    for (args, want) in [
        (
            &["--name=a", "--size=1m", "--bssplit=4k/50"][..],
            "bssplit=4k/50",
        ),
        (
            &["--name=a", "--size=1m", "--ioengine=posixaio"][..],
            "libaio",
        ),
        (
            &["--name=a", "--size=1m", "--frobnicate=1"][..],
            "--frobnicate",
        ),
        (
            &["--name=a", "--size=1m", "--ramp_time=2", "--time_based"][..],
            "runtime=",
        ),
        (&["--name=a", "--size=1m", "--nrfiles=3"][..], "nrfiles"),
        (
            &["--name=a", "--size=1m", "--ioengine=libaio", "--iodepth=0"][..],
            "iodepth=0",
        ),
        (&["--name=a", "--rw=write"][..], "size="),
        (&["--name=a", "--size=1m", "--rw=read:4k"][..], "rw=read:4k"),
        (
            &["--name=a", "--size=1m", "--percentile_list=50:101"][..],
            "percentile_list",
        ),
        (
            &[
                "--name=a",
                "--size=1m",
                "--rw=write",
                "--name=b",
                "--rw=read",
                "--size=1m",
                "--loops=2",
            ][..],
            "loops differs",
        ),
    ] {
        let out = fio(args, dir.path());
        assert_code(&out, 2);
        let e = stderr(&out);
        assert!(e.contains(want), "{args:?}: {e}");
    }
    assert!(names(dir.path()).is_empty(), "a refused job created files");
    // A job file names the file and line of the option it refuses.
    let jf = dir.path().join("bad.fio");
    std::fs::write(&jf, "[global]\nsize=1m\n[j]\nrw=read\nrate=10m\n").unwrap();
    let out = fio(&[s(&jf)], dir.path());
    assert_code(&out, 2);
    let e = stderr(&out);
    assert!(e.contains("rate") && e.contains("bad.fio:5"), "{e}");
}

#[test]
fn output_file_json_plus_and_ioscale_record() {
    let dir = scratch();
    let d = format!("--directory={}", s(dir.path()));
    let o = dir.path().join("out.json");
    let rec = dir.path().join("rec.json");
    let out = fio(
        &[
            "--name=j",
            "--rw=read",
            "--size=256k",
            &d,
            "--unlink=1",
            "--output-format=json+",
            &format!("--output={}", s(&o)),
            &format!("--ioscale-json={}", s(&rec)),
        ],
        dir.path(),
    );
    assert_code(&out, 0);
    assert_eq!(stdout(&out), "");
    let v = json(&o);
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 256 * 1024);
    // json+: fio's latency bins, one count per request.
    let bins = v["jobs"][0]["read"]["clat_ns"]["bins"].as_object().unwrap();
    let n: u64 = bins.values().map(|c| c.as_u64().unwrap()).sum();
    assert_eq!(n, 64);
    let r = json(&rec);
    assert_eq!(r["phases"][0]["op"], "read");
    assert_eq!(r["phases"][0]["bytes"], 256 * 1024);
    // unlink=1 removed the file this run laid out; the outputs stay.
    let mut left = names(dir.path());
    left.sort();
    assert_eq!(left, vec!["out.json".to_string(), "rec.json".to_string()]);
    // An output in a directory that does not exist is refused before the run.
    let out = fio(
        &[
            "--name=j",
            "--rw=write",
            "--size=64k",
            &d,
            "--ioscale-json=/nonexistent-dir/rec.json",
        ],
        dir.path(),
    );
    assert_code(&out, 2);
    assert!(stderr(&out).contains("--ioscale-json"), "{}", stderr(&out));
    assert!(!dir.path().join("j.0.0").exists());
}

#[test]
fn a_symlink_named_fio_is_the_fio_front_end() {
    let dir = scratch();
    let link = dir.path().join("fio");
    std::os::unix::fs::symlink(ioscale_path(), &link).unwrap();
    let d = format!("--directory={}", s(dir.path()));
    let out = Command::new(&link)
        .args([
            "--name=viasym",
            "--rw=write",
            "--size=64k",
            &d,
            "--output-format=json",
        ])
        .output()
        .unwrap();
    assert_code(&out, 0);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 64 * 1024);
    assert_eq!(
        std::fs::metadata(dir.path().join("viasym.0.0"))
            .unwrap()
            .len(),
        64 * 1024
    );
}

#[test]
fn sweep_runs_a_fio_job_over_numjobs() {
    let dir = scratch();
    let jf = dir.path().join("seed004.fio");
    std::fs::write(
        &jf,
        format!(
            "[global]\ndirectory={}\nbs=64k\nsize=512k\n\n[seqread]\nrw=read\n",
            s(dir.path())
        ),
    )
    .unwrap();
    let rec = dir.path().join("sweep.json");
    let out = run(&[
        "sweep",
        "--threads",
        "1,2,3",
        "--reps",
        "4",
        "--trim",
        "1",
        "--json",
        s(&rec),
        "--",
        "fio",
        s(&jf),
    ]);
    assert_code(&out, 0);
    let v = json(&rec);
    let pts = v["points"].as_array().unwrap();
    let threads: Vec<u64> = pts.iter().map(|p| p["threads"].as_u64().unwrap()).collect();
    assert_eq!(threads, vec![1, 2, 3]);
    for p in pts {
        assert_eq!(p["bytes_per_thread"], 512 * 1024);
        assert_eq!(p["file_count"], p["threads"]);
    }
    // fio's names: one file per clone, laid out for the read job.
    for c in 0..3 {
        let f = dir.path().join(format!("seqread.{c}.0"));
        assert_eq!(std::fs::metadata(&f).unwrap().len(), 512 * 1024, "{f:?}");
    }
    let out = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--xfer",
        "4k",
        "--",
        "fio",
        s(&jf),
    ]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("numjobs"), "{}", stderr(&out));
}

/// Runs the real fio (`real`) or `ioscale fio` with `args` in `dir`.
fn either(real: bool, args: &[&str], dir: &Path) -> std::process::Output {
    let out = if real {
        Command::new("fio")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap()
    } else {
        fio(args, dir)
    };
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        if real { "fio" } else { "ioscale fio" },
        stderr(&out)
    );
    out
}

/// Each entry's block of the normal output (from its `(groupid=` line).
fn entry_blocks(text: &str) -> Vec<String> {
    let mut blocks: Vec<String> = Vec::new();
    for l in text.lines() {
        if l.contains(": (groupid=") {
            blocks.push(String::new());
        } else if l.starts_with("Run status group") {
            break;
        }
        if let Some(b) = blocks.last_mut() {
            b.push_str(l);
            b.push('\n');
        }
    }
    blocks
}

#[test]
fn clones_without_group_reporting_have_fios_lines_per_job() {
    assert!(have_fio(), "install Debian's `fio` package");
    let dir = scratch();
    for real in [true, false] {
        let d = dir.path().join(if real { "fio" } else { "ours" });
        std::fs::create_dir_all(&d).unwrap();
        let args = [
            "--name=j",
            "--rw=write",
            "--bs=4k",
            "--size=1m",
            "--numjobs=2",
            "--thread",
        ];
        let t = stdout(&either(real, &args, &d));
        // A write job's files are laid out (allocated) before the timed
        // writes, one line per file.
        assert_eq!(
            t.matches("j: Laying out IO file (1 file / 1MiB)").count(),
            2,
            "real={real}: {t}"
        );
        let blocks = entry_blocks(&t);
        assert_eq!(blocks.len(), 2, "{t}");
        for b in &blocks {
            for want in [
                "  write: IOPS=",
                "    clat (",
                "     lat (",
                ", stdev=",
                "    clat percentiles (",
                " 1.00th=[",
                "99.99th=[",
                "  lat (",
                "  cpu          : usr=",
                ", ctx=",
                "     issued rwts: total=0,256,0,0",
            ] {
                assert!(b.contains(want), "real={real}: {want:?} missing in\n{b}");
            }
        }
    }
}

#[test]
fn terse_has_fios_fields_in_fios_order() {
    assert!(have_fio(), "install Debian's `fio` package");
    let mem = tmpfs("size=64m");
    let base = scratch();
    let root = mem.as_ref().map(|m| m.path()).unwrap_or(base.path());
    let mut lines = Vec::new();
    for real in [true, false] {
        let d = root.join(if real { "fio" } else { "ours" });
        std::fs::create_dir_all(&d).unwrap();
        let args = [
            "--name=t",
            "--rw=read",
            "--bs=4k",
            "--size=1m",
            "--output-format=terse",
        ];
        let t = stdout(&either(real, &args, &d));
        let line = t
            .lines()
            .find(|l| l.starts_with("3;"))
            .unwrap_or_else(|| panic!("real={real}: no terse line in {t}"))
            .to_string();
        lines.push(line);
    }
    let f: Vec<Vec<&str>> = lines.iter().map(|l| l.split(';').collect()).collect();
    let (real, ours) = (&f[0], &f[1]);
    // 5 + read and write (4 + slat 4 + clat 4 + 20 percentiles + lat 4 +
    // bw 5) + cpu 5 + IO depths 7 + 10 µs and 12 ms buckets = 121, then
    // 9 per disk.
    assert!(real.len() >= 121 && ours.len() >= 121, "{lines:?}");
    assert_eq!(real.len(), ours.len(), "{lines:?}");
    for i in [0, 2, 3, 4, 5] {
        assert_eq!(real[i], ours[i], "field {i}: {lines:?}");
    }
    // Read KiB, then the I/O count behind the iops: same bytes.
    assert_eq!(ours[5], "1024");
    assert!(ours[7].parse::<u64>().unwrap() > 0);
    for i in 0..121 {
        let shape = |x: &str| {
            if x.contains("%=") {
                "pct"
            } else if x.ends_with('%') {
                "percent"
            } else if x.contains('.') {
                "float"
            } else if x.parse::<u64>().is_ok() {
                "int"
            } else {
                "text"
            }
        };
        // ioscale leaves a field it does not measure empty.
        if !ours[i].is_empty() {
            assert_eq!(
                shape(real[i]),
                shape(ours[i]),
                "field {i}: fio {:?}, ioscale {:?}",
                real[i],
                ours[i]
            );
        }
    }
    // The percentile fields sit where fio has them and name the same
    // percentiles; cpu, IO depth and latency buckets are filled.
    for i in 17..37 {
        assert_eq!(
            real[i].split('=').next(),
            ours[i].split('=').next(),
            "field {i}"
        );
    }
    for i in [87, 88] {
        assert!(ours[i].ends_with('%'), "cpu field {i}: {lines:?}");
    }
    let us: f64 = ours[99..109]
        .iter()
        .chain(&ours[109..121])
        .map(|x| x.trim_end_matches('%').parse::<f64>().unwrap())
        .sum();
    assert!((99.0..=101.0).contains(&us), "latency buckets add to {us}");
}

/// The log files in `dir`: name → lines.
fn logs(dir: &Path) -> BTreeMap<String, Vec<String>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .map(|n| {
            let t = std::fs::read_to_string(dir.join(&n)).unwrap();
            (n, t.lines().map(String::from).collect())
        })
        .collect()
}

#[test]
fn interval_logs_are_named_and_laid_out_as_fios() {
    assert!(have_fio(), "install Debian's `fio` package");
    let mem = tmpfs("size=64m");
    let base = scratch();
    let root = mem.as_ref().map(|m| m.path()).unwrap_or(base.path());
    let mut got = Vec::new();
    for real in [true, false] {
        let d = root.join(if real { "fio" } else { "ours" });
        std::fs::create_dir_all(&d).unwrap();
        let args = [
            "--name=lg",
            "--rw=write",
            "--bs=4k",
            "--size=1m",
            "--numjobs=2",
            "--thread",
            "--time_based",
            "--runtime=1",
            "--write_bw_log=lg",
            "--write_lat_log=lg",
            "--write_iops_log=lg",
            "--log_avg_msec=100",
        ];
        either(real, &args, &d);
        got.push(logs(&d));
    }
    let names = |m: &BTreeMap<String, Vec<String>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&got[0]), names(&got[1]));
    assert_eq!(got[1].len(), 10, "{:?}", names(&got[1]));
    for (name, lines) in &got[1] {
        if name.contains("_slat.") {
            // fio times no submission for a sync engine: empty.
            assert!(lines.is_empty(), "{name}");
            continue;
        }
        assert!(lines.len() >= 5, "{name}: {lines:?}");
        let mut last = 0;
        for l in lines {
            let f: Vec<u64> = l.split(", ").map(|x| x.parse().unwrap()).collect();
            assert_eq!(f.len(), 5, "{name}: {l}");
            assert!(f[0] >= last && f[1] > 0, "{name}: {l}");
            assert_eq!(&f[2..], &[1, 0, 0], "{name}: {l}");
            last = f[0];
        }
        // The intervals are log_avg_msec long.
        let first: u64 = lines[0].split(", ").next().unwrap().parse().unwrap();
        assert!(first >= 100, "{name}: {lines:?}");
    }
}

#[test]
fn ramp_time_is_left_out_and_percentile_list_is_taken() {
    let dir = scratch();
    let d = format!("--directory={}", s(dir.path()));
    let t0 = std::time::Instant::now();
    let out = fio(
        &[
            "--name=r",
            "--rw=read",
            "--bs=4k",
            "--size=256k",
            &d,
            "--time_based",
            "--runtime=1",
            "--ramp_time=1",
            "--percentile_list=10:99.5",
            "--output-format=json",
        ],
        dir.path(),
    );
    let wall = t0.elapsed();
    assert_code(&out, 0);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["jobs"][0]["read"];
    // The ramp ran (a second of it before the measured second) …
    assert!(wall.as_millis() >= 2000, "{wall:?}");
    // … but only the measured passes count: the wall time holds the
    // ramp's second beside them, however long a busy machine took.
    let runtime = r["runtime"].as_u64().unwrap();
    assert!(runtime + 1000 <= wall.as_millis() as u64, "{r} in {wall:?}");
    assert!(r["total_ios"].as_u64().unwrap() > 0);
    let p: Vec<&String> = r["clat_ns"]["percentile"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(p, ["10.000000", "99.500000"]);
}

#[test]
fn layout_lines_are_fios_per_clone() {
    assert!(have_fio(), "install Debian's `fio` package");
    let dir = scratch();
    let mut got = Vec::new();
    for real in [true, false] {
        let d = dir.path().join(if real { "fio" } else { "ours" });
        std::fs::create_dir_all(&d).unwrap();
        let args = [
            "--name=nf",
            "--rw=read",
            "--bs=4k",
            "--size=2m",
            "--nrfiles=4",
            "--numjobs=2",
            "--thread",
        ];
        let t = stdout(&either(real, &args, &d));
        let lines: Vec<String> = t
            .lines()
            .filter(|l| l.contains("Laying out"))
            .map(String::from)
            .collect();
        got.push(lines);
    }
    assert_eq!(got[0], got[1]);
    assert_eq!(
        got[1],
        vec!["nf: Laying out IO files (4 files / total 2MiB)"; 2]
    );
}

/// (N, mean) of a JSON latency object.
fn n_mean(l: &Value) -> (u64, f64) {
    (l["N"].as_u64().unwrap(), l["mean"].as_f64().unwrap())
}

#[test]
fn io_uring_times_submission_as_fio_does() {
    let dir = scratch();
    let d = format!("--directory={}", s(dir.path()));
    let job = [
        "--name=u",
        "--rw=randwrite",
        "--bs=4k",
        "--size=1m",
        "--ioengine=io_uring",
        "--iodepth=8",
        d.as_str(),
    ];
    let mut args = job.to_vec();
    args.push("--output-format=json");
    let out = fio(&args, dir.path());
    assert_code(&out, 0);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let w = &v["jobs"][0]["write"];
    let n = u(w, &["total_ios"]);
    assert_eq!(n, 256);
    let (sn, smean) = n_mean(&w["slat_ns"]);
    let (cn, cmean) = n_mean(&w["clat_ns"]);
    let (ln, lmean) = n_mean(&w["lat_ns"]);
    // Every request has all three, and lat is slat + clat request by
    // request, so the means add up (to the ns each is rounded to).
    assert_eq!((sn, cn, ln), (n, n, n), "{w}");
    assert!(smean > 0.0 && cmean > 0.0, "{w}");
    assert!((smean + cmean - lmean).abs() <= 1.0, "{w}");
    assert!(
        u(w, &["slat_ns", "min"]) <= u(w, &["slat_ns", "max"]),
        "{w}"
    );
    assert!(u(w, &["slat_ns", "max"]) <= u(w, &["lat_ns", "max"]), "{w}");
    // The normal output has the slat line, and terse its four fields
    // (write slat: fields 50..54, after 5 + read's 41 + write's 4).
    let mut args = job.to_vec();
    args.push("--output-format=normal,terse");
    let out = fio(&args, dir.path());
    assert_code(&out, 0);
    let t = stdout(&out);
    assert!(t.contains("\n    slat ("), "{t}");
    let line = t.lines().find(|l| l.starts_with("3;")).unwrap();
    let f: Vec<&str> = line.split(';').collect();
    let slat: Vec<f64> = f[50..54].iter().map(|x| x.parse().unwrap()).collect();
    assert!(slat[0] <= slat[2] && slat[2] <= slat[1], "{line}");
    // The sync engine hands a request over in its wait: fio's zeros.
    let out = fio(
        &[
            "--name=p",
            "--rw=write",
            "--bs=4k",
            "--size=64k",
            &d,
            "--output-format=json",
        ],
        dir.path(),
    );
    assert_code(&out, 0);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(u(&v["jobs"][0]["write"], &["slat_ns", "N"]), 0);
}

#[test]
fn a_mix_is_reported_and_logged_by_direction() {
    let mem = tmpfs("size=64m");
    let base = scratch();
    let root = mem.as_ref().map(|m| m.path()).unwrap_or(base.path());
    for (mix, want_dirs) in [("0", vec![1]), ("100", vec![0]), ("50", vec![0, 1])] {
        let d = root.join(format!("mix{mix}"));
        std::fs::create_dir_all(&d).unwrap();
        let out = fio(
            &[
                "--name=m",
                "--rw=randrw",
                &format!("--rwmixread={mix}"),
                "--bs=4k",
                "--size=1m",
                "--numjobs=2",
                "--time_based",
                "--runtime=1",
                "--write_bw_log=m",
                "--write_iops_log=m",
                "--write_lat_log=m",
                "--log_avg_msec=100",
                "--output-format=json",
            ],
            &d,
        );
        assert_code(&out, 0);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        // One entry per clone (no group_reporting), each split.
        let jobs = v["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), 2, "rwmixread={mix}");
        for j in jobs {
            for (k, name) in ["read", "write"].iter().enumerate() {
                let x = &j[*name];
                let n = u(x, &["total_ios"]);
                assert_eq!(n > 0, want_dirs.contains(&k), "rwmixread={mix} {name}: {x}");
                if n > 0 {
                    assert_eq!(u(x, &["clat_ns", "N"]), n, "{x}");
                    assert_eq!(u(x, &["io_bytes"]), n * 4096, "{x}");
                    assert!(u(x, &["bw_samples"]) > 0, "{x}");
                }
            }
        }
        // The logs carry each line's direction, and only the directions
        // that did I/O.
        let got = logs(&d);
        // bw, iops, lat, clat and (empty, sync engine) slat per clone.
        assert_eq!(got.len(), 10, "{:?}", got.keys());
        for (name, lines) in &got {
            if name.contains("_slat.") {
                continue;
            }
            let dirs: std::collections::BTreeSet<usize> = lines
                .iter()
                .map(|l| l.split(", ").nth(2).unwrap().parse().unwrap())
                .collect();
            assert_eq!(
                dirs.into_iter().collect::<Vec<_>>(),
                want_dirs,
                "rwmixread={mix} {name}: {lines:?}"
            );
        }
    }
}

#[test]
fn logs_without_log_avg_msec_have_a_line_per_io_as_fios() {
    assert!(have_fio(), "install Debian's `fio` package");
    let mem = tmpfs("size=64m");
    let base = scratch();
    let root = mem.as_ref().map(|m| m.path()).unwrap_or(base.path());
    for engine in ["psync", "io_uring"] {
        let mut got = Vec::new();
        for real in [true, false] {
            let d = root.join(format!("{engine}-{}", if real { "fio" } else { "ours" }));
            std::fs::create_dir_all(&d).unwrap();
            let args = [
                "--name=pl",
                "--rw=randrw",
                "--bs=4k",
                "--size=256k",
                &format!("--ioengine={engine}"),
                "--iodepth=4",
                "--write_bw_log=pl",
                "--write_lat_log=pl",
                "--write_iops_log=pl",
            ];
            either(real, &args, &d);
            got.push(logs(&d));
        }
        let names = |m: &BTreeMap<String, Vec<String>>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(names(&got[0]), names(&got[1]), "{engine}");
        // 256 KiB in 4 KiB requests: 64 lines per log, as fio's (none in a
        // sync engine's slat log).
        for (name, lines) in &got[1] {
            assert_eq!(lines.len(), got[0][name].len(), "{engine} {name}");
        }
        let fields = |name: &str| -> Vec<Vec<u64>> {
            got[1][name]
                .iter()
                .map(|l| l.split(", ").map(|x| x.parse().unwrap()).collect())
                .collect()
        };
        let (lat, clat, bw, iops) = (
            fields("pl_lat.1.log"),
            fields("pl_clat.1.log"),
            fields("pl_bw.1.log"),
            fields("pl_iops.1.log"),
        );
        assert_eq!(lat.len(), 64, "{engine}");
        let mut dirs = [0; 2];
        for i in 0..64 {
            for f in [&lat[i], &clat[i], &bw[i], &iops[i]] {
                assert_eq!(f.len(), 5, "{engine}: {f:?}");
                assert_eq!((f[3], f[4]), (4096, 0), "{engine}: {f:?}");
                assert_eq!(f[2], lat[i][2], "{engine}: one request per line");
            }
            dirs[lat[i][2] as usize] += 1;
            assert_eq!(iops[i][1], 1);
            // The same request on the same line of each log: clat is part
            // of lat, and bw is its bytes over its clat.
            assert!(
                clat[i][1] <= lat[i][1],
                "{engine}: {:?} {:?}",
                clat[i],
                lat[i]
            );
            let want = (4096u64 * 1_000_000).checked_div(clat[i][1]).unwrap_or(0);
            assert_eq!(bw[i][1], want, "{engine}");
        }
        assert_eq!(dirs[0] + dirs[1], 64);
    }
}

#[test]
fn a_sized_jobs_ramp_is_left_out_of_its_figures_and_logs() {
    // Every request takes at least 5 ms on this file system, so 64 of them
    // one at a time outlast a 100 ms ramp whatever the machine's load.
    let Some(fs) = common::fuse::TestFs::mount(&["--delay", "5ms"]) else {
        return;
    };
    let d = format!("--directory={}", s(fs.path()));
    let logs_dir = scratch();
    let out = fio(
        &[
            "--name=rp",
            "--rw=write",
            "--bs=4k",
            "--size=256k",
            &d,
            "--ramp_time=100ms",
            "--write_lat_log=rp",
            "--output-format=json",
        ],
        logs_dir.path(),
    );
    assert_code(&out, 0);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let w = &v["jobs"][0]["write"];
    let n = u(w, &["total_ios"]);
    // What completed after the ramp, all of it in the figures and logs.
    assert!(n > 0 && n <= 64, "{w}");
    assert_eq!(u(w, &["io_bytes"]), n * 4096, "{w}");
    assert_eq!(u(w, &["clat_ns", "N"]), n, "{w}");
    let lat = &logs(logs_dir.path())["rp_lat.1.log"];
    assert_eq!(lat.len() as u64, n, "{lat:?}");
    for l in lat {
        let t: u64 = l.split(", ").next().unwrap().parse().unwrap();
        assert!(t >= 100, "a line from the ramp: {l}");
    }
    // The job wrote its whole size, the ramp's requests too.
    let f = fs.path().join("rp.0.0");
    assert_eq!(std::fs::metadata(f).unwrap().len(), 256 << 10);
}

/// `ioscale fio ARGS` under a 2 GiB address-space limit, killed after
/// 60 s: a job file read for ever fails the test instead of hanging it
/// or waking the OOM killer.
fn fio_bounded(args: &[&str], dir: &Path) -> std::process::Output {
    let bin = ioscale_path();
    let mut child = Command::new("prlimit")
        .arg("--as=2147483648")
        .arg(&bin)
        .arg("fio")
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("ioscale fio {args:?} still running after 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_no_panic(&out);
    out
}

#[test]
fn a_job_file_that_is_not_a_regular_file_is_refused_at_once() {
    // Before, `ioscale fio /dev/zero` read until memory ran out (6.7 GB
    // in 5 s) and a FIFO job file with no writer blocked for ever; so did
    // the same names given to `include`.
    let dir = scratch();
    let d = dir.path();
    let fifo = d.join("jobs.fifo");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let inc = d.join("inc.fio");
    std::fs::write(&inc, "[j]\nrw=write\nsize=64k\ninclude /dev/zero\n").unwrap();
    let inc_fifo = d.join("inc-fifo.fio");
    std::fs::write(&inc_fifo, format!("include {}\n[j]\nsize=64k\n", s(&fifo))).unwrap();
    for (job, names, why) in [
        ("/dev/zero", "/dev/zero", "character device"),
        (s(&fifo), s(&fifo), "FIFO"),
        (s(&inc), "/dev/zero", "character device"),
        (s(&inc_fifo), s(&fifo), "FIFO"),
    ] {
        let out = fio_bounded(&[job], d);
        assert_code(&out, 2);
        let e = stderr(&out);
        assert!(e.contains(names) && e.contains(why), "{job}: {e}");
    }
    // Names only (reading the FIFO would wait for a writer).
    let mut left: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["inc-fifo.fio", "inc.fio", "jobs.fifo"]);
}
