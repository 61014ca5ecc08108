//! Golden outputs of every command, taken before the driver moved out of
//! the binary (issue 10) so the move can be shown to change nothing a user
//! sees: the text of `run`, `meta`, `sweep` and the four front-ends, and the
//! shape of the JSON records of `run`, `meta` and `sweep`.
//!
//! Measured figures change from run to run, so they are normalised: every
//! number in text becomes `N` (runs of blanks become one, so column widths
//! do not matter); in JSON, numbers become `0` except the fields that are
//! exact by construction (bytes, ops, threads, …). Host, dates, paths and
//! the file-system line are replaced by placeholders. Lines that appear or
//! not depending on timing (the stonewall figure) and the sweep's analysis
//! prose (its wording follows the measured curve) are left out, and so
//! are a sweep's page-cache warnings, decided by what its probe measured.
//! `UPDATE_GOLDEN=1` rewrites the golden files.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn check_golden(name: &str, got: &str) {
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

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Digits become one `N` per number; runs of blanks become one blank.
fn squash_numbers(l: &str) -> String {
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
    norm
}

/// Normalises a text output (see the module comment).
fn normalise_text(text: &str, dir: &Path) -> String {
    let host = host();
    let mut out = String::new();
    for line in text.lines() {
        if line.contains("Analysis") && !line.contains(':') {
            // The sweep's analysis prose follows the measured curve.
            break;
        }
        if line.contains("stonewall") || line.contains("must run longer than") {
            // Present or not depending on timing.
            continue;
        }
        let mut l = line.replace(dir.to_str().unwrap(), "<DIR>");
        if !host.is_empty() {
            l = l.replace(&host, "<HOST>");
        }
        if let Some(cut) = l.find(" (") {
            if l.starts_with("target ") {
                l = format!("{} (<FS>)", &l[..cut]);
            }
        }
        if let Some(cut) = l.find("; target ") {
            l = format!("{}; target <FS>", &l[..cut]);
        }
        if l.starts_with("ioscale ") && l.contains("kernel") {
            l = "ioscale <VERSION> <HOST> <KERNEL> <CPUS> <MEM>".into();
        }
        // dd picks the rate's unit by its size.
        for unit in [" kB/s", " MB/s", " GB/s", " TB/s"] {
            l = l.replace(unit, " <UNIT>/s");
        }
        // The latency columns' unit follows the measured latencies (a busy
        // machine turns µs into ms).
        let mut l = squash_numbers(&l);
        for unit in ["ns", "µs", "ms", "s"] {
            l = l.replace(&format!("pN ({unit})"), "pN (<T>)");
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// Fields whose numbers are exact by construction, kept as they are.
const EXACT: &[&str] = &[
    "schema",
    "threads",
    "bytes",
    "ops",
    "read_bytes",
    "write_bytes",
    "rep",
    "reps",
    "worker",
    "xfer",
    "block",
    "segments",
    "iodepth",
    "errors",
    "n",
    "files",
    "points_total",
    "rwmix_read",
];

/// Fields replaced whole: they depend on the machine or on timing.
const OPAQUE: &[&str] = &[
    "host",
    "stonewall",
    "analysis",
    "started",
    "seed",
    "command",
    // What the machine did during a phase (CPU of other processes, the
    // device): measured, and different on every machine.
    "resources",
    "probes",
];

/// Normalises a JSON record (see the module comment).
fn normalise_json(v: &Value, key: &str, dir: &str, host: &str) -> Value {
    // A phase's per-interval series (an object; a sweep point's `series`
    // label is a string): its intervals follow the timing.
    if OPAQUE.contains(&key) || (key == "series" && v.is_object()) {
        return Value::String(format!("<{key}>"));
    }
    match v {
        Value::Number(_) if EXACT.contains(&key) => v.clone(),
        Value::Number(_) => Value::from(0),
        Value::String(s) => {
            let mut s = s.replace(dir, "<DIR>");
            if !host.is_empty() && s == host {
                s = "<HOST>".into();
            }
            Value::String(squash_numbers(&s))
        }
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| normalise_json(x, key, dir, host))
                .collect(),
        ),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), normalise_json(x, k, dir, host)))
                .collect(),
        ),
        _ => v.clone(),
    }
}

/// The page-cache warnings of a sweep, whose points are measured: which
/// one appears (the guess, the page cache, the storage) — and whether one
/// appears at all — follows what the device under the target did while
/// the phase ran (a loaded machine's writeback changes it), so they are
/// left out of the comparison; tests/known_answers_cli.rs checks them.
/// Whether a warning is one of those.
fn measured_warning(w: &str) -> bool {
    w.contains("page cache") || w.contains("page and inode caches")
}

/// A sweep's text without its measured warnings.
fn sweep_text(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for l in text.split('\n') {
        if !l.strip_prefix("warning: ").is_some_and(measured_warning) {
            out.push(l.to_string());
        }
    }
    out.join("\n")
}

/// A sweep record without its measured warnings.
fn sweep_json(v: &mut Value) {
    for p in v["points"].as_array_mut().into_iter().flatten() {
        if let Some(ws) = p["result"]["warnings"].as_array_mut() {
            ws.retain(|w| !w.as_str().is_some_and(measured_warning));
        }
    }
}

fn json_golden(name: &str, path: &Path, dir: &Path) {
    let mut v = json(path);
    if v["kind"] == "sweep" {
        sweep_json(&mut v);
    }
    let norm = normalise_json(&v, "", dir.to_str().unwrap(), &host());
    check_golden(name, &(serde_json::to_string_pretty(&norm).unwrap() + "\n"));
}

/// Runs in `dir` (so relative targets stay the same in the record).
fn run_in(dir: &Path, args: &[&str]) -> std::process::Output {
    let out = ioscale()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("running ioscale");
    assert_no_panic(&out);
    out
}

#[test]
fn run_text_and_json() {
    let dir = scratch();
    std::fs::create_dir(dir.path().join("t")).unwrap();
    let args = [
        "run", "t", "-t", "2", "-x", "64k", "-s", "256k", "--json", "r.json",
    ];
    let out = run_in(dir.path(), &args);
    assert_code(&out, 0);
    check_golden(
        "out_run_text.txt",
        &normalise_text(&stdout(&out), dir.path()),
    );
    check_golden(
        "out_run_stderr.txt",
        &normalise_text(&stderr(&out), dir.path()),
    );
    json_golden("out_run.json", &dir.path().join("r.json"), dir.path());
    // --format json on stdout is the same record.
    let out = run_in(
        dir.path(),
        &[
            "run", "t", "-x", "64k", "-s", "64k", "--op", "write", "--format", "json",
        ],
    );
    assert_code(&out, 0);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let norm = normalise_json(&v, "", dir.path().to_str().unwrap(), &host());
    check_golden(
        "out_run_stdout.json",
        &(serde_json::to_string_pretty(&norm).unwrap() + "\n"),
    );
    assert_empty(&dir.path().join("t"));
}

#[test]
fn meta_text_and_json() {
    let dir = scratch();
    std::fs::create_dir(dir.path().join("t")).unwrap();
    let out = run_in(
        dir.path(),
        &["meta", "t", "-t", "2", "-n", "20", "--json", "m.json"],
    );
    assert_code(&out, 0);
    check_golden(
        "out_meta_text.txt",
        &normalise_text(&stdout(&out), dir.path()),
    );
    check_golden(
        "out_meta_stderr.txt",
        &normalise_text(&stderr(&out), dir.path()),
    );
    json_golden("out_meta.json", &dir.path().join("m.json"), dir.path());
    assert_empty(&dir.path().join("t"));
}

#[test]
fn sweep_text_and_json() {
    let dir = scratch();
    std::fs::create_dir(dir.path().join("t")).unwrap();
    let out = run_in(
        dir.path(),
        &[
            "sweep",
            "--threads",
            "1,2",
            "--xfer",
            "32k,64k",
            "--json",
            "s.json",
            "--",
            "run",
            "t",
            "-s",
            "128k",
        ],
    );
    assert_code(&out, 0);
    check_golden(
        "out_sweep_text.txt",
        &normalise_text(&sweep_text(&stdout(&out)), dir.path()),
    );
    json_golden("out_sweep.json", &dir.path().join("s.json"), dir.path());
    let out = run_in(
        dir.path(),
        &[
            "sweep",
            "--threads",
            "1,2",
            "--json",
            "sm.json",
            "--",
            "meta",
            "t",
            "-n",
            "10",
        ],
    );
    assert_code(&out, 0);
    check_golden(
        "out_sweep_meta_text.txt",
        &normalise_text(&sweep_text(&stdout(&out)), dir.path()),
    );
    json_golden(
        "out_sweep_meta.json",
        &dir.path().join("sm.json"),
        dir.path(),
    );
    assert_empty(&dir.path().join("t"));
}

#[test]
fn ior_text() {
    let dir = scratch();
    std::fs::create_dir(dir.path().join("t")).unwrap();
    let out = run_in(
        dir.path(),
        &[
            "ior", "-N", "2", "-t", "64k", "-b", "128k", "-s", "2", "-w", "-r", "-i", "2", "-F",
            "-o", "t/f",
        ],
    );
    assert_code(&out, 0);
    let mut text = normalise_text(&stdout(&out), dir.path());
    // IOR's header carries dates and the machine in its own words.
    text = text
        .lines()
        .map(|l| {
            for key in ["Began", "StartTime", "Finished"] {
                if l.starts_with(key) {
                    return format!("{key}: <DATE>");
                }
            }
            if l.starts_with("FS ") {
                return "FS: <FS>".into();
            }
            l.to_string()
        })
        .collect::<Vec<_>>()
        .join("\n");
    check_golden("out_ior_text.txt", &(text + "\n"));
}

#[test]
fn mdtest_text() {
    let dir = scratch();
    let out = run_in(
        dir.path(),
        &["mdtest", "--tasks", "2", "-n", "10", "-i", "1", "-d", "t"],
    );
    assert_code(&out, 0);
    let text: Vec<String> = normalise_text(&stdout(&out), dir.path())
        .lines()
        .map(|l| {
            if l.starts_with("-- started at") || l.starts_with("-- finished at") {
                l[..l.find(" at").unwrap()].to_string() + " at <DATE>"
            } else {
                l.to_string()
            }
        })
        .collect();
    check_golden("out_mdtest_text.txt", &(text.join("\n") + "\n"));
}

#[test]
fn dd_text() {
    let dir = scratch();
    let out = run_in(
        dir.path(),
        &[
            "dd",
            "if=/dev/zero",
            "of=f",
            "bs=64k",
            "count=4",
            "conv=fsync",
        ],
    );
    assert_code(&out, 0);
    check_golden(
        "out_dd_stdout.txt",
        &normalise_text(&stdout(&out), dir.path()),
    );
    check_golden(
        "out_dd_stderr.txt",
        &normalise_text(&stderr(&out), dir.path()),
    );
    let out = run_in(
        dir.path(),
        &[
            "dd",
            "--jobs",
            "2",
            "if=/dev/zero",
            "of=g-{}",
            "bs=64k",
            "count=2",
        ],
    );
    assert_code(&out, 0);
    check_golden(
        "out_dd_jobs_stderr.txt",
        &normalise_text(&stderr(&out), dir.path()),
    );
}

#[test]
fn smallfile_text() {
    let dir = scratch();
    std::fs::create_dir(dir.path().join("t")).unwrap();
    let out = run_in(
        dir.path(),
        &[
            "smallfile",
            "--top",
            "t",
            "--threads",
            "2",
            "--files",
            "10",
            "--file-size",
            "4",
            "--operation",
            "create",
        ],
    );
    assert_code(&out, 0);
    // smallfile prints its rates only when the run took a millisecond or
    // more (otherwise a warning, dropped above): timing, not layout.
    let text: String = normalise_text(&stdout(&out), dir.path())
        .lines()
        .filter(|l| {
            // Both the wall-clock headline and smallfile's own figure,
            // and its warning when its threads counted under 70% of the
            // files by the first one's finish (timing, as the counts).
            ![
                "files/sec",
                "IOPS",
                "MiB/sec",
                "WARNING: not enough total files",
            ]
            .iter()
            .any(|k| l.starts_with(k))
        })
        // The percentage's width follows the count (100.00 or 95.00).
        .map(|l| match l.trim_start() {
            t if t.contains("% of requested files processed") => format!("{t}\n"),
            _ => format!("{l}\n"),
        })
        .collect();
    check_golden("out_smallfile_text.txt", &text);
}

#[test]
fn fio_text_and_spec() {
    let dir = scratch();
    let job = dir.path().join("jobs.fio");
    std::fs::write(
        &job,
        "[global]\nbs=64k\nsize=256k\n\n[w]\nrw=write\nnumjobs=2\ngroup_reporting\n\n\
         [r]\nstonewall\nrw=randread\n",
    )
    .unwrap();
    let out = run_in(dir.path(), &["fio", "--print-spec", "jobs.fio"]);
    assert_code(&out, 0);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let norm = normalise_json(&v, "", dir.path().to_str().unwrap(), &host());
    check_golden(
        "out_fio_specs.json",
        &(serde_json::to_string_pretty(&norm).unwrap() + "\n"),
    );
    let out = run_in(dir.path(), &["fio", "jobs.fio"]);
    assert_code(&out, 0);
    // Units follow the size of the figure; the job lines carry pid and
    // date; the disk's line names the machine's device.
    let mut text = String::new();
    let mut disk = false;
    let (mut last_pct, mut last_buckets) = (false, false);
    for l in normalise_text(&stdout(&out), dir.path()).lines() {
        if l.starts_with("Disk stats") {
            disk = true;
        }
        if disk {
            continue;
        }
        let mut l = l.to_string();
        if let Some(i) = l.find(": pid=") {
            l = format!("{}: pid=<PID>: <DATE>", &l[..i]);
        }
        for u in [
            "KiB", "MiB", "GiB", "kB", "MB", "GB", "nsec", "usec", "msec", "Nk", "NM",
        ] {
            l = l.replace(u, if u.starts_with('N') { "N<U>" } else { "<U>" });
        }
        // The percentile table pads each figure to five columns.
        // A number's unit prefix (none, k, Ki, M …) follows its size.
        let l = l.replace("N<U>", "N").replace("NB", "N");
        let l = l.replace("=[ ", "=[");
        // How many percentiles share a row follows the widest figure, and
        // which latency buckets are printed follows the latencies: one
        // line each.
        let t = l.trim_start();
        if t.starts_with('|') {
            if text.ends_with(",\n") || text.ends_with("]\n") && last_pct {
                text.pop();
                text.push_str(t.trim_start_matches('|'));
                text.push('\n');
                continue;
            }
            last_pct = true;
        } else {
            last_pct = false;
        }
        if t.starts_with("lat (") && t.contains("=N%") {
            if !last_buckets {
                text.push_str(" lat (<U>) : <buckets>\n");
            }
            last_buckets = true;
            continue;
        }
        last_buckets = false;
        text.push_str(&l);
        text.push('\n');
    }
    check_golden("out_fio_text.txt", &text);
}
