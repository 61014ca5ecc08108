use stats::SeriesRecorder;

use super::*;

const S: u64 = 1_000_000_000;

/// SplitMix64 (Steele, Lea & Flood 2014) with Box–Muller normals.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u, v) = (self.next().max(1e-12), self.next());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// A phase of `workers` workers, 1 s intervals: interval `i` moves
/// `rates[i]` MiB/s in writes of `op_mib` MiB whose latency is `lat_us(i)`.
/// Worker `w` stops at `ends[w]` seconds (the end of the rates by default).
fn phase_with(
    workers: u32,
    rates: &[f64],
    op_mib: f64,
    lat_us: &dyn Fn(usize) -> f64,
    ends: &[u64],
) -> Series {
    let n = rates.len() as u64;
    let mut all = Series::new(S, 4096).unwrap();
    for w in 0..workers {
        let end = ends.get(w as usize).copied().unwrap_or(n);
        let mut r = SeriesRecorder::new(S, 4096, 0).unwrap();
        for (i, &mib) in rates.iter().enumerate().take(end as usize) {
            let ops = (mib / op_mib / workers as f64).round() as u64;
            for k in 0..ops {
                let t = i as u64 * S + k * S / ops + w as u64;
                r.write(t, (op_mib * 1_048_576.0) as u64, (lat_us(i) * 1e3) as u64);
            }
        }
        all.merge(&r.finish(end * S)).unwrap();
    }
    all
}

fn phase(workers: u32, rates: &[f64]) -> Series {
    phase_with(workers, rates, 1.0 / 16.0, &|_| 1000.0, &[])
}

/// `n` intervals at `level` with relative Gaussian noise `sd`.
fn noisy(rng: &mut Rng, n: usize, level: f64, sd: f64) -> Vec<f64> {
    (0..n)
        .map(|_| (level * (1.0 + sd * rng.normal())).max(0.0))
        .collect()
}

/// `old` until `at`, `new` from `at` (to `back`, then `old` again).
fn stepped(
    rng: &mut Rng,
    n: usize,
    at: usize,
    back: usize,
    old: f64,
    new: f64,
    sd: f64,
) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let l = if (at..back).contains(&i) { new } else { old };
            l * (1.0 + sd * rng.normal())
        })
        .collect()
}

fn view(workers: u32, rep: u32, order: usize, series: &Series) -> PhaseView<'_> {
    PhaseView {
        workers,
        rep,
        order,
        series,
    }
}

fn line(phases: &[PhaseView]) -> Timeline {
    let t = read_line("MiB/s", true, Units::Iec, phases);
    for s in &t.sentences {
        eprintln!("{s}");
    }
    t
}

#[test]
fn a_drop_is_found_with_its_time_and_levels() {
    let mut rng = Rng(1);
    let s = phase(8, &stepped(&mut rng, 60, 42, 60, 480.0, 125.0, 0.03));
    let t = line(&[view(8, 0, 0, &s)]);
    assert_eq!(t.changes.len(), 1, "{t:?}");
    let c = &t.changes[0];
    assert!(c.rate_fell && !c.latency_rose);
    assert_eq!(c.at_s, 42.0);
    assert_eq!(c.back_s, None);
    assert!((c.rate_before / 480.0 - 1.0).abs() < 0.02, "{c:?}");
    assert!((c.rate_after / 125.0 - 1.0).abs() < 0.03, "{c:?}");
    let want = format!(
        "Throughput fell from {} MiB/s to {} MiB/s 42.0 s into the phase at 8 workers and stayed \
         there until the end.",
        num(c.rate_before),
        num(c.rate_after)
    );
    assert_eq!(t.sentences, vec![want]);
}

#[test]
fn the_same_drop_after_the_same_bytes_is_the_volume_not_the_workers() {
    // Burst rates 200, 400 and 800 MiB/s until 8 GiB are written, then
    // 100 MiB/s: the drop comes after 41, 20.5 and 10.2 s.
    let mut rng = Rng(2);
    let series: Vec<(u32, Series)> = [(2u32, 200.0), (4, 400.0), (8, 800.0)]
        .into_iter()
        .map(|(w, burst)| {
            let at = (8192.0 / burst) as usize;
            (
                w,
                phase(w, &stepped(&mut rng, 60, at, 60, burst, 100.0, 0.03)),
            )
        })
        .collect();
    let phases: Vec<PhaseView> = series
        .iter()
        .enumerate()
        .map(|(i, (w, s))| view(*w, 0, i, s))
        .collect();
    let t = line(&phases);
    assert_eq!(t.changes.len(), 3, "{t:?}");
    let s = &t.sentences[0];
    assert!(s.starts_with("Throughput fell from"), "{s}");
    assert!(s.contains("10.0 s into the phase at 8 workers"), "{s}");
    assert!(
        s.contains("not the number of workers: the same change appears at 2, 4 and 8 workers after the same number of bytes"),
        "{s}"
    );
    assert!(s.contains("burst credits"), "{s}");
}

#[test]
fn the_same_drop_after_the_same_time_is_the_time_not_the_workers() {
    let mut rng = Rng(3);
    let series: Vec<(u32, Series)> = [(2u32, 100.0, 50.0), (4, 200.0, 60.0), (8, 400.0, 70.0)]
        .into_iter()
        .map(|(w, hi, lo)| (w, phase(w, &stepped(&mut rng, 60, 30, 60, hi, lo, 0.03))))
        .collect();
    let phases: Vec<PhaseView> = series
        .iter()
        .enumerate()
        .map(|(i, (w, s))| view(*w, 0, i, s))
        .collect();
    let t = line(&phases);
    let s = &t.sentences[0];
    assert!(
        s.contains("a limit that sets in after a time")
            && s.contains("after the same time, about 30.0 s"),
        "{s}"
    );
}

#[test]
fn a_latency_step_is_found_with_the_drop_it_causes() {
    // Four workers, each one request at a time: 2 ms per 64 KiB write is
    // 125 MiB/s; 20 ms from 30 s on is 12.5 MiB/s.
    let rates: Vec<f64> = (0..60).map(|i| if i < 30 { 125.0 } else { 12.5 }).collect();
    let s = phase_with(
        4,
        &rates,
        1.0 / 16.0,
        &|i| if i < 30 { 2000.0 } else { 20_000.0 },
        &[],
    );
    let t = line(&[view(4, 0, 0, &s)]);
    let c = &t.changes[0];
    assert!(c.rate_fell && c.latency_rose, "{c:?}");
    assert_eq!(c.at_s, 30.0);
    assert!(
        t.sentences[0].contains(
            "30.0 s into the phase at 4 workers, while the median latency rose from 2.00 ms to 20.0 ms"
        ),
        "{:?}",
        t.sentences
    );
}

#[test]
fn a_latency_step_alone_is_said_as_such() {
    // The rate is set elsewhere (a client pacing its requests): only the
    // latency moves.
    let s = phase_with(
        4,
        &[100.0; 40],
        1.0,
        &|i| if i < 25 { 500.0 } else { 3000.0 },
        &[],
    );
    let t = line(&[view(4, 0, 0, &s)]);
    assert_eq!(t.changes.len(), 1);
    assert!(!t.changes[0].rate_fell);
    let s = &t.sentences[0];
    assert!(
        s.starts_with("The median latency rose from 500 µs to 3.00 ms 25.0 s into the phase at 4 workers, while throughput did not fall (100 MiB/s before, 100 MiB/s after) and stayed there until the end."),
        "{s}"
    );
}

#[test]
fn a_dip_that_comes_back_says_so() {
    let mut rng = Rng(4);
    let s = phase(4, &stepped(&mut rng, 60, 20, 35, 300.0, 120.0, 0.03));
    let t = line(&[view(4, 0, 0, &s)]);
    let c = &t.changes[0];
    assert_eq!((c.at_s, c.back_s), (20.0, Some(35.0)));
    assert!(
        t.sentences[0].contains("and came back 15.0 s later."),
        "{:?}",
        t.sentences
    );
}

#[test]
fn phases_run_after_a_drop_at_its_level_are_not_blamed_on_their_workers() {
    // The credits run out during the 2-worker point; 4 and 8 workers run
    // at the baseline from their start.
    let mut rng = Rng(5);
    let one = phase(1, &noisy(&mut rng, 40, 200.0, 0.03));
    let two = phase(2, &stepped(&mut rng, 40, 20, 40, 400.0, 100.0, 0.03));
    let four = phase(4, &noisy(&mut rng, 40, 100.0, 0.03));
    let eight = phase(8, &noisy(&mut rng, 40, 104.0, 0.03));
    let t = line(&[
        view(1, 0, 0, &one),
        view(2, 0, 1, &two),
        view(4, 0, 2, &four),
        view(8, 0, 3, &eight),
    ]);
    assert_eq!(t.changes.len(), 1, "{t:?}");
    assert!(
        t.sentences[0].contains("(no such change at 1, 4 and 8 workers)"),
        "{:?}",
        t.sentences
    );
    let s = &t.sentences[1];
    assert!(
        s.starts_with(
            "The phases run after it, at 4 and 8 workers, stayed near the level throughput fell to"
        ),
        "{s}"
    );
    assert!(
        s.contains("not the effect of their number of workers"),
        "{s}"
    );
}

#[test]
fn workers_finishing_one_by_one_are_not_a_drop() {
    // 400 MiB/s while all four run; they stop at 40, 45, 50 and 55 s.
    let s = phase_with(4, &[400.0; 55], 1.0 / 16.0, &|_| 1000.0, &[40, 45, 50, 55]);
    let t = line(&[view(4, 0, 0, &s)]);
    assert!(t.changes.is_empty() && t.sentences.is_empty(), "{t:?}");
}

#[test]
fn noise_is_never_a_drop_or_a_step() {
    // Many seeds, lengths and noise levels, Gaussian and with isolated
    // dips of 40% (2% of the intervals): no change, either way.
    for seed in 0..300u64 {
        let mut rng = Rng(seed);
        for n in [8, 20, 60, 200] {
            for sd in [0.03, 0.08, 0.15] {
                let mut v = noisy(&mut rng, n, 100.0, sd);
                for x in v.iter_mut() {
                    if rng.next() < 0.02 {
                        *x *= 0.6;
                    }
                }
                assert_eq!(
                    find(&v, Way::Down),
                    None,
                    "seed {seed} n {n} sd {sd}: {v:?}"
                );
                assert_eq!(find(&v, Way::Up), None, "seed {seed} n {n} sd {sd}: {v:?}");
            }
        }
    }
}

#[test]
fn noise_through_the_whole_path_says_nothing() {
    for seed in 0..20u64 {
        let mut rng = Rng(1000 + seed);
        let s = phase(4, &noisy(&mut rng, 60, 200.0, 0.08));
        let t = line(&[view(4, 0, 0, &s)]);
        assert!(t.sentences.is_empty(), "seed {seed}: {t:?}");
    }
}

#[test]
fn a_slow_drift_is_not_a_step() {
    // 30% lower over the whole phase, little by little.
    let v: Vec<f64> = (0..60).map(|i| 100.0 - 0.5 * i as f64).collect();
    assert_eq!(find(&v, Way::Down), None);
}

#[test]
fn a_phase_without_a_steady_window_is_named() {
    let mut rng = Rng(6);
    let wild: Vec<f64> = (0..40).map(|_| 400.0 * (0.2 + 0.8 * rng.next())).collect();
    let s = phase(2, &wild);
    let calm = phase(2, &noisy(&mut rng, 40, 400.0, 0.04));
    let t = line(&[view(2, 0, 0, &s), view(2, 1, 1, &calm)]);
    assert!(t.changes.is_empty(), "{t:?}");
    assert_eq!(t.unsteady.len(), 1);
    let s = &t.sentences[0];
    assert!(
        s.starts_with("Not steady at 2 workers (1 of 2 repetitions): no 5 intervals in a row (5.00 s) stayed within ±20% of their mean; the intervals ranged from"),
        "{s}"
    );
}

#[test]
fn a_long_phase_finds_its_drop_to_the_interval() {
    let mut rng = Rng(7);
    let v = stepped(&mut rng, 3000, 2003, 3000, 100.0, 40.0, 0.03);
    let sp = find(&v, Way::Down).unwrap();
    assert_eq!((sp.a, sp.b), (2003, 3000));
}

#[test]
fn too_short_or_empty_phases_say_nothing() {
    for n in [0, 1, 5] {
        let s = phase(2, &vec![100.0; n]);
        let t = line(&[view(2, 0, 0, &s)]);
        assert!(t.sentences.is_empty());
    }
    assert_eq!(find(&[0.0; 20], Way::Down), None);
    assert_eq!(find(&[f64::NAN; 20], Way::Down), None);
}

#[test]
fn metadata_lines_count_operations() {
    let mut rng = Rng(8);
    let s = phase_with(
        2,
        &stepped(&mut rng, 30, 10, 30, 64.0, 16.0, 0.02),
        1.0,
        &|_| 100.0,
        &[],
    );
    let t = read_line("files/s", false, Units::Iec, &[view(2, 0, 0, &s)]);
    let c = &t.changes[0];
    assert!((c.rate_before / 64.0 - 1.0).abs() < 0.02 && (c.rate_after / 16.0 - 1.0).abs() < 0.05);
    let want = format!(
        "The rate fell from {} files/s to {} files/s 10.0 s",
        num(c.rate_before),
        num(c.rate_after)
    );
    assert!(t.sentences[0].starts_with(&want), "{:?}", t.sentences);
}

#[test]
fn gaussian_noise_is_never_a_change_in_thousands_of_phases() {
    for n in [16usize, 40] {
        for sd in [0.05, 0.15, 0.3] {
            for seed in 0..2000 {
                let mut rng = Rng(seed * 7 + 1);
                let v = noisy(&mut rng, n, 100.0, sd);
                assert_eq!(find(&v, Way::Down), None, "n {n} sd {sd} seed {seed}");
                assert_eq!(find(&v, Way::Up), None, "n {n} sd {sd} seed {seed}");
            }
        }
    }
}

/// A phase of one worker whose median latency steps from 2 ms to 10 ms
/// at interval 8 of 24, at the rates `rates`.
fn latency_step(rates: &[f64]) -> Timeline {
    let s = phase_with(
        1,
        rates,
        1.0 / 64.0,
        &|i| if i < 8 { 2000.0 } else { 10_000.0 },
        &[],
    );
    line(&[view(1, 0, 0, &s)])
}

#[test]
fn a_latency_step_with_the_rate_falling_says_the_fall() {
    // The testfs case that was said as "rate did not fall beyond noise
    // (18.3 → 5.02 MiB/s)": one worker, its rate set by the latency.
    let mut rng = Rng(11);
    let rates = stepped(&mut rng, 24, 8, 24, 18.3, 5.0, 0.05);
    let t = latency_step(&rates);
    let c = &t.changes[0];
    assert!(c.rate_fell && c.latency_rose, "{c:?}");
    assert_eq!(c.rate_at_step, RateAtStep::Fell);
    let s = &t.sentences[0];
    assert!(s.starts_with("Throughput fell from 18."), "{s}");
    assert!(
        s.contains("while the median latency rose from 2.00 ms to 10.0 ms"),
        "{s}"
    );
    assert!(!s.contains("did not fall"), "{s}");
}

#[test]
fn a_latency_step_with_a_noisy_rate_fall_says_the_fall_and_the_noise() {
    // The rate's mean falls 30%, inside ±25% noise: not a drop of its
    // own, but not "did not fall" either.
    let mut rng = Rng(12);
    let rates = stepped(&mut rng, 24, 8, 24, 100.0, 70.0, 0.25);
    let t = latency_step(&rates);
    let c = &t.changes[0];
    assert!(!c.rate_fell && c.latency_rose, "{c:?}");
    let RateAtStep::Noise(n) = c.rate_at_step else {
        panic!("{c:?}");
    };
    assert!(c.rate_after <= 0.8 * c.rate_before, "{c:?}");
    assert!(c.rate_before - c.rate_after < 4.0 * n, "{c:?}");
    let want = format!(
        "while throughput fell from {} MiB/s to {} MiB/s, by less than 4 times the noise of its \
         intervals ({} MiB/s), so not a drop of its own",
        num(c.rate_before),
        num(c.rate_after),
        num(n)
    );
    assert!(t.sentences[0].contains(&want), "{:?}", t.sentences);
}

#[test]
fn a_latency_step_with_a_small_rate_fall_says_less_than_the_rule() {
    let t = latency_step(&[[100.0; 8].as_slice(), &[90.0; 16]].concat());
    let c = &t.changes[0];
    assert_eq!(c.rate_at_step, RateAtStep::Small, "{c:?}");
    assert!(
        t.sentences[0].contains(
            "while throughput fell by less than 20% (100 MiB/s before, 90.0 MiB/s after)"
        ),
        "{:?}",
        t.sentences
    );
}

#[test]
fn what_a_latency_step_says_of_the_rate_agrees_with_its_figures() {
    // Many rate levels and noises under the same latency step: each
    // sentence's words agree with the two figures it quotes.
    let mut said = [0usize; 4];
    for seed in 0..300u64 {
        let mut rng = Rng(100 + seed);
        let after = 20.0 + 110.0 * rng.next();
        let sd = 0.3 * rng.next();
        let rates = stepped(&mut rng, 24, 8, 24, 100.0, after, sd);
        let t = latency_step(&rates);
        let Some(c) = t.changes.first() else {
            continue;
        };
        let s = &t.sentences[0];
        let fell = c.rate_after < c.rate_before;
        let by_share = c.rate_after <= 0.8 * c.rate_before;
        match c.rate_at_step {
            RateAtStep::Fell => {
                assert!(by_share && s.starts_with("Throughput fell from"), "{s}");
                said[0] += 1;
            }
            RateAtStep::Small => {
                assert!(!by_share, "{c:?}: {s}");
                assert!(s.contains("did not fall") != fell, "{c:?}: {s}");
                said[1] += 1;
            }
            RateAtStep::Noise(_) | RateAtStep::Scattered => {
                assert!(by_share && s.contains("throughput fell from"), "{c:?}: {s}");
                said[2] += 1;
            }
        }
        if s.contains("did not fall") {
            assert!(!fell, "{c:?}: {s}");
            said[3] += 1;
        }
    }
    // Every kind of sentence was exercised.
    assert!(said.iter().all(|&n| n > 0), "{said:?}");
}
