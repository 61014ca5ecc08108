//! `ioscale report` and `ioscale compare`: render saved records again.
//!
//! The JSON record is the canonical output (DESIGN.md), so every other
//! output — table, CSV, charts, HTML — can be drawn from it later, on
//! another machine, without running anything. Both a sweep record and a
//! plain `run`/`meta` record are accepted; a run is shown as a one-point
//! sweep in the HTML report and charts.

use std::io::Write;
use std::path::{Path, PathBuf};

use analysis::render::sweep_of_run;
use analysis::{Loaded, SweepRecord};
use clap::{Args, ValueEnum};
use report::ExportType;

use crate::args::{Format, ReportArgs, UnitsArg};
use crate::emit::Outputs;
use crate::exit::{Exit, Failure};

/// Output formats of `ioscale compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// The side-by-side table.
    Text,
    /// The matched rows and ratios as JSON.
    Json,
}

/// Flags of `ioscale compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Two or more JSON records (sweeps or runs); ratios are against the first.
    #[arg(num_args = 2.., required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Format for standard output.
    #[arg(long, value_enum, default_value = "text")]
    pub format: CompareFormat,

    /// Data rates in MiB/s (`iec`) or MB/s (`si`).
    #[arg(long, value_enum, default_value = "iec")]
    pub units: UnitsArg,

    /// Also write the comparison as one self-contained HTML page to FILE:
    /// a chart per operation with a line per record, the matched rows with
    /// their intervals, ratios and verdicts, and each record's verdicts.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Examples for `ioscale report --help`.
pub const REPORT_EXAMPLES: &str = "Examples:
  # a sweep's tables and analysis again, with its HTML report and charts
  ioscale sweep --threads 1,2,4 --json s.json -- run --size 64m /mnt/fs
  ioscale report s.json --html s.html --png s-charts/

  # one run's record as CSV
  ioscale run --size 64m --json run.json /mnt/fs
  ioscale report run.json --format csv > run.csv";

/// Examples for `ioscale compare --help`.
pub const COMPARE_EXAMPLES: &str = "Examples:
  # one target swept before and after a change: after ÷ before per
  # operation and worker count, judged against each figure's interval
  ioscale sweep --threads 1,2,4 --json before.json -- run --size 64m /mnt/fs
  ioscale sweep --threads 1,2,4 --json after.json -- run --size 64m /mnt/fs
  ioscale compare before.json after.json
  ioscale compare before.json after.json --format json > compared.json
  # the same as one HTML page with a chart per operation
  ioscale compare before.json after.json --html compared.html";

fn read(p: &Path) -> Result<Loaded, String> {
    crate::saved::load_record("record", p)
}

/// `ioscale report`.
pub fn cmd_report(args: &ReportArgs) -> Exit {
    if let Some(result) = crate::front::io500::html::report(args) {
        return result;
    }
    let loaded = read(&args.file).map_err(Failure::Refused)?;
    // The record read is one of the files an output must not replace: a
    // page written over it would be all that is left of the record.
    crate::output::check_output_set(
        &[
            ("--csv", args.csv.as_deref()),
            ("--html", args.html.as_deref()),
            ("--series-csv", args.series_csv.as_deref()),
        ],
        &[("the record ", args.file.as_path())],
    )?;
    if let Some(d) = &args.png {
        crate::output::check_png_dir(d)?;
    }
    let units = args.view.units.units();
    let ok = match loaded {
        Loaded::Sweep(mut rec) => {
            // The analysis is recomputed: in the units asked for, and with
            // the rules of this version (and an adaptive sweep's search and
            // repetitions with them).
            analysis::reanalyse(&mut rec, units);
            Outputs {
                json: None,
                csv: args.csv.as_deref(),
                html: args.html.as_deref(),
                png: args.png.as_deref(),
                series_csv: args.series_csv.as_deref(),
                cut: &[],
                format: args.view.format,
                quiet: args.quiet,
            }
            .emit(&rec)
        }
        Loaded::Run(rs) => {
            // Text, CSV and JSON of a run are the run's own exporters, so
            // the output is what the run printed; HTML and charts show it
            // as a one-point sweep.
            let mut ok = true;
            if let Some(p) = &args.csv {
                let bytes = ExportType::Csv.exporter().render(&rs)?;
                if let Err(e) = crate::output::write_named("--csv", p, &bytes) {
                    eprintln!("ioscale: error: {e:#}");
                    ok = false;
                }
            }
            let mut rec: SweepRecord = sweep_of_run((*rs).clone());
            rec.analysis = analysis::analyse_with(&rec, units);
            ok &= Outputs {
                json: None,
                csv: None,
                html: args.html.as_deref(),
                png: args.png.as_deref(),
                series_csv: args.series_csv.as_deref(),
                cut: &[],
                format: args.view.format,
                quiet: true,
            }
            .emit(&rec);
            if !args.quiet {
                let kind = match args.view.format {
                    Format::Text => ExportType::Text,
                    Format::Json => ExportType::Json,
                    Format::Csv => ExportType::Csv,
                };
                let mut bytes = kind.exporter().render(&rs)?;
                if args.view.format == Format::Text {
                    let sentences = rec.analysis.sentences();
                    if !sentences.is_empty() {
                        bytes.extend_from_slice(b"\nAnalysis\n");
                        for s in sentences {
                            bytes.extend_from_slice(format!("  {s}\n").as_bytes());
                        }
                    }
                }
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(&bytes);
                let _ = out.flush();
            }
            ok
        }
    };
    Ok(if ok { 0 } else { 1 })
}

/// `ioscale compare`.
pub fn cmd_compare(args: &CompareArgs) -> Exit {
    // A page written over a record compared would be all that is left of
    // it.
    let inputs: Vec<(&str, &Path)> = args
        .files
        .iter()
        .map(|p| ("the record ", p.as_path()))
        .collect();
    crate::output::check_output_set(&[("--html", args.html.as_deref())], &inputs)?;
    let mut recs = Vec::new();
    for p in &args.files {
        let l = read(p).map_err(Failure::Refused)?;
        recs.push((p.clone(), l.into_sweep()));
    }
    // Short names where they are unique, full paths otherwise.
    let stems: Vec<String> = recs
        .iter()
        .map(|(p, _)| {
            p.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| p.display().to_string())
        })
        .collect();
    let unique = stems
        .iter()
        .all(|s| stems.iter().filter(|t| *t == s).count() == 1);
    let named: Vec<(String, SweepRecord)> = recs
        .into_iter()
        .zip(stems)
        .map(|((p, r), s)| (if unique { s } else { p.display().to_string() }, r))
        .collect();
    let units = args.units.units();
    let c = analysis::compare::compare_with(&named, units);
    let mut wrote = true;
    if let Some(p) = &args.html {
        // Each record's verdicts as this version, in these units, reads them.
        let analysed: Vec<(String, SweepRecord)> = named
            .iter()
            .map(|(n, r)| {
                let mut r = r.clone();
                r.analysis = analysis::analyse_with(&r, units);
                (n.clone(), r)
            })
            .collect();
        let page = charts::render_compare_html(&c, &analysed);
        if let Err(e) = crate::output::write_named("--html", p, page.as_bytes()) {
            eprintln!("ioscale: error: {e:#}");
            wrote = false;
        }
    }
    let bytes = match args.format {
        CompareFormat::Text => analysis::compare::render_text(&c).into_bytes(),
        CompareFormat::Json => {
            let mut b = serde_json::to_vec_pretty(&c)?;
            b.push(b'\n');
            b
        }
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&bytes);
    let _ = out.flush();
    Ok(if wrote { 0 } else { 1 })
}
