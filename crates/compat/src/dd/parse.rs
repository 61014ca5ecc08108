//! dd's operands (`if=`, `of=`, `bs=`, …) and ioscale's `--jobs`, and what
//! they mean as an ioscale workload ([`to_raw`]).

use super::render::DdStatus;
use crate::Usage;
use bench::dataset::parent_of;
use spec::{parse_count, parse_size, FileNaming, Layout, Op, RawWorkload, SyncMode};
use std::path::{Path, PathBuf};

/// What the dd command line asked for, before the workload is built.
#[derive(Debug, Default, Clone)]
pub struct DdArgs {
    /// `if=`: the file read (or `/dev/zero` for a write).
    pub input: Option<String>,
    /// `of=`: the file written (or `/dev/null` for a read).
    pub output: Option<String>,
    /// `bs=`: the block size, in bytes.
    pub bs: Option<u64>,
    /// `count=`: how many blocks.
    pub count: Option<u64>,
    /// How writes reach the device: `conv=fsync`/`fdatasync` (once at the end), `oflag=sync`/`dsync` (every write).
    pub sync: Option<SyncMode>,
    /// `conv=fdatasync`: the end's sync is `fdatasync`, not `fsync`.
    pub fdatasync: bool,
    /// `conv=notrunc`: the output is not truncated before the write.
    pub notrunc: bool,
    /// `oflag=direct`: the output is written with `O_DIRECT`.
    pub odirect: bool,
    /// `iflag=direct`: the input is read with `O_DIRECT`.
    pub idirect: bool,
    /// `status=`: what dd prints to standard error.
    pub status: DdStatus,
    /// `--jobs N` (ioscale's): N copies of the transfer side by side, one thread and one file each.
    pub jobs: Option<u64>,
    /// `--rm` (ioscale's): the files written are removed after the run.
    pub rm: bool,
    /// `--print-spec` (ioscale's): print the checked workload and run nothing.
    pub print_spec: bool,
    /// `--record FILE` (ioscale's): the canonical JSON record.
    pub record: Option<PathBuf>,
    /// `--progress MODE` (ioscale's).
    pub progress: Option<crate::progress::ProgressMode>,
    /// `--help`.
    pub help: bool,
}

pub use crate::args::usage;

/// The most copies `--jobs` runs: the workload's thread limit.
pub const MAX_JOBS: u64 = 4_096;

/// `--jobs N`: a count of at least 1, at most [`MAX_JOBS`].
pub fn parse_jobs(flag: &str, v: &str) -> Result<u64, Usage> {
    match parse_count(v) {
        Ok(0) => Err(usage(format!("{flag} {v}: give at least 1 copy"))),
        // Each copy is a thread (and a file name made before any check of
        // the workload): the limit of the workload's threads.
        Ok(n) if n > MAX_JOBS => Err(usage(format!(
            "{flag} {v}: at most {MAX_JOBS} copies (one thread each)"
        ))),
        Ok(n) => Ok(n),
        Err(e) => Err(usage(format!("{flag} {v}: {e}"))),
    }
}

/// dd's size syntax: GNU's `c`, `w` and `b` multipliers, then ioscale's
/// sizes (`K`/`M`/`G` powers of 1024, `kB`/`MB`/`GB` powers of 1000).
pub fn dd_size(op: &str, v: &str) -> Result<u64, Usage> {
    let err = |e: String| usage(format!("{op}={v}: {e}"));
    let (num, mult) = match v.as_bytes().last() {
        Some(b'c') => (&v[..v.len() - 1], 1),
        Some(b'w') => (&v[..v.len() - 1], 2),
        Some(b'b') if v[..v.len() - 1].bytes().all(|c| c.is_ascii_digit()) => {
            (&v[..v.len() - 1], 512)
        }
        _ => (v, 1),
    };
    let n = parse_size(num).map_err(|e| err(e.to_string()))?;
    n.checked_mul(mult).ok_or_else(|| err("too large".into()))
}

/// One `key=value` operand.
fn apply_operand(a: &mut DdArgs, k: &str, v: &str) -> Result<(), Usage> {
    match k {
        "if" => a.input = Some(v.to_string()),
        "of" => a.output = Some(v.to_string()),
        "bs" => a.bs = Some(dd_size(k, v)?),
        "count" => {
            a.count = Some(parse_count(v).map_err(|e| usage(format!("count={v}: {e}")))?)
        }
        "conv" => apply_conv(a, v)?,
        "oflag" => apply_oflag(a, v)?,
        "iflag" => apply_iflag(a, v)?,
        "status" => {
            a.status = match v {
                "progress" => DdStatus::Default,
                "noxfer" => DdStatus::Noxfer,
                "none" => DdStatus::None,
                _ => {
                    return Err(usage(format!(
                        "status={v}: use progress, noxfer or none"
                    )))
                }
            }
        }
        "ibs" | "obs" | "cbs" => {
            return Err(usage(format!(
                "{k}=: not supported: ioscale reads and writes in one block size; use bs= (native: --xfer)"
            )))
        }
        "skip" | "seek" | "iseek" | "oseek" => {
            return Err(usage(format!(
                "{k}=: not supported: ioscale dd starts at offset 0; for IOR's segmented offsets use \
                 `ioscale ior -b -s` or `ioscale run --block --segments`"
            )))
        }
        _ => {
            return Err(usage(format!(
                "{k}=: not a dd operand ioscale supports (if, of, bs, count, conv, oflag, iflag, status); see docs/compat.md"
            )))
        }
    }
    Ok(())
}

/// `conv=`: the conversions that change what storage sees.
fn apply_conv(a: &mut DdArgs, v: &str) -> Result<(), Usage> {
    for c in v.split(',') {
        match c {
            "fsync" => a.sync = Some(SyncMode::End),
            "fdatasync" => {
                a.sync = Some(SyncMode::End);
                a.fdatasync = true;
            }
            "notrunc" => a.notrunc = true,
            _ => {
                return Err(usage(format!(
                    "conv={c}: not supported (ioscale dd knows fsync, fdatasync, notrunc; \
                     data conversions do not change what storage sees)"
                )))
            }
        }
    }
    Ok(())
}

/// `oflag=`: how the output file is opened and synced.
fn apply_oflag(a: &mut DdArgs, v: &str) -> Result<(), Usage> {
    for f in v.split(',') {
        match f {
            "sync" => a.sync = Some(SyncMode::Each),
            "dsync" => a.sync = Some(SyncMode::Dsync),
            "direct" => a.odirect = true,
            _ => {
                return Err(usage(format!(
                    "oflag={f}: not supported (ioscale dd knows sync, dsync, direct; \
                     native: `ioscale run --sync each|dsync --direct`)"
                )))
            }
        }
    }
    Ok(())
}

/// `iflag=`: how the input file is opened.
fn apply_iflag(a: &mut DdArgs, v: &str) -> Result<(), Usage> {
    for f in v.split(',') {
        match f {
            "direct" => a.idirect = true,
            "fullblock" => {}
            _ => {
                return Err(usage(format!(
                    "iflag={f}: not supported (ioscale dd knows direct and fullblock; native: `ioscale run --direct`)"
                )))
            }
        }
    }
    Ok(())
}

/// dd's operands and ioscale's options into [`DdArgs`].
pub fn parse(args: &[String]) -> Result<DdArgs, Usage> {
    let mut a = DdArgs::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        match arg.as_str() {
            "--help" | "-h" => {
                a.help = true;
                continue;
            }
            "--print-spec" => {
                a.print_spec = true;
                continue;
            }
            "--rm" => {
                a.rm = true;
                continue;
            }
            "--jobs" | "-j" => {
                let v = args
                    .get(i)
                    .ok_or_else(|| usage(format!("{arg} needs a number")))?;
                i += 1;
                a.jobs = Some(parse_jobs(arg, v)?);
                continue;
            }
            _ => {}
        }
        if let Some(v) = arg.strip_prefix("--jobs=") {
            a.jobs = Some(parse_jobs("--jobs", v)?);
            continue;
        }
        if arg == "--progress" {
            let v = args
                .get(i)
                .ok_or_else(|| usage("--progress needs auto, bar, plain or none"))?;
            i += 1;
            a.progress = Some(crate::args::progress_value(v)?);
            continue;
        }
        if arg == "--record" {
            let v = args.get(i).ok_or_else(|| usage("--record needs a file"))?;
            i += 1;
            a.record = Some(PathBuf::from(v));
            continue;
        }
        if let Some(v) = arg.strip_prefix("--record=") {
            a.record = Some(PathBuf::from(v));
            continue;
        }
        if let Some(v) = arg.strip_prefix("--progress=") {
            a.progress = Some(crate::args::progress_value(v)?);
            continue;
        }
        if arg.starts_with('-') {
            return Err(usage(format!(
                "{arg}: not an option ioscale dd knows (dd takes operands like bs=1M; ioscale adds --jobs, --rm, --progress, --record, --print-spec)"
            )));
        }
        let Some((k, v)) = arg.split_once('=') else {
            return Err(usage(format!(
                "unexpected operand '{arg}': dd operands look like key=value (if=, of=, bs=, count=, …)"
            )));
        };
        apply_operand(&mut a, k, v)?;
    }
    Ok(a)
}

/// The file of job `j` (1-based): `{}` replaced by `j`, or `-j` appended.
pub fn job_path(name: &str, j: u64, jobs: Option<u64>) -> PathBuf {
    if name.contains("{}") {
        PathBuf::from(name.replace("{}", &j.to_string()))
    } else if jobs.is_some() {
        PathBuf::from(format!("{name}-{j}"))
    } else {
        PathBuf::from(name)
    }
}

/// Whether the operand `name` is the device path `dev` (`/dev/zero`, `/dev/null`), compared as paths.
pub fn is_dev(name: &str, dev: &str) -> bool {
    Path::new(name) == Path::new(dev)
}

/// Second stage: dd's meaning as an ioscale workload.
/// Which way the data goes: `true` for a write (`if=/dev/zero of=FILE`),
/// `false` for a read (`if=FILE of=/dev/null`); a copy is refused.
fn direction(input: &str, output: &str) -> Result<bool, Usage> {
    Ok(match (is_dev(input, "/dev/zero"), is_dev(output, "/dev/null")) {
        (true, true) => {
            return Err(usage(
                "if=/dev/zero of=/dev/null moves memory, not storage: name a file in if= or of=",
            ))
        }
        (true, false) => true,
        (false, true) => false,
        (false, false) => {
            return Err(usage(format!(
                "if={input} of={output}: a copy reads and writes at once; ioscale measures one direction. \
                 Measure the write (if=/dev/zero of={output}) and the read (if={input} of=/dev/null) separately"
            )))
        }
    })
}

/// What is at one of dd's file names before the run, as the driver
/// library's storage backend found it (through the links the user's path
/// follows, as dd's open does): the parser never looks itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// Nothing is there.
    Missing,
    /// A regular file of this many bytes.
    File(u64),
    /// Something else: a directory, a device, a FIFO, a socket.
    Other,
    /// It could not be looked at; the reason, as the system said it.
    Failed(String),
}

/// Without count=, a read covers the shortest input file in whole blocks
/// of `bs` (what is left over is said in `notes`).
fn blocks_to_read(
    found: &[(&PathBuf, Found)],
    name: &str,
    bs: u64,
    notes: &mut Vec<String>,
) -> Result<u64, Usage> {
    let mut least = u64::MAX;
    for (p, f) in found {
        let len = match f {
            Found::File(len) => *len,
            Found::Missing => {
                let e = std::io::Error::from_raw_os_error(libc::ENOENT);
                return Err(usage(format!("if={}: {e}", p.display())));
            }
            Found::Failed(e) => return Err(usage(format!("if={}: {e}", p.display()))),
            Found::Other => 0,
        };
        least = least.min(len);
    }
    let n = least / bs;
    if n == 0 {
        return Err(usage(format!(
            "if={name}: shorter than one block of bs={bs} bytes; give a smaller bs="
        )));
    }
    if !least.is_multiple_of(bs) {
        notes.push(format!(
            "the last {} bytes (a partial block) are not read: ioscale reads whole blocks of bs= only",
            least % bs
        ));
    }
    Ok(n)
}

/// Second stage: dd's meaning of the operands, as an ioscale workload,
/// and the notes to say before the run. `look` says what is at each of
/// the files the operands name (the driver asks the storage backend): a
/// read without `count=` covers what its files hold, and a name that is
/// not a regular file is refused before anything runs.
pub fn to_raw(
    a: &DdArgs,
    look: &mut dyn FnMut(&Path) -> Found,
) -> Result<(RawWorkload, Vec<String>), Usage> {
    let mut notes = Vec::new();
    let input = a.input.as_deref().ok_or_else(|| {
        usage("if= is required: ioscale does not read standard input; use if=/dev/zero to measure writes")
    })?;
    let output = a.output.as_deref().ok_or_else(|| {
        usage("of= is required: ioscale does not write standard output; use of=/dev/null to measure reads")
    })?;
    let jobs = a.jobs.unwrap_or(1);
    let bs = a.bs.unwrap_or(512);
    let write = direction(input, output)?;
    let name = if write { output } else { input };
    let paths: Vec<PathBuf> = (1..=jobs).map(|j| job_path(name, j, a.jobs)).collect();
    // Devices and other special files are refused by what they are (stat),
    // not by where they live: /dev/shm is a tmpfs directory for files.
    let found: Vec<(&PathBuf, Found)> = paths.iter().map(|p| (p, look(p))).collect();
    if let Some((p, _)) = found.iter().find(|(_, f)| *f == Found::Other) {
        return Err(usage(format!(
            "{}={}: not a regular file; ioscale dd works on regular files only, never devices",
            if write { "of" } else { "if" },
            p.display()
        )));
    }
    if write {
        if a.idirect {
            notes.push(
                "iflag=direct applies to reading if=; with if=/dev/zero it changes nothing".into(),
            );
        }
    } else {
        if a.odirect || a.sync.is_some() || a.notrunc {
            notes.push(
                "conv=/oflag= apply to writing of=; with of=/dev/null they change nothing".into(),
            );
        }
    }
    let count = match a.count {
        Some(c) => c,
        None if write => return Err(usage(
            "count= is required with if=/dev/zero (it never ends); give the size as bs= x count= \
                 (native: --size)",
        )),
        None => blocks_to_read(&found, name, bs, &mut notes)?,
    };
    if a.fdatasync {
        notes.push(
            "conv=fdatasync: ioscale flushes with fsync (data and metadata) at the end, like conv=fsync".into(),
        );
    }
    let size = bs
        .checked_mul(count)
        .ok_or_else(|| usage("bs= x count= overflows 64 bits"))?;
    let target = parent_of(&paths[0]);
    Ok((
        RawWorkload {
            target: Some(target),
            ops: vec![if write { Op::Write } else { Op::Read }],
            threads: Some(jobs),
            layout: Some(Layout::PerThread),
            xfer: Some(bs),
            size: Some(size),
            direct: if write { a.odirect } else { a.idirect },
            sync: Some(if write {
                a.sync.unwrap_or(SyncMode::None)
            } else {
                SyncMode::None
            }),
            keep: !a.rm,
            naming: Some(FileNaming::Dd {
                paths,
                notrunc: a.notrunc,
                nofollow: false,
            }),
            ..Default::default()
        },
        notes,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> DdArgs {
        let v: Vec<String> = s.split_whitespace().map(String::from).collect();
        parse(&v).unwrap()
    }

    /// The files `to_raw` asked about, and its answer.
    fn raw(s: &str, found: &[(&str, Found)]) -> (Result<RawWorkload, String>, Vec<PathBuf>) {
        let mut asked = Vec::new();
        let mut look = |p: &Path| {
            asked.push(p.to_path_buf());
            found
                .iter()
                .find(|(n, _)| Path::new(n) == p)
                .map_or(Found::Missing, |(_, f)| f.clone())
        };
        let r = to_raw(&args(s), &mut look).map(|(r, _)| r).map_err(|e| e.0);
        (r, asked)
    }

    #[test]
    fn a_read_without_count_covers_the_shortest_file_in_whole_blocks() {
        let found = [
            ("/d/f-1", Found::File(3 * 4096 + 5)),
            ("/d/f-2", Found::File(5 * 4096)),
        ];
        let (r, asked) = raw("--jobs 2 if=/d/f of=/dev/null bs=4k", &found);
        assert_eq!(
            asked,
            vec![PathBuf::from("/d/f-1"), PathBuf::from("/d/f-2")]
        );
        assert_eq!(r.unwrap().size, Some(3 * 4096));
        let (r, _) = raw("if=/d/f-1 of=/dev/null bs=16k", &found);
        assert!(r.unwrap_err().contains("shorter than one block"));
    }

    #[test]
    fn what_is_not_a_regular_file_is_refused_and_a_failure_said() {
        let (r, _) = raw("if=/d/x of=/dev/null bs=4k", &[("/d/x", Found::Other)]);
        assert_eq!(
            r.unwrap_err(),
            "if=/d/x: not a regular file; ioscale dd works on regular files only, never devices"
        );
        let (r, _) = raw(
            "if=/dev/zero of=/d/x bs=4k count=1",
            &[("/d/x", Found::Other)],
        );
        assert!(r.unwrap_err().starts_with("of=/d/x: not a regular file"));
        let (r, _) = raw("if=/d/gone of=/dev/null bs=4k", &[]);
        assert_eq!(
            r.unwrap_err(),
            "if=/d/gone: No such file or directory (os error 2)"
        );
        let failed = [(
            "/d/l",
            Found::Failed("Too many levels of symbolic links".into()),
        )];
        let (r, _) = raw("if=/d/l of=/dev/null bs=4k", &failed);
        assert_eq!(r.unwrap_err(), "if=/d/l: Too many levels of symbolic links");
        // A write makes a missing file; with count= a read needs no length.
        assert!(raw("if=/dev/zero of=/d/new bs=4k count=2", &[]).0.is_ok());
        assert!(raw("if=/d/l of=/dev/null bs=4k count=2", &failed).0.is_ok());
    }
}
