//! smallfile_cli.py's command line, read the way smallfile reads it, and
//! what it means as an `ioscale meta` workload ([`to_raw`]).

use crate::Usage;
use spec::{FileSize, MetaOp, RawMeta};
use std::path::PathBuf;

/// What the smallfile command line asked for.
#[derive(Debug)]
pub struct SfArgs {
    /// `--operation`: create, read, append, stat, … or cleanup.
    pub operation: String,
    /// `--top`: the directory the files go under.
    pub top: Option<PathBuf>,
    /// `--threads`: the threads.
    pub threads: u64,
    /// `--files`: files per thread.
    pub files: u64,
    /// `--file-size`: each file's size in KiB.
    pub file_size_kb: u64,
    /// `--record-size`: the size of one read or write in KiB (0: the file size).
    pub record_size_kb: u64,
    /// `--files-per-dir`: files in each directory.
    pub files_per_dir: u64,
    /// `--dirs-per-dir`: subdirectories in each directory.
    pub dirs_per_dir: u64,
    /// `--same-dir Y`: every thread in one directory.
    pub same_dir: bool,
    /// `--hash-into-dirs Y`: files spread over the directories by a hash of their names.
    pub hash_into_dirs: bool,
    /// `--prefix`: the start of each file's name.
    pub prefix: String,
    /// `--fsync Y`: fsync each file after its write.
    pub fsync: bool,
    /// `--response-times Y`: each operation's time recorded.
    pub response_times: bool,
    /// `--output-json`: where smallfile's JSON results go.
    pub output_json: Option<PathBuf>,
    /// `--record FILE` (ioscale's): the canonical JSON record.
    pub record: Option<PathBuf>,
    /// `--stonewall Y`: a thread that finishes stops the others' measurement.
    pub stonewall: bool,
    /// `--finish Y`: threads stopped by the stonewall still do all their files.
    pub finish: bool,
    /// `--verify-read`: check the data read (`None`: smallfile's default).
    pub verify_read: Option<bool>,
    /// `--incompressible Y`: data that does not compress.
    pub incompressible: bool,
    /// `--xattr-size`: bytes per extended attribute.
    pub xattr_size: u64,
    /// `--xattr-count`: extended attributes per file.
    pub xattr_count: u64,
    /// `--cleanup-delay-usec`: a pause before cleanup, in microseconds.
    pub cleanup_delay_usec: u64,
    /// `--verbose Y`.
    pub verbose: bool,
    /// `--log-to-stderr Y`.
    pub log_to_stderr: bool,
    /// `--print-spec` (ioscale's): print the checked workload and run nothing.
    pub print_spec: bool,
    /// `--progress MODE` (ioscale's; smallfile has no such option).
    pub progress: Option<crate::progress::ProgressMode>,
    /// `--help`.
    pub help: bool,
    /// What ioscale says before the run about options it accepts but does not act on.
    pub notes: Vec<String>,
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
            record: None,
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

pub use crate::args::usage;

/// smallfile's booleans: Y/N (also yes/no, true/false, 1/0).
pub fn yn(name: &str, v: &str) -> Result<bool, Usage> {
    match v.to_ascii_lowercase().as_str() {
        "y" | "yes" | "t" | "true" | "1" => Ok(true),
        "n" | "no" | "f" | "false" | "0" => Ok(false),
        _ => Err(usage(format!("--{name} {v}: give Y or N"))),
    }
}

/// A whole-number option's value (at least 1 when `positive`), or a usage error naming `--name`.
pub fn int(name: &str, v: &str, positive: bool) -> Result<u64, Usage> {
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
pub fn op_of(name: &str) -> Result<MetaOp, Usage> {
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
pub fn refused(name: &str, v: &str) -> Option<String> {
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
/// One `--name value` option.
fn apply_option(a: &mut SfArgs, name: &str, v: &str) -> Result<(), Usage> {
    match name {
        "progress" => a.progress = Some(crate::args::progress_value(v)?),
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
        "record" => a.record = Some(PathBuf::from(v)),
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
    Ok(())
}

/// smallfile_cli.py's options into [`SfArgs`].
pub fn parse(args: &[String]) -> Result<SfArgs, Usage> {
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
        apply_option(&mut a, &name, &v)?;
    }
    Ok(a)
}

/// Second stage: smallfile's meaning as a metadata workload.
pub fn to_raw(a: &SfArgs) -> Result<RawMeta, Usage> {
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
