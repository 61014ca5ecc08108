//! `ioscale compare`'s judgement: a workload difference between the
//! records is warned about, spread is shown, and a 0.994× within noise is
//! "no clear difference", never "slower".

use analysis::compare::{compare_with, render_text};
use analysis::render::sweep_of_run;
use analysis::{SweepRecord, Units};
use report::{JobSpec, ResultSet};

fn run_record() -> ResultSet {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../report/tests/golden/results.json"
    ))
    .unwrap();
    report::from_json(&bytes).unwrap()
}

/// The golden run as a sweep, every bandwidth and rate times `f`.
fn scaled(f: f64) -> SweepRecord {
    let mut rs = run_record();
    for p in &mut rs.phases {
        p.bw_mib_s *= f;
        p.bw_mb_s *= f;
        p.iops *= f;
    }
    sweep_of_run(rs)
}

#[test]
fn a_tiny_ratio_is_no_clear_difference() {
    let c = compare_with(
        &[("a".into(), scaled(1.0)), ("b".into(), scaled(0.994))],
        Units::Iec,
    );
    assert!(!c.rows.is_empty());
    for r in &c.rows {
        assert_eq!(
            r.verdicts[1].as_deref(),
            Some("no clear difference"),
            "{r:?}"
        );
    }
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let text = render_text(&c);
    // The golden run's read and randread rows have no interval (one
    // repetition of randread): no noise estimate there, which the summary
    // says instead of "every row within noise"; nor is a bare gap "no
    // clear difference", a judgement against noise it has none of.
    assert!(
        text.contains(
            " — not judged different at any row (one repetition in 2 of them: no noise estimate there"
        ),
        "{text}"
    );
    assert!(!text.contains("slower"), "{text}");
}

#[test]
fn one_repetition_is_never_beyond_noise() {
    // Two records of one repetition each (tmpfs at 1415 and 2388 MiB/s,
    // testfs at 29 MiB/s): "slower at every row, beyond noise" judged a
    // noise neither record measured.
    let mut a = run_record();
    a.phases.retain(|p| p.rep == 0);
    let b = {
        let mut b = a.clone();
        for p in &mut b.phases {
            p.bw_mib_s *= 0.02;
            p.bw_mb_s *= 0.02;
            p.iops *= 0.02;
        }
        b
    };
    let c = compare_with(
        &[("a".into(), sweep_of_run(a)), ("b".into(), sweep_of_run(b))],
        Units::Iec,
    );
    for r in &c.rows {
        assert_eq!(r.verdicts[1].as_deref(), Some("slower"), "{r:?}");
    }
    let text = render_text(&c);
    assert!(!text.contains("beyond noise"), "{text}");
    assert!(
        text.contains(
            " — slower at every row (one repetition in 3 of them: no noise estimate there"
        ),
        "{text}"
    );
}

#[test]
fn different_workloads_are_warned_about() {
    let a = scaled(1.0);
    let mut b = scaled(1.0);
    if let JobSpec::Run(w) = &mut b.points[0].result.spec {
        w.direct = !w.direct;
    }
    b.points[0].bytes_per_thread = 256 << 20;
    b.config.reps = 3;
    let a_reps = a.config.reps;
    let c = compare_with(&[("a".into(), a), ("b".into(), b)], Units::Iec);
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    let w = &c.warnings[0];
    assert!(w.starts_with("b and a ran different workloads: "), "{w}");
    assert!(w.contains("O_DIRECT") && w.contains("buffered"), "{w}");
    assert!(w.contains(&format!("× {a_reps} rep")), "{w}");
    assert!(w.contains("256 MiB per worker × 3 reps"), "{w}");
    let text = render_text(&c);
    assert!(text.contains(&format!("warning: {w}")), "{text}");
}

#[test]
fn spread_is_shown_beside_each_figure() {
    let mut rs = run_record();
    // Three repetitions of each operation, so each figure has an interval.
    let base = rs.phases.clone();
    for (k, f) in [(1u32, 0.9), (2, 1.1)] {
        for p in &base {
            let mut q = p.clone();
            q.rep = k;
            q.bw_mib_s *= f;
            q.bw_mb_s *= f;
            q.iops *= f;
            rs.phases.push(q);
        }
    }
    let a = sweep_of_run(rs);
    let c = compare_with(&[("a".into(), a.clone()), ("b".into(), a)], Units::Iec);
    assert!(c.rows[0].intervals[0].is_some());
    let text = render_text(&c);
    let row = text
        .lines()
        .find(|l| l.starts_with("write"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains('–') && row.contains('('), "{row}");
}
