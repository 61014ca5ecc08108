//! A saved record read back (`report`, `compare`, `sweep --resume`): one
//! bounded read of a regular file, below the commands that use it.

use std::path::Path;

use analysis::Loaded;

/// Reads the record `p` (given as `what`: `record`, `--json`): only a
/// regular file of at most [`safefs::MAX_RECORD_BYTES`], refused before
/// any read otherwise (a device, a FIFO, a directory: no blocking, no
/// endless read), and parsed as a stream, so memory is the parsed
/// record's, not the text's plus a tree of JSON values.
pub(crate) fn load_record(what: &str, p: &Path) -> Result<Loaded, String> {
    let limit = safefs::MAX_RECORD_BYTES;
    let (file, _) = safefs::open_bounded(what, p, limit).map_err(|e| match &e.kind {
        safefs::FlagErrorKind::Io(io) => format!("{what}: cannot read {}: {io}", p.display()),
        safefs::FlagErrorKind::Refused(_) => e.to_string(),
    })?;
    analysis::render::load_from(file.into_inner(), limit)
        .map_err(|e| format!("{}: {e}", p.display()))
}
