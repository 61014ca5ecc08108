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

/// Checks every value that goes into the script.
fn check_values(args: &SlurmArgs, binary: &str) -> Result<(), String> {
    let results = args.results.as_ref().map(|p| p.display().to_string());
    for (flag, v) in [
        ("--job-name", Some(args.job_name.as_str())),
        ("--output", Some(args.output.as_str())),
        ("--time", args.time.as_deref()),
        ("--partition", args.partition.as_deref()),
        ("--account", args.account.as_deref()),
        ("--mpi", Some(args.mpi.as_str())),
        ("--launcher-args", args.launcher_args.as_deref()),
        ("--results", results.as_deref()),
        ("--binary", Some(binary)),
    ] {
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
/// checks (a TARGET need not exist here), the front-ends by their
/// `--print-spec` (io500, which has none, when the job runs).
fn check_command(command: &[String]) -> Result<(), String> {
    let sub = command.first().map(String::as_str).unwrap_or("");
    let said = |e: &dyn std::fmt::Display| format!("COMMAND `{}`: {e}", command.join(" "));
    match sub {
        "run" | "meta" | "sweep" => {
            let argv = std::iter::once("ioscale".to_string()).chain(command.iter().cloned());
            let cli = crate::cli::Cli::try_parse_from(argv).map_err(|e| {
                let text = e.to_string();
                let text = text.split("\n\n").next().unwrap_or("").trim().to_string();
                said(&text.trim_start_matches("error: "))
            })?;
            match cli.command {
                crate::cli::Command::Run(a) => {
                    let raw = a.to_raw().map_err(|e| said(&e))?;
                    raw.build().map(|_| ()).map_err(|e| said(&e))
                }
                crate::cli::Command::Meta(a) => {
                    let raw = a.to_raw().map_err(|e| said(&e))?;
                    raw.build().map(|_| ()).map_err(|e| said(&e))
                }
                crate::cli::Command::Sweep(a) => crate::sweep::check_args(&a).map_err(|e| said(&e)),
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
    let total = args.nodes.saturating_mul(args.ntasks_per_node);
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
            if let Some(&r) = v.iter().find(|&&r| r == 0 || r > total as u64) {
                return Err(format!(
                    "--ranks: {r} is outside 1..={total} (nodes × ntasks-per-node)"
                ));
            }
            (v, false)
        }
        (None, None) => (vec![total as u64], false),
    };
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
    s.push_str(&format!("IOSCALE={}\n", sh_quote(binary)));
    let results = match &args.results {
        Some(d) => sh_quote(&d.display().to_string()),
        None => "\"ioscale-results/${SLURM_JOB_ID:-local}\"".into(),
    };
    s.push_str(&format!("RESULTS={results}\n"));
    s.push_str("mkdir -p \"$RESULTS\"\n");
    s.push_str("echo \"ioscale: job ${SLURM_JOB_ID:-?} on ${SLURM_JOB_NODELIST:-$(hostname)}, records in $RESULTS\"\n\n");
    s
}

/// Runs `ioscale slurm`.
pub fn cmd_slurm(args: &SlurmArgs) -> crate::exit::Exit {
    let binary = match &args.binary {
        Some(b) => b.clone(),
        None => std::env::current_exe().context("finding this ioscale binary")?,
    };
    let text = script(args, &binary.display().to_string())
        .and_then(|t| check_command(&args.command).map(|()| t))
        .map_err(crate::exit::Failure::usage)?;
    match &args.out {
        Some(p) => {
            std::fs::write(p, &text).with_context(|| format!("writing {}", p.display()))?;
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755));
            eprintln!(
                "ioscale: wrote {}; submit it with `sbatch {}`",
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
        let e = check_command(&words(&["run"])).unwrap_err();
        assert!(e.contains("TARGET"), "{e}");
        let e = check_command(&words(&["run", "--size", "-1", "/fs"])).unwrap_err();
        assert!(e.contains("--size"), "{e}");
        let e =
            check_command(&words(&["sweep", "--threads", "0", "--", "run", "/fs"])).unwrap_err();
        assert!(e.contains("--threads"), "{e}");
        // A TARGET that does not exist here is fine: it is the cluster's.
        check_command(&words(&["run", "--op", "write", "/nonexistent-cluster-fs"])).unwrap();
        check_command(&words(&[
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
        ]))
        .unwrap();
    }
}
