//! The exit-code contract seen from outside, one bad input per command
//! family: a command that cannot run exits 2 with one `TOOL: error:` line
//! naming the flag (or file), nothing on standard output, and nothing
//! made; under mpirun the line is said once, by rank 0.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;

/// The one non-empty line of standard error, after checking exit 2 and
/// an empty standard output.
fn refusal(what: &str, out: &Output) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{what}: exit 2\n{err}");
    assert!(out.stdout.is_empty(), "{what}: stdout: {}", stdout(out));
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{what}: one line on stderr:\n{err}");
    lines[0].to_string()
}

fn entries(d: &Path) -> usize {
    std::fs::read_dir(d).unwrap().count()
}

#[test]
fn every_command_family_refuses_bad_input_with_exit_2_and_one_line() {
    let t = scratch();
    let d = s(t.path());
    let path = |name: &str| t.path().join(name).display().to_string();
    let (f, none, ini) = (path("f"), path("none.json"), path("none.ini"));
    let (json, of) = (path("no/x.json"), format!("of={}", path("f")));
    let fio_file = format!("--filename={f}");
    #[rustfmt::skip]
    let cases: &[(&[&str], &str, &str)] = &[
        (&["run", "--threads", "0", d], "ioscale: error: ", "--threads"),
        (&["run", "--size", "1m", "--json", &json, d], "ioscale: error: ", "--json"),
        (&["meta", "--files", "0", d], "ioscale: error: ", "--files"),
        (&["sweep", "--threads", "0", "--", "run", "--size", "1m", d],
         "ioscale: error: ", "--threads"),
        (&["sweep", "--threads", "1", "--", "run", "--size", "1m", d, "--resume"],
         "ioscale: error: ", "--resume"),
        (&["slurm", "--", "run", "--size", "0", d], "ioscale: error: ", "--size"),
        (&["report", &none], "ioscale: error: ", "none.json"),
        (&["compare", &none, &none], "ioscale: error: ", "none.json"),
        (&["clean", &path("nope")], "ioscale: error: ", "nope"),
        (&["ior", "-t", "0", "-o", &f], "ior: error: ", "-t is --xfer"),
        (&["dd", "bs=0", &of, "count=1"], "dd: error: ", "if="),
        (&["fio", "--name=j", "--bs=1k,2k,4k,8k", "--size=1m", &fio_file],
         "fio: error: ", "bs=1k,2k,4k,8k"),
        (&["mdtest", "-n", "0", "-d", d], "mdtest: error: ", "-n 0"),
        (&["smallfile", "--threads", "0", "--top", d], "smallfile: error: ", "--threads"),
        (&["io500", &ini], "io500: error: ", "none.ini"),
    ];
    for (args, prefix, names) in cases {
        let line = refusal(&format!("{args:?}"), &run(args));
        assert!(line.starts_with(prefix), "{args:?}: {line}");
        assert!(line.contains(names), "{args:?} names {names}: {line}");
        assert_eq!(entries(t.path()), 0, "{args:?} made nothing");
    }
}

/// clap's own refusals keep clap's layout (no second `error:` line of
/// ours) and exit 2; `--help` is not a failure.
#[test]
fn clap_refusals_exit_2_in_clap_s_words_and_help_exits_0() {
    for args in [&["run", "--no-such-flag"][..], &["io500", "--no-such-flag"]] {
        let out = run(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error: unexpected argument '--no-such-flag'"),
            "{err}"
        );
        assert!(
            !err.contains(": error:"),
            "{args:?} said once, by clap: {err}"
        );
    }
    let out = run(&["run", "--help"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("--threads"));
}

/// The binary started under a front-end's program name says its failure
/// in that name.
#[test]
fn a_symlinked_front_end_says_its_failure_in_its_own_name() {
    let t = scratch();
    let link = t.path().join("mdtest");
    std::os::unix::fs::symlink(ioscale_path(), &link).unwrap();
    let out = Command::new(&link)
        .args(["-n", "0", "-d", s(t.path())])
        .output()
        .unwrap();
    let line = refusal("mdtest symlink", &out);
    assert!(line.starts_with("mdtest: error: -n 0"), "{line}");
}

/// Under mpirun every rank exits 2 and the refusal is said once: by rank
/// 0, whether every rank found it (a bad flag) or rank 0 alone (an
/// output path, IOR's -N against the launch). Built with `--features mpi`
/// (as `mpi_cli`).
#[cfg(feature = "mpi")]
#[test]
fn under_mpirun_a_refusal_is_said_once_and_every_rank_exits_2() {
    let have_mpirun = Command::new("sh")
        .args(["-c", "command -v mpirun"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_mpirun {
        eprintln!("SKIPPED: mpirun not installed");
        return;
    }
    let t = scratch();
    let d = s(t.path());
    let json = t.path().join("no/x.json").display().to_string();
    let f = t.path().join("f").display().to_string();
    #[rustfmt::skip]
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--threads", "0", d], "ioscale: error: --threads"),
        (&["meta", "--files", "10", "--json", &json, d], "ioscale: error: --json"),
        (&["ior", "-N", "3", "-t", "64k", "-b", "64k", "-o", &f], "ior: error: -N 3"),
    ];
    for (args, said) in cases {
        let out = Command::new("timeout")
            .args([
                "-k",
                "10",
                "120",
                "mpirun",
                "--allow-run-as-root",
                "--oversubscribe",
            ])
            .args(["-np", "2"])
            .arg(ioscale_path())
            .args(*args)
            .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(
            err.matches(": error: ").count(),
            1,
            "{args:?} said once: {err}"
        );
        assert!(err.contains(said), "{args:?}: {err}");
        assert_eq!(entries(t.path()), 0, "{args:?} made nothing");
    }
}
