//! Compatibility front-ends: `ioscale ior` and `ioscale dd`.
//!
//! People arrive with IOR and dd command lines they already trust. Each
//! front-end parses its tool's syntax into a [`spec::RawWorkload`], lets
//! [`spec::RawWorkload::build`] check it like any native command line, runs
//! it on the same driver ([`crate::run::run`]) and engine, and renders the
//! result in the tool's own layout with an exporter from the report crate.
//! An option the front-end does not support is an error that names it and
//! the nearest native equivalent — never silently ignored.

pub mod dd;
pub mod ior;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use report::FsStats;

/// A command line the front-end refuses: printed with exit code 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// Now in C's `ctime` form in local time (`Mon Jun  1 19:21:30 2020`),
/// as IOR prints its time stamps.
pub fn ctime_now() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as libc::time_t)
        .unwrap_or(0);
    // SAFETY: `tm` is plain data that localtime_r fills in; both pointers
    // are valid for the duration of the call.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            return String::new();
        }
        tm
    };
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {:>2} {:02}:{:02}:{:02} {}",
        DAYS[tm.tm_wday.clamp(0, 6) as usize],
        MONTHS[tm.tm_mon.clamp(0, 11) as usize],
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        tm.tm_year + 1900
    )
}

/// Capacity of the file system holding `dir`, for IOR's `FS` line.
pub fn fs_stats(dir: &Path) -> Option<FsStats> {
    let c = CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a NUL-terminated path and `st` a writable statvfs.
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return None;
        }
        st
    };
    let frsize = st.f_frsize as u64;
    Some(FsStats {
        total_bytes: st.f_blocks as u64 * frsize,
        used_bytes: (st.f_blocks as u64).saturating_sub(st.f_bfree as u64) * frsize,
        inodes: st.f_files as u64,
        used_inodes: (st.f_files as u64).saturating_sub(st.f_ffree as u64),
    })
}

/// Prints the errors that stopped workers, as `ioscale run` does.
pub fn print_errors(prefix: &str, rs: &report::ResultSet) {
    for e in &rs.errors {
        let at = e
            .offset
            .map(|o| format!(" at offset {o}"))
            .unwrap_or_default();
        eprintln!(
            "{prefix}: error: worker {}: {} {}{at}: {}",
            e.worker, e.op, e.file, e.message
        );
    }
}
