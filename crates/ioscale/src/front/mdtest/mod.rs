//! `ioscale mdtest …` (and the binary started as `mdtest`): mdtest's
//! command line.
//!
//! Options are read the way mdtest reads them (`-n 100`, `-n=100`,
//! `-n100`, bundled flags such as `-FC`) into a [`RawMeta`](spec::RawMeta) for `ioscale
//! meta`'s driver and engine. mdtest's iteration — directory creation,
//! stat, rename and removal, then file creation, stat, read and removal —
//! becomes the phase sequence
//! `mkdir,stat-dir,rename-dir,rmdir,create,stat,read,delete`, made with
//! mdtest's system calls (`MetaSpec::mdtest_calls`),
//! narrowed by -F/-D and -C/-T/-E/-r. mdtest's tree (depth -z, branching
//! -b, -I items per directory) is meta's `--files-per-dir`/`--dirs-per-dir`
//! tree, which numbers directories breadth-first the same way. Tasks run
//! as threads of one process (`--tasks N`, ioscale's own option, in place
//! of `mpirun -np N`). What a run does not remove (-C without -r) stays
//! for a later -T/-E/-r run, under ioscale's marker.

use std::io::Write;

use coord::Coordinator;
use report::{Exporter, ResultSet};
use spec::MetaSpec;

use super::{Call, Front, Usage};
use crate::exit::Exit;

use render::{MdtestInfo, MdtestTextExporter};

pub use compat::mdtest::{parse, render};

use parse::*;

/// The mdtest version whose command line and layout are followed.
pub const MDTEST_VERSION: &str = "4.0.0";

/// `ioscale mdtest --help`.
pub const HELP: &str = "\
ioscale mdtest: run an mdtest command line on ioscale's meta engine (tasks run as threads)

Usage: ioscale mdtest [OPTIONS]      (or a symlink named `mdtest` to the ioscale binary)

Options (mdtest's; values as `-n 100`, `-n=100` or `-n100`):
  -n N   items (files and/or directories) per task
  -I N   items per directory of the tree       -z N   tree depth [0]
  -b N   tree branching factor [1]             -L     items at the leaf level of the tree only
  -d S   the directory to test in [./out]      -u     a working directory per task
  -F     files only                            -D     directories only
  -C     create only     -T  stat only         -E     read only      -r  remove only
  -w N   bytes written to each file            -e N   bytes read from each file
  -y     fsync each file after writing         -i N   iterations [1]
  -Y     syncfs after each phase (timed)       -X, --verify-read  check every byte read (needs -e)
  -W N   stonewall: stop each phase after N seconds
  -N N   task stride: stat/read/remove task (t+N)'s items      -a POSIX  API
  -P     print the time table after the rate table   -Z  print time instead of rate
  -v, -V N  verbosity (no extra output)
  --tasks N      tasks, as threads of one process [1] (ioscale's; under mpirun or srun,
                 threads per rank)
  --print-spec   print the ioscale workload the command line becomes, and exit
  --progress M   live progress on standard error: auto (a live line when it is
                 a terminal, else nothing), bar, plain, none [IOSCALE_PROGRESS]
  -h, --help     this help

Examples:
  ioscale mdtest --tasks 8 -n 1000 -F -u -d /mnt/fs/mdtest
  ioscale mdtest --tasks 4 -I 10 -z 2 -b 3 -i 3 -P -d /mnt/fs/mdtest
  ioscale mdtest --tasks 4 -n 500 -F -C -w 4096 -d /mnt/fs/md && \\
      ioscale mdtest --tasks 4 -n 500 -F -E -r -e 4096 -d /mnt/fs/md

Unsupported mdtest options are refused with the nearest ioscale option; the
full mapping is in docs/compat.md. Exit codes: 0 ran clean, 1 I/O errors,
2 usage or setup error, 130 interrupted (SIGINT, SIGTERM), 129 hung up (SIGHUP).
";

/// mdtest's time stamps: `%m/%d/%Y %T` in local time.
fn timestamp() -> String {
    bench::host::local_now("%m/%d/%Y %H:%M:%S")
}

/// mdtest: `ioscale mdtest …`, or the binary started as `mdtest`.
pub struct Mdtest;

/// What mdtest's layout shows: the facts, and whether -P's time table
/// alone is asked for (mdtest -T without -P … prints only it).
pub struct Shown {
    /// The mdtest-only facts.
    pub info: MdtestInfo,
    /// Print the `SUMMARY time` table without the rate table.
    pub time_only: bool,
}

impl Front for Mdtest {
    const COMMAND: &'static str = "mdtest";
    const PROGRAM: &'static str = "mdtest";
    const SHOWN_AS: &'static str = "mdtest";
    const HELP: &'static str = HELP;
    type Request = MdArgs;
    type Info = Shown;

    const PARSE: fn(&[String]) -> Result<MdArgs, Usage> = parse;

    /// Runs the request as one rank of `coord`; rank 0 prints mdtest's layout.
    fn run(call: &Call<'_>, a: MdArgs, coord: &dyn Coordinator) -> Exit {
        let root = coord.rank() == 0;
        let progress = super::progress_mode(a.progress)?;
        let (spec, notes) = build(&a)?;
        if a.print_spec {
            return super::print_spec(root, &spec);
        }
        if root {
            for n in &notes {
                eprintln!("mdtest: note: {n}");
            }
        }
        let began = timestamp();
        let stop = crate::launch::install_signals()?;
        // mdtest's reports need no per-task rows: rank 0 receives one
        // merged summary per node. mdtest makes its test directory (-d,
        // one level) when it is missing; the executor does, through the
        // backend table, and removes it again when it made it.
        let plan = bench::plan::Plan::single(spec.clone())
            .with_options(bench::plan::Options {
                node_summary: true,
                make_target: true,
                ..Default::default()
            })
            .rendered_by(bench::plan::Render::Mdtest);
        let live = super::live_plan(progress, root, &plan, coord.size());
        let outcome = super::run_plan(call, "mdtest", &plan, live, coord, stop)?.into_single();
        if !root {
            return Ok(outcome.exit_code());
        }
        let info = info_for(call, &a, &spec, began, coord.size());
        print_results(&info, &outcome)
    }

    fn render(shown: &Shown, rs: &ResultSet) -> anyhow::Result<Vec<u8>> {
        if shown.time_only {
            time_only(&shown.info, rs)
        } else {
            Ok(MdtestTextExporter {
                info: shown.info.clone(),
            }
            .render(rs)?)
        }
    }
}

/// The workload of the command line, checked (a refusal names mdtest's
/// options beside ioscale's), and the notes to say before the run.
fn build(a: &MdArgs) -> Result<(MetaSpec, Vec<String>), Usage> {
    to_raw(a).and_then(|(raw, notes)| {
        raw.build().map(|s| (s, notes)).map_err(|e| {
            const NATIVE_FLAGS: &[(&str, &str)] = &[
                ("--files", "-n (or -I)"),
                ("--file-size", "-w"),
                ("--files-per-dir", "-I"),
                ("--dirs-per-dir", "-b"),
                ("--time", "-W"),
            ];
            let msg = e.to_string().replace("--reps ", "-i ");
            usage(super::in_tool_terms(
                "mdtest",
                &msg,
                &e.flags(),
                NATIVE_FLAGS,
            ))
        })
    })
}

/// mdtest's header facts of a finished run of `ranks` ranks.
fn info_for(call: &Call<'_>, a: &MdArgs, spec: &MetaSpec, began: String, ranks: u32) -> Shown {
    // mdtest 4.0's Path is the test directory (-d) itself.
    let path = spec.target.clone();
    let mut command_line = call.prog.to_string();
    for x in call.args {
        command_line.push_str(&format!(" '{x}'"));
    }
    let (files, dirs) = if !a.files_only && !a.dirs_only {
        (true, true)
    } else {
        (a.files_only, a.dirs_only)
    };
    let info = MdtestInfo {
        mdtest_version: MDTEST_VERSION.into(),
        command_line,
        began,
        finished: timestamp(),
        tasks: spec.threads * ranks,
        // The test directory, or its parent when the run made it and
        // removed it again (the same file system: a directory the run made
        // is no mount point).
        fs: super::fs_stats(&path).or_else(|| super::fs_stats(&bench::dataset::parent_of(&path))),
        path: path.display().to_string(),
        items_all: spec.total_files() * ranks as u64,
        files,
        dirs,
        iterations: spec.reps,
        rate_and_time: a.rate_and_time,
    };
    Shown {
        info,
        time_only: a.time_only && !a.rate_and_time,
    }
}

/// Rank 0's end of a run: errors and warnings on standard error, mdtest's
/// layout on standard output, notes last. Returns the exit code.
fn print_results(shown: &Shown, outcome: &bench::run::Outcome) -> Exit {
    let rs = &outcome.results;
    super::print_problems("mdtest", rs);
    let text = Mdtest::render(shown, rs)?;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&text);
    let _ = out.flush();
    for n in &outcome.notes {
        eprintln!("mdtest: {n}");
    }
    Ok(outcome.exit_code())
}

/// `-Z`: the time table in place of the rate table.
fn time_only(info: &MdtestInfo, rs: &report::ResultSet) -> anyhow::Result<Vec<u8>> {
    let both = MdtestTextExporter {
        info: MdtestInfo {
            rate_and_time: true,
            ..info.clone()
        },
    }
    .render(rs)?;
    let text = String::from_utf8_lossy(&both).into_owned();
    // Drop the rate table: from "\nSUMMARY rate" up to "\nSUMMARY time".
    let (Some(a), Some(b)) = (text.find("\nSUMMARY rate"), text.find("\nSUMMARY time")) else {
        return Ok(both);
    };
    Ok(format!("{}{}", &text[..a], &text[b..]).into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use spec::MetaOp;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn spec(s: &str) -> spec::MetaSpec {
        to_raw(&parse(&argv(s)).unwrap())
            .unwrap()
            .0
            .build()
            .unwrap()
    }

    #[test]
    fn default_iteration_is_dirs_then_files() {
        let s = spec("-n 10 -d /x");
        assert_eq!(
            s.ops,
            vec![
                MetaOp::Mkdir,
                MetaOp::StatDir,
                MetaOp::RenameDir,
                MetaOp::Rmdir,
                MetaOp::Create,
                MetaOp::Stat,
                MetaOp::Read,
                MetaOp::Delete
            ]
        );
        assert!(s.mdtest_calls);
        assert!(s.same_dir && !s.keep);
        let s = spec("-n=10 -FC -u -d /x --tasks 4");
        assert_eq!(s.ops, vec![MetaOp::Create]);
        assert!(!s.same_dir && s.keep);
        assert_eq!(s.threads, 4);
    }

    #[test]
    fn tree_shape_follows_mdtest() {
        assert_eq!(dirs_in_tree(2, 3).unwrap(), 13);
        assert_eq!(dirs_in_tree(3, 1).unwrap(), 4);
        let s = spec("-I 10 -z 2 -b 3 -d /x");
        assert_eq!((s.files, s.files_per_dir, s.dirs_per_dir), (130, 10, 3));
        let s = spec("-n 100 -z 1 -b 4 -d /x");
        assert_eq!((s.files, s.files_per_dir), (100, 20));
    }

    #[test]
    fn leaf_stride_sync_verify() {
        // -L -z 2 -b 2: 4 leaves; -n 10 rounds to 2 per leaf, mdtest's way.
        let s = spec("-n 10 -z 2 -b 2 -L -d /x");
        assert_eq!((s.files, s.files_per_dir, s.dirs_per_dir), (8, 2, 2));
        assert_eq!(s.leaf_depth, Some(2));
        assert_eq!(s.first_node(), 3);
        let s = spec("-I 3 -z 2 -b 2 -L -d /x");
        assert_eq!((s.files, s.files_per_dir), (12, 3));
        // A chain (-b 1): everything in the one leaf at depth 3.
        let s = spec("-n 7 -z 3 -L -d /x");
        assert_eq!((s.files, s.files_per_dir, s.first_node()), (7, 7, 3));
        let s = spec("-n 4 -N 1 -Y -X -w 8 -e 8 -d /x --tasks 3");
        assert_eq!(s.stride, 1);
        assert!(s.sync_phase && s.verify);
        assert_eq!(s.owner_of(MetaOp::Read, 2), 0);
        assert_eq!(s.owner_of(MetaOp::Create, 2), 2);
        // A stride that wraps to the task itself is its own items.
        let (raw, notes) = to_raw(&parse(&argv("-n 4 -N 2 -d /x --tasks 2")).unwrap()).unwrap();
        assert_eq!(raw.stride, None);
        assert!(notes[0].contains("-N 2"), "{notes:?}");
        assert!(parse(&argv("-n 4 --verify-read -d /x")).unwrap().verify);
    }

    #[test]
    fn refusals_name_the_option() {
        for (line, opt) in [("-n 5 -B", "-B"), ("-n 5 -k", "-k")] {
            let e = parse(&argv(line))
                .and_then(|a| to_raw(&a).map(|_| ()))
                .unwrap_err()
                .to_string();
            assert!(e.contains(opt), "{line}: {e}");
        }
    }
}
