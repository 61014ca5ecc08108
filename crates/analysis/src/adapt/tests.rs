//! Known answers of the adaptive sweep's decisions, on synthetic curves
//! with seeded noise: servers of K slots, a serialised server, a falling
//! line, a line that never stops rising, noisy and failing points, and
//! the repetition rule on steady, jittered and impossible points.

use super::*;
use crate::findings::analyse_curve;
use crate::verdict::{style_faults, Context};
use stats::bootstrap::{trimmed_mean_ci, SplitMix64};

/// A point of `workers` from its repetitions (MiB/s, 1 MiB a request) and
/// the median latency of each, µs.
fn point(workers: u32, reps: &[f64], p50_us: &[f64]) -> CurvePoint {
    let n = reps.len();
    let mean = reps.iter().sum::<f64>() / n.max(1) as f64;
    let lat = p50_us.iter().sum::<f64>() / p50_us.len().max(1) as f64;
    let lo = p50_us.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = p50_us.iter().copied().fold(0.0, f64::max);
    CurvePoint {
        threads: workers,
        ranks: 1,
        threads_per_rank: workers,
        value: mean,
        min: reps.iter().copied().fold(f64::INFINITY, f64::min),
        max: reps.iter().copied().fold(0.0, f64::max),
        ci: trimmed_mean_ci(reps, 0),
        reps: n,
        elapsed_s: 1.0,
        iops: mean,
        bytes_per_op: 1_048_576.0,
        cpu_busy: 0.05,
        lat_p50_us: lat,
        lat_p99_us: lat * 1.5,
        lat_p50_range_us: Some((lo, hi)),
        lat_p99_range_us: Some((lo * 1.5, hi * 1.5)),
        ops_total: 2000,
        ..Default::default()
    }
}

/// A model line: the rate (MiB/s) and median latency (µs) at a count.
type Model = dyn Fn(u32) -> (f64, f64);

/// A server of `k` slots, each request 10 ms of service and 0.3 ms of
/// the client's own time: rate min(n ÷ 10.3 ms, k ÷ 10 ms), latency the
/// service plus the wait for a slot.
fn slots(k: u32) -> Box<Model> {
    Box::new(move |n| {
        let (s, o) = (0.010, 0.0003);
        let rate = (n as f64 / (s + o)).min(k as f64 / s);
        let lat = if n <= k { s } else { n as f64 * s / k as f64 };
        (rate, lat * 1e6)
    })
}

/// Measures a model at `n` workers: `reps` repetitions, each its rate
/// times 1 + a uniform draw of ±`noise` (seeded by the count).
fn measure(m: &Model, n: u32, reps: usize, noise: f64, seed: u64) -> CurvePoint {
    let mut rng = SplitMix64::new(seed ^ (n as u64).wrapping_mul(0x9E37_79B9));
    let (rate, lat) = m(n);
    let mut draw = || 1.0 + noise * (rng.unit() * 2.0 - 1.0);
    let r: Vec<f64> = (0..reps).map(|_| rate * draw()).collect();
    let l: Vec<f64> = (0..reps).map(|_| lat * draw()).collect();
    point(n, &r, &l)
}

fn ctx() -> Context {
    Context {
        cpus: 64,
        fs_type: "fuse.ioscale-testfs".into(),
    }
}

fn curve(points: &[CurvePoint]) -> CurveAnalysis {
    analyse_curve("", "write", "MiB/s", points, &ctx())
}

/// Runs the search on a model to its end: the path and the last search.
fn drive(rule: ThreadsAuto, m: &Model, reps: usize, noise: f64, seed: u64) -> (Vec<u32>, Search) {
    let mut pts: Vec<CurvePoint> = Vec::new();
    let mut path = Vec::new();
    loop {
        let curves: Vec<CurveAnalysis> = if pts.is_empty() {
            Vec::new()
        } else {
            vec![curve(&pts)]
        };
        let s = search(&rule, &curves);
        let Some(next) = s.next else {
            return (path, s);
        };
        assert!(!path.contains(&next), "{next} measured twice: {path:?}");
        assert!(
            next >= 1 && next <= rule.max,
            "{next} outside 1..={}",
            rule.max
        );
        assert!(path.len() < 80, "the search does not end: {path:?}");
        path.push(next);
        pts.push(measure(m, next, reps, noise, seed));
    }
}

fn auto(max: u32) -> ThreadsAuto {
    ThreadsAuto { start: 1, max }
}

fn optimum_of(s: &Search) -> &Optimum {
    s.lines[0].optimum.as_ref().expect("an optimum")
}

#[test]
fn k_slots_optimum_within_one_of_k_after_at_most_8_counts() {
    for k in [2u32, 3, 4, 5, 6, 8] {
        for seed in 0..20 {
            let (path, s) = drive(auto(64), &*slots(k), 3, 0.02, seed);
            let o = optimum_of(&s);
            assert!(
                (k - 1..=k + 1).contains(&o.count),
                "K={k} seed {seed}: optimum {} via {path:?}: {}",
                o.count,
                o.text
            );
            assert!(path.len() <= 8, "K={k} seed {seed}: {path:?}");
            assert!(style_faults(&o.text).is_empty(), "{}", o.text);
        }
    }
    // K = 8, noise ±2%: doubling to 16 (flat), then 6 and 7 between 4 and 8.
    let (path, s) = drive(auto(64), &*slots(8), 3, 0.02, 1);
    assert_eq!(path, [1, 2, 4, 8, 16, 6, 7]);
    let o = optimum_of(&s);
    assert_eq!(o.count, 8);
    assert!(
        o.text.starts_with("8 workers: within ") && o.text.contains("of the peak at 16 workers"),
        "{}",
        o.text
    );
    assert!(o.text.contains("clearly above"), "{}", o.text);
    let st = s.lines[0].stop.unwrap();
    assert_eq!((st.kind, st.at, st.best), (StopKind::NoRise, 16, Some(8)));
}

#[test]
fn larger_k_is_found_too_with_a_few_more_counts() {
    for k in [12u32, 24, 40] {
        for seed in 0..10 {
            let (path, s) = drive(auto(64), &*slots(k), 3, 0.02, seed);
            let o = optimum_of(&s);
            assert!(
                (k - 1..=k + 1).contains(&o.count),
                "K={k}: {} via {path:?}",
                o.count
            );
            // The doubling ladder to 64 has 7 counts; the refinement
            // between two doublings adds at most log2 of their gap.
            assert!(path.len() <= 7 + 5, "K={k}: {path:?}");
        }
    }
}

#[test]
fn a_serialised_server_stops_within_4_counts_with_its_verdict() {
    for seed in 0..30 {
        let (path, s) = drive(auto(64), &*slots(1), 3, 0.02, seed);
        assert!(path.len() <= 4, "{path:?}");
        let st = s.lines[0].stop.unwrap();
        assert_eq!(st.verdict, VerdictKind::Serialised, "{path:?}");
        assert_eq!(st.kind, StopKind::Verdict);
        // 2 may gain a few percent beyond noise: the clients' own time
        // overlaps the server's.
        assert!(optimum_of(&s).count <= 2);
        assert!(stop_text(&st).contains("serialised"), "{}", stop_text(&st));
    }
}

#[test]
fn a_falling_line_has_its_optimum_at_or_before_the_fall() {
    // Rises to 2 workers, then each doubling loses a third (CPU-bound
    // tmpfs with more workers than CPUs).
    let fall: Box<Model> = Box::new(|n| {
        let r = match n {
            1 => 1000.0,
            2 => 1800.0,
            _ => 1800.0 * (2.0f64 / 3.0).powf((n as f64 / 2.0).log2()),
        };
        (r, 100.0 * n as f64)
    });
    for seed in 0..20 {
        let (path, s) = drive(auto(64), &*fall, 3, 0.03, seed);
        assert_eq!(path, [1, 2, 4], "seed {seed}");
        let st = s.lines[0].stop.unwrap();
        assert_eq!(
            (st.kind, st.verdict),
            (StopKind::Verdict, VerdictKind::Falls)
        );
        assert!(optimum_of(&s).count <= 2);
    }
}

#[test]
fn a_line_that_keeps_rising_reaches_max_and_says_at_least() {
    let linear: Box<Model> = Box::new(|n| (100.0 * n as f64, 2000.0));
    let (path, s) = drive(auto(16), &*linear, 3, 0.02, 4);
    assert_eq!(path, [1, 2, 4, 8, 16]);
    let o = optimum_of(&s);
    assert!(o.at_least && o.count == 16, "{o:?}");
    assert!(o.text.starts_with("At least 16 workers"), "{}", o.text);
    let st = s.lines[0].stop.unwrap();
    assert!(st.kind == StopKind::Max && st.rising);
    // A MAX off the doubling ladder is its last count.
    let (path, _) = drive(auto(13), &*linear, 3, 0.02, 4);
    assert_eq!(path, [1, 2, 4, 8, 13]);
}

#[test]
fn edge_counts_one_and_the_largest_u32() {
    let (path, s) = drive(auto(1), &*slots(4), 3, 0.02, 1);
    assert_eq!(path, [1]);
    assert_eq!(optimum_of(&s).count, 1);
    let huge = auto(u32::MAX);
    let ladder = huge.ladder();
    assert_eq!(ladder.len(), 33);
    assert_eq!(ladder[31], 1 << 31);
    assert_eq!(*ladder.last().unwrap(), u32::MAX);
    // A line that rises forever walks the whole ladder, no overflow.
    let linear: Box<Model> = Box::new(|n| (n as f64, 1000.0));
    let (path, s) = drive(huge, &*linear, 3, 0.01, 2);
    assert_eq!(path, ladder);
    assert!(optimum_of(&s).at_least);
    // The fine ladder of 4 billion counts is not walked for an estimate.
    let times: Vec<(u32, f64)> = path.iter().map(|&c| (c, 1.0)).collect();
    let r = search_report(&huge, &[], &path, &times, false);
    assert_eq!(r.fine_ladder_s, None);
    assert_eq!(r.doubling_ladder_s, Some(33.0));
}

#[test]
fn a_crafted_rule_in_a_record_reads_without_a_panic() {
    // `ioscale report` reads the rule back from the record.
    for (start, max) in [(5, 2), (0, 0), (0, 1), (u32::MAX, u32::MAX)] {
        let rule = ThreadsAuto { start, max };
        let r = search_report(&rule, &[], &[3, 0], &[(3, f64::NAN), (0, 1.0)], true);
        assert!(!r.sentences.is_empty());
    }
    let rule = RepsAuto {
        target: f64::NAN,
        min: 3,
        max: 0,
    };
    let o = judge_reps(&rule, 0, &[figure("write", &[1.0, 1.0, 1.0])]);
    assert!(o.done && !o.reached);
    assert!(style_faults(&o.text()).is_empty());
}

#[test]
fn parse_threads_auto() {
    assert_eq!(ThreadsAuto::parse("auto").unwrap(), Some(auto(64)));
    assert_eq!(ThreadsAuto::parse("auto:8").unwrap(), Some(auto(8)));
    assert_eq!(ThreadsAuto::parse("1,2,4").unwrap(), None);
    for bad in [
        "auto:0",
        "auto:",
        "auto:x",
        "auto:-1",
        "autox",
        "auto:4294967296",
    ] {
        assert!(ThreadsAuto::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn noisy_points_stop_after_the_patience_and_say_why() {
    for seed in 0..20 {
        let (path, s) = drive(auto(64), &*slots(8), 3, 0.4, seed);
        assert!(path.len() <= 12, "seed {seed}: {path:?}");
        let st = s.lines[0].stop.unwrap();
        assert!(
            matches!(
                st.kind,
                StopKind::Noise | StopKind::NoRise | StopKind::Verdict
            ),
            "{st:?}"
        );
    }
    // One repetition: no interval shows a flat line, so two stalls.
    let (path, s) = drive(auto(64), &*slots(2), 1, 0.0, 1);
    assert_eq!(path, [1, 2, 4, 8]);
    let st = s.lines[0].stop.unwrap();
    assert_eq!(st.kind, StopKind::Noise);
    assert!(stop_text(&st).contains("--reps auto"));
    assert!(optimum_of(&s).text.contains("no noise estimate"));
}

#[test]
fn nan_rates_and_failed_points_are_skipped_not_chosen() {
    let m = slots(8);
    let mk = |n: u32| measure(&*m, n, 3, 0.02, 9);
    // Every repetition failed at 4: the doubling goes on past it.
    let mut failed4 = point(4, &[], &[]);
    failed4.reps = 0;
    failed4.failed = 3;
    failed4.value = 0.0;
    let pts = vec![mk(1), mk(2), failed4];
    let s = search(&auto(64), &[curve(&pts)]);
    assert_eq!(s.next, Some(8));
    // A NaN rate at 8 counts as no figure: never the peak or the optimum.
    let mut nan8 = mk(8);
    nan8.value = f64::NAN;
    let pts = vec![mk(1), mk(2), mk(4), nan8, mk(16)];
    let c = CurveAnalysis {
        points: pts.clone(),
        ..curve(&[mk(1), mk(2), mk(4), mk(16)])
    };
    let l = line_search(&auto(64), &c);
    assert_ne!(l.optimum.as_ref().unwrap().count, 8);
    assert_ne!(l.next, Some(8));
    // Two counts in a row with every repetition failed stop the doubling.
    let f = |n: u32| CurvePoint {
        reps: 0,
        failed: 2,
        ..point(n, &[], &[])
    };
    let c = curve(&[mk(1), f(2), f(4)]);
    let l = line_search(&auto(64), &c);
    assert_eq!(l.stop.unwrap().kind, StopKind::Failed);
    assert_eq!(l.optimum.unwrap().count, 1);
    // One failed repetition among three good ones changes nothing.
    let mut p = mk(8);
    p.failed = 1;
    let c = curve(&[mk(1), mk(2), mk(4), p, mk(16)]);
    assert_eq!(line_search(&auto(64), &c).next, Some(6));
}

#[test]
fn the_search_is_read_again_from_the_points_so_a_resume_continues_it() {
    let m = slots(6);
    let (path, _) = drive(auto(64), &*m, 3, 0.02, 5);
    let pts: Vec<CurvePoint> = path.iter().map(|&n| measure(&*m, n, 3, 0.02, 5)).collect();
    for k in 1..path.len() {
        // The points in any order: a record keeps them by number.
        let mut some = pts[..k].to_vec();
        some.reverse();
        let s = search(&auto(64), &[curve(&some)]);
        assert_eq!(s.next, Some(path[k]), "after {:?}", &path[..k]);
    }
}

#[test]
fn several_lines_measure_the_smallest_count_any_asks_for() {
    let (a, b) = (slots(2), slots(8));
    let mut pa: Vec<CurvePoint> = Vec::new();
    let mut pb: Vec<CurvePoint> = Vec::new();
    let mut path = Vec::new();
    loop {
        let curves = if pa.is_empty() {
            Vec::new()
        } else {
            vec![
                analyse_curve("a", "write", "MiB/s", &pa, &ctx()),
                analyse_curve("b", "write", "MiB/s", &pb, &ctx()),
            ]
        };
        let Some(n) = search(&auto(64), &curves).next else {
            let s = search(&auto(64), &curves);
            assert_eq!(s.lines[0].optimum.as_ref().unwrap().count, 2);
            assert_eq!(s.lines[1].optimum.as_ref().unwrap().count, 8);
            break;
        };
        assert!(path.len() < 20);
        path.push(n);
        pa.push(measure(&*a, n, 3, 0.02, 3));
        pb.push(measure(&*b, n, 3, 0.02, 3));
    }
    assert_eq!(path, [1, 2, 4, 8, 16, 6, 7]);
}

#[test]
fn counts_not_allowed_are_never_asked_for() {
    // A --scale total of 2 GiB splits evenly across powers of two only.
    let pow2 = |c: u32| c.is_power_of_two();
    let m = slots(6);
    let mut pts: Vec<CurvePoint> = Vec::new();
    let mut path = Vec::new();
    loop {
        let curves = if pts.is_empty() {
            Vec::new()
        } else {
            vec![curve(&pts)]
        };
        let s = search_in(&auto(64), &curves, &pow2);
        let Some(n) = s.next else {
            assert_eq!(s.lines[0].optimum.as_ref().unwrap().count, 8);
            break;
        };
        assert!(pow2(n) && path.len() < 10, "{n} {path:?}");
        path.push(n);
        pts.push(measure(&*m, n, 3, 0.02, 2));
    }
    assert_eq!(path, [1, 2, 4, 8, 16]);
    // A MAX not allowed: the ladder ends at the last allowed count.
    let s = search_in(&auto(12), &[], &pow2);
    assert_eq!(s.next, Some(1));
    assert_eq!(refine_next_in(4, 12, &[], &|c| c == 11), Some(11));
    assert_eq!(refine_next_in(4, 12, &[], &|_| false), None);
}

#[test]
fn refinement_takes_the_free_count_nearest_the_geometric_mean() {
    assert_eq!(refine_next(4, 8, &[]), Some(6));
    assert_eq!(refine_next(6, 8, &[]), Some(7));
    assert_eq!(refine_next(7, 8, &[]), None);
    assert_eq!(refine_next(8, 8, &[]), None);
    assert_eq!(refine_next(1, 1000, &[]), Some(32));
    // √1000 = 31.6: with 32 measured (failed), 31 is nearer than 33.
    assert_eq!(refine_next(1, 1000, &[32]), Some(31));
    assert_eq!(refine_next(4, 8, &[5, 6, 7]), None);
    assert_eq!(refine_next(u32::MAX - 2, u32::MAX, &[]), Some(u32::MAX - 1));
}

#[test]
fn the_report_names_path_stop_and_time_against_the_ladders() {
    let m = slots(8);
    let (path, _) = drive(auto(64), &*m, 3, 0.02, 1);
    let pts: Vec<CurvePoint> = path.iter().map(|&n| measure(&*m, n, 3, 0.02, 1)).collect();
    let times: Vec<(u32, f64)> = path.iter().map(|&c| (c, 2.0)).collect();
    let r = search_report(&auto(64), &[curve(&pts)], &path, &times, false);
    assert!(r.done);
    assert_eq!(r.spent_s, 14.0);
    // Scale total: each count takes the time of the nearest measured one.
    assert_eq!(r.fine_ladder_s, Some(128.0));
    assert_eq!(r.doubling_ladder_s, Some(14.0));
    assert_eq!(
        r.sentences[1],
        "Search path: 1, 2, 4, 8, 16 (doubling), then 6, 7 (refining)."
    );
    assert!(
        r.sentences[2].starts_with(
            "It measured 7 counts in 14.0 s; every count from 1 to 64 would take about 128 s"
        ),
        "{}",
        r.sentences[2]
    );
    assert!(
        r.sentences[0].contains("The search: the doubling stopped at 16"),
        "{}",
        r.sentences[0]
    );
    for s in &r.sentences {
        assert!(style_faults(s).is_empty(), "{s}");
    }
    // Unfinished: it says how to go on.
    let r = search_report(
        &auto(64),
        &[curve(&pts[..3])],
        &path[..3],
        &times[..3],
        false,
    );
    assert!(!r.done);
    assert!(r.sentences[1].ends_with("not finished, --resume continues it."));
}

#[test]
fn under_mpi_the_path_and_stop_say_threads_per_rank_and_the_optimum_workers() {
    let m = slots(8);
    let (path, _) = drive(auto(64), &*m, 3, 0.02, 1);
    // The same line measured over 2 ranks: the search counts threads per
    // rank, each point has twice the workers.
    let pts: Vec<CurvePoint> = path
        .iter()
        .map(|&n| {
            let mut p = measure(&*m, n, 3, 0.02, 1);
            p.ranks = 2;
            p.threads_per_rank = n;
            p.threads = 2 * n;
            p
        })
        .collect();
    let times: Vec<(u32, f64)> = path.iter().map(|&c| (c, 2.0)).collect();
    let r = search_report(&auto(64), &[curve(&pts)], &path, &times, false);
    assert!(
        r.sentences[1].starts_with("Search path (threads per rank, on 2 ranks): 1, 2, 4"),
        "{}",
        r.sentences[1]
    );
    let opt = optimum_of(&search(&auto(64), &[curve(&pts)])).clone();
    assert_eq!(opt.workers % 2, 0, "{opt:?}");
    assert!(
        r.sentences[0].starts_with(&format!("{}: {} workers", pts_line(&r), opt.workers)),
        "{}",
        r.sentences[0]
    );
    assert!(
        r.sentences[0].contains("The search: the doubling stopped at 16 threads per rank"),
        "{}",
        r.sentences[0]
    );
    assert!(
        r.sentences[2].contains("every count from 1 to 64 threads per rank"),
        "{}",
        r.sentences[2]
    );
    for s in &r.sentences {
        assert!(style_faults(s).is_empty(), "{s}");
    }
}

/// The line's name a report's first sentence starts with.
fn pts_line(r: &SearchReport) -> String {
    r.lines[0].line.clone()
}

#[test]
fn ladder_estimates_scale_with_the_workers_share() {
    let t = [(1, 1.0), (2, 2.0)];
    assert_eq!(
        ladder_estimate(&t, 1..=4, true),
        Some(1.0 + 2.0 + 3.0 + 4.0)
    );
    assert_eq!(
        ladder_estimate(&t, 1..=4, false),
        Some(1.0 + 2.0 + 2.0 + 2.0)
    );
    assert_eq!(ladder_estimate(&[], 1..=4, false), None);
    assert_eq!(ladder_estimate(&[(1, f64::NAN)], 1..=4, false), None);
}

fn steady(n: usize, noise: f64, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| 100.0 * (1.0 + noise * (rng.unit() * 2.0 - 1.0)))
        .collect()
}

fn figure(op: &str, reps: &[f64]) -> RepFigure {
    RepFigure {
        op: op.into(),
        good: reps.len() as u32,
        center: reps.iter().sum::<f64>() / reps.len().max(1) as f64,
        ci: trimmed_mean_ci(reps, 0),
    }
}

/// Repetitions until the rule stops, for a point of `noise`.
fn reps_until_done(rule: &RepsAuto, noise: f64, seed: u64) -> RepsOutcome {
    let all = steady(rule.max as usize, noise, seed);
    for ran in 1..=rule.max {
        let o = judge_reps(rule, ran, &[figure("write", &all[..ran as usize])]);
        if o.done {
            return o;
        }
    }
    unreachable!("the rule stops at --max-reps")
}

#[test]
fn parse_reps_auto() {
    let r = RepsAuto::parse("auto", None).unwrap().unwrap();
    assert_eq!((r.target, r.min, r.max), (0.05, 3, 10));
    assert_eq!(
        RepsAuto::parse("auto:3%", Some(20))
            .unwrap()
            .unwrap()
            .target,
        0.03
    );
    assert_eq!(
        RepsAuto::parse("auto:2.5", None).unwrap().unwrap().target,
        0.025
    );
    assert_eq!(RepsAuto::parse("5", None).unwrap(), None);
    for bad in [
        "auto:0%",
        "auto:100%",
        "auto:x",
        "auto:",
        "autox",
        "auto:-3%",
        "auto:NaN",
    ] {
        assert!(RepsAuto::parse(bad, None).is_err(), "{bad}");
    }
    assert!(RepsAuto::parse("auto", Some(2)).is_err());
    assert!(RepsAuto::parse("auto", Some(0)).is_err());
    assert!(RepsAuto::parse("auto", Some(u32::MAX)).is_ok());
}

#[test]
fn a_jittered_point_takes_more_repetitions_than_a_steady_one() {
    let rule = RepsAuto::parse("auto", Some(30)).unwrap().unwrap();
    let (mut more, mut total) = (0, 0);
    for seed in 0..40 {
        let calm = reps_until_done(&rule, 0.01, seed);
        assert!(calm.reached && calm.ran == 3, "{calm:?}");
        let jit = reps_until_done(&rule, 0.2, seed);
        assert!(jit.reached, "{jit:?}");
        more += (jit.ran > calm.ran) as u32;
        total += jit.ran;
        assert!(jit.noise.unwrap() <= 0.05);
        assert!(jit.text().contains("reached"), "{}", jit.text());
    }
    // The percentile bootstrap over 3 repetitions is about their range:
    // three draws of ±20% noise lie within ±5% of their mean now and then
    // (here 4 seeds of 40), and the rule takes them at their word.
    assert!(more >= 30, "{more} of 40");
    assert!(total >= 40 * 6, "{total}");
}

#[test]
fn an_impossible_target_stops_at_max_reps_and_says_so() {
    let rule = RepsAuto::parse("auto:1%", Some(5)).unwrap().unwrap();
    let o = reps_until_done(&rule, 0.5, 7);
    assert!(o.done && !o.reached && o.ran == 5, "{o:?}");
    let t = o.text();
    assert!(
        t.contains("the --max-reps") && t.contains("not reached"),
        "{t}"
    );
    assert!(style_faults(&t).is_empty(), "{t}");
}

#[test]
fn failed_zero_and_nan_repetitions_never_reach_the_target() {
    let rule = RepsAuto::parse("auto", Some(4)).unwrap().unwrap();
    // Failed repetitions count towards the most: 4 run, 2 good.
    let o = judge_reps(&rule, 4, &[figure("write", &[100.0, 100.0])]);
    assert!(o.done && !o.reached);
    assert!(
        o.text().contains("2 good, too few to judge"),
        "{}",
        o.text()
    );
    // One failed among four: three good at ±0% reach it.
    let o = judge_reps(&rule, 4, &[figure("write", &[100.0, 100.0, 100.0])]);
    assert!(o.reached);
    // A centre of 0 or NaN has no relative interval.
    for v in [0.0, f64::NAN] {
        let o = judge_reps(&rule, 3, &[figure("write", &[v, v, v])]);
        assert!(!o.reached && !o.done && o.noise.is_none(), "{v}: {o:?}");
    }
    // Nothing recorded: not reached, done only at the most.
    assert!(!judge_reps(&rule, 3, &[]).done);
    assert!(judge_reps(&rule, 4, &[]).done);
    // The widest operation decides.
    let o = judge_reps(
        &rule,
        3,
        &[
            figure("write", &[100.0, 100.0, 100.0]),
            figure("read", &[80.0, 100.0, 120.0]),
        ],
    );
    assert!(!o.reached && o.op == "read", "{o:?}");
}
