//! The output corpus: what every command prints today, recorded so that a
//! restructuring (issue 24: one plan, one executor, one backend table, one
//! output path) can show it changes nothing a user sees, or says what it
//! changes.
//!
//! `tests/corpus/GROUP.cmds` lists the command lines, one per line:
//! `ID [FLAGS] COMMAND…`, with `+ COMMAND…` continuing the case above in
//! the same working directory (to make a record first and report it, keep
//! files and clean them, plant a file and be refused). `#` starts a
//! comment. A case runs in a fresh directory `$W` on a tmpfs the test
//! mounts (root), or in a temporary directory under the target directory
//! otherwise. Words are split as a shell does with quotes; `$W` (the
//! working directory), `$IN` (`tests/corpus/inputs`) and `$ROOT` are
//! expanded; `NAME=VALUE` words before the program set environment
//! variables. The program `ioscale` is the binary under test, and `ior`,
//! `mdtest`, `dd`, `smallfile_cli.py` and `fio` are symlinks to it with
//! those names (the program-name front-ends); any other program (`sh`,
//! `ln`, `mkfifo`) is run from PATH, to set a scene. The environment is
//! cleared except PATH; `HOME` is a directory of the mount, `TZ=UTC`,
//! `DIR=$W` (the fio job files' `directory=${DIR}`).
//!
//! `tests/corpus/GROUP/ID.txt` holds, per command of the case, the exit
//! code, standard output, standard error and every file the command made,
//! changed or removed under `$W` (contents of text, JSON, CSV, HTML and
//! log files; names of data files and directories). Without
//! `IOSCALE_BLESS=1` a difference fails the group's test with a unified
//! diff naming the command line; with it the files are rewritten (and
//! those of removed cases deleted). The expected files were made from the
//! code of `main` at 765f996, before issue 24 moved anything; a change
//! that alters an output blesses it again and says why in its commit.
//!
//! Masking: the outputs must be the same on any machine, under any load,
//! on any day. Three modes, chosen per command:
//! - exact (help texts, `man`, `completions`, `slurm` scripts,
//!   `--print-spec`, every command that exits 2, cases flagged `[exact]`:
//!   the reports and comparisons of the fixed records in
//!   `inputs/records`, analysis prose included, which measure nothing):
//!   only the paths, the kernel release and the version are substituted.
//! - measured (the default for a command that does I/O): a number becomes
//!   `#` unless the command line fixes it: a size (`1 MiB`, `64 KiB`,
//!   `4096 bytes`; not a rate), a count before `worker(s)`, `thread(s)`,
//!   `task(s)`, `segment(s)`, `node(s)`, `file(s)`, `item(s)`, `job(s)`,
//!   `rep(s)`, `point(s)`, `iteration(s)` (not `files/s`), a number after
//!   `rep `, `[point `, `threads=`, `thr = `, `files = `, `records = `,
//!   `total files = `, fio's `g=`, `groupid=`, `jobs=`, `iodepth=`,
//!   `depth=`, `err= `, `Starting `, a flag's value echoed in a hint
//!   (`--threads 2`), `95% CI`, names (`file.00000000`, `p99`, `dd-3`),
//!   the cells of table columns in [`STRUCTURAL_COLUMNS`] (rep, iter,
//!   Threads, File count, IOR's summary parameters …). A unit whose
//!   magnitude follows the measurement is replaced by its kind (`<t>` for
//!   ns/µs/ms/s and fio's `(nsec)`/`(usec)`, `<B/s>` for KiB/s…GB/s, a
//!   `k`/`M` on a count dropped); runs of blanks become one, as do runs of
//!   blank lines, and trailing blank lines go (column widths and padding
//!   follow the figures); fio's percentile rows are joined into one (how
//!   many fit a row follows their widths). Lines that echo the command or
//!   its settings are kept whole (`workload…`, `sweep of…`,
//!   `Command line…`, IOR's `Options:` block, `label : value` lines whose
//!   label has no digit and no `=`). In JSON, numbers become `"#"` except
//!   those of fields exact by construction ([`EXACT`]: bytes, ops,
//!   threads, xfer, counts of files and workers, IOR's parameters …); a
//!   string with a blank in it (a sentence) is masked as a line of text;
//!   keys are kept, in the file's order. In CSV the header is kept and the
//!   numeric cells are masked by their column's name. HTML is reduced to
//!   its title, headings and element ids; a fio log to its line count,
//!   field count and first line; PNG and SVG files to their names.
//! - strict (cases flagged `[strict]`: time-bounded runs — `--time`
//!   deadlines that are hit, `--stop-at-first`, smallfile's `--finish N`,
//!   fio's `time_based` and log averaging, io500's stonewall — where even
//!   the work done is a measurement): every number and size becomes `#`,
//!   a worker's `status` (finished or stopped) `<status>`, and the data
//!   files of a directory one line (`DIR/… (data files)`).
//!
//! Always substituted: the working directory, the inputs, the mount and
//! the binary's path (`$W`, `$IN`, `$ROOT`, `$BIN`); the kernel release
//! (`<kernel>`); ioscale's version (`<version>`). In measured and strict
//! outputs also: dates and clock times (`<date>`, io500's timestamped
//! directory names too); the header line (host, kernel, CPUs, RAM); the
//! target's file-system line (`<fs>`); IOR's and mdtest's `FS` and
//! `Machine` lines; smallfile's `host = ` (`<host>`); the RAM in the page
//! cache warning (`<RAM>`); a sweep's `ETA` (`<eta>`); the Outliers column
//! of a sweep table (`<outliers>`: which repetition is an outlier follows
//! the figures); in JSON the fields of [`MACHINE`] (host name, kernel,
//! CPUs, memory, mount point, file-system type, source and options, IOR's
//! capacity and inodes, `started`, process ids, fio's timestamps, peak
//! RSS, `stonewall`: the work done by the time the first worker finished)
//! as `<masked>` with their keys kept; the resource probes ([`COLLAPSE`]:
//! CPU of this and other processes, their names and pids, devices) and a
//! phase's per-interval `series` (its intervals follow the timing) as one
//! `<masked>`; the sweep analysis down to its curves' series, operation
//! and unit.
//!
//! Left out because they depend on the machine or on timing, not on the
//! code: the lines holding a sentence of [`DROP`] (the target is on tmpfs
//! — the fallback directory is not —; the stonewall line, present or not
//! as the workers finish together; more workers than CPUs; a sweep's
//! page-cache warnings decided by the device's counters, which tmpfs has
//! not; the non-root
//! fallback of `--drop-caches`; io_uring features an older kernel lacks;
//! fio's device statistics; a CPU-bound verdict), fio's `disk_util` and the disk fields of its
//! terse line (only on a block device), fio's latency bucket lines
//! (`lat (usec) : 2=91.21%…`: which buckets appear follows the
//! latencies), the sweep's and report's analysis prose after `Analysis`
//! (its verdicts follow the measured curve), smallfile's rate lines (it
//! prints a warning instead when the test took under a millisecond), and
//! a stream whose every line was left out.
//!
//! What the record assumes of the machine: Linux with io_uring, tmpfs
//! taking O_DIRECT (Linux 6.6 or later), root for the tmpfs mount and
//! `--drop-caches` (without root the cases run on the repository's disk;
//! `IOSCALE_CORPUS_NO_TMPFS=1` does so as root, to check that the record
//! holds there too).

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Program names that are symlinks to the binary (the front-ends that
/// answer to their tool's name).
const FRONT_NAMES: &[&str] = &["ior", "mdtest", "dd", "smallfile_cli.py", "fio"];

/// A command that has not ended after this long fails the test.
const TIMEOUT: Duration = Duration::from_secs(180);

/// JSON fields whose numbers are exact by construction: sizes and counts
/// the command line fixes (kept in the measured mode).
const EXACT: &[&str] = &[
    "schema",
    "threads",
    "bytes",
    "ops",
    "read_bytes",
    "write_bytes",
    "rep",
    "reps",
    "worker",
    "workers",
    "xfer",
    "block",
    "segments",
    "iodepth",
    "errors",
    "n",
    "N",
    "files",
    "points_total",
    "rwmix_read",
    "seed",
    "index",
    "thread",
    "records",
    "requested",
    "file_count",
    "bytes_per_thread",
    "ops_total",
    "trim",
    "ranks",
    "threads_per_rank",
    "depth",
    "phase",
    "rank",
    "nodes",
    "tasks_per_node",
    "checked_bytes",
    "bad_bytes",
    "offset",
    "reorder_offset",
    "groupid",
    "error",
    "total_ios",
    "io_bytes",
    "io_kbytes",
    "short_ios",
    "drop_ios",
    "file_size",
    "record_size",
    "files_per_dir",
    "dirs_per_dir",
    "stride",
    "leaf_depth",
    "size",
    "tasks",
    "items",
    "numjobs",
    "bs",
    // IOR's summary (-O summaryFormat=JSON): its parameters.
    "blockSize",
    "transferSize",
    "numTasks",
    "segmentCount",
    "repetitions",
    "filePerProc",
    "tasksPerNode",
    "reorderTasks",
    "uniqueDir",
    "keepFile",
    "readFile",
    "writeFile",
    "randomOffset",
    "multiFile",
    "useExistingTestFile",
    "TestID",
    "testID",
    "ReferenceNumber",
    "refnum",
];

/// JSON fields that depend on the machine or the clock: their leaves
/// become `<masked>` (the keys of an object stay).
const MACHINE: &[&str] = &[
    "host",
    "hostname",
    "kernel",
    "cpus",
    "mem_bytes",
    "mount_point",
    "fs_type",
    "fs_source",
    "mount_options",
    "started",
    "finished",
    "pid",
    "time",
    "timestamp",
    "timestamp_ms",
    "peak_rss_bytes",
    "stonewall",
    "Machine",
    "platform",
    // IOR's file-system figures.
    "Capacity",
    "Inodes",
    "Used Capacity",
    "Used Inodes",
    "rank_hosts",
    "hosts",
];

/// JSON fields replaced whole: resource probes (what this and other
/// processes did, devices), whose very keys depend on the machine.
// fio's json+ `bins` are named by the latencies seen, so which names
// appear depends on the run: the object is collapsed.
const COLLAPSE: &[&str] = &["resources", "probes", "top_other", "bins"];

/// JSON fields left out: present or not depending on the machine (fio's
/// `disk_util`, only on a block device).
const LEFT_OUT_KEYS: &[&str] = &["disk_util"];

/// Sentences that depend on the machine or its load, not on the code:
/// lines holding them are left out of measured outputs.
const DROP: &[&str] = &[
    "the target is on tmpfs",
    // The same, naming the target (issue 26).
    "is on tmpfs: memory, not storage",
    // More workers than 4 per CPU: follows the CPU count.
    "take turns; the aggregate rate",
    // The same, said only when the CPU figures show the CPUs full.
    "CPUs took turns: in the",
    // A sweep's page-cache warnings decided by the device's counters
    // (the repository's disk; tmpfs has none, and keeps the guess).
    "the read phases were served",
    "the write phases left their data",
    "and was served from the page and inode caches",
    // Not root: --drop-caches falls back to fadvise.
    "--drop-caches: cannot write /proc/sys/vm/drop_caches",
    // io_uring set-up features an older kernel lacks.
    "not supported by this kernel",
    // fio's device statistics: the device under the target.
    "Disk stats (read/write):",
    ": ios=",
    // The stonewall line: present or not as the workers finish together.
    "(work done by the time the first",
    // The analysis' verdict on CPU (follows the load), wherever it shows.
    "CPU-bound",
    // smallfile's warning when its threads counted under 70% of the files
    // by the first one's finish: present or not as they finish together.
    "not enough total files processed before",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Exact,
    Measured,
    Strict,
}

/// One case: its id, flags and command lines (with their line numbers).
struct Case {
    id: String,
    mode: Option<Mode>,
    lines: Vec<(usize, String)>,
}

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn bless() -> bool {
    std::env::var_os("IOSCALE_BLESS").is_some_and(|v| v == "1")
}

/// Reads `GROUP.cmds` (see the module comment for its format).
fn parse_cases(group: &str) -> Vec<Case> {
    let path = corpus_dir().join(format!("{group}.cmds"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut cases: Vec<Case> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix("+ ") {
            let case = cases
                .last_mut()
                .unwrap_or_else(|| panic!("{group}.cmds:{}: `+` with no case", n + 1));
            case.lines.push((n + 1, rest.trim().to_string()));
            continue;
        }
        let (id, mut rest) = line.split_once(' ').unwrap_or((line, ""));
        assert!(
            !id.is_empty()
                && id
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{group}.cmds:{}: the id `{id}` must be lower-case letters, digits and -",
            n + 1
        );
        assert!(
            cases.iter().all(|c| c.id != id),
            "{group}.cmds:{}: id `{id}` used twice",
            n + 1
        );
        let mut mode = None;
        rest = rest.trim();
        if let Some(r) = rest.strip_prefix('[') {
            let (flag, r) = r.split_once(']').expect("a closing ]");
            mode = Some(match flag {
                "exact" => Mode::Exact,
                "strict" => Mode::Strict,
                "measured" => Mode::Measured,
                other => panic!("{group}.cmds:{}: unknown flag [{other}]", n + 1),
            });
            rest = r.trim();
        }
        assert!(!rest.is_empty(), "{group}.cmds:{}: no command", n + 1);
        cases.push(Case {
            id: id.to_string(),
            mode,
            lines: vec![(n + 1, rest.to_string())],
        });
    }
    cases
}

/// Splits a command line into words as a shell does with quotes
/// (`'…'` literal, `"…"` with `\` escapes, `\` outside quotes).
fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    cur.push(d);
                }
            }
            '"' => {
                in_word = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => cur.extend(chars.next()),
                        _ => cur.push(d),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.extend(chars.next());
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// Where a group's cases run, and what is substituted back in outputs.
struct Place {
    root: PathBuf,
    bin_dir: PathBuf,
    inputs: PathBuf,
    _mount: Option<common::Mount>,
    _scratch: Option<tempfile::TempDir>,
}

impl Place {
    fn new(group: &str) -> Place {
        let mount = match std::env::var_os("IOSCALE_CORPUS_NO_TMPFS") {
            Some(_) => None,
            None => common::tmpfs("size=512m"),
        };
        let (root, mount, scratch) = match mount {
            Some(m) => (m.path().to_path_buf(), Some(m), None),
            None => {
                let s = common::scratch();
                (s.path().to_path_buf(), None, Some(s))
            }
        };
        let root = root.canonicalize().unwrap();
        let bin_dir = root.join("bin");
        std::fs::create_dir(&bin_dir).unwrap();
        for name in FRONT_NAMES {
            std::os::unix::fs::symlink(common::ioscale_path(), bin_dir.join(name)).unwrap();
        }
        std::fs::create_dir(root.join("home")).unwrap();
        std::fs::create_dir(root.join(group)).unwrap();
        Place {
            root,
            bin_dir,
            inputs: corpus_dir().join("inputs").canonicalize().unwrap(),
            _mount: mount,
            _scratch: scratch,
        }
    }
}

/// What one command did.
struct Outcome {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

fn expand(word: &str, w: &Path, place: &Place) -> String {
    word.replace("$W", w.to_str().unwrap())
        .replace("$IN", place.inputs.to_str().unwrap())
        .replace("$ROOT", place.root.to_str().unwrap())
}

/// Absolute paths a command line may name besides `$W`, `$IN` and
/// `$ROOT`: programs, the devices dd reads and writes, and paths that only
/// appear in `slurm` scripts (they do not exist here). Anything else is
/// refused, so that no scene can reach the machine's own files (a link
/// planted to `/etc/…` is written through by a root run).
const OUTSIDE_OK: &[&str] = &[
    "/bin/",
    "/usr/bin/",
    "/dev/null",
    "/dev/zero",
    "/shared/",
    "/opt/ioscale/",
];

fn check_paths(line: &str) {
    for word in split_words(line) {
        for part in word.split([' ', '=', ',', ':', '|', ';', '<', '>', '\'', '"']) {
            if part.starts_with('/') {
                assert!(
                    OUTSIDE_OK.iter().any(|ok| part.starts_with(ok)),
                    "`{line}` names {part}, outside $W, $IN and $ROOT"
                );
            }
        }
    }
}

/// Runs one command line in `w`.
fn execute(line: &str, w: &Path, place: &Place) -> Outcome {
    check_paths(line);
    let mut words: Vec<String> = split_words(line)
        .iter()
        .map(|x| expand(x, w, place))
        .collect();
    let mut env = Vec::new();
    while words.first().is_some_and(|x| {
        x.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty() && k.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
        })
    }) {
        let x = words.remove(0);
        let (k, v) = x.split_once('=').unwrap();
        env.push((k.to_string(), v.to_string()));
    }
    assert!(!words.is_empty(), "no program in `{line}`");
    let prog = words.remove(0);
    let mut cmd = if prog == "ioscale" {
        let mut c = Command::new(common::ioscale_path());
        c.arg0("ioscale");
        c
    } else if FRONT_NAMES.contains(&prog.as_str()) {
        let mut c = Command::new(place.bin_dir.join(&prog));
        c.arg0(&prog);
        c
    } else {
        Command::new(&prog)
    };
    cmd.args(&words)
        .current_dir(w)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", place.root.join("home"))
        .env("TZ", "UTC")
        .env("LC_ALL", "C")
        .env("DIR", w)
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("starting `{line}`: {e}"));
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let t_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`{line}` did not end within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stderr = t_err.join().unwrap();
    assert!(
        !String::from_utf8_lossy(&stderr).contains("panicked"),
        "`{line}` panicked:\n{}",
        String::from_utf8_lossy(&stderr)
    );
    Outcome {
        code: status.code(),
        stdout: t_out.join().unwrap(),
        stderr,
    }
}

/// A file or directory under `$W`: how it is shown, and a fingerprint to
/// tell whether a command changed it.
#[derive(PartialEq, Eq, Clone)]
enum Entry {
    Dir,
    Link(String),
    File(Vec<u8>),
    Other,
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Entry>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_symlink() {
            let t = std::fs::read_link(&p).unwrap_or_default();
            out.insert(rel, Entry::Link(t.to_string_lossy().into_owned()));
        } else if ft.is_dir() {
            out.insert(rel, Entry::Dir);
            walk(root, &p, out);
        } else if ft.is_file() {
            out.insert(rel, Entry::File(std::fs::read(&p).unwrap_or_default()));
        } else {
            out.insert(rel, Entry::Other);
        }
    }
}

fn tree(w: &Path) -> BTreeMap<String, Entry> {
    let mut out = BTreeMap::new();
    walk(w, w, &mut out);
    out
}

/// Runs one case and renders what it did.
fn run_case(case: &Case, dir: &Path, place: &Place, m: &Masker) -> String {
    let w = dir.join(&case.id);
    std::fs::create_dir(&w).unwrap();
    let w = w.canonicalize().unwrap();
    let m = m.with_dir(&w);
    let mut text = String::new();
    for (_, line) in &case.lines {
        let before = tree(&w);
        let out = execute(line, &w, place);
        let after = tree(&w);
        let mode = case.mode.unwrap_or_else(|| default_mode(line, out.code));
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("$ {line}\n"));
        match out.code {
            Some(c) => text.push_str(&format!("[exit {c}]\n")),
            None => text.push_str("[killed by a signal]\n"),
        }
        let csv_out = line.contains("--format csv") || line.contains("--format=csv");
        for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            if bytes.is_empty() {
                continue;
            }
            let s = String::from_utf8_lossy(bytes);
            let body = if name == "stdout" && csv_out {
                m.csv(&s, mode)
            } else {
                m.any_text(&s, mode)
            };
            // A stream whose every line was left out is shown as none.
            if !body.is_empty() {
                text.push_str(&format!("[{name}]\n"));
                text.push_str(&body);
            }
        }
        text.push_str(&render_changes(&before, &after, &m, mode));
    }
    text
}

/// Exact for what measures nothing (help, man, completions, slurm
/// scripts, --print-spec, usage and setup errors); measured otherwise.
fn default_mode(line: &str, code: Option<i32>) -> Mode {
    let words = split_words(line);
    let static_words = [
        "--help",
        "-h",
        "help",
        "man",
        "completions",
        "slurm",
        "--print-spec",
        "--version",
        "-V",
    ];
    if code == Some(2) || words.iter().any(|w| static_words.contains(&w.as_str())) {
        Mode::Exact
    } else {
        Mode::Measured
    }
}

/// The files a command made (`+`), changed (`~`) or removed (`-`).
fn render_changes(
    before: &BTreeMap<String, Entry>,
    after: &BTreeMap<String, Entry>,
    m: &Masker,
    mode: Mode,
) -> String {
    let mut text = String::new();
    let mut names: Vec<&String> = before.keys().chain(after.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let (sign, entry) = match (before.get(name), after.get(name)) {
            (None, Some(e)) => ('+', e),
            (Some(a), Some(b)) if a != b => ('~', b),
            (Some(e), None) => ('-', e),
            _ => continue,
        };
        if text.is_empty() {
            text.push_str("[files]\n");
        }
        let shown = m.path_name(name);
        let line = match entry {
            Entry::Dir => format!("{sign} {shown}/"),
            Entry::Link(t) => format!("{sign} {shown} -> {}", m.subst(t)),
            Entry::Other => format!("{sign} {shown} (not a regular file)"),
            // How many data files a time-bounded run made follows the
            // clock: strict mode shows one line per directory instead.
            Entry::File(bytes) if mode == Mode::Strict && is_data(bytes) => {
                let dir = shown.rsplit_once('/').map_or(".", |(d, _)| d);
                format!("{sign} {dir}/… (data files)")
            }
            Entry::File(_) if sign == '-' => format!("- {shown}"),
            Entry::File(bytes) => format!("{sign} {shown}{}", m.file(name, bytes, mode)),
        };
        if !text.ends_with(&format!("{line}\n")) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    text
}

/// Whether a file holds data (not text): ioscale's data files, patterns.
fn is_data(bytes: &[u8]) -> bool {
    !bytes.is_empty() && std::str::from_utf8(bytes).map_or(true, |t| t.contains('\0'))
}

/// Substitutions and masking rules (see the module comment).
#[derive(Clone)]
struct Masker {
    subs: Vec<(String, String)>,
}

impl Masker {
    fn new(place: &Place) -> Masker {
        let mut subs = vec![
            (place.inputs.display().to_string(), "$IN".to_string()),
            (place.root.display().to_string(), "$ROOT".to_string()),
            (
                common::ioscale_path().display().to_string(),
                "$BIN".to_string(),
            ),
        ];
        if let Ok(bin) = common::ioscale_path().canonicalize() {
            subs.push((bin.display().to_string(), "$BIN".to_string()));
        }
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        if !kernel.trim().is_empty() {
            subs.push((kernel.trim().to_string(), "<kernel>".to_string()));
        }
        subs.push((
            format!("ioscale-{}", env!("CARGO_PKG_VERSION")),
            "ioscale-<version>".to_string(),
        ));
        subs.push((
            format!("ioscale {}", env!("CARGO_PKG_VERSION")),
            "ioscale <version>".to_string(),
        ));
        subs.push((
            format!("ioscale v{}", env!("CARGO_PKG_VERSION")),
            "ioscale v<version>".to_string(),
        ));
        Masker { subs }
    }

    /// This masker with the case's working directory substituted first.
    fn with_dir(&self, w: &Path) -> Masker {
        let mut subs = vec![(w.display().to_string(), "$W".to_string())];
        subs.extend(self.subs.iter().cloned());
        Masker { subs }
    }

    fn subst(&self, s: &str) -> String {
        let mut s = s.to_string();
        for (from, to) in &self.subs {
            if s.contains(from.as_str()) {
                s = s.replace(from.as_str(), to);
            }
        }
        s
    }

    /// A file's name as shown: paths substituted, numbers of names kept
    /// (they are ioscale's or the tool's naming), dates masked.
    fn path_name(&self, name: &str) -> String {
        mask_dates(&self.subst(name))
    }

    /// How a file's contents are shown, after its name.
    fn file(&self, name: &str, bytes: &[u8], mode: Mode) -> String {
        let base = name.rsplit('/').next().unwrap_or(name);
        let ext = base.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        let text = std::str::from_utf8(bytes)
            .ok()
            .filter(|t| !t.contains('\0'));
        let size = |n: usize| match mode {
            Mode::Strict => " (# bytes of data)".to_string(),
            _ => format!(" ({n} bytes of data)"),
        };
        if base.ends_with("ioscale-marker") || base.ends_with("ioscale-meta-marker") {
            return " (ioscale's marker)".to_string();
        }
        let Some(text) = text else {
            return match ext {
                "png" => " (PNG image)".to_string(),
                _ => size(bytes.len()),
            };
        };
        let body = match ext {
            _ if text.is_empty() => return " (empty)".to_string(),
            "csv" => self.csv(text, mode),
            "html" => self.html(text, mode),
            "svg" => return " (SVG image)".to_string(),
            "log" => self.log(text, mode),
            // A copy of an input (io500's config-orig-*.ini).
            "ini" => self.text(text, Mode::Exact),
            _ => self.any_text(text, mode),
        };
        let mut s = String::from("\n");
        for l in body.lines() {
            s.push_str("    ");
            s.push_str(l);
            s.push('\n');
        }
        s.pop();
        s
    }

    /// Text or JSON, whichever it is, or text followed by JSON (fio's
    /// `--output-format=normal,json`).
    fn any_text(&self, text: &str, mode: Mode) -> String {
        let t = text.trim_start();
        if t.starts_with('{') || t.starts_with('[') {
            if let Some(v) = J::parse(text) {
                return self.json(&v, "", mode).pretty() + "\n";
            }
        }
        if let Some(at) = text.find("\n{\n") {
            if let Some(v) = J::parse(&text[at + 1..]) {
                let head = self.text(&text[..at + 1], mode);
                return head + &self.json(&v, "", mode).pretty() + "\n";
            }
        }
        self.text(text, mode)
    }

    /// Text output, line by line.
    fn text(&self, text: &str, mode: Mode) -> String {
        if mode == Mode::Exact {
            let lines: Vec<String> = text.lines().map(|l| self.subst(l)).collect();
            // A substituted path changes the width of the columns it
            // stands in (and of the rows aligned under it): the length of
            // the checkout's or the scratch directory's path is not the
            // tool's output, so such an output is compared with its runs
            // of blanks squeezed.
            let paths = ["$IN", "$W", "$ROOT", "$BIN"];
            let moved = lines.iter().any(|l| paths.iter().any(|p| l.contains(p)));
            return lines
                .iter()
                .map(|l| if moved { squeeze(l) } else { l.clone() } + "\n")
                .collect();
        }
        let mut out: Vec<String> = Vec::new();
        let mut st = TextState::default();
        for line in text.lines() {
            let line = self.subst(line);
            if st.in_analysis {
                if line.starts_with(' ') || line.is_empty() {
                    continue;
                }
                st.in_analysis = false;
            }
            if line.trim() == "Analysis" {
                out.push("Analysis".into());
                out.push("  <the analysis prose follows the measured curve>".into());
                st.in_analysis = true;
                continue;
            }
            // smallfile prints its rates, or instead a warning when the
            // test took under a millisecond: which one follows the clock.
            if SMALLFILE_RATES.iter().any(|k| line.contains(k)) {
                let shown =
                    "<smallfile's rates, or its warning that the test ran under a millisecond>";
                if out.last().map(String::as_str) != Some(shown) {
                    out.push(shown.into());
                }
                continue;
            }
            // fio's percentile rows: how many fit a row follows the widths
            // of the figures, so the rows are joined into one.
            if line.trim_start().starts_with("| ") {
                let cells = mask_numbers(
                    line.trim_start().trim_start_matches('|'),
                    mode == Mode::Strict,
                );
                match out.last_mut() {
                    Some(last) if last.starts_with("| ") => {
                        last.push(' ');
                        last.push_str(cells.trim());
                    }
                    _ => out.push(format!("| {}", cells.trim())),
                }
                continue;
            }
            if line.trim() == "Options:" {
                st.echo = true;
            } else if line.trim() == "Results:" || line.trim().is_empty() {
                st.echo = false;
            }
            if line.trim().is_empty() {
                st.table = None;
            } else if st.table.is_none() && is_table_header(&line) {
                st.table = Some(line.clone());
                out.push(squeeze(&time_units(&line)));
                continue;
            }
            let shown = match &st.table {
                Some(header) if !st.echo => Some(self.table_row(header, &line, mode)),
                _ if st.echo && mode == Mode::Measured => Some(squeeze(&mask_dates(&line))),
                _ => self.measured_line(&line, mode),
            };
            // Runs of blank lines become one: a left-out warning may have
            // stood between two.
            if let Some(l) = shown {
                if !(l.is_empty() && out.last().is_some_and(|p| p.is_empty())) {
                    out.push(l);
                }
            }
        }
        // A trailing blank line may have stood before a left-out line.
        while out.last().is_some_and(|l| l.is_empty()) {
            out.pop();
        }
        out.iter().map(|l| format!("{l}\n")).collect()
    }

    /// A row of a table: cells of structural columns kept, others masked.
    fn table_row(&self, header: &str, row: &str, mode: Mode) -> String {
        let Some((names, cells)) = table_cells(header, row) else {
            return self.measured_line(row, mode).unwrap_or_default();
        };
        let shown: Vec<String> = names
            .iter()
            .zip(&cells)
            .map(|(name, cell)| {
                if name == "Outliers" {
                    "<outliers>".into()
                } else if mode == Mode::Measured && STRUCTURAL_COLUMNS.contains(&name.as_str()) {
                    cell.clone()
                } else {
                    mask_numbers(cell, mode == Mode::Strict)
                }
            })
            .collect();
        shown.join(" ")
    }

    /// One line of a measured output, or `None` to leave it out.
    fn measured_line(&self, line: &str, mode: Mode) -> Option<String> {
        if DROP.iter().any(|d| line.contains(d)) {
            return None;
        }
        let t = line.trim_start();
        // fio's latency buckets (`lat (usec) : 2=91.21%, 4=5.08%`): which
        // buckets appear follows the latencies.
        if t.starts_with("lat (") && t.contains('%') && !t.contains("min=") {
            return None;
        }
        let line = mask_dates(line);
        let l = line.as_str();
        if l.starts_with("ioscale ") && l.contains(" kernel ") {
            return Some("ioscale <version> <host> kernel <kernel> <cpus> <RAM>".into());
        }
        if l.starts_with("target ") && l.contains(" (") {
            let cut = l.find(" (").unwrap();
            return Some(format!("{} (<fs>)", &l[..cut]));
        }
        if l.starts_with("FS ") && l.contains(':') {
            return Some("FS : <fs>".into());
        }
        if l.starts_with("Machine ") && l.contains(':') {
            return Some("Machine : <host>".into());
        }
        let mut l = l.to_string();
        if l.starts_with("3;ioscale-") {
            l = terse_without_disk(&l);
        }
        replace_between(&mut l, "; target ", " (", ")", " (<fs>");
        replace_between(
            &mut l,
            "",
            "this machine's ",
            " of RAM",
            "this machine's <RAM>",
        );
        replace_between(&mut l, "", "host = ", ",", "host = <host>");
        if let Some(at) = l.find(" left, ETA ") {
            // A sweep's estimate of the time left (`ETA <1s`, `ETA 2s`).
            l.replace_range(at + " left, ETA ".len().., "<eta>");
        }
        if mode == Mode::Strict {
            // Whether a worker finished or was stopped follows the clock.
            replace_between(&mut l, "", "status = ", ",", "status = <status>");
        }
        // io500's result.txt: its score hash follows the figures, and an
        // exe line's -G seed the run's time stamp (its sign too).
        if l.starts_with("hash ") && l.contains(" = ") {
            return Some("hash = <hash>".into());
        }
        l = l.replace("-G -", "-G ").replace("-G=-", "-G=");
        l = time_units(&l);
        if l.trim_start().starts_with("bw (") {
            replace_between(&mut l, "", "bw (", ")", "bw (<B/s>");
        }
        // Lines that echo the command line or its settings.
        let label_echo = l
            .split_once(" : ")
            .is_some_and(|(label, _)| !label.chars().any(|c| c.is_ascii_digit()))
            && !l.contains('=');
        if ECHO_LINES.iter().any(|k| l.starts_with(k)) || (label_echo && mode == Mode::Measured) {
            return Some(squeeze(&l));
        }
        Some(mask_numbers(&l, mode == Mode::Strict))
    }

    /// A JSON value, masked (see the module comment).
    fn json(&self, v: &J, key: &str, mode: Mode) -> J {
        // A phase's per-interval series (an object; a sweep point's
        // `series` label is a string, kept): how many intervals and
        // latency buckets it holds follows the timing.
        if COLLAPSE.contains(&key) || (key == "series" && matches!(v, J::Obj(_))) {
            return J::Str("<masked>".into());
        }
        if MACHINE.contains(&key) {
            return mask_leaves(v);
        }
        if key == "analysis" && mode != Mode::Exact {
            return analysis_shape(v);
        }
        match v {
            J::Num(_) => match mode {
                Mode::Exact => v.clone(),
                Mode::Measured if EXACT.contains(&key) => v.clone(),
                _ => J::Str("#".into()),
            },
            J::Str(s) => J::Str(self.json_string(s, key, mode)),
            // A sentence left out of the text is left out of a list too.
            J::Arr(a) => J::Arr(
                a.iter()
                    .filter(|x| match x {
                        J::Str(s) if mode != Mode::Exact => {
                            self.measured_line(&self.subst(s), mode).is_some()
                        }
                        _ => true,
                    })
                    .map(|x| self.json(x, key, mode))
                    .collect(),
            ),
            J::Obj(o) => J::Obj(
                o.iter()
                    .filter(|(k, _)| !LEFT_OUT_KEYS.contains(&k.as_str()))
                    .map(|(k, x)| (k.clone(), self.json(x, k, mode)))
                    .collect(),
            ),
            _ => v.clone(),
        }
    }

    fn json_string(&self, s: &str, key: &str, mode: Mode) -> String {
        let s = self.subst(s);
        if mode == Mode::Exact || key.to_ascii_lowercase().contains("command") {
            return s;
        }
        let s = mask_dates(&s);
        if mode == Mode::Strict && key == "status" {
            return "<status>".into();
        }
        if !s.contains(' ') {
            return s;
        }
        self.measured_line(&s, mode)
            .unwrap_or_else(|| "<left out>".into())
    }

    /// CSV: the header kept, each cell masked by its column.
    fn csv(&self, text: &str, mode: Mode) -> String {
        let mut lines = text.lines();
        let Some(mut header) = lines.next() else {
            return String::new();
        };
        let mut out = String::new();
        if !header.contains(',') {
            // pfind's CSV (io500's find.csv) opens with its runtime and rate.
            out = mask_numbers(header, true) + "\n";
            match lines.next() {
                Some(h) => header = h,
                None => return out,
            }
        }
        let cols = split_csv(header);
        out += &format!("{header}\n");
        for line in lines {
            let cells: Vec<String> = split_csv(line)
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let col = cols.get(i).map(String::as_str).unwrap_or("");
                    if c.trim().parse::<f64>().is_ok() {
                        let keep =
                            mode == Mode::Exact || (mode == Mode::Measured && EXACT.contains(&col));
                        if keep {
                            c.clone()
                        } else {
                            "#".into()
                        }
                    } else {
                        self.json_string(c, col, mode)
                    }
                })
                .collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }

    /// HTML: its title, headings and element ids, masked.
    fn html(&self, text: &str, mode: Mode) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find('<') {
            rest = &rest[at + 1..];
            let tag_end = rest.find('>').unwrap_or(rest.len());
            let tag = &rest[..tag_end];
            let name: String = tag
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            if let Some(i) = tag.find(" id=\"") {
                let id = &tag[i + 5..];
                let id = &id[..id.find('"').unwrap_or(id.len())];
                out.push_str(&format!("#{}\n", self.json_string(id, "", mode)));
            }
            let heading = matches!(name.as_str(), "h1" | "h2" | "h3" | "h4");
            if heading || (name == "title" && out.is_empty()) {
                let body = &rest[tag_end.min(rest.len())..];
                let body = body.strip_prefix('>').unwrap_or(body);
                let end = body.find(&format!("</{name}>")).unwrap_or(body.len());
                let inner = self.subst(&strip_tags(&body[..end]));
                let shown = if mode == Mode::Exact {
                    inner
                } else {
                    self.measured_line(&inner, mode).unwrap_or_default()
                };
                out.push_str(&format!("{name}: {}\n", shown.trim()));
            }
        }
        out
    }

    /// A fio log: its line count and first line, masked.
    fn log(&self, text: &str, mode: Mode) -> String {
        let first = text.lines().next().unwrap_or("");
        let fields = first.split(',').count();
        let lines = match mode {
            Mode::Strict => "#".to_string(),
            _ => text.lines().count().to_string(),
        };
        format!(
            "{lines} lines of {fields} fields; the first: {}\n",
            mask_numbers(&self.subst(first), mode != Mode::Exact)
        )
    }
}

fn strip_tags(s: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Where a text output is: in the sweep analysis, in IOR's echo of its
/// options, in a table (its header).
#[derive(Default)]
struct TextState {
    in_analysis: bool,
    echo: bool,
    table: Option<String>,
}

/// Lines that echo the command line or the workload it became.
const ECHO_LINES: &[&str] = &["workload", "sweep of", "Command line"];

/// smallfile's rate lines and the warning it prints instead of them.
const SMALLFILE_RATES: &[&str] = &[
    "(all threads, wall clock)",
    "(smallfile's definition",
    "WARNING: test must run longer than a millisecond",
];

/// The first word of the tables' header lines (ioscale's, IOR's, mdtest's
/// and the sweep's).
const TABLE_HEADS: &[&str] = &["op", "access", "Operation", "Series"];

/// Table columns whose cells the command line fixes.
const STRUCTURAL_COLUMNS: &[&str] = &[
    "op",
    "rep",
    "reps",
    "access",
    "Operation",
    "iter",
    "block(KiB)",
    "xfer(KiB)",
    "Test#",
    "#Tasks",
    "tPN",
    "fPP",
    "reord",
    "reordoff",
    "reordrand",
    "seed",
    "segcnt",
    "blksiz",
    "xsize",
    "aggs(MiB)",
    "API",
    "RefNum",
    "Threads",
    "File count",
    "Directory per file",
    "Reps",
    "Series",
    "Workers",
    "Unit",
];

fn is_table_header(line: &str) -> bool {
    let first = line.split_whitespace().next().unwrap_or("");
    TABLE_HEADS.contains(&first)
        && line.split_whitespace().count() >= 4
        && !line.chars().any(|c| c == '=' || c == ':')
}

/// A row's cells against the header's names: split on runs of two or
/// more blanks (headers like `File count`), else on every blank (IOR's).
fn table_cells(header: &str, row: &str) -> Option<(Vec<String>, Vec<String>)> {
    let wide = |s: &str| -> Vec<String> {
        s.trim()
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    let narrow = |s: &str| -> Vec<String> { s.split_whitespace().map(String::from).collect() };
    let (h, r) = (wide(header), wide(row));
    if h.len() == r.len() {
        return Some((h, r));
    }
    let (h, r) = (narrow(header), narrow(row));
    (h.len() == r.len()).then_some((h, r))
}

/// Units in parentheses that follow the magnitude of the latencies
/// (fio's `clat (nsec)`, the sweep's `p50 (µs)` or `p50 (ms)`).
fn time_units(l: &str) -> String {
    let mut l = l.to_string();
    for unit in ["(nsec)", "(usec)", "(msec)", "(ns)", "(µs)", "(ms)"] {
        l = l.replace(unit, "(<t>)");
    }
    l
}

/// fio's terse line without its disk statistics (the device under the
/// target, present on a block device only): from the first field after
/// the job's name that is a name.
fn terse_without_disk(l: &str) -> String {
    let fields: Vec<&str> = l.split(';').collect();
    let cut = fields
        .iter()
        .enumerate()
        .skip(3)
        .find(|(_, f)| f.starts_with(|c: char| c.is_ascii_alphabetic()))
        .map_or(fields.len(), |(i, _)| i);
    fields[..cut].join(";")
}

/// Runs of blanks become one (column widths follow the figures).
fn squeeze(line: &str) -> String {
    let mut out = String::new();
    for c in line.chars() {
        if !(c == ' ' && out.ends_with(' ')) {
            out.push(c);
        }
    }
    out.trim_end().to_string()
}

/// In `l`, after `anchor` (or anywhere when empty), replaces the text from
/// `open` up to (not including) `close`, or to the end, with `with`.
fn replace_between(l: &mut String, anchor: &str, open: &str, close: &str, with: &str) {
    let Some(a) = l.find(anchor) else { return };
    let Some(o) = l[a..].find(open).map(|o| a + o) else {
        return;
    };
    let from = o + open.len();
    let end = l[from..].find(close).map_or(l.len(), |e| from + e);
    l.replace_range(o..end, with);
}

/// Splits one CSV line (quoted cells may hold commas).
fn split_csv(line: &str) -> Vec<String> {
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => cells.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    cells.push(cur);
    cells
}

/// Every leaf of `v` becomes `<masked>`; an object keeps its keys.
fn mask_leaves(v: &J) -> J {
    match v {
        J::Obj(o) => J::Obj(o.iter().map(|(k, x)| (k.clone(), mask_leaves(x))).collect()),
        J::Arr(a) => J::Arr(a.iter().map(mask_leaves).collect()),
        J::Null => J::Null,
        _ => J::Str("<masked>".into()),
    }
}

/// The sweep analysis reduced to what does not follow the measurements:
/// its units and, per curve, the series, operation and unit.
fn analysis_shape(v: &J) -> J {
    let J::Obj(_) = v else {
        return J::Str("<masked>".into());
    };
    let mut out = Vec::new();
    if let Some(u) = v.get("units") {
        out.push(("units".to_string(), u.clone()));
    }
    if let Some(J::Arr(curves)) = v.get("curves") {
        let kept = curves
            .iter()
            .map(|c| {
                let fields = ["series", "op", "unit"]
                    .iter()
                    .filter_map(|k| c.get(k).map(|x| (k.to_string(), x.clone())))
                    .collect();
                J::Obj(fields)
            })
            .collect();
        out.push(("curves".to_string(), J::Arr(kept)));
    }
    out.push(("rest".to_string(), J::Str("<masked>".into())));
    J::Obj(out)
}

/// A JSON value that keeps its keys in the order the file has them (so the
/// record reads as written) and its numbers as written.
#[derive(Clone, Debug, PartialEq)]
enum J {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl J {
    /// Parses a whole text as one JSON value, or `None`.
    fn parse(text: &str) -> Option<J> {
        let mut p = JsonParser {
            s: text.as_bytes(),
            i: 0,
        };
        let v = p.value()?;
        p.ws();
        (p.i == p.s.len()).then_some(v)
    }

    fn get(&self, key: &str) -> Option<&J> {
        match self {
            J::Obj(o) => o.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Pretty-printed as serde_json does (two blanks per level).
    fn pretty(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, 0);
        out
    }

    fn write(&self, out: &mut String, depth: usize) {
        let pad = |n: usize| "  ".repeat(n);
        match self {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Num(n) => out.push_str(n),
            J::Str(s) => out.push_str(&serde_json::to_string(s).unwrap()),
            J::Arr(a) if a.is_empty() => out.push_str("[]"),
            J::Obj(o) if o.is_empty() => out.push_str("{}"),
            J::Arr(a) => {
                out.push_str("[\n");
                for (i, x) in a.iter().enumerate() {
                    out.push_str(&pad(depth + 1));
                    x.write(out, depth + 1);
                    out.push_str(if i + 1 < a.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(depth));
                out.push(']');
            }
            J::Obj(o) => {
                out.push_str("{\n");
                for (i, (k, x)) in o.iter().enumerate() {
                    out.push_str(&pad(depth + 1));
                    out.push_str(&serde_json::to_string(k).unwrap());
                    out.push_str(": ");
                    x.write(out, depth + 1);
                    out.push_str(if i + 1 < o.len() { ",\n" } else { "\n" });
                }
                out.push_str(&pad(depth));
                out.push('}');
            }
        }
    }
}

struct JsonParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl JsonParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.s[self.i..].starts_with(lit.as_bytes()) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Option<J> {
        self.ws();
        match *self.s.get(self.i)? {
            b'{' => self.object(),
            b'[' => {
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.eat("]") {
                    return Some(J::Arr(a));
                }
                loop {
                    a.push(self.value()?);
                    self.ws();
                    if self.eat("]") {
                        return Some(J::Arr(a));
                    }
                    if !self.eat(",") {
                        return None;
                    }
                }
            }
            b'"' => self.string().map(J::Str),
            b't' if self.eat("true") => Some(J::Bool(true)),
            b'f' if self.eat("false") => Some(J::Bool(false)),
            b'n' if self.eat("null") => Some(J::Null),
            _ => {
                let start = self.i;
                while self.i < self.s.len()
                    && matches!(
                        self.s[self.i],
                        b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'
                    )
                {
                    self.i += 1;
                }
                let n = std::str::from_utf8(&self.s[start..self.i]).ok()?;
                n.parse::<f64>().ok()?;
                Some(J::Num(n.to_string()))
            }
        }
    }

    fn object(&mut self) -> Option<J> {
        self.i += 1;
        let mut o = Vec::new();
        self.ws();
        if self.eat("}") {
            return Some(J::Obj(o));
        }
        loop {
            self.ws();
            let k = self.string()?;
            self.ws();
            if !self.eat(":") {
                return None;
            }
            o.push((k, self.value()?));
            self.ws();
            if self.eat("}") {
                return Some(J::Obj(o));
            }
            if !self.eat(",") {
                return None;
            }
        }
    }

    /// A string (at its opening quote), escapes decoded by serde_json.
    fn string(&mut self) -> Option<String> {
        let start = self.i;
        if self.s.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        while self.i < self.s.len() {
            match self.s[self.i] {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    let raw = std::str::from_utf8(&self.s[start..self.i]).ok()?;
                    return serde_json::from_str(raw).ok();
                }
                _ => self.i += 1,
            }
        }
        None
    }
}

/// Date and clock-time patterns: `A` a letter, `D` a digit, `d` a digit
/// or a blank, anything else itself.
const DATES: &[&str] = &[
    "DDDD.DD.DD-DD.DD.DD",
    "AAA AAA dd DD:DD:DD DDDD",
    "DDDD-DD-DDTDD:DD:DD",
    "DDDD-DD-DD DD:DD:DD",
    "DD/DD/DDDD DD:DD:DD",
    "DDDD-DD-DD",
    "DD:DD:DD",
];

fn date_at(s: &[char], i: usize, pat: &str) -> Option<usize> {
    let mut j = i;
    for p in pat.chars() {
        let c = *s.get(j)?;
        let ok = match p {
            'A' => c.is_ascii_alphabetic(),
            'D' => c.is_ascii_digit(),
            'd' => c.is_ascii_digit() || c == ' ',
            _ => c == p,
        };
        if !ok {
            return None;
        }
        j += 1;
    }
    // A fraction of a second and a zone letter belong to the date.
    if s.get(j) == Some(&'.') && s.get(j + 1).is_some_and(|c| c.is_ascii_digit()) {
        j += 1;
        while s.get(j).is_some_and(|c| c.is_ascii_digit()) {
            j += 1;
        }
    }
    if s.get(j) == Some(&'Z') {
        j += 1;
    }
    Some(j)
}

/// Replaces dates and clock times with `<date>`.
fn mask_dates(line: &str) -> String {
    let s: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < s.len() {
        let boundary = i == 0 || !s[i - 1].is_ascii_alphanumeric();
        let hit = if boundary {
            DATES.iter().find_map(|p| date_at(&s, i, p))
        } else {
            None
        };
        match hit {
            Some(end) if end == s.len() || !s[end].is_ascii_alphanumeric() => {
                out.push_str("<date>");
                i = end;
            }
            _ => {
                out.push(s[i]);
                i += 1;
            }
        }
    }
    out
}

const SIZE_UNITS: &[&str] = &[
    "B", "KiB", "MiB", "GiB", "TiB", "kB", "KB", "MB", "GB", "TB", "bytes", "Ki", "Mi", "Gi",
];
const TIME_UNITS: &[&str] = &[
    "ns", "us", "µs", "ms", "s", "sec", "nsec", "usec", "msec", "seconds", "secs",
];

/// The unit right after a number (glued, or after one blank), and where
/// it ends.
fn unit_after(s: &[char], end: usize) -> Option<(String, usize)> {
    let is_unit_char = |c: char| c.is_ascii_alphabetic() || c == 'µ' || c == '/';
    let start = if s.get(end).is_some_and(|&c| is_unit_char(c)) {
        end
    } else if s.get(end) == Some(&' ') && s.get(end + 1).is_some_and(|&c| is_unit_char(c)) {
        end + 1
    } else {
        return None;
    };
    let mut j = start;
    while s.get(j).is_some_and(|&c| is_unit_char(c)) {
        j += 1;
    }
    let mut unit: String = s[start..j].iter().collect();
    while unit.ends_with('/') {
        unit.pop();
        j -= 1;
    }
    Some((unit, j))
}

/// How a masked number's unit is shown: `None` keeps it as it is.
fn unit_kind(unit: &str) -> Option<&'static str> {
    if let Some(base) = unit
        .strip_suffix("/s")
        .or_else(|| unit.strip_suffix("/sec"))
    {
        if SIZE_UNITS.contains(&base) {
            return Some("<B/s>");
        }
        return None;
    }
    if SIZE_UNITS.contains(&unit) {
        return Some("<B>");
    }
    if TIME_UNITS.contains(&unit) {
        return Some("<t>");
    }
    if matches!(unit, "k" | "K" | "M" | "G") {
        return Some("");
    }
    None
}

/// Whether the digit at `i` continues a name (`p99`, `file.00000000`,
/// `dd-3`) rather than starting a number.
fn ident_before(s: &[char], i: usize) -> bool {
    let at = |k: usize| i.checked_sub(k).map(|k| s[k]);
    let alpha = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphabetic());
    match at(1) {
        Some(c) if c.is_ascii_alphanumeric() || c == '_' => true,
        Some('.') => at(2).is_some_and(|c| c.is_ascii_alphanumeric()),
        Some('-') => alpha(at(2)) && alpha(at(3)),
        _ => false,
    }
}

/// Text right before a number that makes it structural: fio's group,
/// job and depth fields, the meta per-thread lines, repetition and point
/// numbers.
const KEEP_AFTER: &[&str] = &[
    "g=",
    "groupid=",
    "jobs=",
    "iodepth=",
    "depth=",
    "err= ",
    "Starting ",
    "status group ",
    "thr = ",
    "files = ",
    "records = ",
    "total threads = ",
    "total files = ",
    "rep ",
    "[point ",
    "threads=",
];

/// Words right after a number that make it a count the command line
/// fixes (`2 worker(s)`, `20 files in`, not `20 files/s`).
const KEEP_WORDS: &[&str] = &[
    "worker",
    "workers",
    "thread",
    "threads",
    "task",
    "tasks",
    "total",
    "segment",
    "segments",
    "node",
    "nodes",
    "iteration",
    "iterations",
    "rep",
    "reps",
    "point",
    "points",
    "file",
    "files",
    "item",
    "items",
    "job",
    "jobs",
    "process",
    "processes",
];

fn keep_after(out: &str) -> bool {
    let at_word = |k: &str| {
        out.strip_suffix(k)
            .is_some_and(|head| !head.ends_with(|c: char| c.is_ascii_alphanumeric()))
    };
    if KEEP_AFTER.iter().any(|k| at_word(k)) {
        return true;
    }
    // A flag's value echoed in a hint (`--threads 2`, `--size=1m`).
    let last = out
        .trim_end_matches([' ', '='])
        .rsplit(' ')
        .next()
        .unwrap_or("");
    if last.starts_with("--") && (out.ends_with(' ') || out.ends_with('=')) {
        return true;
    }
    // The denominator of `rep 1/3`, `[point 1/2`.
    let Some(head) = out.strip_suffix('/') else {
        return false;
    };
    let head = head.trim_end_matches(|c: char| c.is_ascii_digit());
    head.ends_with("rep ") || head.ends_with("[point ")
}

fn keep_before(s: &[char], j: usize) -> bool {
    let glued: String = s[j..].iter().take(4).collect();
    if glued == "% CI" {
        return true;
    }
    if s.get(j) != Some(&' ') {
        return false;
    }
    let word: String = s[j + 1..]
        .iter()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    let after = s.get(j + 1 + word.len());
    KEEP_WORDS.contains(&word.as_str()) && after != Some(&'/')
}

/// Masks the numbers of a line (see the module comment): `#` for each,
/// sizes kept unless `strict`, magnitude units replaced by their kind,
/// blanks squeezed.
fn mask_numbers(line: &str, strict: bool) -> String {
    let s: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if !c.is_ascii_digit() {
            if !(c == ' ' && out.ends_with(' ')) {
                out.push(c);
            }
            i += 1;
            continue;
        }
        if ident_before(&s, i) {
            while i < s.len() && s[i].is_ascii_digit() {
                out.push(s[i]);
                i += 1;
            }
            continue;
        }
        let mut j = i;
        while j < s.len() && s[j].is_ascii_digit() {
            j += 1;
        }
        if s.get(j) == Some(&'.') && s.get(j + 1).is_some_and(|c| c.is_ascii_digit()) {
            j += 1;
            while j < s.len() && s[j].is_ascii_digit() {
                j += 1;
            }
        }
        if matches!(s.get(j), Some('e') | Some('E'))
            && s.get(j + 1)
                .is_some_and(|c| c.is_ascii_digit() || *c == '-' || *c == '+')
            && s.get(j + 2).is_some_and(|c| c.is_ascii_digit())
        {
            j += 2;
            while j < s.len() && s[j].is_ascii_digit() {
                j += 1;
            }
        }
        if !strict && (keep_after(&out) || keep_before(&s, j)) {
            out.extend(&s[i..j]);
            i = j;
            continue;
        }
        let unit = unit_after(&s, j);
        let rate_follows = |k: usize| s.get(k) == Some(&'/') && s.get(k + 1) == Some(&'s');
        match unit {
            Some((u, k)) if !strict && SIZE_UNITS.contains(&u.as_str()) && !rate_follows(k) => {
                out.extend(&s[i..k]);
                i = k;
            }
            Some((u, k)) => match unit_kind(&u) {
                Some(kind) => {
                    out.push('#');
                    if s[j] == ' ' && !kind.is_empty() {
                        out.push(' ');
                    }
                    out.push_str(kind);
                    i = k;
                }
                None => {
                    out.push('#');
                    i = j;
                }
            },
            None => {
                out.push('#');
                i = j;
            }
        }
    }
    // fio pads small figures after `=` and `[` (`stdev= 9.12`, `[ 1239]`).
    let mut out = out.replace("[ #", "[#");
    while let Some(at) = out
        .match_indices("= #")
        .map(|(i, _)| i)
        .find(|&i| i > 0 && !out[..i].ends_with(' '))
    {
        out.remove(at + 1);
    }
    // A right-aligned figure at the start of a line: its padding follows
    // its width.
    if out.trim_start().starts_with('#') {
        out = out.trim_start().to_string();
    }
    out.trim_end().to_string()
}

/// A minimal unified diff of two texts, each hunk headed by the command
/// line it falls under.
fn diff(want: &str, got: &str) -> String {
    let a: Vec<&str> = want.lines().collect();
    let b: Vec<&str> = got.lines().collect();
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    // The edit script: (' ', line), ('-', line), ('+', line).
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let mut out = String::new();
    let mut last_cmd = "";
    let mut shown_until = 0;
    let mut k = 0;
    while k < ops.len() {
        if ops[k].0 == ' ' {
            if ops[k].1.starts_with("$ ") {
                last_cmd = ops[k].1;
            }
            k += 1;
            continue;
        }
        let from = k.saturating_sub(3).max(shown_until);
        let mut end = k;
        while end < ops.len() {
            if ops[end].0 != ' ' {
                end += 1;
                continue;
            }
            let next_change = ops[end..].iter().position(|o| o.0 != ' ');
            match next_change {
                Some(d) if d <= 6 => end += d,
                _ => break,
            }
        }
        let to = (end + 3).min(ops.len());
        let cmd = ops[..k]
            .iter()
            .rev()
            .find(|o| o.0 != '+' && o.1.starts_with("$ "))
            .map(|o| o.1)
            .unwrap_or(last_cmd);
        out.push_str(&format!("@@ under `{cmd}`\n"));
        for (sign, line) in &ops[from..to] {
            out.push_str(&format!("{sign}{line}\n"));
        }
        shown_until = to;
        k = end;
    }
    out
}

/// Runs every case of a group and compares with (or, blessing, writes)
/// its expected files.
fn run_group(group: &str) {
    let cases = parse_cases(group);
    let place = Place::new(group);
    let masker = Masker::new(&place);
    let expected_dir = corpus_dir().join(group);
    let work = place.root.join(group);
    let mut failures = Vec::new();
    let started = Instant::now();
    for case in &cases {
        let got = run_case(case, &work, &place, &masker);
        let path = expected_dir.join(format!("{}.txt", case.id));
        if bless() {
            std::fs::create_dir_all(&expected_dir).unwrap();
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        if want != got {
            let cmds: Vec<String> = case
                .lines
                .iter()
                .map(|(n, l)| format!("  {group}.cmds:{n}: {l}"))
                .collect();
            failures.push(format!(
                "--- tests/corpus/{group}/{}.txt (expected)\n+++ what the binary prints now\n{}\n{}",
                case.id,
                cmds.join("\n"),
                diff(&want, &got)
            ));
        }
    }
    let ids: Vec<String> = cases.iter().map(|c| format!("{}.txt", c.id)).collect();
    if let Ok(rd) = std::fs::read_dir(&expected_dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if ids.contains(&name) {
                continue;
            }
            if bless() {
                std::fs::remove_file(e.path()).unwrap();
            } else {
                failures.push(format!(
                    "tests/corpus/{group}/{name}: no case `{}` in {group}.cmds",
                    name.trim_end_matches(".txt")
                ));
            }
        }
    }
    eprintln!(
        "corpus {group}: {} cases, {} command lines, {:.1} s",
        cases.len(),
        cases.iter().map(|c| c.lines.len()).sum::<usize>(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} case(s) of {group} print something else than recorded \
         (IOSCALE_BLESS=1 cargo test -p ioscale --test output_corpus rewrites the record; \
         say why in the commit):\n\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The groups, one test each (they run in parallel, each on its own
/// mount).
const GROUPS: &[&str] = &[
    "help",
    "run",
    "meta",
    "sweep",
    "records",
    "ior",
    "mdtest",
    "dd",
    "smallfile",
    "fio",
    "io500",
];

macro_rules! group_tests {
    ($($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                run_group(stringify!($name));
            }
        )*
    };
}

group_tests!(help, run, meta, sweep, records, ior, mdtest, dd, smallfile, fio, io500);

/// Every `.cmds` file is a group that runs, and the corpus keeps at least
/// 200 command lines of ioscale (the binary or a front-end's name).
#[test]
fn corpus_is_complete() {
    let mut total = 0;
    for e in std::fs::read_dir(corpus_dir()).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(group) = name.strip_suffix(".cmds") {
            assert!(GROUPS.contains(&group), "{name} has no test in GROUPS");
            for case in parse_cases(group) {
                for (_, line) in &case.lines {
                    let words = split_words(line);
                    let prog = words.iter().find(|w| !w.contains('=')).unwrap();
                    if prog == "ioscale" || FRONT_NAMES.contains(&prog.as_str()) {
                        total += 1;
                    }
                }
            }
        }
    }
    for g in GROUPS {
        assert!(
            corpus_dir().join(format!("{g}.cmds")).is_file(),
            "no {g}.cmds"
        );
    }
    assert!(
        total >= 200,
        "the corpus runs ioscale {total} times, fewer than 200"
    );
}

/// The masking itself: what stays and what goes.
#[test]
fn masking_keeps_sizes_and_masks_measurements() {
    assert_eq!(
        mask_numbers(
            "write rep 1/2: 1 MiB in 0.00589 s, 169.9 MiB/s, 170 IOPS",
            false
        ),
        "write rep 1/2: 1 MiB in # <t>, # <B/s>, # IOPS"
    );
    assert_eq!(
        mask_numbers(
            "  read: IOPS=388k, BW=1514MiB/s (1588MB/s)(2048KiB/1msec)",
            false
        ),
        " read: IOPS=#, BW=#<B/s> (#<B/s>)(2048KiB/#<t>)"
    );
    assert_eq!(mask_numbers("1 MiB in 2 s", true), "# <B> in # <t>");
    assert_eq!(
        mask_numbers("file.00000000 p99 f0.0 thr.000", false),
        "file.00000000 p99 f0.0 thr.000"
    );
    assert_eq!(
        mask_dates("Began : Fri Nov 27 21:48:45 2026, at 2026-11-27T21:48:37Z"),
        "Began : <date>, at <date>"
    );
    assert_eq!(
        split_words(r#"a 'b c' "d\"e" f\ g"#),
        ["a", "b c", "d\"e", "f g"]
    );
    let j =
        J::parse(r#"{"b": 1, "a": [1.50, "x\u00e9\n", null, true], "c": {}, "d": []}"#).unwrap();
    assert_eq!(
        j.pretty(),
        "{\n  \"b\": 1,\n  \"a\": [\n    1.50,\n    \"xé\\n\",\n    null,\n    true\n  ],\n  \"c\": {},\n  \"d\": []\n}"
    );
    assert!(J::parse("{\"a\": 1} x").is_none());
}
