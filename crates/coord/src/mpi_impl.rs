//! [`Coordinator`] over MPI (rsmpi), behind the cargo feature `mpi`.
//!
//! Only the main thread of each rank calls MPI (`MPI_THREAD_FUNNELED`):
//! worker threads never do, and while they run the main thread polls for
//! the other ranks' in-phase signals. Those signals are tiny point-to-point
//! messages (three u64), always sent eagerly by MPI implementations, and
//! each phase ends with an `End` message from every rank to every other,
//! so no message of one phase is ever left over into the next.

use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Count;

use crate::{Coordinator, PhaseSignals, Signal};

/// Tag of in-phase signal messages.
const TAG: i32 = 0x10c5;
const FIRST_DONE: u64 = 1;
const ABORT: u64 = 2;
const END: u64 = 3;

/// The ranks of `MPI_COMM_WORLD`. Dropping it finalises MPI.
pub struct MpiCoordinator {
    // Declared before `universe`, so it is dropped before MPI_Finalize.
    world: SimpleCommunicator,
    host: String,
    _universe: Universe,
}

impl MpiCoordinator {
    /// Initialises MPI (funneled threading). `None` if MPI was initialised
    /// already or refused the threading level.
    pub fn init() -> Option<Self> {
        let (universe, level) = mpi::initialize_with_threading(mpi::Threading::Funneled)?;
        if level < mpi::Threading::Funneled {
            return None;
        }
        let world = universe.world();
        let host = mpi::environment::processor_name()
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(crate::hostname);
        Some(MpiCoordinator {
            world,
            host,
            _universe: universe,
        })
    }
}

/// Whether this is an Open MPI that cannot join a PMI-1/PMI-2 launch
/// (`srun --mpi=pmi2`): its `pmix` framework has no `s1`/`s2` component
/// next to the libmpi this process loaded. Such an MPI_Init aborts with
/// its own long message; checking first lets ioscale say what to do.
/// `None` when it cannot tell (another MPI, components not found).
pub fn open_mpi_lacks_pmi2() -> Option<bool> {
    let version = mpi::environment::library_version().ok()?;
    if !version.contains("Open MPI") {
        return None;
    }
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let lib = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("/libmpi.so"))?;
    let dir = std::path::Path::new(lib).parent()?;
    let mut saw_components = false;
    // Upstream keeps components in LIBDIR/openmpi; Debian's libmpi sits in
    // the multiarch directory with them in openmpi/lib/openmpi3.
    let roots = [dir.to_path_buf(), dir.join("openmpi/lib")];
    let subdirs = roots
        .iter()
        .filter_map(|r| std::fs::read_dir(r).ok())
        .flat_map(|d| d.flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with("openmpi") && e.path().is_dir());
    for entry in subdirs {
        let Ok(list) = std::fs::read_dir(entry.path()) else {
            continue;
        };
        for c in list.flatten() {
            let c = c.file_name().to_string_lossy().into_owned();
            if c.starts_with("mca_pmix_") {
                saw_components = true;
                if c.starts_with("mca_pmix_s1.") || c.starts_with("mca_pmix_s2.") {
                    return Some(false);
                }
            }
        }
    }
    saw_components.then_some(true)
}

impl Coordinator for MpiCoordinator {
    fn rank(&self) -> u32 {
        self.world.rank() as u32
    }

    fn size(&self) -> u32 {
        self.world.size() as u32
    }

    fn hostname(&self) -> String {
        self.host.clone()
    }

    fn kind(&self) -> &'static str {
        "mpi"
    }

    fn barrier(&self) {
        self.world.barrier();
    }

    fn gather(&self, bytes: Vec<u8>) -> Option<Vec<Vec<u8>>> {
        let root = self.world.process_at_rank(0);
        let len = bytes.len() as Count;
        if self.world.rank() != 0 {
            root.gather_into(&len);
            root.gather_varcount_into(&bytes[..]);
            return None;
        }
        let n = self.world.size() as usize;
        let mut lens: Vec<Count> = vec![0; n];
        root.gather_into_root(&len, &mut lens[..]);
        let displs: Vec<Count> = lens
            .iter()
            .scan(0, |acc, &l| {
                let d = *acc;
                *acc += l;
                Some(d)
            })
            .collect();
        let total: usize = lens.iter().map(|&l| l as usize).sum();
        let mut all = vec![0u8; total];
        {
            let mut part = PartitionMut::new(&mut all[..], &lens[..], &displs[..]);
            root.gather_varcount_into_root(&bytes[..], &mut part);
        }
        Some(
            lens.iter()
                .zip(&displs)
                .map(|(&l, &d)| all[d as usize..(d + l) as usize].to_vec())
                .collect(),
        )
    }

    fn broadcast(&self, bytes: Vec<u8>) -> Vec<u8> {
        let root = self.world.process_at_rank(0);
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        let mut buf = if self.world.rank() == 0 {
            bytes
        } else {
            vec![0u8; len as usize]
        };
        if len > 0 {
            root.broadcast_into(&mut buf[..]);
        }
        buf
    }

    fn any(&self, flag: bool) -> bool {
        let mine = flag as u32;
        let mut all = 0u32;
        self.world
            .all_reduce_into(&mine, &mut all, SystemOperation::max());
        all != 0
    }

    fn min_u64(&self, x: u64) -> u64 {
        let mut out = 0u64;
        self.world
            .all_reduce_into(&x, &mut out, SystemOperation::min());
        out
    }

    fn max_f64(&self, x: f64) -> f64 {
        let mut out = 0f64;
        self.world
            .all_reduce_into(&x, &mut out, SystemOperation::max());
        out
    }

    fn signals(&self, phase: u64) -> Box<dyn PhaseSignals + '_> {
        let n = self.world.size() as usize;
        let me = self.world.rank() as usize;
        let mut ended = vec![false; n];
        ended[me] = true;
        Box::new(MpiSignals {
            world: &self.world,
            phase,
            sent_first: false,
            sent_abort: false,
            sent_end: false,
            ended,
            waiting: n - 1,
        })
    }
}

struct MpiSignals<'a> {
    world: &'a SimpleCommunicator,
    phase: u64,
    sent_first: bool,
    sent_abort: bool,
    sent_end: bool,
    ended: Vec<bool>,
    waiting: usize,
}

impl MpiSignals<'_> {
    fn send_all(&self, kind: u64, value: u64) {
        let msg = [self.phase, kind, value];
        let me = self.world.rank();
        for r in 0..self.world.size() {
            if r != me {
                self.world.process_at_rank(r).send_with_tag(&msg[..], TAG);
            }
        }
    }

    fn take(&mut self, msg: &[u64], source: i32, out: &mut Vec<Signal>) {
        if msg.len() != 3 || msg[0] != self.phase {
            // Cannot happen (see the module notes); never let it pass silently.
            panic!(
                "rank {}: in-phase message {msg:?} from rank {source} does not belong to phase {}",
                self.world.rank(),
                self.phase
            );
        }
        match msg[1] {
            FIRST_DONE => out.push(Signal::FirstDone(msg[2])),
            ABORT => out.push(Signal::Abort),
            END => {
                let s = source as usize;
                if !self.ended[s] {
                    self.ended[s] = true;
                    self.waiting -= 1;
                }
            }
            k => panic!("unknown in-phase message kind {k} from rank {source}"),
        }
    }
}

impl PhaseSignals for MpiSignals<'_> {
    fn announce(&mut self, signal: Signal) {
        match signal {
            Signal::FirstDone(ns) if !self.sent_first => {
                self.sent_first = true;
                self.send_all(FIRST_DONE, ns);
            }
            Signal::Abort if !self.sent_abort => {
                self.sent_abort = true;
                self.send_all(ABORT, 0);
            }
            _ => {}
        }
    }

    fn poll(&mut self) -> Vec<Signal> {
        let mut out = Vec::new();
        while let Some(status) = self.world.any_process().immediate_probe_with_tag(TAG) {
            let src = status.source_rank();
            let (msg, _) = self
                .world
                .process_at_rank(src)
                .receive_vec_with_tag::<u64>(TAG);
            self.take(&msg, src, &mut out);
        }
        out
    }

    fn finish(&mut self) -> Vec<Signal> {
        let mut out = Vec::new();
        if !self.sent_end {
            self.sent_end = true;
            self.send_all(END, 0);
        }
        while self.waiting > 0 {
            let (msg, status) = self.world.any_process().receive_vec_with_tag::<u64>(TAG);
            self.take(&msg, status.source_rank(), &mut out);
        }
        out
    }
}
