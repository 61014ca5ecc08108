//! The one executor: runs a [`Plan`] on every worker of every rank.
//!
//! Every command — `run`, `meta`, a sweep's points, the IOR, mdtest, dd
//! and smallfile front-ends — builds a [`Plan`] and calls [`execute`]; the
//! executor owns what they share: the order of the stages (one after
//! another, or their repetitions taking turns), the plan's time limit,
//! and for each stage the setup of its steps (preflight, topology, data
//! set or tree), the phase driver (`crate::phase`: layouts, ramps,
//! barriers, stonewall, probes, reductions across workers and ranks, the
//! record, stop and failure rules) and the cleanup. A caller follows the
//! run through [`Hooks`] (a sweep journals each finished point; `run`
//! saves an interrupted record before its files are removed) and gets
//! one [`Outcome`] per step back.
//!
//! Every rank calls [`execute`] with the same plan; rank 0's outcomes hold
//! the records, the other ranks' only their agreed errors.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coord::Coordinator;
use report::ResultSet;

use crate::error::Error;
use crate::phase::{Outcome, StepEnv};
use crate::plan::{Passes, Plan, Work};
use crate::run::DataStep;
use crate::sampling::{Sampled, Sampling};

/// What a run follows as the plan executes. Every method has a default
/// that does nothing; each is called on every rank.
pub trait Hooks {
    /// Rank 0, when step `step` (its index in [`Plan::steps`]) was
    /// interrupted: its record, before its files are removed. The caller
    /// saves it here, so a second signal during a long cleanup loses
    /// nothing but the cleanup.
    fn before_cleanup(&mut self, step: usize, results: &ResultSet) {
        let _ = (step, results);
    }
    /// Before a driver call of stage `stage`: all its repetitions
    /// (`rep` `None`), or the one repetition `rep` when they take turns.
    fn starting(&mut self, stage: usize, rep: Option<u32>) {
        let _ = (stage, rep);
    }
    /// After that call: the outcome of each of the stage's steps.
    fn ran(&mut self, stage: usize, rep: Option<u32>, outcomes: &[Outcome]) {
        let _ = (stage, rep, outcomes);
    }
    /// When stage `stage` ran its last repetition uninterrupted: its
    /// steps' outcomes, every repetition merged.
    fn stage_done(&mut self, stage: usize, outcomes: &[Outcome]) {
        let _ = (stage, outcomes);
    }
    /// Under [`crate::plan::Rules::passes`], right before each pass of
    /// stage `stage` (after the delay; `recorded`: not a ramp pass). An
    /// error ends the passes there (the first pass's is the plan's error):
    /// the fio front-end checks here that the directories it holds are
    /// still the ones it opened. (The plan's samples start after it, at
    /// the first recorded pass.)
    fn before_pass(&mut self, stage: usize, recorded: bool) -> Result<(), Error> {
        let _ = (stage, recorded);
        Ok(())
    }
}

/// [`Hooks`] that only save an interrupted step's record: the closure gets
/// it before the files are removed (what `run` and `meta` need).
pub struct OnCleanup<F: FnMut(&ResultSet)>(pub F);

impl<F: FnMut(&ResultSet)> Hooks for OnCleanup<F> {
    fn before_cleanup(&mut self, _step: usize, results: &ResultSet) {
        (self.0)(results)
    }
}

/// Where a plan runs: the record's command line, the stop flag, the ranks
/// and what the caller follows.
pub struct Env<'a> {
    /// The command line, kept in every step's record.
    pub command: Vec<String>,
    /// Set by a signal handler (or the plan's time limit): the run stops
    /// at the next phase boundary.
    pub stop: Arc<AtomicBool>,
    /// The ranks this one runs with.
    pub coord: &'a dyn Coordinator,
    /// What the caller follows; none by default.
    pub hooks: Option<&'a mut dyn Hooks>,
}

impl<'a> Env<'a> {
    /// An environment without hooks.
    pub fn new(command: Vec<String>, stop: Arc<AtomicBool>, coord: &'a dyn Coordinator) -> Self {
        Env {
            command,
            stop,
            coord,
            hooks: None,
        }
    }

    /// The same environment, followed by `hooks`.
    pub fn with_hooks(mut self, hooks: &'a mut dyn Hooks) -> Self {
        self.hooks = Some(hooks);
        self
    }
}

/// What a plan's execution hands back.
pub struct Executed {
    /// One per step of the plan ([`Plan::steps`] order): its outcome, its
    /// repetitions merged, or `None` when it never ran (an interrupt, or
    /// a refusal, ended the plan before it).
    pub steps: Vec<Option<Outcome>>,
    /// The plan's time limit ([`crate::plan::Rules::time_limit`]) stopped
    /// it, not a signal.
    pub timed_out: bool,
    /// A signal (or the time limit) stopped it: a step's outcome says it
    /// was interrupted, or the stop came between two driver calls and
    /// the later stages never ran.
    pub interrupted: bool,
    /// A stage after the first could not run (its setup was refused): its
    /// index and why. The plan ended there; the steps before it ran. (The
    /// first stage's refusal is [`execute`]'s error.) Under
    /// [`crate::plan::Rules::passes`], a pass after the first that could
    /// not run (refused, failed or interrupted in its setup): the passes
    /// before it are kept.
    pub refused: Option<(usize, Error)>,
    /// Under [`crate::plan::Rules::passes`]: each recorded pass, in the
    /// order they ran (`steps` then holds none).
    pub passes: Vec<PassOut>,
    /// Under [`crate::plan::Rules::samples`]: each worker's intervals
    /// from the start of the first recorded pass (or driver call) to the
    /// end of the plan, with their origin; `None` when none started.
    pub samples: Option<Sampled>,
}

/// One recorded pass of a plan run as passes.
pub struct PassOut {
    /// The stage it ran.
    pub stage: usize,
    /// When the executor started it and when it ended (this process's
    /// clock): the origin of a sized job's ramp cut and of its logs.
    pub started: Instant,
    /// When it ended.
    pub ended: Instant,
    /// The outcome of each of the stage's steps.
    pub steps: Vec<Outcome>,
}

impl Executed {
    /// `steps`, nothing else yet.
    fn of(steps: Vec<Option<Outcome>>) -> Executed {
        Executed {
            steps,
            timed_out: false,
            interrupted: false,
            refused: None,
            passes: Vec::new(),
            samples: None,
        }
    }

    /// The outcome of the first step: a one-step plan's.
    pub fn into_single(self) -> Outcome {
        self.steps
            .into_iter()
            .flatten()
            .next()
            .expect("the first stage ran: its refusal is execute's error")
    }

    /// 130 when a step was interrupted, else the worst step's code (0
    /// clean, 1 I/O errors or failed data checks); 2 when a stage was
    /// refused.
    pub fn exit_code(&self) -> i32 {
        let passes = self.passes.iter().flat_map(|p| &p.steps);
        let codes = self
            .steps
            .iter()
            .flatten()
            .chain(passes)
            .map(Outcome::exit_code);
        let worst = codes.clone().filter(|&c| c != 130).max().unwrap_or(0);
        if codes.clone().any(|c| c == 130) {
            130
        } else if self.refused.is_some() {
            worst.max(2)
        } else {
            worst
        }
    }
}

/// Runs `plan` as one rank of `env.coord`: its stages in order (or their
/// repetitions taking turns), each stage's steps together, under the
/// plan's time limit. A refused plan (see [`Plan::check`]) or a first
/// stage that cannot be set up is an error; nothing then ran.
pub fn execute(plan: &Plan, mut env: Env<'_>) -> Result<Executed, Error> {
    plan.check()?;
    let timer = Timer::start(plan.rules.time_limit, &env.stop);
    let mut sampling = Sampling::new(plan.rules.samples);
    let result = match plan.rules.passes {
        Some(p) => run_passes(plan, p, &mut env, &mut sampling),
        None => run_stages(plan, &mut env, &mut sampling),
    };
    let samples = sampling.end();
    let timed_out = timer.finish();
    result.map(|mut e| {
        e.timed_out = timed_out;
        e.samples = samples;
        e
    })
}

impl Plan {
    /// Whether the repetitions of its stages take turns: asked for
    /// ([`crate::plan::Rules::interleave`]), more than one stage and
    /// repetition, and no data step that reuses its files between
    /// repetitions (those must run in one driver call).
    pub fn interleaves(&self) -> bool {
        let reuse = self
            .steps()
            .any(|s| matches!(&s.work, Work::Data(d) if d.reuse_files));
        self.rules.interleave && self.stages.len() > 1 && self.max_reps() > 1 && !reuse
    }

    /// The index in [`Plan::steps`] of each stage's first step.
    fn step_bases(&self) -> Vec<usize> {
        self.stages
            .iter()
            .scan(0, |k, s| {
                let b = *k;
                *k += s.steps.len();
                Some(b)
            })
            .collect()
    }

    fn max_reps(&self) -> u32 {
        self.steps().map(|s| s.work.reps()).max().unwrap_or(1)
    }

    /// The driver calls in order: (stage, the repetition it runs alone
    /// when they take turns). Taking turns, the stages run in plan order
    /// in even rounds and in reverse in odd ones (A B, B A, …), so a drift
    /// within a round favours none.
    fn turns(&self) -> Vec<(usize, Option<u32>)> {
        let n = self.stages.len();
        if !self.interleaves() {
            return (0..n).map(|j| (j, None)).collect();
        }
        let reps_of = |j: usize| self.stages[j].steps[0].work.reps();
        (0..self.max_reps())
            .flat_map(|r| (0..n).map(move |j| (r, if r % 2 == 0 { j } else { n - 1 - j })))
            .filter(|&(r, j)| r < reps_of(j))
            .map(|(r, j)| (j, Some(r)))
            .collect()
    }
}

/// The stages' driver calls, their outcomes merged per stage.
fn run_stages(plan: &Plan, env: &mut Env<'_>, sampling: &mut Sampling) -> Result<Executed, Error> {
    let bases = plan.step_bases();
    let mut got: Vec<Option<Vec<Outcome>>> = plan.stages.iter().map(|_| None).collect();
    let mut refused = None;
    let mut interrupted = false;
    for (call, (stage, rep)) in plan.turns().into_iter().enumerate() {
        // The first call always runs: an interrupt before it is recorded
        // by the driver, as a run stopped at its first phase.
        if call > 0 && env.coord.any(env.stop.load(Ordering::Relaxed)) {
            interrupted = true;
            break;
        }
        if let Some(h) = env.hooks.as_deref_mut() {
            h.starting(stage, rep);
        }
        sampling.begin(plan, stage, Instant::now());
        let outs = match run_stage(plan, (stage, rep), bases[stage], (None, None), env) {
            Ok(o) => o,
            Err(e) if call == 0 => return Err(e),
            Err(e) => {
                refused = Some((stage, e));
                break;
            }
        };
        if let Some(h) = env.hooks.as_deref_mut() {
            h.ran(stage, rep, &outs);
        }
        let stopped = outs.iter().any(|o| o.results.interrupted);
        let merged = match got[stage].take() {
            Some(mut earlier) => {
                earlier.iter_mut().zip(outs).for_each(|(a, b)| a.merge(b));
                earlier
            }
            None => outs,
        };
        let last = rep.is_none_or(|r| r + 1 == plan.stages[stage].steps[0].work.reps());
        if last && !stopped {
            if let Some(h) = env.hooks.as_deref_mut() {
                h.stage_done(stage, &merged);
            }
        }
        got[stage] = Some(merged);
        if stopped {
            interrupted = true;
            break;
        }
    }
    let steps = plan
        .stages
        .iter()
        .zip(got)
        .flat_map(|(s, g)| match g {
            Some(outs) => outs.into_iter().map(Some).collect::<Vec<_>>(),
            None => s.steps.iter().map(|_| None).collect(),
        })
        .collect();
    Ok(Executed {
        interrupted,
        refused,
        ..Executed::of(steps)
    })
}

/// The plan's stages as passes ([`Passes`]): the delay, the unrecorded
/// ramp passes, then the recorded ones until the run time has passed (or
/// once each). A pass that failed or was interrupted ends them; the first
/// pass's refusal is the plan's error, a later one's is kept in
/// [`Executed::refused`] with the passes before it.
fn run_passes(
    plan: &Plan,
    p: Passes,
    env: &mut Env<'_>,
    sampling: &mut Sampling,
) -> Result<Executed, Error> {
    let mut ex = Executed::of(plan.steps().map(|_| None).collect());
    let n = plan.stages.len();
    if let Some(d) = p.delay {
        if safefs::sleep_or_stop(d, &env.stop) == safefs::Waited::Stopped {
            ex.interrupted = true;
            return Ok(ex);
        }
    }
    let bases = plan.step_bases();
    // `started`: when the time left (`limit`) was taken.
    // The caller's check before each pass comes first: the clock of the
    // pass (`started`, the time left) is read after it.
    let before = |k: usize, recorded: bool, env: &mut Env<'_>| match env.hooks.as_deref_mut() {
        Some(h) => h.before_pass(k % n, recorded),
        None => Ok(()),
    };
    // fio judges steadiness across the passes: the recorded ones share
    // one watch.
    let carried = plan.options.steady.map(crate::steady::Watch::new);
    let pass = |k: usize, at: (Instant, Option<Duration>), env: &mut Env<'_>, recorded: bool| {
        let (started, limit) = at;
        let stage = k % n;
        let watch = carried.as_ref().filter(|_| recorded);
        let steps = run_stage(plan, (stage, None), bases[stage], (limit, watch), env)?;
        Ok::<_, Error>(PassOut {
            stage,
            started,
            ended: Instant::now(),
            steps,
        })
    };
    if let Some(ramp) = p.ramp {
        let t0 = Instant::now();
        for k in 0.. {
            if ramp <= t0.elapsed() {
                break;
            }
            before(k, false, env)?;
            let now = Instant::now();
            let left = ramp.saturating_sub(now.duration_since(t0));
            if left.is_zero() {
                break;
            }
            let out = pass(k, (now, Some(left)), env, false)?;
            if out.steps.iter().any(|o| o.exit_code() != 0) {
                // A ramp that failed is what there is to show.
                ex.passes.push(out);
                return Ok(ex);
            }
        }
    }
    let t0 = Instant::now();
    loop {
        let k = ex.passes.len();
        if p.runtime.is_some_and(|rt| rt <= t0.elapsed()) {
            break;
        }
        let checked = before(k, true, env);
        let now = Instant::now();
        if checked.is_ok() {
            // The samples' origin is the first recorded pass's start.
            sampling.begin(plan, k % n, now);
        }
        let limit = match p.runtime {
            Some(rt) => match rt.saturating_sub(now.duration_since(t0)) {
                left if left.is_zero() => break,
                left => Some(left),
            },
            None => None,
        };
        let out = match checked.and_then(|()| pass(k, (now, limit), env, true)) {
            Ok(o) => o,
            Err(e) if k == 0 => return Err(e),
            Err(e) => {
                ex.interrupted |= matches!(e, Error::Interrupted);
                ex.refused = Some((k % n, e));
                break;
            }
        };
        let ended = out.steps.iter().any(|o| {
            o.exit_code() != 0
                || o.results
                    .phases
                    .iter()
                    .any(|p| p.time_limited || p.interrupted)
        });
        ex.interrupted |= out.steps.iter().any(|o| o.results.interrupted);
        ex.passes.push(out);
        let last = !p.repeat && ex.passes.len() == n;
        if ended || last || ex.passes.len() > 1_000_000 {
            break;
        }
    }
    Ok(ex)
}

/// One driver call of stage `stage`: every repetition, or only `rep`
/// (under its own number), its steps' time limits replaced by `limit`
/// when given, and judged by the steady `watch` carried across passes
/// when given. `base` is the index of its first step in the plan. The
/// kind of its steps picks the driver.
fn run_stage(
    plan: &Plan,
    (stage, rep): (usize, Option<u32>),
    base: usize,
    (limit, watch): (Option<Duration>, Option<&crate::steady::Watch>),
    env: &mut Env<'_>,
) -> Result<Vec<Outcome>, Error> {
    let steps = &plan.stages[stage].steps;
    let mut opts = plan.options;
    let works: Vec<Work> = match rep {
        Some(r) => {
            opts.first_rep = r;
            steps.iter().map(|s| s.work.with_reps(1)).collect()
        }
        None => steps.iter().map(|s| s.work.clone()).collect(),
    };
    let works: Vec<Work> = works
        .into_iter()
        .zip(steps)
        .map(|(w, s)| {
            let w = match limit {
                Some(l) => w.with_time_limit(l),
                None => w,
            };
            if s.stonewall.wear_out {
                w.with_wear_out()
            } else {
                w
            }
        })
        .collect();
    let hooks = &mut env.hooks;
    let mut before = |j: usize, rs: &ResultSet| {
        if let Some(h) = hooks.as_deref_mut() {
            h.before_cleanup(base + j, rs);
        }
    };
    let mut senv = StepEnv {
        command: env.command.clone(),
        stop: &env.stop,
        coord: env.coord,
        opts,
        ramp: plan.rules.ramp,
        steady: watch,
        before_cleanup: &mut before,
    };
    match works.as_slice() {
        [Work::Meta(m)] => return crate::meta::run_meta(m, &mut senv),
        [Work::Find(f)] => return crate::find::run_find(f, &mut senv),
        _ => {}
    }
    // Plan::check let only data steps into a group.
    let data: Vec<DataStep<'_>> = works
        .iter()
        .zip(steps)
        .filter_map(|(w, s)| match w {
            Work::Data(spec) => Some(DataStep {
                spec,
                detail: s.detail,
            }),
            _ => None,
        })
        .collect();
    if data.len() != works.len() {
        return Err(Error::Usage(
            "a concurrency group runs data steps only".into(),
        ));
    }
    crate::run::run_data(&data, &mut senv)
}

/// The plan's time limit: a thread that sets the stop flag when it has
/// passed, as an interrupt would, and says so.
struct Timer {
    cancel: Arc<AtomicBool>,
    fired: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Timer {
    /// Starts the clock of `limit` (none: no thread).
    fn start(limit: Option<Duration>, stop: &Arc<AtomicBool>) -> Timer {
        let cancel = Arc::new(AtomicBool::new(false));
        let fired = Arc::new(AtomicBool::new(false));
        let thread = limit.map(|d| {
            let (cancel, fired, stop) = (Arc::clone(&cancel), Arc::clone(&fired), Arc::clone(stop));
            std::thread::spawn(move || {
                if safefs::sleep_or_stop(d, &cancel) == safefs::Waited::Elapsed {
                    fired.store(true, Ordering::Relaxed);
                    stop.store(true, Ordering::Relaxed);
                }
            })
        });
        Timer {
            cancel,
            fired,
            thread,
        }
    }

    /// Stops the clock; whether the limit had passed.
    fn finish(mut self) -> bool {
        self.cancel.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.fired.load(Ordering::Relaxed)
    }
}
