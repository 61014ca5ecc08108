//! What a benchmark phase used: the measurements a limit can be named from.
//!
//! A throughput curve that flattens says *that* something saturated, not
//! *what*. This crate measures, around one phase, the candidates:
//!
//! - this process's CPU (user + system seconds per second, i.e. cores),
//!   from `getrusage(RUSAGE_SELF)`, and how long its threads waited for a
//!   CPU (run-queue wait in `/proc/self/task/*/schedstat`, sampled);
//! - the whole machine's CPU, from the first line of `/proc/stat`;
//! - the busiest other process (a FUSE daemon, an NFS helper, a
//!   compiler…), from the `utime`/`stime` of every `/proc/PID/stat`;
//! - the block device under the target path, from its `stat` file in
//!   sysfs, computed as iostat does (utilisation = Δio_ticks ÷ elapsed,
//!   average queue = Δtime_in_queue ÷ elapsed, request size = Δsectors ×
//!   512 ÷ Δrequests); the device is found from the path's `st_dev`
//!   (partitions use their own counters; a loop device names its backing
//!   file);
//! - for a FUSE target, the kernel connection under
//!   `/sys/fs/fuse/connections/N` (requests waiting for the daemon,
//!   sampled every 10 ms while the phase runs) and the `max_read` mount
//!   option; and, where tracefs allows (root, Linux with the `fuse` trace
//!   events), every request the kernel sends the daemon, counted by
//!   opcode with its payload (a 1 MiB write that became 8 requests of
//!   128 KiB shows as such), from a private trace instance (module
//!   `fusetrace`).
//!
//! [`Probe::start`] before the phase, [`Probe::finish`] after it; the
//! result, [`Resources`], is plain serialisable data. Nothing here writes
//! or prints, and a measurement that is not available is `None`, never a
//! made-up figure.
#![deny(missing_docs)]

pub mod evidence;
mod fusetrace;
mod rawtrace;

pub use fusetrace::{remove_live_instances, FuseRequests, OpRequests, Replies};

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// What one phase used, measured from its start to its end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    /// Wall-clock seconds between start and finish.
    pub elapsed_s: f64,
    /// Online CPUs.
    pub cpus: u32,
    /// This process: CPU seconds (user + system) per second, in cores.
    pub self_cores: f64,
    /// This process's threads: seconds spent ready to run but waiting for
    /// a CPU, per second (the average number of its threads kept off a
    /// CPU by others), from the run-queue wait in
    /// /proc/self/task/*/schedstat, sampled every 10 ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_cpu_wait: Option<f64>,
    /// The whole machine: busy CPU seconds per second, in cores
    /// (everything but idle and iowait in `/proc/stat`).
    pub machine_busy_cores: f64,
    /// The busiest process other than this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_other: Option<ProcessUse>,
    /// The block device under the target, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceUse>,
    /// The FUSE connection of the target, if it is a FUSE mount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuse: Option<FuseUse>,
    /// File-system type of the target (from mountinfo).
    #[serde(default)]
    pub fs_type: String,
}

/// A figure in a [`Resources`] read back from a record that no
/// measurement gives (see [`Resources::check`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Implausible {
    /// Where it is, from `resources` down (`fuse.requests.write.time_s`).
    pub field: String,
    /// The value found.
    pub value: String,
    /// Why no measurement gives it.
    pub why: &'static str,
}

impl Resources {
    /// Refuses figures no measurement gives, as a record read back may
    /// hold: every rate, time and share finite and not negative; of the
    /// traced FUSE requests, no more answered than sent, no more errors
    /// than answered, no more send-to-reply time than the answered
    /// requests can have taken within the traced phase, and a total that
    /// fits in 64 bits.
    pub fn check(&self) -> Result<(), Implausible> {
        let bad = |field: String, value: String, why| Err(Implausible { field, value, why });
        let mut reals: Vec<(String, f64)> = vec![
            ("elapsed_s".into(), self.elapsed_s),
            ("self_cores".into(), self.self_cores),
            ("machine_busy_cores".into(), self.machine_busy_cores),
        ];
        if let Some(w) = self.self_cpu_wait {
            reals.push(("self_cpu_wait".into(), w));
        }
        if let Some(t) = &self.top_other {
            reals.push(("top_other.cores".into(), t.cores));
        }
        if let Some(d) = &self.device {
            for (name, v) in [
                ("util", d.util),
                ("avg_queue", d.avg_queue),
                ("avg_request_bytes", d.avg_request_bytes),
                ("iops", d.iops),
                ("read_mib_s", d.read_mib_s),
                ("write_mib_s", d.write_mib_s),
                ("await_ms", d.await_ms),
            ] {
                reals.push((format!("device.{name}"), v));
            }
        }
        if let Some(f) = &self.fuse {
            if let Some(w) = f.waiting_avg {
                reals.push(("fuse.waiting_avg".into(), w));
            }
            if let Some(d) = &f.daemon {
                reals.push(("fuse.daemon.cores".into(), d.cores));
            }
            if let Some(r) = &f.requests {
                let mut counts: Vec<(String, u64)> = Vec::new();
                for (name, o) in [("write", &r.write), ("read", &r.read)] {
                    let at = |x: &str| format!("fuse.requests.{name}.{x}");
                    reals.push((at("mean_bytes"), o.mean_bytes));
                    reals.push((at("time_s"), o.time_s));
                    if let Some(m) = o.mean_us {
                        reals.push((at("mean_us"), m));
                    }
                    if o.answered > o.count {
                        return bad(at("answered"), o.answered.to_string(), MORE_THAN_SENT);
                    }
                    if o.errors > o.answered {
                        return bad(at("errors"), o.errors.to_string(), MORE_THAN_ANSWERED);
                    }
                    if o.time_s > o.answered as f64 * (self.elapsed_s + TRACE_SLACK_S) {
                        return bad(at("time_s"), o.time_s.to_string(), LONGER_THAN_TRACED);
                    }
                    counts.push((at("count"), o.count));
                }
                for (op, n) in &r.other {
                    counts.push((format!("fuse.requests.other.{op}"), *n));
                }
                for (op, x) in &r.other_replies {
                    let at = |f: &str| format!("fuse.requests.other_replies.{op}.{f}");
                    reals.push((at("time_s"), x.time_s));
                    if x.answered > r.other.get(op).copied().unwrap_or(0) {
                        return bad(at("answered"), x.answered.to_string(), MORE_THAN_SENT);
                    }
                    if x.errors > x.answered {
                        return bad(at("errors"), x.errors.to_string(), MORE_THAN_ANSWERED);
                    }
                    if x.time_s > x.answered as f64 * (self.elapsed_s + TRACE_SLACK_S) {
                        return bad(at("time_s"), x.time_s.to_string(), LONGER_THAN_TRACED);
                    }
                }
                let fits = counts
                    .iter()
                    .try_fold(0u64, |a, (_, n)| a.checked_add(*n))
                    .is_some();
                if let (false, Some((field, n))) = (fits, counts.iter().max_by_key(|c| c.1)) {
                    return bad(
                        field.clone(),
                        n.to_string(),
                        "makes more requests in all than 64 bits count",
                    );
                }
            }
        }
        for (field, v) in reals {
            if !v.is_finite() || v < 0.0 {
                return bad(
                    field,
                    v.to_string(),
                    "must be a finite number, not negative",
                );
            }
        }
        Ok(())
    }

    /// Fraction of all CPUs the machine kept busy (0..1).
    pub fn machine_busy_fraction(&self) -> f64 {
        if self.cpus == 0 {
            0.0
        } else {
            self.machine_busy_cores / self.cpus as f64
        }
    }

    /// The averages of several measurements (the repetitions of a point):
    /// rates are weighted by elapsed time, the busiest process and device
    /// kept from the measurement where they were busiest.
    pub fn combine(all: &[Resources]) -> Option<Resources> {
        let first = all.first()?;
        let t: f64 = all.iter().map(|r| r.elapsed_s).sum();
        if t <= 0.0 {
            return Some(first.clone());
        }
        let w = |f: fn(&Resources) -> f64| all.iter().map(|r| f(r) * r.elapsed_s).sum::<f64>() / t;
        let mut out = Resources {
            elapsed_s: t,
            cpus: first.cpus,
            self_cores: w(|r| r.self_cores),
            self_cpu_wait: all
                .iter()
                .all(|r| r.self_cpu_wait.is_some())
                .then(|| w(|r| r.self_cpu_wait.unwrap_or(0.0))),
            machine_busy_cores: w(|r| r.machine_busy_cores),
            top_other: None,
            device: None,
            fuse: None,
            fs_type: first.fs_type.clone(),
        };
        out.top_other = all
            .iter()
            .filter_map(|r| r.top_other.clone())
            .max_by(|a, b| a.cores.total_cmp(&b.cores));
        let devs: Vec<(&DeviceUse, f64)> = all
            .iter()
            .filter_map(|r| r.device.as_ref().map(|d| (d, r.elapsed_s)))
            .collect();
        if let Some((d0, _)) = devs.first() {
            let td: f64 = devs.iter().map(|(_, e)| e).sum::<f64>().max(1e-12);
            let avg =
                |f: fn(&DeviceUse) -> f64| devs.iter().map(|(d, e)| f(d) * e).sum::<f64>() / td;
            let reqs: f64 = devs.iter().map(|(d, e)| d.iops * e).sum();
            let bytes: f64 = devs
                .iter()
                .map(|(d, e)| d.avg_request_bytes * d.iops * e)
                .sum();
            out.device = Some(DeviceUse {
                name: d0.name.clone(),
                backing: d0.backing.clone(),
                util: avg(|d| d.util),
                avg_queue: avg(|d| d.avg_queue),
                avg_request_bytes: if reqs > 0.0 { bytes / reqs } else { 0.0 },
                iops: avg(|d| d.iops),
                read_mib_s: avg(|d| d.read_mib_s),
                write_mib_s: avg(|d| d.write_mib_s),
                await_ms: avg(|d| d.await_ms),
            });
        }
        out.fuse = all.iter().filter_map(|r| r.fuse.clone()).max_by(|a, b| {
            a.waiting_avg
                .unwrap_or(0.0)
                .total_cmp(&b.waiting_avg.unwrap_or(0.0))
        });
        if let Some(f) = out.fuse.as_mut() {
            // Requests add up over the repetitions, when every one of them
            // was traced; otherwise the first reason stands.
            let fuses: Vec<&FuseUse> = all.iter().filter_map(|r| r.fuse.as_ref()).collect();
            if fuses.iter().all(|f| f.requests.is_some()) {
                f.requests = Some(FuseRequests::sum(
                    fuses.iter().filter_map(|f| f.requests.as_ref()),
                ));
                f.requests_note = None;
            } else {
                f.requests = None;
                f.requests_note = fuses
                    .iter()
                    .find_map(|f| f.requests_note.clone())
                    .or_else(|| Some("not traced in every repetition".into()));
            }
        }
        Some(out)
    }
}

const MORE_THAN_SENT: &str = "is more replies than requests sent";
const LONGER_THAN_TRACED: &str =
    "is longer than its replies can take: each request is sent and answered while the phase is traced";
/// How much longer than the phase (`elapsed_s`) its trace may run: it is
/// switched on before the phase's first snapshot and off after its last.
const TRACE_SLACK_S: f64 = 1.0;
const MORE_THAN_ANSWERED: &str = "is more errors than replies";

/// The resources one phase of one repetition used, as a driver measured
/// them with [`Probe`] around it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseProbe {
    /// Operation of the phase.
    pub op: String,
    /// Repetition, from 0.
    pub rep: u32,
    /// The measurement.
    pub resources: Resources,
}

/// One process's CPU use over the phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessUse {
    /// Process id.
    pub pid: u32,
    /// Command name (`comm`).
    pub name: String,
    /// CPU seconds (user + system) per second, in cores.
    pub cores: f64,
}

/// A block device's activity over the phase, computed as iostat does.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceUse {
    /// Kernel name (`vda`, `vda1`, `loop0`, `dm-0`).
    pub name: String,
    /// For a loop device, its backing file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing: Option<String>,
    /// Fraction of the time the device had a request in flight (0..1,
    /// iostat's %util ÷ 100).
    pub util: f64,
    /// Average requests in the device queue (iostat's aqu-sz).
    pub avg_queue: f64,
    /// Average bytes per completed request.
    pub avg_request_bytes: f64,
    /// Completed requests (reads + writes) per second.
    pub iops: f64,
    /// Read MiB/s.
    pub read_mib_s: f64,
    /// Written MiB/s.
    pub write_mib_s: f64,
    /// Average time per request including queueing, milliseconds (iostat's
    /// r_await/w_await combined).
    pub await_ms: f64,
}

/// A FUSE connection over the phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FuseUse {
    /// Connection number (the directory under /sys/fs/fuse/connections).
    pub connection: u32,
    /// Requests waiting for the daemon, averaged over samples every 10 ms;
    /// `None` when the fusectl file system is not mounted.
    pub waiting_avg: Option<f64>,
    /// Largest number of waiting requests sampled.
    pub waiting_max: Option<u64>,
    /// The connection's `max_background` (asynchronous requests allowed).
    pub max_background: Option<u64>,
    /// The `max_read` mount option, when set.
    pub max_read: Option<u64>,
    /// The busiest process that holds `/dev/fuse` open (the daemon serving
    /// this mount, or one of them when several FUSE mounts exist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon: Option<ProcessUse>,
    /// The requests the kernel sent on this connection during the phase,
    /// from its trace events; `None` when they could not be traced
    /// (`requests_note` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<FuseRequests>,
    /// Why `requests` is absent (`tracefs not mounted: …`, `not root…`,
    /// `events missing on this kernel…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_note: Option<String>,
}

/// Raw counters at one instant.
#[derive(Debug, Clone)]
struct Snapshot {
    at: Instant,
    self_cpu_s: f64,
    machine_busy_ticks: u64,
    procs: Vec<(u32, String, u64)>,
    dev: Option<[u64; 11]>,
}

/// Where the target lives.
#[derive(Debug, Clone, Default)]
struct Target {
    /// sysfs directory of the block device (`/sys/dev/block/M:m`).
    dev_dir: Option<PathBuf>,
    dev_name: String,
    backing: Option<String>,
    fuse_conn: Option<u32>,
    max_read: Option<u64>,
    fs_type: String,
}

/// The sampler thread: its stop flag and what it saw.
type Sampler = (Arc<AtomicBool>, JoinHandle<Samples>);

/// What the sampler saw while the phase ran.
#[derive(Debug, Default)]
struct Samples {
    /// FUSE `waiting`: (sum, samples, max).
    fuse: (u64, u64, u64),
    /// Run-queue wait of this process's threads, nanoseconds (from
    /// /proc/self/task/*/schedstat); `None` when not available.
    wait_ns: Option<u64>,
}

/// Samples every 10 ms until told to stop: the FUSE connection's waiting
/// requests, and each thread's cumulative run-queue wait (threads come
/// and go during a phase, so each is followed from when it was first seen
/// to when it was last seen).
fn sample(stop: &AtomicBool, fuse_file: Option<PathBuf>) -> Samples {
    // SAFETY: gettid has no failure mode.
    let me = unsafe { libc::gettid() } as u32;
    let mut out = Samples::default();
    let mut seen: Vec<(u32, u64, u64)> = Vec::new();
    let mut available = false;
    loop {
        let last = stop.load(Ordering::Relaxed);
        if let Some(f) = &fuse_file {
            if let Some(v) = read_u64(f) {
                out.fuse.0 += v;
                out.fuse.1 += 1;
                out.fuse.2 = out.fuse.2.max(v);
            }
        }
        if let Ok(rd) = fs::read_dir("/proc/self/task") {
            for e in rd.flatten() {
                let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                    continue;
                };
                if tid == me {
                    continue;
                }
                let Some(w) = fs::read_to_string(e.path().join("schedstat"))
                    .ok()
                    .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
                else {
                    continue;
                };
                available = true;
                match seen.iter_mut().find(|x| x.0 == tid) {
                    Some(x) => x.2 = w,
                    None => seen.push((tid, w, w)),
                }
            }
        }
        if last {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    out.wait_ns = available.then(|| seen.iter().map(|x| x.2 - x.1).sum());
    out
}

/// A measurement in progress.
#[derive(Debug)]
pub struct Probe {
    target: Target,
    start: Snapshot,
    sampler: Option<Sampler>,
    /// The FUSE request tracer, or why there is none (FUSE targets only).
    tracer: Option<Result<fusetrace::Tracer, String>>,
}

impl Probe {
    /// Starts measuring for a phase on `target` (a file or directory on the
    /// file system under test).
    pub fn start(target: &Path) -> Probe {
        let t = resolve(target);
        let fuse_file = t
            .fuse_conn
            .map(|c| fuse_dir(c).join("waiting"))
            .filter(|f| fs::read_to_string(f).is_ok());
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = Arc::clone(&stop);
        let sampler = std::thread::Builder::new()
            .name("ioscale-probe".into())
            .spawn(move || sample(&s2, fuse_file))
            .ok()
            .map(|h| (stop, h));
        let tracer = t.fuse_conn.map(fusetrace::Tracer::start);
        let start = snapshot(&t);
        Probe {
            target: t,
            start,
            sampler,
            tracer,
        }
    }

    /// Ends the measurement.
    pub fn finish(mut self) -> Resources {
        let end = snapshot(&self.target);
        let (requests, requests_note) = match self.tracer.take() {
            Some(Ok(t)) => match t.finish() {
                Ok(r) => (Some(r), None),
                Err(why) => (None, Some(why)),
            },
            Some(Err(why)) => (None, Some(why)),
            None => (None, None),
        };
        let el = end.at.duration_since(self.start.at).as_secs_f64().max(1e-9);
        let tck = clock_ticks();
        let mut top: Option<ProcessUse> = None;
        let mut daemon: Option<ProcessUse> = None;
        let daemons = if self.target.fuse_conn.is_some() {
            fuse_holders()
        } else {
            Vec::new()
        };
        let me = std::process::id();
        for (pid, name, t1) in &end.procs {
            if *pid == me {
                continue;
            }
            let Some((_, _, t0)) = self.start.procs.iter().find(|p| p.0 == *pid) else {
                continue;
            };
            let cores = t1.saturating_sub(*t0) as f64 / tck / el;
            if daemons.contains(pid) && daemon.as_ref().is_none_or(|t| cores > t.cores) {
                daemon = Some(ProcessUse {
                    pid: *pid,
                    name: name.clone(),
                    cores,
                });
            }
            if top.as_ref().is_none_or(|t| cores > t.cores) {
                top = Some(ProcessUse {
                    pid: *pid,
                    name: name.clone(),
                    cores,
                });
            }
        }
        let device = match (&self.start.dev, &end.dev) {
            (Some(a), Some(b)) => Some(device_use(
                &self.target.dev_name,
                self.target.backing.clone(),
                a,
                b,
                el,
            )),
            _ => None,
        };
        let samples = match self.sampler {
            Some((stop, h)) => {
                stop.store(true, Ordering::Relaxed);
                h.join().unwrap_or_default()
            }
            None => Samples::default(),
        };
        let fuse = self.target.fuse_conn.map(|c| {
            let dir = fuse_dir(c);
            let (sum, n, max) = samples.fuse;
            let (avg, max) = if n > 0 {
                (Some(sum as f64 / n as f64), Some(max))
            } else {
                (None, None)
            };
            FuseUse {
                connection: c,
                waiting_avg: avg,
                waiting_max: max,
                max_background: read_u64(&dir.join("max_background")),
                max_read: self.target.max_read,
                daemon: daemon.clone(),
                requests: requests.clone(),
                requests_note: requests_note.clone(),
            }
        });
        Resources {
            elapsed_s: el,
            cpus: online_cpus(),
            self_cores: (end.self_cpu_s - self.start.self_cpu_s).max(0.0) / el,
            self_cpu_wait: samples.wait_ns.map(|w| w as f64 * 1e-9 / el),
            machine_busy_cores: end
                .machine_busy_ticks
                .saturating_sub(self.start.machine_busy_ticks)
                as f64
                / tck
                / el,
            top_other: top,
            device,
            fuse,
            fs_type: self.target.fs_type.clone(),
        }
    }
}

fn device_use(
    name: &str,
    backing: Option<String>,
    a: &[u64; 11],
    b: &[u64; 11],
    el: f64,
) -> DeviceUse {
    let d = |i: usize| b[i].saturating_sub(a[i]) as f64;
    let ios = d(0) + d(4);
    let ms = el * 1000.0;
    DeviceUse {
        name: name.to_string(),
        backing,
        util: (d(9) / ms).min(1.0),
        avg_queue: d(10) / ms,
        avg_request_bytes: if ios > 0.0 {
            (d(2) + d(6)) * 512.0 / ios
        } else {
            0.0
        },
        iops: ios / el,
        read_mib_s: d(2) * 512.0 / 1_048_576.0 / el,
        write_mib_s: d(6) * 512.0 / 1_048_576.0 / el,
        await_ms: if ios > 0.0 { (d(3) + d(7)) / ios } else { 0.0 },
    }
}

fn fuse_dir(conn: u32) -> PathBuf {
    PathBuf::from(format!("/sys/fs/fuse/connections/{conn}"))
}

fn read_u64(p: &Path) -> Option<u64> {
    fs::read_to_string(p).ok()?.trim().parse().ok()
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// Online CPUs.
pub fn online_cpus() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

fn self_cpu_s() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Busy ticks of the machine: the `cpu` line of /proc/stat without idle
/// and iowait (guest time is already inside user).
fn machine_busy_ticks() -> u64 {
    let Ok(s) = fs::read_to_string("/proc/stat") else {
        return 0;
    };
    let Some(line) = s.lines().find(|l| l.starts_with("cpu ")) else {
        return 0;
    };
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal
    v.iter()
        .take(8)
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, x)| x)
        .sum()
}

/// `(pid, comm, utime + stime)` of every process.
fn processes() -> Vec<(u32, String, u64)> {
    proc_dirs()
        .filter_map(|(pid, dir)| {
            let s = fs::read_to_string(dir.join("stat")).ok()?;
            let (comm, ticks) = parse_proc_stat(&s)?;
            Some((pid, comm, ticks))
        })
        .collect()
}

/// `(pid, /proc/PID)` of every process now (none when /proc is unreadable).
fn proc_dirs() -> impl Iterator<Item = (u32, std::path::PathBuf)> {
    fs::read_dir("/proc")
        .into_iter()
        .flat_map(|rd| rd.flatten())
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((pid, e.path()))
        })
}

/// Processes holding `/dev/fuse` open: the FUSE daemons.
fn fuse_holders() -> Vec<u32> {
    proc_dirs()
        .filter(|(_, dir)| {
            fs::read_dir(dir.join("fd")).is_ok_and(|fds| {
                fds.flatten()
                    .any(|fd| fs::read_link(fd.path()).is_ok_and(|l| l == Path::new("/dev/fuse")))
            })
        })
        .map(|(pid, _)| pid)
        .collect()
}

/// `(comm, utime + stime)` from a /proc/PID/stat line; the name may hold
/// spaces and parentheses, so it runs to the last `)`.
fn parse_proc_stat(s: &str) -> Option<(String, u64)> {
    let open = s.find('(')?;
    let close = s.rfind(')')?;
    let name = s.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = s.get(close + 1..)?.split_whitespace().collect();
    // After the name: state(3) ppid pgrp session tty tpgid flags minflt
    // cminflt majflt cmajflt utime(14) stime(15).
    let ut: u64 = rest.get(11)?.parse().ok()?;
    let st: u64 = rest.get(12)?.parse().ok()?;
    Some((name, ut + st))
}

fn read_dev_stat(dir: &Path) -> Option<[u64; 11]> {
    let s = fs::read_to_string(dir.join("stat")).ok()?;
    let v: Vec<u64> = s
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    let mut out = [0u64; 11];
    if v.len() < 11 {
        return None;
    }
    out.copy_from_slice(&v[..11]);
    Some(out)
}

fn snapshot(t: &Target) -> Snapshot {
    let procs = processes();
    let dev = t.dev_dir.as_deref().and_then(read_dev_stat);
    Snapshot {
        at: Instant::now(),
        self_cpu_s: self_cpu_s(),
        machine_busy_ticks: machine_busy_ticks(),
        procs,
        dev,
    }
}

/// One line of /proc/self/mountinfo that matters here.
#[derive(Debug, Clone)]
struct Mount {
    major: u32,
    minor: u32,
    point: String,
    fs_type: String,
    source: String,
    super_opts: String,
}

fn mounts() -> Vec<Mount> {
    let s = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    s.lines()
        .filter_map(|l| {
            let (pre, post) = l.split_once(" - ")?;
            let pre: Vec<&str> = pre.split(' ').collect();
            let post: Vec<&str> = post.split(' ').collect();
            let (ma, mi) = pre.get(2)?.split_once(':')?;
            Some(Mount {
                major: ma.parse().ok()?,
                minor: mi.parse().ok()?,
                point: unescape(pre.get(4)?),
                fs_type: post.first()?.to_string(),
                source: unescape(post.get(1).unwrap_or(&"")),
                super_opts: post.get(2).unwrap_or(&"").to_string(),
            })
        })
        .collect()
}

fn unescape(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// Finds the block device and FUSE connection under `path`.
fn resolve(path: &Path) -> Target {
    let mut t = Target::default();
    let Ok(md) = fs::metadata(path) else {
        return t;
    };
    let dev = md.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let ms = mounts();
    // The last mount with this device number whose point is a prefix of the
    // path (bind mounts and over-mounts share numbers).
    let canon = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let m = ms
        .iter()
        .filter(|m| m.major == major && m.minor == minor)
        .filter(|m| canon.starts_with(&m.point))
        .max_by_key(|m| m.point.len())
        .or_else(|| ms.iter().find(|m| m.major == major && m.minor == minor))
        .cloned();
    if let Some(m) = &m {
        t.fs_type = m.fs_type.clone();
        if m.fs_type.starts_with("fuse") {
            t.fuse_conn = Some(if major == 0 {
                minor
            } else {
                (major << 20) | minor
            });
            t.max_read = m
                .super_opts
                .split(',')
                .find_map(|o| o.strip_prefix("max_read="))
                .and_then(|v| v.parse().ok());
        }
    }
    let (mut bmaj, mut bmin) = (major, minor);
    if major == 0 {
        // An anonymous device (btrfs, overlay…): use the mount source when it
        // is a block device node.
        match m.as_ref().and_then(|m| fs::metadata(&m.source).ok()) {
            Some(sm) if m.as_ref().is_some_and(|m| m.source.starts_with("/dev/")) => {
                let r = sm.rdev();
                (bmaj, bmin) = (libc::major(r), libc::minor(r));
            }
            _ => return t,
        }
    }
    let dir = PathBuf::from(format!("/sys/dev/block/{bmaj}:{bmin}"));
    if read_dev_stat(&dir).is_none() {
        return t;
    }
    let name = fs::canonicalize(&dir)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| format!("{bmaj}:{bmin}"));
    t.backing = fs::read_to_string(dir.join("loop/backing_file"))
        .ok()
        .map(|s| s.trim().to_string());
    t.dev_dir = Some(dir);
    t.dev_name = name;
    t
}

/// The block device name under `path` (`vda`, `vda1`, `loop3`), if any.
pub fn device_of(path: &Path) -> Option<String> {
    let t = resolve(path);
    t.dev_dir.map(|_| t.dev_name)
}

/// The eleven I/O counters of block device `device` (a name as
/// [`device_of`] gives it: `vda`, `vda1`, `loop3`) now, in the order of its
/// sysfs `stat` file and of `/proc/diskstats` fields 4–14: reads, reads
/// merged, sectors read, ms reading, writes, writes merged, sectors
/// written, ms writing, requests in flight, ms busy, weighted ms in queue.
/// `None` for a name that is no block device here. fio's `Disk stats`
/// lines are the change of these over a command.
pub fn disk_counters(device: &str) -> Option<[u64; 11]> {
    if device.is_empty() || device.contains('/') || device.starts_with('.') {
        return None;
    }
    read_dev_stat(&Path::new("/sys/class/block").join(device))
}

/// The FUSE connection number of `path`'s mount, if it is a FUSE mount.
pub fn fuse_connection_of(path: &Path) -> Option<u32> {
    resolve(path).fuse_conn
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_odd_names() {
        let s = "1234 (a (b) c) S 1 1 1 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 5 0 0";
        assert_eq!(parse_proc_stat(s), Some(("a (b) c".into(), 300)));
        assert_eq!(parse_proc_stat("garbage"), None);
    }

    #[test]
    fn iostat_arithmetic() {
        // 100 reads of 8 sectors and 50 writes of 16 sectors in 2 s, device
        // busy 1500 ms, queue-time 6000 ms.
        let a = [0u64; 11];
        let mut b = [0u64; 11];
        b[0] = 100;
        b[2] = 800;
        b[3] = 300;
        b[4] = 50;
        b[6] = 800;
        b[7] = 150;
        b[9] = 1500;
        b[10] = 6000;
        let d = device_use("x", None, &a, &b, 2.0);
        assert!((d.util - 0.75).abs() < 1e-12);
        assert!((d.avg_queue - 3.0).abs() < 1e-12);
        assert!((d.iops - 75.0).abs() < 1e-12);
        assert!((d.avg_request_bytes - 1600.0 * 512.0 / 150.0).abs() < 1e-9);
        assert!((d.await_ms - 3.0).abs() < 1e-12);
    }

    #[test]
    fn combine_weights_by_time() {
        let a = Resources {
            elapsed_s: 1.0,
            cpus: 2,
            self_cores: 1.0,
            machine_busy_cores: 2.0,
            ..Default::default()
        };
        let b = Resources {
            elapsed_s: 3.0,
            cpus: 2,
            self_cores: 0.0,
            machine_busy_cores: 0.0,
            ..Default::default()
        };
        let c = Resources::combine(&[a, b]).unwrap();
        assert!((c.self_cores - 0.25).abs() < 1e-12);
        assert!((c.machine_busy_fraction() - 0.25).abs() < 1e-12);
        assert_eq!(Resources::combine(&[]), None);
    }

    #[test]
    fn combine_adds_up_fuse_requests_only_when_every_rep_has_them() {
        let traced = |count: u64| {
            let mut q = FuseRequests::default();
            q.write.count = count;
            q.write.bytes = count * 131_072;
            q.write.max_bytes = 131_072;
            Resources {
                elapsed_s: 1.0,
                fuse: Some(FuseUse {
                    requests: Some(q),
                    ..Default::default()
                }),
                ..Default::default()
            }
        };
        let c = Resources::combine(&[traced(8), traced(24)]).unwrap();
        let q = c.fuse.unwrap().requests.unwrap();
        assert_eq!((q.write.count, q.write.bytes), (32, 32 * 131_072));
        assert_eq!(q.write.mean_bytes, 131_072.0);
        let mut untraced = traced(0);
        let f = untraced.fuse.as_mut().unwrap();
        f.requests = None;
        f.requests_note = Some("not root".into());
        let c = Resources::combine(&[traced(8), untraced]).unwrap();
        let f = c.fuse.unwrap();
        assert_eq!(f.requests, None);
        assert_eq!(f.requests_note.as_deref(), Some("not root"));
    }

    /// The counters of every block device `/proc/diskstats` lists are read
    /// from sysfs, field for field the same (read after it: the counters
    /// only grow, but for requests in flight); a name that could leave
    /// `/sys/class/block` is no device.
    #[test]
    fn disk_counters_are_diskstats_fields() {
        let text = fs::read_to_string("/proc/diskstats").unwrap();
        let mut seen = 0;
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let before: Vec<u64> = f[3..14].iter().map(|x| x.parse().unwrap()).collect();
            let now = disk_counters(f[2]).unwrap_or_else(|| panic!("{}: no counters", f[2]));
            for (i, (b, n)) in before.iter().zip(now).enumerate() {
                assert!(i == 8 || n >= *b, "{} field {}: {n} < {b}", f[2], i + 4);
            }
            seen += 1;
        }
        assert!(seen > 0, "no block device in /proc/diskstats");
        for bad in ["", "..", "../block/loop0", "loop0/../loop1", "nothing-here"] {
            assert_eq!(disk_counters(bad), None, "{bad}");
        }
    }

    /// The device under a file on a block file system (the root's, here)
    /// has counters; tmpfs has no device.
    #[test]
    fn device_of_a_path_has_counters() {
        let dir = std::env::temp_dir();
        if let Some(dev) = device_of(&dir) {
            assert!(disk_counters(&dev).is_some(), "{dev}");
        }
        assert_eq!(device_of(Path::new("/dev/shm")), None);
    }
}
