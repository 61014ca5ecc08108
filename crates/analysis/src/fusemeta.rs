//! What a metadata operation (create, stat, read, delete … of `meta`,
//! mdtest, smallfile) became at a FUSE daemon, from the kernel's traced
//! requests (crates/probe/src/fusetrace.rs): how many requests of which
//! opcode each file cost, the kernel's send-to-reply time per request,
//! and what the two mean for the rate — a bound for one worker whose
//! requests are served one after another, or else the requests in flight
//! over the traced time (Little's law: summed send-to-reply time ÷ traced
//! time). Every figure comes from the record; without a trace this says
//! nothing and the data sentence's note stands.

use probe::FuseRequests;

use crate::verdict::{dur, num, CurvePoint, MIN_EFFECT};

/// Opcodes listed by name in the sentence; the rest are added up.
const LISTED: usize = 6;

/// The sentence for `op` at point `p` (its fewest workers), or `None`
/// when the point has no traced requests or no files.
pub(crate) fn sentence(op: &str, p: &CurvePoint) -> Option<String> {
    let r = p.resources.as_ref()?.fuse.as_ref()?.requests.as_ref()?;
    let files = p.ops_total;
    if files == 0 {
        return None;
    }
    let by = by_opcode(r);
    let total = by.iter().fold(0u64, |a, (_, n)| a.saturating_add(*n));
    if total == 0 {
        return Some(format!(
            " No FUSE request was traced while the {op} phases ran ({} {op}s): the kernel answered them from its caches.",
            grouped(files)
        ));
    }
    let per_file = total as f64 / files as f64;
    let lost = lost_note(r.lost_events);
    let head = format!(
        " Each {op} reached the FUSE daemon as {} requests ({} per file; measured: {} request{} for {} {op}s in the traced phases{lost})",
        ratio(per_file),
        listing(&by, files),
        grouped(total),
        if total == 1 { "" } else { "s" },
        grouped(files)
    );
    let (answered, time_s) = replies(r);
    if answered == 0 {
        return Some(format!(
            "{head}; no reply was traced, so the time per request is not known."
        ));
    }
    let mean = time_s / answered as f64;
    let times = opcode_times(r, &by);
    if per_file < 1.0 {
        // A file that reached the daemon cost at least one request.
        return Some(format!(
            "{head}; the kernel measured {} per request from send to reply{times}. Fewer than one request per {op}: the kernel answered at least {:.0}% of them from its caches (entry and attribute timeouts).",
            dur(mean),
            (1.0 - per_file) * 100.0
        ));
    }
    let window = p.resources.as_ref().map_or(0.0, |x| x.elapsed_s);
    let rate = Rate {
        per_file,
        mean,
        time_s,
        window,
        release: by.iter().any(|(o, _)| o == "FUSE_RELEASE"),
    };
    Some(format!(
        "{head}; the kernel measured {} per request from send to reply{times}{}.",
        dur(mean),
        rate_part(op, p, &rate)
    ))
}

/// ` (LOOKUP 10.1 ms, CREATE 10.2 ms)`: the mean send-to-reply time of
/// the listed opcodes that were answered.
/// The clause a traced count carries when the trace lost `lost` events
/// (nothing when it lost none).
pub(crate) fn lost_note(lost: u64) -> String {
    if lost > 0 {
        format!("; the trace lost {lost} events, so these counts may be short")
    } else {
        String::new()
    }
}

fn opcode_times(r: &FuseRequests, by: &[(String, u64)]) -> String {
    let parts: Vec<String> = by
        .iter()
        .take(LISTED)
        .filter_map(|(o, _)| {
            let (n, t) = match o.as_str() {
                "FUSE_WRITE" => (r.write.answered, r.write.time_s),
                "FUSE_READ" => (r.read.answered, r.read.time_s),
                _ => r
                    .other_replies
                    .get(o)
                    .map(|x| (x.answered, x.time_s))
                    .unwrap_or((0, 0.0)),
            };
            (n > 0).then(|| format!("{} {}", o.trim_start_matches("FUSE_"), dur(t / n as f64)))
        })
        .collect();
    if parts.len() < 2 {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// Every opcode's count, the most frequent first (ties by name).
fn by_opcode(r: &FuseRequests) -> Vec<(String, u64)> {
    let mut by: Vec<(String, u64)> = r
        .other
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(o, n)| (o.clone(), *n))
        .collect();
    for (o, n) in [("FUSE_WRITE", r.write.count), ("FUSE_READ", r.read.count)] {
        if n > 0 {
            by.push((o.to_string(), n));
        }
    }
    by.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    by
}

/// `LOOKUP 1.0, CREATE 1.0, others 0.12`: requests per file by opcode.
fn listing(by: &[(String, u64)], files: u64) -> String {
    let per = |n: u64| ratio(n as f64 / files as f64);
    let mut parts: Vec<String> = by
        .iter()
        .take(LISTED)
        .map(|(o, n)| format!("{} {}", o.trim_start_matches("FUSE_"), per(*n)))
        .collect();
    let rest = by
        .iter()
        .skip(LISTED)
        .fold(0u64, |a, (_, n)| a.saturating_add(*n));
    if rest > 0 {
        parts.push(format!("others {}", per(rest)));
    }
    parts.join(", ")
}

/// Replies traced (of every opcode) and their summed send-to-reply time.
fn replies(r: &FuseRequests) -> (u64, f64) {
    let other = r.other_replies.values();
    let answered = other
        .clone()
        .fold(r.write.answered.saturating_add(r.read.answered), |a, x| {
            a.saturating_add(x.answered)
        });
    let time = r.write.time_s + r.read.time_s + other.map(|x| x.time_s).sum::<f64>();
    (answered, time)
}

/// A point's requests, for what they mean for its rate.
struct Rate {
    /// Requests per file.
    per_file: f64,
    /// Mean send-to-reply time of a request, seconds.
    mean: f64,
    /// Summed send-to-reply time of every answered request, seconds.
    time_s: f64,
    /// The traced time (the phases' probe windows, summed), seconds.
    window: f64,
    /// Whether FUSE_RELEASE was among the requests.
    release: bool,
}

/// What the requests mean for the measured rate. With one worker whose
/// requests never overlapped (summed request time within the traced
/// time), the bound if they are served one after another; otherwise the
/// requests in flight on average (Little's law: summed time ÷ traced
/// time) and, for one worker, why the bound does not hold.
fn rate_part(op: &str, p: &CurvePoint, r: &Rate) -> String {
    let measured = num(p.iops);
    let in_flight = if r.window > 0.0 {
        r.time_s / r.window
    } else {
        0.0
    };
    let flight = format!(
        "≈ {} requests in flight on average (summed send-to-reply time {} ÷ traced time {})",
        num(in_flight),
        dur(r.time_s),
        dur(r.window)
    );
    if p.threads != 1 {
        return format!(
            "; at {} workers and {measured} files/s that is {flight}",
            p.threads
        );
    }
    let per_op = r.per_file * r.mean;
    let bound = 1.0 / per_op;
    // The rate's interval, in files/s (the line's unit may be MiB/s).
    let scale = if p.value > 0.0 { p.iops / p.value } else { 1.0 };
    let (lo, hi) = (p.interval().lo * scale, p.interval().hi * scale);
    if in_flight > 1.0 + MIN_EFFECT {
        let why = if r.release {
            "; the kernel sends FUSE_RELEASE in the background, so it can overlap the next file's requests"
        } else {
            ""
        };
        return format!("; with 1 worker the requests overlapped: {flight}{why}");
    }
    if lo > bound * (1.0 + MIN_EFFECT) {
        return format!(
            "; served one after another they would allow at most ≈ {} files/s, yet 1 worker measured {measured}/s: part of the requests' time fell outside the timed phases (before the first or after the last file), {flight}",
            num(bound)
        );
    }
    let verb = if op.contains('-') {
        format!("run {op} on")
    } else {
        op.to_string()
    };
    let outside = if p.iops > bound * (1.0 + MIN_EFFECT) {
        // Above the bound, but not clearly (the interval reaches it).
        format!(
            ", above it but within the noise of {} repetitions (±{:.0}%)",
            p.reps,
            (hi - lo) / 2.0 / p.iops.max(1e-12) * 100.0
        )
    } else if hi < bound * (1.0 - MIN_EFFECT) {
        format!(
            "; the other {} of each {op} is spent outside the daemon's requests, in ioscale and the kernel",
            dur(1.0 / p.iops - per_op)
        )
    } else {
        String::new()
    };
    format!(
        ", so one worker can {verb} at most ≈ {} files/s if they are served one after another (measured: {measured}/s{outside})",
        num(bound)
    )
}

/// A count per file: one decimal, more below 0.1 (`4.0`, `0.06`,
/// `0.004`).
fn ratio(x: f64) -> String {
    if x >= 0.095 {
        format!("{x:.1}")
    } else if x >= 0.0095 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// `3,072`.
fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe::{FuseUse, Replies, Resources};

    /// `files` creates at `iops` by `workers`, each a LOOKUP, a CREATE
    /// and a RELEASE answered in `ms` milliseconds.
    fn creates(files: u64, iops: f64, workers: u32, ms: f64) -> CurvePoint {
        let mut q = FuseRequests::default();
        for o in ["FUSE_LOOKUP", "FUSE_CREATE", "FUSE_RELEASE"] {
            q.other.insert(o.into(), files);
            q.other_replies.insert(
                o.into(),
                Replies {
                    answered: files,
                    errors: 0,
                    time_s: files as f64 * ms * 1e-3,
                },
            );
        }
        CurvePoint {
            threads: workers,
            value: iops,
            iops,
            reps: 1,
            counts_files: true,
            ops_total: files,
            resources: Some(Resources {
                // Traced as long as the files took.
                elapsed_s: files as f64 / iops,
                fuse: Some(FuseUse {
                    requests: Some(q),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn one_worker_gets_a_bound_from_the_requests() {
        let s = sentence("create", &creates(1024, 151.0, 1, 2.1)).unwrap();
        println!("{s}");
        assert!(
            s.contains("Each create reached the FUSE daemon as 3.0 requests (CREATE 1.0, LOOKUP 1.0, RELEASE 1.0 per file; measured: 3,072 requests for 1,024 creates in the traced phases)"),
            "{s}"
        );
        assert!(
            s.contains("the kernel measured 2.10 ms per request from send to reply (CREATE 2.10 ms, LOOKUP 2.10 ms, RELEASE 2.10 ms)"),
            "{s}"
        );
        // 1 ÷ (3 × 2.1 ms) = 158.7/s, and 151/s is within 5 % of it.
        assert!(
            s.contains("one worker can create at most ≈ 159 files/s if they are served one after another (measured: 151/s)."),
            "{s}"
        );
    }

    #[test]
    fn a_rate_well_below_the_bound_names_the_time_outside() {
        // 100/s = 10 ms per create, 6.3 ms of it in requests.
        let s = sentence("create", &creates(100, 100.0, 1, 2.1)).unwrap();
        assert!(s.contains("(measured: 100/s; the other 3.70 ms of each create is spent outside the daemon's requests"), "{s}");
    }

    #[test]
    fn a_rate_above_the_bound_means_overlap() {
        let s = sentence("create", &creates(100, 250.0, 1, 2.1)).unwrap();
        println!("{s}");
        // 300 requests × 2.1 ms in 0.4 s: 1.575 requests in flight.
        assert!(s.contains("with 1 worker the requests overlapped: ≈ 1.57 requests in flight on average (summed send-to-reply time 630 ms ÷ traced time 400 ms); the kernel sends FUSE_RELEASE"), "{s}");
        assert!(s.contains("FUSE_RELEASE in the background"), "{s}");
        assert!(!s.contains("at most ≈ 159 files/s if"), "{s}");
    }

    #[test]
    fn more_workers_give_requests_in_flight_not_a_bound() {
        let s = sentence("stat", &creates(4000, 1000.0, 8, 2.0)).unwrap();
        // 12,000 requests × 2 ms in 4 s: 6 in flight.
        assert!(
            s.contains(
                "at 8 workers and 1000 files/s that is ≈ 6.00 requests in flight on average"
            ),
            "{s}"
        );
        assert!(!s.contains("at most"), "{s}");
    }

    #[test]
    fn a_rate_above_the_bound_within_noise_says_so() {
        // 175/s central, interval 140..210: not clearly above 159/s.
        let mut p = creates(100, 175.0, 1, 2.1);
        p.reps = 3;
        p.ci = Some(stats::Interval {
            lo: 140.0,
            hi: 210.0,
            level: 0.95,
            n: 3,
        });
        p.resources.as_mut().unwrap().elapsed_s = 0.7;
        let s = sentence("create", &p).unwrap();
        assert!(s.contains("at most ≈ 159 files/s if they are served one after another (measured: 175/s, above it but within the noise of 3 repetitions (±20%))"), "{s}");
    }

    #[test]
    fn time_outside_the_timed_phase_is_not_called_overlap() {
        // 1 worker at 200/s, bound 159/s, but the requests' time fits in
        // the traced window (longer than the timed phase): not overlap.
        let mut p = creates(100, 200.0, 1, 2.1);
        p.resources.as_mut().unwrap().elapsed_s = 0.7;
        let s = sentence("create", &p).unwrap();
        assert!(s.contains("they would allow at most ≈ 159 files/s, yet 1 worker measured 200/s: part of the requests' time fell outside the timed phases"), "{s}");
        assert!(!s.contains("overlapped"), "{s}");
    }

    #[test]
    fn fewer_requests_than_files_is_the_cache() {
        let mut p = creates(100, 5000.0, 1, 2.0);
        let mut q = p
            .resources
            .as_ref()
            .unwrap()
            .fuse
            .as_ref()
            .unwrap()
            .requests
            .clone()
            .unwrap();
        q.other.clear();
        q.other_replies.clear();
        q.other.insert("FUSE_OPENDIR".into(), 1);
        let put = |p: &mut CurvePoint, q: &FuseRequests| {
            p.resources
                .as_mut()
                .unwrap()
                .fuse
                .as_mut()
                .unwrap()
                .requests = Some(q.clone());
        };
        put(&mut p, &q);
        let s = sentence("stat", &p).unwrap();
        assert!(
            s.contains(
                "as 0.01 requests (OPENDIR 0.01 per file; measured: 1 request for 100 stats"
            ),
            "{s}"
        );
        assert!(s.contains("no reply was traced"), "{s}");
        q.other_replies.insert(
            "FUSE_OPENDIR".into(),
            Replies {
                answered: 1,
                errors: 0,
                time_s: 0.002,
            },
        );
        put(&mut p, &q);
        let s = sentence("stat", &p).unwrap();
        assert!(
            s.contains(
                "Fewer than one request per stat: the kernel answered at least 99% of them from its caches"
            ),
            "{s}"
        );
        assert!(!s.contains("at most") && !s.contains("in flight"), "{s}");
    }

    #[test]
    fn without_a_trace_or_files_nothing_is_said() {
        let mut p = creates(10, 100.0, 1, 1.0);
        p.ops_total = 0;
        assert_eq!(sentence("create", &p), None);
        let mut p = creates(10, 100.0, 1, 1.0);
        p.resources
            .as_mut()
            .unwrap()
            .fuse
            .as_mut()
            .unwrap()
            .requests = None;
        assert_eq!(sentence("create", &p), None);
        p.resources = None;
        assert_eq!(sentence("create", &p), None);
    }

    #[test]
    fn a_metadata_line_is_explained_by_every_opcode_not_its_writes() {
        // 4 KiB creates: one FUSE_WRITE each besides the metadata.
        let mut p = creates(100, 100.0, 1, 2.0);
        p.bytes_per_op = 4096.0;
        p.value = 100.0 * 4096.0 / 1_048_576.0;
        let f = p.resources.as_mut().unwrap().fuse.as_mut().unwrap();
        let q = f.requests.as_mut().unwrap();
        q.write.count = 100;
        q.write.bytes = 409_600;
        q.write.max_bytes = 4096;
        q.write.answered = 100;
        q.write.time_s = 0.01;
        let ctx = crate::findings::Context {
            cpus: 2,
            fs_type: "fuse.ioscale-testfs".into(),
        };
        let a = crate::findings::analyse_curve("", "create", "MiB/s", &[p.clone()], &ctx);
        let said = a.sentences.join(" ");
        assert!(
            said.contains("Each create reached the FUSE daemon as 4.0 requests (CREATE 1.0, LOOKUP 1.0, RELEASE 1.0, WRITE 1.0 per file"),
            "{said}"
        );
        assert!(!said.contains("FUSE_WRITE requests"), "{said}");
        // The same point as a data line keeps the data sentence.
        p.counts_files = false;
        let a = crate::findings::analyse_curve("", "create", "MiB/s", &[p], &ctx);
        let said = a.sentences.join(" ");
        assert!(said.contains("100 FUSE_WRITE requests"), "{said}");
    }

    #[test]
    fn counts_group_thousands() {
        assert_eq!(grouped(7), "7");
        assert_eq!(grouped(3072), "3,072");
        assert_eq!(grouped(1_234_567), "1,234,567");
    }
}
