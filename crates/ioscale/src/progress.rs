//! The live progress of `run`, `meta` and `sweep` on standard error.
//!
//! A thread of its own samples the running phase's counters
//! ([`engine::live`]) four times a second, so the measuring threads never
//! print or lock. `bar` redraws one line on a terminal: sweep point k/n,
//! repetition r/m, phase, a bar of the phase's share done, the live rate
//! of the running phase and the ETA. `plain` (the default when standard
//! error is not a terminal, as under sbatch) prints one line per finished
//! phase and sweep point with its figures, so a batch log shows how far a
//! job got. `none` prints nothing. Only rank 0 of an MPI launch displays.
//! The front-ends that emulate another tool take the mode from their own
//! `--progress` or from `IOSCALE_PROGRESS` ([`front_mode`]), and show
//! nothing off a terminal unless `plain` is asked for.

use std::io::{IsTerminal, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use spec::format_size;

pub use compat::progress::{front_mode, ProgressMode};

/// How often the display samples the counters.
const TICK: Duration = Duration::from_millis(250);
/// `run` and `meta` show the live line only for phases longer than this.
const QUIET_START: Duration = Duration::from_secs(1);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Bar,
    Plain,
}

/// The sweep's side of the display.
#[derive(Default)]
struct SweepState {
    total: usize,
    done: usize,
    current: String,
    point_started: Option<Instant>,
    finished_time: Duration,
    finished_here: usize,
    /// Points of the running group, whose repetitions take turns (0: one
    /// point runs whole); `point_started` is then the group's start.
    group: usize,
    /// `done` when the group began.
    group_base: usize,
    /// The group's point whose repetition runs now.
    position: usize,
    /// What each point of the group has run so far, and when the running
    /// repetition began.
    spent: Vec<Duration>,
    rep_began: Option<Instant>,
    /// The work (bytes or files every phase of every repetition moves) of
    /// each point still to run, in the order they run ([`Display::plan_work`]);
    /// empty when not told: the ETA then counts points.
    work: Vec<f64>,
    /// `done` when the work was planned: `work[done - work_base]` is the
    /// next point's.
    work_base: usize,
    /// Work per second of the last point (or group) that finished here:
    /// the rate the points after it are expected to go at (the closest in
    /// workers of those measured).
    rate: Option<f64>,
}

impl SweepState {
    /// The running point's number, k of `[point k/n]`: a group's point j
    /// is the j-th after the points finished before the group, whatever
    /// order its repetitions take.
    fn number(&self) -> usize {
        let k = if self.group > 0 {
            self.group_base + self.position + 1
        } else {
            self.done + 1
        };
        k.min(self.total)
    }

    /// Points not finished and not running (in the running group).
    fn after(&self) -> usize {
        let running_to = if self.group > 0 {
            self.group_base + self.group
        } else {
            self.done + 1
        };
        self.total.saturating_sub(running_to)
    }

    /// The planned work of the points from `from` to `to` (sweep order
    /// counts, as `done`), 0 where not planned.
    fn work_between(&self, from: usize, to: usize) -> f64 {
        let at = |k: usize| k.saturating_sub(self.work_base);
        self.work
            .get(at(from).min(self.work.len())..at(to).min(self.work.len()))
            .map_or(0.0, |w| w.iter().sum())
    }

    /// The running point's (or group's) planned work.
    fn running_work(&self) -> f64 {
        let from = if self.group > 0 {
            self.group_base
        } else {
            self.done
        };
        self.work_between(from, from + self.group.max(1))
    }

    /// Records that the running point (or group) of `work` finished in
    /// `took`: its rate is the next points' estimate.
    fn finished(&mut self, work: f64, took: Duration) {
        if work > 0.0 && took > Duration::ZERO {
            self.rate = Some(work / took.as_secs_f64());
        }
    }

    /// Ends the running repetition's time span.
    fn close_span(&mut self) {
        if let Some(b) = self.rep_began.take() {
            if let Some(t) = self.spent.get_mut(self.position) {
                *t += b.elapsed();
            }
        }
    }
}

/// What the display knows besides the live counters.
struct State {
    style: Style,
    /// Lines waiting to be printed.
    lines: Vec<String>,
    /// Repetitions and recorded phases per repetition of the current job.
    reps: u32,
    phases_per_rep: usize,
    /// Recorded phases of the current job (or sweep point) so far.
    phases_done: usize,
    ranks: u32,
    sweep: Option<SweepState>,
    /// `plain`: the last interval line printed: its phase (operation,
    /// repetition), its interval's start (ns) and when it was printed.
    interval_said: Option<(String, u32, u64, Instant)>,
}

/// The running display; dropping it prints what is left and clears the
/// line.
pub struct Display {
    state: Arc<Mutex<State>>,
    stop: Option<mpsc::Sender<()>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Display {
    /// Starts the display of a job of `reps` repetitions of
    /// `phases_per_rep` phases on `ranks` ranks; `None` for `--progress
    /// none` (call it on rank 0 only).
    pub fn start(mode: ProgressMode, reps: u32, phases_per_rep: usize, ranks: u32) -> Option<Self> {
        Self::start_with(mode, reps, phases_per_rep, ranks, None)
    }

    /// As [`Display::start`], for a sweep of `total` points of which `done`
    /// are already done (resumed).
    pub fn start_sweep(
        mode: ProgressMode,
        reps: u32,
        phases_per_rep: usize,
        ranks: u32,
        total: usize,
        done: usize,
    ) -> Option<Self> {
        let sweep = SweepState {
            total,
            done,
            ..Default::default()
        };
        Self::start_with(mode, reps, phases_per_rep, ranks, Some(sweep))
    }

    fn start_with(
        mode: ProgressMode,
        reps: u32,
        phases_per_rep: usize,
        ranks: u32,
        sweep: Option<SweepState>,
    ) -> Option<Self> {
        let style = match mode {
            ProgressMode::None => return None,
            ProgressMode::Bar => Style::Bar,
            ProgressMode::Plain => Style::Plain,
            ProgressMode::Auto => {
                if std::io::stderr().is_terminal() {
                    Style::Bar
                } else {
                    Style::Plain
                }
            }
        };
        engine::live::listen(true);
        let state = Arc::new(Mutex::new(State {
            style,
            lines: Vec::new(),
            reps: reps.max(1),
            phases_per_rep: phases_per_rep.max(1),
            phases_done: 0,
            ranks,
            sweep,
            interval_said: None,
        }));
        let (tx, rx) = mpsc::channel::<()>();
        let st = Arc::clone(&state);
        let handle = std::thread::Builder::new()
            .name("ioscale-progress".into())
            .spawn(move || display_loop(&st, &rx))
            .ok()?;
        Some(Display {
            state,
            stop: Some(tx),
            handle: Some(handle),
        })
    }

    /// The work of each sweep point still to run, in the order they run
    /// (bytes, or files, of every phase of every repetition): the ETA
    /// then counts work left, not points left, as later points with more
    /// workers do more (`ETA 13s` of a sweep that took 25.6 s more).
    pub fn plan_work(&self, work: Vec<f64>) {
        let mut s = lock(&self.state);
        if let Some(sw) = s.sweep.as_mut() {
            sw.work_base = sw.done;
            sw.work = work;
        }
    }

    /// The sweep's points are now `total` (an adaptive sweep learns its
    /// points count by count).
    pub fn set_total(&self, total: usize) {
        let mut s = lock(&self.state);
        if let Some(sw) = s.sweep.as_mut() {
            sw.total = total;
        }
    }

    /// A sweep point starts: `what` names it.
    pub fn point_started(&self, what: &str) {
        let mut s = lock(&self.state);
        absorb(&mut s);
        s.phases_done = 0;
        if let Some(sw) = s.sweep.as_mut() {
            sw.current = what.to_string();
            sw.point_started = Some(Instant::now());
            sw.group = 0;
        }
    }

    /// The next `points` points run together, their repetitions taking
    /// turns; each repetition is announced by [`Display::rep_started`].
    pub fn group_started(&self, points: usize) {
        let mut s = lock(&self.state);
        absorb(&mut s);
        s.phases_done = 0;
        if let Some(sw) = s.sweep.as_mut() {
            sw.point_started = Some(Instant::now());
            sw.group = points;
            sw.group_base = sw.done;
            sw.position = 0;
            sw.spent = vec![Duration::ZERO; points];
            sw.rep_began = None;
        }
    }

    /// A repetition of the group's point at `position` (from 0) starts;
    /// `what` names the point.
    pub fn rep_started(&self, what: &str, position: usize) {
        let mut s = lock(&self.state);
        absorb(&mut s);
        if let Some(sw) = s.sweep.as_mut() {
            sw.close_span();
            sw.current = what.to_string();
            sw.position = position;
            sw.rep_began = Some(Instant::now());
        }
    }

    /// A line for standard error ("ioscale: " is put before it), printed
    /// by the display thread above its live line.
    pub fn say(&self, line: String) {
        let mut s = lock(&self.state);
        absorb(&mut s);
        s.lines.push(line);
    }

    /// A sweep point finished; `figures` are its measured results.
    pub fn point_done(&self, figures: &str) {
        let mut s = lock(&self.state);
        // The point's phases are told under its own name.
        absorb(&mut s);
        if let Some(sw) = s.sweep.as_mut() {
            let number = sw.number();
            let took = if sw.group > 0 {
                // Its own repetitions' time; the group's counts for the
                // ETA once its last point is done.
                sw.close_span();
                let own = sw.spent.get(sw.position).copied();
                sw.done += 1;
                if sw.done >= sw.group_base + sw.group {
                    if let Some(t) = sw.point_started.take() {
                        let work = sw.running_work();
                        sw.finished(work, t.elapsed());
                        sw.finished_here += sw.group;
                        sw.finished_time += t.elapsed();
                    }
                    sw.group = 0;
                }
                own
            } else {
                let took = sw.point_started.take().map(|t| t.elapsed());
                let work = sw.running_work();
                sw.done += 1;
                if let Some(t) = took {
                    sw.finished(work, t);
                    sw.finished_here += 1;
                    sw.finished_time += t;
                }
                took
            };
            let left = sw.total.saturating_sub(sw.done);
            let eta = if left == 0 {
                String::new()
            } else {
                let per = match (sw.finished_here, sw.point_started) {
                    (0, Some(t)) if sw.group > 0 => t.elapsed() / sw.group as u32,
                    (n, _) => sw.finished_time / n.max(1) as u32,
                };
                // The work left at the last rate; points left × the mean
                // point where the work is not known. Inside a group its
                // points still to finish count from their own group.
                let by_work = sw.rate.filter(|_| !sw.work.is_empty()).map(|r| {
                    safefs::duration_from_secs_f64(sw.work_between(sw.done, sw.total) / r)
                });
                let eta = by_work.unwrap_or(per * left as u32);
                format!("; {left} left, ETA {}", fmt_eta(eta))
            };
            let line = format!(
                "[point {}/{}] {} done{}: {figures}{eta}",
                number,
                sw.total,
                sw.current,
                took.map(|t| format!(" in {}", fmt_secs_f(t)))
                    .unwrap_or_default(),
            );
            s.lines.push(line);
        }
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        engine::live::listen(false);
    }
}

/// Takes the phases recorded since the last look: counted, and in `plain`
/// a line each.
fn absorb(s: &mut State) {
    for f in engine::live::take_finished() {
        s.phases_done += 1;
        if s.style == Style::Plain {
            let l = phase_line(s, &f);
            s.lines.push(l);
        }
    }
}

/// The display thread: samples, prints, and on the stop signal prints the
/// rest and clears its line.
fn display_loop(state: &Mutex<State>, stop: &mpsc::Receiver<()>) {
    let mut drawn = false;
    loop {
        let last = !matches!(stop.recv_timeout(TICK), Err(RecvTimeoutError::Timeout));
        let mut s = lock(state);
        absorb(&mut s);
        if s.style == Style::Plain && !last {
            interval_line(&mut s, engine::live::snapshot());
        }
        let bar = (s.style == Style::Bar && !last)
            .then(|| bar_line(&s, engine::live::snapshot()))
            .flatten();
        let mut err = std::io::stderr().lock();
        if drawn {
            let _ = write!(err, "\r\x1b[K");
            drawn = false;
        }
        for l in s.lines.drain(..) {
            let _ = writeln!(err, "ioscale: {l}");
        }
        if let Some(b) = bar {
            let _ = write!(err, "{}", fit(&b, term_width()));
            drawn = true;
        }
        let _ = err.flush();
        drop(err);
        drop(s);
        if last {
            break;
        }
    }
}

/// "write rep 2/3: 64.0 MiB in 0.12 s, 533.3 MiB/s" (the recorded figures).
fn phase_line(s: &State, f: &engine::live::Finished) -> String {
    let mut line = String::new();
    if let Some(sw) = &s.sweep {
        line.push_str(&format!(
            "[point {}/{}] {} ",
            sw.number(),
            sw.total,
            sw.current
        ));
    }
    line.push_str(&format!("{} rep {}/{}: ", f.op, f.rep + 1, s.reps));
    match f.files {
        Some(n) => line.push_str(&format!(
            "{n} files in {}, {:.1} files/s",
            fmt_elapsed(f.elapsed_s),
            f.ops_s
        )),
        None => line.push_str(&format!(
            "{} in {}, {:.1} MiB/s, {:.0} IOPS",
            format_size(f.bytes),
            fmt_elapsed(f.elapsed_s),
            f.bw_mib_s,
            f.ops_s
        )),
    }
    line
}

/// How often `plain` prints the running phase's last interval: once a
/// second in its first minute, then every ten seconds, so an hour-long
/// phase adds some 420 lines to a batch log, not 3600.
fn interval_every(phase_elapsed: Duration) -> Duration {
    if phase_elapsed < Duration::from_secs(60) {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(10)
    }
}

/// `plain`: "write rep 1/3, 1.20-1.40 s: 512.3 MiB/s, 131072 IOPS", the
/// running phase's last completed interval (from the series the record
/// keeps, [`engine::live_interval`]), at most every [`interval_every`],
/// after the phase's first second.
fn interval_line(s: &mut State, snap: Option<engine::live::Snapshot>) {
    let Some(p) = snap.filter(|p| p.elapsed >= QUIET_START) else {
        return;
    };
    let Some(iv) = engine::live_interval::latest() else {
        return;
    };
    let due = match &s.interval_said {
        Some((op, rep, start, at)) if *op == p.info.op && *rep == p.info.rep => {
            iv.start_ns != *start && at.elapsed() >= interval_every(p.elapsed)
        }
        _ => true,
    };
    if !due {
        return;
    }
    let mut line = String::new();
    if let Some(sw) = &s.sweep {
        line.push_str(&format!(
            "[point {}/{}] {} ",
            sw.number(),
            sw.total,
            sw.current
        ));
    }
    let (from, to) = (
        iv.start_ns as f64 / 1e9,
        (iv.start_ns + iv.dur_ns) as f64 / 1e9,
    );
    let who = if s.ranks > 1 { "rank 0 " } else { "" };
    line.push_str(&format!(
        "{} rep {}/{}, {from:.3}-{to:.3} s: {who}{}",
        p.info.op,
        p.info.rep + 1,
        s.reps,
        interval_figures(p.info.moves_data, &iv)
    ));
    s.lines.push(line);
    s.interval_said = Some((p.info.op, p.info.rep, iv.start_ns, Instant::now()));
}

/// An interval's rates: MiB/s and IOPS of a data phase, files/s of a
/// metadata phase.
fn interval_figures(moves_data: bool, iv: &engine::live_interval::Interval) -> String {
    if moves_data {
        format!("{:.1} MiB/s, {:.0} IOPS", iv.mib_s(), iv.ops_s())
    } else {
        format!("{:.0} files/s", iv.ops_s())
    }
}

/// The live line, or `None` when there is nothing worth showing (between
/// phases of a plain run, or in a run's first second).
fn bar_line(s: &State, snap: Option<engine::live::Snapshot>) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    // What matters most comes first: a narrow terminal cuts the end.
    if let Some(sw) = &s.sweep {
        parts.push(format!("[point {}/{}]", sw.number(), sw.total));
    } else if snap.as_ref().is_none_or(|p| p.elapsed < QUIET_START) {
        return None;
    }
    let mut phase_frac = 0.0;
    if let Some(p) = &snap {
        let secs = p.elapsed.as_secs_f64();
        let mut frac = if p.info.expected > 0 {
            let done = if p.info.moves_data { p.bytes } else { p.units };
            (done as f64 / p.info.expected as f64).min(1.0)
        } else {
            0.0
        };
        if let Some(limit) = p.info.time_limit {
            frac = frac.max((secs / limit.as_secs_f64()).min(1.0));
        }
        phase_frac = frac;
        let filled = (frac * 10.0).round() as usize;
        let mut seg = format!(
            "rep {}/{} {} [{}{}] {:>3.0}%",
            p.info.rep + 1,
            s.reps,
            p.info.op,
            "#".repeat(filled),
            "-".repeat(10 - filled),
            frac * 100.0
        );
        if p.units > 0 && secs > 0.0 {
            let who = if s.ranks > 1 { "rank 0 " } else { "" };
            if p.info.moves_data {
                let mib = p.bytes as f64 / (1u64 << 20) as f64 / secs;
                seg.push_str(&format!(" {who}{mib:.1} MiB/s"));
            } else {
                seg.push_str(&format!(" {who}{:.0} files/s", p.units as f64 / secs));
            }
            if let Some(iv) = engine::live_interval::latest() {
                seg.push_str(&format!(
                    " (last {}: {})",
                    fmt_elapsed(iv.dur_ns as f64 / 1e9),
                    interval_figures(p.info.moves_data, &iv)
                ));
            }
        }
        parts.push(seg);
        if s.sweep.is_none() {
            if frac > 0.0 {
                let left = secs * (1.0 - frac) / frac;
                parts.push(format!(
                    "ETA {}",
                    fmt_eta(safefs::duration_from_secs_f64(left))
                ));
            }
            return Some(parts.join("  "));
        }
    }
    if let Some(sw) = &s.sweep {
        if let Some(eta) = sweep_eta(s, sw, phase_frac) {
            parts.push(format!("ETA {}", fmt_eta(eta)));
        }
        parts.push(sw.current.clone());
    }
    Some(parts.join("  "))
}

/// What is left of the sweep: the rest of this point (from its share done
/// so far) and the points after it (from the points finished here, or
/// this one's estimate while none has).
fn sweep_eta(s: &State, sw: &SweepState, phase_frac: f64) -> Option<Duration> {
    let started = sw.point_started?;
    let spent = started.elapsed().as_secs_f64();
    // A group's points run together: the fraction done is the group's.
    let running = sw.group.max(1) as f64;
    let phases = (s.reps as usize * s.phases_per_rep) as f64 * running;
    let frac = ((s.phases_done as f64 + phase_frac) / phases).min(1.0);
    let after = sw.after() as f64;
    let this_total = (frac > 0.0).then(|| spent / frac);
    let per_point = if sw.finished_here > 0 {
        Some(sw.finished_time.as_secs_f64() / sw.finished_here as f64)
    } else {
        this_total.map(|t| t / running)
    };
    let here = this_total.map(|t| (t - spent).max(0.0)).or_else(|| {
        // Nothing done of this point yet: its work at the last rate, or a
        // finished point's time.
        let by_work = sw
            .rate
            .filter(|r| *r > 0.0 && !sw.work.is_empty())
            .map(|r| sw.running_work() / r);
        by_work.or(per_point).map(|p| (p - spent).max(0.0))
    })?;
    // The points after it: their work at the last rate (this one's own,
    // while none has finished), else points × a point's time.
    let own_rate = this_total
        .filter(|t| *t > 0.0)
        .map(|t| sw.running_work() / t)
        .filter(|r| *r > 0.0 && !sw.work.is_empty());
    let later = match sw.rate.or(own_rate) {
        Some(r) if !sw.work.is_empty() => {
            Some(sw.work_between(sw.total - sw.after(), sw.total) / r)
        }
        _ => per_point.map(|p| after * p),
    }?;
    Some(safefs::duration_from_secs_f64(here + later))
}

/// An ETA that never reads "0s" while something is left.
fn fmt_eta(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        "<1s".into()
    } else {
        fmt_secs(d)
    }
}

/// Whole seconds, minutes or hours.
pub fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s / 60) % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// [`fmt_elapsed`] below a minute, else as [`fmt_secs`].
fn fmt_secs_f(d: Duration) -> String {
    if d < Duration::from_secs(60) {
        fmt_elapsed(d.as_secs_f64())
    } else {
        fmt_secs(d)
    }
}

/// A phase's elapsed time in seconds with three significant digits
/// ("0.00107 s", "2.10 s"): never rounded to zero, always in one unit.
fn fmt_elapsed(secs: f64) -> String {
    let decimals = if secs > 0.0 {
        (2 - secs.log10().floor() as i32).clamp(0, 9) as usize
    } else {
        3
    };
    format!("{secs:.decimals$} s")
}

/// The terminal's width in columns (80 when it cannot tell).
fn term_width() -> usize {
    // SAFETY: TIOCGWINSZ fills a winsize; a zeroed one is valid input.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        ws.ws_col as usize
    } else {
        80
    }
}

/// Cuts a line to the terminal so the carriage return redraws it.
fn fit(line: &str, width: usize) -> String {
    line.chars().take(width.saturating_sub(1).max(1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(sweep: Option<SweepState>) -> State {
        State {
            style: Style::Bar,
            lines: Vec::new(),
            reps: 2,
            phases_per_rep: 1,
            phases_done: 0,
            ranks: 1,
            sweep,
            interval_said: None,
        }
    }

    #[test]
    fn elapsed_keeps_three_digits() {
        assert_eq!(fmt_elapsed(0.00107), "0.00107 s");
        assert_eq!(fmt_elapsed(2.1), "2.10 s");
        assert_eq!(fmt_elapsed(123.4), "123 s");
    }

    #[test]
    fn eta_never_reads_zero() {
        assert_eq!(fmt_eta(Duration::from_millis(300)), "<1s");
        assert_eq!(fmt_eta(Duration::from_secs(61)), "1m01s");
    }

    #[test]
    fn sweep_eta_from_the_first_point() {
        let sw = SweepState {
            total: 3,
            done: 0,
            point_started: Some(Instant::now() - Duration::from_secs(2)),
            ..Default::default()
        };
        let s = state(None);
        // Half of rep 1 of 2 done in 2 s: 6 s left here, 8 s per point
        // after it, two points after it.
        let eta = sweep_eta(&s, &sw, 0.5).unwrap().as_secs_f64();
        assert!((21.5..22.5).contains(&eta), "{eta}");
        // Nothing measured yet: no guess.
        assert!(sweep_eta(&s, &sw, 0.0).is_none());
    }

    /// Points whose work grows with their workers (1, 2, 4 and 8 workers
    /// at --scale per-thread): the ETA counts the work left at the last
    /// point's rate, not points left at the mean point (it said 13 s of
    /// a sweep that took 25.6 s more).
    #[test]
    fn sweep_eta_counts_the_work_left() {
        let mut sw = SweepState {
            total: 4,
            work: vec![1.0, 2.0, 4.0, 8.0],
            ..Default::default()
        };
        // The first point (1 unit) took 1 s.
        sw.point_started = Some(Instant::now() - Duration::from_secs(1));
        let work = sw.running_work();
        assert_eq!(work, 1.0);
        sw.finished(work, Duration::from_secs(1));
        sw.done = 1;
        sw.finished_here = 1;
        sw.finished_time = Duration::from_secs(1);
        // The second (2 units) has run 1 s and is half done: 1 s left
        // here, then 4 + 8 units at 1 unit/s.
        sw.point_started = Some(Instant::now() - Duration::from_secs(1));
        let s = state(None);
        let eta = sweep_eta(&s, &sw, 1.0).unwrap().as_secs_f64();
        assert!((12.5..13.5).contains(&eta), "{eta}");
        // Not planned: points × the mean point, as before.
        sw.work.clear();
        let eta = sweep_eta(&s, &sw, 1.0).unwrap().as_secs_f64();
        assert!((2.5..3.5).contains(&eta), "{eta}");
    }

    #[test]
    fn points_taking_turns_keep_their_numbers_and_share_the_eta() {
        // One point done, then a group of two whose repetitions take
        // turns: the second of the group is point 3 of 5 while it runs,
        // and two points come after the group.
        let sw = SweepState {
            total: 5,
            done: 1,
            group: 2,
            group_base: 1,
            position: 1,
            point_started: Some(Instant::now() - Duration::from_secs(4)),
            ..Default::default()
        };
        assert_eq!(sw.number(), 3);
        assert_eq!(sw.after(), 2);
        // Half of the group's 2 × 2 phases done in 4 s: 4 s left for the
        // group, 4 s per point after it (none finished yet), 2 after it.
        let mut s = state(None);
        s.phases_done = 2;
        let eta = sweep_eta(&s, &sw, 0.0).unwrap().as_secs_f64();
        assert!((11.5..12.5).contains(&eta), "{eta}");
        // Not in a group: the point after those done.
        let one = SweepState {
            total: 5,
            done: 1,
            ..Default::default()
        };
        assert_eq!((one.number(), one.after()), (2, 3));
    }

    #[test]
    fn the_live_line_shows_phase_rate_and_no_placeholder() {
        let snap = engine::live::Snapshot {
            info: engine::live::PhaseInfo {
                op: "write".into(),
                rep: 0,
                moves_data: true,
                expected: 4 << 20,
                time_limit: None,
            },
            elapsed: Duration::from_secs(2),
            units: 2,
            bytes: 2 << 20,
        };
        let s = state(None);
        let l = bar_line(&s, Some(snap.clone())).unwrap();
        assert!(l.contains("rep 1/2 write"), "{l}");
        assert!(l.contains(" 50%"), "{l}");
        assert!(l.contains("1.0 MiB/s"), "{l}");
        assert!(l.contains("ETA 2s"), "{l}");
        // Nothing done yet: no rate, no ETA.
        let idle = engine::live::Snapshot {
            units: 0,
            bytes: 0,
            ..snap.clone()
        };
        let l = bar_line(&s, Some(idle)).unwrap();
        assert!(!l.contains("MiB/s") && !l.contains("ETA"), "{l}");
        // A run's first second shows nothing.
        let young = engine::live::Snapshot {
            elapsed: Duration::from_millis(400),
            ..snap
        };
        assert!(bar_line(&s, Some(young)).is_none());
    }
}
