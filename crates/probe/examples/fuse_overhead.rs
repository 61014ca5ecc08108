//! What tracing the FUSE requests costs: a write phase of small `pwrite`s
//! on a FUSE mount, measured with the probe, alternately with the request
//! tracer (as the sweep runs it) and without (`IOSCALE_TRACEFS` pointed at
//! nothing), in interleaved pairs. Prints each pair's ratios (traced ÷
//! untraced) of this process's CPU seconds per write and of the phase's
//! duration as the probe measures them (what a sweep reports), then their
//! medians, and what tracing adds outside the phase (creating and removing
//! the trace instance).
//!
//! Usage (as root, on a mounted FUSE file system):
//! `cargo run --release -p ioscale-probe --example fuse_overhead -- DIR [WRITES] [XFER] [PAIRS]`

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use probe::Probe;

/// CPU seconds (user + system) of this process so far.
fn cpu_s() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) }, 0);
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// What one phase measured.
struct Phase {
    /// This process's CPU seconds inside the phase, as the probe reports
    /// them (the reader thread's included).
    cpu_in: f64,
    /// The phase's duration as the probe reports it.
    wall_in: f64,
    /// CPU and wall seconds from before `Probe::start` to after
    /// `Probe::finish`: the phase plus setting up and removing the trace
    /// instance.
    cpu_all: f64,
    wall_all: f64,
    requests: Option<u64>,
}

/// One write phase of `n` writes of `xfer` bytes.
fn phase(dir: &Path, n: u64, xfer: usize, traced: bool) -> Phase {
    if traced {
        std::env::remove_var("IOSCALE_TRACEFS");
    } else {
        std::env::set_var("IOSCALE_TRACEFS", "/nonexistent");
    }
    let path = dir.join("fuse-overhead.dat");
    let f = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&path)
        .expect("creating the data file");
    let buf = vec![0x5au8; xfer];
    let (c0, t0) = (cpu_s(), Instant::now());
    let p = Probe::start(dir);
    for i in 0..n {
        f.write_all_at(&buf, i * xfer as u64).expect("writing");
    }
    let r = p.finish();
    let (cpu_all, wall_all) = (cpu_s() - c0, t0.elapsed().as_secs_f64());
    drop(f);
    let _ = std::fs::remove_file(&path);
    let fuse = r.fuse.expect("DIR is not on a FUSE file system");
    if traced {
        assert!(
            fuse.requests.is_some(),
            "not traced: {:?}",
            fuse.requests_note
        );
    }
    Phase {
        cpu_in: r.self_cores * r.elapsed_s,
        wall_in: r.elapsed_s,
        cpu_all,
        wall_all,
        requests: fuse.requests.map(|q| q.write.count),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(
        a.first()
            .expect("usage: fuse_overhead DIR [WRITES] [XFER] [PAIRS]"),
    );
    let n: u64 = a.get(1).map_or(20_000, |s| s.parse().expect("WRITES"));
    let xfer: usize = a.get(2).map_or(4096, |s| s.parse().expect("XFER (bytes)"));
    let pairs: usize = a.get(3).map_or(5, |s| s.parse().expect("PAIRS"));
    // A warm-up phase of each kind, not counted.
    phase(&dir, n / 10, xfer, true);
    phase(&dir, n / 10, xfer, false);
    let (mut cpu, mut wall, mut set_cpu, mut set_wall) = (vec![], vec![], vec![], vec![]);
    println!("pair  cpu µs/write untraced  traced  cpu ratio  duration ratio  requests");
    for i in 0..pairs {
        // Alternate which goes first, so drift favours neither.
        let (t, u) = if i % 2 == 0 {
            let t = phase(&dir, n, xfer, true);
            (t, phase(&dir, n, xfer, false))
        } else {
            let u = phase(&dir, n, xfer, false);
            (phase(&dir, n, xfer, true), u)
        };
        let rc = t.cpu_in / u.cpu_in;
        let rw = t.wall_in / u.wall_in;
        cpu.push(rc);
        wall.push(rw);
        // Outside the phase: what tracing added to setting up and ending it.
        set_cpu.push((t.cpu_all - t.cpu_in) - (u.cpu_all - u.cpu_in));
        set_wall.push((t.wall_all - t.wall_in) - (u.wall_all - u.wall_in));
        println!(
            "{:>4}  {:>21.2}  {:>6.2}  {:>9.3}  {:>14.3}  {}",
            i + 1,
            u.cpu_in / n as f64 * 1e6,
            t.cpu_in / n as f64 * 1e6,
            rc,
            rw,
            t.requests.unwrap_or(0)
        );
    }
    println!(
        "median of {pairs} pairs ({n} writes of {xfer} B), inside the phase: cpu ratio {:.3}, duration ratio {:.3}",
        median(cpu),
        median(wall)
    );
    println!(
        "outside the phase, tracing added per phase: {:.1} ms CPU, {:.0} ms wall (median)",
        median(set_cpu) * 1e3,
        median(set_wall) * 1e3
    );
}
