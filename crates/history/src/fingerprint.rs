//! Fingerprints of the machine and the target a run measured.
//!
//! A figure is comparable with an earlier one only when both ran on the
//! same kind of thing: a kernel update, a new instance type or another
//! mount option can move a figure as much as the change under test. Each
//! row of the history names a host print (name, kernel, CPU model and
//! count, memory) and a target print (path, file-system type, source,
//! device model, mount options, size). A trend marks where they change,
//! and a comparison says what changed beside its verdict.
//!
//! The facts come from the caller (the record's own host facts, and what
//! the binary read of this machine when it recorded the run): this module
//! reads nothing. A fact the caller did not know (an imported record made
//! elsewhere has no CPU model) is empty, and "unknown" is never counted as
//! a change.

use serde::{Deserialize, Serialize};

use crate::key::fnv1a;

/// The machine a run ran on (rank 0's, under MPI).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPrint {
    /// Host name.
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// CPU model (`model name` of /proc/cpuinfo); empty when not known.
    pub cpu_model: String,
    /// Online CPUs; 0 when not known.
    pub cpus: u32,
    /// Physical memory in bytes; 0 when not known.
    pub mem_bytes: u64,
}

/// The file system a run measured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetPrint {
    /// The tested directory.
    pub path: String,
    /// File-system type (ext4, xfs, tmpfs, nfs4, fuse.*).
    pub fs_type: String,
    /// Mount source (device or server:export).
    pub fs_source: String,
    /// The block device's model (vendor and model from sysfs, or a loop
    /// device's backing file); empty when there is none or it is unknown.
    pub device_model: String,
    /// Mount options.
    pub mount_options: String,
    /// Size of the file system in bytes; `None` when not known.
    pub size_bytes: Option<u64>,
}

/// One GiB: memory is compared to the GiB, so that a kernel that keeps a
/// few more pages for itself is not a new machine.
const GIB: u64 = 1 << 30;

/// `bytes` to the nearest GiB (no overflow at `u64::MAX`: a record may
/// carry any value).
fn gib(bytes: u64) -> u64 {
    bytes / GIB + u64::from(bytes % GIB >= GIB / 2)
}

fn digest(prefix: &str, fields: &[String]) -> String {
    format!("{prefix}{:016x}", fnv1a(fields.join("\u{1f}").as_bytes()))
}

impl HostPrint {
    /// `h-` and 16 hexadecimal digits: the same for the same facts.
    pub fn fingerprint(&self) -> String {
        digest(
            "h-",
            &[
                self.hostname.clone(),
                self.kernel.clone(),
                self.cpu_model.clone(),
                self.cpus.to_string(),
                gib(self.mem_bytes).to_string(),
            ],
        )
    }

    /// What differs from `before`, as `fact before → now`, for the facts
    /// both know.
    pub fn changes_from(&self, before: &HostPrint) -> Vec<String> {
        let mut out = Vec::new();
        changed(&mut out, "host", &before.hostname, &self.hostname);
        changed(&mut out, "kernel", &before.kernel, &self.kernel);
        changed(&mut out, "CPU", &before.cpu_model, &self.cpu_model);
        if before.cpus > 0 && self.cpus > 0 && before.cpus != self.cpus {
            out.push(format!("CPUs {} → {}", before.cpus, self.cpus));
        }
        if before.mem_bytes > 0
            && self.mem_bytes > 0
            && gib(before.mem_bytes) != gib(self.mem_bytes)
        {
            out.push(format!(
                "memory {} GiB → {} GiB",
                gib(before.mem_bytes),
                gib(self.mem_bytes)
            ));
        }
        out
    }
}

impl TargetPrint {
    /// `t-` and 16 hexadecimal digits: the same for the same facts.
    pub fn fingerprint(&self) -> String {
        digest(
            "t-",
            &[
                self.path.clone(),
                self.fs_type.clone(),
                self.fs_source.clone(),
                self.device_model.clone(),
                self.mount_options.clone(),
                self.size_bytes.map(|s| s.to_string()).unwrap_or_default(),
            ],
        )
    }

    /// What differs from `before`, as `fact before → now`, for the facts
    /// both know.
    pub fn changes_from(&self, before: &TargetPrint) -> Vec<String> {
        let mut out = Vec::new();
        changed(&mut out, "path", &before.path, &self.path);
        changed(&mut out, "file system", &before.fs_type, &self.fs_type);
        changed(&mut out, "source", &before.fs_source, &self.fs_source);
        changed(&mut out, "device", &before.device_model, &self.device_model);
        changed(
            &mut out,
            "mount options",
            &before.mount_options,
            &self.mount_options,
        );
        if let (Some(a), Some(b)) = (before.size_bytes, self.size_bytes) {
            if a != b {
                out.push(format!(
                    "size {} → {}",
                    spec::format_size(a),
                    spec::format_size(b)
                ));
            }
        }
        out
    }
}

fn changed(out: &mut Vec<String>, what: &str, a: &str, b: &str) {
    if !a.is_empty() && !b.is_empty() && a != b {
        out.push(format!("{what} {a} → {b}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostPrint {
        HostPrint {
            hostname: "n1".into(),
            kernel: "6.1.0-9".into(),
            cpu_model: "Xeon".into(),
            cpus: 2,
            mem_bytes: 24 * GIB - (300 << 10),
        }
    }

    /// The same facts give the same print; a kernel update gives another
    /// and is named; memory that moved by a few pages is the same machine.
    #[test]
    fn a_kernel_update_is_a_change_and_a_few_pages_are_not() {
        let a = host();
        let mut b = host();
        b.mem_bytes += 4096 * 20;
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert!(b.changes_from(&a).is_empty());
        b.kernel = "6.1.0-10".into();
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_eq!(b.changes_from(&a), vec!["kernel 6.1.0-9 → 6.1.0-10"]);
        assert!(a.fingerprint().starts_with("h-") && a.fingerprint().len() == 18);
    }

    /// A fact one side does not know (an imported record) is not a change,
    /// though the prints differ.
    #[test]
    fn unknown_is_not_a_change() {
        let a = host();
        let b = HostPrint {
            cpu_model: String::new(),
            ..host()
        };
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert!(b.changes_from(&a).is_empty());
        let t = TargetPrint {
            path: "/mnt/fs".into(),
            fs_type: "ext4".into(),
            mount_options: "rw,relatime".into(),
            size_bytes: Some(1 << 30),
            ..Default::default()
        };
        let u = TargetPrint {
            mount_options: "rw,noatime".into(),
            size_bytes: None,
            ..t.clone()
        };
        assert_eq!(
            u.changes_from(&t),
            vec!["mount options rw,relatime → rw,noatime"]
        );
    }
}
