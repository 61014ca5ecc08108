//! What the measurements of a phase say about the phase: whether its data
//! reached the storage below the page cache, whether the block device's
//! busy time was its own, and whether ioscale's threads kept the CPUs full.
//!
//! The driver's warnings ("the reads were served from the page cache",
//! "16 workers on 2 CPUs took turns") and the analysis' limits ("device
//! vda 90% busy") are decided here, from the same [`Resources`], so a
//! warning can never contradict the analysis printed under it: a FUSE
//! daemon that traced 3.1 GB of FUSE_READ replies served the reads, and no
//! sentence may say the page cache did.

use crate::Resources;

/// Share of a phase's bytes that must be seen below the page cache (the
/// FUSE daemon's traced requests, the device's counters) for the phase to
/// count as served by the storage.
pub const SERVED_BELOW: f64 = 0.9;

/// Share at or under which the phase counts as served by the page cache.
pub const SERVED_BY_CACHE: f64 = 0.1;

/// Share of the device's traffic (in the phase's direction) that must be
/// the phase's own for the device's busy time to be the phase's: more
/// bytes than the phase moved came from other processes (or from
/// writeback of earlier phases).
pub const OWN_DEVICE_SHARE: f64 = 0.5;

/// ioscale's threads running or waiting for a CPU, as a share of the
/// CPUs: at or above it they alone keep every CPU busy.
pub const CPUS_FULL: f64 = 0.9;

/// Shortest probe window (summed over the repetitions) whose tick-counted
/// CPU figures are used: other processes' CPU time and the machine's busy
/// time are counted in ticks of 10 ms, so over 100 ms one tick is 0.1 of
/// a core; over a 6 ms stat phase it read as 1.6 cores of a FUSE daemon
/// that served 5 requests.
pub const MIN_TICK_WINDOW_S: f64 = 0.1;

/// Which of a phase's transfers a question is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// The bytes it read.
    Reads,
    /// The bytes it wrote.
    Writes,
}

/// Who saw a phase's bytes below the page cache.
#[derive(Debug, Clone, PartialEq)]
pub enum Witness {
    /// The FUSE daemon: the requests the kernel sent it, traced.
    Daemon,
    /// The block device under the target, by its kernel name.
    Device(String),
}

/// Bytes seen below the page cache during a phase, and by whom.
#[derive(Debug, Clone, PartialEq)]
pub struct Below {
    /// Bytes (data returned by FUSE_READ or carried by FUSE_WRITE; sectors
    /// the device read or wrote) in the direction asked.
    pub bytes: f64,
    /// Everything the witness moved in the window, both directions: a
    /// device shared with other processes moves more than the phase.
    pub traffic: f64,
    /// Who counted them.
    pub witness: Witness,
}

impl Below {
    /// "the FUSE daemon returned 3.0 GiB" / "device vda read 0 B", for
    /// `way`, with the byte count written by `size`.
    pub fn describe(&self, way: Way, size: impl Fn(f64) -> String) -> String {
        match (&self.witness, way) {
            (Witness::Daemon, Way::Reads) => format!(
                "the FUSE daemon returned {} (traced FUSE_READ requests)",
                size(self.bytes)
            ),
            (Witness::Daemon, Way::Writes) => format!(
                "the FUSE daemon received {} (traced FUSE_WRITE requests)",
                size(self.bytes)
            ),
            (Witness::Device(d), Way::Reads) => {
                format!("device {d} read {} (its counters)", size(self.bytes))
            }
            (Witness::Device(d), Way::Writes) => {
                format!("device {d} wrote {} (its counters)", size(self.bytes))
            }
        }
    }
}

/// Where a phase's bytes were served, from a [`Below`] count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// At least [`SERVED_BELOW`] of them were seen below the cache.
    Storage,
    /// At most [`SERVED_BY_CACHE`] of them.
    Cache,
    /// Some, not most.
    Partly,
    /// Enough was seen below the cache, but the witness (a device shared
    /// with other processes) moved so much more than the phase that the
    /// phase's part of it cannot be told: no evidence either way.
    Unclear,
}

impl Resources {
    /// These resources without the figures their window is too short to
    /// resolve ([`MIN_TICK_WINDOW_S`]): other processes' cores (the FUSE
    /// daemon, the busiest other process), the machine's busy cores
    /// (ioscale's own CPU time, counted to the microsecond, stays as its
    /// floor) and the sampled CPU wait.
    pub fn resolvable(&self) -> Resources {
        let mut r = self.clone();
        if r.elapsed_s < MIN_TICK_WINDOW_S {
            r.top_other = None;
            r.machine_busy_cores = r.self_cores;
            r.self_cpu_wait = None;
            if let Some(f) = r.fuse.as_mut() {
                f.daemon = None;
            }
        }
        r
    }

    /// The bytes seen below the page cache in direction `way` during the
    /// measured window: on a FUSE target the traced requests (nothing when
    /// they were not traced), otherwise the block device's counters.
    /// `None` when neither was measured (tmpfs, an untraced FUSE mount, a
    /// file system without a block device).
    pub fn below_cache(&self, way: Way) -> Option<Below> {
        if let Some(f) = &self.fuse {
            let r = f.requests.as_ref()?;
            let o = match way {
                Way::Reads => &r.read,
                Way::Writes => &r.write,
            };
            return Some(Below {
                bytes: o.bytes as f64,
                traffic: r.read.bytes.saturating_add(r.write.bytes) as f64,
                witness: Witness::Daemon,
            });
        }
        let d = self.device.as_ref()?;
        let seen = |mib_s: f64| mib_s * self.elapsed_s * 1_048_576.0;
        let mib_s = match way {
            Way::Reads => d.read_mib_s,
            Way::Writes => d.write_mib_s,
        };
        Some(Below {
            bytes: seen(mib_s),
            traffic: seen(d.read_mib_s) + seen(d.write_mib_s),
            witness: Witness::Device(d.name.clone()),
        })
    }

    /// Where `files` metadata operations (stats, opens, listings) were
    /// served, from the FUSE requests traced while they ran: each that
    /// reached the daemon cost at least one request, so fewer requests
    /// than files means the kernel answered the rest from its caches.
    /// With the requests and their count; `None` when they were not
    /// traced.
    pub fn files_served(&self, files: u64) -> Option<(Served, u64)> {
        let n = self.fuse.as_ref()?.requests.as_ref()?.total();
        let below = Below {
            bytes: n as f64,
            traffic: n as f64,
            witness: Witness::Daemon,
        };
        Some((served(files, &below), n))
    }

    /// ioscale's threads running (its CPU time and the FUSE daemon's) or
    /// waiting for a CPU, on average: how many CPUs the workload wanted.
    pub fn cpus_wanted(&self) -> f64 {
        let daemon = self
            .fuse
            .as_ref()
            .and_then(|f| f.daemon.as_ref())
            .map_or(0.0, |d| d.cores);
        self.self_cores + daemon + self.self_cpu_wait.unwrap_or(0.0)
    }

    /// Whether the block device's busy time can be the phase's own: the
    /// device moved, in the phase's direction, at least
    /// [`OWN_DEVICE_SHARE`] of what the phase moved, and the phase's bytes
    /// are at least that share of the device's traffic in both
    /// directions. `phase` is the bytes the phase read and wrote. A phase
    /// that moved no data (a stat, a create of empty files) explains it
    /// only when the device's traffic was mostly in `way`, the direction
    /// of the phase's own requests (a stat reads, a create writes): a
    /// stat served from the inode cache while writeback of the files just
    /// created kept the device busy does not.
    pub fn device_explained(&self, phase: (u64, u64), way: Way) -> bool {
        let Some(d) = self.device.as_ref() else {
            return false;
        };
        let seen = |mib_s: f64| mib_s * self.elapsed_s * 1_048_576.0;
        let (rd, wr) = (seen(d.read_mib_s), seen(d.write_mib_s));
        let (pr, pw) = (phase.0 as f64, phase.1 as f64);
        if pr + pw <= 0.0 {
            let along = match way {
                Way::Reads => rd,
                Way::Writes => wr,
            };
            return along > 0.0 && along >= OWN_DEVICE_SHARE * (rd + wr);
        }
        let reached = (pr <= 0.0 || rd >= OWN_DEVICE_SHARE * pr)
            && (pw <= 0.0 || wr >= OWN_DEVICE_SHARE * pw);
        let own = (pr.min(rd) + pw.min(wr)) >= OWN_DEVICE_SHARE * (rd + wr);
        reached && own
    }
}

/// Where a phase that moved `phase_bytes` was served, given what was seen
/// below the cache. Too little seen is the cache whoever else used the
/// witness; enough seen counts only where the phase's bytes are at least
/// [`OWN_DEVICE_SHARE`] of the witness's traffic (else [`Served::Unclear`]).
pub fn served(phase_bytes: u64, below: &Below) -> Served {
    if phase_bytes == 0 {
        return Served::Storage;
    }
    let share = below.bytes / phase_bytes as f64;
    if share <= SERVED_BY_CACHE {
        return Served::Cache;
    }
    let own = (phase_bytes as f64).min(below.bytes) >= OWN_DEVICE_SHARE * below.traffic;
    if !own {
        Served::Unclear
    } else if share >= SERVED_BELOW {
        Served::Storage
    } else {
        Served::Partly
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DeviceUse, FuseRequests, FuseUse, OpRequests};

    fn fuse(read: u64, write: u64) -> Resources {
        Resources {
            elapsed_s: 1.0,
            fuse: Some(FuseUse {
                requests: Some(FuseRequests {
                    read: OpRequests {
                        count: read / 131_072,
                        bytes: read,
                        ..Default::default()
                    },
                    write: OpRequests {
                        count: write / 131_072,
                        bytes: write,
                        ..Default::default()
                    },
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn device(read_mib_s: f64, write_mib_s: f64) -> Resources {
        Resources {
            elapsed_s: 2.0,
            device: Some(DeviceUse {
                name: "vda".into(),
                util: 0.9,
                read_mib_s,
                write_mib_s,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_daemon_that_returned_every_byte_served_the_reads() {
        // 768 FUSE_READ of 4 MiB each: 3 GiB served by the daemon.
        let r = fuse(3 << 30, 0);
        let b = r.below_cache(Way::Reads).unwrap();
        assert_eq!(b.witness, Witness::Daemon);
        assert_eq!(served(3 << 30, &b), Served::Storage);
        // Readahead may fetch more than was asked: still the daemon.
        assert_eq!(served(2 << 30, &b), Served::Storage);
        // No FUSE_WRITE at all for 1 GiB written: the cache took them.
        let w = r.below_cache(Way::Writes).unwrap();
        assert_eq!(served(1 << 30, &w), Served::Cache);
        assert_eq!(served(0, &w), Served::Storage);
        let half = Below {
            bytes: 50.0,
            traffic: 50.0,
            witness: Witness::Daemon,
        };
        assert_eq!(served(100, &half), Served::Partly);
    }

    #[test]
    fn a_device_busy_with_other_work_proves_nothing_but_the_cache() {
        // The phase wrote 128 KiB while others wrote 200 MiB: unclear.
        let r = device(0.0, 100.0);
        let b = r.below_cache(Way::Writes).unwrap();
        assert_eq!(served(128 << 10, &b), Served::Unclear);
        // It read 128 KiB and the device read nothing: the cache.
        let b = r.below_cache(Way::Reads).unwrap();
        assert_eq!(served(128 << 10, &b), Served::Cache);
        // 200 MiB written by the phase, 200 MiB by the device: storage.
        assert_eq!(
            served(200 << 20, &r.below_cache(Way::Writes).unwrap()),
            Served::Storage
        );
    }

    #[test]
    fn an_untraced_fuse_mount_or_no_device_gives_no_evidence() {
        let mut r = fuse(1, 1);
        r.fuse.as_mut().unwrap().requests = None;
        assert_eq!(r.below_cache(Way::Reads), None);
        assert_eq!(Resources::default().below_cache(Way::Writes), None);
    }

    #[test]
    fn device_counters_count_bytes_over_the_window() {
        let r = device(8.0, 0.0);
        let b = r.below_cache(Way::Reads).unwrap();
        assert_eq!(b.witness, Witness::Device("vda".into()));
        assert_eq!(b.bytes, 16.0 * 1_048_576.0);
        assert!(b
            .describe(Way::Reads, |x| format!("{x}"))
            .contains("device vda read"));
    }

    #[test]
    fn the_device_is_the_phases_only_when_its_bytes_explain_the_traffic() {
        // 16 MiB read by the phase, 16 MiB read by the device: its own.
        let r = device(8.0, 0.0);
        assert!(r.device_explained((16 << 20, 0), Way::Reads));
        // The phase read 16 MiB from the cache while others wrote 200 MiB.
        let busy = device(0.0, 100.0);
        assert!(!busy.device_explained((16 << 20, 0), Way::Reads));
        // The phase's 16 MiB are a small part of 400 MiB the device moved.
        let crowd = device(200.0, 0.0);
        assert!(!crowd.device_explained((16 << 20, 0), Way::Reads));
        assert!(!Resources::default().device_explained((1, 1), Way::Reads));
        // A stat (no data) while the device only wrote: not the stat's.
        assert!(!busy.device_explained((0, 0), Way::Reads));
        // A create of empty files while the device wrote: its journal.
        assert!(busy.device_explained((0, 0), Way::Writes));
        assert!(r.device_explained((0, 0), Way::Reads));
        assert!(!device(0.0, 0.0).device_explained((0, 0), Way::Reads));
    }

    #[test]
    fn fewer_requests_than_files_is_the_cache() {
        let mut r = fuse(0, 0);
        let q = r.fuse.as_mut().unwrap().requests.as_mut().unwrap();
        q.other.insert("FUSE_GETATTR".into(), 3);
        assert_eq!(r.files_served(768), Some((Served::Cache, 3)));
        assert_eq!(r.files_served(3), Some((Served::Storage, 3)));
        assert_eq!(Resources::default().files_served(3), None);
    }

    #[test]
    fn cpus_wanted_adds_the_daemon_and_the_wait() {
        let mut r = fuse(0, 0);
        r.self_cores = 0.5;
        r.self_cpu_wait = Some(1.0);
        r.fuse.as_mut().unwrap().daemon = Some(crate::ProcessUse {
            pid: 1,
            name: "d".into(),
            cores: 0.25,
        });
        assert_eq!(r.cpus_wanted(), 1.75);
    }
}
