//! The engine registry: every data engine and metadata engine, listed once
//! by name with what it can do.
//!
//! As fio's ioengines and IOR's aiori backends, an engine is one entry in a
//! table; `--engine NAME`, its validation ([`check_data`], [`check_meta`])
//! and the code that runs it all come from that entry, so adding an engine
//! is one module and one line here. Nothing outside this module matches on
//! engine names.
//!
//! Each storage backend has its own tables ([`Engines`]): the synchronous
//! engines run on any backend (they use only the backend's calls); the
//! io_uring engines submit the kernel's own opcodes on descriptors, so they
//! are engines of the POSIX backend ([`DATA_ENGINES`], [`META_ENGINES`]).

use std::io;
use std::sync::Barrier;

use spec::MetaOp;
use thiserror::Error;

use crate::aio::{AioQueue, AioState};
use crate::backend::posix::Posix;
use crate::backend::Backend;
use crate::buf::AlignedBuf;
use crate::calls::{SeekThen, SyncCalls, Vectored};
use crate::meta::{MetaPlan, MetaSample};
use crate::queue::SyncQueue;
use crate::uring::{UringOptions, UringQueue, UringState};
use crate::worker::{io_loop, LoopCtx, PhaseControl};

/// A backend's engine tables.
pub trait Engines: Backend {
    /// Its data engines.
    fn data_engines() -> &'static [&'static dyn DataEngine<Self>];
    /// Its metadata engines.
    fn meta_engines() -> &'static [&'static dyn MetaEngine<Self>];
}

impl Engines for Posix {
    fn data_engines() -> &'static [&'static dyn DataEngine<Posix>] {
        DATA_ENGINES
    }
    fn meta_engines() -> &'static [&'static dyn MetaEngine<Posix>] {
        META_ENGINES
    }
}

/// What a data engine can do, for validation and `--help`.
#[derive(Debug)]
pub struct EngineInfo {
    /// The name on the command line and in results.
    pub name: &'static str,
    /// One line for `--help` and errors.
    pub summary: &'static str,
    /// Whether it keeps more than one request in flight (`--iodepth > 1`).
    pub queueing: bool,
    /// The depth used when none is given.
    pub default_depth: u32,
    /// Whether it works with O_DIRECT (`--direct`).
    pub direct: bool,
    /// The system call that sets up its per-worker state, named when it
    /// fails.
    pub setup_call: &'static str,
}

/// Per-engine configuration that is not part of the workload spec. The
/// default is what the engines did before the options existed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// The io_uring engine's ring set-up.
    pub uring: UringOptions,
}

/// A data engine of backend `B`: makes the per-worker state (buffers,
/// rings) before the timed section.
pub trait DataEngine<B: Backend>: Sync {
    /// Its table entry.
    fn info(&self) -> &'static EngineInfo;
    /// State for one worker with one buffer per slot (`bufs.len()` is the
    /// depth).
    fn prepare(
        &self,
        bufs: Vec<AlignedBuf>,
        opts: &EngineOptions,
    ) -> io::Result<Box<dyn EngineState<B>>>;
}

/// One worker's engine state, kept across phases.
pub trait EngineState<B: Backend>: Send {
    /// Readies the state on the worker's own thread, before the start
    /// barrier (io_uring's SINGLE_ISSUER binds the ring to it).
    fn bind(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Runs the transfer loop of one phase over `file`, opened for this
    /// phase just before (its position is 0). Returns false if the state
    /// is unusable afterwards (requests stuck in flight).
    fn run(&mut self, file: &B::File, lp: &mut LoopCtx<'_, B>) -> bool;
    /// Notes on features asked for but not available here.
    fn notes(&self) -> &[String] {
        &[]
    }
}

/// The backend's positioned reads and writes (pread/pwrite), one request
/// in flight.
pub(crate) struct SyncEngine;

static SYNC_INFO: EngineInfo = EngineInfo {
    name: "sync",
    summary: "pread/pwrite, one request in flight per worker",
    queueing: false,
    default_depth: 1,
    direct: true,
    setup_call: "allocate buffer",
};

struct SyncState(AlignedBuf);

impl<B: Backend> DataEngine<B> for SyncEngine {
    fn info(&self) -> &'static EngineInfo {
        &SYNC_INFO
    }
    fn prepare(
        &self,
        bufs: Vec<AlignedBuf>,
        _: &EngineOptions,
    ) -> io::Result<Box<dyn EngineState<B>>> {
        Ok(Box::new(SyncState(one_buf(bufs)?)))
    }
}

/// The one buffer of a synchronous engine's worker.
fn one_buf(bufs: Vec<AlignedBuf>) -> io::Result<AlignedBuf> {
    bufs.into_iter()
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no buffer"))
}

impl<B: Backend> EngineState<B> for SyncState {
    fn run(&mut self, file: &B::File, lp: &mut LoopCtx<'_, B>) -> bool {
        let mut q = SyncQueue::new(file, &mut self.0);
        io_loop(&mut q, file, lp);
        true
    }
}

/// A synchronous engine of the POSIX backend whose requests are made of
/// other calls than pread/pwrite: fio's `sync`, `pvsync` and `pvsync2`,
/// so that an emulated job makes fio's calls. The style is the type `C`:
/// its calls are compiled into the loop, chosen when the engine is.
struct StyledSync<C>(std::marker::PhantomData<fn() -> C>);

/// A call style with its table entry.
trait Style: SyncCalls<std::fs::File> {
    /// The engine's entry.
    const INFO: &'static EngineInfo;
    /// The style for a file just opened for the phase.
    fn at_open() -> Self;
}

static LSEEK_INFO: EngineInfo = EngineInfo {
    name: "lseek",
    summary: "lseek (left out when the file position is already the offset), then \
              read/write, one request in flight per worker (fio's sync engine)",
    queueing: false,
    default_depth: 1,
    direct: true,
    setup_call: "allocate buffer",
};

static PVSYNC_INFO: EngineInfo = EngineInfo {
    name: "pvsync",
    summary: "preadv/pwritev with one iovec, one request in flight per worker \
              (fio's pvsync engine)",
    queueing: false,
    default_depth: 1,
    direct: true,
    setup_call: "allocate buffer",
};

static PVSYNC2_INFO: EngineInfo = EngineInfo {
    name: "pvsync2",
    summary: "preadv2/pwritev2 with one iovec and flags 0, one request in flight per \
              worker (fio's pvsync2 engine)",
    queueing: false,
    default_depth: 1,
    direct: true,
    setup_call: "allocate buffer",
};

impl Style for SeekThen {
    const INFO: &'static EngineInfo = &LSEEK_INFO;
    fn at_open() -> Self {
        SeekThen::at_open()
    }
}

impl Style for Vectored<false> {
    const INFO: &'static EngineInfo = &PVSYNC_INFO;
    fn at_open() -> Self {
        Vectored
    }
}

impl Style for Vectored<true> {
    const INFO: &'static EngineInfo = &PVSYNC2_INFO;
    fn at_open() -> Self {
        Vectored
    }
}

impl<C: Style + 'static> DataEngine<Posix> for StyledSync<C> {
    fn info(&self) -> &'static EngineInfo {
        C::INFO
    }
    fn prepare(
        &self,
        bufs: Vec<AlignedBuf>,
        _: &EngineOptions,
    ) -> io::Result<Box<dyn EngineState<Posix>>> {
        Ok(Box::new(StyledState::<C>(
            one_buf(bufs)?,
            std::marker::PhantomData,
        )))
    }
}

/// A worker's buffer for the calls of style `C`.
struct StyledState<C>(AlignedBuf, std::marker::PhantomData<fn() -> C>);

impl<C: Style + 'static> EngineState<Posix> for StyledState<C> {
    fn run(&mut self, file: &std::fs::File, lp: &mut LoopCtx<'_, Posix>) -> bool {
        // The runner opens the file for the phase just before: its
        // position is 0 (what the lseek style starts from).
        let mut q = SyncQueue::with_calls(file, &mut self.0, C::at_open());
        io_loop(&mut q, file, lp);
        true
    }
}

/// io_uring, `iodepth` requests in flight.
struct UringEngine;

static URING_INFO: EngineInfo = EngineInfo {
    name: "io_uring",
    summary: "io_uring, up to --iodepth requests in flight per worker",
    queueing: true,
    default_depth: 32,
    direct: true,
    setup_call: "io_uring_setup",
};

impl DataEngine<Posix> for UringEngine {
    fn info(&self) -> &'static EngineInfo {
        &URING_INFO
    }
    fn prepare(
        &self,
        bufs: Vec<AlignedBuf>,
        opts: &EngineOptions,
    ) -> io::Result<Box<dyn EngineState<Posix>>> {
        Ok(Box::new(UringState::new(bufs, opts.uring)?))
    }
}

impl EngineState<Posix> for UringState {
    fn bind(&mut self) -> io::Result<()> {
        self.bind_to_thread()
    }
    fn run(&mut self, file: &std::fs::File, lp: &mut LoopCtx<'_, Posix>) -> bool {
        let mut q = UringQueue::new(file, self);
        io_loop(&mut q, file, lp);
        q.finish()
    }
    fn notes(&self) -> &[String] {
        UringState::notes(self)
    }
}

/// Linux native AIO, `iodepth` requests in flight (fio's libaio).
struct AioEngine;

static AIO_INFO: EngineInfo = EngineInfo {
    name: "libaio",
    summary: "Linux native AIO (io_submit/io_getevents), up to --iodepth requests in flight \
              per worker; with --direct only: buffered requests complete inside io_submit",
    queueing: true,
    default_depth: 32,
    direct: true,
    setup_call: "io_setup",
};

impl DataEngine<Posix> for AioEngine {
    fn info(&self) -> &'static EngineInfo {
        &AIO_INFO
    }
    fn prepare(
        &self,
        bufs: Vec<AlignedBuf>,
        _: &EngineOptions,
    ) -> io::Result<Box<dyn EngineState<Posix>>> {
        Ok(Box::new(AioState::new(bufs)?))
    }
}

impl EngineState<Posix> for AioState {
    fn run(&mut self, file: &std::fs::File, lp: &mut LoopCtx<'_, Posix>) -> bool {
        if !lp.plan.spec.direct {
            self.note_buffered();
        }
        let mut q = AioQueue::new(file, self);
        io_loop(&mut q, file, lp);
        q.finish()
    }
    fn notes(&self) -> &[String] {
        AioState::notes(self)
    }
}

/// Every data engine of the POSIX backend, by name.
pub static DATA_ENGINES: &[&dyn DataEngine<Posix>] = &[
    &SyncEngine,
    &StyledSync::<SeekThen>(std::marker::PhantomData),
    &StyledSync::<Vectored<false>>(std::marker::PhantomData),
    &StyledSync::<Vectored<true>>(std::marker::PhantomData),
    &UringEngine,
    &AioEngine,
];

/// A refused engine choice; the message names the flag and the fix.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum EngineError {
    /// No engine of that name.
    #[error("--engine {name}: unknown engine (available: {available})")]
    Unknown {
        /// What was asked for.
        name: String,
        /// The table's names.
        available: String,
    },
    /// `--iodepth > 1` with an engine that does not queue.
    #[error("--iodepth {depth}: the {engine} engine keeps one request in flight; use --engine {queueing} for a deeper queue")]
    NoQueue {
        /// The engine.
        engine: &'static str,
        /// The depth asked for.
        depth: u32,
        /// Names of engines that queue.
        queueing: String,
    },
    /// `--direct` with an engine that cannot do O_DIRECT.
    #[error("--direct: the {engine} engine does not support O_DIRECT")]
    NoDirect {
        /// The engine.
        engine: &'static str,
    },
    /// Files larger than the metadata engine handles.
    #[error("--file-size {size}: the {engine} metadata engine handles files up to {max} bytes")]
    FileTooLarge {
        /// The engine.
        engine: &'static str,
        /// The largest file of the spec.
        size: u64,
        /// Its limit.
        max: u64,
    },
    /// A metadata operation the engine does not run.
    #[error(
        "--ops {op}: the {engine} metadata engine does not run this operation (it runs: {ops})"
    )]
    MetaOpUnsupported {
        /// The engine.
        engine: &'static str,
        /// The operation.
        op: &'static str,
        /// What it does run.
        ops: String,
    },
}

fn names<T>(table: &[T], name: impl Fn(&T) -> &'static str) -> String {
    table.iter().map(name).collect::<Vec<_>>().join(", ")
}

/// The entry of `table` called `name` (`info` gives an entry's name and
/// whether it queues), refused when `iodepth` asks for more than one
/// request in flight of an engine that keeps one: the error names the
/// engines that queue.
fn find_for_depth<T: Copy>(
    table: &'static [T],
    name: &str,
    iodepth: u32,
    info: impl Fn(&T) -> (&'static str, bool),
) -> Result<T, EngineError> {
    let e = find(table, name, |e| info(e).0)?;
    let (engine, queueing) = info(&e);
    if iodepth > 1 && !queueing {
        let q: Vec<_> = table
            .iter()
            .map(&info)
            .filter(|e| e.1)
            .map(|e| e.0)
            .collect();
        return Err(EngineError::NoQueue {
            engine,
            depth: iodepth,
            queueing: q.join(" or "),
        });
    }
    Ok(e)
}

/// The entry of `table` called `name`, or the error listing every name.
fn find<T: Copy>(
    table: &'static [T],
    name: &str,
    name_of: impl Fn(&T) -> &'static str,
) -> Result<T, EngineError> {
    table
        .iter()
        .copied()
        .find(|e| name_of(e) == name)
        .ok_or_else(|| EngineError::Unknown {
            name: name.into(),
            available: names(table, name_of),
        })
}

/// The POSIX data engine called `name`.
pub fn data_engine(name: &str) -> Result<&'static dyn DataEngine<Posix>, EngineError> {
    data_engine_of::<Posix>(name)
}

/// Backend `B`'s data engine called `name`.
pub fn data_engine_of<B: Engines>(name: &str) -> Result<&'static dyn DataEngine<B>, EngineError> {
    find(B::data_engines(), name, |e| e.info().name)
}

/// Checks a data engine choice of the POSIX backend: the name,
/// `--iodepth` and `--direct`.
pub fn check_data(
    name: &str,
    iodepth: u32,
    direct: bool,
) -> Result<&'static dyn DataEngine<Posix>, EngineError> {
    check_data_of::<Posix>(name, iodepth, direct)
}

/// [`check_data`] among backend `B`'s engines.
pub fn check_data_of<B: Engines>(
    name: &str,
    iodepth: u32,
    direct: bool,
) -> Result<&'static dyn DataEngine<B>, EngineError> {
    let e = find_for_depth(B::data_engines(), name, iodepth, |e| {
        (e.info().name, e.info().queueing)
    })?;
    let info = e.info();
    if direct && !info.direct {
        return Err(EngineError::NoDirect { engine: info.name });
    }
    Ok(e)
}

/// What a metadata engine can do.
#[derive(Debug)]
pub struct MetaEngineInfo {
    /// The name on the command line and in results.
    pub name: &'static str,
    /// One line for `--help` and errors.
    pub summary: &'static str,
    /// Whether one thread keeps several operations in flight (`--iodepth`).
    pub queueing: bool,
    /// The timed operations it runs itself. Untimed layout and teardown
    /// (`cleanup`) always run synchronously.
    pub ops: &'static [MetaOp],
    /// Largest `--file-size` its data operations handle, if limited.
    pub max_file_size: Option<u64>,
}

/// How a metadata phase is run: which engine, how deep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaEngineConfig {
    /// The engine's name in [`META_ENGINES`].
    pub engine: &'static str,
    /// Operations in flight per thread (1 for the synchronous engine).
    pub iodepth: u32,
}

impl Default for MetaEngineConfig {
    fn default() -> Self {
        MetaEngineConfig {
            engine: "sync",
            iodepth: 1,
        }
    }
}

/// A metadata engine of backend `B`: runs one thread's share of one
/// phase.
pub trait MetaEngine<B: Backend>: Sync {
    /// Its table entry.
    fn info(&self) -> &'static MetaEngineInfo;
    /// Runs thread `w`'s share: prepares, waits at `barrier`, processes.
    fn run(
        &self,
        w: u32,
        plan: &MetaPlan<'_, B>,
        cfg: &MetaEngineConfig,
        ctl: &PhaseControl,
        barrier: &Barrier,
    ) -> MetaSample;
}

pub(crate) struct SyncMeta;

static SYNC_META_INFO: MetaEngineInfo = MetaEngineInfo {
    name: "sync",
    summary: "one system call at a time per thread",
    queueing: false,
    // Every operation: the synchronous engine has a call for each.
    ops: &MetaOp::ALL,
    max_file_size: None,
};

impl<B: Backend> MetaEngine<B> for SyncMeta {
    fn info(&self) -> &'static MetaEngineInfo {
        &SYNC_META_INFO
    }
    fn run(
        &self,
        w: u32,
        plan: &MetaPlan<'_, B>,
        _: &MetaEngineConfig,
        ctl: &PhaseControl,
        barrier: &Barrier,
    ) -> MetaSample {
        crate::meta::run_sync_worker(w, plan, ctl, barrier)
    }
}

struct UringMeta;

static URING_META_INFO: MetaEngineInfo = MetaEngineInfo {
    name: "io_uring",
    summary: "io_uring: one thread keeps --iodepth operations in flight",
    queueing: true,
    ops: crate::meta_uring::OPS,
    max_file_size: Some(crate::meta_uring::MAX_FILE),
};

impl MetaEngine<Posix> for UringMeta {
    fn info(&self) -> &'static MetaEngineInfo {
        &URING_META_INFO
    }
    fn run(
        &self,
        w: u32,
        plan: &MetaPlan<'_, Posix>,
        cfg: &MetaEngineConfig,
        ctl: &PhaseControl,
        barrier: &Barrier,
    ) -> MetaSample {
        if !URING_META_INFO.ops.contains(&plan.op) || !plan.timed {
            // Layout and teardown, and what io_uring has no opcode for.
            return crate::meta::run_sync_worker(w, plan, ctl, barrier);
        }
        crate::meta_uring::run_worker(w, plan, cfg.iodepth.max(1), ctl, barrier)
    }
}

/// Every metadata engine of the POSIX backend, by name.
pub static META_ENGINES: &[&dyn MetaEngine<Posix>] = &[&SyncMeta, &UringMeta];

/// The POSIX metadata engine called `name`.
pub fn meta_engine(name: &str) -> Result<&'static dyn MetaEngine<Posix>, EngineError> {
    meta_engine_of::<Posix>(name)
}

/// Backend `B`'s metadata engine called `name`.
pub fn meta_engine_of<B: Engines>(name: &str) -> Result<&'static dyn MetaEngine<B>, EngineError> {
    find(B::meta_engines(), name, |e| e.info().name)
}

/// The synchronous metadata engine, which every backend has.
pub fn sync_meta<B: Backend>() -> &'static dyn MetaEngine<B> {
    &SyncMeta
}

/// Checks a POSIX metadata engine choice against `--iodepth` and the
/// timed operations of the run.
pub fn check_meta(
    name: &str,
    iodepth: u32,
    ops: &[MetaOp],
) -> Result<&'static dyn MetaEngine<Posix>, EngineError> {
    check_meta_of::<Posix>(name, iodepth, ops)
}

/// [`check_meta`] among backend `B`'s engines.
pub fn check_meta_of<B: Engines>(
    name: &str,
    iodepth: u32,
    ops: &[MetaOp],
) -> Result<&'static dyn MetaEngine<B>, EngineError> {
    let e = find_for_depth(B::meta_engines(), name, iodepth, |e| {
        (e.info().name, e.info().queueing)
    })?;
    let info = e.info();
    // Teardown (`cleanup`) runs on the synchronous engine whatever the
    // choice, so every engine accepts it.
    if let Some(op) = ops
        .iter()
        .find(|o| **o != MetaOp::Cleanup && !info.ops.contains(o))
    {
        return Err(EngineError::MetaOpUnsupported {
            engine: info.name,
            op: op.name(),
            ops: info
                .ops
                .iter()
                .map(|o| o.name())
                .collect::<Vec<_>>()
                .join(","),
        });
    }
    Ok(e)
}

/// Checks a metadata engine choice against a whole spec: [`check_meta`]
/// on its phases, and, when a phase moves data, its largest file against
/// the engine's limit (with
/// `--record-size`, at most [`crate::meta_uring::MAX_RECORDS`] records per
/// file for io_uring).
pub fn check_meta_spec(
    name: &str,
    iodepth: u32,
    spec: &spec::MetaSpec,
) -> Result<&'static dyn MetaEngine<Posix>, EngineError> {
    let e = check_meta(name, iodepth, &spec.ops)?;
    let info = e.info();
    let data = spec.ops.iter().any(|o| {
        matches!(
            o,
            MetaOp::Create | MetaOp::Read | MetaOp::Overwrite | MetaOp::TruncateOverwrite
        )
    });
    if let (true, Some(max)) = (data, info.max_file_size) {
        let size = spec.file_size.max();
        let records = size.div_ceil(spec.record_size.max(1));
        if size > max || (info.queueing && records > crate::meta_uring::MAX_RECORDS) {
            return Err(EngineError::FileTooLarge {
                engine: info.name,
                size,
                max: max.min(crate::meta_uring::MAX_RECORDS * spec.record_size.max(1)),
            });
        }
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_unique_and_found() {
        for t in [
            DATA_ENGINES
                .iter()
                .map(|e| e.info().name)
                .collect::<Vec<_>>(),
            META_ENGINES.iter().map(|e| e.info().name).collect(),
        ] {
            let mut u = t.clone();
            u.sort();
            u.dedup();
            assert_eq!(u.len(), t.len());
        }
        assert_eq!(data_engine("io_uring").unwrap().info().name, "io_uring");
        assert_eq!(meta_engine("sync").unwrap().info().name, "sync");
    }

    #[test]
    fn checks_name_the_flag() {
        let e = check_data("aio", 1, false).err().unwrap();
        assert_eq!(
            e.to_string(),
            "--engine aio: unknown engine (available: sync, lseek, pvsync, pvsync2, io_uring, libaio)"
        );
        assert!(check_data("libaio", 64, true).is_ok());
        let e = check_data("sync", 8, false).err().unwrap();
        assert!(
            e.to_string().starts_with("--iodepth 8: the sync engine"),
            "{e}"
        );
        assert!(check_data("io_uring", 128, true).is_ok());
        let e = check_meta("sync", 32, &[MetaOp::Create]).err().unwrap();
        assert!(e.to_string().contains("--engine io_uring"), "{e}");
        let e = check_meta("io_uring", 32, &[MetaOp::Create, MetaOp::Setxattr])
            .err()
            .unwrap();
        assert!(e.to_string().starts_with("--ops setxattr"), "{e}");
        assert!(check_meta(
            "io_uring",
            32,
            &[MetaOp::Create, MetaOp::Stat, MetaOp::Delete]
        )
        .is_ok());
        assert!(check_meta("io_uring", 8, &[MetaOp::Create, MetaOp::Cleanup]).is_ok());
    }
}
