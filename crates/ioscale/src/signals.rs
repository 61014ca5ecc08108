//! The stop signals — SIGINT, SIGTERM and SIGHUP — for every command, in
//! one place: which one arrived first is recorded, so the exit code
//! follows it (130 for SIGINT and SIGTERM, 129 for SIGHUP: a contract).
//!
//! The first stop signal sets the stop flag the run checks at its next
//! boundary; the run keeps and writes what it measured, removes its files
//! and returns. Inside the program "interrupted" is exit code 130 (as the
//! driver library and the front-ends return it); [`settle`] turns it into
//! the code of the signal that came, once, just before the process exits.
//!
//! A second SIGINT or SIGTERM exits at once with 130 (a FUSE trace
//! instance in use is removed first): the user insists. A second SIGHUP
//! does not: a hang-up is delivered more than once by itself — the shell
//! passes it on to its jobs, then the kernel sends it to the terminal's
//! foreground group when the shell exits — and none of that is a request
//! to give up the record.
//!
//! A SIGHUP ignored when ioscale starts (`nohup`) stays ignored: the user
//! asked the run to outlive the terminal.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::Context;

/// The stop flag every command's run checks, made by [`install`].
static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();
/// The first stop signal received (0: none).
static FIRST: AtomicI32 = AtomicI32::new(0);
/// The exit code was settled (by rank 0's choice, for every rank).
static SETTLED: AtomicBool = AtomicBool::new(false);

/// The exit code a stop signal means: 129 for SIGHUP, 130 for SIGINT and
/// SIGTERM.
pub fn code_of(sig: i32) -> i32 {
    if sig == libc::SIGHUP {
        129
    } else {
        130
    }
}

/// The name of the first stop signal received, if one was.
pub fn name() -> Option<&'static str> {
    match FIRST.load(Ordering::SeqCst) {
        libc::SIGINT => Some("SIGINT"),
        libc::SIGTERM => Some("SIGTERM"),
        libc::SIGHUP => Some("SIGHUP"),
        _ => None,
    }
}

/// Whether a stop signal has arrived (once the handlers are in).
pub fn received() -> bool {
    FIRST.load(Ordering::SeqCst) != 0
}

/// The stop flag, when the handlers are in.
pub fn stop_flag() -> Option<&'static Arc<AtomicBool>> {
    STOP.get()
}

/// Installs the handlers (once per process; a later call returns the same
/// flag, so a signal that already came is not forgotten) and returns the
/// stop flag.
pub fn install() -> anyhow::Result<Arc<AtomicBool>> {
    if let Some(s) = STOP.get() {
        return Ok(Arc::clone(s));
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        if sig == libc::SIGHUP && ignored(sig) {
            continue;
        }
        let flag = Arc::clone(&stop);
        // SAFETY: the action stores into atomics and makes only
        // async-signal-safe calls (probe::remove_live_instances, _exit).
        unsafe {
            signal_hook::low_level::register(sig, move || {
                let first = FIRST.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
                flag.store(true, Ordering::SeqCst);
                if first.is_err() && sig != libc::SIGHUP {
                    probe::remove_live_instances();
                    signal_hook::low_level::exit(130);
                }
            })
        }
        .context("installing the signal handler")?;
    }
    let _ = STOP.set(Arc::clone(&stop));
    Ok(STOP.get().map(Arc::clone).unwrap_or(stop))
}

/// Whether `sig` is ignored now (as `nohup` leaves SIGHUP).
fn ignored(sig: i32) -> bool {
    // SAFETY: a zeroed sigaction is a valid value for the kernel to fill;
    // a null new action only reads the current one.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) };
    rc == 0 && old.sa_sigaction == libc::SIG_IGN
}

/// The exit code of a command that returned `code`, once a stop signal
/// may have come: the signal's code (129 or 130) when one arrived while
/// the handlers were in — during the I/O, or after it, until this call —
/// unless the command was refused (2: nothing ran). The record says
/// whether the measurement itself was cut short (`interrupted`); the exit
/// code says that a signal asked ioscale to stop. Settled once: later
/// calls return `code` unchanged (the other ranks take rank 0's).
pub fn settle(code: i32) -> i32 {
    if SETTLED.swap(true, Ordering::SeqCst) {
        return code;
    }
    match FIRST.load(Ordering::SeqCst) {
        0 => code,
        _ if code == 2 => code,
        sig => code_of(sig),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hangup_is_129_and_the_others_130() {
        assert_eq!(code_of(libc::SIGHUP), 129);
        assert_eq!(code_of(libc::SIGINT), 130);
        assert_eq!(code_of(libc::SIGTERM), 130);
    }
}
