//! `ioscale slurm`: writes an sbatch script that runs ioscale as one job.
//!
//! Seed 002 submits `mpirun ior …` with sbatch. The script this writes does
//! the same with `ioscale run` as MPI ranks, and can sweep the number of
//! ranks (1, 2, 4 … up to nodes × tasks per node) inside the one job, one
//! JSON record per point, so a scaling curve across nodes costs one queue
//! wait. It only writes text; `sbatch` submits it.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, ValueEnum};

use crate::job::{JobCli, JobCommand};

/// Examples shown by `ioscale slurm --help`.
pub const EXAMPLES: &str = "Examples:
  # seed 002 as one job: 4 nodes × 4 tasks, one file per task, read another
  # node's data
  ioscale slurm --nodes 4 --ntasks-per-node 4 --out ior.sbatch -- \\
      run --op write,read --layout per-thread --xfer 64m --size 256m \\
      --direct --reorder --reps 5 /shared/test_dir
  sbatch ior.sbatch

  # a scaling sweep over ranks in one job: 1, 2, 4 … 16 ranks, one JSON
  # record each
  ioscale slurm --nodes 4 --ntasks-per-node 4 --ranks 1..16x2 \\
      --out scale.sbatch -- run --op write --xfer 1m --size 1g /shared/fs

  # Open MPI's mpirun instead of srun (an MPI built without Slurm's PMIx)
  ioscale slurm --nodes 2 --ntasks-per-node 8 --launcher mpirun -- \\
      run --op write,read /shared/fs

The script runs the command under srun --mpi=pmix (or mpirun) and writes each
record to ioscale-results/JOBID/ranks-N.json (meta-N.json, sweep-N.json for
`meta` and `sweep`; the ior, mdtest, dd and smallfile front-ends print their
reports into the job output).";

/// How the script starts the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Launcher {
    /// `srun --mpi=TYPE -n N` (Slurm's own launcher; needs a matching PMI).
    Srun,
    /// `mpirun -np N` (the MPI's launcher, which reads the Slurm allocation).
    Mpirun,
}

/// Flags of `ioscale slurm`.
#[derive(Debug, Args)]
pub struct SlurmArgs {
    /// Nodes to allocate (sbatch --nodes).
    #[arg(short = 'N', long, value_name = "N", default_value = "1")]
    pub nodes: u32,

    /// MPI ranks per node (sbatch --ntasks-per-node; IOR's tasks per node).
    #[arg(long, value_name = "N", default_value = "1")]
    pub ntasks_per_node: u32,

    /// Rank counts to run one after another in the job (1,2,4 or 1..16x2)
    /// [default: all, nodes × ntasks-per-node].
    #[arg(long, value_name = "LIST")]
    pub ranks: Option<String>,

    /// Node counts to run one after another in the job instead (1,2,4):
    /// each on that many nodes with --ntasks-per-node ranks on each, its
    /// record named nodes-N.json (meta-nodes-N.json, sweep-nodes-N.json).
    #[arg(long, value_name = "LIST", conflicts_with = "ranks")]
    pub node_counts: Option<String>,

    /// Wall-clock limit (sbatch --time, e.g. 01:00:00).
    #[arg(long, value_name = "TIME")]
    pub time: Option<String>,

    /// Partition (sbatch --partition).
    #[arg(long, value_name = "NAME")]
    pub partition: Option<String>,

    /// Account (sbatch --account).
    #[arg(long, value_name = "NAME")]
    pub account: Option<String>,

    /// Job name (sbatch --job-name).
    #[arg(long, value_name = "NAME", default_value = "ioscale")]
    pub job_name: String,

    /// Where the job's output goes (sbatch --output).
    #[arg(long, value_name = "PATTERN", default_value = "%x-%j.out")]
    pub output: String,

    /// How to start the ranks.
    #[arg(long, value_enum, default_value = "srun")]
    pub launcher: Launcher,

    /// PMI type for srun (srun --mpi; `srun --mpi=list` shows what this Slurm has).
    #[arg(long, value_name = "TYPE", default_value = "pmix")]
    pub mpi: String,

    /// Extra words for the launcher, e.g. "--oversubscribe" for mpirun.
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub launcher_args: Option<String>,

    /// Directory for the JSON records [default: ioscale-results/$SLURM_JOB_ID].
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,

    /// The ioscale binary the job runs [default: this one].
    #[arg(long, value_name = "PATH")]
    pub binary: Option<PathBuf>,

    /// Write the script to FILE (made executable) instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// The ioscale command the job runs, after `--` (e.g. `-- run --op write /shared/fs`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<String>,
}

/// A relative path that starts with `-` as `./-…`: the script hands the
/// binary to srun or mpirun and the results directory to `mkdir`, which
/// would read `-x` as an option of theirs (srun's `-x` excludes nodes).
fn not_an_option(path: &str) -> String {
    if path.starts_with('-') {
        format!("./{path}")
    } else {
        path.to_string()
    }
}

/// Quotes a word for bash when it needs it.
fn sh_quote(w: &str) -> String {
    let plain = !w.is_empty()
        && w.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'-' | b'_' | b'.' | b'/' | b',' | b':' | b'=' | b'+' | b'@' | b'%'
                )
        });
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

/// Refuses a value with a control character (a newline would end an
/// `#SBATCH` line and start a command of its own), naming its flag.
fn no_control(flag: &str, v: &str) -> Result<(), String> {
    match v.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!(
            "{flag} {v:?}: holds a control character ({c:?}); a job script cannot carry it safely"
        )),
        None => Ok(()),
    }
}

/// Whether `t` is a time limit sbatch reads: minutes, MM:SS, HH:MM:SS,
/// D-HH, D-HH:MM, D-HH:MM:SS, or no limit (UNLIMITED, INFINITE).
fn slurm_time(t: &str) -> bool {
    if ["unlimited", "infinite"].contains(&t.to_ascii_lowercase().as_str()) {
        return true;
    }
    let num = |p: &str| !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit());
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (Some(d), r),
        None => (None, t),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    days.is_none_or(num) && parts.len() <= 3 && parts.iter().all(|p| num(p))
}

/// Checks every value that goes into the script.
fn check_values(args: &SlurmArgs, binary: &str) -> Result<(), String> {
    let results = args.results.as_ref().map(|p| p.display().to_string());
    // The first six become `#SBATCH`/srun options; the rest are words of
    // the script's commands.
    let values = [
        ("--job-name", Some(args.job_name.as_str())),
        ("--output", Some(args.output.as_str())),
        ("--time", args.time.as_deref()),
        ("--partition", args.partition.as_deref()),
        ("--account", args.account.as_deref()),
        ("--mpi", Some(args.mpi.as_str())),
        ("--launcher-args", args.launcher_args.as_deref()),
        ("--results", results.as_deref()),
        ("--binary", Some(binary)),
    ];
    for (flag, v) in &values[..6] {
        // An empty value is none sbatch or srun reads (`--output=''`).
        if v.is_some_and(str::is_empty) {
            return Err(format!(
                "{flag}: empty value (give one, or leave the flag out)"
            ));
        }
    }
    if let Some(t) = args.time.as_deref().filter(|t| !slurm_time(t)) {
        return Err(format!(
            "--time {t:?}: not a time sbatch reads; use minutes, MM:SS, HH:MM:SS, D-HH, \
             D-HH:MM, D-HH:MM:SS or UNLIMITED"
        ));
    }
    for (flag, v) in values {
        if let Some(v) = v {
            no_control(flag, v)?;
        }
    }
    for w in &args.command {
        no_control("COMMAND", w)?;
    }
    Ok(())
}

/// Checks the command the job runs as ioscale would when the job starts,
/// so a command line that can only fail is refused now, not on the
/// cluster: `run`, `meta` and `sweep` by their own parsers and workload
/// checks (a TARGET need not exist here), `run` for the workers of each
/// rank count the job runs (`ranks` × threads, as its ranks check them:
/// `--reorder` with one thread per rank is right on 16 ranks), the
/// front-ends by their `--print-spec` (io500, which has none,
/// when the job runs).
fn check_command(command: &[String], ranks: &[u64]) -> Result<(), String> {
    let sub = command.first().map(String::as_str).unwrap_or("");
    let said = |e: &dyn std::fmt::Display| format!("COMMAND `{}`: {e}", command.join(" "));
    match sub {
        "run" | "meta" | "sweep" => {
            let argv = std::iter::once("ioscale".to_string()).chain(command.iter().cloned());
            let cli = JobCli::try_parse_from(argv).map_err(|e| {
                let text = e.to_string();
                let text = text.split("\n\n").next().unwrap_or("").trim().to_string();
                said(&text.trim_start_matches("error: "))
            })?;
            match cli.command {
                JobCommand::Run(a) => {
                    let mut raw = a.to_raw().map_err(|e| said(&e))?;
                    let threads = raw.threads.unwrap_or(1);
                    for &r in ranks {
                        raw.threads = Some(threads.saturating_mul(r));
                        raw.build().map_err(|e| said(&e))?;
                    }
                    Ok(())
                }
                JobCommand::Meta(a) => {
                    let raw = a.to_raw().map_err(|e| said(&e))?;
                    raw.build().map(|_| ()).map_err(|e| said(&e))
                }
                JobCommand::Sweep(a) => crate::sweep::check_args(&a).map_err(|e| said(&e)),
                _ => Ok(()),
            }
        }
        "ior" | "mdtest" | "dd" | "smallfile" | "fio" => {
            let exe =
                std::env::current_exe().map_err(|e| format!("finding this ioscale binary: {e}"))?;
            let out = std::process::Command::new(exe)
                .arg(sub)
                .arg("--print-spec")
                .args(&command[1..])
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|e| format!("checking COMMAND: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                let err = String::from_utf8_lossy(&out.stderr);
                Err(said(&err.lines().next().unwrap_or("refused").to_string()))
            }
        }
        _ => Ok(()),
    }
}

/// Builds the script text, or says which flag is wrong.
pub fn script(args: &SlurmArgs, binary: &str) -> Result<String, String> {
    if args.nodes == 0 || args.ntasks_per_node == 0 {
        return Err("--nodes and --ntasks-per-node must be at least 1".into());
    }
    check_values(args, binary)?;
    let points = points(args)?;
    let mut s = header(args, binary);
    let extra: String = args
        .launcher_args
        .as_deref()
        .unwrap_or("")
        .split_whitespace()
        .map(|w| format!(" {}", sh_quote(w)))
        .collect();
    let list: Vec<String> = points.values.iter().map(|r| r.to_string()).collect();
    s.push_str("status=0\n");
    s.push_str(&format!("for n in {}; do\n", list.join(" ")));
    // --json goes right after the command's name, where it is that
    // command's own flag (after the words, `sweep … -- run T --json F`
    // would hand it to the inner command, which refuses it).
    let sub = args.command[0].as_str();
    let mut words: Vec<String> = args.command.iter().map(|w| sh_quote(w)).collect();
    if points.records {
        let name = match (sub, points.by_nodes) {
            ("run", false) => "ranks".to_string(),
            ("run", true) => "nodes".to_string(),
            (_, false) => sub.to_string(),
            (_, true) => format!("{sub}-nodes"),
        };
        words.insert(1, format!("--json \"$RESULTS/{name}-$n.json\""));
    }
    let cmd = words.join(" ");
    let per = args.ntasks_per_node;
    let launch = match (args.launcher, points.by_nodes) {
        (Launcher::Srun, false) => {
            format!("srun --mpi={} --ntasks=\"$n\"{extra}", sh_quote(&args.mpi))
        }
        (Launcher::Srun, true) => format!(
            "srun --mpi={} --nodes=\"$n\" --ntasks=$((n * {per})) --ntasks-per-node={per}{extra}",
            sh_quote(&args.mpi)
        ),
        (Launcher::Mpirun, false) => format!("mpirun -np \"$n\"{extra}"),
        (Launcher::Mpirun, true) => {
            format!("mpirun -np $((n * {per})) --map-by ppr:{per}:node{extra}")
        }
    };
    let what = if points.by_nodes {
        format!("$n node(s) × {per} rank(s)")
    } else {
        "$n rank(s)".to_string()
    };
    s.push_str(&format!(
        "    echo \"ioscale: {what}\"\n    {launch} \"$IOSCALE\" {cmd} || status=$?\n"
    ));
    s.push_str("done\n");
    s.push_str("exit \"$status\"\n");
    Ok(s)
}

/// The job's points: rank counts (`--ranks`) or node counts
/// (`--node-counts`), checked against the allocation.
struct Points {
    values: Vec<u64>,
    by_nodes: bool,
    /// The script adds `--json` (a command with a record, not naming one).
    records: bool,
}

fn points(args: &SlurmArgs) -> Result<Points, String> {
    // u64: 65536 × 65536 does not fit the u32 the flags are.
    let total = u64::from(args.nodes) * u64::from(args.ntasks_per_node);
    let sub = args.command.first().map(String::as_str).unwrap_or("");
    // Every command runs as MPI ranks; the front-ends print their tools'
    // reports (into the job's output) instead of writing a JSON record.
    let records = match sub {
        "run" | "meta" | "sweep" => true,
        "ior" | "mdtest" | "dd" | "smallfile" | "fio" | "io500" => false,
        other => {
            return Err(format!(
                "COMMAND must be an ioscale command such as `run …` or `sweep …`, not '{other}'"
            ))
        }
    };
    let (values, by_nodes) = match (&args.ranks, &args.node_counts) {
        (_, Some(l)) => {
            let v = spec::parse_list(l, spec::parse_count)
                .map_err(|e| format!("--node-counts: {e}"))?;
            if let Some(&n) = v.iter().find(|&&n| n == 0 || n > u64::from(args.nodes)) {
                return Err(format!(
                    "--node-counts: {n} is outside 1..={} (--nodes)",
                    args.nodes
                ));
            }
            (v, true)
        }
        (Some(l), None) => {
            let v = spec::parse_list(l, spec::parse_count).map_err(|e| format!("--ranks: {e}"))?;
            if let Some(&r) = v.iter().find(|&&r| r == 0 || r > total) {
                return Err(format!(
                    "--ranks: {r} is outside 1..={total} (nodes × ntasks-per-node)"
                ));
            }
            (v, false)
        }
        (None, None) => (vec![total], false),
    };
    // Each count writes its record under its own name: a count given
    // twice would run twice and its second record replace the first.
    let mut seen = std::collections::BTreeSet::new();
    if let Some(&n) = values.iter().find(|&&n| !seen.insert(n)) {
        return Err(format!(
            "{}: {n} is given twice (each count runs once and writes its own record)",
            if by_nodes { "--node-counts" } else { "--ranks" }
        ));
    }
    let has_json = args
        .command
        .iter()
        .any(|w| w == "--json" || w.starts_with("--json="));
    if has_json && values.len() > 1 {
        return Err(format!(
            "the command names --json but the job runs several {} counts: leave --json out, \
             the script writes {}-N.json per point into --results",
            if by_nodes { "node" } else { "rank" },
            if by_nodes { "nodes" } else { "ranks" }
        ));
    }
    Ok(Points {
        values,
        by_nodes,
        records: records && !has_json,
    })
}

/// The script's `#SBATCH` lines and set-up, up to the loop over points.
fn header(args: &SlurmArgs, binary: &str) -> String {
    let mut s = String::new();
    s.push_str("#!/bin/bash\n");
    s.push_str(&format!(
        "# Written by `ioscale slurm` (ioscale {}). Submit with: sbatch THIS_FILE\n",
        env!("CARGO_PKG_VERSION")
    ));
    s.push_str(&format!(
        "#SBATCH --job-name={}\n",
        sh_quote(&args.job_name)
    ));
    s.push_str(&format!("#SBATCH --nodes={}\n", args.nodes));
    s.push_str(&format!(
        "#SBATCH --ntasks-per-node={}\n",
        args.ntasks_per_node
    ));
    s.push_str(&format!("#SBATCH --output={}\n", sh_quote(&args.output)));
    for (k, v) in [
        ("time", &args.time),
        ("partition", &args.partition),
        ("account", &args.account),
    ] {
        if let Some(v) = v {
            s.push_str(&format!("#SBATCH --{k}={}\n", sh_quote(v)));
        }
    }
    s.push_str("set -euo pipefail\n\n");
    s.push_str(&format!("IOSCALE={}\n", sh_quote(&not_an_option(binary))));
    let results = match &args.results {
        Some(d) => sh_quote(&not_an_option(&d.display().to_string())),
        None => "\"ioscale-results/${SLURM_JOB_ID:-local}\"".into(),
    };
    s.push_str(&format!("RESULTS={results}\n"));
    s.push_str("mkdir -p \"$RESULTS\"\n");
    s.push_str("echo \"ioscale: job ${SLURM_JOB_ID:-?} on ${SLURM_JOB_NODELIST:-$(hostname)}, records in $RESULTS\"\n\n");
    s
}

/// Makes the script at `p` executable when `p` itself is a regular file:
/// opened without following a link (never blocking on a FIFO) and
/// changed through that descriptor, so a device, a FIFO or a user's file
/// behind a link keeps its mode.
fn make_executable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(p)
    else {
        return false;
    };
    match f.metadata() {
        Ok(m) if m.file_type().is_file() => {
            let mode = m.permissions().mode() & 0o777;
            // Execute where it may be read (0644 gives 0755).
            let x = (mode & 0o444) >> 2;
            f.set_permissions(std::fs::Permissions::from_mode(mode | x))
                .is_ok()
        }
        _ => false,
    }
}

/// Runs `ioscale slurm`.
pub fn cmd_slurm(args: &SlurmArgs) -> crate::exit::Exit {
    let binary = match &args.binary {
        Some(b) => b.clone(),
        None => std::env::current_exe().context("finding this ioscale binary")?,
    };
    // A path that is not UTF-8 would be written into the script changed
    // (`display` replaces its bytes) and name another file there.
    let utf8 = |flag: &str, p: &std::path::Path| {
        p.to_str().map(str::to_string).ok_or_else(|| {
            crate::exit::Failure::usage(format!(
                "{flag} {}: not UTF-8; a job script names it only as text",
                p.display()
            ))
        })
    };
    let binary = utf8("--binary", &binary)?;
    if let Some(r) = &args.results {
        utf8("--results", r)?;
    }
    let text = script(args, &binary)
        .and_then(|t| {
            let p = points(args)?;
            let per = if p.by_nodes {
                u64::from(args.ntasks_per_node)
            } else {
                1
            };
            let ranks: Vec<u64> = p.values.iter().map(|v| v * per).collect();
            check_command(&args.command, &ranks).map(|()| t)
        })
        .map_err(crate::exit::Failure::usage)?;
    match &args.out {
        Some(p) => {
            crate::output::check_output_path("--out", p).map_err(crate::exit::Failure::refused)?;
            let w = safefs::write_output("--out", p, text.as_bytes())
                .map_err(crate::exit::Failure::refused)?;
            // `-` and /dev/stdout went to standard output: a file of that
            // name in the working directory is not the script.
            let file = matches!(w, safefs::OutputWritten::File(_));
            let x = if file && make_executable(p) {
                ""
            } else {
                " (not a file of its own, so its mode is left as it was)"
            };
            eprintln!(
                "ioscale: wrote {}{x}; submit it with `sbatch {}`",
                p.display(),
                p.display()
            );
        }
        None => {
            let _ = std::io::stdout().write_all(text.as_bytes());
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(cmd: &[&str]) -> SlurmArgs {
        SlurmArgs {
            nodes: 2,
            ntasks_per_node: 4,
            ranks: None,
            node_counts: None,
            time: Some("00:10:00".into()),
            partition: None,
            account: None,
            job_name: "ioscale".into(),
            output: "%x-%j.out".into(),
            launcher: Launcher::Srun,
            mpi: "pmix".into(),
            launcher_args: None,
            results: None,
            binary: None,
            out: None,
            command: cmd.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn run_job_uses_srun_with_pmix_and_all_ranks() {
        let s = script(
            &args(&["run", "--op", "write", "/shared fs"]),
            "/opt/ioscale",
        )
        .unwrap();
        assert!(s.contains("#SBATCH --nodes=2\n"), "{s}");
        assert!(s.contains("#SBATCH --ntasks-per-node=4\n"), "{s}");
        assert!(s.contains("#SBATCH --time=00:10:00\n"), "{s}");
        assert!(s.contains("for n in 8; do"), "{s}");
        assert!(
            s.contains("srun --mpi=pmix --ntasks=\"$n\" \"$IOSCALE\" run --json \"$RESULTS/ranks-$n.json\" --op write '/shared fs' || status"),
            "{s}"
        );
    }

    #[test]
    fn rank_sweep_and_its_limits() {
        let mut a = args(&["run", "/fs"]);
        a.ranks = Some("1..8x2".into());
        a.launcher = Launcher::Mpirun;
        let s = script(&a, "ioscale").unwrap();
        assert!(s.contains("for n in 1 2 4 8; do"), "{s}");
        assert!(s.contains("mpirun -np \"$n\" \"$IOSCALE\""), "{s}");
        a.ranks = Some("16".into());
        assert!(script(&a, "ioscale").unwrap_err().contains("outside 1..=8"));
        let mut j = args(&["run", "--json", "x.json", "/fs"]);
        j.ranks = Some("1,2".into());
        assert!(script(&j, "ioscale").unwrap_err().contains("--json"));
    }

    #[test]
    fn node_counts_run_on_that_many_nodes() {
        let mut a = args(&["run", "/fs"]);
        a.nodes = 4;
        a.node_counts = Some("1,2,4".into());
        let s = script(&a, "ioscale").unwrap();
        assert!(s.contains("#SBATCH --nodes=4\n"), "{s}");
        assert!(s.contains("for n in 1 2 4; do"), "{s}");
        assert!(
            s.contains("srun --mpi=pmix --nodes=\"$n\" --ntasks=$((n * 4)) --ntasks-per-node=4 \"$IOSCALE\" run --json \"$RESULTS/nodes-$n.json\" /fs"),
            "{s}"
        );
        a.launcher = Launcher::Mpirun;
        let s = script(&a, "ioscale").unwrap();
        assert!(
            s.contains("mpirun -np $((n * 4)) --map-by ppr:4:node \"$IOSCALE\""),
            "{s}"
        );
        let mut m = args(&["meta", "/fs"]);
        m.node_counts = Some("1,2".into());
        assert!(script(&m, "ioscale")
            .unwrap()
            .contains("meta-nodes-$n.json"));
        m.node_counts = Some("3".into());
        assert!(script(&m, "ioscale").unwrap_err().contains("outside 1..=2"));
        let mut j = args(&["run", "--json", "x.json", "/fs"]);
        j.node_counts = Some("1,2".into());
        assert!(script(&j, "ioscale").unwrap_err().contains("node counts"));
    }

    #[test]
    fn every_command_runs_as_ranks() {
        let a = args(&["sweep", "--threads", "1,2", "--", "run", "/fs"]);
        let s = script(&a, "ioscale").unwrap();
        assert!(
            s.contains(
                "\"$IOSCALE\" sweep --json \"$RESULTS/sweep-$n.json\" --threads 1,2 -- run /fs || status"
            ),
            "{s}"
        );
        let m = script(&args(&["meta", "--files", "10", "/fs"]), "ioscale").unwrap();
        assert!(m.contains("--json \"$RESULTS/meta-$n.json\""), "{m}");
        let i = script(&args(&["ior", "-w", "-o", "/fs/x"]), "ioscale").unwrap();
        assert!(i.contains("\"$IOSCALE\" ior -w -o /fs/x || status"), "{i}");
        let io5 = script(&args(&["io500", "config.ini"]), "ioscale").unwrap();
        assert!(
            io5.contains("\"$IOSCALE\" io500 config.ini || status"),
            "{io5}"
        );
        assert!(script(&args(&["rm", "-rf"]), "x").is_err());
    }

    #[test]
    fn a_binary_or_results_path_that_looks_like_an_option_stays_a_path() {
        // `--binary -x` became srun's own -x (exclude nodes), and the
        // command's words its arguments; `--results -r` became mkdir's.
        let mut a = args(&["run", "/fs"]);
        a.results = Some("-r".into());
        let s = script(&a, "-x").unwrap();
        assert!(s.contains("\nIOSCALE=./-x\n"), "{s}");
        assert!(s.contains("\nRESULTS=./-r\n"), "{s}");
        let plain = script(&args(&["run", "/fs"]), "/opt/ioscale").unwrap();
        assert!(plain.contains("\nIOSCALE=/opt/ioscale\n"), "{plain}");
    }

    #[test]
    fn control_characters_are_refused_naming_the_flag() {
        let mut a = args(&["run", "/fs"]);
        a.partition = Some("p\nrm -rf /".into());
        assert!(script(&a, "ioscale")
            .unwrap_err()
            .starts_with("--partition"));
        let mut a = args(&["run", "/fs"]);
        a.job_name = "j\rx".into();
        assert!(script(&a, "ioscale").unwrap_err().starts_with("--job-name"));
        let a = args(&["run", "/fs\n/x"]);
        assert!(script(&a, "ioscale").unwrap_err().starts_with("COMMAND"));
        assert!(script(&args(&["run", "/fs"]), "/opt/io\tscale")
            .unwrap_err()
            .starts_with("--binary"));
        // Launcher words are quoted one by one: no command substitution.
        let mut a = args(&["run", "/fs"]);
        a.launcher_args = Some("--oversubscribe $(touch x)".into());
        let s = script(&a, "ioscale").unwrap();
        assert!(s.contains("--oversubscribe '$(touch' 'x)'"), "{s}");
    }

    #[test]
    fn the_command_is_checked_before_a_script_is_written() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let e = check_command(&words(&["run"]), &[1]).unwrap_err();
        assert!(e.contains("TARGET"), "{e}");
        let e = check_command(&words(&["run", "--size", "-1", "/fs"]), &[1]).unwrap_err();
        assert!(e.contains("--size"), "{e}");
        let e = check_command(
            &words(&["sweep", "--threads", "0", "--", "run", "/fs"]),
            &[1],
        )
        .unwrap_err();
        assert!(e.contains("--threads"), "{e}");
        // A TARGET that does not exist here is fine: it is the cluster's.
        check_command(
            &words(&["run", "--op", "write", "/nonexistent-cluster-fs"]),
            &[1],
        )
        .unwrap();
        check_command(
            &words(&[
                "sweep",
                "--threads",
                "1,2",
                "--",
                "run",
                "--xfer",
                "4k",
                "--size",
                "64k",
                "/nonexistent-cluster-fs",
            ]),
            &[1],
        )
        .unwrap();
        // IOR -C over 16 ranks of one thread: each reads another's data
        // (the help's own example was refused, checked as one worker);
        // a point of one rank cannot.
        let reorder = words(&["run", "--op", "write,read", "--reorder", "/fs"]);
        check_command(&reorder, &[16]).unwrap();
        let e = check_command(&reorder, &[1, 2]).unwrap_err();
        assert!(e.contains("--reorder needs at least 2 workers"), "{e}");
    }

    /// Found by the fourth adversarial pass; each failed before its fix.
    #[test]
    fn edge_values_are_refused_naming_the_flag() {
        // 65536 × 65536 ranks wrapped to `for n in 4294967295`.
        let mut a = args(&["run", "/fs"]);
        a.nodes = 65536;
        a.ntasks_per_node = 65536;
        let s = script(&a, "ioscale").unwrap();
        assert!(s.contains("for n in 4294967296; do"), "{s}");
        a.ranks = Some("4294967296".into());
        assert!(script(&a, "ioscale").is_ok());
        // A repeated count ran twice and the second record replaced the
        // first (`ranks-1.json`).
        let mut a = args(&["run", "/fs"]);
        a.ranks = Some("1,2,1".into());
        let e = script(&a, "ioscale").unwrap_err();
        assert!(e.starts_with("--ranks") && e.contains("twice"), "{e}");
        let mut a = args(&["run", "/fs"]);
        a.node_counts = Some("2,2".into());
        let e = script(&a, "ioscale").unwrap_err();
        assert!(e.starts_with("--node-counts") && e.contains("twice"), "{e}");
        // Empty values and a --time sbatch cannot read were written as is.
        for (flag, set) in [
            (
                "--job-name",
                (|a: &mut SlurmArgs| a.job_name.clear()) as fn(&mut SlurmArgs),
            ),
            ("--output", |a| a.output.clear()),
            ("--mpi", |a| a.mpi.clear()),
            ("--partition", |a| a.partition = Some(String::new())),
            ("--account", |a| a.account = Some(String::new())),
            ("--time", |a| a.time = Some(String::new())),
            ("--time", |a| a.time = Some("1e30".into())),
            ("--time", |a| a.time = Some("-1".into())),
            ("--time", |a| a.time = Some("10:00:00:00".into())),
            ("--time", |a| a.time = Some("1-".into())),
        ] {
            let mut a = args(&["run", "/fs"]);
            set(&mut a);
            let e = script(&a, "ioscale").unwrap_err();
            assert!(e.starts_with(flag), "{flag}: {e}");
        }
        for t in [
            "0",
            "30",
            "30:00",
            "1:00:00",
            "2-0",
            "2-12:30",
            "2-12:30:05",
            "UNLIMITED",
            "infinite",
        ] {
            let mut a = args(&["run", "/fs"]);
            a.time = Some(t.into());
            assert!(script(&a, "ioscale").is_ok(), "{t}");
        }
    }
}
