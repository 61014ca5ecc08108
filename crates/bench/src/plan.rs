//! A benchmark as data: what every command asks the executor to run.
//!
//! A command parses its input (`ioscale run`'s flags, an IOR or mdtest
//! command line, a sweep's point) into a [`Plan`] and hands it to
//! [`crate::exec::execute`]; nothing else decides what runs. A plan is
//! pure data (it serialises to JSON, so it can be shown and recorded):
//!
//! - its [`Stage`]s, run one after another; the [`Step`]s of one stage
//!   start together from one barrier (a *concurrency group*, as fio runs
//!   the jobs of one group), each step's workers running its own
//!   workload, each step recorded on its own;
//! - each step's [`Work`]: a validated data workload
//!   ([`spec::WorkloadSpec`]) or metadata workload ([`spec::MetaSpec`]),
//!   with what its workers keep beyond ioscale's figures ([`Detail`]) and
//!   its stonewall rule;
//! - the [`Rules`] between steps: whether the repetitions of the stages
//!   interleave, a time limit on the whole plan, a ramp;
//! - the driver [`Options`] (resource probes, going on after a failed
//!   repetition, what rank 0 gathers per worker, the first repetition's
//!   number);
//! - which [`Render`]er prints the result (the binary maps it to its
//!   exporters).
//!
//! `threads` in a step's workload has one meaning: workers per process.
//! The count of all workers (ranks × threads) is the topology's
//! ([`crate::topology::Topology`]), found when the plan runs.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Serialize, Serializer};
use spec::{FileNaming, FindSpec, MetaSpec, WorkloadSpec};

use crate::error::Error;

pub use engine::Detail;

/// A benchmark: stages of steps, the rules between them, how the driver
/// runs and which renderer prints the result.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Run in order; each stage starts when the one before has ended
    /// (every rank agrees at its barrier).
    pub stages: Vec<Stage>,
    /// Repetitions, time limit, ramp.
    pub rules: Rules,
    /// How the driver runs (probes, failures, per-worker rows).
    pub options: Options,
    /// Which renderer prints the result.
    pub render: Render,
}

/// Steps that run at the same time: one step, or a concurrency group.
///
/// The steps of a group run their phases in lockstep: the i-th phase of
/// every step starts from one barrier, each step's workers on its own
/// files with its own workload, and each step's phase is reduced and
/// recorded on its own (its own record, its own figures). They share what
/// is the group's: the outcome of the phase (a failure, an interrupt or a
/// time limit on one step ends the phase for all), the stonewall (the
/// first worker of the group to finish), the process's CPU time and the
/// resource probe. [`Plan::check`] refuses groups whose steps cannot run
/// in lockstep.
#[derive(Debug, Clone, Serialize)]
pub struct Stage {
    /// The steps, in the order they are recorded.
    pub steps: Vec<Step>,
}

/// One workload of a plan, with its per-step rules.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// What it is called in messages (a fio job's name); empty when the
    /// plan has one step.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The validated workload.
    pub work: Work,
    /// What the engine keeps beyond ioscale's own figures (fio's
    /// latencies by direction, its per-request log), for this step's
    /// phases.
    #[serde(skip_serializing_if = "is_off")]
    pub detail: Detail,
    /// The stonewall rule beyond the workload's deadline (its
    /// `time_limit`).
    #[serde(skip_serializing_if = "Stonewall::is_plain")]
    pub stonewall: Stonewall,
}

fn is_off(d: &Detail) -> bool {
    *d == Detail::Off
}

/// What a step runs: a validated workload of one kind. New kinds (a
/// directory walk, an object store's requests) are new variants; the
/// executor dispatches on them in one place ([`crate::exec`]).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", content = "spec", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Work {
    /// A data workload (`ioscale run`, IOR, dd, fio).
    Data(Arc<WorkloadSpec>),
    /// A metadata workload (`ioscale meta`, mdtest, smallfile).
    Meta(Arc<MetaSpec>),
    /// A walk of a directory tree that counts what matches (io500's find
    /// phase): one phase, one repetition, nothing made or removed.
    Find(Arc<FindSpec>),
}

impl From<WorkloadSpec> for Work {
    fn from(s: WorkloadSpec) -> Work {
        Work::Data(Arc::new(s))
    }
}

impl From<MetaSpec> for Work {
    fn from(s: MetaSpec) -> Work {
        Work::Meta(Arc::new(s))
    }
}

impl From<FindSpec> for Work {
    fn from(s: FindSpec) -> Work {
        Work::Find(Arc::new(s))
    }
}

impl Work {
    /// Repetitions of its phase sequence.
    pub fn reps(&self) -> u32 {
        match self {
            Work::Data(s) => s.reps,
            Work::Meta(s) => s.reps,
            Work::Find(_) => 1,
        }
    }

    /// Phases per repetition.
    pub fn phases(&self) -> usize {
        match self {
            Work::Data(s) => s.ops.len(),
            Work::Meta(s) => s.ops.len(),
            Work::Find(_) => 1,
        }
    }

    /// Workers per process (the user's `--threads`).
    pub fn threads(&self) -> u32 {
        match self {
            Work::Data(s) => s.threads,
            Work::Meta(s) => s.threads,
            Work::Find(s) => s.threads,
        }
    }

    /// The directory it works in.
    pub fn target(&self) -> &std::path::Path {
        match self {
            Work::Data(s) => &s.target,
            Work::Meta(s) => &s.target,
            Work::Find(s) => &s.root,
        }
    }

    /// Its time limit, the deadline a wear-out goes on from.
    fn time_limit(&self) -> Option<Duration> {
        match self {
            Work::Data(s) => s.time_limit,
            Work::Meta(s) => s.time_limit,
            Work::Find(_) => None,
        }
    }

    /// The same workload with the stonewall wear-out on (a copy only when
    /// it was off): how the executor runs [`Stonewall::wear_out`].
    pub(crate) fn with_wear_out(&self) -> Work {
        let mut w = self.clone();
        match &mut w {
            Work::Data(s) if !s.wearout => Arc::make_mut(s).wearout = true,
            Work::Meta(s) if !s.wearout => Arc::make_mut(s).wearout = true,
            _ => {}
        }
        w
    }

    /// The same workload with the time limit `limit` (a data or metadata
    /// workload; a copy).
    pub(crate) fn with_time_limit(&self, limit: Duration) -> Work {
        let mut w = self.clone();
        match &mut w {
            Work::Data(s) => Arc::make_mut(s).time_limit = Some(limit),
            Work::Meta(s) => Arc::make_mut(s).time_limit = Some(limit),
            Work::Find(_) => {}
        }
        w
    }

    /// The same workload with `reps` repetitions (a copy only when it
    /// differs).
    pub fn with_reps(&self, reps: u32) -> Work {
        let mut w = self.clone();
        match &mut w {
            Work::Data(s) if s.reps != reps => Arc::make_mut(s).reps = reps,
            Work::Meta(s) if s.reps != reps => Arc::make_mut(s).reps = reps,
            _ => {}
        }
        w
    }

    /// The record's name for the workload.
    pub fn job_spec(&self) -> report::JobSpec {
        match self {
            Work::Data(s) => report::JobSpec::Run((**s).clone()),
            Work::Meta(s) => report::JobSpec::Meta((**s).clone()),
            Work::Find(s) => report::JobSpec::Find((**s).clone()),
        }
    }

    /// Where its files are, when another step must not share them: the
    /// working directory a native data set or tree makes, or the files a
    /// data workload names itself (IOR's `-o`, dd's `of=`).
    fn places(&self) -> Vec<PathBuf> {
        match self {
            Work::Data(s) => match &s.naming {
                FileNaming::Native => vec![s.target.join(crate::dataset::ROOT_NAME)],
                FileNaming::Ior { path } => vec![path.clone()],
                FileNaming::Dd { paths, .. } => paths.clone(),
            },
            Work::Meta(s) => vec![s.target.join(crate::dataset::tree::ROOT_NAME)],
            // A walk only reads.
            Work::Find(_) => Vec::new(),
        }
    }
}

/// The stonewall rule of a step beyond its workload's deadline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Stonewall {
    /// IOR's `stoneWallingWearOut`: after the deadline every worker goes
    /// on until it has done as much as the busiest worker had by then
    /// (the workload's own `wearout`, which a front-end may set instead).
    /// [`Plan::check`] refuses it on a step without a deadline.
    pub wear_out: bool,
}

impl Stonewall {
    fn is_plain(&self) -> bool {
        *self == Stonewall::default()
    }
}

/// The rules between the steps of a plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Rules {
    /// The repetitions of the stages take turns: the first repetition of
    /// every stage, then the second of every stage in reverse order, and
    /// so on (A B B A A B …), so a drift of the machine moves all stages
    /// alike. Each turn is a driver call of its own under its own
    /// repetition number ([`Options::first_rep`]); a stage's outcomes are
    /// merged when its last repetition is done. Without it each stage
    /// runs all its repetitions before the next stage starts.
    pub interleave: bool,
    /// The whole plan is asked to stop after this long, as an interrupt
    /// would (IOR's `-T`): the phase running then ends early, and the
    /// outcome says that the limit, not a signal, stopped it.
    #[serde(serialize_with = "opt_secs", skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<Duration>,
    /// Before the first timed phase of each operation (in each driver
    /// call), the same operation runs this long unrecorded (fio's
    /// `ramp_time`), on data steps; the record's warnings say so, and a
    /// ramp that fails is recorded as `ramp OP`.
    #[serde(serialize_with = "opt_secs", skip_serializing_if = "Option::is_none")]
    pub ramp: Option<Duration>,
    /// Run the stages as passes (fio's way of running a job's files): see
    /// [`Passes`]. Without it, each stage runs once as above.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passes: Option<Passes>,
    /// The executor reads each worker's live counters this often (at
    /// least 1 ms), from the start of the first recorded pass (or the
    /// first driver call) to the end of the plan, and returns the
    /// per-interval figures in [`crate::exec::Executed::samples`] (fio's
    /// bw/iops samples and logs). Data steps only.
    #[serde(serialize_with = "opt_secs", skip_serializing_if = "Option::is_none")]
    pub samples: Option<Duration>,
}

/// fio's passes: each stage of the plan is one pass over its steps'
/// files (opened anew, as fio reopens a job's files), run in order —
/// once each, or again and again until a run time has passed
/// (`time_based`). The executor keeps the clock: it waits, ramps, gives
/// each pass the time left and decides when the passes end, and it
/// records when each pass started and ended
/// ([`crate::exec::Executed::passes`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Passes {
    /// Waits this long before the first pass (fio's `startdelay`); a
    /// signal ends the wait and the plan.
    #[serde(serialize_with = "opt_secs", skip_serializing_if = "Option::is_none")]
    pub delay: Option<Duration>,
    /// Before the recorded passes, passes that are not recorded run until
    /// this long has passed (fio's `ramp_time` with `time_based`: the
    /// ramp reopens the files as the passes do).
    #[serde(serialize_with = "opt_secs", skip_serializing_if = "Option::is_none")]
    pub ramp: Option<Duration>,
    /// The recorded passes end when this long has passed since the first
    /// started: each pass's steps get the time left as their time limit
    /// (in place of their own), and no pass starts after it. Without it
    /// each step keeps its own time limit.
    #[serde(serialize_with = "opt_secs", skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Duration>,
    /// With `runtime`: after the last stage the first runs again, until
    /// the run time has passed (fio's `time_based`).
    pub repeat: bool,
}

fn opt_secs<S: Serializer>(v: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(d) => s.serialize_some(&d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// How the driver runs beyond what the workloads say: what a sweep and
/// the front-ends ask for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Options {
    /// Measure the resources of every timed phase with [`probe::Probe`]
    /// (rank 0 only). The probe reads /proc and sysfs before and after
    /// the phase and samples from a thread of its own, never in the
    /// workers' I/O loop.
    pub probe: bool,
    /// A repetition whose phase failed ends there, its record and errors
    /// kept, and the next repetition runs; without it the first failure
    /// ends the run.
    pub keep_going: bool,
    /// Across MPI ranks, rank 0 receives one pre-merged summary per node
    /// (and one per rank of its own node) instead of every worker's
    /// sample: the record is the same but for the per-worker rows
    /// (`workers`, `files.threads`), which then hold none (`--per-worker`
    /// off). Without it every worker's sample is gathered as well, and
    /// the rows are kept. One process always keeps them.
    pub node_summary: bool,
    /// With `node_summary`, rank 0 still receives a few numbers per
    /// worker (its [`Sample::Brief`](crate::cluster::Sample::Brief):
    /// records or files, bytes, times, a status), for front-ends that print
    /// a line per worker (smallfile's threads, dd's jobs). The record's
    /// per-worker rows (`workers`, `files.threads`) are made of those
    /// numbers, the same rows as from whole samples; a few dozen bytes a
    /// worker at rank 0 instead of 280–330 for its sample.
    pub brief_rows: bool,
    /// The number of the first repetition (0 unless told). A repetition
    /// run alone (`reps` 1) under its own number has the random offsets,
    /// the progress line and the record of that repetition, and one after
    /// the first is treated as one (a pause before it, caches dropped
    /// before its first phase). [`Rules::interleave`] sets it per turn.
    pub first_rep: u32,
    /// Every rank learns every worker's items done in each timed phase
    /// ([`Outcome::items`](crate::phase::Outcome::items)): one all-gather
    /// of a number per worker per phase.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub share_items: bool,
    /// A metadata step's target is the tool's own test directory
    /// (mdtest's `-d`): rank 0 opens it without following a link, or
    /// makes it (one level) when nothing is there, before anything else;
    /// a link, FIFO, device or other non-directory there is refused
    /// (exit 2). The run works in the held directory, and removes it at
    /// the end only when this run made it and it is empty
    /// ([`crate::dataset::testdir::TestDir`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub make_target: bool,
    /// How finely each timed phase records its per-interval series
    /// (`--interval`; the default: 1 s, finer for a short phase).
    pub interval: crate::interval::Interval,
    /// `--steady`: each timed phase ends once steady ([`crate::steady`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady: Option<crate::steady::Steady>,
}

impl Options {
    /// What rank 0 gathers per worker under MPI.
    pub fn rows(&self) -> crate::cluster::Rows {
        use crate::cluster::Rows;
        match (self.node_summary, self.brief_rows) {
            (false, _) => Rows::Full,
            (true, true) => Rows::Brief,
            (true, false) => Rows::None,
        }
    }
}

/// Which renderer prints a plan's result. The driver library renders
/// nothing; the binary maps each value to its exporters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Render {
    /// ioscale's own text, JSON or CSV (`run`, `meta`).
    #[default]
    Native,
    /// IOR's layout (`ioscale ior`).
    Ior,
    /// mdtest's layout.
    Mdtest,
    /// dd's closing lines.
    Dd,
    /// smallfile's lines and JSON.
    Smallfile,
    /// fio's reports.
    Fio,
    /// io500's result directory and summary.
    Io500,
    /// A sweep's tables and charts (each point a plan of its own).
    Sweep,
}

impl Plan {
    /// A plan of one step running `work`, with the default rules and
    /// options, printed by ioscale's own exporters.
    pub fn single(work: impl Into<Work>) -> Plan {
        Plan::of_stages(vec![Stage {
            steps: vec![Step::new(work)],
        }])
    }

    /// A plan of one concurrency group: `works` start together.
    pub fn group(works: impl IntoIterator<Item = Work>) -> Plan {
        Plan::of_stages(vec![Stage {
            steps: works.into_iter().map(Step::new).collect(),
        }])
    }

    /// A plan of `stages`, with the default rules and options.
    pub fn of_stages(stages: Vec<Stage>) -> Plan {
        Plan {
            stages,
            rules: Rules::default(),
            options: Options::default(),
            render: Render::default(),
        }
    }

    /// The same plan with `options`.
    pub fn with_options(mut self, options: Options) -> Plan {
        self.options = options;
        self
    }

    /// The same plan printed by `render`.
    pub fn rendered_by(mut self, render: Render) -> Plan {
        self.render = render;
        self
    }

    /// The same plan with `detail` on every step.
    pub fn with_detail(mut self, detail: Detail) -> Plan {
        for s in self.stages.iter_mut().flat_map(|s| &mut s.steps) {
            s.detail = detail;
        }
        self
    }

    /// Every step, stage by stage: the order of the outcomes.
    pub fn steps(&self) -> impl Iterator<Item = &Step> {
        self.stages.iter().flat_map(|s| &s.steps)
    }

    /// The first step's workload (a one-step plan's).
    pub fn first(&self) -> Option<&Work> {
        self.steps().next().map(|s| &s.work)
    }

    /// Refuses what the executor cannot run, before anything is made: an
    /// empty plan or stage, a rule it does not run yet, and concurrency
    /// groups whose steps cannot run in lockstep or would share files.
    pub fn check(&self) -> Result<(), Error> {
        let usage = |m: String| Err(Error::Usage(m));
        if self.stages.is_empty() || self.stages.iter().any(|s| s.steps.is_empty()) {
            return usage("the plan has an empty stage: nothing to run".into());
        }
        if self
            .steps()
            .any(|s| s.stonewall.wear_out && s.work.time_limit().is_none())
        {
            return usage(
                "the stonewall wear-out needs a time limit (--time) to wear out from".into(),
            );
        }
        let ramps =
            self.rules.ramp.is_some() || self.rules.passes.is_some_and(|p| p.ramp.is_some());
        if ramps && self.steps().any(|s| !matches!(s.work, Work::Data(_))) {
            return usage("a ramp applies to data steps only".into());
        }
        if let Some(every) = self.rules.samples {
            if every < Duration::from_millis(1) {
                return usage(format!(
                    "interval samples need an interval of at least 1 ms, not {every:?}"
                ));
            }
            if self.steps().any(|s| !matches!(s.work, Work::Data(_))) {
                return usage("interval samples are taken of data steps only".into());
            }
        }
        if let Some(p) = self.rules.passes {
            if p.repeat && p.runtime.is_none() {
                return usage("passes that repeat need a run time to end at".into());
            }
            if self.rules.interleave || self.rules.ramp.is_some() {
                return usage(
                    "passes run their stages in order with their own ramp: no interleaving or \
                     per-phase ramp with them"
                        .into(),
                );
            }
        }
        self.stages.iter().try_for_each(Stage::check)
    }
}

impl Step {
    /// A step running `work`, unnamed, with no detail and a plain
    /// stonewall.
    pub fn new(work: impl Into<Work>) -> Step {
        Step {
            name: String::new(),
            work: work.into(),
            detail: Detail::Off,
            stonewall: Stonewall::default(),
        }
    }

    /// The name to use in messages: its own, or `step N`.
    fn label(&self, i: usize) -> String {
        if self.name.is_empty() {
            format!("step {}", i + 1)
        } else {
            format!("step '{}'", self.name)
        }
    }
}

impl Stage {
    /// The lockstep rules of a concurrency group: steps of one kind, the
    /// same number of phases and repetitions, and no two working on the
    /// same files.
    fn check(&self) -> Result<(), Error> {
        let Some((first, rest)) = self.steps.split_first() else {
            return Ok(());
        };
        if rest.is_empty() {
            return Ok(());
        }
        let usage = |m: String| Err(Error::Usage(m));
        if self.steps.iter().any(|s| !matches!(s.work, Work::Data(_))) {
            return usage(
                "a concurrency group runs data steps only; run metadata steps one after another"
                    .into(),
            );
        }
        let wears_out =
            |s: &Step| s.stonewall.wear_out || matches!(&s.work, Work::Data(d) if d.wearout);
        if self.steps.iter().any(wears_out) {
            // The steps of a group number their workers apart: one
            // meeting point cannot hold them (cluster::Phase::wearout).
            return usage(
                "the stonewall wear-out runs on a step of its own, not in a concurrency group"
                    .into(),
            );
        }
        let mut seen: Vec<(PathBuf, usize)> = Vec::new();
        for (i, s) in self.steps.iter().enumerate() {
            let (w, f) = (&s.work, &first.work);
            if w.phases() != f.phases() || w.reps() != f.reps() {
                return usage(format!(
                    "the steps of a concurrency group run their phases together: {} has {} \
                     phase(s) × {} repetition(s), {} has {} × {}; give every step as many",
                    first.label(0),
                    f.phases(),
                    f.reps(),
                    s.label(i),
                    w.phases(),
                    w.reps()
                ));
            }
            for p in w.places() {
                if let Some((_, j)) = seen.iter().find(|(q, _)| *q == p) {
                    return usage(format!(
                        "{} and {} of a concurrency group both use {}; give each step its own \
                         target or files",
                        self.steps[*j].label(*j),
                        s.label(i),
                        p.display()
                    ));
                }
                seen.push((p, i));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spec::{Op, RawWorkload};

    fn data(target: &str, ops: &[Op], reps: u64) -> Work {
        RawWorkload {
            target: Some(target.into()),
            ops: ops.to_vec(),
            size: Some(1 << 20),
            reps: Some(reps),
            ..Default::default()
        }
        .build()
        .expect("a valid workload")
        .into()
    }

    fn meta(target: &str) -> Work {
        spec::RawMeta {
            target: Some(target.into()),
            ops: vec![spec::MetaOp::Create],
            files: Some(4),
            ..Default::default()
        }
        .build()
        .expect("a valid workload")
        .into()
    }

    fn refusal(p: Plan) -> String {
        match p.check() {
            Err(Error::Usage(m)) => m,
            other => panic!("accepted: {other:?}"),
        }
    }

    #[test]
    fn a_group_runs_in_lockstep_on_files_of_its_own() {
        let ok = Plan::group([data("/a", &[Op::Write], 1), data("/b", &[Op::Read], 1)]);
        assert!(ok.check().is_ok());
        let m = refusal(Plan::group([
            data("/a", &[Op::Write], 1),
            data("/b", &[Op::Write, Op::Read], 1),
        ]));
        assert!(
            m.contains("step 1 has 1 phase(s) × 1") && m.contains("step 2 has 2"),
            "{m}"
        );
        let m = refusal(Plan::group([
            data("/a", &[Op::Write], 1),
            data("/a", &[Op::Read], 1),
        ]));
        assert!(m.contains("both use /a/ioscale.d"), "{m}");
        let m = refusal(Plan::group([data("/a", &[Op::Write], 1), meta("/b")]));
        assert!(m.contains("data steps only"), "{m}");
        assert!(refusal(Plan::of_stages(vec![Stage { steps: vec![] }])).contains("empty"));
    }

    #[test]
    fn rules_the_executor_cannot_run_are_refused() {
        let mut p = Plan::single(data("/a", &[Op::Write], 1));
        p.stages[0].steps[0].stonewall.wear_out = true;
        assert!(refusal(p).contains("wear-out needs a time limit"));
        let timed = |t: &str| match data(t, &[Op::Write], 1) {
            Work::Data(mut d) => {
                Arc::make_mut(&mut d).time_limit = Some(Duration::from_secs(1));
                Work::Data(d)
            }
            w => w,
        };
        let mut p = Plan::group([timed("/a"), timed("/b")]);
        assert!(p.check().is_ok());
        p.stages[0].steps[1].stonewall.wear_out = true;
        assert!(refusal(p).contains("not in a concurrency group"));
        let mut p = Plan::single(meta("/a"));
        p.rules.ramp = Some(Duration::from_secs(1));
        assert!(refusal(p).contains("ramp"));
    }

    #[test]
    fn a_plan_serialises_as_its_steps_and_rules() {
        let mut p = Plan::single(data("/a", &[Op::Write], 2)).with_detail(Detail::IoLog);
        p.rules.time_limit = Some(Duration::from_millis(1500));
        let v = serde_json::to_value(&p).expect("serialisable");
        let step = &v["stages"][0]["steps"][0];
        assert_eq!(step["work"]["kind"], "data");
        assert_eq!(step["work"]["spec"]["reps"], 2);
        assert_eq!(step["detail"], "io-log");
        assert_eq!(v["rules"]["time_limit"], 1.5);
        assert_eq!(v["render"], "native");
        assert!(step.get("name").is_none() && step.get("stonewall").is_none());
    }
}
