//! `ioscale fio`'s JSON has fio 3.33's keys, all of them, for ordinary
//! jobs (a consumer script written against fio's JSON finds every key it
//! reads): both run the same job on tmpfs and the key sets are compared
//! recursively (percentile and bin names aside, which follow the data).
//! Its json+ has fio's latency bins, named as fio names them, that fio's
//! own `fio_jsonplus_clat2csv` turns into a CSV and validates.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::Value;

fn have(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Every key path of `v` (arrays by their first element; the names under
/// `percentile` and `bins` left out).
fn keys(v: &Value, at: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if at.ends_with("/percentile") || at.ends_with("/bins") {
                    continue;
                }
                let p = format!("{at}/{k}");
                out.insert(p.clone());
                keys(x, &p, out);
            }
        }
        Value::Array(a) => {
            if let Some(x) = a.first() {
                keys(x, &format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}

fn run_json(real: bool, args: &[&str], dir: &Path, format: &str) -> Value {
    let out_file = dir
        .join("..")
        .join(format!("out.{}.json", std::process::id()));
    let mut c = if real {
        Command::new("fio")
    } else {
        let mut c = Command::new(ioscale_path());
        c.arg("fio");
        c
    };
    let out = c
        .args(args)
        .arg(format!("--output-format={format}"))
        .arg(format!("--output={}", out_file.display()))
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&out_file).unwrap();
    std::fs::remove_file(&out_file).unwrap();
    let at = text.find('{').unwrap();
    serde_json::from_str(&text[at..]).unwrap()
}

fn clear(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
}

#[test]
fn the_key_sets_are_fios() {
    if !have("fio", "--version") {
        eprintln!("SKIPPED: fio not installed");
        return;
    }
    let Some(m) = tmpfs("size=64m") else { return };
    let dir = m.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let jobs: &[&[&str]] = &[
        &["--rw=randread"],
        &["--rw=write", "--fsync=4"],
        &["--rw=randrw", "--ioengine=io_uring", "--iodepth=4"],
        &["--rw=read", "--numjobs=2", "--group_reporting"],
        &["--rw=write", "--verify=md5"],
    ];
    for extra in jobs {
        let mut args = vec!["--name=j", "--bs=4k", "--size=1m"];
        args.extend_from_slice(extra);
        let (mut want, mut got) = (BTreeSet::new(), BTreeSet::new());
        keys(&run_json(true, &args, &dir, "json"), "", &mut want);
        clear(&dir);
        let v = run_json(false, &args, &dir, "json");
        keys(&v, "", &mut got);
        clear(&dir);
        // fio's disk_util needs a block device under the directory.
        want.retain(|k| !k.starts_with("/disk_util"));
        got.retain(|k| !k.starts_with("/disk_util"));
        let missing: Vec<_> = want.difference(&got).collect();
        let extra_keys: Vec<_> = got.difference(&want).collect();
        assert!(missing.is_empty(), "{extra:?}: ioscale lacks {missing:?}");
        assert!(
            extra_keys.is_empty(),
            "{extra:?}: fio has no {extra_keys:?}"
        );
        let j = &v["jobs"][0];
        // The tallies are percentages of what ran.
        let sum = |k: &str| {
            j[k].as_object()
                .unwrap()
                .values()
                .map(|x| x.as_f64().unwrap())
                .sum::<f64>()
        };
        assert!(
            (sum("iodepth_submit") - 100.0).abs() < 1e-6,
            "{extra:?}: {j}"
        );
        assert!((sum("iodepth_complete") - 100.0).abs() < 1e-6, "{extra:?}");
        if extra.contains(&"--fsync=4") {
            // 256 writes, a sync after every 4 but the last: fio's 63, and
            // fio's level counts them over the writes alone (124.6 %).
            assert_eq!(j["sync"]["total_ios"], 63, "{j}");
            assert_eq!(j["sync"]["lat_ns"]["N"], 63);
            assert!((j["iodepth_level"]["1"].as_f64().unwrap() - 31900.0 / 256.0).abs() < 1e-6);
        } else {
            assert_eq!(j["sync"]["total_ios"], 0);
        }
    }
}

/// fio's name of latency bin `idx` (`plat_idx_to_val`, 64 sub-buckets).
fn fio_bin(idx: u64) -> u64 {
    if idx < 128 {
        return idx;
    }
    let error_bits = (idx >> 6) - 1;
    let base = 1u64 << (error_bits + 6);
    let k = idx % 64;
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

#[test]
fn json_plus_bins_are_fios_and_fios_script_reads_them() {
    let Some(m) = tmpfs("size=64m") else { return };
    let dir = m.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let names: BTreeSet<String> = (0..1856).map(|i| fio_bin(i).to_string()).collect();
    let args = [
        "--name=j",
        "--rw=randrw",
        "--bs=4k",
        "--size=1m",
        "--fsync=8",
    ];
    let v = run_json(false, &args, &dir, "json+");
    let j = &v["jobs"][0];
    for (what, lat) in [
        ("read", &j["read"]["clat_ns"]),
        ("write", &j["write"]["clat_ns"]),
        ("sync", &j["sync"]["lat_ns"]),
    ] {
        let bins = lat["bins"]
            .as_object()
            .unwrap_or_else(|| panic!("{what}: {lat}"));
        let n: u64 = bins.values().map(|c| c.as_u64().unwrap()).sum();
        assert_eq!(n, lat["N"].as_u64().unwrap(), "{what}");
        for k in bins.keys() {
            assert!(names.contains(k), "{what}: {k} is not one of fio's bins");
        }
    }
    if !have("fio_jsonplus_clat2csv", "--help") {
        eprintln!("SKIPPED: fio_jsonplus_clat2csv not installed");
        return;
    }
    let input = m.path().join("plus.json");
    std::fs::write(&input, serde_json::to_string(&v).unwrap()).unwrap();
    let prefix = m.path().join("csv");
    for extra in [None, Some("--validate")] {
        let out = Command::new("fio_jsonplus_clat2csv")
            .args(extra)
            .arg(&input)
            .arg(&prefix)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let csv = std::fs::read_to_string(m.path().join("csv_job0")).unwrap();
    // A header, then a row per latency value seen.
    assert!(csv.lines().count() > 2, "{csv}");
}
