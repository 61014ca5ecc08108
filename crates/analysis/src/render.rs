//! Text and CSV renderings of a sweep, and reading records back.
//!
//! The table follows the seeds' hand-made tables (Operation, Threads, File
//! count, Directory per file, Duration, Throughput in MB/s) with the spread
//! over repetitions beside it, so a sweep's output can be pasted where the
//! seeds pasted theirs. Like the run exporters these return strings and
//! never write anything themselves.

use report::{ExportError, ResultSet};

use crate::findings::analyse;
use crate::model::{point_stats, SweepConfig, SweepPoint, SweepRecord, SWEEP_SCHEMA};
use crate::verdict::num;

/// A saved record: a sweep, or a plain run.
#[derive(Debug, Clone)]
pub enum Loaded {
    /// `ioscale sweep --json`.
    Sweep(Box<SweepRecord>),
    /// `ioscale run --json` (or `meta`).
    Run(Box<ResultSet>),
}

impl Loaded {
    /// The record as a sweep: a run becomes a one-point sweep, so every
    /// renderer serves both.
    pub fn into_sweep(self) -> SweepRecord {
        match self {
            Loaded::Sweep(s) => *s,
            Loaded::Run(r) => sweep_of_run(*r),
        }
    }
}

/// Why a saved record could not be read.
#[derive(thiserror::Error, Debug)]
pub enum LoadError {
    /// Not JSON, or not a record ioscale wrote.
    #[error("not an ioscale results record: {0}")]
    Json(#[from] serde_json::Error),
    /// A run record that the run reader refused.
    #[error("{0}")]
    Run(#[from] ExportError),
    /// A sweep layout newer than this build.
    #[error("sweep schema {0} is newer than the supported schema {SWEEP_SCHEMA}; upgrade ioscale to read it")]
    Schema(u32),
}

/// Reads a sweep record or a run record.
pub fn load(bytes: &[u8]) -> Result<Loaded, LoadError> {
    let v: serde_json::Value = serde_json::from_slice(bytes)?;
    if v.get("kind").and_then(|k| k.as_str()) == Some("sweep") {
        let schema = v.get("schema").and_then(|s| s.as_u64()).unwrap_or(0) as u32;
        if schema > SWEEP_SCHEMA {
            return Err(LoadError::Schema(schema));
        }
        Ok(Loaded::Sweep(Box::new(checked_sweep(
            serde_json::from_value(v)?,
        )?)))
    } else {
        Ok(Loaded::Run(Box::new(report::from_json(bytes)?)))
    }
}

/// [`load`] from a file (or anything seekable), reading at most `limit`
/// bytes, without holding the text or a tree of JSON values: a first pass
/// reads only the top-level `kind` and `schema`, a second (after seeking
/// back to the start) parses the record straight into its type. Memory is
/// that of the parsed record.
pub fn load_from<R: std::io::Read + std::io::Seek>(
    mut r: R,
    limit: u64,
) -> Result<Loaded, LoadError> {
    use std::io::{BufReader, Read, SeekFrom};
    #[derive(serde::Deserialize)]
    struct Head {
        #[serde(default)]
        kind: Option<serde_json::Value>,
        #[serde(default)]
        schema: Option<serde_json::Value>,
    }
    let head: Head = serde_json::from_reader(BufReader::new((&mut r).take(limit)))?;
    r.seek(SeekFrom::Start(0)).map_err(serde_json::Error::io)?;
    if head.kind.as_ref().and_then(|k| k.as_str()) == Some("sweep") {
        let schema = head.schema.as_ref().and_then(|s| s.as_u64()).unwrap_or(0) as u32;
        if schema > SWEEP_SCHEMA {
            return Err(LoadError::Schema(schema));
        }
        let rec: SweepRecord = serde_json::from_reader(BufReader::new((&mut r).take(limit)))?;
        Ok(Loaded::Sweep(Box::new(checked_sweep(rec)?)))
    } else {
        Ok(Loaded::Run(Box::new(report::from_json_reader(
            (&mut r).take(limit),
        )?)))
    }
}

/// Every point's run record checked as a run record is
/// ([`report::check_figures`]), its summary recomputed from its phases,
/// and each point's statistics compared with what its phases give (to a
/// relative 1e-6: the stored bits are kept, so a resumed sweep keeps its
/// points as they were): a reader never takes the record's word for them.
/// Each phase's measured resources are checked
/// ([`probe::Resources::check`]) and each operation's taken from them.
fn checked_sweep(mut rec: SweepRecord) -> Result<SweepRecord, LoadError> {
    check_point_threads(&rec)?;
    check_points_order(&rec)?;
    let trim = rec.config.trim;
    for (i, p) in rec.points.iter_mut().enumerate() {
        check_point(p, i, trim)?;
    }
    Ok(rec)
}

/// [`checked_sweep`]: each point saved once, in order, below
/// points_total, and numbered within the sweep's repetitions.
fn check_points_order(rec: &SweepRecord) -> Result<(), LoadError> {
    // A sweep saves each point once, in sweep order, and has no more
    // points than points_total: a repeated or extra point would be drawn
    // (and resumed) as a measurement of its own.
    let mut last: Option<usize> = None;
    for (i, p) in rec.points.iter().enumerate() {
        let why = if last.is_some_and(|l| p.index <= l) {
            "repeats or goes back from the index of the point before; a sweep saves each point once, in order"
        } else if p.index >= rec.points_total {
            "is not below points_total; a sweep has no more points than that"
        } else {
            last = Some(p.index);
            continue;
        };
        return Err(LoadError::Run(ExportError::Figure {
            field: format!("points[{i}].index"),
            value: p.index.to_string(),
            why,
        }));
    }
    // Every point ran the sweep's repetitions: none is numbered past them
    // (the header says "N rep(s) per point" from config.reps).
    if rec.config.reps == 0 && !rec.points.is_empty() {
        return Err(LoadError::Run(ExportError::Figure {
            field: "config.reps".into(),
            value: "0".into(),
            why: "a sweep whose points ran has at least one repetition per point",
        }));
    }
    for (i, p) in rec.points.iter().enumerate() {
        let reps = p.result.phases.iter().map(|ph| ph.rep).enumerate();
        let failed = p.result.failed_phases.iter().map(|f| f.rep).enumerate();
        for (name, (j, rep)) in reps
            .map(|x| ("phases", x))
            .chain(failed.map(|x| ("failed_phases", x)))
        {
            if rep >= rec.config.reps {
                return Err(LoadError::Run(ExportError::Figure {
                    field: format!("points[{i}].result.{name}[{j}].rep"),
                    value: rep.to_string(),
                    why: "is not below config.reps, the repetitions each point ran",
                }));
            }
        }
    }
    Ok(())
}

/// [`checked_sweep`] for point `i`: its run record, its summary, its
/// probes, and its statistics against what its phases give.
fn check_point(p: &mut SweepPoint, i: usize, trim: u32) -> Result<(), LoadError> {
    report::check_figures(&p.result, &format!("points[{i}].result."))?;
    check_summary(&p.result, i)?;
    for (j, probe) in p.probes.iter().enumerate() {
        probe.resources.check().map_err(|b| {
            LoadError::Run(ExportError::Figure {
                field: format!("points[{i}].probes[{j}].resources.{}", b.field),
                value: b.value,
                why: b.why,
            })
        })?;
    }
    let (ops, bw, iops) = crate::model::point_stats_probed(&p.result, p.threads, trim, &p.probes);
    let field = |name: &str| format!("points[{i}].{name}");
    if ops.len() != p.ops.len() {
        return Err(figure(field("ops"), p.ops.len() as f64));
    }
    let opt = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => near(a, b),
        (a, b) => a.is_none() && b.is_none(),
    };
    if !opt(p.geomean_bw_mib_s, bw) {
        let v = p.geomean_bw_mib_s.unwrap_or(f64::NAN);
        return Err(figure(field("geomean_bw_mib_s"), v));
    }
    if !opt(p.geomean_iops, iops) {
        let v = p.geomean_iops.unwrap_or(f64::NAN);
        return Err(figure(field("geomean_iops"), v));
    }
    // What each operation used is the probes' (checked above), and its
    // Little's law the phases' (over the requests in flight; in an
    // older record over the workers alone): never the record's word.
    for (have, want) in p.ops.iter_mut().zip(&ops) {
        have.resources.clone_from(&want.resources);
        have.little_latency_s = want.little_latency_s;
        if have.reps == 0 {
            // No good repetition, nothing measured: an older record's 0
            // (or -0.0) there is not a figure.
            have.little_latency_s = None;
            have.lat_p50_us = None;
            have.lat_p99_us = None;
            have.cpu_busy = None;
            have.cpu_s_per_op = None;
        }
        // Latencies an older record lacks come from the phases; those
        // it holds are checked against them below.
        have.lat_p50_us = have.lat_p50_us.or(want.lat_p50_us);
        have.lat_p99_us = have.lat_p99_us.or(want.lat_p99_us);
    }
    for (k, (have, want)) in p.ops.iter().zip(&ops).enumerate() {
        for (name, a, b) in [
            ("bw_mib_s.mean", have.bw_mib_s.mean, want.bw_mib_s.mean),
            ("bw_mib_s.min", have.bw_mib_s.min, want.bw_mib_s.min),
            ("bw_mib_s.max", have.bw_mib_s.max, want.bw_mib_s.max),
            (
                "bw_mib_s.median",
                have.bw_mib_s.median,
                want.bw_mib_s.median,
            ),
            ("iops.mean", have.iops.mean, want.iops.mean),
            ("elapsed_s.mean", have.elapsed_s.mean, want.elapsed_s.mean),
        ] {
            if !near(a, b) {
                return Err(figure(field(&format!("ops[{k}].{name}")), a));
            }
        }
        for (name, a, b) in [
            (
                "bw_mib_s_trimmed",
                have.bw_mib_s_trimmed,
                want.bw_mib_s_trimmed,
            ),
            ("iops_trimmed", have.iops_trimmed, want.iops_trimmed),
            // The latencies the p99 rule, Little's law and the table
            // quote: what the phases' histograms give, never the
            // record's word (a median of 1e308 us was quoted as such;
            // one an older record lacks was taken from the phases).
            ("lat_p50_us", have.lat_p50_us, want.lat_p50_us),
            ("lat_p99_us", have.lat_p99_us, want.lat_p99_us),
        ] {
            if !opt(a, b) {
                let v = a.unwrap_or(f64::NAN);
                return Err(figure(field(&format!("ops[{k}].{name}")), v));
            }
        }
    }
    Ok(())
}

/// Every point ran at least one worker: a point of 0 was reported as "0
/// workers" at "inf operations/s" (its rates divide by it).
fn check_point_threads(rec: &SweepRecord) -> Result<(), LoadError> {
    match rec.points.iter().position(|p| p.threads == 0) {
        Some(i) => Err(LoadError::Run(ExportError::Figure {
            field: format!("points[{i}].threads"),
            value: "0".into(),
            why: "a point runs at least one worker",
        })),
        None => Ok(()),
    }
}

/// A CSV cell of `digits` decimals; empty where nothing was measured.
fn fixed(v: Option<f64>, digits: usize) -> String {
    v.map(|v| format!("{v:.digits$}")).unwrap_or_default()
}

/// Two figures equal but for the order they were summed in.
fn near(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()) + 1e-12
}

/// A point's run summary must be what its phases give (compared, not
/// replaced: a sweep sums repetitions in its own order, so the last bits
/// may differ, and a resumed sweep keeps its points as they were).
fn check_summary(rs: &ResultSet, i: usize) -> Result<(), LoadError> {
    let mut want = rs.clone();
    want.summarise();
    let field = |name: String| format!("points[{i}].result.summary{name}");
    if want.summary.len() != rs.summary.len() {
        return Err(figure(field(String::new()), rs.summary.len() as f64));
    }
    for (k, (have, want)) in rs.summary.iter().zip(&want.summary).enumerate() {
        for (name, a, b) in [
            ("bw_mib_s", &have.bw_mib_s, &want.bw_mib_s),
            ("iops", &have.iops, &want.iops),
            ("elapsed_s", &have.elapsed_s, &want.elapsed_s),
        ] {
            for (part, x, y) in [
                ("min", a.min, b.min),
                ("max", a.max, b.max),
                ("mean", a.mean, b.mean),
                ("median", a.median, b.median),
            ] {
                if !near(x, y) {
                    return Err(figure(field(format!("[{k}].{name}.{part}")), x));
                }
            }
        }
    }
    Ok(())
}

fn figure(field: String, value: f64) -> LoadError {
    LoadError::Run(ExportError::Figure {
        field,
        value: value.to_string(),
        why: "is not what the point's phases give",
    })
}

/// Wraps a run record as a sweep of one point.
pub fn sweep_of_run(rs: ResultSet) -> SweepRecord {
    let (threads, reps) = crate::model::run_threads_and_reps(&rs);
    let (xfer, layout, file_count, dir_per_file, per_thread) = match rs.spec.as_run() {
        Some(w) => (
            w.xfer,
            w.layout.name().to_string(),
            w.file_count() as u64,
            w.layout == spec::Layout::PerThreadDir,
            w.bytes_per_worker(),
        ),
        None => {
            let files = rs
                .phases
                .first()
                .and_then(|p| p.files.as_ref())
                .map(|f| f.requested)
                .unwrap_or(0);
            // As a sweep plans a metadata point: files per thread × the
            // largest file (saturating: the record's numbers are the
            // user's).
            let per_thread = rs
                .spec
                .as_meta()
                .map(|m| m.files.saturating_mul(m.file_size.max()))
                .unwrap_or(0);
            (0, String::new(), files, false, per_thread)
        }
    };
    let trim = crate::model::default_trim(reps);
    let (ops, geomean_bw_mib_s, geomean_iops) = point_stats(&rs, threads, trim);
    let point = SweepPoint {
        index: 0,
        series: String::new(),
        threads,
        xfer,
        layout,
        target: rs.host.target.clone(),
        file_count,
        dir_per_file,
        bytes_per_thread: per_thread,
        ops,
        geomean_bw_mib_s,
        geomean_iops,
        result: rs.clone(),
        probes: Vec::new(),
        reps_auto: None,
    };
    let mut rec = SweepRecord {
        schema: SWEEP_SCHEMA,
        tool: "ioscale".into(),
        kind: "sweep".into(),
        version: rs.version.clone(),
        command: rs.command.clone(),
        started: rs.started.clone(),
        host: rs.host.clone(),
        config: SweepConfig {
            command: if rs.spec.as_run().is_some() {
                "run"
            } else {
                "meta"
            }
            .into(),
            threads: vec![threads],
            reps,
            trim,
            ..Default::default()
        },
        search: None,
        interrupted: rs.interrupted,
        points_total: 1,
        stop_reason: None,
        points: vec![point],
        analysis: Default::default(),
    };
    rec.analysis = analyse(&rec);
    rec
}

/// Which swept values vary between the points (and so need a column).
#[derive(Debug, Clone, Copy)]
pub struct Varying {
    /// More than one target.
    pub target: bool,
    /// More than one layout.
    pub layout: bool,
    /// More than one transfer size.
    pub xfer: bool,
    /// Some point ran under MPI with more than one rank: the table shows
    /// workers, ranks and threads per rank.
    pub ranks: bool,
    /// More than one node count (`sweep --nodes`): the table shows nodes.
    pub nodes: bool,
}

/// Finds which swept values vary.
pub fn varying(points: &[SweepPoint]) -> Varying {
    let differs =
        |f: &dyn Fn(&SweepPoint) -> String| points.windows(2).any(|w| f(&w[0]) != f(&w[1]));
    Varying {
        target: differs(&|p| p.target.clone()),
        layout: differs(&|p| p.layout.clone()),
        xfer: differs(&|p| p.xfer.to_string()),
        ranks: points.iter().any(|p| p.topology().0 > 1),
        nodes: differs(&|p| p.nodes().to_string()),
    }
}

/// One row of the seed-style table.
#[derive(Debug, Clone)]
pub struct Row {
    /// Cells, in [`table_head`] order.
    pub cells: Vec<String>,
    /// Anchor of the row (`pt-<series>-<op>-<workers>`), which the HTML
    /// verdicts link to.
    pub anchor: String,
    /// Repetitions of this row that failed.
    pub failed: usize,
}

/// The anchor of a table row, shared by the table and the verdict links.
pub fn anchor(series: &str, op: &str, workers: u32) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect()
    };
    format!("pt-{}-{}-{workers}", clean(series), clean(op))
}

/// The latency unit of a table: ms when any median reaches 1 ms, else µs.
pub fn latency_unit(rec: &SweepRecord) -> (&'static str, f64) {
    let any_ms = rec
        .points
        .iter()
        .flat_map(|p| &p.ops)
        .any(|o| o.lat_p50_us.is_some_and(|l| l >= 1000.0));
    if any_ms {
        ("ms", 1e-3)
    } else {
        ("µs", 1.0)
    }
}

/// The rate column's unit: files/s when every operation counts files,
/// else ops/s.
fn rate_unit(rec: &SweepRecord) -> &'static str {
    let all_files = rec
        .points
        .iter()
        .flat_map(|p| &p.ops)
        .all(|o| o.counts_files);
    if all_files && !rec.points.is_empty() {
        "files/s"
    } else {
        "ops/s"
    }
}

/// Whether any operation moves data (so the table has a throughput column).
fn any_data(rec: &SweepRecord) -> bool {
    rec.points
        .iter()
        .flat_map(|p| &p.ops)
        .any(|o| o.moves_data() || rec.op_moves_data(&o.op))
}

/// The column names of the seed-style table, in the record's units.
pub fn table_head_for(rec: &SweepRecord) -> Vec<String> {
    let v = varying(&rec.points);
    let u = rec.analysis.units.data();
    let (lu, _) = latency_unit(rec);
    let mut h: Vec<String> = Vec::new();
    if v.target {
        h.push("Target".into());
    }
    if v.layout {
        h.push("Layout".into());
    }
    if v.xfer {
        h.push("Transfer".into());
    }
    h.push("Operation".into());
    if v.nodes {
        h.push("Nodes".into());
    }
    if v.ranks {
        h.extend(["Workers".into(), "Ranks".into(), "Threads per rank".into()]);
    } else {
        h.push("Threads".into());
    }
    h.extend([
        "File count".into(),
        "Directory per file".into(),
        "Duration (s)".into(),
    ]);
    if any_data(rec) {
        h.push(format!("Throughput ({u})"));
        h.push(format!("95% CI ({u})"));
    }
    let ru = rate_unit(rec);
    h.push(format!("Rate ({ru})"));
    if !any_data(rec) {
        h.push(format!("95% CI ({ru})"));
    }
    h.extend([
        format!("p50 ({lu})"),
        format!("p99 ({lu})"),
        "Reps".into(),
        "Outliers".into(),
    ]);
    h
}

/// The column names of the seed-style table (kept for callers that only
/// know which values vary; the units are those of an `analyse` record).
pub fn table_head(v: Varying) -> Vec<&'static str> {
    let mut h = Vec::new();
    if v.target {
        h.push("Target");
    }
    if v.layout {
        h.push("Layout");
    }
    if v.xfer {
        h.push("Transfer");
    }
    h.push("Operation");
    if v.nodes {
        h.push("Nodes");
    }
    if v.ranks {
        h.extend(["Workers", "Ranks", "Threads per rank"]);
    } else {
        h.push("Threads");
    }
    h.extend(["File count", "Directory per file", "Duration (s)"]);
    h
}

/// The table rows: by series, then operation, then worker count.
pub fn table_rows(rec: &SweepRecord) -> Vec<Row> {
    let look = Look {
        v: varying(&rec.points),
        units: rec.analysis.units,
        lscale: latency_unit(rec).1,
        data_col: any_data(rec),
    };
    let mut series: Vec<&str> = Vec::new();
    for p in &rec.points {
        if !series.contains(&p.series.as_str()) {
            series.push(&p.series);
        }
    }
    let mut rows = Vec::new();
    for s in series {
        let pts: Vec<&SweepPoint> = rec.points.iter().filter(|p| p.series == s).collect();
        let mut ops: Vec<&str> = Vec::new();
        for p in &pts {
            for o in &p.ops {
                if !ops.contains(&o.op.as_str()) {
                    ops.push(&o.op);
                }
            }
        }
        for op in ops {
            let mut these: Vec<&&SweepPoint> = pts
                .iter()
                .filter(|p| p.ops.iter().any(|o| o.op == op))
                .collect();
            these.sort_by_key(|p| p.workers());
            for p in these {
                let o = p.ops.iter().find(|o| o.op == op).expect("filtered");
                let (_, _, workers) = p.topology();
                let cells = row_cells(p, o, &look);
                rows.push(Row {
                    cells,
                    anchor: anchor(&p.series, op, workers),
                    failed: o.failed,
                });
            }
        }
    }
    rows
}

/// What every row of a table shares: the columns that vary, the units.
struct Look {
    v: Varying,
    units: crate::findings::Units,
    /// Microseconds to the table's latency unit.
    lscale: f64,
    /// Whether the table has data-rate columns.
    data_col: bool,
}

/// The cells of the row of operation `o` at point `p`.
fn row_cells(p: &SweepPoint, o: &crate::model::OpStats, look: &Look) -> Vec<String> {
    let Look {
        v,
        units,
        lscale,
        data_col,
    } = look;
    let (units, lscale, data_col) = (*units, *lscale, *data_col);
    let op = o.op.as_str();
    let (ranks, tpr, workers) = p.topology();
    let ok = o.reps > 0;
    let dash = || "-".to_string();
    let f2 = |x: f64| if ok { format!("{x:.2}") } else { dash() };
    let ci = |iv: Option<stats::Interval>, scale: &dyn Fn(f64) -> f64| match iv {
        Some(c) if ok && c.n > 1 => {
            format!("{}–{}", num(scale(c.lo)), num(scale(c.hi)))
        }
        _ => dash(),
    };
    let mut cells = Vec::new();
    if v.target {
        cells.push(p.target.clone());
    }
    if v.layout {
        cells.push(p.layout.clone());
    }
    if v.xfer {
        cells.push(spec::format_size(p.xfer));
    }
    cells.push(cap(op));
    if v.nodes {
        cells.push(p.nodes().to_string());
    }
    if v.ranks {
        cells.extend([workers.to_string(), ranks.to_string(), tpr.to_string()]);
    } else {
        cells.push(workers.to_string());
    }
    cells.extend([
        p.file_count.to_string(),
        if p.dir_per_file { "Y" } else { "N" }.to_string(),
        f2(o.center_elapsed_s()),
    ]);
    if data_col {
        if o.moves_data() {
            cells.push(f2(units.from_mib_s(o.center_bw_mib_s())));
            // The bandwidth's interval (stored over the bandwidth).
            cells.push(ci(o.ci, &|x| units.from_mib_s(x)));
        } else {
            cells.extend([dash(), dash()]);
        }
    }
    cells.push(if ok { num(o.center_iops()) } else { dash() });
    if !data_col {
        cells.push(ci(o.rate_ci(), &|x| x));
    }
    cells.extend([
        match o.lat_p50_us.filter(|&l| ok && l > 0.0) {
            Some(l) => num(l * lscale),
            None => dash(),
        },
        match o.lat_p99_us.filter(|&l| ok && l > 0.0) {
            Some(l) => num(l * lscale),
            None => dash(),
        },
        if o.failed > 0 {
            format!("{} ({} failed)", o.reps, o.failed)
        } else {
            o.reps.to_string()
        },
        if o.outlier_reps.is_empty() {
            dash()
        } else {
            o.outlier_reps
                .iter()
                .map(|r| format!("rep {}", report::shown_rep(*r)))
                .collect::<Vec<_>>()
                .join(" ")
        },
    ]);
    cells
}

fn cap(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// Lays out a table: text columns left-aligned, numbers right-aligned.
pub fn layout_table(head: &[&str], rows: &[Vec<String>]) -> Vec<String> {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let numeric: Vec<bool> = (0..head.len())
        .map(|i| {
            rows.iter().all(|r| {
                r.get(i)
                    .is_some_and(|c| c.parse::<f64>().is_ok() || c == "-")
            }) && !rows.is_empty()
        })
        .collect();
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = " ".repeat(widths[i].saturating_sub(c.chars().count()));
            if i > 0 {
                s.push_str("  ");
            }
            if numeric[i] {
                s.push_str(&pad);
                s.push_str(c);
            } else {
                s.push_str(c);
                s.push_str(&pad);
            }
        }
        s.trim_end().to_string()
    };
    let mut out = vec![line(head.to_vec())];
    out.extend(
        rows.iter()
            .map(|r| line(r.iter().map(String::as_str).collect())),
    );
    out
}

/// What the sweep covered, in one line.
pub fn describe(rec: &SweepRecord) -> String {
    let c = &rec.config;
    let mut parts = vec![match &c.threads_auto {
        Some(a) if c.search_axis != crate::adapt::Axis::Workers => {
            let axis = c.search_axis;
            format!(
                "{} auto:{} (searched)",
                axis.flag().trim_start_matches('-'),
                match axis {
                    crate::adapt::Axis::Xfer { .. } => axis.count_text(a.max),
                    _ => a.max.to_string(),
                }
            )
        }
        Some(a) => format!("threads auto:{} (searched)", a.max),
        None => format!(
            "threads {}",
            c.threads
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
    }];
    if !c.xfer.is_empty() {
        parts.push(format!(
            "xfer {}",
            c.xfer
                .iter()
                .map(|x| spec::format_size(*x))
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    if !c.layout.is_empty() {
        parts.push(format!("layout {}", c.layout.join(",")));
    }
    if !c.targets.is_empty() {
        parts.push(format!("target {}", c.targets.join(",")));
    }
    let points = match &c.threads_auto {
        Some(_) => format!("{} points measured by the search", rec.points.len()),
        None => format!("{} of {} points", rec.points.len(), rec.points_total),
    };
    let reps = match &c.reps_auto {
        Some(r) => format!(
            "repetitions until the 95% interval is within ±{}% ({} to {} per point)",
            crate::adapt::percent(r.target),
            r.min,
            r.max
        ),
        None => format!("{} rep(s) per point", c.reps),
    };
    format!(
        "sweep of `{}`: {} ({points}), {reps}, {} data scaling, trimmed mean drops {} at each end",
        c.command,
        parts.join(" × "),
        if c.scale.is_empty() { "-" } else { &c.scale },
        c.trim
    )
}

/// The human output: header, seed-style table, geometric means,
/// warnings, the analysis.
pub fn render_text(rec: &SweepRecord) -> String {
    let mut sections: Vec<Vec<String>> = Vec::new();
    let h = &rec.host;
    sections.push(vec![
        format!(
            "ioscale {}  {}  kernel {}  {} CPUs  {:.1} GiB",
            rec.version,
            h.hostname,
            h.kernel,
            h.cpus,
            h.mem_bytes as f64 / (1u64 << 30) as f64
        ),
        describe(rec),
        match rec.points.first() {
            // An object store's target has no file-system type: no "()".
            Some(p) => match p.result.host.fs_type.as_str() {
                "" => format!(
                    "workload (first point): {}; target {}",
                    p.result.spec.describe(),
                    p.target
                ),
                fs => format!(
                    "workload (first point): {}; target {} ({fs})",
                    p.result.spec.describe(),
                    p.target
                ),
            },
            None => "no point finished".into(),
        },
    ]);
    if !rec.points.is_empty() {
        let rows: Vec<Vec<String>> = table_rows(rec).into_iter().map(|r| r.cells).collect();
        let mut t = vec![
            "Throughput, rate and duration are the trimmed mean (or mean) over the good repetitions; the 95% CI is a bootstrap interval of it; failed repetitions are left out and counted under Reps."
                .to_string(),
        ];
        let head = table_head_for(rec);
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        t.extend(layout_table(&head, &rows));
        sections.push(t);
        if rec.points.iter().any(|p| p.ops.len() > 1) {
            let series = rec.points.iter().any(|p| !p.series.is_empty());
            let rows: Vec<Vec<String>> = rec
                .points
                .iter()
                .map(|p| {
                    // A Series column only where the sweep has several
                    // lines (it read "-" in every row).
                    let mut r = if series {
                        vec![p.series.clone()]
                    } else {
                        Vec::new()
                    };
                    r.extend([
                        p.workers().to_string(),
                        p.geomean_bw_mib_s
                            .map(|g| num(rec.analysis.units.from_mib_s(g)))
                            .unwrap_or_else(|| "-".into()),
                        p.geomean_iops.map(num).unwrap_or_else(|| "-".into()),
                    ]);
                    r
                })
                .collect();
            let mut g = vec!["Geometric mean across operations".to_string()];
            let u = format!("Throughput ({})", rec.analysis.units.data());
            let head = ["Series", "Workers", u.as_str(), "ops/s"];
            g.extend(layout_table(&head[usize::from(!series)..], &rows));
            sections.push(g);
        }
    }
    let mut warns: Vec<String> = Vec::new();
    for p in &rec.points {
        for w in &p.result.warnings {
            // Warnings that name sizes or thread counts differ per point;
            // keep one of each kind.
            if !warns.iter().any(|x| warning_kind(x) == warning_kind(w)) {
                warns.push(w.clone());
            }
        }
    }
    if !warns.is_empty() {
        sections.push(warns.iter().map(|w| format!("warning: {w}")).collect());
    }
    if !rec.analysis.curves.is_empty() || !rec.analysis.notes.is_empty() {
        let mut a = vec!["Analysis".to_string()];
        a.extend(rec.analysis.notes.iter().map(|n| format!("  {n}")));
        for c in &rec.analysis.curves {
            a.push(format!("  {}:", c.name()));
            a.extend(c.sentences.iter().map(|s| format!("    - {s}")));
        }
        if !rec.analysis.comparisons.is_empty() {
            a.push("  compared:".into());
            a.extend(
                rec.analysis
                    .comparisons
                    .iter()
                    .map(|c| format!("    - {}: {}", c.op, c.sentence)),
            );
        }
        sections.push(a);
    }
    sections.extend(adaptive_sections(rec));
    if let Some(u) = unfinished(rec) {
        sections.push(vec![u.sentence()]);
    }
    report::export::join_sections(sections)
}

/// What an adaptive sweep decided: each point's repetitions against the
/// `--reps auto` target, and the `--threads auto` search (each line's
/// optimum and stop, the path, the time against the ladders).
pub fn adaptive_sections(rec: &SweepRecord) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    if rec.config.reps_auto.is_some() {
        let mut r = vec!["Repetitions (--reps auto)".to_string()];
        for p in &rec.points {
            if let Some(o) = &p.reps_auto {
                let series = if p.series.is_empty() {
                    String::new()
                } else {
                    format!("{} ", p.series)
                };
                let w = p.workers();
                let s = if w == 1 { "" } else { "s" };
                r.push(format!("  {series}{w} worker{s}: {}", o.text()));
            }
        }
        if r.len() > 1 {
            out.push(r);
        }
    }
    if let Some(s) = &rec.search {
        let mut r = vec![format!("Search ({} auto)", s.axis.flag())];
        r.extend(s.sentences.iter().map(|x| format!("  {x}")));
        out.push(r);
    }
    out
}

/// A warning's statement without its figures: the part before its first
/// ": " (the figures and advice follow it), digits taken out, so the same
/// warning about different sizes or thread counts counts once, while the
/// same statement about two targets ("the target /a is on tmpfs") does
/// not (a number is a word of digits, so `/mnt/t1` and `/mnt/t2` stay
/// apart).
pub fn warning_kind(w: &str) -> String {
    let head = w.split(": ").next().unwrap_or(w);
    head.split_whitespace()
        .filter(|t| {
            !t.chars()
                .all(|c| c.is_ascii_digit() || c == '.' || c == ',')
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The CSV columns of a sweep, one row per point and operation.
pub const SWEEP_CSV_COLUMNS: [&str; 35] = [
    "point",
    "series",
    "target",
    "layout",
    "xfer",
    "op",
    "threads",
    "file_count",
    "dir_per_file",
    "reps",
    "elapsed_s",
    "bw_mb_s",
    "bw_mib_s",
    "bw_mib_s_min",
    "bw_mib_s_max",
    "bw_mib_s_median",
    "bw_mib_s_stddev",
    "bw_mib_s_trimmed",
    "iops",
    "iops_stddev",
    "little_latency_s",
    "lat_p50_us",
    "cpu_busy",
    "cpu_s_per_op",
    "outliers",
    "geomean_bw_mib_s",
    "geomean_iops",
    "workers",
    "ranks",
    "threads_per_rank",
    "failed",
    "first_error",
    "ci_lo",
    "ci_hi",
    "lat_p99_us",
];

/// One CSV row per point and operation (RFC 4180 quoting).
pub fn render_csv(rec: &SweepRecord) -> String {
    let mut out = SWEEP_CSV_COLUMNS.join(",");
    out.push('\n');
    let opt = |v: Option<f64>| v.map(|x| format!("{x:.3}")).unwrap_or_default();
    for p in &rec.points {
        for o in &p.ops {
            let fields = [
                p.index.to_string(),
                csv(&p.series),
                csv(&p.target),
                csv(&p.layout),
                p.xfer.to_string(),
                csv(&o.op),
                p.threads.to_string(),
                p.file_count.to_string(),
                p.dir_per_file.to_string(),
                o.reps.to_string(),
                format!("{:.6}", o.center_elapsed_s()),
                format!("{:.3}", o.center_bw_mb_s()),
                format!("{:.3}", o.center_bw_mib_s()),
                format!("{:.3}", o.bw_mib_s.min),
                format!("{:.3}", o.bw_mib_s.max),
                format!("{:.3}", o.bw_mib_s.median),
                format!("{:.3}", o.bw_mib_s.stddev),
                opt(o.bw_mib_s_trimmed),
                format!("{:.3}", o.center_iops()),
                format!("{:.3}", o.iops.stddev),
                fixed(o.little_latency_s, 9),
                fixed(o.lat_p50_us, 3),
                fixed(o.cpu_busy, 3),
                fixed(o.cpu_s_per_op, 9),
                csv(&o
                    .outlier_reps
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")),
                opt(p.geomean_bw_mib_s),
                opt(p.geomean_iops),
                p.workers().to_string(),
                p.topology().0.to_string(),
                p.topology().1.to_string(),
                o.failed.to_string(),
                csv(o.first_error.as_deref().unwrap_or("")),
                opt(o.ci.map(|c| c.lo)),
                opt(o.ci.map(|c| c.hi)),
                fixed(o.lat_p99_us, 3),
            ];
            out.push_str(&fields.join(","));
            out.push('\n');
        }
    }
    out
}

fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The canonical JSON, pretty-printed with a trailing newline.
pub fn render_json(rec: &SweepRecord) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = serde_json::to_vec_pretty(rec)?;
    out.push(b'\n');
    Ok(out)
}

/// Why a sweep record holds fewer points than its sweep has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unfinished {
    /// Points measured.
    pub measured: usize,
    /// Points in the whole sweep.
    pub total: usize,
    /// What stopped it: "interrupted by SIGINT", "refused: point …", or
    /// (an older record, a journal of a sweep still running or killed)
    /// what can be said without knowing.
    pub reason: String,
    /// What to do next.
    pub next: &'static str,
    /// A `--threads auto` search that had counts left to measure: its
    /// points are not a share of a known total.
    pub searching: bool,
}

impl Unfinished {
    /// The headline: "unfinished: 1 of 3 points measured".
    pub fn head(&self) -> String {
        if self.searching {
            return format!(
                "unfinished: the search stopped after {} points, with counts left to measure",
                self.measured
            );
        }
        if self.measured >= self.total {
            // A single run (or the last point) stopped part way.
            return "unfinished: interrupted before the end".into();
        }
        format!(
            "unfinished: {} of {} points measured",
            self.measured, self.total
        )
    }

    /// One line: head, reason and what to do next.
    pub fn sentence(&self) -> String {
        format!("{} ({}); {}", self.head(), self.reason, self.next)
    }
}

/// `Some` when the sweep stopped before every point was measured.
pub fn unfinished(rec: &SweepRecord) -> Option<Unfinished> {
    // A search ends when it has found what it looks for, not when every
    // count it may try was measured.
    let searching = rec.search.as_ref().is_some_and(|s| !s.done);
    let searched = rec.config.threads_auto.is_some() && !searching;
    let all_measured = rec.points.len() >= rec.points_total || searched;
    if !rec.interrupted && all_measured {
        return None;
    }
    let (reason, next) = match &rec.stop_reason {
        _ if all_measured => (
            rec.stop_reason
                .clone()
                .unwrap_or_else(|| "interrupted by a signal".into()),
            "the figures cover the repetitions that finished",
        ),
        Some(r) if rec.interrupted => (
            r.clone(),
            "the points shown are complete; the same command with --resume measures the rest",
        ),
        Some(r) => (
            r.clone(),
            "the points shown are complete; fix the problem and add --resume to measure the rest",
        ),
        None if rec.interrupted => (
            "interrupted by a signal".to_string(),
            "the points shown are complete; the same command with --resume measures the rest",
        ),
        None => (
            "the sweep was still running, or was killed, when this record was written".to_string(),
            "the points shown are complete; --resume measures the rest",
        ),
    };
    Some(Unfinished {
        measured: rec.points.len(),
        total: rec.points_total,
        reason,
        next,
        searching,
    })
}
