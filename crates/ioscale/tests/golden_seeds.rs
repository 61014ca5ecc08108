//! Every `ior` and `dd` command line of the seed documents, scaled down,
//! parses to the expected workload (golden `--print-spec` JSON) and runs
//! on a real file system (the repository's, ext4 here). Sizes shrink
//! (1m → 64k, 2048 segments → 128); `mpirun --npernode N` becomes `-N N`;
//! `seq 1 N | parallel dd … of=F-{}` becomes `ioscale dd --jobs N … of=F-{}`.
//! `UPDATE_GOLDEN=1` rewrites the golden files.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// Seed 000: IOR on EFS, N = 1..64 tasks, shared file, -F, -u -F -k, then reads.
fn seed000(out: &str) -> Vec<Vec<String>> {
    let mut cmds = Vec::new();
    let ns = [1u64, 2, 4, 8, 16, 32, 64];
    for extra in [
        "-w -i 1",
        "-w -i 1 -F",
        "-w -i 1 -u -F -k",
        "-r -i 1 -u -F -k",
    ] {
        for n in ns {
            let line = format!(
                "-N {n} --posix.odirect -t 64k -b 64k -s {} -g -v {extra} -D 0 -o {out}",
                128 / n
            );
            cmds.push(line.split_whitespace().map(String::from).collect());
        }
    }
    cmds
}

/// Seed 002: IOR on FSx for Lustre, 16 tasks, `=` syntax.
fn seed002(out: &str) -> Vec<Vec<String>> {
    vec![
        format!("-N 16 -w -r -o={out} -b=256k -a=POSIX -i=5 -F -z -t=64k -C")
            .split_whitespace()
            .map(String::from)
            .collect(),
    ]
}

/// Seed 001: dd on EBS and EFS: conv=fsync versus oflag=sync, 1M/16M blocks, 4 and 16 jobs.
fn seed001(dir: &str) -> Vec<Vec<String>> {
    let f = |fs: &str, i: usize| format!("of={dir}/{fs}-2G-dd-20200601192130.{i:03}");
    let mut cmds = Vec::new();
    let mut i = 0;
    for (bs, count, flag) in [
        ("64k", 32, "conv=fsync"),
        ("1M", 2, "conv=fsync"),
        ("64k", 32, "oflag=sync"),
        ("1M", 2, "oflag=sync"),
    ] {
        for fs in ["ebs", "efs"] {
            i += 1;
            cmds.push(vec![
                "if=/dev/zero".to_string(),
                f(fs, i),
                format!("bs={bs}"),
                format!("count={count}"),
                "status=progress".into(),
                flag.into(),
            ]);
        }
    }
    for (jobs, count) in [(4, 8), (16, 2)] {
        for fs in ["ebs", "efs"] {
            i += 1;
            cmds.push(vec![
                "--jobs".into(),
                jobs.to_string(),
                "if=/dev/zero".into(),
                format!("{}-{{}}", f(fs, i)),
                "bs=64k".into(),
                format!("count={count}"),
                "oflag=sync".into(),
            ]);
        }
    }
    cmds
}

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Compares with tests/golden/NAME; `UPDATE_GOLDEN=1` rewrites it.
pub fn check_golden(name: &str, got: &str) {
    let path = golden_path(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with UPDATE_GOLDEN=1", path.display()));
    assert!(
        want == got,
        "{} differs (UPDATE_GOLDEN=1 rewrites it)\n--- want\n{want}\n--- got\n{got}",
        path.display()
    );
}

/// `--print-spec` of every command line, as one JSON document.
fn specs(front: &str, cmds: &[Vec<String>]) -> String {
    let mut all = Vec::new();
    for c in cmds {
        let mut args = vec![front.to_string()];
        args.extend(c.iter().cloned());
        args.push("--print-spec".into());
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&a);
        assert_code(&out, 0);
        let spec: serde_json::Value = serde_json::from_slice(&out.stdout).expect("spec JSON");
        all.push(serde_json::json!({ "args": c.join(" "), "spec": spec }));
    }
    serde_json::to_string_pretty(&all).unwrap() + "\n"
}

#[test]
fn seed_specs_match_golden() {
    check_golden(
        "seed000_ior_specs.json",
        &specs("ior", &seed000("/efs/ior/ior.bin")),
    );
    check_golden(
        "seed002_ior_specs.json",
        &specs("ior", &seed002("/shared/test_dir")),
    );
    check_golden("seed001_dd_specs.json", &specs("dd", &seed001("/ebs/dd")));
}

fn run_all(front: &str, cmds: &[Vec<String>]) -> Vec<String> {
    cmds.iter()
        .map(|c| {
            let mut args = vec![front.to_string()];
            args.extend(c.iter().cloned());
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = run(&a);
            assert_code(&out, 0);
            stdout(&out)
        })
        .collect()
}

/// Replaces what changes from run to run (numbers, dates, paths, host)
/// so the layout itself can be compared.
pub fn normalise(text: &str, dir: &Path) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let mut out = String::new();
    for line in text.lines() {
        let mut l = line.replace(dir.to_str().unwrap(), "<DIR>");
        if !host.trim().is_empty() {
            l = l.replace(host.trim(), "<HOST>");
        }
        for key in ["Began", "StartTime", "Finished"] {
            if l.starts_with(key) {
                l = format!("{}: <DATE>", &l[..20]);
            }
        }
        if l.starts_with("FS ") {
            l = "FS                  : <FS>".into();
        }
        // Every number becomes N; runs of blanks become one.
        let mut norm = String::new();
        let mut in_num = false;
        for ch in l.chars() {
            if ch.is_ascii_digit() || (in_num && ch == '.') {
                if !in_num {
                    norm.push('N');
                    in_num = true;
                }
            } else {
                in_num = false;
                if ch == ' ' && norm.ends_with(' ') {
                    continue;
                }
                norm.push(ch);
            }
        }
        out.push_str(&norm);
        out.push('\n');
    }
    out
}

#[test]
fn seed000_runs_with_ior_names_and_layout() {
    let dir = scratch();
    let out = dir.path().join("ior.bin");
    // The document runs all -u -F -k writes, then all reads; a read with N
    // tasks needs the files an N-task write left (IOR would hit the end of
    // the file otherwise), so each read follows the write of the same N.
    let mut cmds = seed000(s(&out));
    let reads = cmds.split_off(21);
    let (mut order, kept) = (cmds[..14].to_vec(), &cmds[14..]);
    for (w, r) in kept.iter().zip(&reads) {
        order.push(w.clone());
        order.push(r.clone());
    }
    let outs = run_all("ior", &order);
    check_golden("seed000_ior_text.txt", &normalise(&outs[0], dir.path()));
    // The -u -F -k runs and the reads that followed kept the 64-task set:
    // IOR's names, a directory per task, nothing else but the marker.
    let names = names(dir.path());
    assert!(
        names.contains(&"63/ior.bin.00000063".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&".ior.bin.ioscale-marker".to_string()),
        "{names:?}"
    );
    assert_eq!(
        std::fs::metadata(dir.path().join("0/ior.bin.00000000"))
            .unwrap()
            .len(),
        2 * 64 * 1024
    );
    // The shared-file and -F runs (no -k) removed their files.
    assert!(!out.exists());
    assert!(!dir.path().join("ior.bin.00000000").exists());
}

#[test]
fn seed002_runs_with_repetitions_and_reordering() {
    let dir = scratch();
    let out = dir.path().join("test_dir");
    let outs = run_all("ior", &seed002(s(&out)));
    let text = &outs[0];
    assert_eq!(text.lines().filter(|l| l.starts_with("write ")).count(), 6);
    assert_eq!(text.lines().filter(|l| l.starts_with("read ")).count(), 6);
    assert!(text.contains("ordering in a file  : random"));
    assert!(text.contains("ordering inter file : constant task offset"));
    check_golden("seed002_ior_text.txt", &normalise(text, dir.path()));
    assert_empty(dir.path());
}

#[test]
fn seed001_dd_runs_and_keeps_the_files() {
    let dir = scratch();
    let cmds = seed001(s(dir.path()));
    for c in &cmds {
        let mut args = vec!["dd".to_string()];
        args.extend(c.iter().cloned());
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&a);
        assert_code(&out, 0);
        let err = stderr(&out);
        assert!(err.contains("records out"), "{err}");
        assert!(err.contains("copied"), "{err}");
    }
    let names = names(dir.path());
    // 8 single files and 2 x (4 + 16) job files, as dd and parallel leave them.
    assert_eq!(names.len(), 8 + 2 * 4 + 2 * 16, "{names:?}");
    assert!(names.contains(&"efs-2G-dd-20200601192130.012-16".to_string()));
    let len = std::fs::metadata(dir.path().join("ebs-2G-dd-20200601192130.001"))
        .unwrap()
        .len();
    assert_eq!(len, 2 << 20);
}
