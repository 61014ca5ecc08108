//! `ioscale fio` runs the jobs of a job file at the same time, as fio
//! does (all of them together unless `stonewall` orders them), even when
//! their shapes differ: a random reader beside a sequential writer of
//! another block size. Both tools run the same job file on tmpfs under
//! strace; the bytes per direction and job, the data transfers per kind
//! and size and the cache calls are equal, and each job has its entry in
//! the JSON. What the lockstep cannot carry is refused naming the option.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::Value;

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs fio (`real`) or `ioscale fio` on `job` in `dir` under `strace -f`;
/// returns the trace (one line per call, `-tt` times) and the JSON report.
fn traced(real: bool, job: &Path, dir: &Path) -> (String, Value) {
    let flags = [
        "-tt",
        "-e",
        "trace=fadvise64,fsync,fdatasync,pread64,pwrite64",
    ];
    // The report on standard output: ioscale syncs an --output file,
    // which would be counted as the job's.
    let args = [s(job), "--output-format=json"];
    let (t, out) = common::strace::fio_traced(real, &flags, &args, dir);
    // fio prints its notes (a depth capped at 1) before the report.
    let text = String::from_utf8_lossy(&out.stdout);
    let report = &text[text.find('{').unwrap_or(0)..];
    (
        t,
        serde_json::from_str(report).unwrap_or_else(|e| panic!("{e}: {text}")),
    )
}

/// The calls of a trace, one line each: a call another thread's call
/// interrupted (`… <unfinished ...>`, then `<... NAME resumed> …`) joined
/// back into one line.
fn calls(trace: &str) -> Vec<String> {
    let mut open: Vec<(String, String)> = Vec::new();
    let mut out = Vec::new();
    for l in trace.lines() {
        let pid = l.split_whitespace().next().unwrap_or("").to_string();
        if let Some(head) = l.strip_suffix("<unfinished ...>") {
            open.push((pid, head.to_string()));
        } else if let Some(i) = l.find(" resumed>") {
            let k = open.iter().position(|(p, _)| *p == pid).unwrap();
            let (_, head) = open.remove(k);
            out.push(format!("{head}{}", &l[i + " resumed>".len()..]));
        } else {
            out.push(l.to_string());
        }
    }
    out
}

/// Calls of a trace by kind: the cache calls, and the transfers of each
/// size each way.
fn counts(trace: &str, sizes: &[&str]) -> Vec<(String, usize)> {
    let lines = calls(trace);
    let count = |pat: &str, also: &str| {
        lines
            .iter()
            .filter(|l| l.contains(pat) && l.contains(also))
            .count()
    };
    let mut v = vec![
        ("DONTNEED".into(), count("fadvise64(", "DONTNEED")),
        ("SEQUENTIAL".into(), count("fadvise64(", "SEQUENTIAL")),
        ("RANDOM".into(), count("fadvise64(", "RANDOM")),
        ("fsync".into(), count("fsync(", "")),
        ("fdatasync".into(), count("fdatasync(", "")),
    ];
    for bs in sizes {
        let done = format!(", {bs}, ");
        v.push((format!("pread64 {bs}"), count("pread64(", &done)));
        v.push((format!("pwrite64 {bs}"), count("pwrite64(", &done)));
    }
    v
}

/// Each job's (name, group, read bytes, write bytes) in a fio JSON report.
fn entries(v: &Value) -> Vec<(String, u64, u64, u64)> {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["groupid"].as_u64().unwrap(),
                j["read"]["io_bytes"].as_u64().unwrap(),
                j["write"]["io_bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn clear(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
}

#[test]
fn a_reader_and_a_writer_of_other_shapes_run_together_as_fios() {
    if !have("fio") || !have("strace") {
        eprintln!("SKIPPED: fio or strace not installed");
        return;
    }
    let Some(m) = tmpfs("size=64m") else { return };
    let dir = m.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let cases = [
        // A reader and a writer, each its own shape.
        "[global]\nsize=1m\n[rd]\nrw=randread\nbs=4k\n[wr]\nrw=write\nbs=64k\n",
        // Clones, another depth and a sync mode, and group_reporting
        // merging the group's jobs into one entry.
        "[global]\nsize=512k\ngroup_reporting\n[rd]\nrw=read\nbs=4k\nnumjobs=2\n\
         [wr]\nrw=randwrite\nbs=64k\nfsync=2\niodepth=4\n",
        // A second group after a stonewall, of a third shape.
        "[rd]\nrw=randread\nbs=4k\nsize=256k\n[wr]\nrw=write\nbs=64k\nsize=1m\n\
         [rw]\nstonewall\nrw=randwrite\nbs=4k\nsize=256k\n",
    ];
    let job = m.path().join("two.fio");
    for text in cases {
        std::fs::write(&job, text).unwrap();
        let (t, want) = traced(true, &job, &dir);
        clear(&dir);
        let (u, got) = traced(false, &job, &dir);
        clear(&dir);
        assert_eq!(entries(&got), entries(&want), "{text}: ioscale's, fio's");
        let sizes = ["4096", "65536"];
        assert_eq!(
            counts(&u, &sizes),
            counts(&t, &sizes),
            "{text}: ioscale's, fio's"
        );
    }
}

#[test]
fn each_job_that_runs_together_ends_at_its_own_deadline() {
    let Some(m) = loop_ext4("256M") else { return };
    let d = m.path();
    let t = scratch();
    let rec = t.path().join("rec.json");
    let fio = |extra: &[&str]| {
        let out = ioscale()
            .args(["fio", "--output-format=json"])
            .arg(format!("--directory={}", s(d)))
            .arg(format!("--ioscale-json={}", s(&rec)))
            .args(["--name=rd", "--rw=read", "--bs=4k", "--size=1m"])
            .args(["--name=wr", "--rw=randwrite", "--bs=512", "--direct=1"])
            .args(extra)
            .env("IOSCALE_HISTORY", "off")
            .output()
            .unwrap();
        for n in names(d) {
            if n.ends_with(".0") {
                std::fs::remove_file(d.join(n)).unwrap();
            }
        }
        out
    };
    // A sized reader beside a writer of 512-byte direct requests with a
    // deadline: the reader moves its whole file, the writer stops at its
    // own deadline, long before its 128 MiB (a quarter million requests
    // through the loop device).
    let out = fio(&["--size=128m", "--runtime=1"]);
    assert_code(&out, 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let e = entries(&v);
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(e[0], ("rd".into(), 0, 1 << 20, 0));
    assert!(e[1].3 > 0 && e[1].3 < 128 << 20 && e[1].2 == 0, "{e:?}");
    // Each step's record says which one its deadline stopped.
    let limited: Vec<bool> = json(&rec)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["phases"][0]["time_limited"].as_bool().unwrap())
        .collect();
    assert_eq!(limited, [false, true]);
    // time_based on one job and not the other: passes the lockstep cannot
    // carry, refused naming the option before anything is made.
    let out = fio(&["--size=1m", "--runtime=1", "--time_based"]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("time_based"), "{}", stderr(&out));
    assert!(
        names(d).iter().all(|n| n == "lost+found"),
        "made {:?}",
        names(d)
    );
    // Two jobs of a group on one file: refused naming it, nothing made.
    let out = ioscale()
        .args(["fio", "--name=a", "--rw=write", "--size=1m", "--filename=f"])
        .args(["--name=b", "--rw=read", "--size=1m", "--filename=f"])
        .env("IOSCALE_HISTORY", "off")
        .current_dir(d)
        .output()
        .unwrap();
    assert_code(&out, 2);
    assert!(stderr(&out).contains("filename="), "{}", stderr(&out));
    assert!(
        names(d).iter().all(|n| n == "lost+found"),
        "made {:?}",
        names(d)
    );
}
