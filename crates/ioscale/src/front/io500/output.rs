//! io500's text: the `[RESULT]` line of each phase, the `[SCORE ]` line,
//! and the files of the results directory (result_summary.txt,
//! result.txt, one `<phase>.txt` per phase).

use super::phases::{Group, Phase};
use super::score::Score;

/// A phase's line, as io500 prints it:
/// `[RESULT]       ior-easy-write        1.355157 GiB/s : time 1.089 seconds [INVALID]`.
/// Unscored phases (timestamp, ior-rnd4K-easy-read) say `[      ]`.
pub fn result_line(p: &Phase, score: f64, time_s: f64, valid: bool) -> String {
    let tag = if p.group == Group::None {
        "[      ]"
    } else {
        "[RESULT]"
    };
    format!(
        "{tag} {:>20} {score:>15.6} {} : time {time_s:.3} seconds{}",
        p.name,
        p.unit(),
        if valid { "" } else { " [INVALID]" }
    )
}

/// The score line; `extended` prints io500's `[SCOREX]`.
pub fn score_line(s: &Score, valid: bool, extended: bool) -> String {
    format!(
        "{} Bandwidth {:.6} GiB/s : IOPS {:.6} kiops : TOTAL {:.6}{}",
        if extended { "[SCOREX]" } else { "[SCORE ]" },
        s.bw,
        s.md,
        s.total,
        if valid { "" } else { " [INVALID]" }
    )
}

#[cfg(test)]
mod tests {
    use super::super::phases::ALL;
    use super::*;

    fn phase(n: &str) -> Phase {
        *ALL.iter().find(|p| p.name == n).unwrap()
    }

    #[test]
    fn lines_sit_where_io500_puts_them() {
        // Lines of shared/reference-outputs/sample-io500.txt.
        assert_eq!(
            result_line(&phase("ior-easy-write"), 1.355157, 1.089, false),
            "[RESULT]       ior-easy-write        1.355157 GiB/s : time 1.089 seconds [INVALID]"
        );
        assert_eq!(
            result_line(&phase("mdtest-hard-delete"), 128.820594, 1.347, true),
            "[RESULT]   mdtest-hard-delete      128.820594 kIOPS : time 1.347 seconds"
        );
        assert_eq!(
            result_line(&phase("timestamp"), 0.0, 0.0, true),
            "[      ]            timestamp        0.000000 kIOPS : time 0.000 seconds"
        );
        assert_eq!(
            result_line(&phase("ior-rnd4K-easy-read"), 2.065852, 1.215, true),
            "[      ]  ior-rnd4K-easy-read        2.065852 GiB/s : time 1.215 seconds"
        );
        let s = Score {
            bw: 1.234594,
            md: 205.216727,
            total: 15.917264,
        };
        assert_eq!(
            score_line(&s, false, false),
            "[SCORE ] Bandwidth 1.234594 GiB/s : IOPS 205.216727 kiops : TOTAL 15.917264 [INVALID]"
        );
    }
}
