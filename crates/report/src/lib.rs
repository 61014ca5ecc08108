//! Results and the ways to show them.
//!
//! [`model`] is the pure-data record of a run; each exporter renders it to
//! bytes and never touches files or stdout, so the binary has one place that
//! writes and a saved record can be rendered again at any time.

pub mod export;
pub mod model;

pub use export::{
    from_json, CsvExporter, ExportError, ExportType, Exporter, JsonExporter, TextExporter,
    CSV_COLUMNS,
};
pub use model::{
    ErrorRecord, HostInfo, JobSpec, Mismatch, PhaseRecord, PhaseSummary, ResultSet, Stonewall,
    VerifyRecord, WorkerRecord, SCHEMA,
};
