//! Interruptible sleeps at the u64 edge: a stop flag set by another thread
//! ends them; no duration overflows.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use safefs::{deadline_after, duration_from_secs_f64, sleep_or_stop, sleep_until_or_stop, Waited};

type Wait = dyn FnOnce(&AtomicBool) -> Waited + Send;

#[test]
fn u64_max_seconds_and_duration_max_end_on_the_flag() {
    let cases: Vec<Box<Wait>> = vec![
        Box::new(|s| sleep_or_stop(Duration::from_secs(u64::MAX), s)),
        Box::new(|s| sleep_or_stop(Duration::MAX, s)),
        Box::new(|s| sleep_or_stop(Duration::from_micros(u64::MAX), s)),
        Box::new(|s| sleep_or_stop(duration_from_secs_f64(1e20), s)),
        Box::new(|s| {
            sleep_until_or_stop(
                deadline_after(Instant::now(), Duration::from_secs(u64::MAX - 1)),
                s,
            )
        }),
        Box::new(|s| sleep_until_or_stop(None, s)),
        // smallfile's delay: usec per file × files, saturated.
        Box::new(|s| {
            sleep_or_stop(
                Duration::from_micros(3_000_000u64.saturating_mul(u64::MAX)),
                s,
            )
        }),
    ];
    // Each wait runs in a thread; the flag is set from this one. A wait
    // that ignored it fails the test after a generous hang guard (not a
    // timing assertion).
    for f in cases {
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        std::thread::spawn(move || tx.send(f(&s2)).unwrap());
        std::thread::sleep(Duration::from_millis(30));
        stop.store(true, Ordering::Relaxed);
        let w = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the sleep ignored the stop flag");
        assert_eq!(w, Waited::Stopped);
    }
}

#[test]
fn a_short_sleep_elapses_when_not_stopped() {
    let stop = AtomicBool::new(false);
    let t0 = Instant::now();
    assert_eq!(
        sleep_or_stop(Duration::from_millis(30), &stop),
        Waited::Elapsed
    );
    assert!(
        t0.elapsed() >= Duration::from_millis(30),
        "it slept the whole time"
    );
}
