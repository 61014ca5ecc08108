//! The one submission/completion shape every engine fits.
//!
//! The worker loop pushes requests into free slots, then waits for at least
//! one completion. The sync engine is simply a queue of depth 1 that does
//! the system call when asked to wait, so both engines share the same loop,
//! the same timing points and the same error handling.

use std::io;

use crate::backend::DataFile;
use crate::buf::AlignedBuf;
use crate::calls::{Positioned, SyncCalls};

/// One read or write of a whole transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// File offset in bytes.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
    /// Write (true) or read (false).
    pub write: bool,
}

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoFault {
    /// The system call returned this errno.
    Errno(i32),
    /// A read hit end of file before the transfer was complete.
    ShortRead {
        /// Bytes that did arrive.
        got: u32,
    },
    /// A write made no progress (returned 0).
    NoProgress,
}

impl IoFault {
    /// A one-line description.
    pub fn describe(&self) -> String {
        match self {
            IoFault::Errno(e) => io::Error::from_raw_os_error(*e).to_string(),
            IoFault::ShortRead { got } => format!(
                "unexpected end of file after {got} bytes of the transfer (file shorter than the workload expects)"
            ),
            IoFault::NoProgress => "write returned 0 bytes".into(),
        }
    }

    /// [`IoFault::describe`] for the transfer at `offset` of a file now
    /// `file_len` bytes long (when known): a short read says where the
    /// file's data ends.
    pub fn describe_at(&self, offset: u64, file_len: Option<u64>) -> String {
        match self {
            IoFault::ShortRead { got } => format!(
                "the file ends at offset {}, shorter than the data set it should hold \
                 (truncated since it was written?); this transfer got {got} bytes",
                file_len.unwrap_or(offset + u64::from(*got))
            ),
            _ => self.describe(),
        }
    }

    /// The errno, if the fault came from the kernel.
    pub fn errno(&self) -> Option<i32> {
        match self {
            IoFault::Errno(e) => Some(*e),
            _ => None,
        }
    }
}

/// A finished request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// Slot the request was pushed into.
    pub slot: u32,
    /// The request.
    pub req: Request,
    /// `Ok` once the whole transfer is done.
    pub result: Result<(), IoFault>,
}

/// An engine's queue of in-flight requests, each owning one buffer.
pub trait IoQueue {
    /// How many requests may be in flight.
    fn depth(&self) -> usize;
    /// Buffer of `slot`, to fill before a write.
    fn buf_mut(&mut self, slot: usize) -> &mut [u8];
    /// Buffer of `slot`, to check after a read.
    fn buf(&self, slot: usize) -> &[u8];
    /// Queues a request in a free slot; nothing is issued until
    /// [`IoQueue::submit_and_reap`].
    fn push(&mut self, slot: usize, req: Request);
    /// Issues what was pushed and waits for at least one completion, which
    /// are appended to `out` (cleared first; its capacity is reused).
    fn submit_and_reap(&mut self, out: &mut Vec<Completion>) -> io::Result<()>;
    /// From now on, note when each pushed request is handed to the kernel
    /// ([`IoQueue::issued_at`]; fio's submission latency). A queue that
    /// hands requests over only in its wait (the sync queue) ignores it.
    fn stamp_issue(&mut self) {}
    /// When the request in `slot` was handed to the kernel: the return of
    /// the submit call, if the queue notes it.
    fn issued_at(&self, _slot: usize) -> Option<std::time::Instant> {
        None
    }
    /// The transfers the kernel did only in part and that were issued
    /// again for the rest (fio's `short_ios`), reads then writes, since the
    /// last call; the count starts again from 0.
    fn take_short_ios(&mut self) -> [u64; 2];
    /// The system call [`IoQueue::submit_and_reap`] waits in, to name in a
    /// failure.
    fn wait_call(&self) -> &'static str {
        "io_uring_enter"
    }
}

/// One request at a time on one file, made of the calls of style `C`
/// (by default the backend's positioned reads and writes, pread/pwrite for
/// POSIX): a queue of depth 1.
pub struct SyncQueue<'f, F: DataFile, C: SyncCalls<F> = Positioned> {
    file: &'f F,
    buf: &'f mut AlignedBuf,
    pending: Option<Request>,
    short: [u64; 2],
    calls: C,
}

impl<'f, F: DataFile> SyncQueue<'f, F> {
    /// A queue over `file` with one buffer of `xfer` bytes.
    pub fn new(file: &'f F, buf: &'f mut AlignedBuf) -> Self {
        Self::with_calls(file, buf, Positioned)
    }
}

impl<'f, F: DataFile, C: SyncCalls<F>> SyncQueue<'f, F, C> {
    /// A queue over `file` whose requests are made of the calls of `calls`.
    pub fn with_calls(file: &'f F, buf: &'f mut AlignedBuf, calls: C) -> Self {
        SyncQueue {
            file,
            buf,
            pending: None,
            short: [0; 2],
            calls,
        }
    }
}

impl<F: DataFile, C: SyncCalls<F>> IoQueue for SyncQueue<'_, F, C> {
    fn depth(&self) -> usize {
        1
    }

    fn buf_mut(&mut self, _slot: usize) -> &mut [u8] {
        self.buf.as_mut_slice()
    }

    fn buf(&self, _slot: usize) -> &[u8] {
        self.buf.as_slice()
    }

    fn take_short_ios(&mut self) -> [u64; 2] {
        std::mem::take(&mut self.short)
    }

    #[inline]
    fn push(&mut self, _slot: usize, req: Request) {
        self.pending = Some(req);
    }

    #[inline]
    fn submit_and_reap(&mut self, out: &mut Vec<Completion>) -> io::Result<()> {
        out.clear();
        let Some(req) = self.pending.take() else {
            return Ok(());
        };
        let len = req.len as usize;
        let mut done = 0usize;
        let result = loop {
            let r = if req.write {
                self.calls.write(
                    self.file,
                    &self.buf.as_slice()[done..len],
                    req.offset + done as u64,
                )
            } else {
                self.calls.read(
                    self.file,
                    &mut self.buf.as_mut_slice()[done..len],
                    req.offset + done as u64,
                )
            };
            match r {
                Ok(0) if req.write => break Err(IoFault::NoProgress),
                Ok(0) => break Err(IoFault::ShortRead { got: done as u32 }),
                Ok(n) => {
                    done += n;
                    if done >= len {
                        break Ok(());
                    }
                    self.short[usize::from(req.write)] += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => break Err(IoFault::Errno(e.raw_os_error().unwrap_or(libc::EIO))),
            }
        };
        out.push(Completion {
            slot: 0,
            req,
            result,
        });
        Ok(())
    }
}
