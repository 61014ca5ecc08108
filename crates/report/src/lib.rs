//! Results and the ways to show them.
//!
//! [`model`] is the pure-data record of a run; each exporter renders it to
//! bytes and never touches files or stdout, so the binary has one place that
//! writes and a saved record can be rendered again at any time.

#![deny(missing_docs)]

pub mod dd_text;
pub mod export;
pub mod ior_text;
pub mod mdtest_text;
pub mod model;
pub mod smallfile_text;

pub use dd_text::{DdInfo, DdStatus, DdTextExporter};
pub use export::{
    csv_field, from_json, from_json_reader, table, CsvExporter, ExportError, ExportType, Exporter,
    JsonExporter, MetaTextExporter, TextExporter, CSV_COLUMNS,
};
pub use ior_text::{FsStats, IorCsvExporter, IorInfo, IorJsonExporter, IorTextExporter};
pub use mdtest_text::{MdtestInfo, MdtestTextExporter};
pub use model::{
    ClusterInfo, ErrorRecord, FailedPhase, FilesRecord, HostInfo, JobSpec, Mismatch, NodePhase,
    PhaseGather, PhaseRecord, PhaseSummary, RankPhase, ResultSet, Stonewall, ThreadFiles,
    VerifyRecord, WorkerRecord, SCHEMA,
};
pub use smallfile_text::{SmallfileInfo, SmallfileTextExporter, SmallfileTotals};
