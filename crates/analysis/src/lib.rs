//! Sweeps of ioscale runs and what they mean.
//!
//! A sweep runs one job at many thread counts (and transfer sizes, layouts,
//! targets). This crate holds its record ([`model`]), the statistics of each
//! point, the scaling analysis that answers the seeds' question "is there a
//! big difference, and why?" ([`findings`], [`usl`]), the side-by-side
//! comparison of saved records ([`compare`]) and the text and CSV
//! renderings ([`render`]). It is pure computation: the binary runs the
//! points and writes the files.
#![deny(missing_docs)]

pub mod adapt;
pub mod compare;
pub mod findings;
mod fusemeta;
pub mod model;
pub mod render;
pub mod timeline;
pub mod usl;
pub mod verdict;

pub use findings::{
    analyse, analyse_with, reanalyse, Analysis, CurveAnalysis, Limit, Units, Verdict, VerdictKind,
};
pub use model::{
    point_stats_probed, OpStats, PhaseProbe, SweepConfig, SweepPoint, SweepRecord, SWEEP_SCHEMA,
};
pub use probe;
pub use render::{load, LoadError, Loaded};
