//! How sure a central figure is: a bootstrap confidence interval over the
//! repetitions.
//!
//! The percentile bootstrap (B. Efron, "Bootstrap methods: another look at
//! the jackknife", Annals of Statistics 7(1), 1979; Efron & Tibshirani, "An
//! Introduction to the Bootstrap", 1993, ch. 13) resamples the repetitions
//! with replacement many times, recomputes the statistic each time and
//! takes the middle 95 % of those values as the interval. It assumes
//! nothing about the distribution, which matters on noisy shared machines
//! where a repetition can be several times slower than the others.
//!
//! The resampling uses a fixed-seed generator (SplitMix64), so the same
//! repetitions always give the same interval and a report can be rendered
//! again byte for byte.

use serde::{Deserialize, Serialize};

use crate::summary::trimmed_mean;

/// Resamples drawn for one interval.
pub const RESAMPLES: usize = 2000;

/// Seed of the resampling generator (fixed: reproducible output).
pub const SEED: u64 = 0x10_5ca1e;

/// A confidence interval of a central figure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
    /// Confidence level (0.95).
    pub level: f64,
    /// Repetitions it rests on; 1 means no interval could be estimated and
    /// `lo == hi` is the single measurement.
    pub n: usize,
}

impl Interval {
    /// Whether two intervals share any value.
    pub fn overlaps(&self, o: &Interval) -> bool {
        self.lo <= o.hi && o.lo <= self.hi
    }

    /// Half the width relative to `center`, as a fraction (0.12 = ±12 %).
    pub fn half_width_rel(&self, center: f64) -> f64 {
        if center > 0.0 {
            (self.hi - self.lo) / 2.0 / center
        } else {
            0.0
        }
    }
}

/// SplitMix64 (G. Steele, D. Lea, C. Flood, "Fast splittable pseudorandom
/// number generators", OOPSLA 2014): small, fast, good enough to resample.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform index below `n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        // Multiply-shift: unbiased enough for resampling tens of values.
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }

    /// A uniform float in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The 95 % percentile-bootstrap interval of the mean after trimming `k`
/// samples at each end (the plain mean for `k = 0`). `None` for no samples
/// or when trimming leaves nothing; a single sample gives the degenerate
/// interval `[x, x]` with `n = 1`.
pub fn trimmed_mean_ci(samples: &[f64], k: usize) -> Option<Interval> {
    let n = samples.len();
    let center = trimmed_mean(samples, k)?;
    if n == 1 {
        return Some(Interval {
            lo: center,
            hi: center,
            level: 0.95,
            n,
        });
    }
    let mut rng = SplitMix64::new(SEED ^ n as u64);
    let mut stats = Vec::with_capacity(RESAMPLES);
    let mut buf = vec![0.0; n];
    for _ in 0..RESAMPLES {
        for b in buf.iter_mut() {
            *b = samples[rng.below(n)];
        }
        if let Some(m) = trimmed_mean(&buf, k) {
            stats.push(m);
        }
    }
    stats.sort_by(f64::total_cmp);
    let q = |p: f64| stats[((stats.len() - 1) as f64 * p).round() as usize];
    Some(Interval {
        lo: q(0.025),
        hi: q(0.975),
        level: 0.95,
        n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproducible_and_contains_the_mean() {
        let s = [10.0, 12.0, 9.0, 11.0, 30.0, 10.5];
        let a = trimmed_mean_ci(&s, 1).unwrap();
        let b = trimmed_mean_ci(&s, 1).unwrap();
        assert_eq!(a, b);
        let m = trimmed_mean(&s, 1).unwrap();
        assert!(a.lo <= m && m <= a.hi, "{a:?} {m}");
        assert!(a.lo >= 9.0 && a.hi <= 30.0);
    }

    #[test]
    fn wider_for_noisier_samples() {
        let tight = trimmed_mean_ci(&[100.0, 101.0, 99.0, 100.5, 99.5], 0).unwrap();
        let wide = trimmed_mean_ci(&[50.0, 150.0, 80.0, 120.0, 100.0], 0).unwrap();
        assert!(
            wide.hi - wide.lo > 10.0 * (tight.hi - tight.lo),
            "{tight:?} {wide:?}"
        );
        assert!(!tight.overlaps(&Interval {
            lo: 102.0,
            hi: 110.0,
            level: 0.95,
            n: 5
        }));
        assert!(wide.overlaps(&tight));
    }

    #[test]
    fn degenerate() {
        assert_eq!(trimmed_mean_ci(&[], 0), None);
        assert_eq!(trimmed_mean_ci(&[1.0, 2.0], 1), None);
        let one = trimmed_mean_ci(&[7.0], 0).unwrap();
        assert_eq!((one.lo, one.hi, one.n), (7.0, 7.0, 1));
        assert_eq!(one.half_width_rel(7.0), 0.0);
    }

    #[test]
    fn generator_is_uniform_enough() {
        let mut r = SplitMix64::new(1);
        let mut hits = [0u32; 4];
        for _ in 0..40_000 {
            hits[r.below(4)] += 1;
        }
        assert!(
            hits.iter().all(|&h| (9_000..11_000).contains(&h)),
            "{hits:?}"
        );
        let u = r.unit();
        assert!((0.0..1.0).contains(&u));
    }
}
