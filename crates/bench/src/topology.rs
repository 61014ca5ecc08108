//! Who runs a workload: ranks, nodes, threads per rank and the global
//! worker ids, computed once per run.
//!
//! The user's `--threads` is threads per rank. A run of R ranks has
//! `R × threads` workers, numbered `rank × threads + t`; file names,
//! offsets, hashed directories and the marker use that global index, so a
//! dataset made by 4 ranks of 2 threads is the dataset of `--threads 8`.
//! Everything that needs one of these counts reads it from a [`Topology`]
//! instead of multiplying or dividing `threads` again: a step's workload
//! keeps `threads` as its user gave it (workers per process), and the one
//! copy of it that names every worker (the data set's and the metadata
//! tree's names, the marker) is made here, by [`Topology::all_workers`].

use std::ops::Range;

use coord::Coordinator;
use report::HostInfo;

use crate::cluster::{self, Layout};
use crate::error::Error;

/// The shape of one run across ranks and threads.
#[derive(Debug, Clone)]
pub struct Topology {
    /// This process's rank (0 when alone).
    pub rank: u32,
    /// Ranks in the launch.
    pub ranks: u32,
    /// Worker threads in each rank (the user's `--threads`).
    pub threads_per_rank: u32,
    /// Workers in all ranks.
    pub workers: u32,
    /// Every rank's host, in rank order.
    pub layout: Layout,
}

impl Topology {
    /// The topology of `threads_per_rank` threads in every rank of `coord`,
    /// recording the cluster facts in `host` when there are several ranks.
    /// A collective call: every rank makes it, with the same value.
    pub fn discover(
        coord: &dyn Coordinator,
        threads_per_rank: u32,
        host: &mut HostInfo,
    ) -> Result<Topology, Error> {
        let workers = cluster::worker_count(threads_per_rank, coord)?;
        let layout = cluster::layout(coord, threads_per_rank, host)?;
        Ok(Topology {
            rank: coord.rank(),
            ranks: coord.size(),
            threads_per_rank,
            workers,
            layout,
        })
    }

    /// Distinct hosts.
    pub fn nodes(&self) -> u32 {
        self.layout.nodes()
    }

    /// Worker threads on the busiest node: what shares one node's CPUs and
    /// page cache.
    pub fn threads_per_node(&self) -> u32 {
        self.threads_per_rank
            .saturating_mul(self.layout.tasks_per_node())
    }

    /// The global ids of this rank's workers.
    pub fn my_workers(&self) -> Range<u32> {
        let first = self.rank * self.threads_per_rank;
        first..first + self.threads_per_rank
    }

    /// The workload as the names see it: the same, with `threads` every
    /// rank's workers ([`Topology::workers`]). File and tree names, the
    /// marker and cleanup use this copy; it is made once per step, here,
    /// and nowhere else.
    pub fn all_workers<S: Workers>(&self, spec: &S) -> S {
        spec.with_workers(self.workers)
    }

    /// Whether this rank gathers, reduces and reports.
    pub fn is_root(&self) -> bool {
        self.rank == 0
    }
}

/// A workload whose worker count can be set: what
/// [`Topology::all_workers`] scales.
pub trait Workers: Clone {
    /// The same workload for `n` workers.
    fn with_workers(&self, n: u32) -> Self;
}

impl Workers for spec::WorkloadSpec {
    fn with_workers(&self, n: u32) -> Self {
        spec::WorkloadSpec {
            threads: n,
            ..self.clone()
        }
    }
}

impl Workers for spec::MetaSpec {
    fn with_workers(&self, n: u32) -> Self {
        spec::MetaSpec {
            threads: n,
            ..self.clone()
        }
    }
}
