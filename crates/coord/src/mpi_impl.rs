//! [`Coordinator`] over MPI (rsmpi), behind the cargo feature `mpi`.
//!
//! Only the main thread of each rank calls MPI (`MPI_THREAD_FUNNELED`):
//! worker threads never do, and while they run the main thread polls.
//!
//! What it costs per phase, per rank, whatever the number of ranks:
//!
//! - **In-phase signals** (the stonewall's first finish, an abort) travel a
//!   binary tree of ranks (parent `(r−1)/2`, children `2r+1`, `2r+2`): a
//!   rank passes the first event of each kind it learns once up towards
//!   rank 0, and rank 0 passes it once down; every rank forwards what it
//!   gets from its parent to its children. At most 3 messages per kind per
//!   rank, O(log N) hops.
//! - **The phase end** is one non-blocking all-reduce (`MPI_Iallreduce`,
//!   max) of fourteen integers: the phase number (both signs, so ranks at
//!   different phases are caught), the earliest first-done time, the abort
//!   flag, the barrier-exit clock (both signs: its spread is the start
//!   skew) and eight caller flags (failed, interrupted, …). The
//!   main thread polls it with `MPI_Test`, so the wait is bounded.
//! - **A wait that runs out** (default 60 s, `IOSCALE_COORD_TIMEOUT`)
//!   asks rank 0 for a tally: rank 0 pings every rank, every main thread
//!   that polls (waiting or still running its workers) answers, and ranks
//!   that do not answer within the grace time are named with their hosts
//!   to every rank that did. When all answered, the waits go on. Only this
//!   failure-suspect path costs O(N) messages, and only at rank 0.
//! - **Gathers** go through node leaders (`MPI_Comm_split_type` SHARED):
//!   each rank sends to the lowest rank of its node, which forwards one
//!   message per node to rank 0, or merges its ranks' payloads first
//!   ([`Coordinator::gather_merged`]). Lengths are 64-bit and payloads go
//!   in chunks of at most 1 GiB, so no 32-bit count overflows.
//!
//! Messages of a phase that arrive after it ended (a stonewall forwarded
//! late) carry its number and are dropped.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::request::{Request, Scope, StaticScope};
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;

use crate::{CoordError, CoordStats, Coordinator, MergeFn, PhaseEnd, PhaseSignals, Signal};

/// Tests a pending request once: true when it has completed (and is gone
/// from `req`), false while it is still pending (it is put back).
fn completed<'a, D: ?Sized, S: Scope<'a>>(req: &mut Option<Request<'a, D, S>>) -> bool {
    match req.take().map(|r| r.test()) {
        Some(Ok(_)) => true,
        Some(Err(r)) => {
            *req = Some(r);
            false
        }
        None => true,
    }
}

/// Tag of in-phase signals: `[phase, kind, value]`.
const TAG_SIGNAL: i32 = 0x10c5;
/// Tag of the liveness tally: `[wait, kind, value]`.
const TAG_TALLY: i32 = 0x10c6;
/// Tag of a tally's verdict: 8 bytes of wait number, then the text.
const TAG_VERDICT: i32 = 0x10c7;
/// Tags of gathered payloads: a u64 length, then chunks.
const TAG_GLEN: i32 = 0x10c8;
const TAG_GDATA: i32 = 0x10c9;

const FIRST_DONE: u64 = 1;
const ABORT: u64 = 2;
const STUCK: u64 = 4;
const PING: u64 = 5;
const PONG: u64 = 6;
const KEEPALIVE: u64 = 7;

/// Largest chunk of one gathered payload (MPI counts are 32-bit).
const CHUNK: usize = 1 << 30;
/// Longest the tally waits for answers.
const MAX_GRACE: Duration = Duration::from_secs(10);

/// The ranks of `MPI_COMM_WORLD`. Dropping it finalises MPI.
pub struct MpiCoordinator {
    // Communicators are declared before `universe`, so they are freed
    // before MPI_Finalize.
    world: SimpleCommunicator,
    /// The ranks on this node (shared memory), ordered by world rank.
    node: SimpleCommunicator,
    /// Node leaders (node rank 0), ordered by world rank; `None` elsewhere.
    leaders: Option<SimpleCommunicator>,
    /// World rank of each rank of `node`.
    node_world: Vec<i32>,
    host: String,
    /// Host of each rank (rank 0 only; empty elsewhere).
    hosts: Vec<String>,
    /// Rank 0's host.
    root_host: String,
    timeout: Option<Duration>,
    stats: Cell<CoordStats>,
    /// Realtime clock (ns) read right after the last barrier.
    barrier_exit_ns: Cell<i64>,
    /// Number of the next bounded wait (the same on every rank).
    wait_seq: Cell<u64>,
    tally: RefCell<Option<Tally>>,
    /// A tally's verdict that reached this rank.
    failed: RefCell<Option<String>>,
    /// The root said the wait of this number may go on.
    keepalive: Cell<Option<u64>>,
    /// Control messages in flight, with their leaked buffers.
    outgoing: RefCell<Vec<InFlight>>,
    _universe: Universe,
}

/// A control message being sent, with its leaked buffer.
type InFlight = (Request<'static, [u8]>, *mut [u8]);

/// Rank 0's count of who answered its ping.
struct Tally {
    wait: u64,
    started: Instant,
    answered: Vec<bool>,
    reporters: BTreeSet<i32>,
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

impl MpiCoordinator {
    /// Initialises MPI (funneled threading) and the node communicators.
    /// `None` if MPI was initialised already or refused the threading level.
    pub fn init() -> Option<Self> {
        yield_when_oversubscribed(|k| std::env::var(k).ok());
        let (universe, level) = mpi::initialize_with_threading(mpi::Threading::Funneled)?;
        if level < mpi::Threading::Funneled {
            return None;
        }
        let world = universe.world();
        let host = mpi::environment::processor_name()
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(crate::hostname);
        let node = world.split_shared(world.rank());
        let mut node_world = vec![0i32; node.size() as usize];
        node.all_gather_into(&world.rank(), &mut node_world[..]);
        let color = if node.rank() == 0 {
            Color::with_value(0)
        } else {
            Color::undefined()
        };
        let leaders = world.split_by_color(color);
        let mut c = MpiCoordinator {
            world,
            node,
            leaders,
            node_world,
            host,
            hosts: Vec::new(),
            root_host: String::new(),
            timeout: crate::timeout_from_env(),
            stats: Cell::new(CoordStats::default()),
            barrier_exit_ns: Cell::new(0),
            wait_seq: Cell::new(0),
            tally: RefCell::new(None),
            failed: RefCell::new(None),
            keepalive: Cell::new(None),
            outgoing: RefCell::new(Vec::new()),
            _universe: universe,
        };
        let hosts = c.gather(c.host.clone().into_bytes());
        c.hosts = hosts
            .unwrap_or_default()
            .into_iter()
            .map(|h| String::from_utf8_lossy(&h).into_owned())
            .collect();
        let root_host = c.broadcast(c.host.clone().into_bytes());
        c.root_host = String::from_utf8_lossy(&root_host).into_owned();
        c.stats.set(CoordStats::default());
        Some(c)
    }

    fn count(&self, f: impl FnOnce(&mut CoordStats)) {
        let mut s = self.stats.get();
        f(&mut s);
        self.stats.set(s);
    }

    /// Sends a control message without waiting: a blocking send to a rank
    /// that stopped (before the connection to it was made) would never
    /// return, and this rank could then not answer or time out.
    fn send_u64s(&self, to: i32, tag: i32, msg: &[u64]) {
        let bytes: Vec<u8> = msg.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.send_nb(to, tag, bytes);
    }

    fn send_nb(&self, to: i32, tag: i32, bytes: Vec<u8>) {
        let n = bytes.len() as u64;
        let buf: &'static mut [u8] = Box::leak(bytes.into_boxed_slice());
        let ptr = buf as *mut [u8];
        let req = self
            .world
            .process_at_rank(to)
            .immediate_send_with_tag(StaticScope, &*buf, tag);
        self.outgoing.borrow_mut().push((req, ptr));
        self.count(|s| {
            s.p2p_sent += 1;
            s.bytes_sent += n;
        });
        self.reap();
    }

    /// Frees the buffers of control messages that were delivered.
    fn reap(&self) {
        let mut out = self.outgoing.borrow_mut();
        let mut keep = Vec::with_capacity(out.len());
        for (req, ptr) in out.drain(..) {
            match req.test() {
                // SAFETY: the send completed, so MPI no longer reads the
                // buffer, which came from Box::leak in `send_nb`.
                Ok(_) => drop(unsafe { Box::from_raw(ptr) }),
                Err(req) => keep.push((req, ptr)),
            }
        }
        *out = keep;
    }

    /// Receives a control message from `src` with `tag` as u64 words.
    fn recv_u64s(&self, src: i32, tag: i32) -> Vec<u64> {
        let (m, _) = self
            .world
            .process_at_rank(src)
            .receive_vec_with_tag::<u8>(tag);
        m.chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect()
    }

    /// Waits for a collective this rank cannot give up on and still return
    /// its value (a barrier, an agreement, a broadcast, a gather), answering
    /// the other ranks' liveness questions meanwhile, so a live rank is
    /// never named gone. `limit` as in [`Self::bounded_wait`]; `None` waits
    /// as long as it takes (rank 0 may be busy writing a report or
    /// removing files), yet a tally that names a gone rank still ends it.
    /// A failed wait ends the job with the reason, as a phase end does.
    fn wait_or_abort(
        &self,
        wait: u64,
        what: &str,
        limit: Option<Duration>,
        look: impl FnMut() -> Look,
    ) {
        if let Err(e) = self.numbered_wait(wait, what, limit, look, || {}) {
            self.give_up(&e)
        }
    }

    /// Says why this rank cannot go on and ends the job.
    fn give_up(&self, e: &CoordError) -> ! {
        eprintln!("ioscale: rank {} ({}): {e}", self.world.rank(), self.host);
        self.world.abort(1)
    }

    /// An all-reduce of one value, waited for as [`Self::wait_or_abort`]
    /// does, without a limit of its own.
    fn all_reduce<T: Equivalence + Default>(&self, x: T, op: SystemOperation) -> T {
        let wait = self.next_wait();
        let mut out = T::default();
        mpi::request::scope(|scope| {
            let mut req = Some(
                self.world
                    .immediate_all_reduce_into(scope, &x, &mut out, op),
            );
            self.wait_or_abort(wait, "an agreement of all ranks", None, || {
                Look::of(completed(&mut req))
            });
        });
        self.count(|s| s.collectives += 1);
        out
    }

    /// `rank (host)`, or the bare rank where this rank does not know hosts.
    fn name(&self, r: usize) -> String {
        match self.hosts.get(r) {
            Some(h) => format!("{r} ({h})"),
            None if r == 0 => format!("0 ({})", self.root_host),
            None => r.to_string(),
        }
    }

    /// Sends a payload of any size: a u64 length, then chunks.
    /// A node leader's step of a gather: the leaders other than rank 0
    /// send their node's `payload` to it and get `None`; rank 0 gets the
    /// leaders' group, to receive theirs.
    fn to_leaders(&self, payload: &[u8]) -> Option<&SimpleCommunicator> {
        let leaders = self
            .leaders
            .as_ref()
            .expect("a node leader is in the leaders' group");
        if leaders.rank() != 0 {
            self.send_bytes(leaders, 0, payload);
            return None;
        }
        Some(leaders)
    }

    fn send_bytes(&self, comm: &SimpleCommunicator, to: i32, bytes: &[u8]) {
        let p = comm.process_at_rank(to);
        p.send_with_tag(&(bytes.len() as u64), TAG_GLEN);
        let mut sent = 1;
        for chunk in bytes.chunks(CHUNK) {
            p.send_with_tag(chunk, TAG_GDATA);
            sent += 1;
        }
        self.count(|s| {
            s.p2p_sent += sent;
            s.bytes_sent += 8 + bytes.len() as u64;
        });
    }

    /// Receives one gather payload from each of `from` (ranks of `comm`)
    /// in the order they arrive, handing each to `take`. It polls and
    /// pauses between polls instead of blocking in a receive, which spins
    /// inside MPI: on an oversubscribed node that spinning takes the core
    /// from the very ranks being waited for. Each source is probed on its
    /// own, so a fast rank's payload of the next gather is never taken
    /// for another rank's of this one.
    ///
    /// The wait is bounded by the coordinator's limit: every gather
    /// follows a collective that all ranks left together (a phase end, an
    /// agreement), so a sender that has not sent within the limit and does
    /// not answer rank 0 has stopped; it is named and the job ends.
    fn recv_each(
        &self,
        wait: u64,
        comm: &SimpleCommunicator,
        from: std::ops::Range<i32>,
        mut take: impl FnMut(i32, Vec<u8>),
    ) {
        let mut left: Vec<i32> = from.collect();
        self.wait_or_abort(wait, "a gather of results", self.timeout, || {
            let before = left.len();
            while let Some(k) = left.iter().position(|&r| {
                comm.process_at_rank(r)
                    .immediate_probe_with_tag(TAG_GLEN)
                    .is_some()
            }) {
                let r = left.remove(k);
                take(r, self.recv_bytes(comm, r));
            }
            match left.len() {
                0 => Look::Done,
                n if n < before => Look::Progress,
                _ => Look::Pending,
            }
        });
    }

    fn recv_bytes(&self, comm: &SimpleCommunicator, from: i32) -> Vec<u8> {
        let p = comm.process_at_rank(from);
        let mut len = 0u64;
        p.receive_into_with_tag(&mut len, TAG_GLEN);
        let mut buf = vec![0u8; len as usize];
        for chunk in buf.chunks_mut(CHUNK) {
            p.receive_into_with_tag(chunk, TAG_GDATA);
        }
        self.count(|s| s.bytes_gathered += 8 + len);
        buf
    }

    /// Answers tally messages (pings, pongs, reports of a stuck wait,
    /// keep-alives, verdicts) without waiting. `waiting` is the number of
    /// the bounded wait this rank is in, if any.
    fn service(&self, waiting: Option<u64>) {
        while let Some(st) = self.world.any_process().immediate_probe_with_tag(TAG_TALLY) {
            let src = st.source_rank();
            let m = self.recv_u64s(src, TAG_TALLY);
            if m.len() != 3 {
                continue;
            }
            match m[1] {
                PING => {
                    let state = (waiting == Some(m[0])) as u64;
                    self.send_u64s(0, TAG_TALLY, &[m[0], PONG, state]);
                }
                PONG => {
                    if let Some(t) = self.tally.borrow_mut().as_mut() {
                        if t.wait == m[0] {
                            t.answered[src as usize] = true;
                        }
                    }
                }
                STUCK => {
                    self.start_tally(m[0]);
                    if let Some(t) = self.tally.borrow_mut().as_mut() {
                        if t.wait == m[0] {
                            t.reporters.insert(src);
                        }
                    }
                }
                KEEPALIVE => self.keepalive.set(Some(m[0])),
                _ => {}
            }
        }
        while let Some(st) = self
            .world
            .any_process()
            .immediate_probe_with_tag(TAG_VERDICT)
        {
            let src = st.source_rank();
            let (m, _) = self
                .world
                .process_at_rank(src)
                .receive_vec_with_tag::<u8>(TAG_VERDICT);
            let text = String::from_utf8_lossy(m.get(8..).unwrap_or_default()).into_owned();
            self.failed.borrow_mut().get_or_insert(text);
        }
    }

    /// Rank 0: asks every rank whether it is alive (once per wait).
    fn start_tally(&self, wait: u64) {
        if self.tally.borrow().as_ref().is_some_and(|t| t.wait == wait) {
            return;
        }
        let n = self.world.size() as usize;
        let mut answered = vec![false; n];
        answered[0] = true;
        for r in 1..n as i32 {
            self.send_u64s(r, TAG_TALLY, &[wait, PING, 0]);
        }
        *self.tally.borrow_mut() = Some(Tally {
            wait,
            started: Instant::now(),
            answered,
            reporters: BTreeSet::new(),
        });
    }

    /// Rank 0: settles a tally once everyone answered or the grace time
    /// passed. `Some(verdict)` when ranks are missing (already sent to
    /// everyone who answered), `None` otherwise.
    fn settle_tally(&self, what: &str, limit: Duration) -> Option<String> {
        let grace = limit.min(MAX_GRACE);
        let mut slot = self.tally.borrow_mut();
        let t = slot.as_mut()?;
        if t.answered.iter().all(|&a| a) {
            for &r in &t.reporters {
                if r != 0 {
                    self.send_u64s(r, TAG_TALLY, &[t.wait, KEEPALIVE, 0]);
                }
            }
            self.keepalive.set(Some(t.wait));
            *slot = None;
            return None;
        }
        if t.started.elapsed() < grace {
            return None;
        }
        let missing: Vec<usize> = (0..t.answered.len()).filter(|&r| !t.answered[r]).collect();
        let shown: Vec<String> = missing.iter().take(20).map(|&r| self.name(r)).collect();
        let more = if missing.len() > 20 {
            format!(" and {} more", missing.len() - 20)
        } else {
            String::new()
        };
        let text = format!(
            "rank{} {}{more} did not reach {what} and did not answer within {:.0} s \
             (process stopped, killed or cut off); the other {} ranks stop here",
            if missing.len() == 1 { "" } else { "s" },
            shown.join(", "),
            (limit + grace).as_secs_f64(),
            t.answered.len() - missing.len()
        );
        let mut msg = t.wait.to_le_bytes().to_vec();
        msg.extend_from_slice(text.as_bytes());
        for r in 1..t.answered.len() {
            if t.answered[r] {
                self.send_nb(r as i32, TAG_VERDICT, msg.clone());
            }
        }
        *slot = None;
        Some(text)
    }

    /// Waits until `done()` says the pending collective completed, at most
    /// `limit` past the last sign of life of every rank (see the module
    /// notes); `drain` runs on every pass (in-phase signals).
    fn bounded_wait(
        &self,
        what: &str,
        limit: Option<Duration>,
        mut done: impl FnMut() -> bool,
        drain: impl FnMut(),
    ) -> Result<(), CoordError> {
        let wait = self.next_wait();
        self.numbered_wait(wait, what, limit, || Look::of(done()), drain)
    }

    /// The number of the next wait. Every collective takes the same count
    /// of numbers on every rank (a gather one, on its senders too), so a
    /// tally's number means the same wait everywhere.
    fn next_wait(&self) -> u64 {
        let wait = self.wait_seq.get() + 1;
        self.wait_seq.set(wait);
        wait
    }

    /// [`Self::bounded_wait`] under a number taken before (a gather's
    /// receivers wait twice under one number).
    fn numbered_wait(
        &self,
        wait: u64,
        what: &str,
        limit: Option<Duration>,
        mut look: impl FnMut() -> Look,
        mut drain: impl FnMut(),
    ) -> Result<(), CoordError> {
        let me = self.world.rank();
        let mut deadline = limit.map(|l| Instant::now() + l);
        let mut asked: Option<Instant> = None;
        let mut spins = 0u32;
        loop {
            match look() {
                Look::Done => return Ok(()),
                // The next part may be as close: poll briskly again.
                Look::Progress => spins = 0,
                Look::Pending => {}
            }
            drain();
            self.service(Some(wait));
            if let Some(text) = self.failed.borrow_mut().take() {
                return Err(CoordError(text));
            }
            if me == 0 {
                // Another rank's wait may have run out while this one has
                // no limit of its own: rank 0 settles the tally anyway.
                if let Some(text) = limit
                    .or(self.timeout)
                    .and_then(|l| self.settle_tally(what, l))
                {
                    return Err(CoordError(text));
                }
            }
            let Some(l) = limit else {
                pause(&mut spins);
                continue;
            };
            if self.keepalive.get() == Some(wait) {
                self.keepalive.set(None);
                deadline = Some(Instant::now() + l);
                asked = None;
            }
            let now = Instant::now();
            if asked.is_none() && deadline.is_some_and(|d| now >= d) {
                asked = Some(now);
                if me == 0 {
                    self.start_tally(wait);
                } else {
                    self.send_u64s(0, TAG_TALLY, &[wait, STUCK, 0]);
                }
            }
            if me != 0 && asked.is_some_and(|a| now >= a + l + l.min(MAX_GRACE)) {
                return Err(CoordError(format!(
                    "rank {} did not answer within {:.0} s while rank {me} waited at {what}; \
                     it may have stopped or been cut off",
                    self.name(0),
                    (l + l + l.min(MAX_GRACE)).as_secs_f64()
                )));
            }
            pause(&mut spins);
        }
    }
}

impl Drop for MpiCoordinator {
    fn drop(&mut self) {
        // Control messages still in flight at the end (a stonewall
        // forwarded to a rank that had finished) complete as MPI
        // progresses; give them a moment, then leave the rest to MPI.
        let until = Instant::now() + Duration::from_secs(1);
        while !self.outgoing.borrow().is_empty() && Instant::now() < until {
            self.service(None);
            self.reap();
            std::thread::sleep(Duration::from_millis(1));
        }
        for (req, _) in self.outgoing.borrow_mut().drain(..) {
            std::mem::forget(req);
        }
    }
}

/// More ranks on this node than CPUs (as Open MPI's launcher tells each
/// rank in `OMPI_COMM_WORLD_LOCAL_SIZE`): asks Open MPI, before MPI_Init,
/// to yield the CPU while it waits in a collective or receive instead of
/// spinning (`mpi_yield_when_idle`), unless the user set it. With `--host
/// NODE:SLOTS` Open MPI does not know it is oversubscribed and spins: 256
/// ranks spinning on 2 cores did not get through MPI start-up in 5
/// minutes.
fn yield_when_oversubscribed(env: impl Fn(&str) -> Option<String>) {
    const KEY: &str = "OMPI_MCA_mpi_yield_when_idle";
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if oversubscribed(&env, cpus) && env(KEY).is_none() {
        // Before MPI_Init and before this process starts any thread.
        std::env::set_var(KEY, "1");
    }
}

/// Whether the launcher put more ranks on this node than `cpus`.
fn oversubscribed(env: impl Fn(&str) -> Option<String>, cpus: usize) -> bool {
    env("OMPI_COMM_WORLD_LOCAL_SIZE")
        .and_then(|v| v.trim().parse::<usize>().ok())
        .is_some_and(|n| n > cpus)
}

/// What one look at a pending operation found.
enum Look {
    /// It completed.
    Done,
    /// Part of it arrived (a gather's payload): the rest may be close.
    Progress,
    /// Nothing new.
    Pending,
}

impl Look {
    /// `Done` or `Pending`, for a wait that has no parts.
    fn of(done: bool) -> Look {
        if done {
            Look::Done
        } else {
            Look::Pending
        }
    }
}

/// Splits a node leader's framed gather (`rank, length, bytes` for each
/// of its ranks) into `out` by world rank; `None` when the frames do not
/// fit `b` or name a rank past `out`.
fn unframe_into(out: &mut [Vec<u8>], b: &[u8]) -> Option<()> {
    let mut at = 0;
    while at < b.len() {
        let r = usize::try_from(crate::wire::get_varint(b, &mut at).ok()?).ok()?;
        let l = usize::try_from(crate::wire::get_varint(b, &mut at).ok()?).ok()?;
        let end = at.checked_add(l).filter(|&e| e <= b.len())?;
        *out.get_mut(r)? = b[at..end].to_vec();
        at = end;
    }
    Some(())
}

/// Between polls: yield at first (a collective usually completes within
/// microseconds), then sleep 0.1 ms for about 0.1 s, then 1 ms: a rank
/// that waits long for a slow one must leave the cores to the ranks of its
/// node that still work (and, oversubscribed, to the ones it waits for).
fn pause(spins: &mut u32) {
    *spins = spins.saturating_add(1);
    if *spins < 64 {
        std::thread::yield_now();
    } else if *spins < 1064 {
        std::thread::sleep(Duration::from_micros(100));
    } else {
        std::thread::sleep(Duration::from_millis(1));
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
        let wait = self.next_wait();
        let mut req = Some(self.world.immediate_barrier());
        self.count(|s| s.collectives += 1);
        self.wait_or_abort(wait, "the barrier", None, || Look::of(completed(&mut req)));
        self.barrier_exit_ns.set(now_ns());
    }

    fn barrier_within(&self, limit: Option<Duration>) -> Result<(), CoordError> {
        let limit = limit.or(self.timeout);
        let mut req = Some(self.world.immediate_barrier());
        self.count(|s| s.collectives += 1);
        let r = self.bounded_wait("the barrier", limit, || completed(&mut req), || {});
        self.barrier_exit_ns.set(now_ns());
        if let Some(r) = req {
            // The barrier can no longer complete normally; the caller
            // stops the job. Dropping a pending request would panic.
            std::mem::forget(r);
        }
        r
    }

    fn gather(&self, bytes: Vec<u8>) -> Option<Vec<Vec<u8>>> {
        let wait = self.next_wait();
        if self.node.rank() != 0 {
            self.send_bytes(&self.node, 0, &bytes);
            return None;
        }
        // Node leader: frame its ranks' payloads with their world ranks.
        let mut framed = Vec::new();
        let mut frame = |rank: i32, b: &[u8]| {
            crate::wire::put_varint(&mut framed, rank as u64);
            crate::wire::put_varint(&mut framed, b.len() as u64);
            framed.extend_from_slice(b);
        };
        frame(self.world.rank(), &bytes);
        drop(bytes);
        self.recv_each(wait, &self.node, 1..self.node.size(), |i, b| {
            frame(self.node_world[i as usize], &b)
        });
        let leaders = self.to_leaders(&framed)?;
        let n = self.world.size() as usize;
        let mut out: Vec<Vec<u8>> = vec![Vec::new(); n];
        let mut unframe = |b: &[u8]| {
            if unframe_into(&mut out, b).is_none() {
                // Another build of ioscale on some node, or a damaged
                // message: nothing this rank can decode, so no result.
                self.give_up(&CoordError(
                    "a node leader sent a gather this rank cannot read \
                     (are all ranks the same ioscale binary?)"
                        .into(),
                ))
            }
        };
        unframe(&framed);
        drop(framed);
        self.recv_each(wait, leaders, 1..leaders.size(), |_, b| unframe(&b));
        Some(out)
    }

    fn gather_merged(&self, bytes: Vec<u8>, merge: MergeFn<'_>) -> Option<Vec<u8>> {
        let wait = self.next_wait();
        if self.node.rank() != 0 {
            self.send_bytes(&self.node, 0, &bytes);
            return None;
        }
        // Payloads merge in the order they arrive: a merge must not
        // depend on it (counters add, histograms merge).
        let mut acc = bytes;
        self.recv_each(wait, &self.node, 1..self.node.size(), |_, b| {
            merge(&mut acc, &b)
        });
        let leaders = self.to_leaders(&acc)?;
        self.recv_each(wait, leaders, 1..leaders.size(), |_, b| merge(&mut acc, &b));
        Some(acc)
    }

    fn broadcast(&self, bytes: Vec<u8>) -> Vec<u8> {
        let wait = self.next_wait();
        let root = self.world.process_at_rank(0);
        let mut len = bytes.len() as u64;
        mpi::request::scope(|scope| {
            let mut req = Some(root.immediate_broadcast_into(scope, &mut len));
            self.wait_or_abort(wait, "a broadcast", None, || Look::of(completed(&mut req)));
        });
        let mut buf = if self.world.rank() == 0 {
            bytes
        } else {
            vec![0u8; len as usize]
        };
        for chunk in buf.chunks_mut(CHUNK) {
            let wait = self.next_wait();
            mpi::request::scope(|scope| {
                let mut req = Some(root.immediate_broadcast_into(scope, chunk));
                self.wait_or_abort(wait, "a broadcast", None, || Look::of(completed(&mut req)));
            });
        }
        let chunks = len.div_ceil(CHUNK as u64);
        self.count(|s| s.collectives += 1 + chunks);
        buf
    }

    fn any(&self, flag: bool) -> bool {
        self.all_reduce(u32::from(flag), SystemOperation::max()) != 0
    }

    fn min_u64(&self, x: u64) -> u64 {
        self.all_reduce(x, SystemOperation::min())
    }

    fn max_f64(&self, x: f64) -> f64 {
        self.all_reduce(x, SystemOperation::max())
    }

    fn signals(&self, phase: u64) -> Box<dyn PhaseSignals + '_> {
        Box::new(MpiSignals {
            c: self,
            phase,
            up: [false; 2],
            down: [false; 2],
            first_ns: None,
            abort: false,
            heard: Vec::new(),
        })
    }

    fn stats(&self) -> CoordStats {
        self.stats.get()
    }

    fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
}

struct MpiSignals<'a> {
    c: &'a MpiCoordinator,
    phase: u64,
    /// Sent up to the parent, per kind (first done, abort).
    up: [bool; 2],
    /// Sent down to the children, per kind.
    down: [bool; 2],
    /// Earliest first-done time this rank knows.
    first_ns: Option<u64>,
    abort: bool,
    /// Other ranks' signals not yet returned.
    heard: Vec<Signal>,
}

/// Where an in-phase signal came from, in the tree.
#[derive(PartialEq)]
enum From {
    Local,
    Child,
    Parent,
}

impl MpiSignals<'_> {
    /// Passes an event on through the tree: up once, or down once when it
    /// came from the parent or this is rank 0.
    fn spread(&mut self, kind: u64, value: u64, from: From) {
        let me = self.c.world.rank();
        let n = self.c.world.size();
        let k = (kind - 1) as usize;
        if me != 0 && from != From::Parent {
            if !self.up[k] {
                self.up[k] = true;
                self.c
                    .send_u64s((me - 1) / 2, TAG_SIGNAL, &[self.phase, kind, value]);
            }
        } else if !self.down[k] {
            self.down[k] = true;
            for child in [2 * me + 1, 2 * me + 2] {
                if child < n {
                    self.c
                        .send_u64s(child, TAG_SIGNAL, &[self.phase, kind, value]);
                }
            }
        }
    }

    fn drain(&mut self) {
        let w = &self.c.world;
        while let Some(st) = w.any_process().immediate_probe_with_tag(TAG_SIGNAL) {
            let src = st.source_rank();
            let m = self.c.recv_u64s(src, TAG_SIGNAL);
            if m.len() != 3 || m[0] != self.phase {
                // A late message of an earlier phase: the phase-end
                // reduction carried its information already.
                continue;
            }
            let from = if src == (w.rank() - 1) / 2 && w.rank() != 0 {
                From::Parent
            } else {
                From::Child
            };
            match m[1] {
                FIRST_DONE => {
                    self.first_ns = Some(self.first_ns.map_or(m[2], |f| f.min(m[2])));
                    self.heard.push(Signal::FirstDone(m[2]));
                    self.spread(FIRST_DONE, m[2], from);
                }
                ABORT => {
                    self.abort = true;
                    self.heard.push(Signal::Abort);
                    self.spread(ABORT, 0, from);
                }
                _ => {}
            }
        }
    }
}

impl PhaseSignals for MpiSignals<'_> {
    fn announce(&mut self, signal: Signal) {
        match signal {
            Signal::FirstDone(ns) => {
                self.first_ns = Some(self.first_ns.map_or(ns, |f| f.min(ns)));
                self.spread(FIRST_DONE, ns, From::Local);
            }
            Signal::Abort => {
                self.abort = true;
                self.spread(ABORT, 0, From::Local);
            }
        }
    }

    fn poll(&mut self) -> Vec<Signal> {
        self.drain();
        self.c.service(None);
        if self.c.world.rank() == 0 {
            // Rank 0 may still be working when another rank's wait runs
            // out: it runs the tally from here too.
            if let Some(l) = self.c.timeout {
                if let Some(text) = self
                    .c
                    .settle_tally(&format!("the end of phase {}", self.phase), l)
                {
                    self.c.failed.borrow_mut().get_or_insert(text);
                }
            }
        }
        if self.c.failed.borrow().is_some() && !self.abort {
            // A rank is gone: stop this rank's workers; `end` reports it.
            self.abort = true;
            self.heard.push(Signal::Abort);
        }
        std::mem::take(&mut self.heard)
    }

    fn finish(&mut self) -> Vec<Signal> {
        match self.end(None, 0) {
            Ok(e) => e.signals,
            Err(e) => self.c.give_up(&e),
        }
    }

    fn end(&mut self, limit: Option<Duration>, flags: u8) -> Result<PhaseEnd, CoordError> {
        let limit = limit.or(self.c.timeout);
        let phase = self.phase as i64;
        let t = self.c.barrier_exit_ns.get();
        let t = if t == 0 { now_ns() } else { t };
        let first = self
            .first_ns
            .map_or(i64::MIN, |f| -(f.min(i64::MAX as u64) as i64));
        // Leaked so a request that never completes (a rank gone) can be
        // forgotten without MPI writing into freed memory; reclaimed below
        // once it completed.
        let mut vals = [0i64; 14];
        vals[..6].copy_from_slice(&[phase, -phase, first, self.abort as i64, t, -t]);
        for (bit, v) in vals[6..].iter_mut().enumerate() {
            *v = i64::from((flags >> bit) & 1);
        }
        let send: &'static mut [i64; 14] = Box::leak(Box::new(vals));
        let recv: &'static mut [i64; 14] = Box::leak(Box::new([0; 14]));
        let (send_ptr, recv_ptr) = (send as *mut [i64; 14], recv as *mut [i64; 14]);
        let mut req = Some(self.c.world.immediate_all_reduce_into(
            StaticScope,
            &send[..],
            &mut recv[..],
            SystemOperation::max(),
        ));
        self.c.count(|s| s.collectives += 1);
        let c = self.c;
        let r = {
            let this = &mut *self;
            c.bounded_wait(
                &format!("the end of phase {phase}"),
                limit,
                || completed(&mut req),
                || this.drain(),
            )
        };
        if let Some(pending) = req {
            // The reduction can no longer complete; the caller stops the
            // job. Dropping a pending request would panic.
            std::mem::forget(pending);
            return Err(r
                .err()
                .unwrap_or_else(|| CoordError("the phase-end reduction did not complete".into())));
        }
        r?;
        // SAFETY: the request completed, so MPI no longer touches either
        // buffer, and both came from Box::leak above.
        let (_send, out) = unsafe { (Box::from_raw(send_ptr), Box::from_raw(recv_ptr)) };
        if out[0] != -out[1] {
            return Err(CoordError(format!(
                "ranks ended different phases ({} to {}); are all ranks the same ioscale binary?",
                -out[1], out[0]
            )));
        }
        self.c.service(None);
        let first_done_ns = (out[2] != i64::MIN).then(|| (-out[2]) as u64);
        Ok(PhaseEnd {
            signals: std::mem::take(&mut self.heard),
            first_done_ns,
            abort: out[3] != 0,
            flags: out[6..]
                .iter()
                .enumerate()
                .fold(0u8, |f, (bit, &v)| f | (u8::from(v != 0) << bit)),
            start_skew_ns: Some((out[4] + out[5]).max(0) as u64),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{oversubscribed, unframe_into};

    #[test]
    fn a_malformed_gather_frame_is_refused_not_a_panic() {
        let mut good = Vec::new();
        for (r, b) in [(1u64, &b"ab"[..]), (0, &b""[..])] {
            crate::wire::put_varint(&mut good, r);
            crate::wire::put_varint(&mut good, b.len() as u64);
            good.extend_from_slice(b);
        }
        let mut out = vec![Vec::new(); 2];
        assert!(unframe_into(&mut out, &good).is_some());
        assert_eq!(out, [b"".to_vec(), b"ab".to_vec()]);
        // A length past the end, a rank past the job, a cut varint.
        let mut long = Vec::new();
        crate::wire::put_varint(&mut long, 0);
        crate::wire::put_varint(&mut long, 9);
        long.push(1);
        assert!(unframe_into(&mut out, &long).is_none());
        let mut far = Vec::new();
        crate::wire::put_varint(&mut far, 7);
        crate::wire::put_varint(&mut far, 0);
        assert!(unframe_into(&mut out, &far).is_none());
        assert!(unframe_into(&mut out, &[0x80]).is_none());
    }

    #[test]
    fn more_local_ranks_than_cpus_is_oversubscribed() {
        let env = |n: &'static str| {
            move |k: &str| (k == "OMPI_COMM_WORLD_LOCAL_SIZE").then(|| n.to_string())
        };
        assert!(oversubscribed(env("8"), 2));
        assert!(!oversubscribed(env("2"), 2));
        assert!(!oversubscribed(env("x"), 2));
        assert!(!oversubscribed(|_: &str| None, 2));
    }
}
