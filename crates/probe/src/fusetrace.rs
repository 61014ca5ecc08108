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
//! /sys/fs/fuse/connections), and a thread consumes `trace_pipe` and adds
//! up, per opcode, the requests and their payload:
//!
//! - `FUSE_WRITE`: the data sent, `len` of the send event minus the
//!   40-byte `fuse_in_header` and the 40-byte `fuse_write_in`;
//! - `FUSE_READ`: the data returned, `len` of the matching end event minus
//!   the 16-byte `fuse_out_header`;
//! - every other opcode: counted by name.
//!
//! Events the ring buffer could not hold are counted (the instance's
//! per-CPU `overrun` and `dropped events`), never guessed. The instance is
//! removed when the tracer finishes or is dropped; one left behind by a
//! process that was killed is removed by the next tracer that starts.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

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

    fn merge(&mut self, o: &OpRequests) {
        self.count += o.count;
        self.bytes += o.bytes;
        self.max_bytes = self.max_bytes.max(o.max_bytes);
        self.errors += o.errors;
        self.answered += o.answered;
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
    /// Events lost because the trace buffer was full: when not 0, the
    /// counts above are short by up to this many requests.
    #[serde(default)]
    pub lost_events: u64,
}

impl FuseRequests {
    /// All requests sent (write + read + other).
    pub fn total(&self) -> u64 {
        self.write.count + self.read.count + self.other.values().sum::<u64>()
    }

    /// The sum of several phases' requests (the repetitions of a point).
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a FuseRequests>) -> FuseRequests {
        let mut out = FuseRequests::default();
        for r in all {
            out.write.merge(&r.write);
            out.read.merge(&r.read);
            for (k, v) in &r.other {
                *out.other.entry(k.clone()).or_default() += v;
            }
            out.lost_events += r.lost_events;
        }
        out
    }
}

/// Counts in progress, as the reader thread parses events.
#[derive(Debug, Default)]
struct Tally {
    req: FuseRequests,
    /// Unique ids of READ and WRITE requests sent and not yet answered,
    /// with their opcode and when they were sent (seconds).
    pending: HashMap<u64, (u32, f64)>,
    /// "LOST n EVENTS" lines of trace_pipe.
    lost_lines: u64,
}

impl Tally {
    /// Adds one line of trace_pipe output: `COMM-PID [CPU] FLAGS TS:`
    /// (the command name may hold spaces), the event name, its fields.
    fn line(&mut self, l: &str) {
        let t: Vec<&str> = l.split_whitespace().collect();
        let ev = t.iter().position(|w| w.starts_with("fuse_request_"));
        let ts = ev
            .and_then(|i| t.get(i.checked_sub(1)?))
            .and_then(|w| w.strip_suffix(':')?.parse::<f64>().ok());
        // Fields are looked up after the event name: the command name
        // before it could hold any word.
        let fields = &t[ev.unwrap_or(0)..];
        match (fields.first().copied(), ts) {
            (Some("fuse_request_send:"), Some(ts)) => self.send(fields, ts),
            (Some("fuse_request_end:"), Some(ts)) => self.end(fields, ts),
            _ => {
                // "CPU:1 [LOST 123 EVENTS]"
                if let Some(i) = t.iter().position(|w| *w == "[LOST") {
                    self.lost_lines += t.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(0);
                }
            }
        }
    }

    /// `fuse_request_send: connection C req U opcode O (NAME) len L`
    fn send(&mut self, t: &[&str], ts: f64) {
        let (Some(unique), Some(op), Some(len)) =
            (field(t, "req"), field(t, "opcode"), field(t, "len"))
        else {
            return;
        };
        match op as u32 {
            OP_WRITE => {
                self.req.write.add(len.saturating_sub(IN_HEADER + WRITE_IN));
                self.pending.insert(unique, (OP_WRITE, ts));
            }
            OP_READ => {
                self.req.read.count += 1;
                self.pending.insert(unique, (OP_READ, ts));
            }
            _ => {
                let name = t
                    .iter()
                    .find(|w| w.starts_with('(') && w.ends_with(')'))
                    .map(|w| w.trim_matches(|c| c == '(' || c == ')').to_string())
                    .unwrap_or_else(|| format!("opcode {op}"));
                *self.req.other.entry(name).or_default() += 1;
            }
        }
    }

    /// `fuse_request_end: connection C req U len L error E`
    fn end(&mut self, t: &[&str], ts: f64) {
        let (Some(unique), Some(len)) = (field(t, "req"), field(t, "len")) else {
            return;
        };
        let error = t
            .iter()
            .position(|w| *w == "error")
            .and_then(|i| t.get(i + 1)?.parse::<i64>().ok())
            .unwrap_or(0);
        let Some((op, sent)) = self.pending.remove(&unique) else {
            // Sent before tracing began, or another opcode.
            return;
        };
        let r = if op == OP_READ {
            let r = &mut self.req.read;
            let payload = len.saturating_sub(OUT_HEADER);
            r.bytes += payload;
            r.max_bytes = r.max_bytes.max(payload);
            r
        } else {
            &mut self.req.write
        };
        r.errors += u64::from(error != 0);
        r.answered += 1;
        r.time_s += (ts - sent).max(0.0);
    }
}

/// The number after the word `key` in an event's fields.
fn field(t: &[&str], key: &str) -> Option<u64> {
    let i = t.iter().position(|w| *w == key)?;
    t.get(i + 1)?.parse().ok()
}

/// Where tracefs is, or why it cannot be used: `IOSCALE_TRACEFS` (the
/// value of that variable) names it, else the usual mount points are tried.
fn tracefs_root(env: Option<std::ffi::OsString>) -> Result<PathBuf, String> {
    if let Some(p) = env {
        let p = PathBuf::from(p);
        return if p.join("instances").is_dir() {
            Ok(p)
        } else {
            Err(format!(
                "tracefs not mounted at {} (IOSCALE_TRACEFS): mount -t tracefs nodev /sys/kernel/tracing",
                p.display()
            ))
        };
    }
    // SAFETY: geteuid has no failure mode.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root: the kernel's FUSE trace events need root".into());
    }
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("instances").is_dir())
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
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("ioscale-"))
            .and_then(|n| n.split_once('-'))
            .and_then(|(p, _)| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir(e.path());
        }
    }
}

/// Tracing of one FUSE connection in progress.
#[derive(Debug)]
pub(crate) struct Tracer {
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<Tally>>,
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
        };
        t.configure(conn)?;
        let pipe = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(t.dir.join("trace_pipe"))
            .map_err(|e| format!("could not open trace_pipe: {e}"))?;
        let stop = Arc::clone(&t.stop);
        let h = std::thread::Builder::new()
            .name("ioscale-fusetrace".into())
            .spawn(move || read_pipe(pipe, &stop))
            .map_err(|e| format!("could not start the trace reader: {e}"))?;
        t.reader = Some(h);
        t.write("events/fuse/enable", "1")?;
        Ok(t)
    }

    fn write(&self, rel: &str, v: &str) -> Result<(), String> {
        fs::write(self.dir.join(rel), v).map_err(|e| format!("tracefs {rel}: {e}"))
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

    /// Stops tracing, reads what is left, removes the instance.
    pub(crate) fn finish(mut self) -> FuseRequests {
        self.stop_and_collect()
    }

    fn stop_and_collect(&mut self) -> FuseRequests {
        let _ = self.write("tracing_on", "0");
        self.stop.store(true, Ordering::Relaxed);
        let tally = self
            .reader
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let lost = self.lost().max(tally.lost_lines);
        let _ = self.write("events/fuse/enable", "0");
        let _ = fs::remove_dir(&self.dir);
        let mut req = tally.req;
        req.lost_events = lost;
        req.write.settle();
        req.read.settle();
        req
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        if self.dir.exists() {
            self.stop_and_collect();
        }
    }
}

/// The reader thread: consumes trace_pipe until told to stop, then drains
/// what is left (tracing is off by then, so it ends).
fn read_pipe(mut pipe: fs::File, stop: &AtomicBool) -> Tally {
    use std::os::fd::AsRawFd;
    let mut tally = Tally::default();
    let mut buf = vec![0u8; 1 << 16];
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        match pipe.read(&mut buf) {
            Ok(0) => {
                if stopping {
                    break;
                }
            }
            Ok(n) => {
                partial.extend_from_slice(&buf[..n]);
                if let Some(end) = partial.iter().rposition(|&b| b == b'\n') {
                    for l in partial[..end].split(|&b| b == b'\n') {
                        tally.line(&String::from_utf8_lossy(l));
                    }
                    partial.drain(..=end);
                }
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if stopping {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
        let mut p = libc::pollfd {
            fd: pipe.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        unsafe { libc::poll(&mut p, 1, 50) };
    }
    if !partial.is_empty() {
        tally.line(&String::from_utf8_lossy(&partial));
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_printed_events() {
        let mut t = Tally::default();
        for l in [
            "  io len 5-9 [001] ..... 10.000000: fuse_request_send: connection 40 req 12 opcode 16 (FUSE_WRITE) len 131152 ",
            "ioscale-testfs-7 [000] ..... 10.002000: fuse_request_end: connection 40 req 12 len 24 error 0",
            "ioscale-9 [001] ..... 10.003000: fuse_request_send: connection 40 req 14 opcode 16 (FUSE_WRITE) len 4176 ",
            "ioscale-testfs-7 [000] ..... 10.004000: fuse_request_end: connection 40 req 14 len 16 error -28",
            "ioscale-9 [001] ..... 11.000000: fuse_request_send: connection 40 req 16 opcode 15 (FUSE_READ) len 80 ",
            "ioscale-testfs-7 [000] ..... 11.000500: fuse_request_end: connection 40 req 16 len 131088 error 0",
            "ioscale-9 [001] ..... 11.001000: fuse_request_send: connection 40 req 18 opcode 15 (FUSE_READ) len 80 ",
            "ioscale-testfs-7 [000] ..... 11.001500: fuse_request_end: connection 40 req 18 len 16 error -5",
            // A reply to a read sent before tracing began: not counted.
            "ioscale-testfs-7 [000] ..... 11.002000: fuse_request_end: connection 40 req 2 len 4112 error 0",
            "ioscale-9 [001] ..... 12.000000: fuse_request_send: connection 40 req 20 opcode 25 (FUSE_FLUSH) len 64 ",
            "ioscale-9 [001] ..... 12.000000: fuse_request_send: connection 40 req 22 opcode 25 (FUSE_FLUSH) len 64 ",
            "CPU:1 [LOST 7 EVENTS]",
        ] {
            t.line(l);
        }
        let mut r = t.req;
        r.write.settle();
        r.read.settle();
        assert_eq!((r.write.count, r.write.bytes), (2, 131072 + 4096));
        assert_eq!((r.write.max_bytes, r.write.errors), (131072, 1));
        assert_eq!(r.write.mean_bytes, (131072.0 + 4096.0) / 2.0);
        assert_eq!((r.read.count, r.read.bytes, r.read.errors), (2, 131072, 1));
        assert_eq!((r.write.answered, r.read.answered), (2, 2));
        assert!((r.write.mean_us.unwrap() - 1500.0).abs() < 1e-3, "{r:?}");
        assert!((r.read.mean_us.unwrap() - 500.0).abs() < 1e-3, "{r:?}");
        assert_eq!(r.other.get("FUSE_FLUSH"), Some(&2));
        assert_eq!(r.total(), 6);
        assert_eq!(t.lost_lines, 7);
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
        let s = FuseRequests::sum([&a, &b]);
        assert_eq!(
            (s.write.count, s.write.bytes, s.write.max_bytes),
            (3, 600, 300)
        );
        assert_eq!(s.write.mean_bytes, 200.0);
        assert_eq!(s.lost_events, 1);
        assert_eq!(s.total(), 5);
    }

    #[test]
    fn a_missing_tracefs_is_a_reason() {
        let e = tracefs_root(Some("/nonexistent".into())).unwrap_err();
        assert!(e.contains("tracefs not mounted at /nonexistent"), "{e}");
        assert!(e.contains("mount -t tracefs"), "{e}");
    }
}
