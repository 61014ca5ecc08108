//! The FUSE requests the kernel actually sends, counted from its
//! tracepoints while a phase runs.
//!
//! A 1 MiB `write` on a FUSE mount reaches the daemon as one or more
//! `FUSE_WRITE` requests of at most the `max_write` negotiated at INIT,
//! which the kernel does not publish anywhere else. Linux 6.18 (and the
//! kernels that carry the `fuse` trace events) records every request in
//! `fuse/fuse_request_send` (connection, unique id, opcode, length of the
//! request including its headers) and `fuse/fuse_request_end` (connection,
//! unique id, length of the reply including its header, error).
//!
//! A [`Tracer`] makes a private trace instance
//! (`instances/ioscale-<pid>-<n>` under tracefs, so two runs at once and
//! anyone else's tracing are left alone), filters both events on the
//! target's connection (the kernel's `dev_t` of the mount, the number in
//! /sys/fs/fuse/connections), and a thread reads the binary per-CPU pages
//! (module `rawtrace`; printing them as text cost more than the requests)
//! every 50 ms and adds up, per opcode, the requests and their payload:
//!
//! - `FUSE_WRITE`: the data sent, `len` of the send event minus the
//!   40-byte `fuse_in_header` and the 40-byte `fuse_write_in`;
//! - `FUSE_READ`: the data returned, `len` of the matching end event minus
//!   the 16-byte `fuse_out_header`;
//! - every other opcode: counted by name;
//! - for READ and WRITE, the time from sending to the reply (trace clock
//!   `mono`, the same on every CPU), summed.
//!
//! Events the ring buffer could not hold are counted (the instance's
//! per-CPU `overrun` and `dropped events`), never guessed. The instance is
//! removed when the tracer finishes or is dropped; one left behind by a
//! process that was killed is removed by the next tracer that starts.

use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::rawtrace::{Event, Layout};

use serde::{Deserialize, Serialize};

/// `sizeof(struct fuse_in_header)`.
const IN_HEADER: u64 = 40;
/// `sizeof(struct fuse_write_in)` (protocol 7.9 and later).
const WRITE_IN: u64 = 40;
/// `sizeof(struct fuse_out_header)`.
const OUT_HEADER: u64 = 16;
/// `FUSE_READ` and `FUSE_WRITE` in `enum fuse_opcode`.
const OP_READ: u32 = 15;
const OP_WRITE: u32 = 16;
/// Ring buffer per CPU for the instance, KiB: at 50 ms between reads it
/// holds several thousand events per CPU.
const BUFFER_KB: u32 = 512;

/// Requests of one kind the kernel sent during the phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpRequests {
    /// Requests sent.
    pub count: u64,
    /// Payload bytes: data written (WRITE) or returned (READ).
    pub bytes: u64,
    /// Mean payload per request, bytes (`bytes ÷ count`; 0 without
    /// requests).
    pub mean_bytes: f64,
    /// Largest payload of one request, bytes.
    pub max_bytes: u64,
    /// Requests the daemon answered with an error.
    #[serde(default)]
    pub errors: u64,
    /// Requests whose reply was seen too (sent and answered in the phase).
    #[serde(default)]
    pub answered: u64,
    /// Sum over the answered requests of the time from the kernel sending
    /// the request to the daemon's reply, seconds (queueing for the daemon
    /// included). Divided by the phase's duration it is the average number
    /// of these requests in flight.
    #[serde(default)]
    pub time_s: f64,
    /// `time_s ÷ answered`, microseconds: the mean time per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_us: Option<f64>,
}

impl OpRequests {
    fn add(&mut self, payload: u64) {
        self.count += 1;
        self.bytes += payload;
        self.max_bytes = self.max_bytes.max(payload);
    }

    // Sums saturate: the requests of repetitions read back from a record
    // are added here too.
    fn merge(&mut self, o: &OpRequests) {
        self.count = self.count.saturating_add(o.count);
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.max_bytes = self.max_bytes.max(o.max_bytes);
        self.errors = self.errors.saturating_add(o.errors);
        self.answered = self.answered.saturating_add(o.answered);
        self.time_s += o.time_s;
        self.settle();
    }

    fn settle(&mut self) {
        self.mean_bytes = if self.count > 0 {
            self.bytes as f64 / self.count as f64
        } else {
            0.0
        };
        self.mean_us = (self.answered > 0).then(|| self.time_s / self.answered as f64 * 1e6);
    }
}

/// The FUSE requests of one connection over a phase, from the kernel's
/// `fuse_request_send` / `fuse_request_end` trace events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FuseRequests {
    /// `FUSE_WRITE` requests and the data they carried.
    pub write: OpRequests,
    /// `FUSE_READ` requests and the data their replies carried (a reply
    /// whose send event came before the phase is not counted).
    pub read: OpRequests,
    /// Every other request, by opcode name (`FUSE_FLUSH`, `FUSE_GETATTR`…).
    #[serde(default)]
    pub other: BTreeMap<String, u64>,
    /// The replies to the requests in `other`, by opcode name: how many
    /// were answered in the phase and their send-to-reply time. An opcode
    /// the daemon never answers (`FUSE_FORGET`) has no entry.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other_replies: BTreeMap<String, Replies>,
    /// Events lost because the trace buffer was full: when not 0, the
    /// counts above are short by up to this many requests.
    #[serde(default)]
    pub lost_events: u64,
}

/// The replies to requests of one opcode other than READ and WRITE.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Replies {
    /// Requests whose reply was seen (sent and answered in the phase).
    pub answered: u64,
    /// Replies that carried an error.
    pub errors: u64,
    /// Summed time from the kernel sending each request to the daemon's
    /// reply, seconds (queueing for the daemon included).
    pub time_s: f64,
}

impl Replies {
    fn merge(&mut self, o: &Replies) {
        self.answered = self.answered.saturating_add(o.answered);
        self.errors = self.errors.saturating_add(o.errors);
        self.time_s += o.time_s;
    }
}

impl FuseRequests {
    /// All requests sent (write + read + other).
    pub fn total(&self) -> u64 {
        self.other
            .values()
            .fold(self.write.count.saturating_add(self.read.count), |a, n| {
                a.saturating_add(*n)
            })
    }

    /// The sum of several phases' requests (the repetitions of a point).
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a FuseRequests>) -> FuseRequests {
        let mut out = FuseRequests::default();
        for r in all {
            out.write.merge(&r.write);
            out.read.merge(&r.read);
            for (k, v) in &r.other {
                let n = out.other.entry(k.clone()).or_default();
                *n = n.saturating_add(*v);
            }
            for (k, v) in &r.other_replies {
                out.other_replies.entry(k.clone()).or_default().merge(v);
            }
            out.lost_events = out.lost_events.saturating_add(r.lost_events);
        }
        out
    }
}

/// Counts in progress, as the reader thread decodes events.
#[derive(Debug, Default)]
struct Tally {
    req: FuseRequests,
    /// Unique ids of requests sent and not yet answered, with their
    /// opcode and when they were sent (ns).
    pending: HashMap<u64, (u32, u64)>,
    /// Replies read before their request (sent on another CPU whose page
    /// is read later): unique id → (ts, len, error).
    early: HashMap<u64, (u64, u32, i32)>,
    /// A read of the trace pages that failed: the counts are incomplete.
    error: Option<String>,
}

impl Tally {
    fn apply(&mut self, e: Event, names: &HashMap<u32, String>) {
        match e {
            Event::Send {
                ts,
                unique,
                opcode,
                len,
            } => {
                match opcode {
                    OP_WRITE => self
                        .req
                        .write
                        .add(u64::from(len).saturating_sub(IN_HEADER + WRITE_IN)),
                    OP_READ => self.req.read.count += 1,
                    _ => *self.req.other.entry(op_name(opcode, names)).or_default() += 1,
                }
                match self.early.remove(&unique) {
                    Some((t, len, error)) => self.answer(opcode, ts, t, len, error, names),
                    None => {
                        self.pending.insert(unique, (opcode, ts));
                    }
                }
            }
            Event::End {
                ts,
                unique,
                len,
                error,
            } => match self.pending.remove(&unique) {
                Some((op, sent)) => self.answer(op, sent, ts, len, error, names),
                // Sent before tracing began, another opcode, or a request
                // whose send event is on a page not read yet.
                None => {
                    self.early.insert(unique, (ts, len, error));
                }
            },
        }
    }

    /// Forgets what can no longer be matched, so a long phase does not
    /// grow the maps: replies more than 5 s older than `now` whose request
    /// never came (answers to requests sent before tracing began), and
    /// requests other than READ and WRITE unanswered for a minute (a
    /// request that gets no reply).
    fn prune(&mut self, now: u64) {
        if !self.early.is_empty() {
            self.early.retain(|_, e| e.0 + 5_000_000_000 > now);
        }
        if self.pending.len() > 10_000 {
            self.pending.retain(|_, (op, t)| {
                matches!(*op, OP_READ | OP_WRITE) || *t + 60_000_000_000 > now
            });
        }
    }

    fn answer(
        &mut self,
        op: u32,
        sent: u64,
        ts: u64,
        len: u32,
        error: i32,
        names: &HashMap<u32, String>,
    ) {
        let took = ts.saturating_sub(sent) as f64 * 1e-9;
        if !matches!(op, OP_READ | OP_WRITE) {
            let r = self
                .req
                .other_replies
                .entry(op_name(op, names))
                .or_default();
            r.answered += 1;
            r.errors += u64::from(error != 0);
            r.time_s += took;
            return;
        }
        let r = if op == OP_READ {
            let r = &mut self.req.read;
            let payload = u64::from(len).saturating_sub(OUT_HEADER);
            r.bytes += payload;
            r.max_bytes = r.max_bytes.max(payload);
            r
        } else {
            &mut self.req.write
        };
        r.errors += u64::from(error != 0);
        r.answered += 1;
        r.time_s += took;
    }
}

/// The name of `opcode` (`FUSE_LOOKUP`), from the kernel's own list.
fn op_name(opcode: u32, names: &HashMap<u32, String>) -> String {
    names
        .get(&opcode)
        .cloned()
        .unwrap_or_else(|| format!("opcode {opcode}"))
}

/// `f_type` of tracefs in statfs(2) (`TRACEFS_MAGIC`).
const TRACEFS_MAGIC: i64 = 0x7472_6163;

/// Whether `p` is on tracefs: the tracer writes only there (its writes
/// would create files anywhere else).
fn is_tracefs(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs on a NUL-terminated path into a zeroed struct.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    (unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0) && st.f_type as i64 == TRACEFS_MAGIC
}

/// Where tracefs is, or why it cannot be used: `IOSCALE_TRACEFS` (the
/// value of that variable) names it (`off` turns the tracing off), else
/// the usual mount points are tried. A directory that is not tracefs is
/// never used, however much it looks like one.
fn tracefs_root(env: Option<std::ffi::OsString>) -> Result<PathBuf, String> {
    if let Some(p) = env {
        if p == "off" {
            return Err("turned off (IOSCALE_TRACEFS=off)".into());
        }
        let p = PathBuf::from(p);
        return if !p.join("instances").is_dir() {
            Err(format!(
                "tracefs not mounted at {} (IOSCALE_TRACEFS): mount -t tracefs nodev /sys/kernel/tracing",
                p.display()
            ))
        } else if !is_tracefs(&p) {
            Err(format!(
                "{} (IOSCALE_TRACEFS) is not a tracefs mount; ioscale writes trace settings only into tracefs",
                p.display()
            ))
        } else {
            Ok(p)
        };
    }
    // SAFETY: geteuid has no failure mode.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root: the kernel's FUSE trace events need root".into());
    }
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("instances").is_dir() && is_tracefs(p))
        .ok_or_else(|| "tracefs not mounted: mount -t tracefs nodev /sys/kernel/tracing".into())
}

/// Removes instances `ioscale-<pid>-<n>` whose process is gone (killed
/// before it could clean up). An instance still being read is busy and
/// stays.
fn remove_stale(instances: &Path) {
    let Ok(rd) = fs::read_dir(instances) else {
        return;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(instance_pid) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir(e.path());
        }
    }
}

/// The process of an instance named as ioscale names its own,
/// `ioscale-<pid>-<n>` (both decimal); `None` for any other name, which
/// is someone else's.
fn instance_pid(name: &str) -> Option<u32> {
    let (pid, n) = name.strip_prefix("ioscale-")?.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(pid) && digits(n)).then(|| pid.parse().ok())?
}

/// Whether CPU `name` (`cpu3`) is offline.
fn cpu_offline(name: &str) -> bool {
    fs::read_to_string(format!("/sys/devices/system/cpu/{name}/online"))
        .is_ok_and(|s| s.trim() == "0")
}

/// What a process that exits at once (a second Ctrl-C) needs to remove a
/// live instance from its signal handler, prepared beforehand: no
/// allocation or lock is needed to use it.
struct Live {
    tracing_on: CString,
    enable: CString,
    dir: CString,
    pipes: Vec<libc::c_int>,
}

/// The live instances of this process (a phase has one; a few at most).
static LIVE: [AtomicPtr<Live>; 8] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 8];

/// Turns off and removes every trace instance of this process that is
/// still live, from a signal handler before the process exits at once
/// (the second SIGINT or SIGTERM): without it the instance went on
/// recording the connection's requests into its buffers until another
/// traced run removed it. Only async-signal-safe calls (open, write,
/// close, rmdir); an instance taken here is left to the exit, never
/// freed. Best effort: an instance still busy after 100 ms is removed by
/// the next tracer.
pub fn remove_live_instances() {
    for slot in &LIVE {
        let p = slot.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if p.is_null() {
            continue;
        }
        // SAFETY: `p` came from Box::into_raw in `Tracer::start`, and the
        // swap gave this call alone the pointer; it is never freed here.
        let live = unsafe { &*p };
        for file in [&live.tracing_on, &live.enable] {
            // SAFETY: open/write/close on a prepared NUL-terminated path.
            unsafe {
                let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    libc::write(fd, b"0".as_ptr().cast(), 1);
                    libc::close(fd);
                }
            }
        }
        for &fd in &live.pipes {
            // SAFETY: the instance's own pipes, still open: the tracer
            // takes its slot back before it closes them.
            unsafe { libc::close(fd) };
        }
        // A read in progress on another thread holds the instance for a
        // moment after its pipe is closed: try again for up to 100 ms.
        for _ in 0..100 {
            // SAFETY: rmdir of a prepared NUL-terminated path; nanosleep
            // with a valid timespec.
            unsafe {
                if libc::rmdir(live.dir.as_ptr()) == 0 || *libc::__errno_location() != libc::EBUSY {
                    break;
                }
                let ms = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 1_000_000,
                };
                libc::nanosleep(&ms, std::ptr::null_mut());
            }
        }
    }
}

/// Tracing of one FUSE connection in progress.
#[derive(Debug)]
pub(crate) struct Tracer {
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<Tally>>,
    /// Its slot in [`LIVE`], while it has one.
    slot: Option<usize>,
}

impl Tracer {
    /// Starts tracing the requests of FUSE connection `conn`, or says why
    /// it cannot.
    pub(crate) fn start(conn: u32) -> Result<Tracer, String> {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let root = tracefs_root(std::env::var_os("IOSCALE_TRACEFS"))?;
        for ev in ["fuse_request_send", "fuse_request_end"] {
            if !root.join("events/fuse").join(ev).join("format").is_file() {
                return Err(format!(
                    "events missing on this kernel: no fuse/{ev} in {}/events",
                    root.display()
                ));
            }
        }
        let layout = Layout::read(&root)?;
        let instances = root.join("instances");
        remove_stale(&instances);
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = instances.join(format!("ioscale-{}-{n}", std::process::id()));
        fs::create_dir(&dir)
            .map_err(|e| format!("could not create trace instance {}: {e}", dir.display()))?;
        // From here on, Drop removes the instance whatever fails.
        let mut t = Tracer {
            dir,
            stop: Arc::new(AtomicBool::new(false)),
            reader: None,
            slot: None,
        };
        t.configure(conn)?;
        let pipes = t.open_pipes()?;
        t.slot = t.register(&pipes);
        let page = fs::read_to_string(t.dir.join("buffer_subbuf_size_kb"))
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map_or(4096, |kb| kb * 1024);
        let stop = Arc::clone(&t.stop);
        let h = std::thread::Builder::new()
            .name("ioscale-fusetrace".into())
            .spawn(move || read_raw(pipes, page, &layout, &stop))
            .map_err(|e| format!("could not start the trace reader: {e}"))?;
        t.reader = Some(h);
        t.write("events/fuse/enable", "1")?;
        Ok(t)
    }

    /// Takes a slot in [`LIVE`] for this instance and its `pipes`; `None`
    /// when all are taken (the next tracer then removes it if the process
    /// exits at once).
    fn register(&self, pipes: &[fs::File]) -> Option<usize> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::io::AsRawFd;
        let c = |p: PathBuf| CString::new(p.as_os_str().as_bytes()).ok();
        let live = Box::new(Live {
            tracing_on: c(self.dir.join("tracing_on"))?,
            enable: c(self.dir.join("events/fuse/enable"))?,
            dir: c(self.dir.clone())?,
            pipes: pipes.iter().map(|f| f.as_raw_fd()).collect(),
        });
        let p = Box::into_raw(live);
        for (i, slot) in LIVE.iter().enumerate() {
            if slot
                .compare_exchange(std::ptr::null_mut(), p, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Some(i);
            }
        }
        // SAFETY: `p` was not published; it is ours to free.
        drop(unsafe { Box::from_raw(p) });
        None
    }

    /// Gives the slot back (before the pipes are closed), freeing it unless
    /// a signal handler took it.
    fn unregister(&mut self) {
        if let Some(i) = self.slot.take() {
            let p = LIVE[i].swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !p.is_null() {
                // SAFETY: from Box::into_raw in `register`; the swap gave
                // it back to this tracer alone.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }

    /// The instance's per-CPU raw pipes, opened non-blocking.
    fn open_pipes(&self) -> Result<Vec<fs::File>, String> {
        let rd =
            fs::read_dir(self.dir.join("per_cpu")).map_err(|e| format!("tracefs per_cpu: {e}"))?;
        let mut out = Vec::new();
        for e in rd.flatten() {
            let f = fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(e.path().join("trace_pipe_raw"));
            match f {
                Ok(f) => out.push(f),
                // An offline CPU records nothing.
                Err(_) if cpu_offline(&e.file_name().to_string_lossy()) => {}
                Err(err) => {
                    return Err(format!(
                        "could not open {}/trace_pipe_raw: {err}",
                        e.path().display()
                    ))
                }
            }
        }
        Ok(out)
    }

    /// Writes a setting of the instance into the file tracefs made for it,
    /// never creating one.
    fn write(&self, rel: &str, v: &str) -> Result<(), String> {
        use std::io::Write;
        fs::OpenOptions::new()
            .write(true)
            .open(self.dir.join(rel))
            .and_then(|mut f| f.write_all(v.as_bytes()))
            .map_err(|e| format!("tracefs {rel}: {e}"))
    }

    fn configure(&self, conn: u32) -> Result<(), String> {
        self.write("tracing_on", "0")?;
        self.write("buffer_size_kb", &BUFFER_KB.to_string())?;
        // Keep the oldest events and count the newest as dropped when
        // full; time stamps from one clock for all CPUs (a request may be
        // sent on one and answered on another).
        self.write("options/overwrite", "0")?;
        self.write("trace_clock", "mono")?;
        let f = format!("connection == {conn}");
        self.write("events/fuse/fuse_request_send/filter", &f)?;
        self.write("events/fuse/fuse_request_end/filter", &f)?;
        self.write("tracing_on", "1")
    }

    /// Events the buffer lost, from the per-CPU statistics.
    fn lost(&self) -> u64 {
        let Ok(rd) = fs::read_dir(self.dir.join("per_cpu")) else {
            return 0;
        };
        rd.flatten()
            .filter_map(|e| fs::read_to_string(e.path().join("stats")).ok())
            .map(|s| {
                s.lines()
                    .filter_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        matches!(k.trim(), "overrun" | "dropped events")
                            .then(|| v.trim().parse::<u64>().ok())?
                    })
                    .sum::<u64>()
            })
            .sum()
    }

    /// Stops tracing, reads what is left, removes the instance; an error
    /// when the events could not all be read.
    pub(crate) fn finish(mut self) -> Result<FuseRequests, String> {
        self.stop_and_collect()
    }

    fn stop_and_collect(&mut self) -> Result<FuseRequests, String> {
        self.unregister();
        let _ = self.write("tracing_on", "0");
        self.stop.store(true, Ordering::Relaxed);
        let tally = self.reader.take().map(|h| {
            h.thread().unpark();
            h.join()
        });
        let lost = self.lost();
        let _ = self.write("events/fuse/enable", "0");
        let _ = fs::remove_dir(&self.dir);
        let mut tally = match tally {
            Some(Ok(t)) => t,
            Some(Err(_)) => return Err("the trace reader thread panicked".into()),
            None => return Err("the trace reader was not started".into()),
        };
        if let Some(e) = tally.error.take() {
            return Err(e);
        }
        let mut req = tally.req;
        req.lost_events = lost;
        req.write.settle();
        req.read.settle();
        Ok(req)
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        if self.dir.exists() {
            let _ = self.stop_and_collect();
        }
    }
}

/// The reader thread: every 50 ms, reads each CPU's pages until it has
/// none, and applies their events in time order; once told to stop
/// (tracing is off by then), one more pass that finds nothing ends it.
fn read_raw(mut pipes: Vec<fs::File>, page: usize, layout: &Layout, stop: &AtomicBool) -> Tally {
    let mut tally = Tally::default();
    let mut buf = vec![0u8; page];
    let mut events = Vec::new();
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        let mut got = false;
        for p in &mut pipes {
            loop {
                match p.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        got = true;
                        layout.page(&buf[..n], &mut events);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => {
                        tally
                            .error
                            .get_or_insert(format!("reading trace_pipe_raw: {e}"));
                        break;
                    }
                }
            }
        }
        events.sort_by_key(|e| match e {
            Event::Send { ts, .. } | Event::End { ts, .. } => *ts,
        });
        let now = events.last().map(|e| match e {
            Event::Send { ts, .. } | Event::End { ts, .. } => *ts,
        });
        for e in events.drain(..) {
            tally.apply(e, &layout.names);
        }
        if let Some(now) = now {
            tally.prune(now);
        }
        if stopping && !got {
            break;
        }
        if !got {
            // Woken early by the tracer when it stops.
            std::thread::park_timeout(Duration::from_millis(50));
        }
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_events() {
        let names: HashMap<u32, String> = [(25, "FUSE_FLUSH".to_string())].into();
        let send = |ts: u64, unique: u64, opcode: u32, len: u32| Event::Send {
            ts,
            unique,
            opcode,
            len,
        };
        let end = |ts: u64, unique: u64, len: u32, error: i32| Event::End {
            ts,
            unique,
            len,
            error,
        };
        let mut t = Tally::default();
        for e in [
            send(10_000_000, 12, OP_WRITE, 131_152),
            end(12_000_000, 12, 24, 0),
            send(13_000_000, 14, OP_WRITE, 4176),
            end(14_000_000, 14, 16, -28),
            // A reply read before its request (another CPU's page).
            end(20_500_000, 16, 131_088, 0),
            send(20_000_000, 16, OP_READ, 80),
            send(21_000_000, 18, OP_READ, 80),
            end(21_500_000, 18, 16, -5),
            // A reply to a request sent before tracing began: not counted.
            end(22_000_000, 2, 4112, 0),
            send(30_000_000, 20, 25, 64),
            send(30_000_000, 22, 25, 64),
            send(30_000_000, 24, 99, 64),
            // Other opcodes are timed by name too.
            end(32_000_000, 20, 16, 0),
            end(33_000_000, 24, 16, -2),
        ] {
            t.apply(e, &names);
        }
        let mut r = t.req.clone();
        r.write.settle();
        r.read.settle();
        assert_eq!((r.write.count, r.write.bytes), (2, 131072 + 4096));
        assert_eq!((r.write.max_bytes, r.write.errors), (131072, 1));
        assert_eq!(r.write.mean_bytes, (131072.0 + 4096.0) / 2.0);
        assert_eq!((r.read.count, r.read.bytes, r.read.errors), (2, 131072, 1));
        assert_eq!((r.write.answered, r.read.answered), (2, 2));
        assert!((r.write.mean_us.unwrap() - 1500.0).abs() < 1e-6, "{r:?}");
        assert!((r.read.mean_us.unwrap() - 500.0).abs() < 1e-6, "{r:?}");
        assert_eq!(r.other.get("FUSE_FLUSH"), Some(&2));
        assert_eq!(r.other.get("opcode 99"), Some(&1));
        assert_eq!(r.total(), 7);
        let flush = &r.other_replies["FUSE_FLUSH"];
        assert_eq!((flush.answered, flush.errors), (1, 0));
        assert!((flush.time_s - 0.002).abs() < 1e-12, "{flush:?}");
        let odd = &r.other_replies["opcode 99"];
        assert_eq!((odd.answered, odd.errors), (1, 1));
        assert_eq!(r.other_replies.len(), 2);
        // Answered requests leave nothing behind; the stray reply goes
        // once it is 5 s old.
        let unanswered: Vec<u64> = t.pending.keys().copied().collect();
        assert_eq!(unanswered.len(), 1, "{unanswered:?}");
        assert_eq!(t.early.len(), 1);
        t.prune(22_000_000 + 5_000_000_001);
        assert!(t.early.is_empty());
    }

    #[test]
    fn sums_repetitions() {
        let mut a = FuseRequests::default();
        a.write.add(100);
        a.write.settle();
        a.lost_events = 1;
        let mut b = FuseRequests::default();
        b.write.add(300);
        b.write.add(200);
        b.other.insert("FUSE_FLUSH".into(), 2);
        let flush = |answered: u64, time_s: f64| Replies {
            answered,
            errors: 0,
            time_s,
        };
        a.other_replies.insert("FUSE_FLUSH".into(), flush(1, 0.5));
        b.other_replies.insert("FUSE_FLUSH".into(), flush(2, 0.25));
        let s = FuseRequests::sum([&a, &b]);
        assert_eq!(s.other_replies["FUSE_FLUSH"], flush(3, 0.75));
        assert_eq!(
            (s.write.count, s.write.bytes, s.write.max_bytes),
            (3, 600, 300)
        );
        assert_eq!(s.write.mean_bytes, 200.0);
        assert_eq!(s.lost_events, 1);
        assert_eq!(s.total(), 5);
    }

    #[test]
    fn only_instances_named_as_ioscales_own_have_a_pid() {
        assert_eq!(instance_pid("ioscale-123-0"), Some(123));
        assert_eq!(instance_pid("ioscale-123-45"), Some(123));
        for other in [
            "ioscale-123-mine",
            "ioscale-123-",
            "ioscale--0",
            "ioscale-+1-0",
            "ioscale-1-2-3",
            "ioscale-99999999999-0",
            "trace-1-0",
        ] {
            assert_eq!(instance_pid(other), None, "{other}");
        }
    }

    #[test]
    fn a_missing_tracefs_is_a_reason() {
        let e = tracefs_root(Some("/nonexistent".into())).unwrap_err();
        assert!(e.contains("tracefs not mounted at /nonexistent"), "{e}");
        assert!(e.contains("mount -t tracefs"), "{e}");
        let e = tracefs_root(Some("off".into())).unwrap_err();
        assert_eq!(e, "turned off (IOSCALE_TRACEFS=off)");
        // Looking like tracefs is not enough.
        let d = std::env::temp_dir().join(format!("ioscale-fake-tracefs-{}", std::process::id()));
        fs::create_dir_all(d.join("instances")).unwrap();
        let e = tracefs_root(Some(d.clone().into())).unwrap_err();
        fs::remove_dir_all(&d).unwrap();
        assert!(e.contains("is not a tracefs mount"), "{e}");
    }
}
