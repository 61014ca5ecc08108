//! The one way ioscale writes a result file.
//!
//! A regular file (or a new name) is written to a temporary file beside it
//! and renamed over it, so a reader (or a resumed sweep) never sees half a
//! record and an interrupted write leaves the previous file intact; a FIFO,
//! a character device (`/dev/null`) or `-` (standard output) is written
//! into, never replaced; anything else is refused (exit 2). See
//! `safefs::write_output`.

use std::path::Path;

/// Writes `bytes` to `p` (see the module docs).
pub fn write_atomic(p: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    safefs::write_output("output", p, bytes)?;
    Ok(())
}
