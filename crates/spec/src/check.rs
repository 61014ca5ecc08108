//! The checks `ioscale run` ([`crate::RawWorkload::build`]) and
//! `ioscale meta` ([`crate::RawMeta::build`]) make alike: a target, at
//! least one operation, counts within their limits, a time limit that is
//! not zero.

use std::path::PathBuf;
use std::time::Duration;

use crate::workload::SpecError;

/// The most workers (threads × ranks) a run checks for.
pub(crate) const MAX_THREADS: u64 = 4_096;

/// The most repetitions.
const MAX_REPS: u64 = 100_000;

/// The directory to test, required; `hint` shows how to name it.
pub(crate) fn target(t: &Option<PathBuf>, hint: &'static str) -> Result<PathBuf, SpecError> {
    t.clone().ok_or(SpecError::Missing {
        flag: "TARGET",
        hint,
    })
}

/// At least one operation (`flag` is `--op` or `--ops`).
pub(crate) fn some_ops<T>(
    ops: &[T],
    flag: &'static str,
    hint: &'static str,
) -> Result<(), SpecError> {
    if ops.is_empty() {
        return Err(SpecError::Missing { flag, hint });
    }
    Ok(())
}

/// A count from 1 to `max` (`v` or `default`); `hint` says the limit.
pub(crate) fn count(
    flag: &'static str,
    v: Option<u64>,
    default: u64,
    max: u64,
    hint: impl FnOnce() -> String,
) -> Result<u64, SpecError> {
    let n = v.unwrap_or(default);
    if n == 0 {
        return Err(SpecError::Zero { flag });
    }
    if n > max {
        return Err(SpecError::range(flag, n.to_string(), hint()));
    }
    Ok(n)
}

/// `--threads`: 1 unless given, at most [`MAX_THREADS`].
pub(crate) fn threads(v: Option<u64>) -> Result<u64, SpecError> {
    count("--threads", v, 1, MAX_THREADS, || {
        format!("at most {MAX_THREADS}")
    })
}

/// `--reps`: 1 unless given, at most 100000.
pub(crate) fn reps(v: Option<u64>) -> Result<u64, SpecError> {
    count("--reps", v, 1, MAX_REPS, || format!("at most {MAX_REPS}"))
}

/// `--iodepth`: 1 unless given, at most `max`.
pub(crate) fn iodepth(v: Option<u64>, max: u64) -> Result<u64, SpecError> {
    count("--iodepth", v, 1, max, || format!("at most {max}"))
}

/// `--time`: not zero when given.
pub(crate) fn time_limit(t: Option<Duration>) -> Result<(), SpecError> {
    if t.is_some_and(|t| t.is_zero()) {
        return Err(SpecError::Zero { flag: "--time" });
    }
    Ok(())
}
