//! The driver library of ioscale: everything that runs a benchmark, and
//! nothing that prints or parses argv.
//!
//! A command (the `ioscale` binary's native commands, a sweep's point, or
//! a compatibility front-end) builds a [`plan::Plan`] — steps of
//! validated [`spec::WorkloadSpec`] or [`spec::MetaSpec`] workloads and
//! the rules between them — and hands it to [`exec::execute`] with a
//! [`coord::Coordinator`]; what comes back is an [`run::Outcome`] per
//! step: a [`report::ResultSet`] plus notes and an exit code. The caller
//! decides what to print and where to write.
//!
//! - [`plan`]: a benchmark as data — stages, steps, concurrency groups,
//!   repetitions, time limit, ramp, driver options, renderer.
//! - [`exec`]: the one executor of every plan: stages in order or taking
//!   turns, each step's setup, phases and cleanup, the caller's hooks.
//! - [`sampling`]: each worker's per-interval figures, read by the
//!   executor from the engine's live counters under a plan's
//!   `samples` rule (fio's bw/iops samples and logs).
//! - [`dataset`]: the files and directories a run creates, their marker,
//!   and removing exactly those again — every file-system mutation of a
//!   dataset goes through it.
//! - `phase`: how a phase runs — the one driver loop both workload kinds
//!   share (repetitions, layout, ramp, probe, record, stop and failure
//!   rules), for one step or a concurrency group, with its outcome (named
//!   by [`run`] for its callers).
//! - [`run`] / [`meta`]: the data and metadata workloads, each a kind of
//!   that driver: their checks, setup, plans, reduction and cleanup;
//!   [`find`]: the parallel walk that counts matches (io500's find).
//! - [`cluster`]: threads × ranks: running a phase on every worker of every
//!   rank, the wire types, and the reduction's rank-level half.
//! - [`digest`]: a phase's samples folded per rank and node, so rank 0
//!   need not hold every worker's; the [`digest::Sample`] trait they share.
//! - [`error`]: the one error type, with its exit code.
//! - [`stamp`]: a time stamp file made and timed (io500's timestamp
//!   phase).
//! - [`topology`]: ranks, nodes, threads per rank and worker ids, once.
//! - [`host`]: what is recorded about the machine and the target.

#![deny(missing_docs)]

pub mod cluster;
pub mod dataset;
pub mod digest;
pub mod error;
mod evidence;
pub mod exec;
pub mod find;
pub mod host;
pub mod interval;
pub mod meta;
pub mod objects;
mod phase;
pub mod plan;
mod record;
pub mod run;
pub mod sampling;
pub mod stamp;
pub mod steady;
pub mod topology;

pub use error::{Error, Result};
