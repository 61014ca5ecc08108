//! Runs io500's phases in order, each a one-step plan on ioscale's
//! executor ([`bench::exec::execute`] of the phase's workload, see
//! [`super::steps`]), and judges each by io500's rules: what it measured
//! ([`Figures`], taken from the executor's record), its score and the
//! INVALID lines io500 would print for it.
//!
//! The front-end opens no data file and times nothing: the phase time, the
//! stonewall, the latencies, the CPU time and what each task did come
//! from the executor; the timestamp file is written through the result
//! directory's safe routine ([`crate::output::ResultDir`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bench::plan::{Plan, Render, Work};
use coord::Coordinator;
use report::{ResultSet, ThreadFiles, WorkerRecord};
use stats::LatencySummary;

use super::phases::{Group, Kind, Phase, Step as Act};
use super::steps::{self, Carried, Step, Where};
use super::{Log, Start};

/// What a phase measured, from the executor's record (rank 0's; `items`
/// on every rank).
#[derive(Debug, Clone, Default)]
pub(super) struct Figures {
    /// The executor counted the phase's work (`bytes`, `ops`): false for
    /// the timestamp and for a phase that failed before it ran.
    pub(super) counted: bool,
    /// Phase time: first task's start to last task's end, seconds.
    pub(super) elapsed_s: f64,
    pub(super) bytes: u64,
    pub(super) ops: u64,
    /// Latency of each item (`None`: not measured, as for the timestamp).
    pub(super) lat: Option<LatencySummary>,
    /// User and system CPU seconds of all ranks (`None`: not measured).
    pub(super) cpu: Option<(f64, f64)>,
    /// When the stonewall struck (or the first task finished), seconds
    /// after the start, and the items and bytes of all tasks by then.
    pub(super) stonewall: Option<(f64, u64, u64)>,
    /// The time limit (the stonewall), not the work's size, ended it.
    pub(super) time_limited: bool,
    /// Each task's items (transfers, files, entries examined), by task.
    pub(super) items: Vec<u64>,
    /// Each task's row of a data phase (times, bytes), by task.
    pub(super) data_rows: Vec<WorkerRecord>,
    /// Each task's row of a metadata phase or find, by task.
    pub(super) meta_rows: Vec<ThreadFiles>,
    /// find's matches.
    pub(super) found: Option<u64>,
    /// Bytes read that differ from what was written.
    pub(super) bad_bytes: u64,
    /// Errors counted, and the first one, named.
    pub(super) errors: u64,
    pub(super) error: Option<String>,
    pub(super) interrupted: bool,
    /// What the phase used on rank 0's node.
    pub(super) resources: Option<probe::Resources>,
    /// Payload bytes rank 0 received in the phase's exchanges.
    pub(super) gathered_bytes: Option<u64>,
}

/// A time stamp as the JSON record (RFC 3339) and result.txt (io500's
/// `YYYY-MM-DD HH:MM:SS`, local time) write it.
#[derive(Debug, Clone)]
pub(super) struct Stamp {
    pub(super) rfc3339: String,
    pub(super) io500: String,
}

impl Stamp {
    pub(super) fn now() -> Stamp {
        Stamp {
            rfc3339: bench::host::now_rfc3339(),
            io500: super::local_time("%Y-%m-%d %H:%M:%S"),
        }
    }
}

/// A finished phase, as printed and recorded.
pub(super) struct Done {
    pub(super) phase: Phase,
    pub(super) fig: Option<Figures>,
    pub(super) score: f64,
    pub(super) valid: bool,
    /// The INVALID lines of the phase itself (io500 prints them while the
    /// phase runs, before its stonewall figure).
    pub(super) own: Vec<String>,
    /// The INVALID lines io500's main loop adds after the phase.
    pub(super) after: Vec<String>,
    pub(super) t_start: Stamp,
    pub(super) t_end: Stamp,
}

impl Done {
    /// Every INVALID line of the phase, in io500's order.
    pub(super) fn reasons(&self) -> impl Iterator<Item = &String> {
        self.own.iter().chain(&self.after)
    }

    /// The phase time (0 when it did not run).
    pub(super) fn elapsed(&self) -> f64 {
        self.fig.as_ref().map_or(0.0, |f| f.elapsed_s)
    }
}

/// What the phases did.
#[derive(Default)]
pub(super) struct Phases {
    pub(super) carried: Carried,
    pub(super) done: Vec<Done>,
    pub(super) interrupted: bool,
    pub(super) errors: bool,
    /// Why the whole run is invalid.
    pub(super) reasons: Vec<String>,
}

/// Runs the plan's phases in order until the end, an interrupt or a
/// failed phase; every rank makes the same collective calls.
pub(super) fn run_phases(
    start: &Start,
    coord: &dyn Coordinator,
    stop: &Arc<AtomicBool>,
    run: &mut Phases,
    log: &mut Log,
) {
    let root = coord.rank() == 0;
    let w = start.place();
    let mut drop_warned = false;
    for p in &start.plan {
        // Every rank asks, whatever its own flag says (a collective call).
        if coord.any(stop.load(Ordering::Relaxed)) {
            run.interrupted = true;
            break;
        }
        if let Some(why) = steps::missing_input(p, &run.carried) {
            if root {
                eprintln!("io500: note: {}: not run: {why}", p.name);
            }
            if p.group != Group::None && !p.optional {
                run.reasons.push(format!("{} did not run ({why})", p.name));
            }
            continue;
        }
        // A phase directory swapped since it was made: refused before the
        // phase opens anything in it.
        let swapped = start.scaffold.as_ref().and_then(|s| s.verify().err());
        if coord.any(swapped.is_some()) {
            if let Some(e) = swapped {
                eprintln!("io500: error: {}: {e}", p.name);
            }
            run.errors = true;
            break;
        }
        if start.cfg.drop_caches && engine::sys::drop_caches().is_err() && root && !drop_warned {
            drop_warned = true;
            eprintln!("io500: warning: drop-caches: cannot write /proc/sys/vm/drop_caches (needs root); caches kept");
        }
        let t_start = Stamp::now();
        let fig = run_step(p, &w, start, coord, stop, &mut run.carried);
        let d = judge(p, fig, &start.cfg, t_start, Stamp::now());
        for r in d.reasons() {
            log.say(format!("ERROR INVALID {r}"));
        }
        log.say(super::output::result_line(p, d.score, d.elapsed(), d.valid));
        let (stopped, failed) = d.fig.as_ref().map_or((false, true), |f| {
            (f.interrupted, f.error.is_some() || f.bad_bytes > 0)
        });
        if root {
            say_failure(&d);
        }
        run.done.push(d);
        if coord.any(stopped) {
            run.interrupted = true;
            break;
        }
        if coord.any(failed) {
            run.errors = true;
            break;
        }
    }
    if run.interrupted {
        run.reasons.push("interrupted".into());
    }
    if run.errors {
        run.reasons.push("a phase failed".into());
    }
}

/// Runs phase `p` on the executor and records what it leaves for the
/// later phases; `None` when it could not run at all.
fn run_step(
    p: &Phase,
    w: &Where,
    start: &Start,
    coord: &dyn Coordinator,
    stop: &Arc<AtomicBool>,
    carried: &mut Carried,
) -> Option<Figures> {
    let step = match steps::step_of(p, w, carried) {
        Ok(s) => s,
        Err(e) => {
            // Checked at the start for every phase: not met here.
            return Some(failed(format!("{}: {e}", p.name)));
        }
    };
    let argv = vec![format!("io500 {}", p.name)];
    let opts = bench::plan::Options {
        probe: true,
        node_summary: true,
        brief_rows: true,
        share_items: true,
        ..Default::default()
    };
    let work: Work = match step {
        Step::Timestamp => return timestamp(start, coord, carried),
        Step::Data(s) => s.into(),
        Step::Meta(s) => s.into(),
        Step::Find(s) => s.into(),
    };
    // One phase, one plan: io500 judges, logs and carries counts between
    // its phases, so each runs as a plan of its own on the executor.
    let plan = Plan::single(work)
        .with_options(opts)
        .rendered_by(Render::Io500);
    let out = bench::exec::execute(&plan, bench::exec::Env::new(argv, stop.clone(), coord))
        .map(bench::exec::Executed::into_single);
    let fig = match out {
        Ok(out) => figures(&out),
        Err(bench::Error::Interrupted) => Figures {
            interrupted: true,
            ..Default::default()
        },
        Err(e) => failed(e.to_string()),
    };
    let completed = fig.error.is_none() && !fig.interrupted;
    steps::carry(p, carried, &fig.items, completed);
    Some(fig)
}

/// A phase that failed before it measured anything.
fn failed(error: String) -> Figures {
    Figures {
        errors: 1,
        error: Some(error),
        ..Default::default()
    }
}

/// The figures of a phase from the executor's outcome.
fn figures(out: &bench::run::Outcome) -> Figures {
    let r: &ResultSet = &out.results;
    let mut f = Figures {
        items: out.items.first().cloned().unwrap_or_default(),
        interrupted: r.interrupted,
        resources: out.probes.first().map(|p| p.resources.clone()),
        gathered_bytes: r
            .host
            .cluster
            .as_ref()
            .and_then(|c| c.gathers.first())
            .map(|g| g.bytes),
        errors: r.errors.len() as u64,
        error: r.errors.first().map(|e| {
            let file = if e.file.is_empty() {
                String::new()
            } else {
                format!(" {}", e.file)
            };
            format!("task {}: {}{file}: {}", e.worker, e.op, e.message)
        }),
        ..Default::default()
    };
    if let Some(p) = r.phases.first() {
        f.counted = true;
        f.elapsed_s = p.elapsed_s;
        f.bytes = p.bytes;
        f.ops = p.ops;
        f.lat = Some(p.lat_us);
        f.cpu = Some((p.cpu_user_s, p.cpu_sys_s));
        let sw_items = p.files.as_ref().map_or(sw_ops(p), |x| x.stonewall_files);
        f.stonewall = Some((p.stonewall.s, sw_items, p.stonewall.bytes));
        f.time_limited = p.time_limited;
        f.data_rows = p.workers.clone();
        f.meta_rows = p
            .files
            .as_ref()
            .map(|x| x.threads.clone())
            .unwrap_or_default();
        f.found = p.files.as_ref().and_then(|x| x.matched);
        f.bad_bytes = p.verify.as_ref().map_or(0, |v| v.bad_bytes);
    } else if let Some(p) = r.failed_phases.first() {
        // What a failed phase did before it stopped; its latencies and
        // CPU time are not recorded (left out, not shown as 0).
        f.counted = true;
        f.elapsed_s = p.partial_elapsed_s;
        f.bytes = p.partial_bytes;
        f.ops = p.partial_ops;
    }
    f
}

/// The transfers of a data phase done by its stonewall (its bytes by then
/// in transfers of the phase's size).
fn sw_ops(p: &report::PhaseRecord) -> u64 {
    if p.bytes == 0 || p.ops == 0 {
        return 0;
    }
    let xfer = p.bytes / p.ops;
    p.stonewall.bytes.checked_div(xfer).unwrap_or(0)
}

/// The timestamp phase: the driver library makes the empty file find's
/// `-newer` compares with in the held result directory and times it
/// (`bench::stamp`); every rank learns its modification time. This only
/// renders the figure.
fn timestamp(start: &Start, coord: &dyn Coordinator, carried: &mut Carried) -> Option<Figures> {
    let dir = start.resdir.as_ref().map(|rd| rd.held());
    let made = bench::stamp::stamp::<engine::backend::posix::Posix>(dir, "timestampfile", coord);
    carried.stamp = made.as_ref().ok().map(|s| s.modified);
    Some(match made {
        Ok(s) => Figures {
            elapsed_s: s.elapsed_s,
            ..Default::default()
        },
        Err(e) => failed(format!("timestampfile: {e}")),
    })
}

/// Names a phase's error and bad bytes on standard error.
fn say_failure(d: &Done) {
    let Some(f) = &d.fig else { return };
    if let Some(e) = &f.error {
        eprintln!("io500: error: {}: {e}", d.phase.name);
    }
    if f.bad_bytes > 0 {
        eprintln!(
            "io500: error: {}: {} bytes read differ from what was written",
            d.phase.name, f.bad_bytes
        );
    }
}

/// Scores a phase and applies io500's validity rules to it, with
/// io500's words (src/main.c, phase_ior.c, phase_find.c of io500-isc26_v2).
pub(super) fn judge(
    p: &Phase,
    fig: Option<Figures>,
    cfg: &super::config::Config,
    t_start: Stamp,
    t_end: Stamp,
) -> Done {
    let mut d = Done {
        phase: *p,
        score: 0.0,
        valid: true,
        own: Vec::new(),
        after: Vec::new(),
        fig: None,
        t_start,
        t_end,
    };
    let Some(f) = fig else {
        d.after.push(format!("{} did not run", p.name));
        d.valid = false;
        return d;
    };
    let t = f.elapsed_s;
    if t > 0.0 && p.kind != Kind::Timestamp {
        d.score = if p.is_bw() {
            f.bytes as f64 / t / (1u64 << 30) as f64
        } else {
            f.ops as f64 / t / 1000.0
        };
    }
    let sw = cfg.stonewall_s as f64;
    // A phase the stonewall ended ran until it: the stonewall counts from
    // the phase's start barrier, its time from the first task's start, a
    // few milliseconds later.
    let ran = if f.time_limited { t.max(sw) } else { t };
    let ior_write = p.is_bw() && p.step == Act::Write;
    if ior_write && f.errors > 0 {
        d.own.push(format!(
            "Errors ({}) occured during phase in IOR. This invalidates your run.",
            f.errors
        ));
    }
    if ior_write && ran < sw {
        let hit = f.stonewall.map_or(t, |s| s.0);
        d.own.push(format!(
            "Write phase needed {t:.6}s instead of stonewall {}s. Stonewall was hit at {hit:.1}s",
            cfg.stonewall_s
        ));
    }
    if matches!(p.kind, Kind::Find { .. }) && f.found == Some(0) && !f.interrupted {
        d.own
            .push("Find didn't find anything, this is likely invalid.".into());
    }
    if p.checks_runtime() && ran < sw {
        d.after.push(format!(
            "Runtime of phase ({t:.6}) is below stonewall time. This shouldn't happen!"
        ));
    } else if d.score == 0.0 && p.group != Group::None && !f.interrupted {
        d.after.push("Resulting score shouldn't be 0.0".into());
    }
    if p.checks_runtime() && ran < cfg.required_stonewall() as f64 {
        d.after
            .push("Runtime is smaller than expected minimum runtime".into());
    }
    // What io500 does not say in words, ioscale does.
    if f.error.is_some() && !ior_write {
        d.after.push(format!("{} failed", p.name));
    }
    if f.bad_bytes > 0 {
        d.after.push(format!(
            "{} read data that differ from what was written",
            p.name
        ));
    }
    if f.interrupted {
        d.after.push(format!("{} was interrupted", p.name));
    }
    d.valid = d.own.is_empty() && d.after.is_empty();
    d.fig = Some(f);
    d
}

#[cfg(test)]
mod tests {
    use super::super::phases::ALL;
    use super::*;

    fn judged(name: &str, elapsed_s: f64, time_limited: bool, sw: u64) -> Done {
        let p = *ALL.iter().find(|p| p.name == name).unwrap();
        let cfg = super::super::config::Config {
            stonewall_s: sw,
            ..Default::default()
        };
        let fig = Figures {
            counted: true,
            elapsed_s,
            bytes: 1 << 30,
            ops: 1000,
            time_limited,
            items: vec![500, 500],
            ..Default::default()
        };
        judge(&p, Some(fig), &cfg, Stamp::now(), Stamp::now())
    }

    #[test]
    fn a_write_the_stonewall_ended_ran_until_it() {
        // The rules' 300 s stonewall struck: 299.998 s from the first
        // task's start is the phase, from its barrier, past 300 s.
        let d = judged("ior-easy-write", 299.998, true, 300);
        assert!(d.valid, "{:?}", d.reasons().collect::<Vec<_>>());
        let d = judged("mdtest-hard-write", 299.998, true, 300);
        assert!(d.valid, "{:?}", d.reasons().collect::<Vec<_>>());
        // Its size ended it first: io500's three lines.
        let d = judged("ior-easy-write", 120.0, false, 300);
        let r: Vec<&String> = d.reasons().collect();
        assert!(r[0].starts_with("Write phase needed 120.000000s instead of stonewall 300s"));
        assert!(r[1].starts_with("Runtime of phase (120.000000) is below stonewall time"));
        assert_eq!(r[2], "Runtime is smaller than expected minimum runtime");
        assert!(!d.valid);
        // Reads are not held to the stonewall.
        assert!(judged("ior-easy-read", 1.0, false, 300).valid);
    }
}
