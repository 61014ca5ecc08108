//! `--series-csv FILE`: every phase's per-interval series as CSV, one row
//! per interval per phase per point, for a spreadsheet or a plotting
//! script (the JSON record holds the same series with its histograms).
//!
//! Rates are per second of the interval's own length (the last interval
//! of a phase is usually shorter); latencies are those of the operations
//! completed in the interval, from its merged histogram.

use std::fmt::Write;

use crate::export::csv_field;
use crate::model::{shown_rep, PhaseRecord};

/// The header row of [`series_csv`].
pub const SERIES_CSV_HEADER: &str = "point,phase,op,rep,threads,interval_s,t_s,dur_s,ops,bytes,\
read_ops,read_bytes,write_ops,write_bytes,errors,mib_s,iops,workers,lat_mean_us,lat_p50_us,\
lat_p99_us,lat_max_us";

/// The series of every phase of `points` (`(point number, the phases of
/// its run record)`; a run is point 0) as CSV, header first. Phases
/// without a series have no rows.
pub fn series_csv<'a>(points: impl IntoIterator<Item = (usize, &'a [PhaseRecord])>) -> String {
    let mut o = String::from(SERIES_CSV_HEADER);
    o.push('\n');
    for (point, phases) in points {
        for (i, ph) in phases.iter().enumerate() {
            let Some(s) = &ph.series else { continue };
            let interval = s.width_ns() as f64 / 1e9;
            for (f, b) in s.figures().iter().zip(s.bins()) {
                let _ = writeln!(
                    o,
                    "{point},{i},{},{},{},{interval},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                    csv_field(&ph.op),
                    shown_rep(ph.rep),
                    ph.threads,
                    f.t_s,
                    f.dur_s,
                    b.io.ops,
                    b.io.bytes,
                    b.io.read_ops,
                    b.io.read_bytes,
                    b.io.write_ops,
                    b.io.write_bytes,
                    b.io.errors,
                    f.mib_s,
                    f.iops,
                    f.workers,
                    f.lat_mean_us,
                    f.lat_p50_us,
                    f.lat_p99_us,
                    f.lat_max_us,
                );
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_interval_per_phase_per_point() {
        let mut r = stats::SeriesRecorder::new(1_000_000_000, 16, 0).unwrap();
        r.write(100, 1 << 20, 2_000);
        r.write(1_500_000_000, 1 << 20, 4_000);
        r.error(1_600_000_000);
        let series = r.finish(2_000_000_000);
        let phases = [
            PhaseRecord {
                op: "write".into(),
                rep: 0,
                threads: 1,
                series: Some(series),
                ..Default::default()
            },
            PhaseRecord {
                op: "read".into(),
                ..Default::default()
            },
        ];
        let csv = series_csv([(0, &phases[..]), (3, &phases[..])]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], SERIES_CSV_HEADER);
        assert_eq!(lines.len(), 1 + 2 * 2, "{csv}");
        let cells: Vec<&str> = lines[2].split(',').collect();
        assert_eq!(cells.len(), SERIES_CSV_HEADER.split(',').count());
        assert_eq!(
            &cells[..9],
            ["0", "0", "write", "1", "1", "1", "1", "1", "1"]
        );
        // bytes, write ops and bytes, errors, MiB/s, one worker, p50 4 µs.
        assert_eq!(cells[9], "1048576");
        assert_eq!((cells[12], cells[13], cells[14]), ("1", "1048576", "1"));
        assert_eq!((cells[15], cells[17]), ("1", "1"));
        assert_eq!(cells[19], "4");
        assert!(lines[3].starts_with("3,0,write,1,1,1,0,1,"), "{}", lines[3]);
    }
}
