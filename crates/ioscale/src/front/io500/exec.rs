//! Runs one IO500 phase: every task of every rank works through its items
//! (transfers, files, directory entries) from a common start, until its
//! item count or the stonewall; then, as IOR's and mdtest's stonewall
//! wear-out do, every task goes on until it has done as many items as the
//! busiest task, so the later phases find the same amount of work in
//! every task's share.
//!
//! Tasks are threads of this process (`--tasks`) and, under mpirun or
//! srun, ranks too: task `rank × tasks + t`. The phase time is rank 0's,
//! from the release of the common start (a barrier of all ranks) to the
//! barrier all ranks reach when their last task finished, as IOR's `-g`
//! times a phase.
//!
//! At the end every rank learns every task's few counts (the read phases
//! need the write phases' item counts), while the latencies travel once,
//! merged per rank and then per node on their way to rank 0: it never
//! holds one histogram per task.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use coord::Coordinator;
use serde::{Deserialize, Serialize};
use stats::LatencyHistogram;

/// What a task did in a phase.
#[derive(Debug, Default)]
pub struct Acc {
    /// Operations (transfers, creates, stats, reads, removes, entries).
    pub ops: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Bytes read that differ from what was written.
    pub bad_bytes: u64,
    /// Entries find matched.
    pub found: u64,
    /// Latency of each item.
    pub hist: LatencyHistogram,
}

/// One task's work in a phase: `item(i)` does item `i`; `finish` runs
/// once at the end inside the timing (fsync, sync).
pub trait Work {
    /// Does item `i`.
    fn item(&mut self, i: u64, acc: &mut Acc) -> Result<(), String>;
    /// Ends the task's part of the phase (inside the timing).
    fn finish(&mut self, _acc: &mut Acc) -> Result<(), String> {
        Ok(())
    }
    /// Whether the work records its own latencies (find: per entry).
    fn own_latency(&self) -> bool {
        false
    }
}

/// How a phase runs.
pub struct Shape<'a> {
    /// Items of each task, by global task index.
    pub limit: &'a (dyn Fn(u32) -> u64 + Sync),
    /// Stop starting items this long after the start (the stonewall).
    pub deadline: Option<Duration>,
    /// After the deadline, go on until every task did as many items as the busiest.
    pub wearout: bool,
}

/// One task's figures, as the ranks exchange them (a few words: its
/// latencies go into its rank's histogram).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskOut {
    /// Global task index.
    pub task: u32,
    /// Items done.
    pub items: u64,
    /// Items done by the stonewall.
    pub items_at_stonewall: u64,
    /// Operations.
    pub ops: u64,
    /// Bytes.
    pub bytes: u64,
    /// Bytes that failed the data check.
    pub bad_bytes: u64,
    /// find's matches.
    pub found: u64,
    /// The first error, if any.
    pub error: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct RankOut {
    tasks: Vec<TaskOut>,
    cpu: (f64, f64),
}

/// A finished phase, the same on every rank.
#[derive(Debug, Clone)]
pub struct PhaseRun {
    /// Every task's figures, by task.
    pub tasks: Vec<TaskOut>,
    /// Phase time in seconds (rank 0's, shared).
    pub elapsed_s: f64,
    /// User and system CPU seconds of all ranks.
    pub cpu: (f64, f64),
    /// Every task's latencies merged on rank 0 (this rank's elsewhere).
    pub latencies: LatencyHistogram,
    /// Payload bytes rank 0 received in the phase's exchange (its
    /// coordinator's count; `None` with one process).
    pub gathered_bytes: Option<u64>,
    /// Stopped by a signal.
    pub interrupted: bool,
    /// What the phase used on rank 0's node (CPUs, the device or FUSE
    /// daemon behind the data directory), measured by rank 0.
    pub resources: Option<probe::Resources>,
}

impl PhaseRun {
    /// Sum of a figure over the tasks.
    pub fn sum(&self, f: impl Fn(&TaskOut) -> u64) -> u64 {
        self.tasks.iter().map(f).sum()
    }
    /// All tasks' latencies merged (on rank 0).
    pub fn hist(&self) -> LatencyHistogram {
        self.latencies.clone()
    }
    /// The first error of any task, with its task.
    pub fn first_error(&self) -> Option<String> {
        self.tasks
            .iter()
            .find_map(|t| t.error.as_ref().map(|e| format!("task {}: {e}", t.task)))
    }
}

/// Where this rank runs.
pub struct Ctx<'a> {
    /// The ranks.
    pub coord: &'a dyn Coordinator,
    /// Threads (tasks) per rank.
    pub tasks: u32,
    /// Set by Ctrl-C / SIGTERM.
    pub stop: Arc<AtomicBool>,
    /// The data directory, whose device and file system rank 0 measures.
    pub datadir: std::path::PathBuf,
}

fn run_items(
    work: &mut dyn Work,
    acc: &mut Acc,
    from: u64,
    to: u64,
    deadline: Option<Instant>,
    stop: &AtomicBool,
) -> (u64, Option<String>) {
    let own = work.own_latency();
    let mut i = from;
    while i < to {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let t = Instant::now();
        if deadline.is_some_and(|d| t >= d) {
            break;
        }
        if let Err(e) = work.item(i, acc) {
            return (i, Some(e));
        }
        if !own {
            acc.hist.record(t.elapsed().as_nanos() as u64);
        }
        i += 1;
    }
    (i, None)
}

/// Makes task `w`'s work.
type Make<'a> = dyn Fn(u32) -> Result<Box<dyn Work>, String> + Sync + 'a;

/// What the task threads of one rank share during a phase.
struct Shared<'a> {
    shape: &'a Shape<'a>,
    make: &'a Make<'a>,
    stop: &'a AtomicBool,
    /// Every task and the main thread start together.
    start: Barrier,
    /// The wear-out exchange: tasks post their counts, the main thread
    /// posts the goal.
    mid: Barrier,
    target: AtomicU64,
    counts: Vec<AtomicU64>,
}

/// Runs one phase on this rank; a collective call every rank makes.
/// `make` sets up task `w`'s work (open files, buffers) inside the timing.
pub fn run_phase(ctx: &Ctx, shape: &Shape, make: &Make) -> PhaseRun {
    let coord = ctx.coord;
    let n = ctx.tasks as usize;
    let base = coord.rank() * ctx.tasks;
    let sh = Shared {
        shape,
        make,
        stop: &ctx.stop,
        start: Barrier::new(n + 1),
        mid: Barrier::new(n + 1),
        target: AtomicU64::new(0),
        counts: (0..n).map(|_| AtomicU64::new(0)).collect(),
    };
    coord.barrier();
    let probe = (coord.rank() == 0).then(|| probe::Probe::start(&ctx.datadir));
    let cpu0 = engine::sys::cpu_times();
    let mut t0 = Instant::now();
    let mut t_end = t0;
    let mut outs: Vec<TaskOut> = Vec::with_capacity(n);
    let mut hist = LatencyHistogram::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|t| {
                let sh = &sh;
                std::thread::Builder::new()
                    .name(format!("io500-{}", base + t as u32))
                    .spawn_scoped(s, move || task(sh, t, base + t as u32))
                    .expect("spawning an io500 task thread")
            })
            .collect();
        sh.start.wait();
        t0 = Instant::now();
        if shape.wearout {
            sh.mid.wait();
            sh.target
                .store(wearout_goal(coord, &sh.counts), Ordering::Relaxed);
            sh.mid.wait();
        }
        for h in handles {
            let (out, h, started, ended) = h.join().expect("an io500 task thread panicked");
            hist.merge(&h);
            // The phase starts with its first task and ends with its last:
            // this thread may run after the barrier only once the tasks are
            // done, and may wake late from the joins.
            t0 = t0.min(started);
            t_end = t_end.max(ended);
            outs.push(out);
        }
    });
    coord.barrier();
    let elapsed = if coord.size() == 1 {
        t_end.saturating_duration_since(t0)
    } else {
        // Ranks share no clock: rank 0's phase ends when all reached the barrier.
        t0.elapsed()
    }
    .as_secs_f64();
    let cpu1 = engine::sys::cpu_times();
    let resources = probe.map(probe::Probe::finish);
    let interrupted = coord.any(ctx.stop.load(Ordering::Relaxed));
    let mine = RankOut {
        tasks: outs,
        cpu: (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1),
    };
    let mut run = gather(coord, mine, hist, elapsed);
    run.interrupted = interrupted;
    run.resources = resources;
    run
}

/// One task of a phase: its items up to the stonewall, the wear-out, and
/// its figures with the times it started and ended.
fn task(sh: &Shared, t: usize, w: u32) -> (TaskOut, LatencyHistogram, Instant, Instant) {
    let limit = (sh.shape.limit)(w);
    sh.start.wait();
    let t_start = Instant::now();
    // A stonewall past what an Instant holds is none.
    let deadline = sh
        .shape
        .deadline
        .and_then(|d| safefs::deadline_after(t_start, d));
    let mut acc = Acc::default();
    let (done, error, at_sw) = match (sh.make)(w) {
        Ok(mut work) => {
            let (mut done, mut error) =
                run_items(&mut *work, &mut acc, 0, limit, deadline, sh.stop);
            let at_sw = done;
            if sh.shape.wearout {
                let goal = post_count(sh, t, if error.is_some() { u64::MAX } else { done });
                let goal = goal.min(limit);
                if error.is_none() && goal != u64::MAX {
                    (done, error) = run_items(&mut *work, &mut acc, done, goal, None, sh.stop);
                }
            }
            if error.is_none() {
                error = work.finish(&mut acc).err();
            }
            (done, error, at_sw)
        }
        Err(e) => {
            if sh.shape.wearout {
                post_count(sh, t, u64::MAX);
            }
            (0, Some(e), 0)
        }
    };
    let out = TaskOut {
        task: w,
        items: done,
        items_at_stonewall: at_sw,
        ops: acc.ops,
        bytes: acc.bytes,
        bad_bytes: acc.bad_bytes,
        found: acc.found,
        error,
    };
    (out, acc.hist, t_start, Instant::now())
}

/// Posts task `t`'s count at the stonewall (`u64::MAX`: it failed) and
/// returns the wear-out goal every task then works up to.
fn post_count(sh: &Shared, t: usize, count: u64) -> u64 {
    sh.counts[t].store(count, Ordering::Relaxed);
    sh.mid.wait();
    sh.mid.wait();
    sh.target.load(Ordering::Relaxed)
}

/// The wear-out goal: the most items any task of any rank did by the
/// stonewall, or `u64::MAX` when one failed (the others stop where they are).
fn wearout_goal(coord: &dyn Coordinator, counts: &[AtomicU64]) -> u64 {
    let mine: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let all = coord
        .all_gather_as(&mine)
        .unwrap_or_else(|_| vec![vec![u64::MAX]]);
    let flat: Vec<u64> = all.into_iter().flatten().collect();
    if flat.contains(&u64::MAX) {
        u64::MAX
    } else {
        flat.into_iter().max().unwrap_or(0)
    }
}

/// Every rank's figures, in task order, with rank 0's phase time, and
/// (on rank 0) every rank's latencies `hist` merged through the node
/// leaders.
fn gather(
    coord: &dyn Coordinator,
    mine: RankOut,
    hist: LatencyHistogram,
    elapsed: f64,
) -> PhaseRun {
    let mut run = PhaseRun {
        tasks: Vec::new(),
        elapsed_s: elapsed,
        cpu: (0.0, 0.0),
        latencies: hist,
        gathered_bytes: None,
        interrupted: false,
        resources: None,
    };
    if coord.size() == 1 {
        run.tasks = mine.tasks;
        run.cpu = mine.cpu;
        return run;
    }
    let before = coord.stats().bytes_gathered;
    let all = coord.all_gather_as(&mine).unwrap_or_default();
    let merged = coord.reduce_as(&run.latencies.to_sparse(), |a, b| {
        if let (Ok(mut x), Ok(y)) = (
            LatencyHistogram::from_sparse(a),
            LatencyHistogram::from_sparse(&b),
        ) {
            x.merge(&y);
            *a = x.to_sparse();
        }
    });
    if let Some(h) = merged.ok().flatten() {
        run.latencies = LatencyHistogram::from_sparse(&h).unwrap_or_default();
    }
    run.gathered_bytes = Some(coord.stats().bytes_gathered - before);
    run.elapsed_s = coord.broadcast_as(&elapsed).unwrap_or(elapsed);
    for r in all {
        run.cpu.0 += r.cpu.0;
        run.cpu.1 += r.cpu.1;
        run.tasks.extend(r.tasks);
    }
    run.tasks.sort_by_key(|t| t.task);
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Items of a fixed cost, slower for task 0, so the tasks reach the
    /// stonewall with different counts.
    struct Sleepy(u32);
    impl Work for Sleepy {
        fn item(&mut self, _i: u64, acc: &mut Acc) -> Result<(), String> {
            std::thread::sleep(Duration::from_millis(if self.0 == 0 { 20 } else { 2 }));
            acc.ops += 1;
            Ok(())
        }
    }

    #[test]
    fn wear_out_brings_every_task_to_the_busiest_count() {
        let ctx = Ctx {
            coord: &coord::Solo,
            tasks: 3,
            stop: Arc::new(AtomicBool::new(false)),
            datadir: std::env::temp_dir(),
        };
        let limit = |_w: u32| 1_000_000u64;
        let shape = Shape {
            limit: &limit,
            deadline: Some(Duration::from_millis(200)),
            wearout: true,
        };
        let run = run_phase(&ctx, &shape, &|w| Ok(Box::new(Sleepy(w)) as Box<dyn Work>));
        let items: Vec<u64> = run.tasks.iter().map(|t| t.items).collect();
        assert!(items.iter().all(|&i| i == items[0]), "{items:?}");
        // Task 0 was slower: fewer items by the stonewall, the same after.
        assert!(run.tasks[0].items_at_stonewall < run.tasks[1].items_at_stonewall);
        assert_eq!(run.sum(|t| t.ops), 3 * items[0]);
        assert!(run.elapsed_s > 0.2);
    }

    #[test]
    fn without_a_deadline_each_task_does_its_items() {
        let ctx = Ctx {
            coord: &coord::Solo,
            tasks: 2,
            stop: Arc::new(AtomicBool::new(false)),
            datadir: std::env::temp_dir(),
        };
        let limit = |w: u32| 3 + w as u64;
        let shape = Shape {
            limit: &limit,
            deadline: None,
            wearout: false,
        };
        let run = run_phase(&ctx, &shape, &|w| {
            Ok(Box::new(Sleepy(w + 1)) as Box<dyn Work>)
        });
        assert_eq!(run.tasks[0].items, 3);
        assert_eq!(run.tasks[1].items, 4);
        assert_eq!(run.hist().count(), 7);
    }
}
