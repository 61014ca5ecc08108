//! The adaptive sweep's loops: under `--threads auto` the thread count to
//! measure next is asked of the search (`analysis::adapt`) after every
//! count, and under `--reps auto` the points of a count whose interval is
//! still wider than the target run one more repetition each, in turn,
//! until every one is judged enough. Both decisions are read from the
//! points measured, by rank 0, and broadcast to the other ranks.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use analysis::adapt::{judge_reps, Axis, RepFigure, RepsAuto, RepsOutcome, ThreadsAuto};
use analysis::model::point_stats_probed;
use analysis::SweepRecord;
use bench::exec::Env;
use bench::plan::Plan;
use bench::run::Outcome;

use super::{Follow, Runner};
use crate::job::SweepArgs;

/// Refuses `--threads auto` under a launch sweep (`--nodes`, `--ranks`):
/// each launch would search threads of its own. Its `--reps auto` and
/// `--max-reps` go to every launch, whose sweep judges them per point.
pub(super) fn refuse_threads_with(what: &str, args: &SweepArgs) -> Result<(), String> {
    if args.threads.starts_with("auto") {
        return Err(format!(
            "{what} takes listed --threads (one count with {what} auto); the searched count is {what}'s"
        ));
    }
    Ok(())
}

/// Refuses `--threads auto`, `--reps auto` and `--max-reps` where the
/// adaptive sweep is not wired (`what`: an io500 sweep).
pub(super) fn refuse_with(what: &str, args: &SweepArgs) -> Result<(), String> {
    let auto = |v: &Option<String>| v.as_deref().is_some_and(|v| v.starts_with("auto"));
    if args.threads.starts_with("auto") || auto(&args.reps) || args.max_reps.is_some() {
        return Err(format!(
            "{what} takes listed --threads and a count of --reps: the adaptive sweep (auto, --max-reps) runs `run`, `meta` and `fio` sweeps"
        ));
    }
    Ok(())
}

impl Runner<'_> {
    /// `--threads auto`: the count the search asks for, all its points as
    /// one group, until the search has nothing left to measure, an
    /// interrupt or a refused point.
    pub(super) fn searched(
        &mut self,
        rule: ThreadsAuto,
        rec: &mut SweepRecord,
    ) -> anyhow::Result<()> {
        loop {
            if self.coord.any(self.stop.load(Ordering::Relaxed)) {
                rec.interrupted = true;
                return Ok(());
            }
            let next = if self.coord.rank() == 0 {
                self.save(rec)?;
                self.next_group(rule, rec)
            } else {
                None
            };
            let next: Option<(u32, Vec<usize>)> = self
                .coord
                .broadcast_as(&next)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let Some((n, group)) = next else {
                return Ok(());
            };
            self.log_count(rule, rec, n, None)?;
            if let Some(l) = self.live {
                // The points of this count are the ones left in sight.
                l.set_total(rec.points.len() + group.len());
            }
            let t0 = Instant::now();
            let go_on = self.group(&group, rec)?;
            self.log_count(rule, rec, n, Some(t0.elapsed().as_secs_f64()))?;
            if !go_on {
                return Ok(());
            }
        }
    }

    /// The count the search asks for next and its points still to
    /// measure (every series at that count); `None` when it is done.
    fn next_group(&self, rule: ThreadsAuto, rec: &SweepRecord) -> Option<(u32, Vec<usize>)> {
        let config = &self.sweep.config;
        let axis = config.search_axis;
        let lines = analysis::findings::search_lines(rec);
        let s = analysis::adapt::search_lines(&rule, &lines, axis, &|c| config.may_search(c));
        let n = s.next?;
        // The points at that count: its threads, or its transfer size.
        let at = |p: &super::Planned| match axis {
            Axis::Xfer { unit } => p.xfer == u64::from(n) * unit,
            _ => p.threads == n,
        };
        let group: Vec<usize> = (0..self.sweep.points.len())
            .filter(|&i| at(&self.sweep.points[i]))
            .filter(|&i| !rec.points.iter().any(|q| q.index == i))
            .collect();
        (!group.is_empty()).then_some((n, group))
    }

    /// Notes in the record (rank 0) that count `n` started (its place in
    /// the path), or that it took `secs` more, and saves the record.
    fn log_count(
        &mut self,
        rule: ThreadsAuto,
        rec: &mut SweepRecord,
        n: u32,
        secs: Option<f64>,
    ) -> anyhow::Result<()> {
        if self.coord.rank() != 0 {
            return Ok(());
        }
        let s = rec
            .search
            .get_or_insert_with(|| analysis::adapt::search_report(&rule, &[], &[], &[], false));
        if !s.path.contains(&n) {
            s.path.push(n);
        }
        if let Some(t) = secs {
            match s.times.iter_mut().find(|x| x.0 == n) {
                // A count resumed after an interrupt: its time adds up.
                Some(x) => x.1 += t,
                None => s.times.push((n, t)),
            }
        }
        self.save(rec)
    }

    /// `--reps auto`: after a group's first repetitions (`steps`, one
    /// outcome per point), the points whose interval is still wider than
    /// the target run one more repetition each, in turn (forwards, then
    /// backwards), until each is within it or has run the most; then each
    /// point is recorded. False when the sweep must stop.
    pub(super) fn more_reps(
        &mut self,
        rule: RepsAuto,
        group: &[usize],
        steps: Vec<Option<Outcome>>,
        rec: &mut SweepRecord,
    ) -> anyhow::Result<bool> {
        let mut held = steps;
        let root = self.coord.rank() == 0;
        // Each round runs repetition number `ran` of the points that go on.
        for (round, ran) in (rule.min..).enumerate() {
            let go: Vec<usize> = if root {
                (0..group.len())
                    .filter(|&j| {
                        held[j]
                            .as_ref()
                            .is_some_and(|o| !self.judged(group[j], o, ran, &rule).done)
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let mut go: Vec<usize> = self
                .coord
                .broadcast_as(&go)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            if go.is_empty() {
                break;
            }
            if self.coord.any(self.stop.load(Ordering::Relaxed)) {
                rec.interrupted = true;
                return Ok(false);
            }
            if round % 2 == 0 {
                go.reverse();
            }
            let points: Vec<usize> = go.iter().map(|&j| group[j]).collect();
            let Some(outs) = self.one_more(&points, ran, rec)? else {
                return Ok(false);
            };
            for (j, o) in go.iter().zip(outs) {
                if let (Some(h), Some(o)) = (held[*j].as_mut(), o) {
                    h.merge(o);
                }
            }
        }
        if root {
            for (j, o) in held.iter().enumerate() {
                if let Some(o) = o {
                    self.record(group[j], o, rec)?;
                }
            }
        }
        Ok(true)
    }

    /// Repetition number `rep` of each of `points`, one after the other:
    /// their outcomes, or `None` when the sweep must stop (an interrupt,
    /// or a point refused, which is the sweep's failure).
    fn one_more(
        &mut self,
        points: &[usize],
        rep: u32,
        rec: &mut SweepRecord,
    ) -> anyhow::Result<Option<Vec<Option<Outcome>>>> {
        let mut plan: Plan = self.plan_of(points);
        for st in &mut plan.stages {
            for step in &mut st.steps {
                step.work = step.work.with_reps(1);
            }
        }
        plan.options.first_rep = rep;
        plan.rules.interleave = false;
        let env = Env::new(self.command.to_vec(), Arc::clone(self.stop), self.coord);
        let mut follow = Follow {
            runner: self,
            group: points,
            rec,
            current: None,
            error: None,
            hold: true,
        };
        let done = bench::exec::execute(&plan, env.with_hooks(&mut follow));
        let Follow { current, error, .. } = follow;
        if let Some(e) = error {
            return Err(e);
        }
        let refused = match done {
            Err(e) => e,
            Ok(d) if d.refused.is_some() => d.refused.expect("checked").1,
            Ok(d) if d.interrupted => {
                rec.interrupted = true;
                return Ok(None);
            }
            Ok(d) => return Ok(Some(d.steps)),
        };
        let what = current.map(|i| self.name(i)).unwrap_or_default();
        self.failure = Some(format!("point {what}: {refused}"));
        Ok(None)
    }

    /// What the repetitions of point `index` so far (`ran` of them, in
    /// `o`) show against the target.
    fn judged(&self, index: usize, o: &Outcome, ran: u32, rule: &RepsAuto) -> RepsOutcome {
        let p = &self.sweep.points[index];
        let (ops, _, _) =
            point_stats_probed(&o.results, p.threads, self.sweep.config.trim, &o.probes);
        let figs: Vec<RepFigure> = ops.iter().map(RepFigure::from).collect();
        judge_reps(rule, ran, &figs)
    }
}
