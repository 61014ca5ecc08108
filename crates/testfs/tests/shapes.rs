//! The service shapes of `ioscale-testfs` (burst credits, a latency step,
//! K parallel slots), checked against the daemon's own interval log:
//! plain threads write through a real mount for a few seconds, and what
//! the file system says it served must follow the shape. Only bounds the
//! shape guarantees by construction are tight (a cap holds however slow
//! the machine); bounds that need the machine to keep up are loose.
//! The cases run one at a time (a lock), so they do not disturb each other.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ioscale-testfs");
const MIB: f64 = 1_048_576.0;
static SERIAL: Mutex<()> = Mutex::new(());

fn usable() -> bool {
    // SAFETY: geteuid has no failure mode.
    let ok = Path::new("/dev/fuse").exists() && unsafe { libc::geteuid() } == 0;
    if !ok {
        eprintln!("note: skipping: needs /dev/fuse and root");
    }
    ok
}

fn mounted(mp: &Path) -> bool {
    let want = mp.canonicalize().unwrap();
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(want.to_str().unwrap()))
}

/// One line of the interval log.
#[derive(Debug, Clone, Copy, Default)]
struct Tick {
    t: f64,
    bytes: u64,
    requests: u64,
    mean_us: u64,
    in_server: u64,
}

/// What a mount said: its interval lines and its summary line.
struct Log {
    ticks: Vec<Tick>,
    summary: String,
}

fn field(line: &str, key: &str) -> Option<f64> {
    line.split(' ')
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .map(|v| v.trim_end_matches('s').parse().unwrap())
}

fn parse(stderr: &str) -> Log {
    let ticks = stderr
        .lines()
        .filter(|l| l.starts_with("ioscale-testfs: interval "))
        .map(|l| Tick {
            t: field(l, "t").unwrap(),
            bytes: field(l, "bytes").unwrap() as u64,
            requests: field(l, "requests").unwrap() as u64,
            mean_us: field(l, "mean_us").unwrap() as u64,
            in_server: field(l, "in_server").unwrap_or(0.0) as u64,
        })
        .collect();
    let summary = stderr
        .lines()
        .find(|l| l.contains("unmounted;"))
        .unwrap_or_default()
        .to_string();
    Log { ticks, summary }
}

/// Mounts with `flags`, runs `workers` threads writing `xfer` bytes at a
/// time for `run`, unmounts and returns the daemon's log.
fn run(flags: &[&str], workers: usize, xfer: usize, run: Duration) -> Log {
    let src = tempfile::tempdir().unwrap();
    let mp = tempfile::tempdir().unwrap();
    let mut child: Child = Command::new(BIN)
        .args(flags)
        .arg(src.path())
        .arg(mp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !mounted(mp.path()) {
        assert!(child.try_wait().unwrap().is_none(), "testfs exited");
        assert!(t0.elapsed() < Duration::from_secs(20), "no mount in 20 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::scope(|s| {
        for w in 0..workers {
            let f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(mp.path().join(format!("w{w}")))
                .unwrap();
            s.spawn(move || {
                let buf = vec![7u8; xfer];
                let start = Instant::now();
                let mut off = 0u64;
                while start.elapsed() < run {
                    f.write_all_at(&buf, off).unwrap();
                    off = (off + xfer as u64) % (64 << 20);
                }
            });
        }
    });
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let log = parse(&String::from_utf8_lossy(&out.stderr));
    assert!(!log.ticks.is_empty(), "no interval lines");
    log
}

/// Rate (bytes/s) over the ticks whose interval lies in `[from, to]`.
fn rate(ticks: &[Tick], every: f64, from: f64, to: f64) -> (f64, usize) {
    let inside: Vec<&Tick> = ticks
        .iter()
        .filter(|k| k.t - every >= from - 1e-3 && k.t <= to + 1e-3)
        .collect();
    let bytes: u64 = inside.iter().map(|k| k.bytes).sum();
    (bytes as f64 / (every * inside.len() as f64), inside.len())
}

#[test]
fn burst_credit_serves_the_burst_then_the_baseline() {
    if !usable() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // 16 MiB/s while 16 MiB of credit last, refilled at 4 MiB/s: at full
    // speed the balance drains at 12 MiB/s and runs out after ~1.3 s.
    let log = run(
        &[
            "--bw",
            "16m",
            "--burst-credit",
            "16m",
            "--baseline",
            "4m",
            "--interval-log",
            "500ms",
        ],
        4,
        64 << 10,
        Duration::from_secs(5),
    );
    // "burst credit spent T s after the first data request, after B bytes"
    let s = &log.summary;
    let after = s
        .split("burst credit spent ")
        .nth(1)
        .unwrap_or_else(|| panic!("{s}"));
    let t: f64 = after.split(' ').next().unwrap().parse().unwrap();
    let b: f64 = after
        .split("request, after ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // Known answer by construction: what was served before the balance
    // ran out is the credit plus what the baseline refilled meanwhile
    // (within one request of 64 KiB per writer).
    let want = 16.0 * MIB + 4.0 * MIB * t;
    assert!(
        (b - want).abs() <= 4.0 * 65536.0 + 1.0,
        "{b} vs {want}: {s}"
    );
    // The burst never passes the cap; it is well above the baseline.
    let every = 0.5;
    for k in log.ticks.iter().filter(|k| k.t <= t) {
        assert!(
            k.bytes as f64 / every <= 16.0 * MIB * 1.1 + 65536.0 / every,
            "{k:?}"
        );
    }
    let (burst, n) = rate(&log.ticks, every, 0.0, t);
    assert!(
        n >= 1 && burst > 2.0 * 4.0 * MIB,
        "burst {burst} over {n} ({t} s)"
    );
    // After it, the baseline within 10 %, until the writers stopped.
    let (base, n) = rate(&log.ticks, every, t + every, 4.5);
    assert!(n >= 4, "{:?}", log.ticks);
    assert!(
        (base / (4.0 * MIB) - 1.0).abs() <= 0.1,
        "baseline {base} over {n}"
    );
    eprintln!(
        "burst {:.1} MiB/s, spent at {t:.2} s after {:.1} MiB, baseline {:.2} MiB/s",
        burst / MIB,
        b / MIB,
        base / MIB
    );
}

#[test]
fn latency_steps_up_at_its_time() {
    if !usable() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let every = 0.25;
    let log = run(
        &[
            "--delay",
            "2ms",
            "--step-at",
            "1s",
            "--step-delay",
            "20ms",
            "--interval-log",
            "250ms",
        ],
        2,
        4096,
        Duration::from_millis(2500),
    );
    let mean = |from: f64, to: f64| {
        let ks: Vec<&Tick> = log
            .ticks
            .iter()
            .filter(|k| k.t - every >= from - 1e-3 && k.t <= to + 1e-3 && k.requests > 0)
            .collect();
        let reqs: u64 = ks.iter().map(|k| k.requests).sum();
        let us: u64 = ks.iter().map(|k| k.mean_us * k.requests).sum();
        (us as f64 / reqs.max(1) as f64, ks.len())
    };
    let (before, nb) = mean(0.0, 1.0);
    let (after, na) = mean(1.25, 2.25);
    // A delay is a minimum service time: at least 2 ms, then at least 20.
    assert!(
        nb >= 3 && (2000.0..10_000.0).contains(&before),
        "{before} over {nb}"
    );
    assert!(
        na >= 3 && (20_000.0..100_000.0).contains(&after),
        "{after} over {na}"
    );
    // The first interval whose requests took over 11 ms on average ends
    // within one interval after the step.
    let first = log.ticks.iter().find(|k| k.mean_us > 11_000).unwrap();
    assert!(
        first.t > 1.0 && first.t <= 1.0 + every + 0.05,
        "{:?}",
        log.ticks
    );
}

#[test]
fn k_slots_serve_k_requests_at_once_and_queue_the_rest() {
    if !usable() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let every = 0.5;
    let mut rates = Vec::new();
    for k in [2u64, 8] {
        let ks = k.to_string();
        let log = run(
            &[
                "--slots",
                &ks,
                "--service",
                "20ms",
                "--interval-log",
                "500ms",
            ],
            8,
            4096,
            Duration::from_secs(2),
        );
        // The slots cap: K requests per 20 ms, in every interval.
        let cap = k as f64 * every / 0.02;
        let full: Vec<&Tick> = log.ticks.iter().filter(|t| t.t <= 2.0 + 1e-3).collect();
        for t in &full {
            assert!(t.requests as f64 <= cap + k as f64, "K={k}: {t:?}");
        }
        let reqs: u64 = full.iter().map(|t| t.requests).sum();
        let per_s = reqs as f64 / (every * full.len() as f64);
        rates.push(per_s);
        // Eight writers for K slots: each waits for the others ahead of it.
        let mean_us: u64 = full.iter().map(|t| t.mean_us * t.requests).sum::<u64>() / reqs.max(1);
        let queue = 8.0 / k as f64 * 20_000.0;
        assert!(
            mean_us as f64 >= 0.75 * queue,
            "K={k}: mean {mean_us} µs, queue {queue}"
        );
        if k == 2 {
            assert!(per_s >= 0.8 * k as f64 / 0.02, "K=2: {per_s}/s");
            assert!(
                full.iter().any(|t| t.in_server > k),
                "none waited: {:?}",
                log.ticks
            );
        }
        eprintln!("K={k}: {per_s:.0} requests/s, mean {mean_us} µs in the file system");
    }
    assert!(rates[1] >= 2.5 * rates[0], "{rates:?}");
}
