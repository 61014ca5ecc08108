//! Who runs a workload: ranks, nodes, threads per rank and the global
//! worker ids, computed once per run.
//!
//! The user's `--threads` is threads per rank. A run of R ranks has
//! `R × threads` workers, numbered `rank × threads + t`; file names,
//! offsets, hashed directories and the marker use that global index, so a
//! dataset made by 4 ranks of 2 threads is the dataset of `--threads 8`.
//! Everything that needs one of these counts reads it from a [`Topology`]
//! instead of multiplying or dividing `threads` again.

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

    /// Whether this rank gathers, reduces and reports.
    pub fn is_root(&self) -> bool {
        self.rank == 0
    }
}
