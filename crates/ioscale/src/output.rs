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

/// Saves an interrupted run's record (`--json`, `--csv`) before its files
/// are removed: a second Ctrl-C during a long cleanup then cuts the
/// cleanup short, never the record. `saved` tells the caller not to
/// write them again.
pub struct EarlySave<'a> {
    json: Option<&'a Path>,
    csv: Option<&'a Path>,
    /// What the cleanup removes, for the message ("the tree", "the files").
    what: &'static str,
    /// The record was written here.
    pub saved: bool,
}

impl<'a> EarlySave<'a> {
    /// For the outputs `json` and `csv` of a run whose cleanup removes
    /// `what`.
    pub fn new(json: Option<&'a Path>, csv: Option<&'a Path>, what: &'static str) -> Self {
        EarlySave {
            json,
            csv,
            what,
            saved: false,
        }
    }

    /// Writes the record and says that the cleanup starts.
    pub fn save(&mut self, rs: &report::ResultSet) {
        for (p, kind) in [
            (self.json, report::ExportType::Json),
            (self.csv, report::ExportType::Csv),
        ] {
            if let Some(p) = p {
                match kind.exporter().render(rs) {
                    Ok(bytes) => {
                        if let Err(e) = write_atomic(p, &bytes) {
                            eprintln!("ioscale: error: {e:#}");
                        }
                    }
                    Err(e) => eprintln!("ioscale: error: {e:#}"),
                }
            }
        }
        self.saved = true;
        eprintln!(
            "ioscale: interrupted: the record is saved; removing {w} now \
             (a second Ctrl-C stops that and leaves {w}; \
             `ioscale clean TARGET` removes it)",
            w = self.what
        );
    }
}
