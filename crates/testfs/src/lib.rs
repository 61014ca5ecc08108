//! `ioscale-testfs`: a pass-through FUSE file system that adds known
//! latency, a bandwidth cap and faults, so ioscale's figures and error
//! handling can be checked against answers known in advance.
//!
//! A benchmark's tests cannot assert "fast enough" on a noisy VM, but they
//! can assert that a file system with a 5 ms delay per request is reported
//! as having about 5 ms of latency, that a server with N service threads
//! scales with N clients, and that an EIO on the 17th write is reported
//! with its file and offset. This crate is that file system; the binary
//! in `main.rs` is its command line, and `docs/testfs.md` its manual.
#![deny(missing_docs)]

pub mod fs;
pub mod inject;
pub mod parse;
pub mod shape;
