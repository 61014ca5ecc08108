use super::*;

const S: u64 = 1_000_000_000;

/// SplitMix64 (Steele, Lea & Flood 2014): reproducible test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A worker's series: `ops` operations at random times in
/// `[start, end)`, random sizes, directions and latencies.
fn random_worker(
    rng: &mut Rng,
    interval: u64,
    cap: usize,
    start: u64,
    end: u64,
    ops: u64,
) -> Series {
    let mut times: Vec<u64> = (0..ops).map(|_| start + rng.below(end - start)).collect();
    times.sort_unstable();
    let mut r = SeriesRecorder::new(interval, cap, start).unwrap();
    for t in times {
        let octave = 1 + rng.below(30);
        let lat = 1 + rng.below(1 << octave);
        match rng.below(4) {
            0 => r.read(t, rng.below(1 << 20), lat),
            1 => r.write(t, rng.below(1 << 20), lat),
            2 => r.other(t, 0, lat),
            _ => r.error(t),
        }
    }
    r.finish(end)
}

#[test]
fn layout_has_608_buckets_that_tile_the_range() {
    assert_eq!(SERIES_BUCKETS, 608);
    let mut expect = 0u64;
    for i in 0..SERIES_BUCKETS {
        let (lo, hi) = BinLatency::bucket_bounds(i);
        assert_eq!(lo, expect, "bucket {i}");
        assert_eq!(layout_index(lo, SUB_BITS, TOP_NS), i);
        assert_eq!(layout_index(hi, SUB_BITS, TOP_NS), i);
        if lo >= 32 {
            assert!((hi - lo + 1) * 16 <= lo, "bucket {i} wider than 1/16");
        }
        expect = hi + 1;
    }
    assert_eq!(expect - 1, TOP_NS);
    assert_eq!(layout_index(u64::MAX, SUB_BITS, TOP_NS), SERIES_BUCKETS - 1);
}

#[test]
fn rates_latency_and_workers_per_interval() {
    // Two workers, 1 s intervals: 100 writes of 1 MiB at 2 ms in the first
    // second, 10 in the second (each), the second worker stops at 1.5 s.
    let mut all = Series::new(S, 16).unwrap();
    for (w, end) in [(0u64, 2 * S), (1, 3 * S / 2)] {
        let mut r = SeriesRecorder::new(S, 16, 0).unwrap();
        for k in 0..100 {
            r.write(k * (S / 100) + w, 1 << 20, 2_000_000);
        }
        for k in 0..10 {
            r.write(S + k * (S / 20) + w, 1 << 20, 20_000_000);
        }
        all.merge(&r.finish(end)).unwrap();
    }
    let f = all.figures();
    assert_eq!(f.len(), 2);
    assert_eq!(
        (f[0].t_s, f[0].dur_s, f[1].t_s, f[1].dur_s),
        (0.0, 1.0, 1.0, 1.0)
    );
    assert_eq!(f[0].mib_s, 200.0);
    assert_eq!(f[1].mib_s, 20.0);
    assert_eq!(f[1].iops, 20.0);
    assert_eq!(f[0].workers, 2.0);
    assert_eq!(f[1].workers, 1.5);
    assert_eq!(f[1].bytes_before, 200 << 20);
    // Every sample of an interval is the same: its percentiles are exact
    // (clamped into the exact extremes).
    assert_eq!(
        (f[0].lat_p50_us, f[0].lat_p99_us, f[0].lat_max_us),
        (2000.0, 2000.0, 2000.0)
    );
    assert_eq!(f[1].lat_p99_us, 20_000.0);
    let t = all.total();
    assert_eq!(t.io.write_bytes, 220 << 20);
    assert_eq!(t.lat.count(), 220);
}

#[test]
fn last_interval_is_cut_at_the_end() {
    let mut r = SeriesRecorder::new(S, 8, 0).unwrap();
    r.read(S + S / 4, 1 << 20, 1000);
    let s = r.finish(S + S / 2);
    let f = s.figures();
    assert_eq!(f.len(), 2);
    assert_eq!(f[1].dur_s, 0.5);
    assert_eq!(f[1].mib_s, 2.0);
    assert_eq!(f[0].ops, 0);
    assert_eq!(f[0].workers, 1.0);
}

#[test]
fn percentiles_within_three_percent_and_merge_exactly() {
    let mut rng = Rng(7);
    let mut r = SeriesRecorder::new(S, 4, 0).unwrap();
    let mut v: Vec<u64> = (0..20_000).map(|_| 1000 + rng.below(10_000_000)).collect();
    for &x in &v {
        r.read(5, 4096, x);
    }
    let s = r.finish(S);
    v.sort_unstable();
    let lat = &s.bins()[0].lat;
    for q in [0.5, 0.9, 0.99, 0.999] {
        let want = v[((q * v.len() as f64).ceil() as usize) - 1] as f64;
        let got = lat.quantile_ns(q) as f64;
        assert!((got - want).abs() / want <= 0.032, "q {q}: {got} vs {want}");
    }
    assert_eq!(lat.max_ns(), *v.last().unwrap());
    assert_eq!(lat.min_ns(), v[0]);
}

#[test]
fn merge_is_associative_and_commutative() {
    for seed in 0..40 {
        let mut rng = Rng(seed);
        let cap = 2 + rng.below(12) as usize;
        let interval = 1 + rng.below(S);
        let ws: Vec<Series> = (0..3)
            .map(|_| {
                let start = rng.below(5 * interval);
                let end = start + 1 + rng.below(40 * interval);
                let ops = rng.below(300);
                random_worker(&mut rng, interval, cap, start, end, ops)
            })
            .collect();
        let (a, b, c) = (&ws[0], &ws[1], &ws[2]);
        let mut ab_c = a.clone();
        ab_c.merge(b).unwrap();
        ab_c.merge(c).unwrap();
        let mut bc = b.clone();
        bc.merge(c).unwrap();
        let mut a_bc = a.clone();
        a_bc.merge(&bc).unwrap();
        let mut ca = c.clone();
        ca.merge(a).unwrap();
        let mut ca_b = ca.clone();
        ca_b.merge(b).unwrap();
        assert_eq!(ab_c, a_bc, "seed {seed}");
        assert_eq!(ab_c, ca_b, "seed {seed}");
        assert!(ab_c.bins().len() <= cap);
        // Nothing lost: the totals are the sums of the workers'.
        let mut want = a.total();
        want.merge(&b.total());
        want.merge(&c.total());
        assert_eq!(ab_c.total(), want, "seed {seed}");
    }
}

#[test]
fn coarsening_is_exact() {
    // The same operations recorded with a small cap equal those recorded
    // with room to spare and coarsened to the same width afterwards.
    for seed in 0..20 {
        let mut rng = Rng(100 + seed);
        let end = 1 + rng.below(500 * S);
        let small = random_worker(&mut Rng(seed), S, 8, 0, end, 2000);
        let mut big = random_worker(&mut Rng(seed), S, 1 << 20, 0, end, 2000);
        assert!(small.bins().len() <= 8);
        assert!(small.width_ns() >= big.width_ns());
        big.coarsen_to(small.width_ns());
        assert_eq!(small.bins(), big.bins(), "seed {seed}");
        assert_eq!(small.end_ns(), big.end_ns());
        let _ = rng.next();
    }
}

#[test]
fn merge_refuses_other_grids() {
    let a = Series::new(S, 8).unwrap();
    let mut b = Series::new(2 * S, 8).unwrap();
    assert!(matches!(
        b.merge(&a),
        Err(SeriesError::DifferentGrid { .. })
    ));
    let c = Series::new(2 * S, 16).unwrap();
    assert!(b.merge(&c).is_err());
    assert_eq!(Series::new(0, 8), Err(SeriesError::ZeroInterval));
    assert_eq!(Series::new(S, 1), Err(SeriesError::CapTooSmall(1)));
}

#[test]
fn a_day_at_one_second_stays_bounded() {
    // 24 hours at 1 s, one operation every 0.25 s.
    let day = 86_400 * S;
    let mut r = SeriesRecorder::new(S, DEFAULT_CAP, 0).unwrap();
    let mut t = 0;
    while t < day {
        r.write(t, 4096, 1000 + t % 7919);
        t += S / 4;
    }
    let s = r.finish(day);
    assert_eq!(s.width_ns(), 32 * S);
    assert_eq!(s.bins().len(), 2700);
    assert_eq!(s.total().io.ops, 4 * 86_400);
    let f = s.figures();
    assert!(
        f.iter().all(|b| b.iops == 4.0 && b.workers == 1.0),
        "{:?}",
        f[0]
    );
}

#[test]
fn edge_values_do_not_overflow() {
    let mut r = SeriesRecorder::new(1, 2, 0).unwrap();
    r.read(0, u64::MAX / 2, u64::MAX);
    r.read(u64::MAX - 1, 1, 0);
    let s = r.finish(u64::MAX);
    assert!(s.bins().len() <= 2);
    let t = s.total();
    assert_eq!(t.io.ops, 2);
    assert_eq!(t.lat.max_ns(), u64::MAX);
    assert_eq!(t.lat.min_ns(), 0);
    let _ = s.figures();
    // An interval of u64::MAX ns holds everything in one.
    let mut r = SeriesRecorder::new(u64::MAX, 2, 0).unwrap();
    r.write(u64::MAX - 1, 1, 1);
    assert_eq!(r.finish(u64::MAX).bins().len(), 1);
}

#[test]
fn record_round_trips_and_is_checked() {
    let mut rng = Rng(3);
    let s = random_worker(&mut rng, S / 10, 16, 0, 5 * S, 500);
    let json = serde_json::to_value(&s).unwrap();
    let b0 = &json["bins"][0];
    for key in [
        "t_s",
        "dur_s",
        "ops",
        "bytes",
        "read_bytes",
        "write_ops",
        "errors",
        "busy_ns",
    ] {
        assert!(b0.get(key).is_some(), "missing {key} in {b0}");
    }
    assert!(b0["lat_us"]["p99"].is_number());
    assert!(json["interval_ns"].is_u64());
    let back: Series = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(back, s);

    let mut bad = json.clone();
    bad["interval_ns"] = serde_json::json!(3 * S / 10);
    assert!(serde_json::from_value::<Series>(bad).is_err());
    let mut bad = json.clone();
    bad["bins"][0]["lat"]["count"] = serde_json::json!(1_000_000);
    assert!(serde_json::from_value::<Series>(bad).is_err());
    let mut bad = json;
    bad["bins"][0]["lat"]["buckets"] = serde_json::json!([[700, 1]]);
    assert!(serde_json::from_value::<Series>(bad).is_err());
}

#[test]
fn steady_windows_as_fio_judges_them() {
    let flat = [100.0, 104.0, 97.0, 101.0, 98.0];
    assert!(steady(&flat, 1.0, SteadyCriterion::Deviation, 5.0));
    assert!(!steady(&flat, 1.0, SteadyCriterion::Deviation, 3.0));
    // A ramp of 10 per interval: slope 10/s at 1 s, 20/s at 0.5 s.
    let ramp = [10.0, 20.0, 30.0, 40.0];
    assert!(steady(&ramp, 1.0, SteadyCriterion::Slope, 10.0 + 1e-9));
    assert!(!steady(&ramp, 1.0, SteadyCriterion::Slope, 9.9));
    assert!(!steady(&ramp, 0.5, SteadyCriterion::Slope, 19.9));
    assert!(steady(&[5.0], 1.0, SteadyCriterion::Slope, 0.0));
    assert!(!steady(&[], 1.0, SteadyCriterion::Deviation, 1e9));
    assert!(!steady(
        &[1.0, f64::NAN],
        1.0,
        SteadyCriterion::Deviation,
        1e9
    ));
}
