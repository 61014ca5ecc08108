//! How the processes of one ioscale run agree with each other.
//!
//! A run is `ranks × threads` workers. Threads inside a process share
//! memory and meet at a `std::sync::Barrier`; processes (MPI ranks) meet
//! through a [`Coordinator`]: the start barrier of every phase, agreement
//! on errors and interrupts, the stonewall signal while a phase runs, and
//! the gathering of every worker's sample at rank 0, which alone reduces,
//! prints and writes the results.
//!
//! The trait is object-safe and moves bytes only; typed helpers on
//! `dyn Coordinator` serialise with serde on top. [`Solo`] is the one
//! process of an ordinary run. [`MpiCoordinator`] (cargo feature `mpi`)
//! uses rsmpi, so the default build needs no MPI library at all.
//!
//! [`init`] decides which one a process gets from how it was launched, and
//! refuses launches that would silently run N independent copies (an MPI
//! library without the launcher's PMI, or a build without MPI under
//! `mpirun`): see [`LaunchError`].
#![deny(missing_docs)]

mod launch;
#[cfg(feature = "mpi")]
mod mpi_impl;
pub mod wire;

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

pub use launch::{detect, LaunchEnv, LaunchError};
#[cfg(feature = "mpi")]
pub use mpi_impl::MpiCoordinator;

/// A signal one rank sends the others while a phase runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// A worker of the sending rank finished all its transfers (or hit the
    /// time limit) this many ns after the phase epoch: the stonewall.
    FirstDone(u64),
    /// A worker of the sending rank failed: the others should stop.
    Abort,
}

/// In-phase signalling between ranks, polled by the driver's main thread
/// while its worker threads run. Every rank must call [`finish`] once per
/// phase, after its own workers are done, before the next collective call.
///
/// [`finish`]: PhaseSignals::finish
pub trait PhaseSignals {
    /// Tells every other rank about a local event. Each kind is sent at
    /// most once per phase; repeats are ignored.
    fn announce(&mut self, signal: Signal);
    /// Signals other ranks sent since the last call, without waiting.
    fn poll(&mut self) -> Vec<Signal>;
    /// Ends the phase: tells the others this rank is done and waits until
    /// every other rank said the same. Returns the signals not yet polled.
    ///
    /// Kept for today's callers: under MPI it is [`end`](Self::end) with
    /// the coordinator's default limit, and a rank that does not arrive in
    /// time makes this process print the error and abort the job.
    fn finish(&mut self) -> Vec<Signal>;
    /// Ends the phase through one collective (every rank's first-done
    /// time, abort flag and barrier-exit clock, reduced), waiting at most
    /// `limit` (`None`: the coordinator's default, [`timeout_from_env`])
    /// past this call for ranks that stopped answering; ranks still
    /// working are asked whether they are alive and waited for. The
    /// error names the ranks (and hosts) that did not answer.
    ///
    /// `flags` are eight caller-defined bits (failed, interrupted, hit the
    /// time limit, …) OR-ed over all ranks in the same reduction, so the
    /// caller needs no further collective to agree on them.
    fn end(&mut self, limit: Option<Duration>, flags: u8) -> Result<PhaseEnd, CoordError> {
        let _ = limit;
        let signals = self.finish();
        Ok(PhaseEnd {
            signals,
            flags,
            ..PhaseEnd::default()
        })
    }
}

/// How one phase ended, as every rank agrees on it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PhaseEnd {
    /// Signals not yet polled (for the caller to apply, as with `finish`).
    pub signals: Vec<Signal>,
    /// The earliest first-done time any rank announced (ns after the
    /// phase epoch), the stonewall. `None` also from coordinators without
    /// a reduction ([`Solo`]): there the local value is the answer.
    pub first_done_ns: Option<u64>,
    /// Some rank announced [`Signal::Abort`] (always `false` from [`Solo`]).
    pub abort: bool,
    /// The `flags` given to [`PhaseSignals::end`], OR-ed over all ranks.
    pub flags: u8,
    /// Spread of the ranks' clocks read right after the phase's start
    /// barrier (latest − earliest, ns): the start skew. `None` when the
    /// coordinator does not measure it (one process).
    pub start_skew_ns: Option<u64>,
}

/// A wait on other ranks that failed: they stopped answering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordError(pub String);

impl std::fmt::Display for CoordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CoordError {}

/// What this rank's coordinator sent, for the scale benchmark and the
/// record. Point-to-point messages are counted exactly; a collective is
/// counted once per call (inside MPI it costs O(log ranks) messages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoordStats {
    /// Point-to-point messages sent by this rank.
    pub p2p_sent: u64,
    /// Collective operations this rank took part in.
    pub collectives: u64,
    /// Payload bytes this rank sent.
    pub bytes_sent: u64,
    /// Payload bytes this rank received in gathers.
    pub bytes_gathered: u64,
}

/// Combines one payload into another at a node leader or rank 0 (see
/// [`Coordinator::gather_merged`]): counters add, histograms merge.
pub type MergeFn<'a> = &'a dyn Fn(&mut Vec<u8>, &[u8]);

/// The default limit for waits on other ranks: `IOSCALE_COORD_TIMEOUT`
/// seconds (a number; `0` waits forever), 60 s if unset. It counts from
/// the moment a rank is ready and waiting; ranks still working are asked
/// whether they are alive, and a wait on a live rank goes on.
pub fn timeout_from_env() -> Option<Duration> {
    parse_timeout(std::env::var("IOSCALE_COORD_TIMEOUT").ok().as_deref())
}

fn parse_timeout(v: Option<&str>) -> Option<Duration> {
    match v.and_then(|s| s.trim().parse::<f64>().ok()) {
        Some(s) if s <= 0.0 || !s.is_finite() => None,
        Some(s) => Some(Duration::from_secs_f64(s)),
        None => Some(Duration::from_secs(60)),
    }
}

/// The processes of one run and how they agree. Object-safe: it moves
/// bytes; the typed helpers live on `dyn Coordinator`.
///
/// Every method except [`rank`](Coordinator::rank),
/// [`size`](Coordinator::size) and [`hostname`](Coordinator::hostname) is
/// collective: every rank must call it, in the same order.
pub trait Coordinator {
    /// This process's rank, from 0.
    fn rank(&self) -> u32;
    /// Number of ranks.
    fn size(&self) -> u32;
    /// The host this rank runs on.
    fn hostname(&self) -> String;
    /// What kind of coordination this is (`solo`, `mpi`), for the record.
    fn kind(&self) -> &'static str;
    /// Waits until every rank got here.
    fn barrier(&self);
    /// Collects every rank's bytes at rank 0: `Some(by rank)` there, `None`
    /// elsewhere.
    fn gather(&self, bytes: Vec<u8>) -> Option<Vec<Vec<u8>>>;
    /// Rank 0's bytes, on every rank (the argument is ignored elsewhere).
    fn broadcast(&self, bytes: Vec<u8>) -> Vec<u8>;
    /// Logical OR across ranks: agreement on errors, interrupts, limits.
    fn any(&self, flag: bool) -> bool;
    /// Smallest value across ranks.
    fn min_u64(&self, x: u64) -> u64;
    /// Largest value across ranks.
    fn max_f64(&self, x: f64) -> f64;
    /// Starts the in-phase signalling of phase number `phase` (a counter
    /// every rank advances the same way).
    fn signals(&self, phase: u64) -> Box<dyn PhaseSignals + '_>;
    /// [`barrier`](Self::barrier), waiting at most `limit` (`None`: the
    /// default, [`timeout_from_env`]) for the others; the error names the
    /// ranks that did not reach it. The exit time is kept for the start
    /// skew that [`PhaseSignals::end`] reports.
    fn barrier_within(&self, limit: Option<Duration>) -> Result<(), CoordError> {
        let _ = limit;
        self.barrier();
        Ok(())
    }
    /// Every rank's bytes combined into one at rank 0 (`None` elsewhere):
    /// each node's leader merges its ranks' payloads with `merge`, then
    /// rank 0 merges the nodes', so rank 0 receives one payload per node.
    fn gather_merged(&self, bytes: Vec<u8>, merge: MergeFn<'_>) -> Option<Vec<u8>> {
        let all = self.gather(bytes)?;
        let mut it = all.into_iter();
        let mut acc = it.next().unwrap_or_default();
        for b in it {
            merge(&mut acc, &b);
        }
        Some(acc)
    }
    /// What this rank's coordinator sent so far.
    fn stats(&self) -> CoordStats {
        CoordStats::default()
    }
    /// Ends the whole job with `code` after an unrecoverable coordination
    /// failure (MPI_Abort under MPI: the other ranks cannot be left waiting).
    fn abort(&self, code: i32) -> ! {
        std::process::exit(code)
    }
}

/// A typed collective failed to decode: a bug or mismatched binaries.
#[derive(Debug)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ranks disagree on a message ({}); are all ranks the same ioscale binary?",
            self.0
        )
    }
}

impl std::error::Error for DecodeError {}

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    // Plain data structures always serialise; an error here is a bug.
    serde_json::to_vec(v).expect("serialising a coordinator message")
}

fn decode<T: DeserializeOwned>(b: &[u8]) -> Result<T, DecodeError> {
    serde_json::from_slice(b).map_err(|e| DecodeError(e.to_string()))
}

fn encode_bin<T: Serialize>(v: &T) -> Vec<u8> {
    wire::to_bytes(v).expect("serialising a coordinator message")
}

fn decode_bin<T: DeserializeOwned>(b: &[u8]) -> Result<T, DecodeError> {
    wire::from_bytes(b).map_err(|e| DecodeError(e.0))
}

impl dyn Coordinator + '_ {
    /// [`Coordinator::gather`] of a serde value: every rank's, by rank, at rank 0.
    pub fn gather_as<T: Serialize + DeserializeOwned>(
        &self,
        v: &T,
    ) -> Result<Option<Vec<T>>, DecodeError> {
        self.gather_with(encode(v), decode)
    }

    /// [`Coordinator::broadcast`] of a serde value: rank 0's `v` on every rank.
    pub fn broadcast_as<T: Serialize + DeserializeOwned>(&self, v: &T) -> Result<T, DecodeError> {
        let bytes = if self.rank() == 0 {
            encode(v)
        } else {
            Vec::new()
        };
        decode(&self.broadcast(bytes))
    }

    /// Every rank's value, by rank, on every rank (gather, then broadcast).
    pub fn all_gather_as<T: Serialize + DeserializeOwned>(
        &self,
        v: &T,
    ) -> Result<Vec<T>, DecodeError> {
        let mine = self.gather_as(v)?.unwrap_or_default();
        self.broadcast_as(&mine)
    }

    /// [`gather_as`](Self::gather_as) in the compact binary [`wire`] form
    /// (3–10× smaller than JSON, no text parsing). For plain data types
    /// only: not self-describing, so no `skip_serializing_if`, `untagged`
    /// or `flatten` (those stay with the JSON helpers).
    pub fn gather_wire_as<T: Serialize + DeserializeOwned>(
        &self,
        v: &T,
    ) -> Result<Option<Vec<T>>, DecodeError> {
        self.gather_with(encode_bin(v), decode_bin)
    }

    /// [`Coordinator::gather`] of this rank's `bytes`, each rank's decoded
    /// with `decode` at rank 0.
    fn gather_with<T>(
        &self,
        bytes: Vec<u8>,
        decode: fn(&[u8]) -> Result<T, DecodeError>,
    ) -> Result<Option<Vec<T>>, DecodeError> {
        match self.gather(bytes) {
            Some(all) => all
                .iter()
                .map(|b| decode(b))
                .collect::<Result<Vec<T>, _>>()
                .map(Some),
            None => Ok(None),
        }
    }

    /// A serde value combined over all ranks at rank 0 (`None` elsewhere):
    /// node leaders fold their ranks' values with `merge`, rank 0 folds
    /// the nodes' ([`Coordinator::gather_merged`]), in the binary
    /// [`wire`] form (plain data types only, as
    /// [`gather_wire_as`](Self::gather_wire_as)).
    pub fn reduce_as<T: Serialize + DeserializeOwned>(
        &self,
        v: &T,
        merge: impl Fn(&mut T, T),
    ) -> Result<Option<T>, DecodeError> {
        let failed = std::cell::RefCell::new(None::<DecodeError>);
        let fold = |acc: &mut Vec<u8>, other: &[u8]| {
            let r = decode_bin::<T>(acc).and_then(|mut a| {
                merge(&mut a, decode_bin::<T>(other)?);
                Ok(a)
            });
            match r {
                Ok(a) => *acc = encode_bin(&a),
                Err(e) => {
                    failed.borrow_mut().get_or_insert(e);
                }
            }
        };
        let out = self.gather_merged(encode_bin(v), &fold);
        if let Some(e) = failed.into_inner() {
            return Err(e);
        }
        out.map(|b| decode_bin(&b)).transpose()
    }

    /// Whether this is rank 0, the one that prints and writes.
    pub fn is_root(&self) -> bool {
        self.rank() == 0
    }
}

/// The one process of an ordinary run: every collective is immediate.
#[derive(Debug, Default, Clone, Copy)]
pub struct Solo;

struct NoSignals;

impl PhaseSignals for NoSignals {
    fn announce(&mut self, _: Signal) {}
    fn poll(&mut self) -> Vec<Signal> {
        Vec::new()
    }
    fn finish(&mut self) -> Vec<Signal> {
        Vec::new()
    }
}

impl Coordinator for Solo {
    fn rank(&self) -> u32 {
        0
    }
    fn size(&self) -> u32 {
        1
    }
    fn hostname(&self) -> String {
        hostname()
    }
    fn kind(&self) -> &'static str {
        "solo"
    }
    fn barrier(&self) {}
    fn gather(&self, bytes: Vec<u8>) -> Option<Vec<Vec<u8>>> {
        Some(vec![bytes])
    }
    fn broadcast(&self, bytes: Vec<u8>) -> Vec<u8> {
        bytes
    }
    fn any(&self, flag: bool) -> bool {
        flag
    }
    fn min_u64(&self, x: u64) -> u64 {
        x
    }
    fn max_f64(&self, x: f64) -> f64 {
        x
    }
    fn signals(&self, _phase: u64) -> Box<dyn PhaseSignals + '_> {
        Box::new(NoSignals)
    }
}

/// This machine's host name (the kernel's, as `uname -n` prints it).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Whether this binary was built with MPI support (cargo feature `mpi`).
pub const HAS_MPI: bool = cfg!(feature = "mpi");

/// The coordinator for this process, chosen from how it was launched:
/// MPI when a launcher (mpirun, srun with a PMI) started it and the
/// feature is on, [`Solo`] otherwise. Call once, early, before threads
/// start; drop the result before the process exits (it finalises MPI).
pub fn init() -> Result<Box<dyn Coordinator>, LaunchError> {
    let env = detect(|k| std::env::var(k).ok());
    env.check_before_init(HAS_MPI)?;
    #[cfg(feature = "mpi")]
    if env.wants_mpi() {
        if env.pmi_size.is_some() && !env.pmix && mpi_impl::open_mpi_lacks_pmi2() == Some(true) {
            return Err(LaunchError::NoPmi2 {
                tasks: env.pmi_size.unwrap_or(0),
            });
        }
        let c = MpiCoordinator::init().ok_or(LaunchError::MpiInit)?;
        env.check_world(c.size())?;
        return Ok(Box::new(c));
    }
    Ok(Box::new(Solo))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solo_collectives_are_identities() {
        let s = Solo;
        let c: &dyn Coordinator = &s;
        assert_eq!(c.rank(), 0);
        assert_eq!(c.size(), 1);
        assert!(c.any(true));
        assert!(!c.any(false));
        assert_eq!(c.min_u64(7), 7);
        assert_eq!(c.gather_as(&vec![1u32, 2]).unwrap(), Some(vec![vec![1, 2]]));
        assert_eq!(c.broadcast_as(&"x".to_string()).unwrap(), "x");
        assert_eq!(c.all_gather_as(&5u8).unwrap(), vec![5]);
        assert_eq!(c.gather_wire_as(&7u64).unwrap(), Some(vec![7]));
        assert_eq!(c.reduce_as(&3u64, |a, b| *a += b).unwrap(), Some(3));
        assert!(c.barrier_within(None).is_ok());
        assert_eq!(c.stats(), CoordStats::default());
        let mut sig = c.signals(0);
        sig.announce(Signal::Abort);
        assert!(sig.poll().is_empty());
        assert!(sig.finish().is_empty());
        let mut sig = c.signals(1);
        assert_eq!(sig.end(None, 5).unwrap().flags, 5);
    }
}
