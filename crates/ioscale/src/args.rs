//! Flags that several modules read: standard output's `--format`, how a
//! record is shown (`--format`, `--units`), where `run` and `meta` write
//! their record and what they show, and the flags of `ioscale report`,
//! which the io500 front-end answers for its own records.
//!
//! They sit below every command and front-end, so that those take a flag
//! type from here instead of from each other or from `cli.rs`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// Output formats for stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// The human table.
    Text,
    /// The canonical JSON record.
    Json,
    /// One CSV row per phase.
    Csv,
}

/// The unit system of a report (`--units`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum UnitsArg {
    /// MiB/s (2^20 bytes per second).
    #[default]
    Iec,
    /// MB/s (10^6 bytes per second), as the seed tables print it.
    Si,
}

/// How `sweep` and `report` show a record: standard output's format and
/// the unit of data rates.
#[derive(Debug, Clone, Copy, Args)]
pub struct View {
    /// Format for standard output.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,

    /// Data rates in MiB/s (`iec`) or MB/s (`si`) in every table, chart and sentence.
    #[arg(long, value_enum, default_value = "iec")]
    pub units: UnitsArg,
}

impl UnitsArg {
    /// The analysis's unit system.
    pub fn units(self) -> analysis::Units {
        match self {
            UnitsArg::Iec => analysis::Units::Iec,
            UnitsArg::Si => analysis::Units::Si,
        }
    }
}

/// Where `run` and `meta` write the record, besides standard output.
#[derive(Debug, Args)]
pub struct RecordFiles {
    /// Write the canonical JSON record to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write one CSV row per phase to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,

    #[command(flatten)]
    pub over_time: OverTime,
}

/// How each timed phase is recorded over time (`run`, `meta`, `sweep`).
#[derive(Debug, Clone, Args)]
pub struct OverTime {
    /// Record each timed phase's throughput and latency per interval: a
    /// duration (1s, 250ms), auto (1 s, finer for a phase too short for 20
    /// intervals) or off.
    #[arg(long, value_name = "DUR", default_value = "auto")]
    pub interval: String,

    /// Write every timed phase's per-interval series to FILE as CSV: one
    /// row per interval per phase (and per point of a sweep).
    #[arg(long, value_name = "FILE")]
    pub series_csv: Option<PathBuf>,

    /// End each timed phase once it is steady, as fio's steadystate=:
    /// KIND:LIMIT:WINDOW[:RAMP] with KIND iops, iops_slope, bw or bw_slope,
    /// LIMIT a share of the window's mean (5%) or a value (IOPS, MiB/s; per
    /// second for a slope), WINDOW whole seconds judged one sample a second,
    /// RAMP time before sampling. Needs --time (the longest a phase may
    /// run); the point's figures are the steady window's, e.g. --time 10m
    /// --steady iops:5%:30s
    #[arg(long, value_name = "RULE")]
    pub steady: Option<String>,
}

impl OverTime {
    /// `--steady`, checked against the phases' time limit `time` and the
    /// number of processes `ranks`.
    pub fn steady(
        &self,
        time: Option<std::time::Duration>,
        ranks: u32,
    ) -> Result<Option<bench::steady::Steady>, String> {
        let Some(text) = &self.steady else {
            return Ok(None);
        };
        let s = bench::steady::Steady::parse(text).map_err(|e| format!("--steady {e}"))?;
        if time.is_none() {
            return Err(format!(
                "--steady {text} needs --time: a phase ends when steady or at its time limit, \
                 whichever comes first"
            ));
        }
        if self.interval.trim() == "off" {
            return Err(
                "--steady reports the steady window from the series --interval off \
                        turns off"
                    .into(),
            );
        }
        if ranks > 1 {
            return Err("--steady is judged in one process: not available across MPI ranks".into());
        }
        Ok(Some(s))
    }

    /// The interval asked for; a usage error names the flag (and refuses
    /// `--series-csv` without a series to write).
    pub fn interval(&self) -> Result<bench::interval::Interval, String> {
        let i = bench::interval::Interval::parse(&self.interval)
            .map_err(|e| format!("--interval {}: {e}", self.interval))?;
        if i == bench::interval::Interval::Off && self.series_csv.is_some() {
            return Err("--series-csv needs the series --interval off turns off".into());
        }
        Ok(i)
    }
}

/// How `run` and `meta` show the run: standard output's format, or
/// nothing, and the progress on standard error.
#[derive(Debug, Args)]
pub struct Shown {
    /// Format for standard output.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,

    /// Print nothing on standard output (files named by --json/--csv are still written).
    #[arg(short, long)]
    pub quiet: bool,

    /// Live progress on standard error: bar (a live line on a terminal),
    /// plain (one line per finished phase, for logs), none; auto is bar on
    /// a terminal, plain otherwise.
    #[arg(long, value_enum, default_value = "auto", value_name = "MODE")]
    pub progress: crate::progress::ProgressMode,
}

/// Flags of `ioscale report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A JSON record written by `ioscale sweep --json` or `ioscale run --json`.
    pub file: PathBuf,

    /// Write the self-contained HTML report to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Write the charts as PNG and SVG into directory DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,

    /// Write the CSV to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,

    /// Write every timed phase's per-interval series to FILE as CSV: one
    /// row per interval per phase per point.
    #[arg(long, value_name = "FILE")]
    pub series_csv: Option<PathBuf>,

    #[command(flatten)]
    pub view: View,

    /// Print nothing on standard output.
    #[arg(short, long)]
    pub quiet: bool,
}

/// A flag whose value is one word, or a comma list of words, from a known
/// set: parsed as the plain text the second stage checks (its refusals
/// name the flag and the words it takes), with the set given to clap so
/// that shell completions (bash, zsh, fish) offer the words, not file
/// names. `--help` lists them in the flag's own line, so clap's
/// "[possible values: …]" is hidden where it is used.
#[derive(Clone, Copy)]
pub struct Choices(pub fn() -> Vec<&'static str>);

impl clap::builder::TypedValueParser for Choices {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            (self.0)()
                .into_iter()
                .map(clap::builder::PossibleValue::new),
        ))
    }
}

/// `run --op`'s words.
pub fn data_ops() -> Vec<&'static str> {
    spec::Op::ALL.iter().map(|o| o.name()).collect()
}

/// `meta --ops`'s words.
pub fn meta_ops() -> Vec<&'static str> {
    spec::MetaOp::ALL.iter().map(|o| o.name()).collect()
}

/// `run --layout`'s words.
pub fn data_layouts() -> Vec<&'static str> {
    spec::Layout::ALL.iter().map(|l| l.name()).collect()
}

/// `sweep --layout`'s words: `run`'s layouts and `meta`'s.
pub fn sweep_layouts() -> Vec<&'static str> {
    let mut v = data_layouts();
    v.extend(["same-dir"]);
    v
}

/// `run --engine`'s words, from the engine table.
pub fn data_engines() -> Vec<&'static str> {
    engine::registry::DATA_ENGINES
        .iter()
        .map(|e| e.info().name)
        .collect()
}

/// `meta --engine`'s words, from the engine table.
pub fn meta_engines() -> Vec<&'static str> {
    engine::registry::META_ENGINES
        .iter()
        .map(|e| e.info().name)
        .collect()
}

/// `--sync`'s words (`every:N` takes a count after the colon).
pub fn sync_modes() -> Vec<&'static str> {
    spec::SyncMode::WORDS.to_vec()
}

/// `--uring-opts`'s words.
pub fn uring_opts() -> Vec<&'static str> {
    spec::UringOpts::WORDS.to_vec()
}

/// How an `s3://BUCKET/PREFIX` target is reached (`run`, `meta`,
/// `clean`); each falls back to the environment and `~/.aws` as the AWS
/// tools do. Ignored for a directory target.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "S3 targets")]
pub struct S3Flags {
    /// S3 endpoint URL for an s3:// target (else AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile, AWS).
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Region for an s3:// target (else AWS_REGION, the profile, us-east-1).
    #[arg(long, value_name = "NAME")]
    pub region: Option<String>,
    /// Credentials profile for an s3:// target (else the environment, AWS_PROFILE, default).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Addressing for an s3:// target: auto, path or virtual.
    #[arg(long, value_name = "STYLE")]
    pub addressing: Option<String>,
}

impl S3Flags {
    /// Hands the flags to the executor before anything runs.
    pub fn apply(&self) -> Result<(), bench::Error> {
        bench::objects::set_flags_from(
            self.endpoint.clone(),
            self.region.clone(),
            self.profile.clone(),
            self.addressing.as_deref(),
        )
    }
}
