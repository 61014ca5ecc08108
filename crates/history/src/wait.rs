//! Waiting for another process's lock on the history, and what ends the
//! wait early.
//!
//! Two runs that finish at once write one file: the second waits for the
//! first's transaction, up to [`BUSY_TIMEOUT`]. A run's own outputs are
//! written by then, so a Ctrl-C during that wait must not be ignored for
//! five seconds: the caller hands its signal flag to [`stop_waiting_on`],
//! and the wait ends at the next step once the flag is set (the write
//! fails, nothing of it is kept, and [`crate::Error`] says it was
//! interrupted).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How long a writer waits for another process's transaction.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The steps of the wait, in milliseconds (SQLite's own schedule for its
/// busy timeout); the last one repeats.
const STEPS_MS: [u64; 12] = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];

/// The flag that ends every wait, once set.
static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Ends every later wait for a lock as soon as `flag` is set (the
/// caller's SIGINT/SIGTERM flag). The first flag given stays.
pub fn stop_waiting_on(flag: &Arc<AtomicBool>) {
    let _ = STOP.set(Arc::clone(flag));
}

/// Whether the flag of [`stop_waiting_on`] is set.
pub fn stopped() -> bool {
    STOP.get().is_some_and(|f| f.load(Ordering::Relaxed))
}

/// The time waited before step `n`, in milliseconds.
fn waited_ms(n: usize) -> u64 {
    (0..n).map(|i| STEPS_MS[i.min(STEPS_MS.len() - 1)]).sum()
}

/// SQLite's busy handler: called with the number of times it was called
/// before for this lock; sleeps one step and says to retry, or says to
/// give up (the flag is set, or [`BUSY_TIMEOUT`] is spent).
pub(crate) fn busy(n: i32) -> bool {
    let n = usize::try_from(n).unwrap_or(0);
    if stopped() || u128::from(waited_ms(n)) >= BUSY_TIMEOUT.as_millis() {
        return false;
    }
    std::thread::sleep(Duration::from_millis(STEPS_MS[n.min(STEPS_MS.len() - 1)]));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schedule spends the timeout in about 60 steps, never a step
    /// longer than 100 ms (a set flag is seen within one step).
    #[test]
    fn the_wait_ends_after_the_timeout() {
        let last = (0..10_000).find(|&n| u128::from(waited_ms(n)) >= BUSY_TIMEOUT.as_millis());
        assert_eq!(last, Some(59));
        assert_eq!(waited_ms(12), 328);
        assert!(STEPS_MS.iter().all(|&s| s <= 100));
    }
}
