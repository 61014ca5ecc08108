//! What a measuring command does with the results history: where the
//! history is (`--history FILE`, `--no-history`, `IOSCALE_HISTORY`, the
//! XDG data directory), recording each finished record on rank 0 once,
//! and the regression gate (`--baseline`, exit [`REGRESSED`]).
//!
//! Every measuring command (`run`, `meta`, `sweep`, and the ior, mdtest,
//! dd, smallfile, fio and io500 front-ends) opens a [`Session`] before it
//! runs (a bad setting is a usage error, exit 2, before anything is
//! made), hands it its records, and ends through [`Session::finish`] once
//! its own outputs are written: the run's outputs never depend on the
//! database, and a database that cannot be written (locked, full,
//! read-only, corrupt, of a newer version) is one warning, the exit code
//! unchanged. The front-ends, which read their tools' own syntax, take the
//! settings from the environment.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use clap::Args;
use history::{Access, Baseline, Entry, Extra, History};
use report::ResultSet;

use crate::exit::{Failure, INTERRUPTED, REGRESSED};

/// The history file, or `off` (the front-ends' `--history`/`--no-history`).
pub(crate) const ENV_FILE: &str = "IOSCALE_HISTORY";
/// The front-ends' `--baseline`.
pub(crate) const ENV_BASELINE: &str = "IOSCALE_BASELINE";
/// The front-ends' `--threshold`.
pub(crate) const ENV_THRESHOLD: &str = "IOSCALE_THRESHOLD";

/// The history flags of `run`, `meta` and `sweep`.
#[derive(Debug, Clone, Default, Args)]
pub struct HistoryArgs {
    /// Record the run in FILE, an SQLite database [default: $IOSCALE_HISTORY,
    /// else $XDG_DATA_HOME/ioscale/history.db, else
    /// ~/.local/share/ioscale/history.db].
    #[arg(long, value_name = "FILE", conflicts_with = "no_history")]
    pub history: Option<PathBuf>,

    /// Do not record this run in the history (IOSCALE_HISTORY=off does the
    /// same for every command).
    #[arg(long)]
    pub no_history: bool,

    /// Judge the run against earlier runs of the same workload on the same
    /// target: median (of the last 5, with their spread), median:N, last,
    /// best, or a run id; exit 3 when a figure fell beyond the noise and
    /// --threshold [env: IOSCALE_BASELINE].
    #[arg(long, value_name = "BASELINE", value_parser = parse_baseline)]
    pub baseline: Option<Baseline>,

    /// How far (percent) a figure must fall, beyond the noise, to fail
    /// --baseline [default: 10] [env: IOSCALE_THRESHOLD].
    #[arg(long, value_name = "PCT", value_parser = parse_threshold)]
    pub threshold: Option<f64>,
}

impl HistoryArgs {
    /// Whether any history flag was given (a sweep's inner command may
    /// not: the sweep records its points).
    pub(crate) fn any(&self) -> bool {
        self.history.is_some()
            || self.no_history
            || self.baseline.is_some()
            || self.threshold.is_some()
    }
}

fn parse_baseline(s: &str) -> Result<Baseline, String> {
    Baseline::parse(s)
}

/// A threshold in percent (`10`, `7.5`, `10%`) as a share.
fn parse_threshold(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("{s:?}: give a percentage, e.g. 10"))?;
    if v > 0.0 && v < 100.0 {
        Ok(v / 100.0)
    } else {
        Err(format!(
            "{s:?}: give a percentage between 0 and 100 (exclusive)"
        ))
    }
}

/// Where the history is for one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// Not recorded (`--no-history`, `IOSCALE_HISTORY=off`).
    Off,
    /// This file; `default` when it is the data directory's.
    File { path: PathBuf, default: bool },
    /// No file can be named (no HOME): why.
    Nowhere(String),
}

/// The words of `IOSCALE_HISTORY` that turn recording off.
const OFF_WORDS: &[&str] = &["off", "none", "no", "0"];

/// The history a command uses: `--no-history`, then `--history FILE`,
/// then `IOSCALE_HISTORY` (a file, or `off`), then the default file of
/// [`history::default_path`].
pub(crate) fn place(file: Option<&Path>, off: bool) -> Place {
    if off {
        return Place::Off;
    }
    if let Some(p) = file {
        return Place::File {
            path: p.to_path_buf(),
            default: false,
        };
    }
    match std::env::var(ENV_FILE).ok().filter(|v| !v.is_empty()) {
        Some(v) if OFF_WORDS.contains(&v.as_str()) => Place::Off,
        Some(v) => Place::File {
            path: PathBuf::from(v),
            default: false,
        },
        None => {
            let env = |k| std::env::var(k).ok();
            match history::default_path(env("XDG_DATA_HOME").as_deref(), env("HOME").as_deref()) {
                Some(path) => Place::File {
                    path,
                    default: true,
                },
                None => Place::Nowhere(
                    "neither XDG_DATA_HOME nor HOME is set; give --history FILE or IOSCALE_HISTORY"
                        .into(),
                ),
            }
        }
    }
}

/// The regression gate of a command: the baseline and the threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Gate {
    baseline: Baseline,
    threshold: f64,
}

/// The gate `args` and the environment ask for (flags first); a bad
/// environment value is a usage error.
fn gate(args: Option<&HistoryArgs>) -> Result<Option<Gate>, String> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let baseline = match args.and_then(|a| a.baseline) {
        Some(b) => Some(b),
        None => env(ENV_BASELINE)
            .map(|v| Baseline::parse(&v).map_err(|e| format!("{ENV_BASELINE}={e}")))
            .transpose()?,
    };
    let threshold = match args.and_then(|a| a.threshold) {
        Some(t) => t,
        None => env(ENV_THRESHOLD)
            .map(|v| parse_threshold(&v).map_err(|e| format!("{ENV_THRESHOLD}={e}")))
            .transpose()?
            .unwrap_or(history::judge::DEFAULT_THRESHOLD),
    };
    Ok(baseline.map(|baseline| Gate {
        baseline,
        threshold,
    }))
}

/// The history flags of a sweep launched again as MPI ranks (`sweep
/// --nodes`): the file this process would use (absolute) or
/// `--no-history`, and its gate, so every launch records where the user
/// asked.
pub(crate) fn child_flags(args: &HistoryArgs) -> Vec<String> {
    let mut a = Vec::new();
    match place(args.history.as_deref(), args.no_history) {
        Place::Off => a.push("--no-history".to_string()),
        Place::File { path, .. } => {
            let path = std::path::absolute(&path).unwrap_or(path);
            a.extend(["--history".to_string(), path.display().to_string()]);
        }
        Place::Nowhere(_) => {}
    }
    if let Ok(Some(g)) = gate(Some(args)) {
        a.extend(["--baseline".into(), g.baseline.to_string()]);
        a.extend(["--threshold".into(), format!("{}", g.threshold * 100.0)]);
    }
    a
}

/// Checks the history settings of the environment before a front-end
/// that keeps no [`Session`] runs (fio, io500): a usage error, exit 2.
pub(crate) fn check_env() -> Result<(), Failure> {
    gate(None).map(|_| ()).map_err(Failure::Usage)
}

/// What has happened to the history so far in a session.
#[derive(Default)]
struct State {
    /// The open file; `Err` once it failed (said once, not retried).
    db: Option<Result<History, ()>>,
    /// Rows made from this command's records, not written yet.
    kept: Vec<Entry>,
    /// The ids of the rows written (or found already there).
    ids: Vec<i64>,
    /// Whether the one warning was said.
    warned: bool,
}

/// One command's use of the history (see the module docs). On every rank
/// but 0 it does nothing: rank 0 records each run once.
pub(crate) struct Session {
    tool: &'static str,
    source: &'static str,
    root: bool,
    place: Place,
    gate: Option<Gate>,
    batch: String,
    state: RefCell<State>,
}

impl Session {
    /// The session of command `source` (`run`, `ior`, …) whose messages
    /// start with `tool:`; `args` are its flags (`None` for a front-end:
    /// the environment alone). A bad setting is a usage error.
    pub(crate) fn new(
        args: Option<&HistoryArgs>,
        tool: &'static str,
        source: &'static str,
        root: bool,
    ) -> Result<Session, Failure> {
        let gate = gate(args).map_err(Failure::Usage)?;
        let place = place(
            args.and_then(|a| a.history.as_deref()),
            args.is_some_and(|a| a.no_history),
        );
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Ok(Session {
            tool,
            source,
            root,
            place,
            gate,
            batch: format!("{:x}-{:x}", now.as_nanos(), std::process::id()),
            state: RefCell::new(State::default()),
        })
    }

    /// Whether this session writes anything.
    fn records(&self) -> bool {
        self.root && self.place != Place::Off
    }

    /// Says `what` once per session, as a warning.
    fn warn(&self, what: impl std::fmt::Display) {
        let mut st = self.state.borrow_mut();
        if !st.warned {
            st.warned = true;
            eprintln!(
                "{}: warning: history: {what}; the run's own outputs are written as usual",
                self.tool
            );
        }
    }

    /// Keeps a finished run's record, to be written by [`Session::finish`].
    pub(crate) fn keep(&self, rs: &ResultSet) {
        if !self.records() {
            return;
        }
        match Entry::of_run(rs, self.source, &extra_of(&rs.host)) {
            Ok(e) => self.state.borrow_mut().kept.push(e),
            Err(e) => self.warn(format!("the record is not JSON: {e}")),
        }
    }

    /// Keeps an io500 record (see [`Session::keep`]).
    pub(crate) fn keep_io500(&self, rec: &serde_json::Value) {
        if !self.records() {
            return;
        }
        let dir = rec
            .get("datadir")
            .and_then(|d| d.as_str())
            .map(PathBuf::from)
            .unwrap_or_default();
        let host = bench::host::collect(&existing(&dir));
        self.state.borrow_mut().kept.push(Entry::of_io500(
            rec,
            &host,
            self.source,
            &extra_of(&host),
        ));
    }

    /// Writes a finished run now (a sweep's point: the points before an
    /// interrupt are kept whatever happens later).
    pub(crate) fn write(&self, rs: &ResultSet) {
        self.keep(rs);
        self.flush();
    }

    /// Writes what is kept, opening the file the first time.
    fn flush(&self) {
        let kept = std::mem::take(&mut self.state.borrow_mut().kept);
        if kept.is_empty() {
            return;
        }
        let Some(mut db) = self.open() else {
            return;
        };
        for e in &kept {
            match db.insert(e, Some(&self.batch)) {
                Ok(i) => self.state.borrow_mut().ids.push(i.id),
                Err(err) => {
                    self.warn(format!("not recorded: {err}"));
                    break;
                }
            }
        }
        self.state.borrow_mut().db = Some(Ok(db));
    }

    /// The open history, or `None` after saying why it cannot be (once).
    fn open(&self) -> Option<History> {
        let prev = self.state.borrow_mut().db.take();
        match prev {
            Some(Ok(db)) => return Some(db),
            Some(Err(())) => {
                self.state.borrow_mut().db = Some(Err(()));
                return None;
            }
            None => {}
        }
        let opened = match &self.place {
            Place::Off => return None,
            Place::Nowhere(why) => Err(why.clone()),
            Place::File { path, default } => {
                let made = if *default {
                    history::db::make_dir(path)
                } else {
                    Ok(())
                };
                made.and_then(|()| History::open(path, Access::Write))
                    .map_err(|e| e.to_string())
            }
        };
        match opened {
            Ok(db) => Some(db),
            Err(why) => {
                self.warn(format!("not recorded: {why}"));
                self.state.borrow_mut().db = Some(Err(()));
                None
            }
        }
    }

    /// The end of the command, after its own outputs: writes what is
    /// kept, then, with a baseline, judges each run written and returns
    /// [`REGRESSED`] when a clean run (`code` 0) regressed; else `code`.
    pub(crate) fn finish(&self, code: i32) -> i32 {
        if !self.root {
            return code;
        }
        self.flush();
        if code == 0 && crate::output::interrupted() {
            // Ctrl-C after the measurement, while the history was written
            // (a wait for another process's lock ends at once): the run's
            // outputs are written, the command ends as interrupted.
            return INTERRUPTED;
        }
        let Some(g) = self.gate else {
            return code;
        };
        if code != 0 {
            eprintln!(
                "{}: history: --baseline: not judged: the run did not end cleanly (exit {code})",
                self.tool
            );
            return code;
        }
        let ids = self.state.borrow().ids.clone();
        let Some(db) = self.open() else {
            eprintln!(
                "{}: history: --baseline: not judged: no history to compare with",
                self.tool
            );
            return code;
        };
        let mut regressed = false;
        for id in ids {
            match db.judge(id, g.baseline, g.threshold) {
                Ok(j) => {
                    for line in crate::history_view::gate_lines(&j) {
                        eprintln!("{}: {line}", self.tool);
                    }
                    regressed |= j.regressed();
                }
                Err(e) => self.warn(format!("--baseline: not judged: {e}")),
            }
        }
        self.state.borrow_mut().db = Some(Ok(db));
        if regressed {
            REGRESSED
        } else {
            code
        }
    }
}

impl Session {
    /// [`Session::keep`] then [`Session::finish`]: the end of a command
    /// with one record.
    pub(crate) fn finish_with(&self, rs: &ResultSet, code: i32) -> i32 {
        self.keep(rs);
        self.finish(code)
    }
}

/// `dir`, or its nearest ancestor that exists (a run's directory may be
/// gone by the end: io500 removes the stamped one it made).
fn existing(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|a| !a.as_os_str().is_empty() && a.exists())
        .unwrap_or(Path::new("/"))
        .to_path_buf()
}

/// What the record's host facts lack: this machine's CPU model, the
/// target's device and size.
fn extra_of(h: &report::HostInfo) -> Extra {
    Extra {
        cpu_model: bench::host::cpu_model(),
        device_model: bench::host::device_model(&h.fs_source),
        size_bytes: bench::host::fs_size(&existing(Path::new(&h.target))),
    }
}

/// Records the runs of a front-end that keeps its own records (fio) and
/// ends it: what [`Session::keep`] and [`Session::finish`] do, with the
/// environment's settings ([`check_env`] checked them before the run).
pub(crate) fn record_front(tool: &'static str, records: &[ResultSet], code: i32) -> i32 {
    match Session::new(None, tool, tool, true) {
        Ok(s) => {
            records.iter().for_each(|rs| s.keep(rs));
            s.finish(code)
        }
        Err(_) => code,
    }
}

/// Records an io500 run (rank 0) and ends it, as [`record_front`].
pub(crate) fn record_io500(rec: &serde_json::Value, code: i32) -> i32 {
    match Session::new(None, "io500", "io500", true) {
        Ok(s) => {
            s.keep_io500(rec);
            s.finish(code)
        }
        Err(_) => code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_are_percentages() {
        assert_eq!(parse_threshold("10"), Ok(0.10));
        assert_eq!(parse_threshold("7.5%"), Ok(0.075));
        for bad in ["0", "100", "-5", "ten", "", "1e400"] {
            assert!(parse_threshold(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn no_history_wins_and_a_flag_beats_the_environment() {
        assert_eq!(place(Some(Path::new("/x/h.db")), true), Place::Off);
        assert_eq!(
            place(Some(Path::new("/x/h.db")), false),
            Place::File {
                path: "/x/h.db".into(),
                default: false
            }
        );
        assert_eq!(existing(Path::new("/no/such/dir/at/all")), Path::new("/"));
        assert_eq!(
            existing(Path::new("/proc/self/nope")),
            Path::new("/proc/self")
        );
    }
}
