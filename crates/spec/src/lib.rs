//! What a benchmark run is asked to do, independent of how it is asked.
//!
//! Every front-end — the native `ioscale run` and `ioscale meta`, and the
//! IOR/dd emulations — turns its command line into these types, so the
//! engine and the reports see one vocabulary. Nothing here touches the file
//! system.

#![deny(missing_docs)]

mod check;
pub mod find;
pub mod meta;
pub mod units;
pub mod workload;

pub use find::{FindSpec, RawFind};
pub use meta::{Conflict, EntryKind, FileSize, MetaNaming, MetaOp, MetaSpec, RawMeta, TreeState};
pub use units::{format_size, parse_count, parse_duration, parse_list, parse_size, UnitError};
pub use workload::{
    Checksum, FileNaming, IoHints, Layout, Op, RawWorkload, SpecError, SyncMode, UringOpts,
    WorkloadSpec, XferSizes,
};

/// The names of `items` (phases of either kind), comma-separated, as
/// `describe` lines and `--ops` lists write them.
pub(crate) fn names<T: Copy>(items: &[T], name: fn(T) -> &'static str) -> String {
    items.iter().map(|&o| name(o)).collect::<Vec<_>>().join(",")
}
