//! `ioscale smallfile …` (and the binary started as `smallfile_cli.py`):
//! smallfile_cli.py's command line.
//!
//! smallfile runs one operation per invocation (`--operation create`, then
//! `--operation read`, …, then `--operation cleanup`) on N threads with
//! `--files` files each; `--file-size` and `--record-size` are in KiB.
//! Options are read as smallfile reads them (`--name value` or
//! `--name=value`, booleans `Y`/`N`) into a [`RawMeta`] with smallfile's
//! defaults, and run by `ioscale meta`'s driver. As with smallfile, what an
//! operation makes stays for the next one: the tree is kept, except after
//! `delete`, `cleanup` and `rmdir`, which remove what remains of it. The
//! tree lives in `TOP/ioscale-meta.d` under ioscale's marker, so only names
//! ioscale made are ever removed.

use std::io::Write;
use std::path::PathBuf;

use report::Exporter;
use spec::{FileSize, MetaOp, MetaSpec, RawMeta};

use super::Usage;
use render::{SmallfileInfo, SmallfileTextExporter};

pub mod render;

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
or setup error, 130 interrupted.
";

/// What the smallfile command line asked for.
#[derive(Debug)]
struct SfArgs {
    operation: String,
    top: Option<PathBuf>,
    threads: u64,
    files: u64,
    file_size_kb: u64,
    record_size_kb: u64,
    files_per_dir: u64,
    dirs_per_dir: u64,
    same_dir: bool,
    hash_into_dirs: bool,
    prefix: String,
    fsync: bool,
    response_times: bool,
    output_json: Option<PathBuf>,
    stonewall: bool,
    finish: bool,
    verify_read: Option<bool>,
    incompressible: bool,
    xattr_size: u64,
    xattr_count: u64,
    cleanup_delay_usec: u64,
    verbose: bool,
    log_to_stderr: bool,
    print_spec: bool,
    /// `--progress MODE` (ioscale's; smallfile has no such option).
    progress: Option<crate::progress::ProgressMode>,
    help: bool,
    notes: Vec<String>,
}

impl Default for SfArgs {
    fn default() -> Self {
        SfArgs {
            operation: "cleanup".into(),
            top: None,
            threads: 2,
            files: 200,
            file_size_kb: 64,
            record_size_kb: 0,
            files_per_dir: 100,
            dirs_per_dir: 10,
            same_dir: false,
            hash_into_dirs: false,
            prefix: String::new(),
            fsync: false,
            response_times: false,
            output_json: None,
            stonewall: true,
            finish: true,
            verify_read: None,
            incompressible: false,
            xattr_size: 0,
            xattr_count: 0,
            cleanup_delay_usec: 0,
            verbose: false,
            log_to_stderr: false,
            print_spec: false,
            progress: None,
            help: false,
            notes: Vec::new(),
        }
    }
}

fn usage(msg: impl Into<String>) -> Usage {
    Usage(msg.into())
}

/// smallfile's booleans: Y/N (also yes/no, true/false, 1/0).
fn yn(name: &str, v: &str) -> Result<bool, Usage> {
    match v.to_ascii_lowercase().as_str() {
        "y" | "yes" | "t" | "true" | "1" => Ok(true),
        "n" | "no" | "f" | "false" | "0" => Ok(false),
        _ => Err(usage(format!("--{name} {v}: give Y or N"))),
    }
}

fn int(name: &str, v: &str, positive: bool) -> Result<u64, Usage> {
    let n: u64 = v.trim().parse().map_err(|_| {
        usage(format!(
            "--{name} {v}: not a whole number{}",
            if positive { " (1 or more)" } else { "" }
        ))
    })?;
    if positive && n == 0 {
        return Err(usage(format!("--{name} {v}: must be positive")));
    }
    Ok(n)
}

/// The smallfile operation as a meta operation.
fn op_of(name: &str) -> Result<MetaOp, Usage> {
    Ok(match name {
        "create" => MetaOp::Create,
        "read" => MetaOp::Read,
        "append" => MetaOp::Append,
        "overwrite" => MetaOp::Overwrite,
        "truncate-overwrite" => MetaOp::TruncateOverwrite,
        "stat" => MetaOp::Stat,
        "chmod" => MetaOp::Chmod,
        "rename" => MetaOp::Rename,
        "delete-renamed" | "delete" => MetaOp::Delete,
        "setxattr" => MetaOp::Setxattr,
        "getxattr" => MetaOp::Getxattr,
        "symlink" => MetaOp::Symlink,
        "readdir" | "ls-l" => MetaOp::Readdir,
        "mkdir" => MetaOp::Mkdir,
        "rmdir" => MetaOp::Rmdir,
        "cleanup" => MetaOp::Cleanup,
        "swift-put" | "swift-get" => {
            return Err(usage(format!(
                "--operation {name}: Swift object storage is not supported: ioscale tests POSIX file \
                 systems (nearest: --operation create / read)"
            )))
        }
        _ => {
            return Err(usage(format!(
                "--operation {name}: unknown operation (create, read, append, overwrite, \
                 truncate-overwrite, stat, chmod, rename, delete-renamed, setxattr, getxattr, symlink, \
                 readdir, ls-l, delete, mkdir, rmdir, cleanup)"
            )))
        }
    })
}

/// Options ioscale refuses, with the nearest native equivalent.
fn refused(name: &str, v: &str) -> Option<String> {
    Some(match name {
        "host-set" => format!(
            "--host-set {v}: smallfile's ssh launch on several hosts is not supported: `ioscale meta` \
             runs on one host; for several hosts run `ioscale run` as MPI ranks (mpirun/srun, see \
             docs/cluster.md), or one `ioscale smallfile` per host"
        ),
        "remote-pgm-dir" | "launch-by-daemon" | "network-sync-dir" | "host-count" | "as-host"
        | "slave" => format!(
            "--{name}: multi-host launching is not supported: ioscale runs on one host \
             (for MPI ranks see docs/cluster.md)"
        ),
        "yaml-input-file" => "--yaml-input-file: not supported: give the options on the command line \
             (or use `ioscale sweep … -- meta …` for a series)"
            .into(),
        "auto-pause" => "--auto-pause Y: not supported: ioscale runs files back to back; lower --threads \
             to lower the load"
            .into(),
        _ => return None,
    })
}

/// First stage: smallfile's syntax into [`SfArgs`].
fn parse(args: &[String]) -> Result<SfArgs, Usage> {
    let mut a = SfArgs::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        match arg.as_str() {
            "-h" | "--help" => {
                a.help = true;
                continue;
            }
            "--print-spec" => {
                a.print_spec = true;
                continue;
            }
            _ => {}
        }
        let Some(body) = arg.strip_prefix("--") else {
            return Err(usage(format!(
                "unexpected argument '{arg}': smallfile takes options as --name value (e.g. --top DIR)"
            )));
        };
        let (name, v) = match body.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None => {
                let v = args
                    .get(i)
                    .ok_or_else(|| usage(format!("--{body} needs a value")))?;
                i += 1;
                (body.to_string(), v.clone())
            }
        };
        let name = name.as_str();
        let v = v.as_str();
        match name {
            "progress" => a.progress = Some(super::progress_value(v)?),
            "operation" => {
                op_of(v)?;
                a.operation = v.to_string();
            }
            "top" => {
                if v.contains(',') {
                    return Err(usage(format!(
                        "--top {v}: several top directories are not supported: give one; to compare \
                         targets use `ioscale sweep --target A,B -- meta …`"
                    )));
                }
                a.top = Some(PathBuf::from(v));
            }
            "threads" => a.threads = int(name, v, true)?,
            "files" => a.files = int(name, v, true)?,
            "file-size" => a.file_size_kb = int(name, v, false)?,
            "record-size" => a.record_size_kb = int(name, v, false)?,
            "files-per-dir" => a.files_per_dir = int(name, v, true)?,
            "dirs-per-dir" => a.dirs_per_dir = int(name, v, true)?,
            "same-dir" => a.same_dir = yn(name, v)?,
            "hash-into-dirs" => a.hash_into_dirs = yn(name, v)?,
            "prefix" => a.prefix = v.to_string(),
            "suffix" => {
                if !v.is_empty() {
                    return Err(usage(format!(
                        "--suffix {v}: not supported: ioscale's names end in the file number; use --prefix"
                    )));
                }
            }
            "fsync" => a.fsync = yn(name, v)?,
            "response-times" => a.response_times = yn(name, v)?,
            "output-json" => a.output_json = Some(PathBuf::from(v)),
            "stonewall" => a.stonewall = yn(name, v)?,
            "finish" => a.finish = yn(name, v)?,
            "verify-read" => a.verify_read = Some(yn(name, v)?),
            "incompressible" => a.incompressible = yn(name, v)?,
            "verbose" => a.verbose = yn(name, v)?,
            "log-to-stderr" => a.log_to_stderr = yn(name, v)?,
            "permute-host-dirs" | "record-ctime-size" => {
                if yn(name, v)? {
                    return Err(usage(if name == "permute-host-dirs" {
                        "--permute-host-dirs Y: not supported: ioscale runs on one host (see docs/cluster.md)"
                            .to_string()
                    } else {
                        "--record-ctime-size Y: not supported: the nearest is --operation setxattr \
                         (one 32-byte attribute per file)"
                            .to_string()
                    }));
                }
            }
            "xattr-size" => a.xattr_size = int(name, v, false)?,
            "xattr-count" => a.xattr_count = int(name, v, false)?,
            "pause" => {
                if int(name, v, false)? > 0 {
                    return Err(usage(format!(
                        "--pause {v}: not supported: ioscale runs files back to back; to lower the load \
                         use fewer --threads (native: `ioscale meta --threads`)"
                    )));
                }
            }
            "auto-pause" => {
                if yn(name, v)? {
                    return Err(usage(refused(name, v).unwrap_or_default()));
                }
            }
            "cleanup-delay-usec-per-file" => a.cleanup_delay_usec = int(name, v, false)?,
            "file-size-distribution" => match v {
                "fixed" => {}
                _ => {
                    return Err(usage(format!(
                        "--file-size-distribution {v}: not supported (only fixed): the nearest is a \
                         uniform random size per file, `ioscale meta --file-size MIN..MAX --seed N`"
                    )))
                }
            },
            "min-dirs-per-sec" => {
                int(name, v, true)?;
                a.notes.push(
                    "--min-dirs-per-sec only sets smallfile's start-up timeouts; ioscale has none".into(),
                );
            }
            _ => {
                return Err(usage(refused(name, v).unwrap_or_else(|| {
                    format!(
                        "--{name}: not a smallfile option ioscale supports; see `ioscale smallfile --help` \
                         and docs/compat.md for the nearest native option"
                    )
                })))
            }
        }
    }
    Ok(a)
}

/// Second stage: smallfile's meaning as a metadata workload.
fn to_raw(a: &SfArgs) -> Result<RawMeta, Usage> {
    let top = a.top.clone().ok_or_else(|| {
        usage("--top DIR is required: name the directory to test (smallfile's default /var/tmp/smf is not assumed)")
    })?;
    if top.as_os_str() == "/" {
        return Err(usage(
            "--top /: cannot use the file system root, too dangerous",
        ));
    }
    let op = op_of(&a.operation)?;
    if a.record_size_kb > a.file_size_kb && a.file_size_kb != 0 {
        return Err(usage(format!(
            "--record-size {} exceeds --file-size {}: record size cannot exceed file size",
            a.record_size_kb, a.file_size_kb
        )));
    }
    if a.record_size_kb != 0 && !a.file_size_kb.is_multiple_of(a.record_size_kb) {
        return Err(usage(
            "--file-size must be a multiple of --record-size when --record-size is not 0",
        ));
    }
    if matches!(op, MetaOp::Setxattr | MetaOp::Getxattr)
        && (a.xattr_count > 1 || !matches!(a.xattr_size, 0 | 32))
    {
        return Err(usage(format!(
            "--xattr-size {} --xattr-count {}: not supported: ioscale sets one 32-byte attribute \
             (user.ioscale) per file (`ioscale meta --ops setxattr,getxattr`); use --xattr-size 32 \
             --xattr-count 1",
            a.xattr_size, a.xattr_count
        )));
    }
    // smallfile stops every thread once one has finished only when it
    // stonewalls and is told not to finish (--stonewall Y --finish N).
    let stop_at_first = a.stonewall && !a.finish;
    // Bytes per call: smallfile's record, or the whole file up to 1 MiB.
    let record = if a.record_size_kb == 0 {
        None
    } else {
        Some(a.record_size_kb.min(1024) * 1024)
    };
    Ok(RawMeta {
        target: Some(top),
        ops: vec![op],
        threads: Some(a.threads),
        files: Some(a.files),
        file_size: Some(FileSize::Fixed {
            bytes: a.file_size_kb.checked_mul(1024).ok_or_else(|| {
                usage(format!(
                    "--file-size {}: more KiB than a file can hold",
                    a.file_size_kb
                ))
            })?,
        }),
        record_size: record,
        same_dir: a.same_dir,
        files_per_dir: Some(a.files_per_dir),
        dirs_per_dir: Some(a.dirs_per_dir),
        fsync: a.fsync,
        // Writers lay down the pattern, `read` checks it; other operations
        // move no data.
        verify: a.verify_read == Some(true),
        stop_at_first,
        prefix: (!a.prefix.is_empty()).then(|| a.prefix.clone()),
        // smallfile leaves what an operation made for the next one.
        keep: !matches!(op, MetaOp::Delete | MetaOp::Cleanup | MetaOp::Rmdir),
        ..Default::default()
    })
}

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

/// smallfile's JSON results document (`--output-json`).
fn json_doc(a: &SfArgs, rs: &report::ResultSet, host: &str) -> serde_json::Value {
    use serde_json::json;
    let Some(p) = rs.phases.last() else {
        return json!({ "params": {}, "results": { "status": "no phase completed" } });
    };
    let t = render::totals(p);
    let mut threads = serde_json::Map::new();
    if let Some(f) = &p.files {
        for th in &f.threads {
            let bytes = p
                .workers
                .iter()
                .find(|w| w.worker == th.thread)
                .map_or(0, |w| w.bytes);
            let e = th.elapsed_s;
            let rate = |x: f64| if e > 0.0 { x / e } else { 0.0 };
            let mut o = json!({
                "elapsed": e,
                "files": th.files,
                "records": th.records,
                "files-per-sec": rate(th.files as f64),
            });
            if th.records > 0 {
                o["IOPS"] = json!(rate(th.records as f64));
                o["MiBps"] = json!(rate(bytes as f64 / 1048576.0));
            }
            if th.status != "ok" {
                o["status"] = json!(th.status);
            }
            threads.insert(format!("{:02}", th.thread), o);
        }
    }
    let mut results = json!({
        "elapsed": t.elapsed,
        "files": t.files,
        "records": t.records,
        "files-per-sec": t.files_per_sec,
        // ioscale's honest aggregate, under names smallfile does not use:
        // all threads' work ÷ (first start to last finish).
        "wall-clock-elapsed": t.wall_s,
        "files-per-sec-wall-clock": t.files_per_sec_wall,
        "in-thread": threads,
        "total-threads": t.threads,
        "pct-files-done": t.pct_files,
        "start-time": rs.started,
        "status": if t.ok { "ok" } else { "error" },
        "host": host,
    });
    if t.records > 0 {
        results["IOPS"] = json!(t.iops);
        results["MiBps"] = json!(t.mib_per_sec);
        results["IOPS-wall-clock"] = json!(t.iops_wall);
        results["MiBps-wall-clock"] = json!(t.mib_per_sec_wall);
        results["total-data-GB"] = json!(t.bytes as f64 / (1u64 << 30) as f64);
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
            "share_dir": a.same_dir,
            "filename_prefix": a.prefix,
            "filename_suffix": "",
            "hash_to_dir": a.hash_into_dirs,
            "fsync_after_modify": a.fsync,
            "pause_between_files": 0,
            "finish_all_requests": a.finish,
            "stonewall": a.stonewall,
            "verify_read": a.verify_read.unwrap_or(false),
            "xattr_size": a.xattr_size,
            "xattr_count": a.xattr_count,
            "record_size": a.record_size_kb,
            "response_times": a.response_times,
            "ioscale_version": env!("CARGO_PKG_VERSION"),
        },
        "results": results,
    })
}

/// Runs the smallfile front-end; started by mpirun or srun, as one MPI
/// rank of `--threads` threads each (rank 0 prints and writes).
pub fn main(args: &[String]) -> anyhow::Result<i32> {
    crate::as_ranks("smallfile", |coord| ranks_main(args, coord))
}

fn ranks_main(args: &[String], coord: &dyn coord::Coordinator) -> anyhow::Result<i32> {
    let root = coord.rank() == 0;
    let parsed = parse(args).and_then(|a| {
        if a.help {
            return Ok((a, None));
        }
        let raw = to_raw(&a)?;
        let spec = raw.build().map_err(|e| usage(e.to_string()))?;
        Ok((a, Some(spec)))
    });
    let (a, spec) = match parsed {
        Ok((a, Some(spec))) => (a, spec),
        Ok((_, None)) => {
            if root {
                print!("{HELP}");
            }
            return Ok(0);
        }
        Err(e) => {
            if root {
                eprintln!("smallfile: error: {e}");
            }
            return Ok(2);
        }
    };
    if a.print_spec {
        if root {
            println!("{}", serde_json::to_string_pretty(&spec)?);
        }
        return Ok(0);
    }
    let progress = match super::progress_mode("smallfile", a.progress, root) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let outputs = [("--output-json", a.output_json.as_deref())];
    if let Some(code) = crate::check_outputs(coord, "smallfile", &outputs) {
        return Ok(code);
    }
    let mut out = std::io::stdout().lock();
    if root {
        for n in &a.notes {
            eprintln!("smallfile: note: {n}");
        }
        if a.hash_into_dirs && spec.files > spec.files_per_dir {
            eprintln!(
                "smallfile: note: --hash-into-dirs Y: ioscale fills the directories of the tree in order \
                 (--files-per-dir at a time) instead of hashing file numbers into them"
            );
        }
        let _ = out.write_all(params_block(&a, &spec).as_bytes());
        let _ = out.flush();
    }
    let stop = crate::install_signals()?;
    let mut argv = vec!["smallfile_cli.py".to_string()];
    argv.extend(args.iter().cloned());
    let live = super::live(progress, root, spec.reps, spec.ops.len(), coord.size());
    let outcome = bench::meta::run_with(&spec, argv, std::sync::Arc::clone(&stop), coord);
    drop(live);
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            let mut msg = e.to_string();
            match &e {
                bench::Error::KeptTree {
                    conflict: spec::Conflict::Unverifiable,
                    ..
                } => msg.push_str(
                    " (smallfile: give --verify-read Y to the create as well, so the files carry data \
                     ioscale can check)",
                ),
                bench::Error::KeptTree {
                    conflict: spec::Conflict::Exists(_),
                    ..
                } => msg.push_str(
                    " (smallfile: run `--operation cleanup` with the same options first, or use another --top)",
                ),
                _ => {}
            }
            if root {
                eprintln!("smallfile: error: {msg}");
            }
            return Ok(2);
        }
    };
    if !root {
        return Ok(outcome.exit_code());
    }
    let rs = &outcome.results;
    super::print_errors("smallfile", rs);
    super::print_mismatches("smallfile", rs);
    for w in &rs.warnings {
        eprintln!("smallfile: warning: {w}");
    }
    let host = rs
        .host
        .hostname
        .split('.')
        .next()
        .unwrap_or_default()
        .to_string();
    let text = SmallfileTextExporter {
        info: SmallfileInfo {
            host: host.clone(),
            response_times: a.response_times,
        },
    }
    .render(rs)?;
    let _ = out.write_all(&text);
    let _ = out.flush();
    let mut code = outcome.exit_code();
    if let Some(p) = &a.output_json {
        let doc = serde_json::to_vec_pretty(&json_doc(&a, rs, &host))?;
        if let Err(e) = crate::output::write_atomic(p, &doc) {
            eprintln!("smallfile: error: {e:#}");
            code = code.max(1);
        }
    }
    for n in &outcome.notes {
        eprintln!("smallfile: {n}");
    }
    if spec.ops == [MetaOp::Cleanup] && a.cleanup_delay_usec > 0 && code != 130 {
        // The pause is as long as asked (2^64-1 microseconds included), and
        // a SIGINT or SIGTERM ends it with 130.
        let us = a.cleanup_delay_usec.saturating_mul(spec.total_files());
        let d = std::time::Duration::from_micros(us);
        if safefs::sleep_or_stop(d, &stop) == safefs::Waited::Stopped {
            eprintln!("smallfile: interrupted during --cleanup-delay-usec-per-file");
            code = 130;
        }
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

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
