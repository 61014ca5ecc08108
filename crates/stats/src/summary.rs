//! Statistics over repeated runs.
//!
//! Storage benchmarks are noisy (caches, background daemons, other tenants
//! on shared file systems), so ioscale repeats each test and reports one
//! figure per repetition. This module condenses those few samples into the
//! numbers a reader needs to judge stability: spread, robust centres
//! (median, trimmed mean), a geometric mean for ratios, and outlier flags
//! so a single bad repetition is visible rather than silently averaged in.
//!
//! None of these functions panic on NaN: ordering uses `f64::total_cmp`, so
//! NaN samples sort to an end and propagate into results instead.

use serde::{Deserialize, Serialize};

/// Conventional modified z-score cut-off for outliers (Iglewicz & Hoaglin).
pub const OUTLIER_Z: f64 = 3.5;

/// Scale making the MAD consistent with the standard deviation of a normal
/// distribution (the 0.75 quantile of the standard normal).
const MAD_SCALE: f64 = 0.6745;

/// Scale for the mean-absolute-deviation fallback: sqrt(pi/2), the ratio of
/// standard deviation to mean absolute deviation for a normal distribution
/// (1 / 0.7979).
const MEAN_AD_SCALE: f64 = 1.253314;

/// Summary of one figure (e.g. bandwidth) over `n` repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RepStats {
    /// Number of samples.
    pub n: usize,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (mean of the two middle samples when `n` is even).
    pub median: f64,
    /// SAMPLE standard deviation (Bessel-corrected, `n - 1` denominator);
    /// 0 when `n == 1`. Note that IOR prints the population form; use
    /// [`population_stddev`] to compare against IOR output.
    pub stddev: f64,
}

impl RepStats {
    /// Computes the statistics, or `None` for an empty slice.
    pub fn from_samples(samples: &[f64]) -> Option<RepStats> {
        let sorted = sorted_copy(samples);
        let (&min, &max) = (sorted.first()?, sorted.last()?);
        let n = sorted.len();
        let mean = mean(samples);
        // The sample estimator because repetitions are a sample of what the
        // system could deliver, not the whole population.
        let stddev = if n > 1 {
            (sum_sq_dev(samples, mean) / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(RepStats {
            n,
            min,
            max,
            mean,
            median: median_of_sorted(&sorted),
            stddev,
        })
    }
}

/// Population standard deviation (`n` denominator), as printed by IOR;
/// 0 for an empty slice.
pub fn population_stddev(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    (sum_sq_dev(samples, mean(samples)) / samples.len() as f64).sqrt()
}

/// Median of the samples; `None` when empty.
pub fn median(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        None
    } else {
        Some(median_of_sorted(&sorted_copy(samples)))
    }
}

/// Mean after dropping the `k` lowest and `k` highest samples.
///
/// Damps the warm-up and interference runs that plague storage benchmarks;
/// e.g. the Flux7 cloud storage study dropped 2 and 2 of 10 runs. `None`
/// when nothing would remain (`2k >= n`).
pub fn trimmed_mean(samples: &[f64], k: usize) -> Option<f64> {
    let kept = samples.len().checked_sub(k.checked_mul(2)?)?;
    if kept == 0 {
        return None;
    }
    let sorted = sorted_copy(samples);
    Some(mean(&sorted[k..k + kept]))
}

/// Geometric mean, the right average for ratios such as speed-ups.
///
/// `None` when empty or when any sample is not strictly positive (the
/// logarithm is undefined there; NaN also yields `None`).
pub fn geometric_mean(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() || samples.iter().any(|&x| x.is_nan() || x <= 0.0) {
        return None;
    }
    // Averaging logarithms avoids the overflow a running product would hit.
    let log_mean = samples.iter().map(|x| x.ln()).sum::<f64>() / samples.len() as f64;
    Some(log_mean.exp())
}

/// Modified z-score of each sample, in input order.
///
/// Method of Iglewicz & Hoaglin, "How to Detect and Handle Outliers" (ASQC
/// Basic References in Quality Control, vol. 16, 1993):
/// `M = 0.6745 · (x − median) / MAD`, where MAD is the median absolute
/// deviation from the median. Median and MAD are themselves robust, so one
/// wild repetition cannot hide itself by inflating the spread, unlike the
/// classic mean/stddev z-score.
///
/// When more than half the samples are identical the MAD is 0; the common
/// fallback (as in IBM SPSS) is then used:
/// `M = (x − median) / (1.253314 · MeanAD)`, with MeanAD the mean absolute
/// deviation from the median. If that is 0 too, all samples are equal and
/// every score is 0. Returns an empty vector for empty input.
pub fn modified_z_scores(samples: &[f64]) -> Vec<f64> {
    let Some(centre) = median(samples) else {
        return Vec::new();
    };
    let abs_dev: Vec<f64> = samples.iter().map(|x| (x - centre).abs()).collect();
    let mad = median(&abs_dev).unwrap_or(0.0);
    let scale = if mad > 0.0 {
        mad / MAD_SCALE
    } else {
        MEAN_AD_SCALE * mean(&abs_dev)
    };
    if scale > 0.0 {
        samples.iter().map(|x| (x - centre) / scale).collect()
    } else {
        vec![0.0; samples.len()]
    }
}

/// Flags samples whose modified z-score magnitude exceeds `threshold`
/// (normally [`OUTLIER_Z`]); see [`modified_z_scores`] for the method.
/// NaN scores are not flagged.
pub fn outliers(samples: &[f64], threshold: f64) -> Vec<bool> {
    modified_z_scores(samples)
        .into_iter()
        .map(|z| z.abs() > threshold)
        .collect()
}

fn sorted_copy(samples: &[f64]) -> Vec<f64> {
    let mut v = samples.to_vec();
    v.sort_unstable_by(f64::total_cmp);
    v
}

/// Caller guarantees `sorted` is non-empty.
fn median_of_sorted(sorted: &[f64]) -> f64 {
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

fn mean(samples: &[f64]) -> f64 {
    samples.iter().sum::<f64>() / samples.len() as f64
}

/// Sum of squared deviations; the two-pass form avoids the cancellation of
/// the `E[x²] − E[x]²` shortcut when samples are large and close together,
/// which is exactly what repeated bandwidth figures look like.
fn sum_sq_dev(samples: &[f64], mean: f64) -> f64 {
    samples.iter().map(|x| (x - mean) * (x - mean)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn rep_stats_hand_computed() {
        // mean 5, squared deviations sum to 32.
        let s = RepStats::from_samples(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert_eq!(s.min, 2.0);
        assert_eq!(s.max, 9.0);
        assert!(close(s.mean, 5.0));
        assert!(close(s.median, 4.5));
        assert!(close(s.stddev, (32.0f64 / 7.0).sqrt()));
        assert!(close(
            population_stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]),
            2.0
        ));
    }

    #[test]
    fn rep_stats_edge_cases() {
        assert_eq!(RepStats::from_samples(&[]), None);
        let one = RepStats::from_samples(&[3.5]).unwrap();
        assert_eq!(one.n, 1);
        assert_eq!(one.stddev, 0.0);
        assert_eq!(one.median, 3.5);
        assert_eq!(population_stddev(&[]), 0.0);
        let json = serde_json::to_string(&one).unwrap();
        let back: RepStats = serde_json::from_str(&json).unwrap();
        assert_eq!(back, one);
    }

    #[test]
    fn median_odd_even_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn trimmed_mean_drops_extremes() {
        let s = [10.0, 1.0, 9.0, 2.0, 8.0, 3.0, 7.0, 4.0, 6.0, 100.0];
        // Keeps 3, 4, 6, 7, 8, 9.
        assert!(close(trimmed_mean(&s, 2).unwrap(), 37.0 / 6.0));
        assert!(close(trimmed_mean(&s, 0).unwrap(), 15.0));
        assert!(close(trimmed_mean(&s, 4).unwrap(), 6.5));
        assert_eq!(trimmed_mean(&s, 5), None);
        assert_eq!(trimmed_mean(&s, usize::MAX), None);
        assert_eq!(trimmed_mean(&[], 0), None);
    }

    #[test]
    fn geometric_mean_cases() {
        assert!(close(
            geometric_mean(&[1.0, 2.0, 4.0, 8.0]).unwrap(),
            8f64.sqrt()
        ));
        assert!(close(geometric_mean(&[2.0, 8.0]).unwrap(), 4.0));
        assert_eq!(geometric_mean(&[]), None);
        assert_eq!(geometric_mean(&[1.0, 0.0]), None);
        assert_eq!(geometric_mean(&[1.0, -2.0]), None);
        assert_eq!(geometric_mean(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn modified_z_with_mad() {
        // median 3, |dev| = [2, 1, 0, 1, 97], MAD 1.
        let s = [1.0, 2.0, 3.0, 4.0, 100.0];
        let z = modified_z_scores(&s);
        let want = [-1.349, -0.6745, 0.0, 0.6745, 65.4265];
        for (got, want) in z.iter().zip(want) {
            assert!(close(*got, want), "{got} vs {want}");
        }
        assert_eq!(
            outliers(&s, OUTLIER_Z),
            vec![false, false, false, false, true]
        );
    }

    #[test]
    fn modified_z_mean_ad_fallback() {
        // median 5, |dev| = [0, 0, 0, 0, 5]: MAD 0, MeanAD 1.
        let s = [5.0, 5.0, 5.0, 5.0, 10.0];
        let z = modified_z_scores(&s);
        assert!(close(z[4], 5.0 / 1.253314));
        assert_eq!(&z[..4], &[0.0; 4]);
        assert_eq!(
            outliers(&s, OUTLIER_Z),
            vec![false, false, false, false, true]
        );
    }

    #[test]
    fn modified_z_all_equal_and_empty() {
        assert_eq!(modified_z_scores(&[2.0; 4]), vec![0.0; 4]);
        assert_eq!(outliers(&[2.0; 4], OUTLIER_Z), vec![false; 4]);
        assert!(modified_z_scores(&[]).is_empty());
        assert!(outliers(&[], OUTLIER_Z).is_empty());
    }

    #[test]
    fn nan_does_not_panic() {
        let s = [1.0, f64::NAN, 2.0, 3.0];
        let _ = median(&s);
        let _ = trimmed_mean(&s, 1);
        let stats = RepStats::from_samples(&s).unwrap();
        assert_eq!(stats.n, 4);
        assert_eq!(stats.min, 1.0);
        assert_eq!(modified_z_scores(&s).len(), 4);
        assert_eq!(outliers(&s, OUTLIER_Z).len(), 4);
        let _ = population_stddev(&s);
    }
}
