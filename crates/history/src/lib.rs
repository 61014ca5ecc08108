//! The results history: every measured run kept in an embedded SQLite
//! database, so that "is this slower than last week?" is one command.
//!
//! People rerun the same benchmark after every change — an instance type,
//! a mount option, a kernel — and compare by hand. Each measuring command
//! of ioscale appends its record here: when, the command line, the
//! workload as a stable key ([`key`]), the host and target
//! ([`fingerprint`]), the headline figures with their intervals
//! ([`entry`]) and the full record. [`db`] opens and writes the file (WAL,
//! a busy timeout, one transaction per run), [`schema`] is its layout and
//! migrations, [`query`] reads it back, [`judge`] says whether a run is
//! slower than its baseline by the rule `ioscale compare` uses, and
//! [`export`] writes it as JSON lines, CSV or Prometheus text. Nothing
//! here prints or reads the machine: the binary records, renders and
//! writes.
//!
//! [`wait`] is how long a writer waits for another's lock, and what ends
//! the wait early (the caller's Ctrl-C).
//!
//! The layers, bottom up, with no import circle: `key`, `when`, `wait`, `error`,
//! `schema`; `fingerprint` (on `key`); `entry` (on both); `db`; `query`;
//! `judge`; `export`.
#![deny(missing_docs)]

pub mod db;
pub mod entry;
pub mod error;
pub mod export;
pub mod fingerprint;
pub mod judge;
pub mod key;
pub mod query;
pub mod schema;
pub mod wait;
pub mod when;

pub use db::{default_path, Access, History, Inserted};
pub use entry::{Entry, Extra, Figure, Status};
pub use error::Error;
pub use fingerprint::{HostPrint, TargetPrint};
pub use judge::{Baseline, Judgement, Verdict};
pub use query::{Filter, Prune, RunRow};
