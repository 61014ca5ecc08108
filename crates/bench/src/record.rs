//! What a run's record starts as, and the error records both drivers add:
//! a worker's failure, and the stop of a rank whose peer (or of a step
//! whose group) failed.

use engine::IoFailure;
use report::{
    ErrorRecord, FailedPhase, HostInfo, JobSpec, PhaseGather, PhaseRecord, ResultSet, SCHEMA,
};

use crate::cluster::{self, Layout, PhaseOut, Sample};
use crate::host;
use crate::topology::Topology;

/// An empty record of a run of `spec` started now on `host`.
pub(crate) fn new_record(command: Vec<String>, host: HostInfo, spec: JobSpec) -> ResultSet {
    ResultSet {
        schema: SCHEMA,
        tool: "ioscale".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        command,
        started: host::now_rfc3339(),
        host,
        spec,
        warnings: Vec::new(),
        interrupted: false,
        errors: Vec::new(),
        phases: Vec::new(),
        failed_phases: Vec::new(),
        summary: Vec::new(),
    }
}

/// The record of worker `worker`'s failure; `op` names the operation
/// (the failure's own, or with a prefix such as `layout write`).
pub(crate) fn failure_record(worker: u32, op: String, f: &IoFailure) -> ErrorRecord {
    ErrorRecord {
        worker,
        op,
        file: f.path.display().to_string(),
        offset: f.offset,
        errno: f.errno,
        message: f.message.clone(),
    }
}

/// The error a rank records when another rank's worker failed: it stopped
/// with them; rank 0 reports the failure itself.
pub(crate) fn other_rank_failed(topo: &Topology) -> ErrorRecord {
    ErrorRecord {
        worker: topo.my_workers().start,
        op: "stop".into(),
        file: String::new(),
        offset: None,
        errno: None,
        message: "another rank failed; rank 0 reports the error".into(),
    }
}

/// The error a step of a concurrency group records when the phase failed
/// but none of its own workers on this rank did: another step of the
/// group (or another rank) failed, and its record names the error.
pub(crate) fn other_step_failed(topo: &Topology) -> ErrorRecord {
    ErrorRecord {
        message: "another step of its concurrency group (or another rank) failed; that step's \
                  record names the error"
            .into(),
        ..other_rank_failed(topo)
    }
}

/// Adds a finished phase to the record: the phase record rank 0 reduced
/// (with per-node and per-rank totals and the gather's cost on a
/// cluster), and on every rank its workers' failures (from the phase's
/// digest: every rank's on rank 0, its own elsewhere). A phase an error
/// stopped on any rank goes to `failed_phases`, its counts as partial
/// ones, never among the results.
pub(crate) fn record_phase<S: Sample>(
    results: &mut ResultSet,
    rec: Option<PhaseRecord>,
    out: &PhaseOut<S>,
    layout: &Layout,
) {
    if let Some(rec) = rec.as_ref().filter(|_| out.failed) {
        results.failed_phases.push(FailedPhase::from(rec));
    } else if let Some(rec) = rec {
        engine::live::finished(engine::live::Finished {
            op: rec.op.clone(),
            rep: rec.rep,
            bytes: rec.bytes,
            files: rec.files.as_ref().map(|f| f.processed),
            elapsed_s: rec.elapsed_s,
            bw_mib_s: rec.bw_mib_s,
            ops_s: rec.iops,
        });
        let index = results.phases.len();
        if let Some(c) = results.host.cluster.as_mut() {
            let (d, t0) = (&out.digest, out.digest.t0());
            c.node_phases
                .extend(layout.node_phases(index, &rec, &d.nodes, t0));
            c.rank_phases
                .extend(cluster::rank_phases(index, &d.ranks, t0));
            c.gathers
                .extend(out.gathered_bytes.map(|bytes| PhaseGather {
                    phase: index,
                    bytes,
                    per_worker: out.all_workers,
                    row_bytes: out.row_bytes.unwrap_or(0),
                }));
        }
        results.phases.push(rec);
    }
    for (w, f) in &out.digest.failures {
        results.errors.push(failure_record(*w, f.op.clone(), f));
    }
}
