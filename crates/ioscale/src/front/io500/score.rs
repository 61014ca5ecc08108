//! The IO500 score: a geometric mean per group, and their geometric mean.
//!
//! As io500 computes it (src/main.c of tag io500-isc26_v2): each group's
//! score is the n-th root of the product of its phases' scores, phases
//! scoring 0 or less left out, an empty group scoring 0; the total is
//! √(BW × MD). The standard score counts the non-optional phases; the
//! extended score (`[SCOREX]`) counts the optional scored phases too.

use super::phases::{Group, Phase};

/// One finished phase as the score sees it.
#[derive(Debug, Clone)]
pub struct Scored {
    /// The phase.
    pub phase: Phase,
    /// GiB/s for IOR phases, kIOPS for the others.
    pub score: f64,
    /// The phase met the rules (its write ran at least the stonewall, no errors).
    pub valid: bool,
}

/// A group and total score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score {
    /// Bandwidth, GiB/s.
    pub bw: f64,
    /// Metadata, kIOPS.
    pub md: f64,
    /// √(bw × md).
    pub total: f64,
}

/// The geometric mean of the positive values; 0 when there are none.
/// Computed through logarithms, so a long list of large figures cannot
/// overflow the product.
pub fn geomean(values: impl IntoIterator<Item = f64>) -> f64 {
    let (mut sum, mut n) = (0.0f64, 0u32);
    for v in values.into_iter().filter(|v| *v > 0.0) {
        sum += v.ln();
        n += 1;
    }
    if n == 0 {
        0.0
    } else {
        (sum / n as f64).exp()
    }
}

/// The score of these phases; `extended` adds the optional ones.
pub fn score(phases: &[Scored], extended: bool) -> Score {
    let group = |g: Group| {
        geomean(
            phases
                .iter()
                .filter(|s| s.phase.group == g && (extended || !s.phase.optional))
                .map(|s| s.score),
        )
    };
    let (bw, md) = (group(Group::Bw), group(Group::Md));
    Score {
        bw,
        md,
        total: (bw * md).sqrt(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::phases::ALL;
    use super::*;

    fn scored(name: &str, score: f64) -> Scored {
        Scored {
            phase: *ALL.iter().find(|p| p.name == name).unwrap(),
            score,
            valid: true,
        }
    }

    /// The phase figures of the sample io500 run
    /// (shared/reference-outputs/sample-io500.txt).
    fn sample() -> Vec<Scored> {
        [
            ("ior-easy-write", 1.355157),
            ("mdtest-easy-write", 187.885555),
            ("timestamp", 0.0),
            ("ior-hard-write", 0.181203),
            ("mdtest-hard-write", 40.977958),
            ("find", 859.253597),
            ("ior-easy-read", 2.941847),
            ("mdtest-easy-stat", 416.247896),
            ("ior-hard-read", 3.216044),
            ("mdtest-hard-stat", 321.316013),
            ("mdtest-easy-delete", 195.828365),
            ("mdtest-hard-read", 140.926179),
            ("mdtest-hard-delete", 128.820594),
            ("ior-rnd4K-easy-read", 2.065852),
        ]
        .into_iter()
        .map(|(n, s)| scored(n, s))
        .collect()
    }

    #[test]
    fn the_sample_runs_score_by_hand() {
        let s = score(&sample(), false);
        // The sample prints: Bandwidth 1.234594 GiB/s : IOPS 205.216727 kiops : TOTAL 15.917264
        assert_eq!(format!("{:.6}", s.bw), "1.234594");
        assert_eq!(format!("{:.6}", s.md), "205.216727");
        // io500 took the total from the unrounded phase figures; from the
        // printed ones (6 decimals; 0.181203 alone carries a relative
        // rounding error of up to 2.8e-6, a quarter of which reaches BW and
        // half of that the total: 3.5e-7 × 15.9 = 5.6e-6) it is 15.917267,
        // within 6e-6 of the printed 15.917264.
        assert!((s.total - 15.917264).abs() < 6e-6, "{}", s.total);
        assert_eq!(s.total, (s.bw * s.md).sqrt());
        // By hand: (1.355157 × 0.181203 × 2.941847 × 3.216044)^(1/4).
        let bw = (1.355157f64 * 0.181203 * 2.941847 * 3.216044).powf(0.25);
        assert!((s.bw - bw).abs() < 1e-12);
    }

    #[test]
    fn unscored_and_zero_phases_stay_out() {
        let mut phases = sample();
        // ior-rnd4K-easy-read is printed but never scored: changing it changes nothing.
        phases.last_mut().unwrap().score = 1000.0;
        // A phase that scored 0 is left out of its group's mean.
        phases.push(scored("ior-rnd4K-write", 0.0));
        let s = score(&phases, false);
        assert_eq!(s, score(&sample(), false));
        assert_eq!(
            score(&[], false),
            Score {
                bw: 0.0,
                md: 0.0,
                total: 0.0
            }
        );
    }

    #[test]
    fn extended_counts_the_optional_phases() {
        let mut phases = sample();
        phases.push(scored("ior-rnd4K-write", 0.5));
        phases.push(scored("find-easy", 1000.0));
        let std = score(&phases, false);
        assert_eq!(format!("{:.6}", std.bw), "1.234594");
        let ext = score(&phases, true);
        let bw = (1.355157f64 * 0.181203 * 2.941847 * 3.216044 * 0.5).powf(0.2);
        assert!((ext.bw - bw).abs() < 1e-9, "{} vs {bw}", ext.bw);
        assert!(ext.md > std.md);
    }
}
