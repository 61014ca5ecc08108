//! Results and the ways to show them.
//!
//! [`model`] is the pure-data record of a run; each exporter renders it to
//! bytes and never touches files or stdout, so the binary has one place that
//! writes and a saved record can be rendered again at any time.

#![deny(missing_docs)]

pub mod export;
pub mod model;
pub mod series_csv;

pub use export::{
    check_figures, csv_field, from_json, from_json_reader, table, CsvExporter, ExportError,
    ExportType, Exporter, JsonExporter, MetaTextExporter, TextExporter, CSV_COLUMNS,
};
pub use model::{
    shown_rep, ClusterInfo, ErrorRecord, FailedPhase, FilesRecord, HostInfo, JobSpec, Mismatch,
    NodePhase, PhaseGather, PhaseRecord, PhaseSummary, RankPhase, ResultSet, RetryRecord,
    SteadyRecord, SteadyWhole, Stonewall, ThreadFiles, VerifyRecord, WorkerRecord, SCHEMA,
};
pub use series_csv::{series_csv, SERIES_CSV_HEADER};
