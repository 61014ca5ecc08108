//! The find workload: a parallel walk of a directory tree that counts the
//! entries it examines and those that match ([`spec::FindSpec`]), run by
//! the shared phase driver (`crate::phase`) on every worker of every rank
//! ([`engine::find`] is one worker's share). It reads the tree only:
//! nothing is made, nothing removed, and the root is opened once without
//! following a link and held for the walk.
//!
//! Its record is a [`report::ResultSet`] with one phase, `find`: `ops`
//! the entries examined (what pfind's rate counts), `files.matched` the
//! matches, one latency per examined entry.

use std::fmt;
use std::sync::Arc;

use engine::backend::posix::Posix;
use engine::backend::Backend;
use engine::find::{run_find_worker, FindPlan};
use engine::meta::MetaSample;
use report::{FilesRecord, JobSpec, PhaseRecord};
use spec::FindSpec;

use crate::cluster::{self, Layout, PhaseOut};
use crate::error::Error;
use crate::phase::{drive, Ctx, Flow, Kind, Sequence, StepEnv};
use crate::record::new_record;
use crate::run::{stonewall, Outcome};
use crate::topology::Topology;

/// The one operation of a find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FindOp;

impl fmt::Display for FindOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("find")
    }
}

/// Runs a find step as one rank: the executor's driver call of a
/// [`crate::plan::Work::Find`]. Every rank opens the root itself (each has
/// its own descriptor; the walk is of whatever tree it finds there).
pub(crate) fn run_find(spec: &FindSpec, env: &mut StepEnv<'_>) -> Result<Vec<Outcome>, Error> {
    let mut host = crate::host::collect(&spec.root);
    let topo = Topology::discover(env.coord, spec.threads, &mut host)?;
    let root = cluster::agree(env.coord, open_root(&Posix, spec))?;
    let results = new_record(env.command.clone(), host, JobSpec::Find(spec.clone()));
    let mut ctx = Ctx::new(env.coord, env.stop, env.opts, None);
    let mut k = FindRun::<Posix> { spec, topo, root };
    let seq = Sequence::new(&[FindOp], 1, &spec.root);
    drive(
        std::slice::from_mut(&mut k),
        &mut ctx,
        seq,
        vec![results],
        env.before_cleanup,
    )
}

/// The root, opened through `backend` (as the user's target: a link the
/// user names is followed, none below it) and held for the walk.
fn open_root<B: Backend>(backend: &B, spec: &FindSpec) -> Result<Arc<B::At>, Error> {
    let d = backend
        .open_target(&spec.root)
        .map_err(|e| Error::Refused(format!("find: {e}; name an existing directory to walk")))?;
    B::at_of(&d).map(Arc::new).map_err(|source| Error::Setup {
        what: format!("cannot hold {} open", spec.root.display()),
        source,
    })
}

/// The find as a [`Kind`] of the phase driver, on backend `B`.
struct FindRun<'s, B: Backend> {
    spec: &'s FindSpec,
    topo: Topology,
    root: Arc<B::At>,
}

impl<'s, B: Backend> Kind for FindRun<'s, B> {
    type Op = FindOp;
    type Plan = FindPlan<'s, B>;
    type Sample = MetaSample;
    const LAYOUT_FAILURE_KEEPS_GOING: bool = false;

    fn op_name(_: FindOp) -> &'static str {
        "find"
    }
    fn topo(&self) -> &Topology {
        &self.topo
    }
    fn begin_rep(&mut self, _rep: u32, _ctx: &Ctx<'_>) {}
    fn prerequisite(&mut self, _op: FindOp, _rep: u32) -> Option<FindPlan<'s, B>> {
        None
    }
    fn after_prerequisite(&mut self, _op: FindOp, _out: &PhaseOut<MetaSample>) {}
    fn before_phase(&mut self, _op: FindOp, _rep: u32, _ctx: &Ctx<'_>) -> Option<FindPlan<'s, B>> {
        Some(FindPlan {
            spec: self.spec,
            workers: self.topo.workers,
            root: Some(Arc::clone(&self.root)),
        })
    }
    fn run_phase(
        &mut self,
        plan: &FindPlan<'s, B>,
        ctx: &mut Ctx<'_>,
    ) -> Result<PhaseOut<MetaSample>, Error> {
        engine::live::begin(engine::live::PhaseInfo {
            op: "find".into(),
            rep: 0,
            moves_data: false,
            expected: 0,
            time_limit: None,
        });
        let out = cluster::run_phase_all(
            ctx.coord,
            &mut ctx.seq,
            ctx.stop,
            "f",
            vec![(); self.topo.threads_per_rank as usize],
            ctx.opts.rows(),
            |w, (), ctl, barrier| run_find_worker(w, plan, ctl, barrier),
        );
        engine::live::end();
        out
    }
    fn reduce(
        &self,
        _plan: &FindPlan<'s, B>,
        out: &PhaseOut<MetaSample>,
        layout: &Layout,
    ) -> PhaseRecord {
        reduce(self.spec, out, layout)
    }
    fn after_phase(&mut self, _op: FindOp, _out: &PhaseOut<MetaSample>, _ctx: &Ctx<'_>) -> Flow {
        Flow::Continue
    }
    fn take_warnings(&mut self, _m: &crate::phase::Measured<'_>) -> Vec<String> {
        Vec::new()
    }
    fn cleans_up(&self) -> bool {
        false
    }
    fn finish(&mut self, _is_root: bool) -> Vec<String> {
        Vec::new()
    }
}

/// The find's record: entries examined ÷ (last finish − first start).
fn reduce(spec: &FindSpec, out: &PhaseOut<MetaSample>, layout: &Layout) -> PhaseRecord {
    let d = &out.digest;
    let m = &d.sums;
    let t0 = d.t0();
    let elapsed = d.end_ns.saturating_sub(t0) as f64 / 1e9;
    let sw_s = match out.first_done_ns {
        Some(ns) => ns.saturating_sub(t0) as f64 / 1e9,
        None => elapsed,
    };
    PhaseRecord {
        op: "find".into(),
        rep: 0,
        threads: spec.threads,
        ops: m.files,
        elapsed_s: elapsed,
        iops: if elapsed > 0.0 {
            m.files as f64 / elapsed
        } else {
            0.0
        },
        lat_us: d.latency().summary(),
        io_s: m.io_ns as f64 / 1e9,
        cpu_user_s: out.cpu.0,
        cpu_sys_s: out.cpu.1,
        stonewall: stonewall(sw_s, 0),
        interrupted: out.interrupted,
        errors: m.errors,
        start_skew_s: out.start_skew_s(),
        worker_start_spread_s: out.worker_start_spread_s(),
        files: Some(FilesRecord {
            requested: m.files,
            processed: m.files,
            processed_pct: 100.0,
            stonewall_files: m.stonewall_files,
            stonewall_files_s: 0.0,
            records: 0,
            peak_rss_bytes: engine::sys::peak_rss_bytes(),
            // A walk is asked for everything it finds: a thread that
            // stopped early says so by its status.
            threads: if out.all_workers {
                crate::meta::thread_rows(out, |_| u64::MAX, true)
            } else {
                Vec::new()
            },
            matched: Some(m.matched),
        }),
        workers: if out.all_workers {
            crate::meta::worker_rows(&out.samples, t0, layout)
        } else {
            Vec::new()
        },
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn a_find_counts_examined_and_matched_entries_over_every_worker() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..300 {
            let sub = d.path().join(format!("d{}", i % 7));
            std::fs::create_dir_all(&sub).unwrap();
            std::fs::write(sub.join(format!("f.{i}")), vec![1u8; i % 3]).unwrap();
        }
        let spec = spec::RawFind {
            root: Some(d.path().to_path_buf()),
            threads: Some(4),
            name: Some("*01*".into()),
            size: Some(1),
            ..Default::default()
        }
        .build()
        .unwrap();
        let plan = crate::plan::Plan::single(spec);
        let env = crate::exec::Env::new(Vec::new(), Arc::new(AtomicBool::new(false)), &coord::Solo);
        let out = crate::exec::execute(&plan, env).unwrap().into_single();
        assert_eq!(out.exit_code(), 0);
        let p = &out.results.phases[0];
        assert_eq!(p.op, "find");
        assert_eq!(p.ops, 300, "every file examined once, the directories not");
        // f.i with "01" in it and i % 3 == 1: 1, 10, 100, 101(no: 101 % 3 = 2), …
        let want = (0..300)
            .filter(|i| i.to_string().contains("01") || format!("f.{i}").contains("01"))
            .filter(|i| i % 3 == 1)
            .count() as u64;
        assert_eq!(p.files.as_ref().unwrap().matched, Some(want));
        assert_eq!(p.workers.len(), 4);
    }
}
