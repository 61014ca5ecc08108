//! What ioscale's compatibility front-ends read and print: each emulated
//! tool's command-line syntax (`ior`, `mdtest`, `smallfile`, `dd`, `fio`)
//! and its output layouts.
//!
//! A front-end is a translator. Its parser turns the tool's words into
//! ioscale's typed workload ([`spec::RawWorkload`], [`spec::RawMeta`]) or a
//! request of its own, refusing what it cannot honour with a [`Usage`] that
//! names the option; its renderer turns a finished record
//! ([`report::ResultSet`]) into the bytes the tool would print. Neither
//! opens a data file, loops over I/O or times anything: the binary builds a
//! plan from the parsed request and runs it on the driver library's one
//! executor, and hands the record it gets back to the renderer here.
//!
//! Keeping this apart from the binary lets each tool's syntax and layout be
//! read, tested and compared against the real tool on its own, with nothing
//! of the process (signals, MPI ranks, the progress display) around it.

#![deny(missing_docs)]

pub mod args;
pub mod dd;
pub mod fio;
pub mod ior;
pub mod mdtest;
pub mod progress;
pub mod smallfile;

#[cfg(test)]
mod layouts;

pub use args::Usage;

use serde::{Deserialize, Serialize};

/// File-system capacity figures for IOR's and mdtest's `FS` line (from
/// statvfs, taken by the binary before the run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FsStats {
    /// Size in bytes.
    pub total_bytes: u64,
    /// Bytes in use.
    pub used_bytes: u64,
    /// Inodes in all.
    pub inodes: u64,
    /// Inodes in use.
    pub used_inodes: u64,
}
