//! A phase's measurements pre-reduced, so rank 0 need not hold every
//! worker's sample.
//!
//! Each rank folds its workers' samples into one [`Digest`]: the sums and
//! extremes the phase record is made of (counters, the latency histogram,
//! first start and last finish, the largest open/transfer/close times, …),
//! each worker's failure, and one [`Share`] for its node and one for
//! itself. Digests merge exactly (integers add, extremes take the min or
//! max, histograms add bucket by bucket, lists are kept in worker, host or
//! rank order), in any grouping, so the node leaders merge their ranks'
//! digests and rank 0 merges one per node (`reduce_as`): rank 0 receives
//! O(nodes) payloads of O(1 + ranks per node) words and the record comes
//! out the same as from every worker's sample.

use engine::IoFailure;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use stats::{IoCounters, LatencyHistogram, Series, SparseHistogram};

/// The kind-specific part of a [`Digest`]: what the data or metadata
/// record sums over workers. Merging must be exact and order-free.
pub trait Sums: Serialize + DeserializeOwned + Default + Clone + std::fmt::Debug {
    /// Adds another group's sums to these.
    fn merge(&mut self, other: Self);
}

/// A per-worker sample that crosses between ranks: the data driver's
/// [`WorkerSample`](engine::WorkerSample) or the metadata driver's
/// [`MetaSample`](engine::meta::MetaSample).
pub trait Sample: Sized + Send {
    /// Its serde form.
    type Wire: Serialize + DeserializeOwned;
    /// To the wire.
    fn to_wire(&self) -> Self::Wire;
    /// From the wire; an error means mismatched binaries.
    fn from_wire(w: Self::Wire) -> Result<Self, String>;
    /// The few numbers of its per-worker line ([`Rows::Brief`](crate::cluster::Rows::Brief)), in the
    /// binary wire form.
    type Brief: Serialize + DeserializeOwned;
    /// Its brief.
    fn brief(&self) -> Self::Brief;
    /// A sample holding a brief's numbers (zero elsewhere, no latency
    /// histogram) and, when it failed, its failure from the phase's
    /// merged `failures`; an error means mismatched binaries.
    fn from_brief(b: Self::Brief, failures: &[(u32, IoFailure)]) -> Result<Self, String>;
    /// Global worker index.
    fn worker(&self) -> u32;
    /// The worker failed.
    fn failed(&self) -> bool;
    /// The worker stopped at the time limit.
    fn hit_deadline(&self) -> bool;
    /// When it started, ns after its rank's phase epoch.
    fn start_ns(&self) -> u64;
    /// When it finished, ns after its rank's phase epoch.
    fn end_ns(&self) -> u64;
    /// Its latency histogram.
    fn hist(&self) -> &LatencyHistogram;
    /// Its share of the phase's per-interval series, when recorded.
    fn series(&self) -> Option<&Series>;
    /// The error that stopped it.
    fn failure(&self) -> Option<&IoFailure>;
    /// Bytes it moved.
    fn bytes(&self) -> u64;
    /// Requests (data) or files (metadata) it completed.
    fn ops(&self) -> u64;
    /// What the phase record sums over workers.
    type Sums: Sums;
    /// Adds this worker to the sums.
    fn add_to(&self, sums: &mut Self::Sums);
    /// Adjusts this rank's samples once every rank agreed on the
    /// stonewall (`first_done_ns`), before they are reduced.
    fn settle(samples: &mut [Self], first_done_ns: u64) {
        let _ = (samples, first_done_ns);
    }
}

/// One node's or one rank's share of a phase: its workers, what they
/// moved, and the span from its first start to its last finish (ns after
/// the phase epoch).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Share {
    /// The host (node shares; empty in rank shares).
    pub host: String,
    /// The rank (rank shares; the lowest rank in node shares).
    pub rank: u32,
    /// Workers.
    pub workers: u32,
    /// Bytes moved.
    pub bytes: u64,
    /// Requests (data) or files (metadata) done.
    pub ops: u64,
    /// Earliest worker start.
    pub start_ns: u64,
    /// Latest worker finish.
    pub end_ns: u64,
}

impl Share {
    fn add(&mut self, o: &Share) {
        self.rank = self.rank.min(o.rank);
        self.workers += o.workers;
        self.bytes += o.bytes;
        self.ops += o.ops;
        self.start_ns = self.start_ns.min(o.start_ns);
        self.end_ns = self.end_ns.max(o.end_ns);
    }
}

/// Every worker's sample of one phase folded into a few words per node
/// and rank (see the module's comment).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Digest<T> {
    /// Workers folded in.
    pub workers: u32,
    /// Earliest start of any worker (`u64::MAX` with none).
    pub start_ns: u64,
    /// Latest finish of any worker.
    pub end_ns: u64,
    /// Earliest and latest start of the workers that did not fail.
    pub started: Option<(u64, u64)>,
    /// Process CPU time (user, system) summed over ranks, ns.
    pub cpu_ns: (u64, u64),
    /// The merged latency histogram.
    pub hist: SparseHistogram,
    /// The workers' per-interval series merged (interval by interval:
    /// counters add, histograms add bucket by bucket); `None` when no
    /// worker recorded one.
    #[serde(default)]
    pub series: Option<Series>,
    /// Each failed worker's failure, by worker.
    pub failures: Vec<(u32, IoFailure)>,
    /// One share per node, by host name.
    pub nodes: Vec<Share>,
    /// One share per rank, by rank.
    pub ranks: Vec<Share>,
    /// The kind-specific sums.
    pub sums: T,
    /// A histogram that would not merge (mismatched binaries).
    pub bad: Option<String>,
}

impl<T: Sums> Default for Digest<T> {
    fn default() -> Self {
        Digest {
            workers: 0,
            start_ns: u64::MAX,
            end_ns: 0,
            started: None,
            cpu_ns: (0, 0),
            hist: SparseHistogram::default(),
            series: None,
            failures: Vec::new(),
            nodes: Vec::new(),
            ranks: Vec::new(),
            sums: T::default(),
            bad: None,
        }
    }
}

fn ns(s: f64) -> u64 {
    (s.max(0.0) * 1e9).round() as u64
}

impl<T: Sums> Digest<T> {
    /// One rank's samples (on `host`, with process CPU time `cpu` in
    /// seconds) folded.
    pub fn of<S: Sample<Sums = T>>(samples: &[S], rank: u32, host: &str, cpu: (f64, f64)) -> Self {
        let mut d = Digest::<T> {
            cpu_ns: (ns(cpu.0), ns(cpu.1)),
            ..Default::default()
        };
        let mut hist = LatencyHistogram::new();
        let mut share = Share {
            host: host.to_string(),
            rank,
            start_ns: u64::MAX,
            ..Share::default()
        };
        for s in samples {
            d.workers += 1;
            d.start_ns = d.start_ns.min(s.start_ns());
            d.end_ns = d.end_ns.max(s.end_ns());
            if let Some(f) = s.failure() {
                d.failures.push((s.worker(), f.clone()));
            } else {
                let (a, b) = d.started.unwrap_or((u64::MAX, 0));
                d.started = Some((a.min(s.start_ns()), b.max(s.start_ns())));
            }
            hist += s.hist();
            if let Some(s) = s.series() {
                d.add_series(s);
            }
            s.add_to(&mut d.sums);
            share.add(&Share {
                host: String::new(),
                rank,
                workers: 1,
                bytes: s.bytes(),
                ops: s.ops(),
                start_ns: s.start_ns(),
                end_ns: s.end_ns(),
            });
        }
        d.hist = hist.to_sparse();
        d.failures.sort_by_key(|(w, _)| *w);
        if d.workers > 0 {
            d.ranks.push(Share {
                host: String::new(),
                ..share.clone()
            });
            d.nodes.push(share);
        }
        d
    }

    /// Adds another group's digest: the result is the digest of both
    /// groups' samples together.
    pub fn merge(&mut self, o: Self) {
        self.workers += o.workers;
        self.start_ns = self.start_ns.min(o.start_ns);
        self.end_ns = self.end_ns.max(o.end_ns);
        self.started = match (self.started, o.started) {
            (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
            (a, b) => a.or(b),
        };
        self.cpu_ns = (self.cpu_ns.0 + o.cpu_ns.0, self.cpu_ns.1 + o.cpu_ns.1);
        match (
            LatencyHistogram::from_sparse(&self.hist),
            LatencyHistogram::from_sparse(&o.hist),
        ) {
            (Ok(mut a), Ok(b)) => {
                a += &b;
                self.hist = a.to_sparse();
            }
            (Err(e), _) | (_, Err(e)) => {
                self.bad.get_or_insert(format!("latency histogram: {e}"));
            }
        }
        if let Some(s) = &o.series {
            self.add_series(s);
        }
        self.failures.extend(o.failures);
        self.failures.sort_by_key(|(w, _)| *w);
        for n in o.nodes {
            match self.nodes.iter_mut().find(|m| m.host == n.host) {
                Some(m) => m.add(&n),
                None => self.nodes.push(n),
            }
        }
        self.nodes.sort_by(|a, b| a.host.cmp(&b.host));
        self.ranks.extend(o.ranks);
        self.ranks.sort_by_key(|r| r.rank);
        self.sums.merge(o.sums);
        if self.bad.is_none() {
            self.bad = o.bad;
        }
    }

    /// Merges `s` into the series (a grid that does not match is a
    /// mismatched binary: noted in `bad`).
    fn add_series(&mut self, s: &Series) {
        match self.series.as_mut() {
            None => self.series = Some(s.clone()),
            Some(mine) => {
                if let Err(e) = mine.merge(s) {
                    self.bad.get_or_insert(format!("series: {e}"));
                }
            }
        }
    }

    /// The merged series as the phase's record reports it on `grid`
    /// ([`engine::SeriesGrid::settle`]); `None` without a grid or a
    /// series.
    pub fn reported_series(&self, grid: Option<engine::SeriesGrid>) -> Option<Series> {
        Some(grid?.settle(self.series.clone()?))
    }

    /// The phase's time origin: the earliest start (0 with no workers).
    pub fn t0(&self) -> u64 {
        if self.workers == 0 {
            0
        } else {
            self.start_ns
        }
    }

    /// The merged latency histogram.
    pub fn latency(&self) -> LatencyHistogram {
        // `of` made it and `merge` checked it: a bad one is in `bad`.
        LatencyHistogram::from_sparse(&self.hist).unwrap_or_default()
    }

    /// Process CPU time (user, system), seconds.
    pub fn cpu_s(&self) -> (f64, f64) {
        (self.cpu_ns.0 as f64 / 1e9, self.cpu_ns.1 as f64 / 1e9)
    }

    /// Latest start − earliest of the workers that started, seconds.
    pub fn start_spread_s(&self) -> Option<f64> {
        self.started.map(|(a, b)| b.saturating_sub(a) as f64 / 1e9)
    }
}

/// The data record's sums ([`WorkerSample`](engine::WorkerSample)).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunSums {
    /// Requests and bytes.
    pub counters: IoCounters,
    /// Longest open, ns.
    pub open_ns: u64,
    /// Longest transfer section (with fsync), ns.
    pub io_ns: u64,
    /// Longest close, ns.
    pub close_ns: u64,
    /// Longest time in fsync, ns.
    pub fsync_ns: u64,
    /// Bytes done at the stonewall.
    pub stonewall_bytes: u64,
    /// Some worker stopped at the time limit.
    pub time_limited: bool,
    /// Bytes compared with the pattern.
    pub checked_bytes: u64,
    /// Bytes that differed.
    pub bad_bytes: u64,
    /// (worker, file, offset of its first bad byte, its bad bytes).
    pub mismatches: Vec<(u32, String, u64, u64)>,
}

impl Sums for RunSums {
    fn merge(&mut self, o: Self) {
        self.counters += o.counters;
        self.open_ns = self.open_ns.max(o.open_ns);
        self.io_ns = self.io_ns.max(o.io_ns);
        self.close_ns = self.close_ns.max(o.close_ns);
        self.fsync_ns = self.fsync_ns.max(o.fsync_ns);
        self.stonewall_bytes += o.stonewall_bytes;
        self.time_limited |= o.time_limited;
        self.checked_bytes += o.checked_bytes;
        self.bad_bytes += o.bad_bytes;
        merge_by_worker(&mut self.mismatches, o.mismatches);
    }
}

/// The metadata record's sums ([`MetaSample`](engine::meta::MetaSample)).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MetaSums {
    /// Files (entries) done.
    pub files: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Records (smallfile's I/O requests).
    pub records: u64,
    /// Errors counted.
    pub errors: u64,
    /// Files done at the stonewall.
    pub stonewall_files: u64,
    /// Bytes done at the stonewall.
    pub stonewall_bytes: u64,
    /// Longest worker span, ns.
    pub io_ns: u64,
    /// Longest closing sync, ns.
    pub sync_ns: u64,
    /// Some worker stopped at the time limit.
    pub time_limited: bool,
    /// Bytes compared with the pattern.
    pub checked_bytes: u64,
    /// Bytes that differed.
    pub bad_bytes: u64,
    /// (worker, file, offset, bad bytes) of each mismatch, by worker.
    pub mismatches: Vec<(u32, String, u64, u64)>,
    /// The highest entry index any worker touched.
    pub touched_max: u64,
    /// (worker, first directory left, directories left) of each worker
    /// whose cleanup left directories that were not empty, by worker.
    pub left: Vec<(u32, String, u64)>,
    /// Entries a find matched.
    #[serde(default)]
    pub matched: u64,
}

impl Sums for MetaSums {
    fn merge(&mut self, o: Self) {
        self.files += o.files;
        self.read_bytes += o.read_bytes;
        self.write_bytes += o.write_bytes;
        self.records += o.records;
        self.errors += o.errors;
        self.stonewall_files += o.stonewall_files;
        self.stonewall_bytes += o.stonewall_bytes;
        self.io_ns = self.io_ns.max(o.io_ns);
        self.sync_ns = self.sync_ns.max(o.sync_ns);
        self.time_limited |= o.time_limited;
        self.checked_bytes += o.checked_bytes;
        self.bad_bytes += o.bad_bytes;
        merge_by_worker(&mut self.mismatches, o.mismatches);
        self.touched_max = self.touched_max.max(o.touched_max);
        self.matched += o.matched;
        self.left.extend(o.left);
        self.left.sort_by_key(|l| l.0);
    }
}

/// Appends `more` and restores worker order (stable: a worker's own
/// entries keep their order).
fn merge_by_worker<X>(into: &mut Vec<(u32, X, u64, u64)>, more: Vec<(u32, X, u64, u64)>) {
    into.extend(more);
    into.sort_by_key(|m| m.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_merge_by_host_and_rank() {
        let mk = |host: &str, rank, bytes, start, end| Share {
            host: host.into(),
            rank,
            workers: 2,
            bytes,
            ops: 1,
            start_ns: start,
            end_ns: end,
        };
        let mut a = mk("b", 3, 10, 5, 9);
        a.add(&mk("b", 2, 7, 4, 8));
        assert_eq!(a.rank, 2);
        assert_eq!(a.bytes, 17);
        assert_eq!(a.workers, 4);
        assert_eq!((a.start_ns, a.end_ns), (4, 9));
    }
}
