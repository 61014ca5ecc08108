//! `ioscale smallfile …` (and the binary started as `smallfile_cli.py`):
//! smallfile_cli.py's command line.
//!
//! smallfile runs one operation per invocation (`--operation create`, then
//! `--operation read`, …, then `--operation cleanup`) on N threads with
//! `--files` files each; `--file-size` and `--record-size` are in KiB.
//! Options are read as smallfile reads them (`--name value` or
//! `--name=value`, booleans `Y`/`N`) into a [`RawMeta`](spec::RawMeta) with smallfile's
//! defaults, and run by `ioscale meta`'s driver. As with smallfile, what an
//! operation makes stays for the next one: the tree is kept, except after
//! `delete`, `cleanup` and `rmdir`, which remove what remains of it. The
//! tree lives in `TOP/ioscale-meta.d` under ioscale's marker, so only names
//! ioscale made are ever removed.

use std::io::Write;
use std::sync::Arc;

use coord::Coordinator;
use report::{Exporter, ResultSet};
use spec::{MetaOp, MetaSpec};

use super::{Call, Front, Usage};
use crate::exit::{Exit, Failure};
use render::{SmallfileInfo, SmallfileTextExporter};

pub use compat::smallfile::{parse, render};

use parse::*;

/// The smallfile release whose command line and output are followed is
/// tag 1.1; this is what that release prints on its `version :` line.
pub const SMALLFILE_VERSION: &str = "3.2";

/// `ioscale smallfile --help`.
pub const HELP: &str = "\
ioscale smallfile: run a smallfile_cli.py command line on ioscale's meta engine

Usage: ioscale smallfile --top DIR [--operation OP] [OPTIONS]
       (or a symlink named `smallfile_cli.py` to the ioscale binary)

Options (smallfile's; `--name value` or `--name=value`; booleans Y or N):
  --top DIR                 directory to test (required); ioscale works in DIR/ioscale-meta.d
  --operation OP            create, read, append, overwrite, truncate-overwrite, stat, chmod,
                            rename, delete-renamed, setxattr, getxattr, symlink, readdir, ls-l,
                            delete, mkdir, rmdir, cleanup [cleanup]
  --threads N               threads [2]
  --files N                 files per thread [200]
  --file-size KiB           file size in KiB [64]
  --record-size KiB         KiB per read/write call (0: the file size, at most 1024) [0]
  --files-per-dir N         files per directory [100]
  --dirs-per-dir N          subdirectories per directory [10]
  --same-dir Y|N            all threads in shared directories [N]
  --hash-into-dirs Y|N      spread files over the directory tree [N] (see docs/compat.md)
  --prefix TEXT             text at the start of every file name
  --fsync Y|N               fsync each file after writing it [N]
  --response-times Y|N      add latency percentiles to the output [N]
  --output-json FILE        write smallfile's JSON results to FILE
  --stonewall Y|N           stop measuring when the first thread finishes [Y]
  --finish Y|N              with --stonewall Y, N stops every thread then [Y]
  --verify-read Y|N         Y: create/append/overwrite write a checkable pattern, read
                            checks every byte (mismatches: path and offset, exit 1) [N]
  --incompressible Y|N, --verbose Y|N, --log-to-stderr Y|N  accepted
  --cleanup-delay-usec-per-file N  pause after cleanup, N microseconds per file
  --record FILE             (ioscale's) also write ioscale's JSON record of the run
                            to FILE, as `ioscale run --json` does
  --print-spec              print the ioscale workload the command line becomes, and exit
  --progress M              live progress on standard error: auto (a live line when
                            it is a terminal, else nothing), bar, plain, none
                            [IOSCALE_PROGRESS]
  -h, --help                this help

Examples (seed 003: 1024 files of 4 KiB in all):
  ioscale smallfile --operation create --threads 1 --file-size 4 \\
      --files 1024 --same-dir Y --hash-into-dirs Y --prefix a1b2c3 \\
      --dirs-per-dir 1024 --files-per-dir 1024 --top /efs/smallfile/job1
  ioscale smallfile --operation create --threads 16 --file-size 4 \\
      --files 64 --same-dir N --hash-into-dirs Y --dirs-per-dir 1024 \\
      --files-per-dir 1024 --top /efs/smallfile/job2
  ioscale smallfile --operation cleanup --threads 16 --files 64 --same-dir N \\
      --dirs-per-dir 1024 --files-per-dir 1024 --top /efs/smallfile/job2

Unsupported options are refused with the nearest ioscale option; the full
mapping is in docs/compat.md. Exit codes: 0 ran clean, 1 I/O errors, 2 usage
or setup error, 130 interrupted (SIGINT, SIGTERM), 129 hung up (SIGHUP).
";

/// smallfile's parameter block: `%40s : %s` lines.
fn params_block(a: &SfArgs, spec: &MetaSpec) -> String {
    let yn = |b: bool| if b { "Y" } else { "N" };
    let rows: Vec<(&str, String)> = vec![
        ("version", SMALLFILE_VERSION.into()),
        ("hosts in test", "None".into()),
        ("launch by daemon", "False".into()),
        (
            "top test directory(s)",
            format!("['{}']", spec.target.display()),
        ),
        ("operation", a.operation.clone()),
        ("files/thread", a.files.to_string()),
        ("threads", a.threads.to_string()),
        (
            "record size (KB, 0 = maximum)",
            a.record_size_kb.to_string(),
        ),
        ("file size (KB)", a.file_size_kb.to_string()),
        ("file size distribution", "fixed".into()),
        ("files per dir", a.files_per_dir.to_string()),
        ("dirs per dir", a.dirs_per_dir.to_string()),
        ("threads share directories?", yn(a.same_dir).into()),
        ("filename prefix", a.prefix.clone()),
        ("filename suffix", String::new()),
        ("hash file number into dir.?", yn(a.hash_into_dirs).into()),
        ("fsync after modify?", yn(a.fsync).into()),
        ("incompressible?", yn(a.incompressible).into()),
        ("pause between files (microsec)", "0".into()),
        ("auto-pause?", "N".into()),
        (
            "delay after cleanup per file (microsec)",
            a.cleanup_delay_usec.to_string(),
        ),
        ("minimum directories per sec", "50".into()),
        ("total hosts", "1".into()),
        ("finish all requests?", yn(a.finish).into()),
        ("stonewall?", yn(a.stonewall).into()),
        ("measure response times?", yn(a.response_times).into()),
        ("verify read?", yn(a.verify_read.unwrap_or(false)).into()),
        ("verbose?", yn(a.verbose).into()),
        ("log to stderr?", yn(a.log_to_stderr).into()),
    ];
    rows.iter()
        .map(|(k, v)| format!("{k:>40} : {v}\n"))
        .collect()
}

/// smallfile's `Y`/`N` for a flag in its JSON parameters.
fn yn(b: bool) -> &'static str {
    if b {
        "Y"
    } else {
        "N"
    }
}

/// smallfile's JSON results document (`--output-json`): smallfile 1.1's
/// keys (`filesPerSec`, `totalhreads` as smallfile spells it,
/// `pctFilesDone`, `status` "Success", per-thread figures under
/// `thread`), counted as its text lines count them; ioscale's honest
/// aggregate under `*-wall-clock` names smallfile does not use.
fn json_doc(a: &SfArgs, rs: &report::ResultSet, host: &str) -> serde_json::Value {
    use serde_json::json;
    let Some(p) = rs.phases.last() else {
        return json!({ "params": {}, "results": { "status": "no phase completed" } });
    };
    let t = render::totals(p, a.stonewall);
    let mut threads = serde_json::Map::new();
    if let Some(f) = &p.files {
        for th in &f.threads {
            let (files, records, bytes, e) = render::counted(p, th, a.stonewall);
            let rate = |x: f64| if e > 0.0 { x / e } else { 0.0 };
            let mut o = json!({
                "elapsed": e,
                "files": files,
                "records": records,
                "filesPerSec": rate(files as f64),
            });
            if records > 0 {
                o["IOPS"] = json!(rate(records as f64));
                o["MiBps"] = json!(rate(bytes as f64 / 1048576.0));
            }
            if th.status != "ok" {
                o["status"] = json!(th.status);
            }
            threads.insert(format!("{:02}", th.thread), o);
        }
    }
    let start = bench::host::rfc3339_epoch_s(&rs.started);
    let mut results = json!({
        "elapsed": t.elapsed,
        "files": t.files,
        "records": t.records,
        "filesPerSec": t.files_per_sec,
        "thread": threads,
        "totalhreads": t.threads,
        "pctFilesDone": t.pct_files,
        "startTime": start,
        "status": if t.ok { "Success" } else { "error" },
        "date": rs.started.replace('Z', ".000Z"),
        // ioscale's honest aggregate, under names smallfile does not use:
        // all threads' work ÷ (first start to last finish).
        "wall-clock-elapsed": t.wall_s,
        "files-wall-clock": t.all_files,
        "files-per-sec-wall-clock": t.files_per_sec_wall,
        "host": host,
    });
    if t.records > 0 {
        results["IOPS"] = json!(t.iops);
        results["MiBps"] = json!(t.mib_per_sec);
        results["totalDataGB"] = json!(t.bytes as f64 / (1u64 << 30) as f64);
        results["IOPS-wall-clock"] = json!(t.iops_wall);
        results["MiBps-wall-clock"] = json!(t.mib_per_sec_wall);
    }
    json!({
        "params": {
            "host_set": "localhost",
            "launch_by_daemon": false,
            "version": SMALLFILE_VERSION,
            "top": a.top.as_ref().map(|p| p.display().to_string()),
            "operation": a.operation,
            "files_per_thread": a.files,
            "threads": a.threads,
            "file_size": a.file_size_kb,
            "file_size_distr": "fixed",
            "files_per_dir": a.files_per_dir,
            "dirs_per_dir": a.dirs_per_dir,
            "share_dir": yn(a.same_dir),
            "fname_prefix": a.prefix,
            "fname_suffix": "",
            "hash_to_dir": yn(a.hash_into_dirs),
            "fsync_after_modify": yn(a.fsync),
            "pause_between_files": 0,
            "auto_pause": false,
            "cleanup_delay_usec_per_file": a.cleanup_delay_usec,
            "finish_all_requests": yn(a.finish),
            "stonewall": yn(a.stonewall),
            "verify_read": yn(a.verify_read.unwrap_or(false)),
            "xattr_size": a.xattr_size,
            "xattr_count": a.xattr_count,
            "record_size": a.record_size_kb,
            "response_times": a.response_times,
            "ioscale_version": env!("CARGO_PKG_VERSION"),
        },
        "results": results,
    })
}

/// smallfile: `ioscale smallfile …`, or the binary started as
/// `smallfile_cli.py`. Started by mpirun or srun, each rank runs
/// `--threads` threads (rank 0 prints and writes).
pub struct Smallfile;

impl Front for Smallfile {
    const COMMAND: &'static str = "smallfile";
    const PROGRAM: &'static str = "smallfile_cli.py";
    const SHOWN_AS: &'static str = "smallfile";
    const HELP: &'static str = HELP;
    type Request = SfArgs;
    type Info = SmallfileInfo;

    const PARSE: fn(&[String]) -> Result<SfArgs, Usage> = parse;

    /// Runs the request as one rank of `coord`; rank 0 prints smallfile's
    /// lines and writes --output-json.
    fn run(call: &Call<'_>, a: SfArgs, coord: &dyn Coordinator) -> Exit {
        let root = coord.rank() == 0;
        let spec = to_raw(&a).and_then(|raw| raw.build().map_err(|e| usage(e.to_string())))?;
        if a.print_spec {
            return super::print_spec(root, &spec);
        }
        let progress = super::progress_mode(a.progress)?;
        let outputs = [
            ("--output-json", a.output_json.as_deref()),
            ("--record", a.record.as_deref()),
        ];
        crate::launch::check_outputs(coord, &outputs)?;
        if root {
            print_preamble(&a, &spec);
        }
        let stop = crate::launch::install_signals()?;
        // smallfile prints one line per thread (its files, records,
        // elapsed time and status): under MPI rank 0 receives those few
        // numbers per thread beside the node summaries, not every
        // thread's sample.
        let plan = bench::plan::Plan::single(spec.clone())
            .with_options(bench::plan::Options {
                node_summary: true,
                brief_rows: true,
                ..Default::default()
            })
            .rendered_by(bench::plan::Render::Smallfile);
        let live = super::live_plan(progress, root, &plan, coord.size());
        let outcome = super::run_plan(
            call,
            "smallfile_cli.py",
            &plan,
            live,
            coord,
            Arc::clone(&stop),
        )
        .map_err(failure)?
        .into_single();
        if !root {
            return Ok(outcome.exit_code());
        }
        let code = print_results(&a, &outcome)?;
        Ok(cleanup_delay(&a, &spec, code, &stop))
    }

    fn render(info: &SmallfileInfo, rs: &ResultSet) -> anyhow::Result<Vec<u8>> {
        Ok(SmallfileTextExporter { info: info.clone() }.render(rs)?)
    }
}

/// Rank 0's words before the run: notes, and smallfile's parameter block
/// on standard output.
fn print_preamble(a: &SfArgs, spec: &MetaSpec) {
    for n in &a.notes {
        eprintln!("smallfile: note: {n}");
    }
    if a.hash_into_dirs && spec.files > spec.files_per_dir {
        eprintln!(
            "smallfile: note: --hash-into-dirs Y: ioscale fills the directories of the tree in order \
             (--files-per-dir at a time) instead of hashing file numbers into them"
        );
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(params_block(a, spec).as_bytes());
    let _ = out.flush();
}

/// A run's error as a failure, with what to do in smallfile's terms when
/// a kept tree is in the way (chosen by the conflict, not by the text).
fn failure(e: bench::Error) -> Failure {
    let hint = match &e {
        bench::Error::KeptTree {
            conflict: spec::Conflict::Unverifiable,
            ..
        } => " (smallfile: give --verify-read Y to the create as well, so the files carry data \
             ioscale can check)",
        bench::Error::KeptTree {
            conflict: spec::Conflict::Exists(_),
            ..
        } => " (smallfile: run `--operation cleanup` with the same options first, or use another --top)",
        _ => return e.into(),
    };
    Failure::refused(format!("{e}{hint}"))
}

/// Rank 0's end of a run: errors and warnings on standard error,
/// smallfile's lines on standard output, --output-json written, notes
/// last. Returns the exit code.
fn print_results(a: &SfArgs, outcome: &bench::run::Outcome) -> Exit {
    let rs = &outcome.results;
    super::print_problems("smallfile", rs);
    let host = rs
        .host
        .hostname
        .split('.')
        .next()
        .unwrap_or_default()
        .to_string();
    let info = SmallfileInfo {
        host: host.clone(),
        response_times: a.response_times,
        stonewall: a.stonewall,
    };
    let text = Smallfile::render(&info, rs)?;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&text);
    let _ = out.flush();
    let mut code = outcome.exit_code();
    if let Some(p) = &a.output_json {
        let doc = serde_json::to_vec_pretty(&json_doc(a, rs, &host))?;
        if let Err(e) = crate::output::write_atomic(p, &doc) {
            eprintln!("smallfile: error: {e:#}");
            code = code.max(1);
        }
    }
    code = code.max(super::write_record("smallfile", a.record.as_deref(), rs));
    for n in &outcome.notes {
        eprintln!("smallfile: {n}");
    }
    Ok(code)
}

/// `--cleanup-delay-usec-per-file` after a cleanup that was not
/// interrupted: the pause is as long as asked (2^64-1 microseconds
/// included), and a SIGINT or SIGTERM ends it with 130.
fn cleanup_delay(
    a: &SfArgs,
    spec: &MetaSpec,
    code: i32,
    stop: &std::sync::atomic::AtomicBool,
) -> i32 {
    if spec.ops == [MetaOp::Cleanup] && a.cleanup_delay_usec > 0 && code != 130 {
        let us = a.cleanup_delay_usec.saturating_mul(spec.total_files());
        let d = std::time::Duration::from_micros(us);
        if safefs::sleep_or_stop(d, stop) == safefs::Waited::Stopped {
            eprintln!("smallfile: interrupted during --cleanup-delay-usec-per-file");
            return 130;
        }
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;
    use spec::FileSize;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn seed_003_line() {
        let a = parse(&argv(
            "--operation create --threads 4 --file-size 4 --files 256 --same-dir Y \
             --hash-into-dirs Y --prefix abc123 --dirs-per-dir 1024 --files-per-dir 1024 --top /efs/x",
        ))
        .unwrap();
        let s = to_raw(&a).unwrap().build().unwrap();
        assert_eq!(s.ops, vec![MetaOp::Create]);
        assert_eq!(s.total_files(), 1024);
        assert_eq!(s.file_size, FileSize::Fixed { bytes: 4096 });
        assert!(s.same_dir && s.keep);
        assert_eq!((s.files_per_dir, s.dirs_per_dir), (1024, 1024));
        assert_eq!(s.prefix, "abc123");
    }

    #[test]
    fn defaults_and_refusals() {
        let a = parse(&argv("--top=/x")).unwrap();
        let s = to_raw(&a).unwrap().build().unwrap();
        assert_eq!(s.ops, vec![MetaOp::Cleanup]);
        assert_eq!((s.threads, s.files), (2, 200));
        assert!(!s.keep);
        let e = to_raw(&parse(&argv("--operation create")).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--top"), "{e}");
        let e = parse(&argv("--host-set a,b --top /x"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--host-set") && e.contains("docs/cluster.md"),
            "{e}"
        );
        let e = parse(&argv("--file-size-distribution exponential"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--file-size MIN..MAX"), "{e}");
    }
}
