//! The one way ioscale writes a result file.
//!
//! Results are written to a hidden temporary file beside the target and
//! renamed over it, so a reader (or a resumed sweep) never sees half a
//! record, and an interrupted write leaves the previous file intact.

use std::path::Path;

use anyhow::Context;

/// Writes `bytes` to `p` atomically: a temporary file beside it, then rename.
pub fn write_atomic(p: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = p.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, p).with_context(|| format!("writing {}", p.display()))?;
    Ok(())
}
