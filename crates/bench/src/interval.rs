//! `--interval`: how finely a phase's throughput and latency are recorded
//! over time (issue 28), as every command asks for it.
//!
//! The default records every timed phase at one second, finer (down to
//! 1/16 s) for a phase too short for 20 such intervals, so a 5-second
//! phase still shows its shape; `--interval DUR` fixes the interval and
//! `--interval off` records no series. The engine's grid
//! ([`engine::SeriesGrid`]) does the work; this names it.

use std::fmt;
use std::time::Duration;

use engine::SeriesGrid;

/// The series a timed phase records (see the module documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Interval {
    /// No series.
    Off,
    /// One second, finer for a short phase.
    #[default]
    Auto,
    /// Exactly this interval (coarsened only past 4096 intervals).
    Every(Duration),
}

/// The default's interval.
const AUTO: Duration = Duration::from_secs(1);

/// The finest interval `--interval` takes: below it the per-interval
/// rollover (once per interval, not per operation) would start to cost.
pub const MIN_INTERVAL: Duration = Duration::from_millis(1);

impl Interval {
    /// Reads `--interval`'s value: `off`, `auto` or a duration (`1s`,
    /// `250ms`, `2m`) of at least [`MIN_INTERVAL`].
    pub fn parse(text: &str) -> Result<Interval, String> {
        match text.trim() {
            "off" => Ok(Interval::Off),
            "auto" => Ok(Interval::Auto),
            t => {
                let d = spec::parse_duration(t).map_err(|e| e.to_string())?;
                if d < MIN_INTERVAL {
                    return Err(format!(
                        "{t}: an interval must be at least 1ms (or `off`, `auto`)"
                    ));
                }
                Ok(Interval::Every(d))
            }
        }
    }

    /// The grid the workers record on; `None` when off.
    pub fn grid(self) -> Option<SeriesGrid> {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        match self {
            Interval::Off => None,
            Interval::Auto => SeriesGrid::at_most(ns(AUTO)),
            Interval::Every(d) => SeriesGrid::every(ns(d)),
        }
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Interval::Off => f.write_str("off"),
            Interval::Auto => f.write_str("auto"),
            Interval::Every(d) => write!(f, "{}s", d.as_secs_f64()),
        }
    }
}

/// As its `--interval` word (`off`, `auto`, `0.25s`).
impl serde::Serialize for Interval {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_words_and_durations() {
        assert_eq!(Interval::parse("off"), Ok(Interval::Off));
        assert_eq!(Interval::parse("auto"), Ok(Interval::Auto));
        assert_eq!(
            Interval::parse("250ms"),
            Ok(Interval::Every(Duration::from_millis(250)))
        );
        assert_eq!(Interval::Off.grid(), None);
        let g = Interval::parse("2s").unwrap().grid().unwrap();
        assert_eq!((g.interval_ns, g.report_ns), (2_000_000_000, 2_000_000_000));
        let a = Interval::Auto.grid().unwrap();
        assert_eq!((a.interval_ns, a.report_ns), (62_500_000, 1_000_000_000));
        for bad in ["0", "0.5ms", "-1s", "soon", "", "1e30s"] {
            assert!(Interval::parse(bad).is_err(), "{bad:?}");
        }
        // The largest duration there is still makes a grid.
        let big = Interval::parse("1000000000s").unwrap();
        assert!(big.grid().is_some());
    }
}
