//! The executor's rules on real file systems (tmpfs; these tests need
//! root). Concurrency groups: the steps of a stage start from one
//! barrier, each on its own files, and each is recorded on its own;
//! overlap is proven by the recorded spans on one clock, never by
//! comparing speeds. Interleaved repetitions, the plan's time limit and
//! the ramp: by what the executor did and recorded, not by how fast.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bench::exec::{execute, Env, Executed, Hooks};
use bench::plan::{Plan, Stage, Step, Work};
use bench::run::Outcome;
use spec::{Op, RawWorkload};

/// A tmpfs of its own, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(tag: &str, size: &str) -> Tmpfs {
        let p = std::env::temp_dir().join(format!("plan-group-{tag}-{}", std::process::id()));
        let _ = std::process::Command::new("umount")
            .arg(&p)
            .stderr(std::process::Stdio::null())
            .status();
        std::fs::create_dir_all(&p).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&p)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount -t tmpfs {} (these tests need root)", p.display());
        Tmpfs(p)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A one-thread data step on `target`: `op`, `size` bytes in 64 KiB
/// transfers, stopped at `limit` if given.
fn step(target: &Path, op: Op, size: u64, limit: Option<Duration>) -> Work {
    RawWorkload {
        target: Some(target.to_path_buf()),
        ops: vec![op],
        xfer: Some(64 << 10),
        size: Some(size),
        time_limit: limit,
        ..Default::default()
    }
    .build()
    .expect("a valid workload")
    .into()
}

/// A plan that first writes `size` bytes to keep on `reader` (a read
/// runs on kept files only), then runs the group of `steps`.
fn laid_out_then(reader: &Path, size: u64, steps: Vec<Work>) -> Plan {
    let mut keep = RawWorkload {
        target: Some(reader.to_path_buf()),
        ops: vec![Op::Write],
        xfer: Some(64 << 10),
        size: Some(size),
        ..Default::default()
    };
    keep.keep = true;
    let lay = Step::new(keep.build().expect("a valid workload"));
    Plan::of_stages(vec![
        Stage { steps: vec![lay] },
        Stage {
            steps: steps.into_iter().map(Step::new).collect(),
        },
    ])
}

/// Removes the data set a plan kept under `t`.
fn remove_kept(t: &Path) {
    bench::dataset::clean(t).expect("the kept set is removed");
    assert!(cleaned(t));
}

fn run(plan: &Plan, stop: Arc<AtomicBool>, hooks: &mut dyn Hooks) -> Executed {
    let env = Env::new(vec!["group-test".into()], stop, &coord::Solo).with_hooks(hooks);
    execute(plan, env).expect("the plan runs")
}

/// The outcomes of every step, all of which ran.
fn outcomes(done: Executed) -> Vec<Outcome> {
    done.steps
        .into_iter()
        .map(|o| o.expect("every step ran"))
        .collect()
}

/// Nothing of ioscale's is left under `t`.
fn cleaned(t: &Path) -> bool {
    !t.join(bench::dataset::ROOT_NAME).exists()
}

/// What the hooks saw: the records handed over before cleanup, the
/// driver calls, and the stages done.
#[derive(Default)]
struct Seen {
    before_cleanup: Vec<usize>,
    calls: Vec<(usize, Option<u32>)>,
    done: Vec<usize>,
}

impl Hooks for Seen {
    fn before_cleanup(&mut self, step: usize, _: &report::ResultSet) {
        self.before_cleanup.push(step);
    }
    fn starting(&mut self, stage: usize, rep: Option<u32>) {
        self.calls.push((stage, rep));
    }
    fn stage_done(&mut self, stage: usize, _: &[Outcome]) {
        self.done.push(stage);
    }
}

#[test]
fn a_writer_and_a_reader_run_together_and_are_recorded_apart() {
    let (a, b) = (Tmpfs::mount("w", "400m"), Tmpfs::mount("r", "400m"));
    // 384 MiB each, cut at the group's one deadline: both phases last
    // long after the barrier released them (the record says whether each
    // was still issuing requests when the deadline came).
    let limit = Some(Duration::from_secs(1));
    // The writer runs two threads, the reader one: each step numbers its
    // own workers.
    let writer = match step(&a.0, Op::Write, 192 << 20, limit) {
        Work::Data(w) => Work::Data(Arc::new(spec::WorkloadSpec {
            threads: 2,
            ..(*w).clone()
        })),
        _ => unreachable!(),
    };
    let plan = laid_out_then(
        &b.0,
        384 << 20,
        vec![writer, step(&b.0, Op::Read, 384 << 20, limit)],
    );
    let mut seen = Seen::default();
    let done = run(&plan, Arc::new(AtomicBool::new(false)), &mut seen);
    assert_eq!(done.exit_code(), 0);
    let out = outcomes(done);
    assert_eq!(out.len(), 3, "the layout step, then the group's two");
    let (w, r) = (&out[1], &out[2]);
    // Each step has its own record: its spec, its phase, its figures.
    assert_eq!(w.results.phases.len(), 1);
    assert_eq!(r.results.phases.len(), 1);
    assert_eq!(w.results.phases[0].op, "write");
    assert_eq!(r.results.phases[0].op, "read");
    assert!(w.results.phases[0].write_bytes > 0 && w.results.phases[0].read_bytes == 0);
    let rows = |o: &Outcome| -> Vec<u32> {
        o.results.phases[0]
            .workers
            .iter()
            .map(|x| x.worker)
            .collect()
    };
    assert_eq!((w.results.phases[0].threads, rows(w)), (2, vec![0, 1]));
    assert_eq!((r.results.phases[0].threads, rows(r)), (1, vec![0]));
    assert!(r.results.phases[0].read_bytes > 0 && r.results.phases[0].write_bytes == 0);
    match (&w.results.spec, &r.results.spec) {
        (report::JobSpec::Run(ws), report::JobSpec::Run(rs)) => {
            assert_eq!((ws.target.as_path(), rs.target.as_path()), (&*a.0, &*b.0));
        }
        other => panic!("{other:?}"),
    }
    // The reader read what the first stage kept.
    assert_eq!(r.results.phases[0].errors, 0);
    // One barrier released both, and their spans overlap on the clock:
    // each started before the other ended.
    let (ws, rs) = (w.spans[0], r.spans[0]);
    assert_eq!(ws.origin, rs.origin, "one barrier for the group");
    let at = |s: &bench::run::PhaseSpan, ns: u64| s.origin + Duration::from_nanos(ns);
    let (w0, w1) = (at(&ws, ws.start_ns), at(&ws, ws.end_ns));
    let (r0, r1) = (at(&rs, rs.start_ns), at(&rs, rs.end_ns));
    assert!(
        w0.max(r0) < w1.min(r1),
        "write {ws:?} and read {rs:?} do not overlap"
    );
    // The first stage (the reader's layout) ran before, on a barrier of
    // its own: its span ends before the group's begins.
    let lay = out[0].spans[0];
    assert!(at(&lay, lay.end_ns) <= w0.min(r0));
    assert_eq!(seen.done, [0, 1], "each stage is done once");
    assert!(seen.before_cleanup.is_empty());
    assert!(cleaned(&a.0), "the writer's set is removed");
    remove_kept(&b.0);
}

#[test]
fn a_failure_in_one_step_stops_the_group_and_each_record_says_why() {
    // The writer's file system holds 4 MiB of its 64: ENOSPC.
    let (a, b) = (Tmpfs::mount("full", "4m"), Tmpfs::mount("ok", "80m"));
    let plan = laid_out_then(
        &b.0,
        64 << 20,
        vec![
            step(&a.0, Op::Write, 64 << 20, None),
            step(&b.0, Op::Read, 64 << 20, None),
        ],
    );
    let done = run(
        &plan,
        Arc::new(AtomicBool::new(false)),
        &mut Seen::default(),
    );
    assert_eq!(done.exit_code(), 1);
    let out = outcomes(done);
    let (w, r) = (&out[1].results, &out[2].results);
    assert_eq!(w.errors[0].errno, Some(libc::ENOSPC), "{:?}", w.errors);
    assert_eq!(w.errors[0].op, "write");
    // The reader stopped with it, and its record says why, not the
    // error of a rank that does not exist.
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    assert_eq!(r.errors[0].op, "stop");
    assert!(
        r.errors[0].message.contains("concurrency group"),
        "{:?}",
        r.errors
    );
    // A phase cut short by the failure is no result, in either step.
    assert!(w.phases.is_empty() && r.phases.is_empty());
    assert_eq!((w.failed_phases.len(), r.failed_phases.len()), (1, 1));
    assert!(cleaned(&a.0));
    remove_kept(&b.0);
}

#[test]
fn an_interrupt_stops_every_step_of_the_group_and_hands_over_each_record() {
    let (a, b) = (Tmpfs::mount("i1", "16m"), Tmpfs::mount("i2", "16m"));
    let plan = Plan::group([
        step(&a.0, Op::Write, 8 << 20, None),
        step(&b.0, Op::Write, 8 << 20, None),
    ]);
    // A signal that came before the first phase: the driver's first
    // boundary sees it.
    let stop = Arc::new(AtomicBool::new(true));
    let mut seen = Seen::default();
    let done = run(&plan, Arc::clone(&stop), &mut seen);
    assert_eq!(done.exit_code(), 130);
    let out = outcomes(done);
    assert!(out.iter().all(|o| o.results.interrupted));
    assert!(out.iter().all(|o| o.results.phases.is_empty()));
    assert_eq!(seen.before_cleanup, [0, 1], "each record, before cleanup");
    assert!(seen.done.is_empty(), "an interrupted stage is not done");
    assert!(cleaned(&a.0) && cleaned(&b.0));
    stop.store(false, Ordering::Relaxed);
}

#[test]
fn a_step_that_cannot_be_set_up_leaves_nothing_of_the_others() {
    let a = Tmpfs::mount("setup", "16m");
    let missing = a.0.join("no-such-dir");
    let plan = Plan::group([
        step(&a.0, Op::Write, 1 << 20, None),
        step(&missing, Op::Write, 1 << 20, None),
    ]);
    let env = Env::new(Vec::new(), Arc::new(AtomicBool::new(false)), &coord::Solo);
    match execute(&plan, env) {
        Err(bench::Error::Refused(m)) => assert!(m.contains("no-such-dir"), "{m}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("ran with a missing target"),
    }
    assert!(
        cleaned(&a.0),
        "the first step's working directory was removed"
    );
}

#[test]
fn steps_that_would_share_files_are_refused_before_anything_is_made() {
    let a = Tmpfs::mount("share", "16m");
    let plan = Plan::group([
        step(&a.0, Op::Write, 1 << 20, None),
        step(&a.0, Op::Read, 1 << 20, None),
    ]);
    let env = Env::new(Vec::new(), Arc::new(AtomicBool::new(false)), &coord::Solo);
    match execute(&plan, env) {
        Err(bench::Error::Usage(m)) => assert!(m.contains("both use"), "{m}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("two steps ran on one data set"),
    }
    assert!(cleaned(&a.0));
}

/// A write of `size` bytes on `target`, `reps` times.
fn writes(target: &Path, size: u64, reps: u64) -> RawWorkload {
    RawWorkload {
        target: Some(target.to_path_buf()),
        ops: vec![Op::Write],
        xfer: Some(64 << 10),
        size: Some(size),
        reps: Some(reps),
        ..Default::default()
    }
}

#[test]
fn interleaved_repetitions_take_turns_and_each_stage_keeps_its_own() {
    let (a, b) = (Tmpfs::mount("t1", "8m"), Tmpfs::mount("t2", "8m"));
    let one = |t: &Path| Stage {
        steps: vec![Step::new(writes(t, 1 << 20, 2).build().unwrap())],
    };
    let mut plan = Plan::of_stages(vec![one(&a.0), one(&b.0)]);
    plan.rules.interleave = true;
    assert!(plan.interleaves());
    let mut seen = Seen::default();
    let out = outcomes(run(&plan, Arc::new(AtomicBool::new(false)), &mut seen));
    // A B, then B A: each repetition a call of its own.
    assert_eq!(
        seen.calls,
        [(0, Some(0)), (1, Some(0)), (1, Some(1)), (0, Some(1))]
    );
    assert_eq!(seen.done, [1, 0], "a stage is done after its last turn");
    for (o, t) in out.iter().zip([&a.0, &b.0]) {
        // Both repetitions in one record, under their own numbers.
        let reps: Vec<u32> = o.results.phases.iter().map(|p| p.rep).collect();
        assert_eq!(reps, [0, 1]);
        assert_eq!(o.spans.iter().map(|s| s.phase).collect::<Vec<_>>(), [0, 1]);
        assert!(cleaned(t));
    }
    // Without interleaving each stage runs all its repetitions at once.
    plan.rules.interleave = false;
    let mut seen = Seen::default();
    let out = outcomes(run(&plan, Arc::new(AtomicBool::new(false)), &mut seen));
    assert_eq!(seen.calls, [(0, None), (1, None)]);
    assert!(out.iter().all(|o| o.results.phases.len() == 2));
}

#[test]
fn the_plans_time_limit_stops_it_and_says_so() {
    let a = Tmpfs::mount("limit", "8m");
    // The pause before the second repetition outlasts the limit; a
    // signal (or the limit) cuts it short.
    let mut w = writes(&a.0, 1 << 20, 2);
    w.rep_delay = Some(Duration::from_secs(120));
    let mut plan = Plan::single(w.build().unwrap());
    plan.rules.time_limit = Some(Duration::from_millis(200));
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = std::time::Instant::now();
    let done = run(&plan, Arc::clone(&stop), &mut Seen::default());
    assert!(
        t0.elapsed() < Duration::from_secs(60),
        "the pause was cut short"
    );
    assert!(done.timed_out);
    assert!(
        stop.load(Ordering::Relaxed),
        "the limit stops as a signal would"
    );
    let o = done.into_single();
    assert!(o.results.interrupted);
    assert_eq!(o.results.phases.len(), 1, "the first repetition is kept");
    assert!(cleaned(&a.0));
    // A plan that ends before its limit is not timed out, and its clock
    // stops with it (it does not fire into the next plan).
    let mut plan = Plan::single(writes(&a.0, 1 << 20, 1).build().unwrap());
    plan.rules.time_limit = Some(Duration::from_millis(300));
    let stop = Arc::new(AtomicBool::new(false));
    let done = run(&plan, Arc::clone(&stop), &mut Seen::default());
    assert!(!done.timed_out);
    std::thread::sleep(Duration::from_millis(400));
    assert!(!stop.load(Ordering::Relaxed));
}

#[test]
fn a_ramp_runs_unrecorded_before_the_first_timed_phase() {
    let a = Tmpfs::mount("ramp", "8m");
    let mut plan = Plan::single(writes(&a.0, 1 << 20, 2).build().unwrap());
    plan.rules.ramp = Some(Duration::from_millis(50));
    let o = run(
        &plan,
        Arc::new(AtomicBool::new(false)),
        &mut Seen::default(),
    )
    .into_single();
    assert_eq!(o.exit_code(), 0);
    // Two repetitions recorded, the ramp once, before the first.
    assert_eq!(o.results.phases.len(), 2);
    let said: Vec<&String> = o
        .results
        .warnings
        .iter()
        .filter(|w| w.contains(" s ramp of "))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", o.results.warnings);
    assert!(said[0].contains("0.05 s ramp of write"), "{said:?}");
    // A ramp that fails is recorded as such, and nothing timed runs.
    let full = Tmpfs::mount("ramp-full", "1m");
    let mut plan = Plan::single(writes(&full.0, 8 << 20, 1).build().unwrap());
    plan.rules.ramp = Some(Duration::from_secs(30));
    let o = run(
        &plan,
        Arc::new(AtomicBool::new(false)),
        &mut Seen::default(),
    )
    .into_single();
    assert_eq!(o.exit_code(), 1);
    assert_eq!(o.results.errors[0].op, "ramp write");
    assert_eq!(o.results.errors[0].errno, Some(libc::ENOSPC));
    assert!(o.results.phases.is_empty() && o.results.failed_phases.is_empty());
    assert!(cleaned(&a.0) && cleaned(&full.0));
}

#[test]
fn passes_repeat_their_stages_until_the_run_time_the_executor_keeps() {
    let t = Tmpfs::mount("passes", "64m");
    let (a, b) = (t.0.join("a"), t.0.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    // Two stages (fio's files of a job), each a small sized write: far
    // less than the run time, so the passes take turns until it is over.
    let mut plan = Plan::of_stages(vec![
        Stage {
            steps: vec![Step::new(step(&a, Op::Write, 256 << 10, None))],
        },
        Stage {
            steps: vec![Step::new(step(&b, Op::Write, 256 << 10, None))],
        },
    ]);
    let rt = Duration::from_millis(600);
    plan.rules.passes = Some(bench::plan::Passes {
        runtime: Some(rt),
        repeat: true,
        ..Default::default()
    });
    let done = run(
        &plan,
        Arc::new(AtomicBool::new(false)),
        &mut Seen::default(),
    );
    assert!(done.steps.iter().all(Option::is_none));
    assert!(!done.interrupted && done.refused.is_none());
    let p = &done.passes;
    assert!(p.len() > 2, "{} passes", p.len());
    for (k, pass) in p.iter().enumerate() {
        assert_eq!(pass.stage, k % 2);
        assert!(pass.ended >= pass.started);
        if k > 0 {
            assert!(
                pass.started >= p[k - 1].ended,
                "pass {k} overlaps the one before"
            );
        }
        // Each pass's step is limited to the time left of the run.
        let limit = match &pass.steps[0].results.spec {
            report::JobSpec::Run(s) => s.time_limit.expect("a time limit"),
            other => panic!("{other:?}"),
        };
        assert!(limit <= rt);
    }
    // No pass starts after the run time has passed since the first
    // started (the last one is cut at it).
    let first = p[0].started;
    assert!(p.iter().all(|x| x.started.duration_since(first) < rt));
    assert!(p.iter().all(|x| x.steps[0].exit_code() == 0));
    // A delay that a signal ends runs no pass.
    plan.rules.passes = Some(bench::plan::Passes {
        delay: Some(Duration::from_secs(3600)),
        ..Default::default()
    });
    let done = run(&plan, Arc::new(AtomicBool::new(true)), &mut Seen::default());
    assert!(done.interrupted && done.passes.is_empty());
    // Passes once each: one pass per stage, in order.
    plan.rules.passes = Some(bench::plan::Passes::default());
    let done = run(
        &plan,
        Arc::new(AtomicBool::new(false)),
        &mut Seen::default(),
    );
    let stages: Vec<usize> = done.passes.iter().map(|p| p.stage).collect();
    assert_eq!(stages, [0, 1]);
    // Repeating without a run time is refused.
    plan.rules.passes = Some(bench::plan::Passes {
        repeat: true,
        ..Default::default()
    });
    assert!(plan.check().is_err());
}

/// Runs test `name` of this binary again in a process of its own (the
/// engine's live counters, which the sampling reads, are one per process:
/// workers of tests running beside it would share their slots). Returns
/// whether this is that process.
fn alone(name: &str) -> bool {
    if std::env::var_os("EXECUTOR_TEST_ALONE").is_some() {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary");
    let ok = std::process::Command::new(exe)
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env("EXECUTOR_TEST_ALONE", "1")
        .status()
        .expect("the test binary runs")
        .success();
    assert!(ok, "{name} failed in its own process");
    false
}

#[test]
fn the_samples_rule_returns_ticks_per_worker_that_sum_to_the_phases_bytes() {
    if !alone("the_samples_rule_returns_ticks_per_worker_that_sum_to_the_phases_bytes") {
        return;
    }
    let t = Tmpfs::mount("samples", "256m");
    let (a, b) = (t.0.join("a"), t.0.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    // Two passes of a two-worker writer (fio's two files of a job).
    let two = |dir: &Path| match step(dir, Op::Write, 48 << 20, None) {
        Work::Data(w) => Step::new(Work::Data(Arc::new(spec::WorkloadSpec {
            threads: 2,
            ..(*w).clone()
        }))),
        _ => unreachable!(),
    };
    let mut plan = Plan::of_stages(vec![
        Stage {
            steps: vec![two(&a)],
        },
        Stage {
            steps: vec![two(&b)],
        },
    ]);
    plan.rules.passes = Some(bench::plan::Passes::default());
    plan.rules.samples = Some(Duration::from_millis(5));
    let done = run(
        &plan,
        Arc::new(AtomicBool::new(false)),
        &mut Seen::default(),
    );
    assert_eq!(done.exit_code(), 0);
    assert_eq!(done.passes.len(), 2);
    let sampled = done.samples.as_ref().expect("the rule samples");
    assert_eq!(sampled.ticks.len(), 2, "one list of ticks per worker");
    // Per worker, what its ticks moved is what the two passes' records
    // say it moved: every byte counted once, none lost at the ends.
    for (w, ticks) in sampled.ticks.iter().enumerate() {
        let recorded: u64 = done
            .passes
            .iter()
            .flat_map(|p| &p.steps[0].results.phases)
            .flat_map(|ph| &ph.workers)
            .filter(|r| r.worker == w as u32)
            .map(|r| r.bytes)
            .sum();
        let ticked: u64 = ticks.iter().map(|t| t.bytes).sum();
        assert!(recorded > 0);
        assert_eq!(ticked, recorded, "worker {w}");
        assert!(ticks.iter().all(|t| t.write && t.ios > 0));
        assert!(ticks.windows(2).all(|p| p[0].t_ms <= p[1].t_ms));
    }
    // The phases' bytes, summed, are the ticks' bytes summed.
    let phase_bytes: u64 = done
        .passes
        .iter()
        .flat_map(|p| &p.steps[0].results.phases)
        .map(|ph| ph.bytes)
        .sum();
    let all: u64 = sampled.ticks.iter().flatten().map(|t| t.bytes).sum();
    assert_eq!(all, phase_bytes);
    // The origin is the first recorded pass's start.
    assert_eq!(sampled.since(done.passes[0].started), Duration::ZERO);
    assert!(sampled.since(done.passes[1].started) > Duration::ZERO);
    // An interval past the clock's range: one last reading, all the bytes.
    plan.rules.samples = Some(Duration::MAX);
    let long = run(
        &plan,
        Arc::new(AtomicBool::new(false)),
        &mut Seen::default(),
    );
    let ticks = &long.samples.as_ref().expect("the rule samples").ticks;
    let moved: u64 = ticks.iter().flatten().map(|t| t.bytes).sum();
    assert!(moved > 0 && ticks.iter().flatten().all(|t| !t.full));
    let recorded: u64 = long
        .passes
        .iter()
        .flat_map(|p| &p.steps[0].results.phases)
        .map(|ph| ph.bytes)
        .sum();
    assert_eq!(moved, recorded);
    // Without the rule nothing is sampled; a zero interval is refused
    // before anything runs.
    plan.rules.samples = None;
    let none = run(
        &plan,
        Arc::new(AtomicBool::new(false)),
        &mut Seen::default(),
    );
    assert!(none.samples.is_none() && none.exit_code() == 0);
    plan.rules.samples = Some(Duration::ZERO);
    let env = Env::new(
        vec!["t".into()],
        Arc::new(AtomicBool::new(false)),
        &coord::Solo,
    );
    assert!(matches!(execute(&plan, env), Err(bench::Error::Usage(_))));
    assert!(cleaned(&a) && cleaned(&b));
}
