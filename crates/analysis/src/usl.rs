//! The Universal Scalability Law fitted to a throughput curve.
//!
//! Gunther's USL models throughput at concurrency N as
//! `C(N) = λN / (1 + σ(N−1) + κN(N−1))`: σ is contention (the serial
//! fraction, Amdahl's law), κ is coherency (the cost of keeping workers in
//! step, which makes throughput fall past a peak). The peak is at
//! `N* = sqrt((1−σ)/κ)`. (N. J. Gunther, "Guerrilla Capacity Planning",
//! Springer 2007, ch. 4.)
//!
//! The fit is the linearised least-squares form: dividing out gives
//! `N / C(N) = a + b(N−1) + cN(N−1)` with `a = 1/λ`, `b = σ/λ`, `c = κ/λ`,
//! which is linear in (a, b, c) and needs no measurement at N = 1. Negative
//! σ or κ have no physical meaning, so the non-negative solution with the
//! least squared error is taken among the full model and its sub-models
//! (κ = 0: Amdahl; σ = 0; both 0: linear) — an exact active-set solution for
//! so few parameters.

use serde::{Deserialize, Serialize};

/// A fitted USL curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UslFit {
    /// Contention coefficient σ (0 = none).
    pub sigma: f64,
    /// Coherency coefficient κ (0 = no retrograde region).
    pub kappa: f64,
    /// Throughput of one worker as the model sees it, in the curve's unit.
    pub lambda: f64,
    /// Concurrency of the modelled peak, `sqrt((1−σ)/κ)`; `None` when κ = 0
    /// (throughput only levels off) or σ ≥ 1.
    pub peak_threads: Option<f64>,
    /// Highest throughput the model predicts: `C(N*)`, or the asymptote
    /// `λ/σ` when κ = 0; `None` when the curve is linear (σ = κ = 0).
    pub ceiling: Option<f64>,
    /// Coefficient of determination of the model against the measured
    /// throughput (1 = perfect).
    pub r2: f64,
    /// Points used.
    pub points: usize,
}

impl UslFit {
    /// Throughput the model predicts at concurrency `n`.
    pub fn predict(&self, n: f64) -> f64 {
        self.lambda * n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))
    }
}

/// Fits the USL to `(threads, throughput)` points.
///
/// Returns `None` with fewer than 3 distinct thread counts, when any
/// throughput is not positive and finite, or when no non-negative solution
/// exists (the data rise faster than linearly, e.g. a cache warming up).
pub fn fit(points: &[(f64, f64)]) -> Option<UslFit> {
    if points
        .iter()
        .any(|&(n, c)| !(n.is_finite() && n >= 1.0 && c.is_finite() && c > 0.0))
    {
        return None;
    }
    let mut distinct: Vec<f64> = points.iter().map(|p| p.0).collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    if distinct.len() < 3 {
        return None;
    }
    // Regressors: 1, N−1, N(N−1); response N/C.
    let rows: Vec<([f64; 3], f64)> = points
        .iter()
        .map(|&(n, c)| ([1.0, n - 1.0, n * (n - 1.0)], n / c))
        .collect();
    // Each candidate keeps a subset of the regressors (the intercept always).
    let subsets: [&[usize]; 4] = [&[0, 1, 2], &[0, 1], &[0, 2], &[0]];
    let mut best: Option<([f64; 3], f64)> = None;
    for keep in subsets {
        let Some(coef) = least_squares(&rows, keep) else {
            continue;
        };
        if coef[0] <= 0.0 || coef[1] < 0.0 || coef[2] < 0.0 {
            continue;
        }
        let sse: f64 = rows
            .iter()
            .map(|(x, y)| {
                let e = y - (coef[0] * x[0] + coef[1] * x[1] + coef[2] * x[2]);
                e * e
            })
            .sum();
        // Prefer the simpler model on (numerical) ties: subsets come richest
        // first, so only a strictly better error replaces the incumbent
        // unless the incumbent is within rounding of it.
        let better = match &best {
            None => true,
            Some((_, b)) => sse < *b - 1e-12 * b.abs().max(1e-300),
        };
        if better {
            best = Some((coef, sse));
        }
    }
    let (coef, _) = best?;
    let lambda = 1.0 / coef[0];
    let sigma = coef[1] / coef[0];
    let kappa = coef[2] / coef[0];
    // Coefficients this small are rounding noise of a linear or Amdahl curve.
    let sigma = if sigma < 1e-9 { 0.0 } else { sigma };
    let kappa = if kappa < 1e-12 { 0.0 } else { kappa };
    let peak_threads = (kappa > 0.0 && sigma < 1.0).then(|| ((1.0 - sigma) / kappa).sqrt());
    let mut out = UslFit {
        sigma,
        kappa,
        lambda,
        peak_threads,
        ceiling: None,
        r2: 0.0,
        points: points.len(),
    };
    out.ceiling = match peak_threads {
        Some(n) => Some(out.predict(n)),
        None if sigma > 0.0 => Some(lambda / sigma),
        None => None,
    };
    let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
    let ss_tot: f64 = points.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let ss_res: f64 = points
        .iter()
        .map(|p| (p.1 - out.predict(p.0)).powi(2))
        .sum();
    out.r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    Some(out)
}

/// Ordinary least squares on the columns `keep` of `rows`; the others are
/// held at 0. Solves the normal equations by Gaussian elimination with
/// partial pivoting; `None` when they are singular.
fn least_squares(rows: &[([f64; 3], f64)], keep: &[usize]) -> Option<[f64; 3]> {
    let k = keep.len();
    // Scale each column to unit maximum so N(N−1) (up to thousands) and 1
    // do not make the system needlessly ill-conditioned.
    let scale: Vec<f64> = keep
        .iter()
        .map(|&j| {
            rows.iter()
                .map(|(x, _)| x[j].abs())
                .fold(0.0f64, f64::max)
                .max(1e-300)
        })
        .collect();
    let mut m = vec![vec![0.0f64; k + 1]; k];
    for (x, y) in rows {
        for r in 0..k {
            let xr = x[keep[r]] / scale[r];
            for c in 0..k {
                m[r][c] += xr * x[keep[c]] / scale[c];
            }
            m[r][k] += xr * y;
        }
    }
    for col in 0..k {
        let piv = (col..k).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[piv][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, piv);
        let pivot_row = m[col].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (x, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    let mut out = [0.0; 3];
    for r in 0..k {
        out[keep[r]] = m[r][k] / m[r][r] / scale[r];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(lambda: f64, sigma: f64, kappa: f64, ns: &[f64]) -> Vec<(f64, f64)> {
        ns.iter()
            .map(|&n| {
                (
                    n,
                    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0)),
                )
            })
            .collect()
    }

    const DOUBLING: [f64; 7] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

    #[test]
    fn recovers_sigma_and_kappa() {
        let f = fit(&curve(25.0, 0.05, 0.0008, &DOUBLING)).unwrap();
        assert!((f.sigma - 0.05).abs() < 1e-9, "{f:?}");
        assert!((f.kappa - 0.0008).abs() < 1e-12, "{f:?}");
        assert!((f.lambda - 25.0).abs() < 1e-9, "{f:?}");
        let want = ((1.0 - 0.05) / 0.0008f64).sqrt();
        assert!((f.peak_threads.unwrap() - want).abs() < 1e-6);
        assert!((f.ceiling.unwrap() - f.predict(want)).abs() < 1e-9);
        assert!(f.r2 > 0.999_999);
    }

    #[test]
    fn needs_no_point_at_one_thread() {
        let f = fit(&curve(100.0, 0.1, 0.002, &[2.0, 3.0, 5.0, 9.0, 13.0])).unwrap();
        assert!((f.sigma - 0.1).abs() < 1e-9, "{f:?}");
        assert!((f.kappa - 0.002).abs() < 1e-11, "{f:?}");
        assert!((f.lambda - 100.0).abs() < 1e-7, "{f:?}");
    }

    #[test]
    fn noisy_curve_is_close() {
        // ±2 % alternating noise on a seed-000-like EFS curve.
        let mut pts = curve(25.0, 0.07, 0.0001, &DOUBLING);
        for (i, p) in pts.iter_mut().enumerate() {
            p.1 *= if i % 2 == 0 { 1.02 } else { 0.98 };
        }
        let f = fit(&pts).unwrap();
        assert!((f.sigma - 0.07).abs() < 0.02, "{f:?}");
        assert!(f.kappa < 0.001, "{f:?}");
        assert!(f.r2 > 0.98, "{f:?}");
    }

    #[test]
    fn amdahl_has_no_finite_peak() {
        let f = fit(&curve(10.0, 0.2, 0.0, &DOUBLING)).unwrap();
        assert_eq!(f.kappa, 0.0, "{f:?}");
        assert!((f.sigma - 0.2).abs() < 1e-9);
        assert_eq!(f.peak_threads, None);
        assert!((f.ceiling.unwrap() - 50.0).abs() < 1e-6, "λ/σ");
    }

    #[test]
    fn linear_scaling_has_no_ceiling() {
        let f = fit(&curve(10.0, 0.0, 0.0, &DOUBLING)).unwrap();
        assert_eq!((f.sigma, f.kappa), (0.0, 0.0), "{f:?}");
        assert_eq!(f.peak_threads, None);
        assert_eq!(f.ceiling, None);
    }

    #[test]
    fn superlinear_data_is_clamped() {
        // Faster than linear (a cache warming up): σ would be negative.
        let pts = [(1.0, 10.0), (2.0, 25.0), (4.0, 60.0), (8.0, 140.0)];
        let f = fit(&pts).unwrap();
        assert!(f.sigma >= 0.0 && f.kappa >= 0.0, "{f:?}");
    }

    #[test]
    fn degenerate_inputs() {
        assert_eq!(fit(&[]), None);
        assert_eq!(fit(&[(1.0, 5.0), (2.0, 9.0)]), None);
        assert_eq!(fit(&[(4.0, 5.0), (4.0, 6.0), (4.0, 7.0)]), None);
        assert_eq!(fit(&[(1.0, 5.0), (2.0, 0.0), (4.0, 7.0)]), None);
        assert_eq!(fit(&[(1.0, 5.0), (2.0, f64::NAN), (4.0, 7.0)]), None);
    }
}
