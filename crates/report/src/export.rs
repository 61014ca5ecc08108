//! Exporters: turn a [`ResultSet`] into bytes in one of several formats.
//!
//! Every output is rendered from the one canonical record, never from the
//! engine's live state, so a saved JSON file can be turned into a table or a
//! CSV later and will say exactly what the run printed. Exporters return
//! bytes and never write files themselves; the binary decides where they go.
//!
//! The shape follows hyperfine: a small [`Exporter`] trait and a closed
//! [`ExportType`] enum that picks the implementation, so adding a format is
//! one enum arm plus one struct, and the CLI can list the choices.

use std::fmt;

use serde_json::Error as JsonError;
use spec::format_size;

use crate::model::{PhaseRecord, ResultSet, SCHEMA};

/// Why a result set could not be rendered or read back.
#[derive(thiserror::Error, Debug)]
pub enum ExportError {
    /// JSON encoding or decoding failed.
    #[error("JSON: {0}")]
    Json(#[from] JsonError),
    /// A saved record uses a layout newer than this build understands.
    #[error("results schema {found} is newer than the supported schema {supported}; upgrade ioscale to read it")]
    Schema {
        /// The `schema` field of the record.
        found: u32,
        /// The newest schema this build reads ([`SCHEMA`]).
        supported: u32,
    },
    /// A figure no run can produce: negative, not finite, or a rate the
    /// record's own bytes and seconds cannot give.
    #[error("{field} = {value}: {why}; the record was changed or damaged after the run")]
    Figure {
        /// The field, as a path in the record (`phases[1].elapsed_s`).
        field: String,
        /// Its value as read.
        value: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The CSV writer failed (it writes to memory, so only on a bug).
    #[error("CSV: {0}")]
    Csv(#[from] csv::Error),
}

/// Renders a whole [`ResultSet`] into one output document.
pub trait Exporter {
    /// Returns the document's bytes (UTF-8 for every built-in format).
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, ExportError>;
}

/// The output formats ioscale knows; picks the [`Exporter`] to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExportType {
    /// The human table ([`TextExporter`]).
    Text,
    /// The canonical record ([`JsonExporter`]).
    Json,
    /// One row per phase ([`CsvExporter`]).
    Csv,
}

impl ExportType {
    /// Every format, in the order `--help` lists them.
    pub const ALL: [ExportType; 3] = [ExportType::Text, ExportType::Json, ExportType::Csv];

    /// The exporter that produces this format.
    pub fn exporter(self) -> Box<dyn Exporter> {
        match self {
            ExportType::Text => Box::new(TextExporter),
            ExportType::Json => Box::new(JsonExporter),
            ExportType::Csv => Box::new(CsvExporter),
        }
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ExportType::Text => "text",
            ExportType::Json => "json",
            ExportType::Csv => "csv",
        }
    }

    /// The usual file-name extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            ExportType::Text => "txt",
            ExportType::Json => "json",
            ExportType::Csv => "csv",
        }
    }

    /// Parses a name as typed on the command line (`txt` is accepted for
    /// `text`).
    pub fn parse(s: &str) -> Option<ExportType> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" | "txt" => Some(ExportType::Text),
            "json" => Some(ExportType::Json),
            "csv" => Some(ExportType::Csv),
            _ => None,
        }
    }
}

impl fmt::Display for ExportType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

// ---------------------------------------------------------------- JSON

/// The canonical record as pretty-printed JSON with a trailing newline.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, ExportError> {
        let mut out = serde_json::to_vec_pretty(rs)?;
        out.push(b'\n');
        Ok(out)
    }
}

/// Reads a record written by [`JsonExporter`], refusing layouts newer than
/// [`SCHEMA`] rather than misreading them.
pub fn from_json(bytes: &[u8]) -> Result<ResultSet, ExportError> {
    let rs: ResultSet = serde_json::from_slice(bytes)?;
    checked(rs)
}

/// The schema check, [`check_figures`], and the summary recomputed from
/// the phases (a reader never takes the record's word for it).
fn checked(mut rs: ResultSet) -> Result<ResultSet, ExportError> {
    if rs.schema > SCHEMA {
        return Err(ExportError::Schema {
            found: rs.schema,
            supported: SCHEMA,
        });
    }
    check_figures(&rs, "")?;
    rs.summarise();
    Ok(rs)
}

/// Refuses figures no run produces (see [`ExportError::Figure`]): every
/// duration, rate and latency of every phase finite and not negative, a
/// phase run by at least one worker, and each rate what the phase's bytes
/// (operations) over its seconds give, as the driver computes it (0 for a
/// phase of no measurable time). `prefix` goes before each field's path
/// (`points[3].result.` in a sweep record).
pub fn check_figures(rs: &ResultSet, prefix: &str) -> Result<(), ExportError> {
    check_ops(rs, prefix)?;
    let spec_threads = match &rs.spec {
        crate::model::JobSpec::Run(w) => w.threads,
        crate::model::JobSpec::Meta(m) => m.threads,
        crate::model::JobSpec::Find(f) => f.threads,
    };
    if spec_threads == 0 {
        return Err(ExportError::Figure {
            field: format!("{prefix}spec.threads"),
            value: "0".into(),
            why: "a run has at least one worker",
        });
    }
    for (i, f) in rs.failed_phases.iter().enumerate() {
        let bad = |name: &str, value: String, why| ExportError::Figure {
            field: format!("{prefix}failed_phases[{i}].{name}"),
            value,
            why,
        };
        if f.threads == 0 {
            return Err(bad(
                "threads",
                "0".into(),
                "a phase has at least one worker",
            ));
        }
        let v = f.partial_elapsed_s;
        if !v.is_finite() || v < 0.0 {
            return Err(bad(
                "partial_elapsed_s",
                v.to_string(),
                "must be a finite number, not negative",
            ));
        }
    }
    for (i, p) in rs.phases.iter().enumerate() {
        check_phase(p, &|name: &str, value: String, why| ExportError::Figure {
            field: format!("{prefix}phases[{i}].{name}"),
            value,
            why,
        })?;
    }
    Ok(())
}

/// The error of one bad field: its name, its value and why it is refused.
type Bad<'a> = dyn Fn(&str, String, &'static str) -> ExportError + 'a;

/// [`check_figures`] for one phase: workers, repetition number, every
/// time and rate finite and not negative, percentiles in order, files and
/// rates consistent with the phase's counts.
fn check_phase(p: &PhaseRecord, bad: &Bad<'_>) -> Result<(), ExportError> {
    if p.threads == 0 {
        return Err(bad(
            "threads",
            "0".into(),
            "a phase has at least one worker",
        ));
    }
    // Repetitions count in 32 bits: the last one a run can have is
    // numbered u32::MAX - 1.
    if p.rep == u32::MAX {
        return Err(bad(
            "rep",
            p.rep.to_string(),
            "no run has that many repetitions (they count in 32 bits)",
        ));
    }
    let l = &p.lat_us;
    let times = [
        ("elapsed_s", p.elapsed_s),
        ("bw_mib_s", p.bw_mib_s),
        ("bw_mb_s", p.bw_mb_s),
        ("iops", p.iops),
        ("open_s", p.open_s),
        ("io_s", p.io_s),
        ("close_s", p.close_s),
        ("fsync_s", p.fsync_s),
        ("cpu_user_s", p.cpu_user_s),
        ("cpu_sys_s", p.cpu_sys_s),
        ("stonewall.s", p.stonewall.s),
        ("stonewall.bw_mib_s", p.stonewall.bw_mib_s),
        ("lat_us.mean", l.mean),
        ("lat_us.min", l.min),
        ("lat_us.p50", l.p50),
        ("lat_us.p99", l.p99),
        ("lat_us.p999", l.p999),
        ("lat_us.max", l.max),
    ];
    for (name, v) in times {
        if !v.is_finite() || v < 0.0 {
            return Err(bad(
                name,
                v.to_string(),
                "must be a finite number, not negative",
            ));
        }
    }
    // One histogram gives every percentile, each clamped into the
    // exact [min, max], so they cannot be out of order.
    for ((lo_name, lo), (hi_name, hi)) in [
        (("min", l.min), ("p50", l.p50)),
        (("p50", l.p50), ("p99", l.p99)),
        (("p99", l.p99), ("p999", l.p999)),
        (("p999", l.p999), ("max", l.max)),
    ] {
        if lo > hi {
            return Err(bad(
                &format!("lat_us.{lo_name}"),
                lo.to_string(),
                if lo_name == "min" {
                    "is above lat_us.p50; the percentiles of one phase rise from min to max"
                } else if hi_name == "max" {
                    "is above lat_us.max; the percentiles of one phase rise from min to max"
                } else {
                    "is above the next percentile; the percentiles of one phase rise from min to max"
                },
            ));
        }
    }
    if let Some(f) = &p.files {
        check_files(f, &bad)?;
    }
    check_rates(p, bad)
}

/// [`check_phase`]: each rate is what the phase's bytes (operations) over
/// its seconds give, as the driver computes it (0 for no measurable time).
fn check_rates(p: &PhaseRecord, bad: &Bad<'_>) -> Result<(), ExportError> {
    let rate = |x: u64| {
        if p.elapsed_s > 0.0 {
            x as f64 / p.elapsed_s
        } else {
            0.0
        }
    };
    for (name, v, want) in [
        ("bw_mib_s", p.bw_mib_s, rate(p.bytes) / (1024.0 * 1024.0)),
        ("bw_mb_s", p.bw_mb_s, rate(p.bytes) / 1e6),
        ("iops", p.iops, rate(p.ops)),
        (
            "stonewall.bw_mib_s",
            p.stonewall.bw_mib_s,
            if p.stonewall.s > 0.0 {
                p.stonewall.bytes as f64 / p.stonewall.s / (1024.0 * 1024.0)
            } else {
                0.0
            },
        ),
    ] {
        if !want.is_finite() || (v - want).abs() > 1e-6 * want.abs() + 1e-9 {
            return Err(bad(
                name,
                v.to_string(),
                "is not what the phase's bytes (ops) over its seconds give",
            ));
        }
    }
    Ok(())
}

/// [`check_phase`] for a small-file phase's file counts.
fn check_files(f: &crate::model::FilesRecord, bad: &Bad<'_>) -> Result<(), ExportError> {
    let want = if f.requested > 0 {
        f.processed as f64 * 100.0 / f.requested as f64
    } else {
        100.0
    };
    if !f.processed_pct.is_finite() || (f.processed_pct - want).abs() > 1e-6 * want.abs() + 1e-9 {
        return Err(bad(
            "files.processed_pct",
            f.processed_pct.to_string(),
            "is not files.processed over files.requested, in per cent",
        ));
    }
    let v = f.stonewall_files_s;
    if !v.is_finite() || v < 0.0 {
        return Err(bad(
            "files.stonewall_files_s",
            v.to_string(),
            "must be a finite number, not negative",
        ));
    }
    for (k, t) in f.threads.iter().enumerate() {
        if !t.elapsed_s.is_finite() || t.elapsed_s < 0.0 {
            return Err(bad(
                &format!("files.threads[{k}].elapsed_s"),
                t.elapsed_s.to_string(),
                "must be a finite number, not negative",
            ));
        }
    }
    Ok(())
}

/// Refuses a phase whose operation is none a run of the record's kind has
/// (`write`, `read`, … for a data run; `create`, `stat`, … for a metadata
/// run): every reader groups, labels and sizes its rows by it, and an
/// unknown name — 100 MB of it — was copied into every one of them.
fn check_ops(rs: &ResultSet, prefix: &str) -> Result<(), ExportError> {
    let known = |op: &str| match &rs.spec {
        crate::model::JobSpec::Run(_) => spec::Op::ALL.iter().any(|o| o.name() == op),
        crate::model::JobSpec::Meta(_) => spec::MetaOp::ALL.iter().any(|o| o.name() == op),
        crate::model::JobSpec::Find(_) => op == "find",
    };
    let nodes = rs.host.cluster.iter().flat_map(|c| &c.node_phases);
    let lists: [(&str, Vec<&str>); 3] = [
        ("phases", rs.phases.iter().map(|p| p.op.as_str()).collect()),
        (
            "failed_phases",
            rs.failed_phases.iter().map(|f| f.op.as_str()).collect(),
        ),
        (
            "host.cluster.node_phases",
            nodes.map(|n| n.op.as_str()).collect(),
        ),
    ];
    for (list, ops) in lists {
        if let Some((i, op)) = ops.iter().enumerate().find(|(_, op)| !known(op)) {
            return Err(ExportError::Figure {
                field: format!("{prefix}{list}[{i}].op"),
                value: shown(op),
                why: match &rs.spec {
                    crate::model::JobSpec::Run(_) => {
                        "is not an operation of a data run (write, read, randwrite, randread, rw, randrw)"
                    }
                    crate::model::JobSpec::Meta(_) => {
                        "is not an operation of a metadata run (create, stat, read, delete, …)"
                    }
                    crate::model::JobSpec::Find(_) => "is not the operation of a find run (find)",
                },
            });
        }
    }
    Ok(())
}

/// A value of a record as an error shows it: at most 40 characters, and
/// how long it is when longer (a refused field may be megabytes).
fn shown(v: &str) -> String {
    let mut end = v.len().min(40);
    while !v.is_char_boundary(end) {
        end -= 1;
    }
    if end == v.len() {
        format!("{v:?}")
    } else {
        format!("{:?}… ({} bytes)", &v[..end], v.len())
    }
}

/// [`from_json`] from a reader, parsing straight into the record (no copy
/// of the text is held), so memory is the record's own.
pub fn from_json_reader<R: std::io::Read>(r: R) -> Result<ResultSet, ExportError> {
    let rs: ResultSet = serde_json::from_reader(std::io::BufReader::new(r))?;
    checked(rs)
}

// ---------------------------------------------------------------- CSV

/// The CSV columns, in order; one row per [`PhaseRecord`].
pub const CSV_COLUMNS: [&str; 23] = [
    "op",
    "rep",
    "threads",
    "bytes",
    "ops",
    "elapsed_s",
    "bw_mib_s",
    "bw_mb_s",
    "iops",
    "lat_p50_us",
    "lat_p99_us",
    "lat_p999_us",
    "lat_max_us",
    "open_s",
    "io_s",
    "close_s",
    "cpu_user_s",
    "cpu_sys_s",
    "stonewall_s",
    "stonewall_bw_mib_s",
    "errors",
    "time_limited",
    "interrupted",
];

/// One row per phase for spreadsheets and plotting scripts.
///
/// RFC 4180 quoting (a field is quoted only when it holds a comma, quote or
/// line break) with `\n` line endings, which every CSV reader accepts.
/// Seconds carry 6 decimals (microseconds), rates and latencies 3.
#[derive(Debug, Clone, Copy, Default)]
pub struct CsvExporter;

impl Exporter for CsvExporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, ExportError> {
        let mut w = csv::WriterBuilder::new()
            .quote_style(csv::QuoteStyle::Necessary)
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        w.write_record(CSV_COLUMNS)?;
        for p in &rs.phases {
            let fields = [
                p.op.clone(),
                p.rep.to_string(),
                p.threads.to_string(),
                p.bytes.to_string(),
                p.ops.to_string(),
                format!("{:.6}", p.elapsed_s),
                format!("{:.3}", p.bw_mib_s),
                format!("{:.3}", p.bw_mb_s),
                format!("{:.3}", p.iops),
                format!("{:.3}", p.lat_us.p50),
                format!("{:.3}", p.lat_us.p99),
                format!("{:.3}", p.lat_us.p999),
                format!("{:.3}", p.lat_us.max),
                format!("{:.6}", p.open_s),
                format!("{:.6}", p.io_s),
                format!("{:.6}", p.close_s),
                format!("{:.6}", p.cpu_user_s),
                format!("{:.6}", p.cpu_sys_s),
                format!("{:.6}", p.stonewall.s),
                format!("{:.3}", p.stonewall.bw_mib_s),
                p.errors.to_string(),
                p.time_limited.to_string(),
                p.interrupted.to_string(),
            ];
            w.write_record(&fields)?;
        }
        w.into_inner()
            .map_err(|e| ExportError::Csv(csv::Error::from(e.into_error())))
    }
}

/// One field quoted as the CSV exporters quote it (RFC 4180: only when it
/// holds a comma, quote or line break, inner quotes doubled), for callers
/// that build CSV cells one at a time.
pub fn csv_field(s: &str) -> String {
    let mut w = csv::WriterBuilder::new()
        .quote_style(csv::QuoteStyle::Necessary)
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    // Writing to memory cannot fail; a lone empty field is written as `""`
    // by the csv crate (an empty record otherwise), so it is kept bare.
    if s.is_empty() || w.write_record([s]).is_err() {
        return String::new();
    }
    let mut out = String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default();
    out.pop(); // the record's terminator
    out
}

// ---------------------------------------------------------------- text

/// The table a storage engineer reads at the end of a run: context, one
/// row per phase, then everything that qualifies the numbers (stonewall,
/// time limits, repetitions, data checks, errors).
#[derive(Debug, Clone, Copy, Default)]
pub struct TextExporter;

impl Exporter for TextExporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, ExportError> {
        if rs.spec.as_meta().is_some() {
            return MetaTextExporter.render(rs);
        }
        let mut sections = opening_sections(rs);
        if !rs.phases.is_empty() {
            sections.push(phase_table(&rs.phases));
        }
        if !rs.failed_phases.is_empty() {
            sections.push(failed_lines(rs));
        }
        let notes: Vec<String> = rs.phases.iter().flat_map(phase_notes).collect();
        if !notes.is_empty() {
            sections.push(notes);
        }
        let nodes = node_table(rs);
        if !nodes.is_empty() {
            sections.push(nodes);
        }
        Ok(close(rs, sections))
    }
}

/// The closing sections of a text report, `run`'s and `meta`'s alike
/// (the summary over repetitions, failed data checks, errors, an
/// interruption), then every section joined with a blank line between.
fn close(rs: &ResultSet, mut sections: Vec<Vec<String>>) -> Vec<u8> {
    if rs.summary.iter().any(|s| s.reps > 1) {
        sections.push(summary_table(rs));
    }
    let verify = verify_lines(&rs.phases);
    if !verify.is_empty() {
        sections.push(verify);
    }
    if !rs.errors.is_empty() {
        sections.push(rs.errors.iter().map(error_line).collect());
    }
    if rs.interrupted {
        sections.push(vec!["interrupted: results so far are shown".to_string()]);
    }
    join_sections(sections).into_bytes()
}

/// Sections of lines as one text: lines joined by newlines, sections by a
/// blank line, and a final newline (the text reports' layout).
pub fn join_sections(sections: Vec<Vec<String>>) -> String {
    let mut out = sections
        .into_iter()
        .map(|lines| lines.join("\n"))
        .collect::<Vec<_>>()
        .join("\n\n");
    out.push('\n');
    out
}

fn header_lines(rs: &ResultSet) -> Vec<String> {
    let h = &rs.host;
    let mut target = format!("target {}", h.target);
    if !h.fs_type.is_empty() || !h.mount_point.is_empty() {
        target.push_str(&format!(" ({} on {}", h.fs_type, h.mount_point));
        if !h.mount_options.is_empty() {
            target.push_str(&format!(", {}", h.mount_options));
        }
        target.push(')');
    }
    let mut lines = vec![
        format!(
            "ioscale {}  {}  kernel {}  {} CPUs  {:.1} GiB",
            rs.version,
            h.hostname,
            h.kernel,
            h.cpus,
            h.mem_bytes as f64 / (1u64 << 30) as f64
        ),
        target,
        format!("workload: {}", rs.spec.describe()),
    ];
    if let Some(c) = &h.cluster {
        lines.push(format!(
            "ranks: {} ({}) x {} thread(s) = {} workers on {} node(s), {} tasks per node",
            c.ranks,
            c.launcher,
            c.threads_per_rank,
            c.ranks * c.threads_per_rank,
            c.nodes,
            c.tasks_per_node
        ));
    }
    lines
}

/// Each node's share of each phase, when the ranks ran on several nodes:
/// its bytes over its own span (first start to last end of its workers).
fn node_table(rs: &ResultSet) -> Vec<String> {
    let Some(c) = rs.host.cluster.as_ref() else {
        return Vec::new();
    };
    if c.nodes < 2 || c.node_phases.is_empty() {
        return Vec::new();
    }
    let width = c
        .node_phases
        .iter()
        .map(|n| n.host.len())
        .max()
        .unwrap_or(4);
    let mut out = vec![
        "per node:".to_string(),
        format!(
            "{:<6} {:>3}  {:<width$}  {:>5}  {:>10}  {:>10}  {:>8}",
            "op", "rep", "node", "ranks", "MiB", "MiB/s", "span(s)"
        ),
    ];
    for n in &c.node_phases {
        out.push(format!(
            "{:<6} {:>3}  {:<width$}  {:>5}  {:>10.2}  {:>10.2}  {:>8.3}",
            n.op,
            crate::model::shown_rep(n.rep),
            n.host,
            n.ranks,
            n.bytes as f64 / (1u64 << 20) as f64,
            n.bw_mib_s,
            n.elapsed_s
        ));
    }
    out
}

fn phase_table(phases: &[PhaseRecord]) -> Vec<String> {
    const HEAD: [&str; 15] = [
        "op",
        "rep",
        "MiB/s",
        "MB/s",
        "IOPS",
        "p50(us)",
        "p99(us)",
        "p99.9(us)",
        "max(us)",
        "open(s)",
        "io(s)",
        "close(s)",
        "total(s)",
        "usr(s)",
        "sys(s)",
    ];
    let rows = phases
        .iter()
        .map(|p| {
            vec![
                p.op.clone(),
                crate::model::shown_rep(p.rep).to_string(),
                fmt_rate(p.bw_mib_s),
                fmt_rate(p.bw_mb_s),
                fmt_iops(p.iops),
                fmt_lat(p.lat_us.p50),
                fmt_lat(p.lat_us.p99),
                fmt_lat(p.lat_us.p999),
                fmt_lat(p.lat_us.max),
                fmt_secs(p.open_s),
                fmt_secs(p.io_s),
                fmt_secs(p.close_s),
                fmt_secs(p.elapsed_s),
                fmt_secs(p.cpu_user_s),
                fmt_secs(p.cpu_sys_s),
            ]
        })
        .collect::<Vec<_>>();
    table(&HEAD, &rows)
}

/// Whether the stonewall figure tells a different story from the phase
/// total: the first worker finished more than 2 % before the last and
/// work was still outstanding then.
fn stonewall_matters(p: &PhaseRecord) -> bool {
    p.stonewall.s > 0.0 && p.stonewall.s < 0.98 * p.elapsed_s && p.stonewall.bytes < p.bytes
}

/// What `--steady` found in phase `p`, in words: when it was steady, and
/// that its figures are the steady window's (the warm-up before it is in
/// the series, not in the figures); or that it ended before it was.
fn steady_note(p: &PhaseRecord) -> Option<String> {
    let st = p.steady.as_ref()?;
    let pct = if st.limit_pct { "%" } else { "" };
    let rule = format!(
        "{} within {}{pct} over {} s",
        st.criterion,
        st.limit,
        fmt_secs(st.window_s)
    );
    Some(match (&st.whole, st.at_s) {
        (Some(w), Some(at)) => format!(
            "steady after {} s ({rule}): figures are the steady window's {} s; the warm-up \
             before it ({} in {} s) is in the series, not counted",
            fmt_secs(at),
            fmt_secs(p.elapsed_s),
            if p.files.is_some() {
                format!("{} files", w.ops.saturating_sub(p.ops))
            } else {
                format_size(w.bytes.saturating_sub(p.bytes))
            },
            fmt_secs((w.elapsed_s - p.elapsed_s).max(0.0)),
        ),
        (None, Some(at)) => format!(
            "steady after {} s ({rule}); no series to take the window's figures from: \
             figures cover the whole phase",
            fmt_secs(at)
        ),
        _ => format!(
            "not steady ({rule}) when the phase ended after {} s ({}): figures cover the \
             whole phase",
            fmt_secs(p.elapsed_s),
            if p.time_limited {
                "--time"
            } else {
                "its data was done"
            }
        ),
    })
}

fn phase_notes(p: &PhaseRecord) -> Vec<String> {
    let who = format!("  {} rep {}", p.op, crate::model::shown_rep(p.rep));
    let mut notes = Vec::new();
    if stonewall_matters(p) {
        notes.push(format!(
            "{who}: stonewall: {} in {} s = {} MiB/s (work done by the time the first worker finished)",
            format_size(p.stonewall.bytes),
            fmt_secs(p.stonewall.s),
            fmt_rate(p.stonewall.bw_mib_s),
        ));
    }
    match steady_note(p) {
        Some(n) => notes.push(format!("{who}: {n}")),
        None if p.time_limited => notes.push(format!(
            "{who}: stopped by --time after {} s; figures cover the work done until then",
            fmt_secs(p.elapsed_s)
        )),
        None => {}
    }
    if p.interrupted {
        notes.push(format!(
            "{who}: interrupted; figures are partial and left out of the summary"
        ));
    }
    if p.errors > 0 {
        notes.push(format!("{who}: {} failed request(s)", p.errors));
    }
    if let Some(r) = retry_note(p) {
        notes.push(format!("{who}: {r}"));
    }
    notes
}

/// The phase's retried requests, when there were any: counted apart from
/// the latencies, which are the successful attempts' alone.
fn retry_note(p: &PhaseRecord) -> Option<String> {
    let r = p.retries.filter(|r| r.any())?;
    Some(format!(
        "{} request(s) retried: {} throttled (503 SlowDown/429), {} server error(s), \
         {} dropped connection(s), {} s of backoff (not in the latencies)",
        r.requests_retried,
        r.throttled,
        r.server_errors,
        r.dropped,
        fmt_secs(r.backoff_s)
    ))
}

fn summary_table(rs: &ResultSet) -> Vec<String> {
    const HEAD: [&str; 8] = [
        "op",
        "reps",
        "min MiB/s",
        "max MiB/s",
        "mean MiB/s",
        "stddev MiB/s",
        "mean IOPS",
        "mean total(s)",
    ];
    let n = rs.summary.iter().map(|s| s.reps).max().unwrap_or(0);
    let rows = rs
        .summary
        .iter()
        .map(|s| {
            vec![
                s.op.clone(),
                s.reps.to_string(),
                fmt_rate(s.bw_mib_s.min),
                fmt_rate(s.bw_mib_s.max),
                fmt_rate(s.bw_mib_s.mean),
                fmt_rate(s.bw_mib_s.stddev),
                fmt_iops(s.iops.mean),
                fmt_secs(s.elapsed_s.mean),
            ]
        })
        .collect::<Vec<_>>();
    let mut lines = vec![format!(
        "Summary over {n} repetitions (sample stddev; interrupted repetitions left out)"
    )];
    lines.extend(table(&HEAD, &rows));
    lines
}

/// One line per phase an error stopped: what it did before, said as
/// partial work, and no rate (there is no result to give).
fn failed_lines(rs: &ResultSet) -> Vec<String> {
    rs.failed_phases
        .iter()
        .map(|f| {
            format!(
                "{} (rep {}): FAILED, no result: stopped by an error after {} bytes and {} request(s) \
                 in {:.3} s (see the error above)",
                f.op,
                crate::model::shown_rep(f.rep),
                f.partial_bytes,
                f.partial_ops,
                f.partial_elapsed_s
            )
        })
        .collect()
}

fn verify_lines(phases: &[PhaseRecord]) -> Vec<String> {
    let mut lines = Vec::new();
    for p in phases {
        let Some(v) = &p.verify else { continue };
        lines.push(format!(
            "verify {} rep {}: checked {}, {} bad bytes",
            p.op,
            crate::model::shown_rep(p.rep),
            format_size(v.checked_bytes),
            v.bad_bytes
        ));
        for m in &v.mismatches {
            lines.push(format!(
                "  MISMATCH {} first bad offset {} ({} bytes)",
                m.file, m.offset, m.bad_bytes
            ));
        }
    }
    lines
}

fn error_line(e: &crate::model::ErrorRecord) -> String {
    let at = e
        .offset
        .map(|o| format!(" at offset {o}"))
        .unwrap_or_default();
    format!(
        "error: worker {}: {} {}{at}: {}",
        e.worker, e.op, e.file, e.message
    )
}

/// The text-table writer of every plain-text exporter: the first column
/// left-aligned, the rest right-aligned, each as wide as its widest cell,
/// two spaces between columns, trailing blanks trimmed. One line per row,
/// the head first.
pub fn table(head: &[&str], rows: &[Vec<String>]) -> Vec<String> {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| -> String {
        let mut s = String::new();
        for (i, (cell, &w)) in cells.zip(&widths).enumerate() {
            let pad = " ".repeat(w.saturating_sub(cell.chars().count()));
            if i == 0 {
                s.push_str(cell);
                s.push_str(&pad);
            } else {
                s.push_str("  ");
                s.push_str(&pad);
                s.push_str(cell);
            }
        }
        s.trim_end().to_string()
    };
    let mut out = vec![line(&mut head.iter().copied())];
    out.extend(rows.iter().map(|r| line(&mut r.iter().map(String::as_str))));
    out
}

/// Rates: 2 decimals below 1000, 1 decimal from 1000 up.
fn fmt_rate(v: f64) -> String {
    if v.abs() < 1000.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

/// IOPS: whole numbers from 100 up, 2 decimals below.
fn fmt_iops(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Latencies in microseconds: 1 decimal.
fn fmt_lat(v: f64) -> String {
    format!("{v:.1}")
}

/// Seconds: 3 decimals, or 4 significant digits below 0.01 s so short
/// opens and closes do not all read `0.000`.
fn fmt_secs(v: f64) -> String {
    if v != 0.0 && v.is_finite() && v.abs() < 0.01 {
        let decimals = (3 - v.abs().log10().floor() as i32).clamp(3, 12) as usize;
        format!("{v:.decimals$}")
    } else {
        format!("{v:.3}")
    }
}

// ---------------------------------------------------------------- meta text

/// The first sections of a text rendering: the header, the warnings, and
/// "no phase completed" when no phase did.
fn opening_sections(rs: &ResultSet) -> Vec<Vec<String>> {
    let mut sections: Vec<Vec<String>> = vec![header_lines(rs)];
    if !rs.warnings.is_empty() {
        sections.push(
            rs.warnings
                .iter()
                .map(|w| format!("warning: {w}"))
                .collect(),
        );
    }
    if rs.phases.is_empty() {
        sections.push(vec!["no phase completed".to_string()]);
    }
    sections
}

/// The smallfile-style report of `ioscale meta`: per phase, a line per
/// thread, then the totals a smallfile user looks for (files/s, IOPS,
/// MiB/s, elapsed, the share of requested files processed), with latency
/// percentiles and the stonewall figure beside them. [`TextExporter`]
/// hands metadata records to it, so `--format text` needs no new choice.
#[derive(Debug, Clone, Copy, Default)]
pub struct MetaTextExporter;

impl Exporter for MetaTextExporter {
    fn render(&self, rs: &ResultSet) -> Result<Vec<u8>, ExportError> {
        let mut sections = opening_sections(rs);
        for p in &rs.phases {
            sections.push(meta_phase_lines(p));
        }
        if !rs.failed_phases.is_empty() {
            sections.push(failed_lines(rs));
        }
        Ok(close(rs, sections))
    }
}

fn meta_phase_lines(p: &PhaseRecord) -> Vec<String> {
    let mut l = vec![format!("{} (rep {})", p.op, crate::model::shown_rep(p.rep))];
    let files = p.files.clone().unwrap_or_default();
    for t in &files.threads {
        l.push(format!(
            "thr = {:02}, elapsed = {:.6}, files = {}, records = {}, status = {}",
            t.thread, t.elapsed_s, t.files, t.records, t.status
        ));
    }
    l.push(format!("total threads = {}", p.threads));
    l.push(format!("total files = {}", p.ops));
    l.push(format!(
        "total data = {:9.3} GiB",
        p.bytes as f64 / (1u64 << 30) as f64
    ));
    l.push(format!(
        "{:.2}% of requested files processed ({} of {})",
        files.processed_pct, p.ops, files.requested
    ));
    l.push(format!("elapsed time = {:9.3}", p.elapsed_s));
    l.push(format!("files/sec = {:.6}", p.iops));
    l.push(format!("IOPS = {:.6}", p.iops));
    l.push(format!("MiB/sec = {:.6}", p.bw_mib_s));
    l.push(format!(
        "latency (us): p50 {}, p99 {}, p99.9 {}, max {}",
        fmt_lat(p.lat_us.p50),
        fmt_lat(p.lat_us.p99),
        fmt_lat(p.lat_us.p999),
        fmt_lat(p.lat_us.max)
    ));
    if p.stonewall.s > 0.0 && p.stonewall.s < 0.98 * p.elapsed_s && files.stonewall_files < p.ops {
        l.push(format!(
            "stonewall: {} files in {} s = {:.2} files/s (work done by the time the first thread finished)",
            files.stonewall_files,
            fmt_secs(p.stonewall.s),
            files.stonewall_files_s
        ));
    }
    if p.fsync_s > 0.0 {
        l.push(format!(
            "syncfs at the end: {} s (inside the elapsed time)",
            fmt_secs(p.fsync_s)
        ));
    }
    l.push(format!(
        "cpu: usr {} s, sys {} s",
        fmt_secs(p.cpu_user_s),
        fmt_secs(p.cpu_sys_s)
    ));
    match steady_note(p) {
        Some(n) => l.push(n),
        None if p.time_limited => l.push(format!(
            "stopped by --time after {} s; figures cover the files done until then",
            fmt_secs(p.elapsed_s)
        )),
        None => {}
    }
    if p.interrupted {
        l.push("interrupted; figures are partial and left out of the summary".into());
    }
    if p.errors > 0 {
        l.push(format!("{} failed operation(s)", p.errors));
    }
    l.extend(retry_note(p));
    l
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use spec::{Op, RawWorkload, WorkloadSpec};
    use stats::LatencySummary;

    use super::*;
    use crate::model::{ErrorRecord, HostInfo, Mismatch, Stonewall, VerifyRecord, WorkerRecord};

    const MIB: f64 = (1u64 << 20) as f64;

    /// One phase with rates derived from bytes, ops and elapsed, so the
    /// fixture is self-consistent.
    fn phase(op: &str, rep: u32, bytes: u64, ops: u64, elapsed_s: f64) -> PhaseRecord {
        PhaseRecord {
            op: op.into(),
            rep,
            threads: 4,
            bytes,
            ops,
            read_bytes: if op.contains("read") { bytes } else { 0 },
            write_bytes: if op.contains("write") { bytes } else { 0 },
            elapsed_s,
            bw_mib_s: bytes as f64 / MIB / elapsed_s,
            bw_mb_s: bytes as f64 / 1e6 / elapsed_s,
            iops: ops as f64 / elapsed_s,
            lat_us: LatencySummary {
                mean: 1800.5,
                p50: 1730.25,
                p99: 4100.0,
                p999: 9875.5,
                max: 12034.75,
                min: 610.0,
            },
            open_s: 0.000_123_4,
            io_s: elapsed_s - 0.002,
            close_s: 0.0015,
            fsync_s: 0.0,
            cpu_user_s: 0.021,
            cpu_sys_s: 0.3125,
            stonewall: Stonewall {
                s: elapsed_s,
                bytes,
                bw_mib_s: bytes as f64 / MIB / elapsed_s,
            },
            time_limited: false,
            interrupted: false,
            errors: 0,
            start_skew_s: None,
            worker_start_spread_s: None,
            verify: None,
            files: None,
            workers: (0..4)
                .map(|w| WorkerRecord {
                    worker: w,
                    host: "node01".into(),
                    bytes: bytes / 4,
                    ops: ops / 4,
                    start_s: 0.0,
                    end_s: elapsed_s,
                    open_s: 0.000_123_4,
                    io_s: elapsed_s - 0.002,
                    close_s: 0.0015,
                    bw_mib_s: bytes as f64 / 4.0 / MIB / elapsed_s,
                })
                .collect(),
            series: None,
            steady: None,
            retries: None,
        }
    }

    fn fixture() -> ResultSet {
        let mut rs = ResultSet {
            schema: SCHEMA,
            tool: "ioscale".into(),
            version: "0.1.0".into(),
            command: vec![
                "ioscale".into(),
                "run".into(),
                "/mnt/lustre/scratch/ioscale".into(),
                "--op".into(),
                "write,read".into(),
            ],
            started: "2025-01-02T03:04:05Z".into(),
            host: fixture_host(),
            spec: crate::model::JobSpec::Run(fixture_spec()),
            warnings: vec![
                "the data (4 GiB) is smaller than twice the memory (251.5 GiB); reads may come from the page cache".into(),
            ],
            interrupted: false,
            errors: fixture_errors(),
            phases: fixture_phases(),
            failed_phases: Vec::new(),
            summary: Vec::new(),
        };
        rs.summarise();
        rs
    }

    /// The fixture's spec: 4 workers writing and reading 1 GiB each.
    fn fixture_spec() -> WorkloadSpec {
        RawWorkload {
            target: Some(PathBuf::from("/mnt/lustre/scratch/ioscale")),
            ops: vec![Op::Write, Op::Read],
            threads: Some(4),
            xfer: Some(1 << 20),
            size: Some(1 << 30),
            reps: Some(2),
            sync: Some(spec::SyncMode::End),
            time_limit: Some(Duration::from_secs(30)),
            verify: true,
            ..Default::default()
        }
        .build()
        .expect("fixture workload is valid")
    }

    /// The fixture's phases: two repetitions of write and read, with a
    /// straggler, a read that found corrupted data, and a tiny phase.
    fn fixture_phases() -> Vec<PhaseRecord> {
        let total = 4u64 << 30;
        let ops = 4096;

        let w0 = phase("write", 0, total, ops, 2.3456);
        let r0 = phase("read", 0, total, ops, 0.8125);

        // A slow straggler: the first worker finished well before the last.
        let mut w1 = phase("write", 1, total, ops, 3.5);
        w1.stonewall = Stonewall {
            s: 2.75,
            bytes: 3 << 30,
            bw_mib_s: (3u64 << 30) as f64 / MIB / 2.75,
        };
        w1.time_limited = true;

        // A read that found corrupted data and lost a worker.
        let mut r1 = phase("read", 1, total - (64 << 20), ops - 64, 0.9);
        r1.errors = 1;
        r1.verify = Some(VerifyRecord {
            checked_bytes: total - (64 << 20),
            bad_bytes: 4096 + 512,
            mismatches: vec![
                Mismatch {
                    file: "/mnt/lustre/scratch/ioscale/ioscale.2".into(),
                    offset: 1_048_576,
                    bad_bytes: 4096,
                },
                Mismatch {
                    file: "/mnt/lustre/scratch/ioscale/ioscale.3".into(),
                    offset: 7_340_544,
                    bad_bytes: 512,
                },
            ],
        });

        // A tiny, slow phase to exercise the small-number formats.
        let mut tiny = phase("randread", 0, 40 << 10, 10, 0.25);
        tiny.cpu_user_s = 0.0;
        tiny.lat_us = LatencySummary {
            mean: 25_000.0,
            p50: 24_999.9,
            p99: 31_000.0,
            p999: 31_000.0,
            max: 31_000.0,
            min: 20_000.0,
        };

        vec![w0, r0, tiny, w1, r1]
    }

    /// The fixture's machine: a Lustre client.
    fn fixture_host() -> HostInfo {
        HostInfo {
            hostname: "node01".into(),
            kernel: "6.8.0-45-generic".into(),
            cpus: 64,
            mem_bytes: 270_000_000_000,
            target: "/mnt/lustre/scratch/ioscale".into(),
            mount_point: "/mnt/lustre".into(),
            fs_type: "lustre".into(),
            fs_source: "10.0.0.1@o2ib:/scratch".into(),
            mount_options: "rw,flock,lazystatfs".into(),
            ..Default::default()
        }
    }

    /// The fixture's errors: an EIO on a read, EDQUOT on a close.
    fn fixture_errors() -> Vec<ErrorRecord> {
        vec![
            ErrorRecord {
                worker: 3,
                op: "read".into(),
                file: "/mnt/lustre/scratch/ioscale/ioscale.3".into(),
                offset: Some(201_326_592),
                errno: Some(5),
                message: "Input/output error (os error 5)".into(),
            },
            ErrorRecord {
                worker: 1,
                op: "close".into(),
                file: "/mnt/lustre/scratch/ioscale/ioscale.1".into(),
                offset: None,
                errno: Some(122),
                message: "Disk quota exceeded (os error 122)".into(),
            },
        ]
    }

    fn render(t: ExportType, rs: &ResultSet) -> String {
        String::from_utf8(t.exporter().render(rs).expect("render")).expect("UTF-8")
    }

    /// Compares with `tests/golden/<name>`; `UPDATE_GOLDEN=1` rewrites it.
    fn check_golden(name: &str, got: &str) {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden")
            .join(name);
        if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, got).unwrap();
            return;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; run with UPDATE_GOLDEN=1 to create it",
                path.display()
            )
        });
        assert!(
            want == got,
            "{} differs (UPDATE_GOLDEN=1 rewrites it)\n--- want\n{want}\n--- got\n{got}",
            path.display()
        );
    }

    #[test]
    fn golden_text() {
        check_golden("results.txt", &render(ExportType::Text, &fixture()));
    }

    #[test]
    fn golden_csv() {
        check_golden("results.csv", &render(ExportType::Csv, &fixture()));
    }

    #[test]
    fn golden_json() {
        check_golden("results.json", &render(ExportType::Json, &fixture()));
    }

    #[test]
    fn json_round_trip() {
        let rs = fixture();
        let bytes = JsonExporter.render(&rs).unwrap();
        assert_eq!(bytes.last(), Some(&b'\n'));
        assert_eq!(from_json(&bytes).unwrap(), rs);
    }

    #[test]
    fn json_has_contract_fields() {
        let bytes = JsonExporter.render(&fixture()).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let phase = &v["phases"][0];
        for key in [
            "op",
            "threads",
            "bytes",
            "ops",
            "elapsed_s",
            "bw_mib_s",
            "iops",
            "lat_us",
            "cpu_user_s",
            "cpu_sys_s",
        ] {
            assert!(phase.get(key).is_some(), "phase lacks {key}");
        }
        for key in ["p50", "p99", "p999", "max"] {
            assert!(phase["lat_us"].get(key).is_some(), "lat_us lacks {key}");
        }
    }

    #[test]
    fn from_json_refuses_newer_schema() {
        let mut rs = fixture();
        rs.schema = SCHEMA + 1;
        let bytes = JsonExporter.render(&rs).unwrap();
        assert!(matches!(
            from_json(&bytes),
            Err(ExportError::Schema { found, .. }) if found == SCHEMA + 1
        ));
        assert!(matches!(from_json(b"{"), Err(ExportError::Json(_))));
    }

    #[test]
    fn csv_one_line_per_phase() {
        let rs = fixture();
        let text = render(ExportType::Csv, &rs);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), rs.phases.len() + 1);
        assert_eq!(lines[0], CSV_COLUMNS.join(","));
        for line in &lines {
            assert_eq!(line.split(',').count(), CSV_COLUMNS.len(), "{line}");
        }
    }

    #[test]
    fn csv_quotes_only_when_needed() {
        assert_eq!(csv_field("write"), "write");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        let mut rs = fixture();
        rs.phases.truncate(1);
        rs.phases[0].op = "odd,op".into();
        let text = render(ExportType::Csv, &rs);
        assert!(text.lines().nth(1).unwrap().starts_with("\"odd,op\",0,4,"));
    }

    #[test]
    fn text_interrupted_and_no_summary() {
        let mut rs = fixture();
        rs.phases.truncate(2);
        rs.phases[1].interrupted = true;
        rs.interrupted = true;
        rs.errors.clear();
        rs.summarise();
        let text = render(ExportType::Text, &rs);
        assert!(
            text.ends_with("interrupted: results so far are shown\n"),
            "{text}"
        );
        assert!(text.contains("  read rep 1: interrupted"), "{text}");
        assert!(!text.contains("Summary over"), "{text}");
        assert!(!text.contains("error:"), "{text}");
    }

    #[test]
    fn text_without_phases() {
        let mut rs = fixture();
        rs.phases.clear();
        rs.summarise();
        let text = render(ExportType::Text, &rs);
        assert!(text.contains("no phase completed"), "{text}");
    }

    #[test]
    fn number_formats() {
        assert_eq!(fmt_rate(999.994), "999.99");
        assert_eq!(fmt_rate(1843.27), "1843.3");
        assert_eq!(fmt_iops(12.345), "12.35");
        assert_eq!(fmt_iops(5042.6), "5043");
        assert_eq!(fmt_lat(1730.25), "1730.2");
        assert_eq!(fmt_secs(2.3456), "2.346");
        assert_eq!(fmt_secs(0.0), "0.000");
        assert_eq!(fmt_secs(0.0015), "0.001500");
        assert_eq!(fmt_secs(0.000_123_4), "0.0001234");
        assert_eq!(fmt_secs(0.05), "0.050");
    }

    #[test]
    fn table_widths_follow_content() {
        let rows = vec![
            vec!["write".to_string(), "1".to_string()],
            vec!["randread".to_string(), "123456789".to_string()],
        ];
        assert_eq!(
            table(&["op", "n"], &rows),
            vec![
                "op                n",
                "write             1",
                "randread  123456789",
            ]
        );
    }

    #[test]
    fn export_type_names() {
        for t in ExportType::ALL {
            assert_eq!(ExportType::parse(t.name()), Some(t));
        }
        assert_eq!(ExportType::parse("TXT"), Some(ExportType::Text));
        assert_eq!(ExportType::parse("html"), None);
        assert_eq!(ExportType::Csv.to_string(), "csv");
    }
}
