//! The docs test: every fenced ```` ```sh ```` block of README.md and
//! docs/*.md runs, scaled down, with the `ioscale` this test was built
//! with, and must exit as the doc says and leave nothing behind.
//!
//! Why: a README whose first command fails, or a tutorial step that needs a
//! directory nobody made, costs a new user their first hour (issue 14).
//!
//! How a block is run:
//! - Every fenced block must say its language (` ```sh `, ` ```text `,
//!   ` ```json ` …); only `sh` blocks run.
//! - The blocks of one document run in order, each in its own `bash -e -o
//!   pipefail`, in one fresh temporary directory W per document (under
//!   target/tmp; the working directory and HOME are `W/home`, TMPDIR is
//!   `W/tmp`, XDG_DATA_HOME is `W/data`, so the results history the
//!   document's runs record is its own); shell variables a block sets (lower-case names) carry over
//!   to the next block, as they would in a terminal.
//! - `ioscale`, `ior`, `mdtest` and `smallfile_cli.py` on PATH are the
//!   binary under test.
//! - Scale-down: paths `/mnt/NAME…` become `W/mnt/NAME…` (each `W/mnt/NAME`
//!   exists beforehand, like a mount point), `cargo run --release --`
//!   becomes `ioscale`, and the literal replacements of [`SCALE_DOWN`]
//!   turn sizes, thread counts and repetitions into small ones.
//! - Attributes after `sh` in the info string: `exit=N` (the exit code the
//!   doc expects, 0 otherwise), `keeps=GLOB,GLOB` (files the doc says stay,
//!   relative to the working directory, `*` matching anything), `no-run:
//!   REASON` (cannot run here: a real cluster, sbatch, a FUSE mount …) and
//!   `issue-14: REASON` (the doc is right and the binary is not yet: the
//!   block is skipped with a note until the binary is fixed;
//!   `IOSCALE_DOCS_ISSUE14=1` runs those blocks too).
//! - After a document's last block, W may hold only what `keeps=` lists
//!   and the empty `W/mnt/NAME` mount points: an empty directory a block's
//!   `mktemp -d` made in TMPDIR is a leftover too (a newcomer's /tmp
//!   keeps it).
//!
//! `IOSCALE_DOCS_ONLY=docs/tutorial.md` runs one document.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Literal replacements applied, in this order, to the text of every block
/// that runs: the documents' sizes, thread counts and repetitions become
/// ones that run in seconds on a 2-core machine. Anything not listed runs
/// as written.
const SCALE_DOWN: &[(&str, &str)] = &[
    // thread / task / worker lists and counts
    ("1..64x2", "1,2"),
    ("1..32x2", "1,2"),
    ("1..16x2", "1,2"),
    ("1..13", "1,2"),
    ("1,4,16", "1,2"),
    ("seq 1 13", "seq 1 2"),
    ("1 2 4 8 16 32 64", "1 2"),
    ("1 2 4 8 16 32", "1 2"),
    ("--threads 16", "--threads 2"),
    ("--threads 8", "--threads 2"),
    ("--threads 4", "--threads 2"),
    ("--jobs 16", "--jobs 2"),
    ("--jobs 4 ", "--jobs 2 "),
    ("-N 16", "-N 2"),
    ("-N 8 ", "-N 2 "),
    ("-N 4 ", "-N 2 "),
    ("--tasks 4", "--tasks 2"),
    ("--threads auto:16 ", "--threads auto:2 "),
    ("--threads auto ", "--threads auto:2 "),
    ("--reps auto ", "--reps auto --max-reps 3 "),
    // repetitions
    ("--reps 10", "--reps 5"),
    ("--trim 2", "--trim 1"),
    ("-i=5", "-i=2"),
    // data sizes
    ("--total 2g", "--total 8m"),
    ("--size 2g", "--size 8m"),
    ("--size 1g", "--size 4m"),
    ("--size 256m", "--size 2m"),
    ("--size 128m", "--size 2m"),
    ("--size 64m", "--size 2m"),
    ("--size=1g", "--size=4m"),
    ("--xfer 64m", "--xfer 1m"),
    ("--xfer 1m,16m", "--xfer 1m,2m"),
    ("--segments 2048", "--segments 8"),
    ("--segments 256", "--segments 4"),
    ("2048 / n", "8 / n"),
    ("-s 512", "-s 4"),
    ("-s 2048 ", "-s 4 "),
    ("-s 256 ", "-s 4 "),
    ("bs=16M count=128", "bs=2M count=4"),
    ("count=2048", "count=8"),
    ("count=512", "count=4"),
    ("count=128", "count=4"),
    ("-b=256m", "-b=4m"),
    ("-t=64m", "-t=1m"),
    // file counts (smallfile, meta, mdtest)
    ("--files 64", "--files 8"),
    ("--files 256", "--files 8"),
    ("--files 100000", "--files 40"),
    ("--files 10000", "--files 40"),
    ("--files 5000", "--files 40"),
    ("1024", "16"),
    ("-n 256", "-n 8"),
];

/// How a `sh` block is treated.
#[derive(Debug, Clone, PartialEq)]
enum Mode {
    Run,
    NoRun(String),
    Issue14(String),
}

/// One fenced block of a document.
#[derive(Debug, Clone)]
struct Block {
    line: usize,
    lang: String,
    mode: Mode,
    exit: i32,
    keeps: Vec<String>,
    text: String,
}

/// Splits a Markdown document into its fenced blocks (` ``` ` fences,
/// possibly indented inside list items; the fence's indentation is removed
/// from the lines of the block). Errors name the line.
fn blocks(doc: &str) -> Result<Vec<Block>, String> {
    let lines: Vec<&str> = doc.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let indent = l.len() - l.trim_start().len();
        let Some(info) = l.trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let start = i + 1;
        let mut body = Vec::new();
        i += 1;
        loop {
            let Some(l) = lines.get(i) else {
                return Err(format!("line {start}: fence never closed"));
            };
            if l.trim() == "```" {
                break;
            }
            let cut = l.len() - l.trim_start().len();
            body.push(&l[cut.min(indent)..]);
            i += 1;
        }
        i += 1;
        let (lang, mode, exit, keeps) =
            parse_info(info.trim()).map_err(|e| format!("line {start}: {e}"))?;
        out.push(Block {
            line: start,
            lang,
            mode,
            exit,
            keeps,
            text: body.join("\n") + "\n",
        });
    }
    Ok(out)
}

type Info = (String, Mode, i32, Vec<String>);

/// Parses an info string: `LANG [exit=N] [keeps=G,G] [no-run: REASON |
/// issue-14: REASON]`.
fn parse_info(info: &str) -> Result<Info, String> {
    let mut words = info.splitn(2, ' ');
    let lang = words.next().unwrap_or("").to_string();
    let mut rest = words.next().unwrap_or("").trim();
    let (mut mode, mut exit, mut keeps) = (Mode::Run, 0, Vec::new());
    if lang.is_empty() {
        return Err("a fenced block without a language (```sh, ```text …)".into());
    }
    if lang != "sh" {
        return Ok((lang, mode, exit, keeps));
    }
    while !rest.is_empty() {
        let (word, tail) = rest.split_once(' ').unwrap_or((rest, ""));
        if let Some(reason) = rest.strip_prefix("no-run:") {
            mode = Mode::NoRun(nonempty(reason)?);
            break;
        } else if let Some(reason) = rest.strip_prefix("issue-14:") {
            mode = Mode::Issue14(nonempty(reason)?);
            break;
        } else if let Some(n) = word.strip_prefix("exit=") {
            exit = n
                .parse()
                .map_err(|_| format!("bad exit code in `{word}`"))?;
        } else if let Some(g) = word.strip_prefix("keeps=") {
            keeps.extend(g.split(',').filter(|s| !s.is_empty()).map(String::from));
        } else {
            return Err(format!(
                "unknown attribute `{word}` (exit=N, keeps=GLOB,…, no-run: REASON, issue-14: REASON)"
            ));
        }
        rest = tail.trim();
    }
    Ok((lang, mode, exit, keeps))
}

fn nonempty(reason: &str) -> Result<String, String> {
    let r = reason.trim();
    if r.is_empty() {
        Err("no-run: and issue-14: need a reason".into())
    } else {
        Ok(r.to_string())
    }
}

/// The block's text as the test runs it: scaled down, `/mnt/` moved into
/// the document's temporary directory.
fn scaled(text: &str, mnt: &Path) -> String {
    let mut t = text.replace("cargo run --release --", "ioscale");
    for (from, to) in SCALE_DOWN {
        t = t.replace(from, to);
    }
    t.replace("/mnt/", &format!("{}/", mnt.display()))
}

/// `*` matches any run of characters (slashes included).
fn glob(pat: &str, s: &str) -> bool {
    match pat.split_once('*') {
        None => pat == s,
        Some((head, tail)) => {
            let Some(rest) = s.strip_prefix(head) else {
                return false;
            };
            (0..=rest.len()).any(|k| rest.is_char_boundary(k) && glob(tail, &rest[k..]))
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// The names under `/mnt/` a text mentions (`/mnt/efs/dd` → `efs`).
fn mount_points(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("/mnt/") {
        let name: String = text[i + 5..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        if !name.is_empty() && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Saves the lower-case shell variables at exit, restores them at start,
/// then runs the block under `set -e -o pipefail`.
const DRIVER: &str = r#"
[ -f "$DOCS_STATE" ] && source "$DOCS_STATE"
docs_save() {
    local v
    for v in $(compgen -v | grep -E '^[a-z_][a-z0-9_]*$'); do
        declare -p "$v" 2>/dev/null
    done | grep -v '^declare -[a-zA-Z]*r' > "$DOCS_STATE.new" || true
    mv "$DOCS_STATE.new" "$DOCS_STATE"
}
trap docs_save EXIT
set -e -o pipefail
source "$1"
"#;

/// Runs one document's runnable blocks; returns its failures.
fn run_document(doc: &Path, blocks: &[Block], issue14: bool) -> Vec<String> {
    run_blocks(doc, blocks, issue14, true)
}

/// [`run_document`], checking what the blocks leave behind only when
/// `leftovers` asks.
fn run_blocks(doc: &Path, blocks: &[Block], issue14: bool, leftovers_too: bool) -> Vec<String> {
    let mut failures = Vec::new();
    // Under target/tmp: the repository's file system (O_DIRECT works there,
    // as it may not on a tmpfs /tmp).
    let w = tempfile::Builder::new()
        .prefix("ioscale-docs.")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let w = w.path();
    let (bin, home, tmp, mnt) = (w.join("bin"), w.join("home"), w.join("tmp"), w.join("mnt"));
    for d in [&bin, &home, &tmp, &mnt, &w.join("blocks")] {
        std::fs::create_dir_all(d).unwrap();
    }
    for name in ["ioscale", "ior", "mdtest", "smallfile_cli.py"] {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_ioscale"), bin.join(name)).unwrap();
    }
    std::fs::write(w.join("driver.sh"), DRIVER).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut keeps = Vec::new();
    for (k, b) in blocks.iter().enumerate() {
        let at = format!("{}:{}", rel(doc), b.line);
        match &b.mode {
            Mode::NoRun(_) => continue,
            Mode::Issue14(reason) if !issue14 => {
                eprintln!("SKIP (issue 14) {at}: {reason}");
                continue;
            }
            _ => {}
        }
        keeps.extend(b.keeps.iter().cloned());
        for m in mount_points(&b.text) {
            std::fs::create_dir_all(mnt.join(m)).unwrap();
        }
        let script = scaled(&b.text, &mnt);
        let file = w.join(format!("blocks/{k:03}.sh"));
        std::fs::write(&file, &script).unwrap();
        let out = Command::new("timeout")
            .args(["-k", "5", "300", "bash", "--noprofile", "--norc"])
            .arg(w.join("driver.sh"))
            .arg(&file)
            .current_dir(&home)
            .env("PATH", &path)
            .env("HOME", &home)
            .env("TMPDIR", &tmp)
            // The results history of the document's runs: beside W's
            // home, not in the user's data directory (and not a leftover).
            .env("XDG_DATA_HOME", w.join("data"))
            .env_remove("IOSCALE_HISTORY")
            .env_remove("IOSCALE_BASELINE")
            .env_remove("IOSCALE_THRESHOLD")
            .env("DOCS_STATE", w.join("state.sh"))
            .output()
            .unwrap();
        let code = out.status.code().unwrap_or(-1);
        eprintln!("{at}: exit {code}");
        if code != b.exit {
            failures.push(format!(
                "{at}: exit {code}, the doc expects {}\n--- ran:\n{script}--- stdout (tail):\n{}\n--- stderr (tail):\n{}",
                b.exit,
                tail(&out.stdout),
                tail(&out.stderr)
            ));
            // Later blocks build on this one: stop this document here.
            return failures;
        }
    }
    if !leftovers_too {
        return failures;
    }
    let mut left = Vec::new();
    leftovers(w, &home, &home, &mnt, &keeps, &mut left);
    leftovers(w, &tmp, &home, &mnt, &keeps, &mut left);
    leftovers(w, &mnt, &home, &mnt, &keeps, &mut left);
    if !left.is_empty() {
        failures.push(format!(
            "{}: left behind (not in any block's keeps=):\n  {}",
            rel(doc),
            left.join("\n  ")
        ));
    }
    failures
}

/// Collects what may not stay under `dir`: any file or link not matched by
/// `keeps` (relative to `home`), and any empty directory other than a mount
/// point `mnt/NAME`.
fn leftovers(
    w: &Path,
    dir: &Path,
    home: &Path,
    mnt: &Path,
    keeps: &[String],
    out: &mut Vec<String>,
) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let kept = p
            .strip_prefix(home)
            .ok()
            .map(|r| r.to_string_lossy().into_owned())
            .is_some_and(|r| keeps.iter().any(|g| glob(g, &r)));
        let md = std::fs::symlink_metadata(&p).unwrap();
        if md.is_dir() {
            let empty = std::fs::read_dir(&p).unwrap().next().is_none();
            let allowed = kept || p.parent() == Some(mnt);
            if empty && !allowed {
                out.push(format!(
                    "{}/ (empty directory)",
                    p.strip_prefix(w).unwrap().display()
                ));
            }
            leftovers(w, &p, home, mnt, keeps, out);
        } else if !kept {
            out.push(p.strip_prefix(w).unwrap().display().to_string());
        }
    }
}

fn tail(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(25)..].join("\n")
}

#[test]
fn every_fenced_block_says_its_language_and_sh_attributes_parse() {
    let mut bad = String::new();
    for doc in documents() {
        if let Err(e) = blocks(&std::fs::read_to_string(&doc).unwrap()) {
            writeln!(bad, "{}: {e}", rel(&doc)).unwrap();
        }
    }
    assert!(bad.is_empty(), "{bad}");
}

/// Shell examples are copied into terminals and scripts: no line wider
/// than 80 columns (wrap with a trailing `\`).
#[test]
fn sh_blocks_fit_in_80_columns() {
    let mut wide = String::new();
    for doc in documents() {
        for b in blocks(&std::fs::read_to_string(&doc).unwrap()).unwrap() {
            for (i, l) in b.text.lines().enumerate() {
                if b.lang == "sh" && l.chars().count() > 80 {
                    writeln!(wide, "{}:{}: {l}", rel(&doc), b.line + 1 + i).unwrap();
                }
            }
        }
    }
    assert!(wide.is_empty(), "sh lines over 80 columns:\n{wide}");
}

#[test]
fn every_sh_block_runs_scaled_down_and_leaves_nothing_behind() {
    let only = std::env::var("IOSCALE_DOCS_ONLY").ok();
    let issue14 = std::env::var_os("IOSCALE_DOCS_ISSUE14").is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    let mut ran = 0;
    for doc in documents() {
        if only.as_deref().is_some_and(|o| rel(&doc) != o) {
            continue;
        }
        let bs: Vec<Block> = blocks(&std::fs::read_to_string(&doc).unwrap())
            .unwrap()
            .into_iter()
            .filter(|b| b.lang == "sh")
            .collect();
        ran += bs.iter().filter(|b| b.mode == Mode::Run).count();
        failures.extend(run_document(&doc, &bs, issue14));
    }
    assert!(
        only.is_some() || ran >= 20,
        "only {ran} runnable sh blocks found"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_block_that_exits_otherwise_than_the_doc_says_fails_and_leftovers_are_found() {
    let doc =
        "x\n```sh\nmkdir -p /mnt/efs/d\ntouch /mnt/efs/d/f\n```\n\n```sh exit=3\nexit 3\n```\n";
    let bs = blocks(doc).unwrap();
    assert_eq!(bs.len(), 2);
    assert_eq!(bs[1].exit, 3);
    let f = run_document(Path::new("synthetic.md"), &bs, false);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].contains("mnt/efs/d/f"), "{}", f[0]);
    let wrong = "```sh\nexit 3\n```\n";
    let f = run_document(Path::new("synthetic.md"), &blocks(wrong).unwrap(), false);
    assert!(
        f.len() == 1 && f[0].contains("exit 3, the doc expects 0"),
        "{f:?}"
    );
    // Variables carry over from one block to the next; kept files are kept.
    let vars = "```sh\nname=abc\n```\n```sh keeps=abc.txt\ntouch \"$name.txt\"\n```\n";
    let f = run_document(Path::new("synthetic.md"), &blocks(vars).unwrap(), false);
    assert!(f.is_empty(), "{f:?}");
}

#[test]
fn info_strings_and_globs() {
    assert!(blocks("```\nls\n```\n").is_err());
    assert!(blocks("```sh no-run:\nls\n```\n").is_err());
    assert!(blocks("```sh frobnicate\nls\n```\n").is_err());
    let b = &blocks("  ```sh keeps=a.html,c/* no-run: needs a cluster\n  ls\n  ```\n").unwrap()[0];
    assert_eq!(b.mode, Mode::NoRun("needs a cluster".into()));
    assert_eq!(b.keeps, ["a.html", "c/*"]);
    assert_eq!(b.text, "ls\n");
    assert!(glob("c/*", "c/d/e.png") && glob("flux7-*.json", "flux7-1.json"));
    assert!(!glob("*.json", "a.html"));
}

/// Paths in the `--help` examples that stand for a user's mount, moved
/// under `/mnt/` so the runner gives each a directory of its own.
const HELP_PATHS: &[(&str, &str)] = &[
    (" /efs/", " /mnt/efs/"),
    ("=/efs/", "=/mnt/efs/"),
    ("/ebs,/efs", "/mnt/ebs,/mnt/efs"),
    (" /shared/", " /mnt/shared_"),
    ("=/shared/", "=/mnt/shared_"),
    (" /tmp\n", " /mnt/tmp\n"),
    // never the machine's own completion directory
    ("> /etc/bash_completion.d/ioscale", "> ioscale.bash"),
];

/// Example commands the runner cannot run here, by their first word: they
/// need a Slurm controller or an MPI launch of several processes.
const HELP_NOT_RUN: &[&str] = &["sbatch", "mpirun"];

/// What the `--help` examples take as given: the io500 configuration
/// files they name (small sizes and a 1-second stonewall, so each run is
/// short and INVALID), written before the first example.
const HELP_SETUP: &str = "cat > config.ini <<'EOF'
[global]
datadir = /mnt/fs/io500
resultdir = ./io500-results
[debug]
stonewall-time = 1
[ior-easy]
transferSize = 1m
blockSize = 4m
[ior-hard]
segmentCount = 50
[mdtest-easy]
n = 100
[mdtest-hard]
n = 50
EOF
cp config.ini trial.ini
cat > jobs.fio <<'EOF'
[global]
directory=/mnt/fs
size=4m
[write]
rw=write
bs=1m
EOF
";

/// The `--help` texts with examples: `ioscale --help` first, then every
/// subcommand's in the order `ioscale --help` lists them.
fn help_texts() -> Vec<(String, String)> {
    let help = |args: &[&str]| -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_ioscale"))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "ioscale {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let top = help(&["--help"]);
    let subs: Vec<String> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .filter(|c| c != "help")
        .collect();
    let mut out = vec![("ioscale --help".to_string(), top)];
    for s in subs {
        let h = help(&[&s, "--help"]);
        out.push((format!("ioscale {s} --help"), h));
    }
    out
}

/// The examples of a help text: the indented lines after its
/// `Example…:` line up to the prose after them, as a shell script.
fn help_examples(help: &str) -> String {
    let mut out = String::new();
    let mut on = false;
    for l in help.lines() {
        if l.starts_with("Example") {
            on = true;
            continue;
        }
        if on && !l.is_empty() && !l.starts_with(' ') {
            break;
        }
        if on {
            out.push_str(l.strip_prefix("  ").unwrap_or(l));
            out.push('\n');
        }
    }
    out
}

/// A help's examples as one runnable block: paths moved under `/mnt/`,
/// the commands of [`HELP_NOT_RUN`] left out (with a note).
fn help_block(what: &str, help: &str) -> Block {
    let mut text = help_examples(help);
    for (from, to) in HELP_PATHS {
        text = text.replace(from, to);
    }
    let mut kept = String::new();
    let mut skipping = false;
    for l in text.lines() {
        let first = l.split_whitespace().next().unwrap_or("");
        if !skipping && HELP_NOT_RUN.contains(&first) {
            eprintln!("{what}: not run here: {l}");
            skipping = l.ends_with('\\');
            continue;
        }
        if skipping {
            skipping = l.ends_with('\\');
            continue;
        }
        kept.push_str(l);
        kept.push('\n');
    }
    Block {
        line: 0,
        lang: "sh".into(),
        mode: Mode::Run,
        exit: 0,
        keeps: vec!["*".into()],
        text: prepared_dirs(&kept) + &kept,
    }
}

/// `mkdir -p` lines for what a user of the examples has already made: the
/// directory holding each path under `/mnt/NAME/` (`/efs/ior` for `-o
/// /efs/ior/ior.bin`, as the workshop had), and the directory each
/// smallfile `--top` names.
fn prepared_dirs(text: &str) -> String {
    let mut dirs: Vec<String> = Vec::new();
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == '=')
        .collect();
    for (i, w) in words.iter().enumerate() {
        let Some(rest) = w.strip_prefix("/mnt/") else {
            continue;
        };
        let dir = if i > 0 && words[i - 1] == "--top" {
            Some(w.to_string())
        } else {
            rest.rfind('/').map(|k| format!("/mnt/{}", &rest[..k]))
        };
        if let Some(d) = dir.filter(|d| d.matches('/').count() > 2 && !dirs.contains(d)) {
            dirs.push(d);
        }
    }
    dirs.iter().map(|d| format!("mkdir -p {d}\n")).collect()
}

/// Every example of every `--help` runs, scaled down as the documents'
/// blocks are, each help's in a temporary directory of its own, in their
/// order (a later example may read what an earlier one wrote). What they
/// leave there is not checked: the examples write records, reports and
/// kept files on purpose.
#[test]
fn every_help_example_runs_scaled_down() {
    let setup = Block {
        line: 0,
        lang: "sh".into(),
        mode: Mode::Run,
        exit: 0,
        keeps: vec!["*".into()],
        text: HELP_SETUP.into(),
    };
    let mut failures = Vec::new();
    for (what, help) in help_texts() {
        let b = help_block(&what, &help);
        assert!(!b.text.trim().is_empty(), "{what}: no example");
        failures.extend(run_blocks(
            Path::new(&what),
            &[setup.clone(), b],
            false,
            false,
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A roff page as `man -l` shows it, wide enough that no line wraps;
/// `None` (with a note) where man is not installed.
fn rendered_man(page: &Path) -> Option<String> {
    let out = Command::new("man")
        .arg("-l")
        .arg(page)
        .env("MANWIDTH", "250")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .output();
    match out {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        _ => {
            eprintln!("note: skipping: `man -l` is not available here");
            None
        }
    }
}

/// The example lines of every `--help` missing from `shown` (a rendered
/// man page), each with its help.
fn missing_examples(helps: &[(String, String)], shown: &str) -> Vec<String> {
    let lines: Vec<&str> = shown.lines().map(str::trim).collect();
    let mut missing = Vec::new();
    for (what, help) in helps {
        for l in help_examples(help)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            if !lines.contains(&l) {
                missing.push(format!("{what}: {l}"));
            }
        }
    }
    missing
}

/// The man pages show every `--help` example as `--help` does, line for
/// line (roff reflowed them: `ioscale  ior  -N  8`, a trailing `\` cut
/// off), so the examples that run above are the man page's too. Printed
/// on standard output they cite no page that is not there; written with
/// `--dir`, every page the top page cites is a file beside it.
#[test]
fn the_man_pages_show_every_help_example_line_for_line() {
    let helps = help_texts();
    let w = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let one = w.path().join("all.1");
    let out = Command::new(env!("CARGO_BIN_EXE_ioscale"))
        .arg("man")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    std::fs::write(&one, &out.stdout).unwrap();
    let roff = String::from_utf8(out.stdout).unwrap();
    assert!(
        !roff.contains("ioscale\\-run(1)") && !roff.contains("(1))"),
        "cites a page not written"
    );
    let Some(shown) = rendered_man(&one) else {
        return;
    };
    let missing = missing_examples(&helps, &shown);
    assert!(
        missing.is_empty(),
        "not shown as --help shows them:\n{}",
        missing.join("\n")
    );
    // One page per command, in a directory it makes.
    let dir = w.path().join("man1");
    let out = Command::new(env!("CARGO_BIN_EXE_ioscale"))
        .args(["man", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let top = std::fs::read_to_string(dir.join("ioscale.1")).unwrap();
    let mut all = rendered_man(&dir.join("ioscale.1")).unwrap();
    for (what, _) in helps.iter().skip(1) {
        let sub = what.split_whitespace().nth(1).unwrap();
        let page = dir.join(format!("ioscale-{sub}.1"));
        assert!(page.is_file(), "{} is not written", page.display());
        assert!(
            top.contains(&format!("\\fBioscale\\-{sub}\\fR(1)")),
            "ioscale.1 does not cite it"
        );
        all.push_str(&rendered_man(&page).unwrap());
    }
    let missing = missing_examples(&helps, &all);
    assert!(
        missing.is_empty(),
        "not shown as --help shows them:\n{}",
        missing.join("\n")
    );
    // A directory whose parent is not there is refused, nothing made.
    let out = Command::new(env!("CARGO_BIN_EXE_ioscale"))
        .args(["man", "--dir"])
        .arg(w.path().join("nope/man1"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
