//! The measuring core of ioscale: engines, offsets, data patterns and the
//! worker loop.
//!
//! It knows nothing of command lines or output formats. The driver hands it
//! a [`worker::PhasePlan`] and gets back one [`worker::WorkerSample`] per
//! worker; reduction and reporting happen elsewhere.
#![deny(missing_docs)]

pub mod aio;
pub mod backend;
pub mod buf;
pub mod calls;
pub mod find;
pub mod live;
pub mod live_interval;
pub mod meta;
pub mod meta_uring;
pub mod offsets;
pub mod pattern;
pub mod queue;
pub mod registry;
pub mod runner;
pub mod series;
pub mod sizes;
pub mod sys;
pub mod uring;
pub mod verify;
pub mod wearout;
pub mod worker;

pub use meta::{MetaPlan, MetaSample};
pub use runner::{run_meta_worker, run_meta_worker_with, run_worker, Prepared};
pub use series::SeriesGrid;
pub use worker::{
    Detail, DirLatency, FileAnchor, IoFailure, IoLogEntry, PhaseControl, PhasePlan, ThreadUsage,
    VerifyTally, WorkerSample,
};
