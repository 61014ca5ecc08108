//! Measurement primitives shared by every ioscale layer.
//!
//! The engine records into these types from its hot loop, the MPI layer
//! reduces them across ranks, and the report layer turns them into the JSON
//! contract. Keeping them in one dependency-light crate means all three
//! agree on units and on how partial results combine: every type here is
//! mergeable, so per-thread, per-rank and per-repetition results reduce the
//! same way.
#![deny(missing_docs)]

pub mod bootstrap;
pub mod counters;
pub mod hist;
pub mod series;
pub mod summary;

pub use bootstrap::Interval;
pub use counters::IoCounters;
pub use hist::{LatencyHistogram, LatencySummary, SparseError, SparseHistogram};
pub use series::{steady, Bin, BinFigures, Series, SeriesError, SeriesRecorder, SteadyCriterion};
pub use summary::RepStats;
