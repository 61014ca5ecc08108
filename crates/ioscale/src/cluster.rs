//! What crosses between ranks in a multi-process run, and the facts about
//! where the ranks ran.
//!
//! Each rank measures its own workers exactly as a single process does;
//! rank 0 gathers their [`WorkerSample`]s (counters, times, the latency
//! histogram in its sparse form) and reduces them with the same code as
//! threads, so one reduce path serves threads and ranks. Times in a sample
//! are nanoseconds since its rank's phase epoch, taken right after the
//! phase's MPI barrier (as IOR reads MPI_Wtime after a barrier), so they
//! are comparable across ranks to within the barrier's exit skew.

use std::collections::BTreeMap;

use coord::Coordinator;
use engine::{IoFailure, VerifyTally, WorkerSample};
use report::{ClusterInfo, NodePhase, PhaseRecord};
use serde::{Deserialize, Serialize};
use stats::{IoCounters, LatencyHistogram, SparseHistogram};

use crate::run::Refused;

/// A [`WorkerSample`] in a form serde can carry.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireSample {
    worker: u32,
    file: u32,
    counters: IoCounters,
    hist: SparseHistogram,
    start_ns: u64,
    open_done_ns: u64,
    io_done_ns: u64,
    end_ns: u64,
    fsync_ns: u64,
    stonewall_bytes: u64,
    stonewall_ops: u64,
    hit_deadline: bool,
    failure: Option<IoFailure>,
    verify: VerifyTally,
}

impl From<&WorkerSample> for WireSample {
    fn from(s: &WorkerSample) -> Self {
        WireSample {
            worker: s.worker,
            file: s.file,
            counters: s.counters,
            hist: s.hist.to_sparse(),
            start_ns: s.start_ns,
            open_done_ns: s.open_done_ns,
            io_done_ns: s.io_done_ns,
            end_ns: s.end_ns,
            fsync_ns: s.fsync_ns,
            stonewall_bytes: s.stonewall_bytes,
            stonewall_ops: s.stonewall_ops,
            hit_deadline: s.hit_deadline,
            failure: s.failure.clone(),
            verify: s.verify.clone(),
        }
    }
}

impl WireSample {
    /// Back to a sample; a histogram this build cannot read is a mismatch
    /// of binaries between ranks.
    pub fn into_sample(self) -> Result<WorkerSample, String> {
        let hist = LatencyHistogram::from_sparse(&self.hist)
            .map_err(|e| format!("worker {}: latency histogram: {e}", self.worker))?;
        Ok(WorkerSample {
            worker: self.worker,
            file: self.file,
            counters: self.counters,
            hist,
            start_ns: self.start_ns,
            open_done_ns: self.open_done_ns,
            io_done_ns: self.io_done_ns,
            end_ns: self.end_ns,
            fsync_ns: self.fsync_ns,
            stonewall_bytes: self.stonewall_bytes,
            stonewall_ops: self.stonewall_ops,
            hit_deadline: self.hit_deadline,
            failure: self.failure,
            verify: self.verify,
        })
    }
}

/// One rank's part of one phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankPhase {
    /// Its workers' samples.
    pub samples: Vec<WireSample>,
    /// Process CPU time (user, system) during the phase.
    pub cpu: (f64, f64),
}

/// Where the ranks run: host of each rank, by rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Host name of each rank.
    pub hosts: Vec<String>,
    /// Worker threads per rank.
    pub threads: u32,
}

impl Layout {
    /// Learns every rank's host (a collective call).
    pub fn discover(coord: &dyn Coordinator, threads: u32) -> Layout {
        let hosts = coord
            .all_gather_as(&coord.hostname())
            .expect("ranks exchange their host names");
        Layout { hosts, threads }
    }

    /// Ranks.
    pub fn ranks(&self) -> u32 {
        self.hosts.len() as u32
    }

    /// Ranks per distinct host, in order of first appearance.
    pub fn per_node(&self) -> Vec<(String, u32)> {
        let mut out: Vec<(String, u32)> = Vec::new();
        for h in &self.hosts {
            match out.iter_mut().find(|(n, _)| n == h) {
                Some((_, c)) => *c += 1,
                None => out.push((h.clone(), 1)),
            }
        }
        out
    }

    /// Distinct hosts.
    pub fn nodes(&self) -> u32 {
        self.per_node().len() as u32
    }

    /// Ranks on the busiest host: IOR's tasks per node.
    pub fn tasks_per_node(&self) -> u32 {
        self.per_node().iter().map(|(_, c)| *c).max().unwrap_or(1)
    }

    /// The host of global worker `w`.
    pub fn host_of(&self, w: u32) -> &str {
        let r = (w / self.threads.max(1)) as usize;
        self.hosts.get(r).map(String::as_str).unwrap_or("")
    }

    /// The default `--reorder` offset, in workers: with ranks on several
    /// hosts, the workers of `tasks_per_node` ranks further on (IOR -C), so
    /// each rank reads what a rank on another host wrote, not its own
    /// host's page cache; otherwise the next worker.
    pub fn default_reorder_offset(&self) -> u32 {
        if self.nodes() > 1 {
            self.tasks_per_node() * self.threads
        } else {
            1
        }
    }

    /// The record's cluster facts (node aggregates are added per phase).
    pub fn info(&self, kind: &str) -> ClusterInfo {
        ClusterInfo {
            launcher: kind.into(),
            ranks: self.ranks(),
            threads_per_rank: self.threads,
            nodes: self.nodes(),
            tasks_per_node: self.tasks_per_node(),
            hosts: self.hosts.clone(),
            node_phases: Vec::new(),
        }
    }

    /// Per-host totals of phase number `index`, from its worker records.
    pub fn node_phases(&self, index: usize, rec: &PhaseRecord) -> Vec<NodePhase> {
        let mut by: BTreeMap<&str, NodePhase> = BTreeMap::new();
        let mut span: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
        for w in &rec.workers {
            let n = by
                .entry(self.host_of(w.worker))
                .or_insert_with(|| NodePhase {
                    phase: index,
                    op: rec.op.clone(),
                    rep: rec.rep,
                    host: w.host.clone(),
                    ..Default::default()
                });
            n.workers += 1;
            n.bytes += w.bytes;
            n.ops += w.ops;
            let s = span
                .entry(self.host_of(w.worker))
                .or_insert((f64::MAX, 0.0));
            s.0 = s.0.min(w.start_s);
            s.1 = s.1.max(w.end_s);
        }
        let ranks: BTreeMap<String, u32> = self.per_node().into_iter().collect();
        by.into_iter()
            .map(|(h, mut n)| {
                let (a, b) = span[h];
                n.ranks = ranks.get(h).copied().unwrap_or(0);
                n.elapsed_s = (b - a).max(0.0);
                n.bw_mib_s = if n.elapsed_s > 0.0 {
                    n.bytes as f64 / n.elapsed_s / (1024.0 * 1024.0)
                } else {
                    0.0
                };
                n
            })
            .collect()
    }
}

/// Agrees on a fallible step every rank took: if any rank failed, every
/// rank returns an error, and rank 0's names each failing rank (one
/// message when all failed alike). A collective call.
pub fn agree<T>(coord: &dyn Coordinator, r: Result<T, Refused>) -> Result<T, Refused> {
    if coord.size() == 1 {
        return r;
    }
    let mine: Option<String> = r.as_ref().err().map(|e| e.0.clone());
    if !coord.any(mine.is_some()) {
        return r;
    }
    let all = coord
        .gather_as(&mine)
        .expect("ranks exchange their setup errors");
    let msg = match all {
        Some(all) => {
            let failed: Vec<(usize, String)> = all
                .into_iter()
                .enumerate()
                .filter_map(|(i, m)| m.map(|m| (i, m)))
                .collect();
            let same = failed.windows(2).all(|w| w[0].1 == w[1].1);
            if same && failed.len() == coord.size() as usize {
                failed[0].1.clone()
            } else {
                failed
                    .iter()
                    .map(|(i, m)| format!("rank {i}: {m}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            }
        }
        None => mine.unwrap_or_else(|| "another rank failed its setup".into()),
    };
    Err(Refused(msg))
}

#[cfg(test)]
mod tests {
    use super::*;
    use report::WorkerRecord;

    fn layout(hosts: &[&str], threads: u32) -> Layout {
        Layout {
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            threads,
        }
    }

    #[test]
    fn tasks_per_node_and_reorder_follow_ior() {
        let one = layout(&["a", "a", "a", "a"], 2);
        assert_eq!(one.nodes(), 1);
        assert_eq!(one.tasks_per_node(), 4);
        assert_eq!(one.default_reorder_offset(), 1);
        let two = layout(&["a", "a", "b", "b"], 2);
        assert_eq!(two.nodes(), 2);
        assert_eq!(two.tasks_per_node(), 2);
        // rank 0's workers read rank 2's data, on host b.
        assert_eq!(two.default_reorder_offset(), 4);
        assert_eq!(two.host_of(5), "b");
    }

    #[test]
    fn node_phases_sum_their_workers() {
        let l = layout(&["a", "b"], 1);
        let rec = PhaseRecord {
            op: "write".into(),
            workers: vec![
                WorkerRecord {
                    worker: 0,
                    host: "a".into(),
                    bytes: 1 << 20,
                    ops: 1,
                    start_s: 0.0,
                    end_s: 1.0,
                    ..Default::default()
                },
                WorkerRecord {
                    worker: 1,
                    host: "b".into(),
                    bytes: 2 << 20,
                    ops: 2,
                    start_s: 0.5,
                    end_s: 1.5,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let n = l.node_phases(3, &rec);
        assert_eq!(n.len(), 2);
        assert_eq!(n[1].host, "b");
        assert_eq!(n[1].bytes, 2 << 20);
        assert_eq!(n[1].phase, 3);
        assert!((n[1].bw_mib_s - 2.0).abs() < 1e-9);
    }

    #[test]
    fn samples_survive_the_wire() {
        let mut hist = LatencyHistogram::new();
        hist.record(1500);
        hist.record(90_000);
        let mut counters = IoCounters::default();
        counters.record_write(4096);
        let s = WorkerSample {
            worker: 3,
            file: 3,
            counters,
            hist,
            start_ns: 1,
            open_done_ns: 2,
            io_done_ns: 3,
            end_ns: 4,
            fsync_ns: 0,
            stonewall_bytes: 4096,
            stonewall_ops: 1,
            hit_deadline: false,
            failure: None,
            verify: VerifyTally::default(),
        };
        let text = serde_json::to_vec(&WireSample::from(&s)).unwrap();
        let back = serde_json::from_slice::<WireSample>(&text)
            .unwrap()
            .into_sample()
            .unwrap();
        assert_eq!(back.counters, s.counters);
        assert_eq!(back.hist.count(), 2);
        assert_eq!(back.hist.max(), s.hist.max());
        assert_eq!(back.end_ns, 4);
    }
}
