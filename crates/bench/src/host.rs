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
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    text.lines()
        .find_map(|l| {
            let rest = l.strip_prefix("MemTotal:")?;
            let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
            Some(kb * 1024)
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

/// Now as RFC 3339 UTC (`2026-11-22T03:04:05Z`), without a date crate.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (Howard Hinnant's algorithm, public domain).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
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
}
