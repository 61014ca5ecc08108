//! What an analysis says, as data: the thresholds its rules use, the
//! unit system, a line's points as the rules see them, the verdicts,
//! limiters and comparisons it stores in a sweep record, and how its
//! figures are written. The rules themselves are in [`crate::findings`];
//! the record ([`crate::model`]) and the other readers use these types
//! without depending on the rules.

use probe::Resources;
use serde::{Deserialize, Serialize};
use stats::Interval;

use crate::usl::UslFit;

/// Share of the peak from which a line counts as flat ("enough workers").
pub const ENOUGH_SHARE: f64 = 0.9;

/// Smallest relative difference ever called a difference, even when the
/// intervals do not overlap (a 2 % gap between tight intervals is not worth
/// a sentence).
pub const MIN_EFFECT: f64 = 0.05;

/// Largest relative half-width of a point's interval for it to count as
/// part of a flat stretch: noisier points cannot show "within 10 % of the
/// peak".
pub const PLATEAU_NOISE: f64 = 0.15;

/// Latency growth (against the fewest workers) still read as "unchanged".
pub const LATENCY_STEADY: f64 = 1.25;

/// Distinct worker counts a USL fit needs before it is quoted.
pub const USL_MIN_COUNTS: usize = 5;

/// Coefficient of determination a USL fit needs before it is quoted.
pub const USL_MIN_R2: f64 = 0.9;

/// Machine CPU busy share from which the CPUs are the limit; also the
/// share of the CPUs ioscale may use that its threads must want (running
/// or waiting for a CPU, on average) to be limited by them.
pub const CPU_SATURATED: f64 = probe::evidence::CPUS_FULL;

/// Share of the time each of ioscale's threads must wait for a CPU for it
/// to count as starved (kept off the CPUs by other work).
pub const STARVED_SHARE: f64 = 0.25;

/// Largest gain from the fewest workers to the peak still read as no
/// scaling: two requests served at once double the rate, while one server
/// taking requests one at a time gains only what the clients' own part of
/// each request overlaps with the server's (a few percent on a quiet
/// machine, about a third on a busy one).
pub const SERIAL_GAIN: f64 = 1.5;

/// Rule 2: the least share of the fewest workers' throughput a
/// one-at-a-time server keeps at the most workers when the latency proves
/// the queue (what is lost goes to the extra clients' overhead).
pub const SERIAL_FALL: f64 = 0.8;

/// How far the measured median latency must grow from no queue (1×) to
/// what one server taking requests one at a time gives (the workers'
/// growth, ×L/F: each waits for the others), for requests to count as
/// queueing behind one another: midway, `1 + 0.5 × (L/F − 1)`. Half of
/// L/F alone asked for no growth at all with twice the workers (tmpfs
/// reads, median 281 → 309 µs, were "served one at a time").
pub const SERIAL_LATENCY: f64 = 0.5;

/// How fast the measured latency must grow from the fewest workers to the
/// first count of at least twice as many, as a share of the workers'
/// growth, to prove a queue behind one server when the throughput is too
/// noisy to (a server taking two requests at once keeps the latency at 2
/// workers where it was, share 0.5; one at a time doubles it, share 1).
pub const SERIAL_QUEUE: f64 = 0.75;

/// Cores one other process must use to be the limit (a single-threaded
/// daemon cannot use more than one).
pub const PROCESS_SATURATED: f64 = 0.85;

/// Device utilisation from which the device is the limit.
pub const DEVICE_SATURATED: f64 = 0.85;

/// A drop inside a phase: the least share by which the rate of the
/// later intervals must lie below that of the earlier ones. (A rise of
/// the median latency inside a phase counts from [`LATENCY_STEADY`].)
pub const DROP_SHARE: f64 = 0.2;

/// How many times the noise of the intervals a change inside a phase
/// must exceed: the robust standard deviation (1.4826 × MAD) of the
/// intervals before it or of those after, whichever is larger.
pub const DROP_NOISE: f64 = 4.0;

/// The least noise assumed, as a share of the level: the intervals of a
/// capped rate can be identical, and no change is that exact.
pub const DROP_NOISE_FLOOR: f64 = 0.01;

/// Least intervals on each side of a change inside a phase: the new
/// level must hold for several intervals, the old one must have. A
/// change that comes back must hold twice as long: three or four stray
/// intervals in a row are a stall, not a new level.
pub const DROP_MIN_INTERVALS: usize = 4;

/// Least intervals a phase must have for a change inside it to be told
/// from noise: among 5000 series of pure noise (±15% and ±30%), 2–3 of
/// 10 or 12 intervals fitted a change that passed every other rule, none
/// of 16 or more.
pub const DROP_MIN_PHASE: usize = 16;

/// Share of each side's intervals that must lie on their side of the
/// midpoint between the two levels (one stray interval among five may
/// not).
pub const DROP_HOLD: f64 = 0.8;

/// Changes at several worker counts happened "after the same number of
/// bytes" (or "the same time") when each lies within this share of their
/// median, or within one interval of it.
pub const DROP_ALIGN: f64 = 0.15;

/// Intervals in a row that make a steady window.
pub const STEADY_INTERVALS: usize = 5;

/// How far each interval of a steady window may lie from the window's
/// mean, as a share of it (fio's `steadystate=iops:20%`).
pub const STEADY_SHARE: f64 = 0.2;

/// Share of a phase's workers an interval must have running for the
/// rules over time to read it: the intervals in which the workers start
/// or finish, and a last interval cut short, say nothing about the
/// storage.
pub const SERIES_WORKERS: f64 = 0.9;

/// `--reps auto`: the widest relative half-width the 95 % interval of a
/// point's central figure may have, for every operation, once the point
/// has enough repetitions (0.05 = ±5 %; `auto:3%` sets another).
pub const REPS_TARGET: f64 = 0.05;

/// `--reps auto`: the fewest repetitions a point runs before its interval
/// is judged (two values make an interval, but a percentile bootstrap
/// over two is as wide as they are apart, whatever the noise).
pub const REPS_MIN: u32 = 3;

/// `--reps auto`: the most repetitions a point runs when `--max-reps` is
/// not given (the Flux7 study's 10).
pub const REPS_MAX: u32 = 10;

/// `--threads auto`: the largest count the search may try when
/// `auto:MAX` does not say (the seeds' ladders end at 64).
pub const SEARCH_MAX: u32 = 64;

/// `--threads auto`: doublings in a row that may fail to rise clearly
/// above the best count before the doubling stops, when the points are
/// too noisy (wider than [`PLATEAU_NOISE`], or one repetition) to show
/// that the line is flat after one.
pub const SEARCH_PATIENCE: u32 = 2;

/// The unit system of a report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Units {
    /// MiB/s (2^20 bytes per second): the default.
    #[default]
    Iec,
    /// MB/s (10^6 bytes per second), as the seed tables print it.
    Si,
}

impl Units {
    /// The data-rate unit.
    pub fn data(self) -> &'static str {
        match self {
            Units::Iec => "MiB/s",
            Units::Si => "MB/s",
        }
    }

    /// Converts MiB/s into this unit.
    pub fn from_mib_s(self, v: f64) -> f64 {
        match self {
            Units::Iec => v,
            Units::Si => v * 1_048_576.0 / 1e6,
        }
    }

    /// `iec` or `si` (the value of a `--units` flag).
    pub fn parse(s: &str) -> Option<Units> {
        match s {
            "iec" | "mib" | "MiB" => Some(Units::Iec),
            "si" | "mb" | "MB" => Some(Units::Si),
            _ => None,
        }
    }
}

/// Everything the analysis found in a sweep.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// The unit system every figure and sentence uses.
    #[serde(default)]
    pub units: Units,
    /// One entry per line (series and operation).
    pub curves: Vec<CurveAnalysis>,
    /// Where lines that differ in one swept value differ.
    pub comparisons: Vec<Comparison>,
    /// Sentences about the whole sweep (failed repetitions, one repetition
    /// per point).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Analysis {
    /// Every sentence, each line's prefixed with its name, in order.
    pub fn sentences(&self) -> Vec<String> {
        let mut out = self.notes.clone();
        for c in &self.curves {
            for s in &c.sentences {
                out.push(format!("{}: {s}", c.name()));
            }
        }
        for c in &self.comparisons {
            out.push(format!("{}: {}", c.op, c.sentence));
        }
        out
    }

    /// The verdict of each line, `name: text`.
    pub fn verdicts(&self) -> Vec<String> {
        self.curves
            .iter()
            .map(|c| format!("{}: {}", c.name(), c.verdict.text))
            .collect()
    }
}

/// One measured point of a line, as the analysis sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Workers in flight: ranks × threads per rank.
    pub threads: u32,
    /// MPI ranks (1 without MPI).
    #[serde(default)]
    pub ranks: u32,
    /// Threads in each rank.
    #[serde(default)]
    pub threads_per_rank: u32,
    /// Central throughput in the line's unit (trimmed mean or mean of the
    /// good repetitions).
    pub value: f64,
    /// Lowest good repetition.
    pub min: f64,
    /// Highest good repetition.
    pub max: f64,
    /// 95 % bootstrap interval of `value`; `None` with no good repetition.
    #[serde(default)]
    pub ci: Option<Interval>,
    /// Good repetitions.
    #[serde(default)]
    pub reps: usize,
    /// Failed repetitions (left out of every figure).
    #[serde(default)]
    pub failed: usize,
    /// The first error of a failed repetition.
    #[serde(default)]
    pub first_error: Option<String>,
    /// Central duration, seconds.
    pub elapsed_s: f64,
    /// Operations per second.
    pub iops: f64,
    /// Bytes per operation (0 for metadata operations).
    pub bytes_per_op: f64,
    /// CPUs ioscale kept busy (CPU seconds per second).
    pub cpu_busy: f64,
    /// CPU seconds per operation.
    pub cpu_s_per_op: f64,
    /// Measured median request latency, µs.
    #[serde(default)]
    pub lat_p50_us: f64,
    /// Measured 99th-percentile request latency, µs.
    #[serde(default)]
    pub lat_p99_us: f64,
    /// What the phase used, when measured.
    #[serde(default)]
    pub resources: Option<Resources>,
    /// Whether the line counts files (a metadata phase of `meta`, mdtest,
    /// smallfile): its operations are files, not data transfers.
    #[serde(default)]
    pub counts_files: bool,
    /// Operations (files) done by the good repetitions together: what the
    /// requests in `resources` were summed over; 0 when the point spans
    /// nodes (the probe measures rank 0's node only).
    #[serde(default)]
    pub ops_total: u64,
    /// The lowest and highest median latency of the good repetitions, µs:
    /// whether a growth holds in every repetition, not in their mean only.
    /// `None` where the repetitions are not known (a caller with its own
    /// statistics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_p50_range_us: Option<(f64, f64)>,
    /// The same for the 99th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_p99_range_us: Option<(f64, f64)>,
    /// Requests each worker keeps in flight (`--iodepth` of an io_uring
    /// job); 0 or 1: one.
    #[serde(default)]
    pub depth: u32,
    /// Bytes read by the good repetitions together: with `write_bytes`,
    /// what the phase's own I/O can explain of the device's traffic.
    #[serde(default)]
    pub read_bytes: u64,
    /// Bytes written by the good repetitions together.
    #[serde(default)]
    pub write_bytes: u64,
    /// The operation only reads (a read, a stat, a listing): the device
    /// traffic a phase of it that moved no data can explain is reads.
    #[serde(default)]
    pub reads_only: bool,
}

impl CurvePoint {
    /// The interval, or the value itself when there is none.
    pub fn interval(&self) -> Interval {
        self.ci.unwrap_or(Interval {
            lo: self.value,
            hi: self.value,
            level: 0.95,
            n: self.reps,
        })
    }

    /// Little's law: requests in flight (workers × depth) ÷ operations
    /// per second.
    pub fn little_s(&self) -> Option<f64> {
        (self.iops > 0.0).then(|| self.in_flight() as f64 / self.iops)
    }

    /// Requests in flight: workers × the depth each keeps.
    pub fn in_flight(&self) -> u32 {
        self.threads * self.depth.max(1)
    }
}

/// Whether `a` is clearly above `b`: by more than [`MIN_EFFECT`] and with
/// intervals that do not overlap.
pub fn clearly_above(a: &CurvePoint, b: &CurvePoint) -> bool {
    a.value > b.value * (1.0 + MIN_EFFECT) && a.interval().lo > b.interval().hi
}

/// Facts about the machine that explain a limit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Context {
    /// Online CPUs.
    pub cpus: u32,
    /// File-system type of the target (`ext4`, `tmpfs`, `nfs4`, `fuse.*`…).
    pub fs_type: String,
}

/// The kind of resource that limits a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    /// The machine's CPUs are (nearly) all busy.
    Cpu,
    /// The FUSE daemon serving the target uses a whole core.
    Process,
    /// The block device under the target is (nearly) always busy.
    Device,
    /// Nothing on this machine is busy and the target is served by a
    /// daemon or over the network: the file-system server.
    Server,
    /// Resources were measured and none saturated.
    Unidentified,
    /// The record holds no resource measurements.
    NotMeasured,
}

/// The limit of a line and the figure that shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limiter {
    /// Which resource.
    pub limit: Limit,
    /// The figure, e.g. "device vda 98% busy, queue 31.7".
    pub figure: String,
    /// Worker count whose measurement it is.
    pub workers: u32,
}

/// The kind of a line's verdict (see docs/analysis.md for each rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictKind {
    /// No point of the line has a good repetition.
    AllFailed,
    /// One worker count only.
    SinglePoint,
    /// At the most workers ioscale's threads wanted every CPU it may use
    /// (or waited for one most of the time): the CPUs are the limit,
    /// whatever the shape of the line.
    CpuBound,
    /// Throughput does not rise with workers; requests served one at a
    /// time.
    Serialised,
    /// Throughput rises to the largest count while each request's time
    /// stays the same: more workers hide the latency.
    LatencyBound,
    /// Throughput rises to the largest count, but requests take longer.
    Rising,
    /// Throughput rises, then stays within [`ENOUGH_SHARE`] of the peak.
    Saturated,
    /// Throughput peaks, then falls beyond noise.
    Falls,
    /// The differences are within noise: no verdict on the shape.
    Uncertain,
}

/// A number a verdict used, to show and link beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// What it is ("peak", "1 worker", "knee").
    pub what: String,
    /// Worker count of the point.
    pub workers: u32,
    /// The central value, in the line's unit.
    pub value: f64,
    /// Its interval, when there is one.
    pub interval: Option<Interval>,
}

/// The one verdict of a line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Which rule produced it.
    pub kind: VerdictKind,
    /// The sentence.
    pub text: String,
    /// The limit, where the rule names one.
    pub limiter: Option<Limiter>,
    /// The points it rests on.
    pub evidence: Vec<Evidence>,
    /// Whether the line has two or more good repetitions at every point
    /// (else the verdict is not supported by repetitions).
    pub supported: bool,
}

/// Little's law at one worker count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LittlePoint {
    /// Workers (operations in flight).
    pub threads: u32,
    /// Operations per second.
    pub iops: f64,
    /// `workers ÷ iops`, seconds.
    pub latency_s: f64,
}

/// The reading of one line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurveAnalysis {
    /// Series label (the swept values other than threads; may be empty).
    pub series: String,
    /// Operation.
    pub op: String,
    /// Unit of `points[].value`: `MiB/s`, `MB/s`, `files/s` or `ops/s`.
    pub unit: String,
    /// The line, by worker count (points whose repetitions all failed
    /// included, with `reps == 0`).
    pub points: Vec<CurvePoint>,
    /// Highest central throughput measured.
    pub peak: f64,
    /// Worker count that measured it.
    pub peak_threads: u32,
    /// Smallest worker count from which every point stays within
    /// [`ENOUGH_SHARE`] of the peak; 0 when the line has no such knee.
    pub enough_threads: u32,
    /// Throughput there.
    pub enough_value: f64,
    /// USL fit, whether shown or not.
    pub usl: Option<UslFit>,
    /// Whether the fit passes the bar to be quoted.
    #[serde(default)]
    pub usl_shown: bool,
    /// Per-op latency by Little's law at each worker count.
    pub little: Vec<LittlePoint>,
    /// Largest worker count whose latency stays within 25 % of the
    /// fewest-workers latency (the workers that hide it).
    pub hidden_up_to: Option<u32>,
    /// What limits the line, when the verdict names it.
    pub limit: Option<Limit>,
    /// Largest relative half-width of the points' intervals (0.12 = ±12 %).
    #[serde(default)]
    pub noise: f64,
    /// The one verdict.
    pub verdict: Verdict,
    /// The findings in words (failures, the verdict, Little's law, USL).
    pub sentences: Vec<String>,
}

impl CurveAnalysis {
    /// `op` or `op (series)`.
    pub fn name(&self) -> String {
        if self.series.is_empty() {
            self.op.clone()
        } else {
            format!("{} ({})", self.op, self.series)
        }
    }
}

/// How two lines differ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Operation.
    pub op: String,
    /// First line's series label.
    pub a: String,
    /// Second line's series label.
    pub b: String,
    /// Worker count at which the line that was clearly behind is no longer
    /// clearly behind; `None` when that never happens.
    pub catch_up_threads: Option<u32>,
    /// Whether the lines differ beyond noise at any common worker count.
    #[serde(default)]
    pub differ: bool,
    /// The finding in words.
    pub sentence: String,
    /// The numbers it rests on: both lines at each common worker count.
    #[serde(default)]
    pub at: Vec<ComparedAt>,
}

/// One worker count of a comparison: both lines' figures with their
/// intervals, and which was clearly faster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparedAt {
    /// Worker count.
    pub workers: u32,
    /// The first line's central value, in its unit.
    pub a: f64,
    /// Its 95 % interval.
    pub a_interval: Option<Interval>,
    /// The second line's central value.
    pub b: f64,
    /// Its 95 % interval.
    pub b_interval: Option<Interval>,
    /// The series clearly faster here; `None` when within noise.
    pub faster: Option<String>,
}

/// A number with about three significant digits, no exponent.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        format!("{v}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a == 0.0 {
        "0".into()
    } else {
        format!("{v:.3}")
    }
}

/// "1 worker", "8 workers".
pub(crate) fn workers_word(n: u32) -> String {
    if n == 1 {
        "1 worker".into()
    } else {
        format!("{n} workers")
    }
}

/// A duration in the unit that reads best: `4.0 ms`, `250 µs`, `1.50 s`.
pub fn dur(s: f64) -> String {
    if s >= 1.0 {
        format!("{} s", num(s))
    } else if s >= 1e-3 {
        format!("{} ms", num(s * 1e3))
    } else if s >= 1e-6 {
        format!("{} µs", num(s * 1e6))
    } else {
        format!("{} ns", num(s * 1e9))
    }
}

/// Deepest nesting of parentheses a sentence of the analysis may use: an
/// aside, never an aside inside an aside.
pub const MAX_PAREN_DEPTH: usize = 1;

/// Fewest words a clause must have for saying it twice in one sentence to
/// count as a repetition ("55.0 MiB/s at 1 worker").
pub const REPEATED_CLAUSE_WORDS: usize = 3;

/// What breaks the analysis' style in `text`, one line each: parentheses
/// nested deeper than [`MAX_PAREN_DEPTH`] or unbalanced, and a clause
/// (text between `,` `;` `:` `(` `)` `—` or a sentence end) of at least
/// [`REPEATED_CLAUSE_WORDS`] words said twice ("Peak measured: 55.0 MiB/s
/// at 1 worker; 55.0 MiB/s at 1 worker."). Empty when the text is plain.
pub fn style_faults(text: &str) -> Vec<String> {
    let mut faults = Vec::new();
    let mut depth = 0usize;
    let mut deepest = 0usize;
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' if depth == 0 => {
                faults.push("a ')' without its '('".to_string());
            }
            ')' => depth -= 1,
            _ => {}
        }
    }
    if depth > 0 {
        faults.push(format!("{depth} '(' never closed"));
    }
    if deepest > MAX_PAREN_DEPTH {
        faults.push(format!("parentheses nested {deepest} deep"));
    }
    // The text with its asides taken out, and each aside, are read
    // apart: "X (95% CI …) at 1 worker; X at 1 worker" repeats itself.
    let mut main = String::new();
    let mut asides = vec![String::new()];
    let mut d = 0usize;
    for c in text.chars() {
        match c {
            '(' => {
                d += 1;
                asides.push(String::new());
            }
            ')' if d > 0 => d -= 1,
            _ if d == 0 => main.push(c),
            _ => asides.last_mut().expect("pushed at '('").push(c),
        }
    }
    for part in std::iter::once(&main).chain(&asides) {
        // Sentences end at ". " (a decimal point has no blank after it).
        let flat = part.replace(". ", "\u{1}");
        let mut seen: Vec<String> = Vec::new();
        for clause in flat.split(['\u{1}', ',', ';', ':', '—']) {
            let c = clause.trim().trim_end_matches('.').trim();
            let c = c
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase();
            if c.split_whitespace().count() < REPEATED_CLAUSE_WORDS {
                continue;
            }
            if seen.contains(&c) {
                faults.push(format!("\"{c}\" said twice"));
            } else {
                seen.push(c);
            }
        }
    }
    faults
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn style_faults_find_repeats_and_deep_asides() {
        assert_eq!(
            style_faults("Peak measured: 55.0 MiB/s at 1 worker; 55.0 MiB/s at 1 worker."),
            ["\"55.0 mib/s at 1 worker\" said twice"]
        );
        assert_eq!(
            style_faults(
                "Peak measured: 55.0 MiB/s (95% CI 50–60) at 1 worker; 55.0 MiB/s at 1 worker."
            ),
            ["\"55.0 mib/s at 1 worker\" said twice"]
        );
        assert_eq!(
            style_faults("limited by the server (fuse (x) (the CPUs (pid 4)))"),
            ["parentheses nested 3 deep"]
        );
        assert!(style_faults("a (b) c (d), 1.5 ms at 2 workers; 2.5 ms at 4 workers.").is_empty());
        assert_eq!(style_faults("a (b"), ["1 '(' never closed"]);
        assert_eq!(style_faults("a) b"), ["a ')' without its '('"]);
    }
}
