//! Linux native asynchronous I/O (`io_setup`, `io_submit`, `io_getevents`,
//! `io_destroy`): the engine behind fio's `ioengine=libaio` and
//! `ioscale run --engine libaio`.
//!
//! It exists because most job files in the wild name libaio, and its cost
//! is not io_uring's: one `io_submit` per request and one `io_getevents`
//! per completion, as fio's libaio engine makes them with its defaults
//! (`iodepth_batch_submit=1`, `iodepth_batch_complete_min=1`, and
//! `iodepth_batch_complete_max` equal to the minimum). The calls go to the
//! kernel directly through `libc::syscall`, with the kernel's own `iocb`
//! and `io_event` layouts; libaio the library is not needed.
//!
//! Without O_DIRECT the kernel does a request inside `io_submit`, before it
//! returns: the queue depth then buys nothing. fio runs such a job without
//! a word; ioscale says so in a note.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Instant;

use crate::buf::AlignedBuf;
use crate::queue::{Completion, IoFault, IoQueue, Request};

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;

/// The kernel's `struct iocb` (include/uapi/linux/aio_abi.h): 64 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Iocb {
    data: u64,
    #[cfg(target_endian = "little")]
    key: u32,
    rw_flags: i32,
    #[cfg(target_endian = "big")]
    key: u32,
    lio_opcode: u16,
    reqprio: i16,
    fildes: u32,
    buf: u64,
    nbytes: u64,
    offset: i64,
    reserved2: u64,
    flags: u32,
    resfd: u32,
}

/// The kernel's `struct io_event`: 32 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

/// The note a run without O_DIRECT gets.
pub const BUFFERED_NOTE: &str = "libaio without O_DIRECT (native --direct, fio's direct=1): \
     the kernel does each buffered request inside io_submit, one at a time, so the queue \
     depth has no effect (fio runs such a job without saying so)";

/// An AIO context with its slot buffers: made before the timed section and
/// kept across phases. The context is destroyed (which waits for anything
/// still in flight) before the buffers are freed.
pub struct AioState {
    ctx: libc::c_ulong,
    iocbs: Box<[Iocb]>,
    events: Box<[IoEvent]>,
    bufs: Vec<AlignedBuf>,
    notes: Vec<String>,
}

impl AioState {
    /// A context for `bufs.len()` requests in flight, one buffer per slot
    /// (`io_setup(depth)`, as fio sets it up).
    pub fn new(bufs: Vec<AlignedBuf>) -> io::Result<Self> {
        let depth = bufs.len().max(1);
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: io_setup writes the new context's id into `ctx`, a valid
        // location for the duration of the call.
        let r = unsafe { libc::syscall(libc::SYS_io_setup, depth as libc::c_long, &mut ctx) };
        if r < 0 {
            let e = io::Error::last_os_error();
            let hint = if e.raw_os_error() == Some(libc::EAGAIN) {
                " (the system's limit /proc/sys/fs/aio-max-nr is reached: fewer workers or \
                 a smaller --iodepth)"
            } else {
                ""
            };
            return Err(io::Error::new(
                e.kind(),
                format!("libaio: io_setup({depth}) failed: {e}{hint}"),
            ));
        }
        Ok(AioState {
            ctx,
            iocbs: vec![Iocb::default(); depth].into_boxed_slice(),
            events: vec![IoEvent::default(); depth].into_boxed_slice(),
            bufs,
            notes: Vec::new(),
        })
    }

    /// Notes for the run's warnings (each once).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Adds the note that buffered requests are synchronous, once.
    pub fn note_buffered(&mut self) {
        if self.notes.iter().all(|n| n != BUFFERED_NOTE) {
            self.notes.push(BUFFERED_NOTE.to_string());
        }
    }
}

impl Drop for AioState {
    fn drop(&mut self) {
        // SAFETY: the context is ours; io_destroy waits for requests still
        // in flight, so the buffers (dropped after this) are no longer in
        // the kernel's hands.
        unsafe {
            libc::syscall(libc::SYS_io_destroy, self.ctx);
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    req: Request,
    done: u32,
}

/// An AIO queue over one file for one phase.
pub struct AioQueue<'s> {
    st: &'s mut AioState,
    fd: u32,
    slots: Vec<Slot>,
    outstanding: usize,
    /// Requests `io_submit` refused, reported at the next wait.
    refused: Vec<(usize, i32)>,
    stamp: bool,
    issued: Vec<Instant>,
    short: [u64; 2],
}

impl<'s> AioQueue<'s> {
    /// A queue over `file` using `st`'s context and buffers.
    pub fn new(file: &File, st: &'s mut AioState) -> Self {
        let n = st.bufs.len();
        let idle = Slot {
            req: Request {
                offset: 0,
                len: 0,
                write: false,
            },
            done: 0,
        };
        AioQueue {
            st,
            fd: file.as_raw_fd() as u32,
            slots: vec![idle; n],
            outstanding: 0,
            refused: Vec::new(),
            stamp: false,
            issued: Vec::new(),
            short: [0; 2],
        }
    }

    /// Ends the phase once nothing is in flight. Returns false if requests
    /// are still outstanding and cannot be reaped: the caller then leaks
    /// the state rather than free buffers the kernel may still write into.
    pub fn finish(mut self) -> bool {
        let mut tries = 0;
        while self.outstanding > 0 && tries < 1000 {
            tries += 1;
            if let Ok(n) = self.get_events(1) {
                self.outstanding = self.outstanding.saturating_sub(n);
            }
        }
        self.outstanding == 0
    }

    /// Hands the rest of `slot`'s request to the kernel: one `io_submit`
    /// of one iocb, as fio's `iodepth_batch_submit=1`.
    fn submit_slot(&mut self, slot: usize) {
        let s = self.slots[slot];
        let done = s.done as usize;
        let buf = &mut self.st.bufs[slot].as_mut_slice()[done..s.req.len as usize];
        let cb = &mut self.st.iocbs[slot];
        *cb = Iocb {
            data: slot as u64,
            lio_opcode: if s.req.write {
                IOCB_CMD_PWRITE
            } else {
                IOCB_CMD_PREAD
            },
            fildes: self.fd,
            buf: buf.as_mut_ptr() as u64,
            nbytes: buf.len() as u64,
            offset: (s.req.offset + done as u64) as i64,
            ..Iocb::default()
        };
        let mut list = [cb as *mut Iocb];
        loop {
            // SAFETY: the iocb and the buffer it points to belong to the
            // state, which outlives every request in flight (the context is
            // destroyed, waiting for them, before either is freed, and a
            // queue that cannot drain leaks the state); the worker touches a
            // slot's buffer only between its completion and its next push.
            let r =
                unsafe { libc::syscall(libc::SYS_io_submit, self.st.ctx, 1, list.as_mut_ptr()) };
            if r == 1 {
                return;
            }
            let errno = if r < 0 {
                io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO)
            } else {
                libc::EAGAIN
            };
            if errno == libc::EINTR {
                continue;
            }
            self.refused.push((slot, errno));
            return;
        }
    }

    /// One `io_getevents(ctx, min, 1)`, retried when a signal interrupts
    /// it; handles what it returns. Returns how many events came back.
    fn get_events(&mut self, min: usize) -> io::Result<usize> {
        let max = 1usize.max(min);
        loop {
            // SAFETY: `events` has room for the depth, at least `max`.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.st.ctx,
                    min as libc::c_long,
                    max as libc::c_long,
                    self.st.events.as_mut_ptr(),
                    std::ptr::null_mut::<libc::timespec>(),
                )
            };
            if r >= 0 {
                return Ok(r as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl IoQueue for AioQueue<'_> {
    fn depth(&self) -> usize {
        self.slots.len()
    }

    fn buf_mut(&mut self, slot: usize) -> &mut [u8] {
        self.st.bufs[slot].as_mut_slice()
    }

    fn buf(&self, slot: usize) -> &[u8] {
        self.st.bufs[slot].as_slice()
    }

    fn take_short_ios(&mut self) -> [u64; 2] {
        std::mem::take(&mut self.short)
    }

    #[inline]
    fn push(&mut self, slot: usize, req: Request) {
        self.slots[slot] = Slot { req, done: 0 };
        self.outstanding += 1;
        self.submit_slot(slot);
        if self.stamp {
            self.issued[slot] = Instant::now();
        }
    }

    fn stamp_issue(&mut self) {
        self.stamp = true;
        self.issued = vec![Instant::now(); self.slots.len()];
    }

    #[inline]
    fn issued_at(&self, slot: usize) -> Option<Instant> {
        self.stamp.then(|| self.issued[slot])
    }

    fn wait_call(&self) -> &'static str {
        "io_getevents"
    }

    fn submit_and_reap(&mut self, out: &mut Vec<Completion>) -> io::Result<()> {
        out.clear();
        loop {
            for (slot, errno) in self.refused.drain(..) {
                self.outstanding -= 1;
                out.push(Completion {
                    slot: slot as u32,
                    req: self.slots[slot].req,
                    result: Err(IoFault::Errno(errno)),
                });
            }
            if !out.is_empty() || self.outstanding == 0 {
                return Ok(());
            }
            let n = self.get_events(1)?;
            for k in 0..n {
                let ev = self.st.events[k];
                let slot = ev.data as usize;
                let s = &mut self.slots[slot];
                let result = match ev.res {
                    r if r < 0 => Some(Err(IoFault::Errno((-r) as i32))),
                    0 if s.req.write => Some(Err(IoFault::NoProgress)),
                    0 => Some(Err(IoFault::ShortRead { got: s.done })),
                    r => {
                        s.done += r as u32;
                        (s.done >= s.req.len).then_some(Ok(()))
                    }
                };
                match result {
                    Some(result) => {
                        self.outstanding -= 1;
                        out.push(Completion {
                            slot: slot as u32,
                            req: s.req,
                            result,
                        });
                    }
                    None => {
                        // A short transfer: the rest goes in again.
                        self.short[usize::from(s.req.write)] += 1;
                        self.submit_slot(slot);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_layouts() {
        assert_eq!(std::mem::size_of::<Iocb>(), 64);
        assert_eq!(std::mem::size_of::<IoEvent>(), 32);
        assert_eq!(std::mem::offset_of!(Iocb, lio_opcode), 16);
        assert_eq!(std::mem::offset_of!(Iocb, buf), 24);
        assert_eq!(std::mem::offset_of!(Iocb, offset), 40);
    }

    #[test]
    fn reads_back_what_it_wrote_at_depth() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let bufs = (0..4)
            .map(|_| AlignedBuf::try_new(4096, 4096).unwrap())
            .collect();
        let mut st = AioState::new(bufs).unwrap();
        let mut q = AioQueue::new(&f, &mut st);
        let mut out = Vec::new();
        for slot in 0..4 {
            q.buf_mut(slot).fill(slot as u8 + 1);
            q.push(
                slot,
                Request {
                    offset: slot as u64 * 4096,
                    len: 4096,
                    write: true,
                },
            );
        }
        let mut seen = 0;
        while seen < 4 {
            q.submit_and_reap(&mut out).unwrap();
            assert!(out.iter().all(|c| c.result.is_ok()), "{out:?}");
            seen += out.len();
        }
        assert!(q.finish());
        let data = std::fs::read(&path).unwrap();
        assert_eq!(data.len(), 4 * 4096);
        for k in 0..4 {
            assert!(data[k * 4096..(k + 1) * 4096]
                .iter()
                .all(|&b| b == k as u8 + 1));
        }
        // A read past the end is a short read, reported, not lost.
        let mut q = AioQueue::new(&f, &mut st);
        q.push(
            0,
            Request {
                offset: 4 * 4096,
                len: 4096,
                write: false,
            },
        );
        q.submit_and_reap(&mut out).unwrap();
        assert_eq!(out[0].result, Err(IoFault::ShortRead { got: 0 }));
        // A bad descriptor is refused by io_submit and comes back as the
        // request's error.
        drop(q);
        let closed = std::fs::File::open(&path).unwrap();
        let mut q = AioQueue::new(&closed, &mut st);
        q.push(
            1,
            Request {
                offset: 0,
                len: 4096,
                write: true,
            },
        );
        q.submit_and_reap(&mut out).unwrap();
        assert_eq!(out[0].result, Err(IoFault::Errno(libc::EBADF)));
        assert!(q.finish());
    }
}
