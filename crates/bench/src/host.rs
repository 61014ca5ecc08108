//! Facts about the machine and the target file system.
//!
//! A figure without its context is not comparable: the same command on ext4
//! and on NFS, or on 2 and on 64 CPUs, means different things. These facts
//! go into every JSON record and decide the page-cache warning.

use std::path::Path;

use report::HostInfo;

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Physical memory in bytes, from /proc/meminfo.
pub fn mem_total() -> u64 {
    meminfo("MemTotal:")
}

/// Memory the kernel estimates new work can have without swapping
/// (`MemAvailable`), bytes; 0 when unknown.
pub fn mem_available() -> u64 {
    meminfo("MemAvailable:")
}

fn meminfo(key: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    text.lines()
        .find_map(|l| {
            let rest = l.strip_prefix(key)?;
            let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
            kb.checked_mul(1024)
        })
        .unwrap_or(0)
}

/// Online CPUs.
pub fn cpus() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// Undoes the octal escapes /proc/self/mountinfo uses for spaces and such.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() {
            let d = &b[i + 1..i + 4];
            if d.iter().all(|c| (b'0'..=b'7').contains(c)) {
                let v = (d[0] - b'0') as u32 * 64 + (d[1] - b'0') as u32 * 8 + (d[2] - b'0') as u32;
                if let Ok(v) = u8::try_from(v) {
                    out.push(v);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount holding `path`: (mount point, fs type, source, options).
pub fn mount_of(path: &Path) -> Option<(String, String, String, String)> {
    let canon = std::fs::canonicalize(path).ok()?;
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<(usize, (String, String, String, String))> = None;
    for line in text.lines() {
        let (left, right) = line.split_once(" - ")?;
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if l.len() < 6 || r.len() < 3 {
            continue;
        }
        let mp = unescape(l[4]);
        if !canon.starts_with(&mp) {
            continue;
        }
        let len = mp.len();
        // Later lines win ties: they are mounted on top.
        if best.as_ref().is_none_or(|(b, _)| len >= *b) {
            let opts = format!("{},{}", l[5], r[2]);
            best = Some((len, (mp, r[0].to_string(), unescape(r[1]), opts)));
        }
    }
    best.map(|(_, v)| v)
}

/// Collects the host facts for a run on `target`.
pub fn collect(target: &Path) -> HostInfo {
    let (mount_point, fs_type, fs_source, mount_options) = mount_of(target).unwrap_or_default();
    HostInfo {
        hostname: read_trim("/proc/sys/kernel/hostname"),
        kernel: read_trim("/proc/sys/kernel/osrelease"),
        cpus: cpus(),
        mem_bytes: mem_total(),
        target: std::fs::canonicalize(target)
            .unwrap_or_else(|_| target.to_path_buf())
            .display()
            .to_string(),
        mount_point,
        fs_type,
        fs_source,
        mount_options,
        cluster: None,
    }
}

/// The CPU model: `model name` of /proc/cpuinfo (x86), or the line ARM
/// and others name it by; empty when unknown. A fact of the history's
/// host print (the record's host facts have no CPU model).
pub fn cpu_model() -> String {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    ["model name", "Model", "cpu model", "Processor"]
        .iter()
        .find_map(|key| {
            text.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == *key && !v.trim().is_empty()).then(|| v.trim().to_string())
            })
        })
        .unwrap_or_default()
}

/// The block device behind mount source `source` (`/dev/vda1`,
/// `/dev/mapper/x`, `/dev/loop3`), as sysfs names it: its vendor and
/// model, a loop device's backing file, a device-mapper name, or else its
/// driver; empty for a source that is no block device (tmpfs, an NFS
/// export). A partition is named by its disk.
pub fn device_model(source: &str) -> String {
    let Some(dev) = source
        .starts_with("/dev/")
        .then(|| std::fs::canonicalize(source).ok())
        .flatten()
    else {
        return String::new();
    };
    let name = dev
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let Ok(mut sys) = std::fs::canonicalize(Path::new("/sys/class/block").join(&name)) else {
        return String::new();
    };
    if sys.join("partition").exists() {
        sys.pop();
    }
    let read = |p: &str| read_trim(&sys.join(p).to_string_lossy());
    let backing = read("loop/backing_file");
    if !backing.is_empty() {
        return format!("loop on {backing}");
    }
    let dm = read("dm/name");
    if !dm.is_empty() {
        return format!("device-mapper {dm}");
    }
    let vm = [read("device/vendor"), read("device/model")]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if !read("device/model").is_empty() {
        return vm;
    }
    std::fs::read_link(sys.join("device/driver"))
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .map(|d| {
            if vm.is_empty() {
                d
            } else {
                format!("{d} ({vm})")
            }
        })
        .unwrap_or(vm)
}

/// Size in bytes of the file system holding `path` (statvfs); `None`
/// when it cannot be read.
pub fn fs_size(path: &Path) -> Option<u64> {
    fs_capacity(path).map(|c| c.total_bytes)
}

/// The capacity of a file system: what IOR's and mdtest's `FS` line
/// print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsCapacity {
    /// Size in bytes.
    pub total_bytes: u64,
    /// Bytes in use.
    pub used_bytes: u64,
    /// Inodes in all.
    pub inodes: u64,
    /// Inodes in use.
    pub used_inodes: u64,
}

/// The capacity of the file system holding `path` (statvfs); `None` when
/// it cannot be read.
pub fn fs_capacity(path: &Path) -> Option<FsCapacity> {
    let st = engine::sys::statvfs(path).ok()?;
    let (blocks, free, frsize) = (st.f_blocks as u64, st.f_bfree as u64, st.f_frsize as u64);
    Some(FsCapacity {
        total_bytes: blocks.checked_mul(frsize)?,
        used_bytes: blocks.saturating_sub(free).saturating_mul(frsize),
        inodes: st.f_files as u64,
        used_inodes: (st.f_files as u64).saturating_sub(st.f_ffree as u64),
    })
}

/// Now as RFC 3339 UTC to the second (`2026-11-22T03:04:05Z`).
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Seconds since the Unix epoch of a time stamp in [`now_rfc3339`]'s
/// form (smallfile's JSON gives its start time so); `None` when `text`
/// is not one.
pub fn rfc3339_epoch_s(text: &str) -> Option<f64> {
    let t: jiff::Timestamp = text.parse().ok()?;
    Some(t.as_millisecond() as f64 / 1e3)
}

/// Now in local time (the `TZ` variable, else the system's zone), in the
/// strftime `format`: the front-ends print their tools' time stamps with
/// it (`%a %b %e %H:%M:%S %Y` is C's `ctime`, as IOR prints).
pub fn local_now(format: &str) -> String {
    jiff::Zoned::now().strftime(format).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_of_root_is_found() {
        let (mp, ty, _, _) = mount_of(Path::new("/")).unwrap();
        assert_eq!(mp, "/");
        assert!(!ty.is_empty());
    }

    /// This machine's disk and CPU are named; a source that is not a
    /// device names none.
    #[test]
    fn device_and_cpu_facts() {
        assert!(!cpu_model().is_empty());
        assert_eq!(device_model("tmpfs"), "");
        assert_eq!(device_model("/dev/does-not-exist"), "");
        let (_, _, src, _) = mount_of(Path::new("/")).unwrap();
        if src.starts_with("/dev/") {
            assert!(!device_model(&src).is_empty(), "{src}");
        }
        assert!(fs_size(Path::new("/")).unwrap() > 0);
        assert_eq!(fs_size(Path::new("/no/such/dir")), None);
    }

    #[test]
    fn unescape_space() {
        assert_eq!(unescape("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape("/plain"), "/plain");
    }

    #[test]
    fn rfc3339_shape() {
        let s = now_rfc3339();
        assert_eq!(s.len(), 20);
        assert!(s.starts_with("20"));
        assert!(s.ends_with('Z'));
    }

    #[test]
    fn local_time_in_ctimes_and_mdtests_shapes() {
        // ctime: "Mon Jun  1 19:21:30 2020", 24 characters, day space-padded.
        let c = local_now("%a %b %e %H:%M:%S %Y");
        assert_eq!(c.len(), 24, "{c}");
        assert_eq!(c.as_bytes()[3], b' ');
        assert!(c[8..10].trim().parse::<u32>().is_ok(), "{c}");
        // mdtest: "06/01/2020 19:21:30".
        let m = local_now("%m/%d/%Y %H:%M:%S");
        assert_eq!(m.len(), 19, "{m}");
        assert_eq!(&m[2..3], "/");
        // The same instant's year in UTC and local time differ by at most one.
        let y: i32 = m[6..10].parse().unwrap();
        let u: i32 = now_rfc3339()[..4].parse().unwrap();
        assert!((y - u).abs() <= 1);
    }

    /// The capacity agrees with coreutils' `stat -f` on the same file
    /// system (sizes and inode counts exactly; what is in use within what
    /// other processes may write between the two calls), and a path
    /// that does not exist has none.
    #[test]
    fn capacity_agrees_with_stat_f() {
        let dir = env!("CARGO_MANIFEST_DIR");
        let out = std::process::Command::new("stat")
            .args(["-f", "-c", "%b %S %f %c %d", dir])
            .output()
            .unwrap();
        let v: Vec<u64> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        let c = fs_capacity(Path::new(dir)).unwrap();
        assert_eq!(c.total_bytes, v[0] * v[1]);
        assert_eq!(c.inodes, v[3]);
        let used = (v[0] - v[2]) * v[1];
        assert!(c.used_bytes.abs_diff(used) < 1 << 30, "{c:?} vs {v:?}");
        assert!(
            c.used_inodes.abs_diff(v[3] - v[4]) < 100_000,
            "{c:?} vs {v:?}"
        );
        assert_eq!(fs_size(Path::new(dir)), Some(c.total_bytes));
        assert!(fs_capacity(Path::new("/nonexistent/ioscale")).is_none());
    }
}
