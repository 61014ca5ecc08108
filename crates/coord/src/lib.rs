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

mod launch;
#[cfg(feature = "mpi")]
mod mpi_impl;

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
    fn finish(&mut self) -> Vec<Signal>;
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

impl dyn Coordinator + '_ {
    /// [`Coordinator::gather`] of a serde value: every rank's, by rank, at rank 0.
    pub fn gather_as<T: Serialize + DeserializeOwned>(
        &self,
        v: &T,
    ) -> Result<Option<Vec<T>>, DecodeError> {
        match self.gather(encode(v)) {
            Some(all) => all
                .iter()
                .map(|b| decode(b))
                .collect::<Result<Vec<T>, _>>()
                .map(Some),
            None => Ok(None),
        }
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
        let mut sig = c.signals(0);
        sig.announce(Signal::Abort);
        assert!(sig.poll().is_empty());
        assert!(sig.finish().is_empty());
    }
}
