//! io500's result directory, as io500 isc26_v2 leaves it: `result.txt`
//! (the run's key/value record: `procs`, `config-hash`, `mode`, each
//! phase's `exe`, its INVALID lines and figures, the score and its hash),
//! `result_summary.txt` (the lines printed), `config-orig.ini` and
//! `config.ini` (written when the run starts), a `.csv` per phase in the
//! layout IOR, mdtest and pfind give theirs, and the timestamp file. The
//! `.txt` of an IOR or mdtest phase is ioscale's own summary of what the
//! phase measured (io500 keeps the tool's output there). io500's
//! `*.stonewall` files are not left: the item counts they carry stay in
//! the run.
//!
//! Everything here renders text; the files are written through
//! [`crate::output::ResultDir`].

use std::fmt::Write as _;

use super::config::hash_str;
use super::phases::{FindScope, Group, Kind, Phase, Step as Act};
use super::runner::{Done, Figures};
use super::steps::{rnd_dir, HARD_XFER, MD_HARD_BYTES};
use super::{Start, Verdict, IO500_VERSION};
use crate::output::ResultDir;

/// Every file the run writes in the result directory, for the check
/// before the run.
pub(super) fn names(plan: &[Phase]) -> Vec<String> {
    let mut n: Vec<String> = [
        "result.txt",
        "result_summary.txt",
        "config.ini",
        "config-orig.ini",
        "timestampfile",
    ]
    .map(String::from)
    .to_vec();
    for p in plan {
        n.extend(files_of(p));
    }
    n
}

/// The files of one phase: a `.txt` and a `.csv` for an IOR or mdtest
/// phase, a `.csv` for a find, none for the timestamp.
fn files_of(p: &Phase) -> Vec<String> {
    match p.kind {
        Kind::Timestamp => Vec::new(),
        Kind::Find { .. } => vec![format!("{}.csv", p.name)],
        _ => vec![format!("{}.txt", p.name), format!("{}.csv", p.name)],
    }
}

/// Writes the result directory's files (the config copies were written at
/// the start).
pub(super) fn write(
    rd: &ResultDir,
    start: &Start,
    summary: &[String],
    done: &[Done],
    v: &Verdict,
) -> anyhow::Result<()> {
    rd.write("result_summary.txt", (summary.join("\n") + "\n").as_bytes())?;
    for d in done {
        let Some(f) = &d.fig else { continue };
        let csv = match d.phase.kind {
            Kind::Timestamp => continue,
            Kind::Find { .. } => find_csv(f),
            Kind::MdEasy | Kind::MdHard => mdtest_csv(&d.phase, f),
            _ => ior_csv(&d.phase, f),
        };
        rd.write(&format!("{}.csv", d.phase.name), csv.as_bytes())?;
        if !matches!(d.phase.kind, Kind::Find { .. }) {
            let txt = phase_txt(d, f, &exe(&d.phase, start));
            rd.write(&format!("{}.txt", d.phase.name), txt.as_bytes())?;
        }
    }
    rd.write("result.txt", result_txt(start, done, v).as_bytes())
}

/// `key = value` as io500 writes it: the key padded to 15.
fn pair(out: &mut String, key: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "{key:<15} = {value}");
}

/// result.txt: `[run]`, a section per phase, `[SCORE]` (and `[SCOREX]`).
fn result_txt(start: &Start, done: &[Done], v: &Verdict) -> String {
    let cfg = &start.cfg;
    let mut out = String::from("[run]\n");
    pair(&mut out, "procs", start.workers);
    pair(&mut out, "version", IO500_VERSION);
    pair(&mut out, "config-hash", format_args!("{:X}", cfg.hash()));
    pair(&mut out, "result-dir", cfg.resultdir.display());
    pair(&mut out, "mode", start.mode());
    let _ = writeln!(
        out,
        "; run by ioscale {}: procs counts its tasks (threads x ranks)",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(out, "; START {}", start.started);
    if let Some(r) = start.stonewall_reason() {
        let _ = writeln!(out, "; ERROR INVALID {r}");
    }
    out.push('\n');
    for d in done {
        phase_section(&mut out, d, start);
    }
    score_sections(&mut out, done, v);
    let _ = writeln!(out, "; END {}", super::local_time("%Y-%m-%d %H:%M:%S"));
    out
}

/// One phase's section, with io500's keys in its order.
fn phase_section(out: &mut String, d: &Done, start: &Start) {
    let p = &d.phase;
    let _ = write!(out, "\n[{}]\n", p.name);
    pair(out, "t_start", &d.t_start.io500);
    if p.kind != Kind::Timestamp {
        pair(out, "exe", exe(p, start));
    }
    if let Kind::Find { .. } = p.kind {
        pair(out, "nproc", start.workers);
    }
    for r in &d.own {
        let _ = writeln!(out, "; ERROR INVALID {r}");
    }
    if let Some(f) = &d.fig {
        stonewall_pair(out, p, f);
        if let (Kind::Find { .. }, Some(found)) = (p.kind, f.found) {
            pair(out, "found", found);
            pair(out, "total-files", f.ops);
        }
    }
    for r in &d.after {
        let _ = writeln!(out, "; ERROR INVALID {r}");
    }
    if p.kind != Kind::Timestamp {
        pair(out, "score", format_args!("{:.6}", d.score));
    }
    pair(out, "t_delta", format_args!("{:.4}", d.elapsed()));
    pair(out, "t_end", &d.t_end.io500);
}

/// A write phase's stonewall figure: IOR's `throughput-stonewall` (GiB/s
/// of the work done by the stonewall, over its time), mdtest's
/// `rate-stonewall` (kIOPS).
fn stonewall_pair(out: &mut String, p: &Phase, f: &Figures) {
    let Some((s, items, bytes)) = f.stonewall.filter(|_| p.step == Act::Write) else {
        return;
    };
    let per_s = |x: u64| if s > 0.0 { x as f64 / s } else { 0.0 };
    if p.is_bw() {
        let gib = per_s(bytes) / (1u64 << 30) as f64;
        pair(out, "throughput-stonewall", format_args!("{gib:.2}"));
    } else {
        pair(
            out,
            "rate-stonewall",
            format_args!("{:.6}", per_s(items) / 1000.0),
        );
    }
}

/// `[SCORE]` with its groups, the total and io500's score hash (which
/// `io500 --verify` checks); `[SCOREX]` in extended mode.
fn score_sections(out: &mut String, done: &[Done], v: &Verdict) {
    let mut h = pair_hash(0, "version", IO500_VERSION);
    let mut hx = 0u32;
    for d in done.iter().filter(|d| d.phase.group != Group::None) {
        let entry = pair_hash(0, d.phase.name, &format!("{:.6}", d.score));
        if d.phase.optional {
            hx ^= entry;
        } else {
            h ^= entry;
        }
    }
    let section =
        |out: &mut String, name: &str, s: &super::score::Score, valid: bool, mut h: u32| {
            let _ = write!(out, "\n[{name}]\n");
            for (k, x) in [("MD", s.md), ("BW", s.bw)] {
                pair(out, k, format_args!("{x:.6}"));
                h = pair_hash(h, k, &format!("{x:.6}"));
            }
            let tag = if valid { "" } else { " [INVALID]" };
            pair(out, "SCORE", format_args!("{:.6}{tag}", s.total));
            h = pair_hash(h, "SCORE", &format!("{:.6}", s.total));
            if !valid {
                h = pair_hash(h, "valid", "NO");
            }
            pair(out, "hash", format_args!("{h:X}"));
        };
    section(out, "SCORE", &v.score, v.valid, h);
    if let Some((x, ok)) = &v.ext {
        section(out, "SCOREX", x, *ok, hx);
    }
}

/// io500's hash update of one `key = value` pair into `h`.
fn pair_hash(h: u32, key: &str, value: &str) -> u32 {
    h ^ hash_str(hash_str(0, key), value)
}

/// io500's `-G` of a phase family: a hash of its name and the run stamp,
/// printed as a signed int.
fn seed(name: &str, stamp: &str) -> i32 {
    match hash_str(hash_str(0, name), stamp) {
        0 | u32::MAX => 4711,
        h => h as i32,
    }
}

/// The command io500 runs for a phase (its `exe`), with this run's values.
fn exe(p: &Phase, start: &Start) -> String {
    let (cfg, d, r) = (
        &start.cfg,
        start.cfg.datadir.display(),
        start.cfg.resultdir.display(),
    );
    let raw = |s: &str, k: &str, dflt: &str| cfg.raw(s, k).unwrap_or_else(|| dflt.to_string());
    let api = format!("-a {}", raw("global", "api", "POSIX"));
    let sw = cfg.stonewall_s;
    let csv = format!("{r}/{}.csv", p.name);
    let wr = p.step == Act::Write;
    match p.kind {
        Kind::IorEasy | Kind::IorRndEasyRead => {
            let rnd = p.kind == Kind::IorRndEasyRead;
            let mut s = format!(
                "./ior --dataPacketType=timestamp -g -G {} -k -e -o {d}/ior-easy/ior_file_easy",
                seed("ior-easy", &start.stamp)
            );
            if !rnd {
                let _ = write!(
                    s,
                    " -C -Q 1 -O stoneWallingStatusFile={r}/ior-easy.stonewall -t {} -b {}",
                    raw("ior-easy", "transferSize", "2m"),
                    raw("ior-easy", "blockSize", "9920000m")
                );
            }
            if cfg.easy_unique_dir {
                s += " -u";
            }
            if cfg.easy_fpp {
                s += " -F";
            }
            if rnd {
                let _ = write!(s, " -r -D {sw} -z -z {api} -O saveRankPerformanceDetailsCSV={csv} -t=4096 -b=4096 -s=10000000 -O stoneWallingWearOut=1");
                if cfg.easy_fpp {
                    s += " -C -Q 2";
                }
            } else if wr {
                let _ = write!(s, " -w -D {sw} -O stoneWallingWearOut=1 {api} -O saveRankPerformanceDetailsCSV={csv}");
            } else {
                let _ = write!(s, " -r -R {api} -O saveRankPerformanceDetailsCSV={csv}");
            }
            s
        }
        Kind::IorHard => {
            let mut s = format!(
                "./ior --dataPacketType=timestamp -C -Q 1 -g -G={} -k -e -o {d}/ior-hard/file -O stoneWallingStatusFile={r}/ior-hard.stonewall -t {HARD_XFER} -b {HARD_XFER} -s {}",
                seed("ior-hard", &start.stamp),
                cfg.hard_segments
            );
            if wr {
                let _ = write!(s, " -w -D {sw} {api} -O saveRankPerformanceDetailsCSV={csv} -O stoneWallingWearOut=1");
            } else {
                let _ = write!(s, " -r -R {api} -O saveRankPerformanceDetailsCSV={csv}");
            }
            s
        }
        Kind::IorRnd { xfer } => {
            let (name, rseed, block) = if xfer == 4096 {
                ("ior-random4K", 123, cfg.rnd4k_block)
            } else {
                ("ior-random1MB", 11, cfg.rnd1mb_block)
            };
            let dir = rnd_dir(xfer);
            let mut s = format!(
                "./ior --dataPacketType=timestamp -Q=1 -g -G={} -z --random-offset-seed={rseed} -e -o={d}/{dir}/file -O stoneWallingStatusFile={r}/{dir}.stonewall -k -t={xfer} -b={block} -s=10000000",
                seed(name, &start.stamp)
            );
            if wr {
                let _ = write!(s, " -w -D {sw} {api} -O stoneWallingWearOut=1 -O saveRankPerformanceDetailsCSV={csv}");
            } else {
                let _ = write!(s, " -r -R {api} -O saveRankPerformanceDetailsCSV={csv}");
            }
            s
        }
        Kind::MdEasy | Kind::MdHard => mdtest_exe(p, start, &api, &csv),
        Kind::Find { scope } => {
            let (root, strict) = match scope {
                FindScope::All => (format!("{d}"), true),
                FindScope::Easy => (format!("{d}/mdtest-easy/"), false),
                FindScope::Hard => (format!("{d}/mdtest-hard/"), true),
            };
            let newer = if strict {
                format!(" -newer {r}/timestampfile -size {MD_HARD_BYTES}c")
            } else {
                String::new()
            };
            let q = raw(p.section, "pfind-queue-length", "10000");
            format!("./pfind {root}{newer} -name *01* -C -q {q}")
        }
        Kind::Timestamp => String::new(),
    }
}

/// An mdtest phase's `exe`.
fn mdtest_exe(p: &Phase, start: &Start, api: &str, csv: &str) -> String {
    let (cfg, d, r) = (
        &start.cfg,
        start.cfg.datadir.display(),
        start.cfg.resultdir.display(),
    );
    let step = match p.step {
        Act::Write => format!("-C -Y -W {}", cfg.stonewall_s),
        Act::Stat => "-T".into(),
        Act::Read => "-E -X".into(),
        _ => "-r".into(),
    };
    if p.kind == Kind::MdEasy {
        format!(
            "./mdtest --dataPacketType=timestamp -n {} -u -L -F -P -G {} -N 1 -d {d}/mdtest-easy -x {r}/mdtest-easy.stonewall {step} --saveRankPerformanceDetails={csv} {api}",
            cfg.md_easy_n,
            seed("mdtest-easy", &start.stamp)
        )
    } else {
        format!(
            "./mdtest --dataPacketType=timestamp -n {} -t -w {MD_HARD_BYTES} -e {MD_HARD_BYTES} -P -G={} -N 1 -F -d {d}/mdtest-hard -x {r}/mdtest-hard.stonewall {step} --saveRankPerformanceDetails={csv} {api}",
            cfg.md_hard_n,
            seed("mdtest-hard", &start.stamp)
        )
    }
}

/// A number as C's `%.10e` writes it (`7.0422551408e+08`).
fn c_exp(x: f64) -> String {
    let s = format!("{x:.10e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let n: i32 = e.parse().unwrap_or(0);
            format!("{m}e{}{:02}", if n < 0 { '-' } else { '+' }, n.abs())
        }
        None => s,
    }
}

/// IOR's per-rank CSV (`saveRankPerformanceDetailsCSV`): a row per task,
/// its time with and without open and close and its throughput (bytes/s).
fn ior_csv(p: &Phase, f: &Figures) -> String {
    let access = if p.step == Act::Write {
        "write"
    } else {
        "read"
    };
    let mut s = String::from(
        "access,rank,runtime-with-openclose,runtime,throughput-withopenclose,throughput\n",
    );
    for r in &f.data_rows {
        let whole = r.end_s - r.start_s;
        let rate = |t: f64| if t > 0.0 { r.bytes as f64 / t } else { 0.0 };
        let _ = writeln!(
            s,
            "{access},{},{},{},{},{}",
            r.worker,
            c_exp(whole),
            c_exp(r.io_s),
            c_exp(rate(whole)),
            c_exp(rate(r.io_s))
        );
    }
    s
}

/// mdtest's operations, in the order of its CSV's columns.
const MDTEST_OPS: [&str; 11] = [
    "Directory creation",
    "Directory stat",
    "Directory read",
    "Directory rename",
    "Directory removal",
    "File creation",
    "File stat",
    "File read",
    "File removal",
    "Tree creation",
    "Tree removal",
];

/// mdtest's per-rank CSV (`--saveRankPerformanceDetails`): the rate and
/// time of the phase's operation for all tasks and for each; the other
/// operations' columns are empty, as mdtest leaves those it did not run
/// (its tree creation is not measured by ioscale: empty too).
fn mdtest_csv(p: &Phase, f: &Figures) -> String {
    let col = match p.step {
        Act::Write => 5,
        Act::Stat => 6,
        Act::Read => 7,
        _ => 8,
    };
    let mut s = String::from("rank,items");
    for op in MDTEST_OPS {
        let _ = write!(s, ",rate-{op},time-{op}");
    }
    s.push('\n');
    let row = |n: usize, rate: f64, time: f64| {
        (0..n)
            .map(|i| {
                if i == col {
                    format!(",{},{}", c_exp(rate), c_exp(time))
                } else {
                    ",,".into()
                }
            })
            .collect::<String>()
    };
    let rate = |x: u64, t: f64| if t > 0.0 { x as f64 / t } else { 0.0 };
    let _ = writeln!(
        s,
        "all,{}{}",
        f.ops,
        row(MDTEST_OPS.len(), rate(f.ops, f.elapsed_s), f.elapsed_s)
    );
    for t in &f.meta_rows {
        let _ = writeln!(
            s,
            "{},{}",
            t.thread,
            row(9, rate(t.files, t.elapsed_s), t.elapsed_s)
        );
    }
    s
}

/// pfind's CSV: its runtime and rate, then a row per task of what ioscale
/// measures (pfind's unknown-type, checked-entries and job-stealing
/// columns are not measured, and left out).
fn find_csv(f: &Figures) -> String {
    let rate = if f.elapsed_s > 0.0 {
        f.ops as f64 / f.elapsed_s
    } else {
        0.0
    };
    let mut s = format!(
        "runtime: {:.6} rate: {rate:.6}\nrank, errors, found, total\n",
        f.elapsed_s
    );
    for t in &f.meta_rows {
        let _ = writeln!(
            s,
            "{}, {}, {}, {}",
            t.thread,
            u64::from(t.status == "error"),
            t.matched.unwrap_or(0),
            t.files
        );
    }
    s
}

/// ioscale's summary of what an IOR or mdtest phase measured (io500
/// keeps the tool's output in this file): only measured figures.
fn phase_txt(d: &Done, f: &Figures, exe: &str) -> String {
    let p = &d.phase;
    let mut t = format!(
        "phase: {}\nequivalent: {exe}\ntasks: {}\ntime_s: {:.6}\nscore: {:.6} {}\n",
        p.name,
        f.items.len(),
        f.elapsed_s,
        d.score,
        p.unit(),
    );
    if f.counted {
        let _ = writeln!(t, "ops: {}\nbytes: {}", f.ops, f.bytes);
    }
    if let Some(l) = &f.lat {
        let _ = writeln!(
            t,
            "latency_us: mean {:.1} p50 {:.1} p99 {:.1} p99.9 {:.1} max {:.1}",
            l.mean, l.p50, l.p99, l.p999, l.max
        );
    }
    if let Some((u, s)) = f.cpu {
        let _ = writeln!(t, "cpu_s: user {u:.3} sys {s:.3}");
    }
    if let (Some((s, items, bytes)), Act::Write) = (f.stonewall, p.step) {
        let _ = writeln!(
            t,
            "stonewall: at {s:.3} s, {items} items and {bytes} bytes done by all tasks"
        );
    }
    t += "task items\n";
    for (k, n) in f.items.iter().enumerate() {
        let _ = writeln!(t, "{k} {n}");
    }
    for r in d.reasons() {
        let _ = writeln!(t, "INVALID: {r}");
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_and_numbers_are_io500s() {
        // The exe lines of shared/reference-outputs/io500-resultdir.txt,
        // whose run stamp was 2026.11.27-20.43.51.
        let stamp = "2026.11.27-20.43.51";
        assert_eq!(seed("ior-easy", stamp), 1837835784);
        assert_eq!(seed("mdtest-easy", stamp), -1570953718);
        assert_eq!(seed("ior-hard", stamp), 1837846472);
        assert_eq!(seed("mdtest-hard", stamp), -1570943030);
        // ior-easy-write.csv's first row.
        assert_eq!(c_exp(1.5247130394), "1.5247130394e+00");
        assert_eq!(c_exp(704225514.08), "7.0422551408e+08");
        assert_eq!(c_exp(3.0994415283e-5), "3.0994415283e-05");
    }
}
