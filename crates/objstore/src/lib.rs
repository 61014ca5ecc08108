//! The S3 client of ioscale: what an object-store backend needs to reach
//! a bucket and to measure each request it makes.
//!
//! # Pieces
//!
//! - [`Target`]: `s3://BUCKET/PREFIX`, checked (no empty, `.` or `..`
//!   segment, so a file-backed server cannot be led outside the prefix).
//! - [`Settings`]: endpoint, region, credentials and addressing found as
//!   the AWS tools find them ([`Settings::from_env`] with [`Flags`] from
//!   the command line).
//! - [`Client`] (one per bucket, shared) and [`Conn`] (one per worker,
//!   its own connection, reused): `put`, `put_if_absent`, the multipart
//!   calls, `get` (whole or ranged, into the caller's buffer), `get_upto` (a
//!   range without the size known first), `head` (size, entity tag,
//!   modification time),
//!   `list` (one page), `delete`, `copy`.
//! - Every request returns [`Done`]: the value, the [`Timing`] of the
//!   attempt that succeeded (to the answer's headers and to its last
//!   byte) and the [`Retries`] before it (throttles, server errors and
//!   dropped connections counted apart, with the time they and the
//!   backoff took). A failure is an [`Error`] naming the operation, the
//!   object, the HTTP status and the store's code.
//!
//! # Why these crates
//!
//! rusty-s3 signs (SigV4, as presigned URLs) and builds and parses the
//! XML of LIST and multipart uploads without doing I/O itself; ureq is a
//! blocking HTTP/1.1 client whose agent keeps a connection pool. Together
//! they fit ioscale's workers, threads running blocking loops: no async
//! runtime, one agent (one connection) per worker, the answer's headers
//! returned before its body is read (time to first byte), and 55 crates
//! added to the build where the AWS SDK would bring some 260.
//!
//! With the `testing` feature, [`testing`] starts a real S3 server
//! (s3s-fs) on loopback for tests and puts a fault-injecting proxy in
//! front of it.

#![deny(missing_docs)]

mod client;
mod config;
mod error;
mod httpdate;
mod ops;
mod profile;
mod retry;
mod target;
mod tcp;
#[cfg(feature = "testing")]
pub mod testing;

pub use client::{Client, Conn, Done, Timing};
pub use config::{
    check_endpoint, Addressing, ConfigError, Credentials, Flags, Settings, DEFAULT_REGION,
    DEFAULT_TIMEOUT,
};
pub use error::{Error, ErrorKind, Failure, Op};
pub use ops::{ListPage, Listed, ObjectInfo, Ranged, Upload, MAX_PARTS};
pub use retry::{Retries, RetryPolicy, RetryTally, Transient};
pub use target::{Target, TargetError, MAX_KEY_LEN};
