//! The edge of a finished `run` or `meta`: its errors, data-check
//! failures and warnings on standard error, its record in `--json` and
//! `--csv`, the chosen format on standard output, its notes last. The
//! front-ends and `sweep` word a run's errors with the same
//! [`error_lines`]. A sweep record, new (`sweep`) or saved (`report`),
//! goes to its files and standard output through [`Outputs`].

use std::io::Write;
use std::path::Path;

use analysis::render::{render_csv, render_json, render_text};
use analysis::SweepRecord;
use report::{ExportType, ResultSet};

use crate::args::Format;
use crate::exit::Exit;
use crate::output::{self, write_atomic};

/// The edge of a finished run, shared by `run` and `meta`: errors and
/// warnings to stderr, the record to `--json`/`--csv`, the chosen format to
/// stdout, notes last. Returns the run's exit code (at least 1 when a
/// record could not be written).
pub(crate) fn emit(
    outcome: &bench::run::Outcome,
    [json, csv, series_csv]: [Option<&Path>; 3],
    format: Format,
    quiet: bool,
) -> Exit {
    let rs = &outcome.results;
    for line in error_lines(&rs.errors) {
        eprintln!("ioscale: error: {line}");
    }
    // A failed data check is an error too: said on stderr even with -q.
    for p in &rs.phases {
        for m in p.verify.iter().flat_map(|v| &v.mismatches) {
            eprintln!(
                "ioscale: error: verify {} rep {}: {} at offset {}: data differs from what was written ({} bad byte(s))",
                p.op,
                report::shown_rep(p.rep),
                m.file,
                m.offset,
                m.bad_bytes
            );
        }
    }
    if format != Format::Text {
        for w in &rs.warnings {
            eprintln!("ioscale: warning: {w}");
        }
    }
    let mut write_err = None;
    if let Some(p) = json {
        if let Err(e) = write_output("--json", p, ExportType::Json, rs) {
            write_err = Some(e);
        }
    }
    if let Some(p) = csv {
        if let Err(e) = write_output("--csv", p, ExportType::Csv, rs) {
            write_err = Some(e);
        }
    }
    if let Some(p) = series_csv {
        let text = report::series_csv([(0, &rs.phases[..])]);
        if let Err(e) = output::write_named("--series-csv", p, text.as_bytes()) {
            write_err = Some(e);
        }
    }
    if !quiet {
        let kind = match format {
            Format::Text => ExportType::Text,
            Format::Json => ExportType::Json,
            Format::Csv => ExportType::Csv,
        };
        let bytes = kind.exporter().render(rs)?;
        let mut out = std::io::stdout().lock();
        // A closed pipe (ioscale … | head) is not worth a panic.
        let _ = out.write_all(&bytes);
        let _ = out.flush();
    }
    for n in &outcome.notes {
        eprintln!("ioscale: {n}");
    }
    if let Some(e) = write_err {
        eprintln!("ioscale: error: {e:#}");
        // A signal that ended the wait for a FIFO's reader is still an
        // interruption.
        let code = if output::interrupted() { 130 } else { 1 };
        return Ok(outcome.exit_code().max(code));
    }
    Ok(outcome.exit_code())
}

/// The error lines of a run: the first failure of each kind (errno) in
/// full — operation, file, offset — and, when many workers failed the same
/// way (64 workers out of descriptors), one line counting the others
/// instead of one line each. Every failure stays in the report and in the
/// JSON record's `errors[]`.
pub(crate) fn error_lines(errors: &[report::ErrorRecord]) -> Vec<String> {
    let mut shown: Vec<Option<i32>> = Vec::new();
    let mut lines = Vec::new();
    let mut more = 0usize;
    for e in errors {
        let kind = e.errno;
        if kind.is_some() && shown.contains(&kind) {
            more += 1;
            continue;
        }
        shown.push(kind);
        let at = e
            .offset
            .map(|o| format!(" at offset {o}"))
            .unwrap_or_default();
        lines.push(format!(
            "worker {}: {} {}{at}: {}",
            e.worker, e.op, e.file, e.message
        ));
    }
    if more > 0 {
        lines.push(format!(
            "{more} more failure(s) with the same error in other workers; all {} are listed in the report and in the JSON record's errors[]",
            errors.len()
        ));
    }
    lines
}

/// Renders a record and writes it atomically.
fn write_output(flag: &str, p: &Path, kind: ExportType, rs: &ResultSet) -> anyhow::Result<()> {
    let bytes = kind.exporter().render(rs)?;
    output::write_named(flag, p, &bytes)
}

/// Where a rendered sweep goes; shared by `sweep` and `report`.
pub struct Outputs<'a> {
    /// JSON record file.
    pub json: Option<&'a Path>,
    /// CSV file.
    pub csv: Option<&'a Path>,
    /// HTML report file.
    pub html: Option<&'a Path>,
    /// Chart directory.
    pub png: Option<&'a Path>,
    /// The points' per-interval series as CSV (`--series-csv`).
    pub series_csv: Option<&'a Path>,
    /// Phases of a point a signal cut short, by point index: not in the
    /// record, but their intervals are in `--series-csv`.
    pub cut: &'a [(usize, Vec<report::PhaseRecord>)],
    /// Standard output format.
    pub format: Format,
    /// No standard output.
    pub quiet: bool,
}

impl Outputs<'_> {
    /// Writes the files and standard output; false when a file failed.
    pub fn emit(&self, rec: &SweepRecord) -> bool {
        let mut ok = true;
        let put = |p: &Path, bytes: &[u8]| -> bool {
            match write_atomic(p, bytes) {
                Ok(()) => true,
                Err(e) => {
                    eprintln!("ioscale: error: {e:#}");
                    false
                }
            }
        };
        if let Some(p) = self.json {
            match render_json(rec) {
                Ok(b) => ok &= put(p, &b),
                Err(e) => {
                    eprintln!("ioscale: error: JSON: {e}");
                }
            }
        }
        if let Some(p) = self.csv {
            ok &= put(p, render_csv(rec).as_bytes());
        }
        if let Some(p) = self.html {
            ok &= put(p, charts::render_html(rec).as_bytes());
        }
        if let Some(p) = self.series_csv {
            let phases = rec
                .points
                .iter()
                .map(|p| (p.index, &p.result.phases[..]))
                .chain(self.cut.iter().map(|(i, ph)| (*i, &ph[..])));
            ok &= put(p, report::series_csv(phases).as_bytes());
        }
        if let Some(d) = self.png {
            if let Err(e) = std::fs::create_dir_all(d) {
                eprintln!("ioscale: error: --png {}: {e}", d.display());
                ok = false;
            } else {
                let r = charts::Rasteriser::new();
                if r.fonts() == 0 {
                    eprintln!(
                        "ioscale: warning: no system fonts found; PNG charts will have no labels (install fonts-dejavu-core)"
                    );
                }
                let lines = charts::charts_for(rec)
                    .into_iter()
                    .map(|c| (c.name, charts::svg::render(&c.chart)));
                let bars = charts::bars_for(rec)
                    .into_iter()
                    .map(|b| (b.name, charts::svg::render_bars(&b.bars)));
                let over_time = charts::overtime::over_time_svgs(rec);
                for (name, svg) in lines.chain(bars).chain(over_time) {
                    ok &= put(&d.join(format!("{name}.svg")), svg.as_bytes());
                    match r.png(&svg, 1.0) {
                        Ok(b) => ok &= put(&d.join(format!("{name}.png")), &b),
                        Err(e) => {
                            eprintln!("ioscale: error: {name}.png: {e}");
                            ok = false;
                        }
                    }
                }
            }
        }
        if !self.quiet {
            let bytes = match self.format {
                Format::Text => render_text(rec).into_bytes(),
                Format::Json => render_json(rec).unwrap_or_default(),
                Format::Csv => render_csv(rec).into_bytes(),
            };
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(&bytes);
            let _ = out.flush();
        }
        ok
    }
}
