//! Waits that a stop flag (set by the SIGINT/SIGTERM handler) cuts short,
//! and deadlines that cannot overflow.
//!
//! Every sleep in ioscale — smallfile's cleanup delay, IOR's `-d` and `-D`,
//! mdtest's `-W`, stonewall and MPI waits — sleeps in slices of at most
//! [`SLICE`] and checks the flag between them, so a signal ends it within
//! one slice. A duration too large for `Instant + Duration` (2^64−1 seconds)
//! means "no deadline", never a panic.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The longest single sleep between two looks at the stop flag.
pub const SLICE: Duration = Duration::from_millis(20);

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The time was up.
    Elapsed,
    /// The stop flag was set.
    Stopped,
}

/// `now + d`, or `None` ("never") when that is past what an [`Instant`]
/// can hold.
pub fn deadline_after(now: Instant, d: Duration) -> Option<Instant> {
    now.checked_add(d)
}

/// A [`Duration`] of `secs` seconds from a float, saturating: NaN and
/// negatives are zero, and anything past [`Duration::MAX`] is
/// [`Duration::MAX`].
pub fn duration_from_secs_f64(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        Duration::ZERO
    } else {
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
    }
}

/// Sleeps until `deadline` (`None`: until stopped), or until `stop` is set.
pub fn sleep_until_or_stop(deadline: Option<Instant>, stop: &AtomicBool) -> Waited {
    loop {
        if stop.load(Ordering::Relaxed) {
            return Waited::Stopped;
        }
        let slice = match deadline {
            None => SLICE,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Waited::Elapsed;
                }
                left.min(SLICE)
            }
        };
        std::thread::sleep(slice);
    }
}

/// Sleeps for `d` (any [`Duration`], [`Duration::MAX`] included), or until
/// `stop` is set.
pub fn sleep_or_stop(d: Duration, stop: &AtomicBool) -> Waited {
    sleep_until_or_stop(deadline_after(Instant::now(), d), stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_durations_do_not_overflow() {
        let now = Instant::now();
        assert_eq!(deadline_after(now, Duration::MAX), None);
        assert_eq!(deadline_after(now, Duration::from_secs(u64::MAX)), None);
        assert!(deadline_after(now, Duration::from_secs(1)).is_some());
        assert_eq!(duration_from_secs_f64(1e20), Duration::MAX);
        assert_eq!(duration_from_secs_f64(f64::INFINITY), Duration::MAX);
        assert_eq!(duration_from_secs_f64(f64::NAN), Duration::ZERO);
        assert_eq!(duration_from_secs_f64(-3.0), Duration::ZERO);
        assert_eq!(duration_from_secs_f64(1.5), Duration::from_millis(1500));
    }

    #[test]
    fn zero_and_past_deadlines_return_at_once_and_a_set_flag_wins() {
        let stop = AtomicBool::new(false);
        assert_eq!(sleep_or_stop(Duration::ZERO, &stop), Waited::Elapsed);
        assert_eq!(
            sleep_until_or_stop(Some(Instant::now()), &stop),
            Waited::Elapsed
        );
        stop.store(true, Ordering::Relaxed);
        assert_eq!(sleep_or_stop(Duration::MAX, &stop), Waited::Stopped);
        assert_eq!(sleep_until_or_stop(None, &stop), Waited::Stopped);
    }
}
