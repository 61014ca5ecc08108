//! The measuring core of ioscale: engines, offsets, data patterns and the
//! worker loop.
//!
//! It knows nothing of command lines or output formats. The driver hands it
//! a [`worker::PhasePlan`] and gets back one [`worker::WorkerSample`] per
//! worker; reduction and reporting happen elsewhere.
#![deny(missing_docs)]

pub mod buf;
pub mod live;
pub mod meta;
pub mod meta_uring;
pub mod offsets;
pub mod pattern;
pub mod queue;
pub mod registry;
pub mod sys;
pub mod uring;
pub mod worker;

pub use meta::{run_meta_worker, MetaPlan, MetaSample};
pub use worker::{
    run_worker, DirLatency, FileAnchor, IoFailure, IoLogEntry, PhaseControl, PhasePlan, Prepared,
    ThreadUsage, VerifyTally, WorkerSample,
};
