//! The HTML report of a sweep with failed repetitions: the banner, the
//! marked row, the cross in the chart, and verdicts linked to the rows
//! they rest on — in one unit system.

use analysis::model::point_stats;
use analysis::{analyse_with, SweepConfig, SweepPoint, SweepRecord, Units, SWEEP_SCHEMA};
use report::{ErrorRecord, ResultSet};

fn base() -> ResultSet {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../report/tests/golden/results.json"
    ))
    .unwrap();
    report::from_json(&bytes).unwrap()
}

/// A write-only point at `workers` with the given per-repetition MiB/s;
/// 0 means the repetition failed with EIO.
fn point(index: usize, workers: u32, reps: &[f64]) -> SweepPoint {
    let mut rs = base();
    let proto = rs.phases.iter().find(|p| p.op == "write").unwrap().clone();
    rs.phases = reps
        .iter()
        .enumerate()
        .map(|(r, &bw)| {
            let mut p = proto.clone();
            p.rep = r as u32;
            p.threads = workers;
            p.bw_mib_s = bw;
            p.bw_mb_s = bw * 1.048576;
            p.iops = bw * 16.0;
            p.elapsed_s = 1.0;
            if bw == 0.0 {
                p.errors = 1;
                p.bytes = 0;
                p.ops = 0;
            }
            p
        })
        .collect();
    rs.errors = if reps.contains(&0.0) {
        vec![ErrorRecord {
            worker: 0,
            op: "write".into(),
            file: "file.0".into(),
            offset: Some(0),
            errno: Some(5),
            message: "write file.0 at 0: Input/output error (os error 5)".into(),
        }]
    } else {
        Vec::new()
    };
    let (ops, g1, g2) = point_stats(&rs, workers, 0);
    SweepPoint {
        index,
        series: String::new(),
        threads: workers,
        xfer: 65536,
        layout: "per-thread".into(),
        target: rs.host.target.clone(),
        file_count: workers as u64,
        dir_per_file: false,
        bytes_per_thread: 1 << 20,
        ops,
        geomean_bw_mib_s: g1,
        geomean_iops: g2,
        result: rs,
    }
}

fn record(units: Units) -> SweepRecord {
    let rs = base();
    let mut rec = SweepRecord {
        schema: SWEEP_SCHEMA,
        tool: "ioscale".into(),
        kind: "sweep".into(),
        version: rs.version.clone(),
        command: rs.command.clone(),
        started: rs.started.clone(),
        host: rs.host.clone(),
        config: SweepConfig {
            command: "run".into(),
            threads: vec![1, 2, 4],
            reps: 4,
            ..Default::default()
        },
        interrupted: false,
        points_total: 3,
        points: vec![
            point(0, 1, &[100.0, 0.0, 104.0, 0.0]),
            point(1, 2, &[200.0, 196.0, 204.0, 199.0]),
            point(2, 4, &[390.0, 402.0, 398.0, 395.0]),
        ],
        analysis: Default::default(),
    };
    rec.analysis = analyse_with(&rec, units);
    rec
}

#[test]
fn failed_repetitions_are_shown_and_verdicts_link_to_rows() {
    let rec = record(Units::Iec);
    let o = &rec.points[0].ops[0];
    assert_eq!((o.reps, o.failed), (2, 2));
    assert_eq!(
        o.center_bw_mib_s(),
        102.0,
        "zeros of failed reps not averaged in"
    );
    let html = charts::render_html(&rec);
    assert!(html.contains("id=\"failures\""), "banner");
    assert!(html.contains("2 of 12 repetitions failed"), "banner count");
    assert!(html.contains("Input/output error (os error 5)"));
    assert!(
        html.contains("<tr id=\"pt--write-1\" class=\"failed\">"),
        "marked row"
    );
    assert!(html.contains("2 (2 failed)"));
    assert!(html.contains("class=\"failed\" d="), "chart cross");
    // The verdict links to rows that exist.
    let verdict_links: Vec<&str> = html
        .split("href=\"#pt-")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect();
    assert!(!verdict_links.is_empty());
    for l in verdict_links {
        assert!(
            html.contains(&format!("<tr id=\"pt-{l}\"")),
            "link #{l} has a row"
        );
    }
    // The answer first: the headline (with the verdict) and the warnings
    // come before the first chart; the command and host facts after.
    let at = |needle: &str| {
        html.find(needle)
            .unwrap_or_else(|| panic!("{needle} missing"))
    };
    assert!(at("id=\"headline\"") < at("<svg"));
    assert!(at("id=\"failures\"") < at("<svg"));
    assert!(at(&rec.analysis.curves[0].verdict.text) < at("<svg"));
    assert!(at("<svg") < at("id=\"command\""));
    // Charts carry the ideal linear line and a subtitle saying what ran.
    assert!(html.contains("class=\"overlay\"") && html.contains("ideal linear"));
    assert!(html.contains("/mnt/lustre/scratch/ioscale (lustre)"));
    // One unit system: MiB/s everywhere, never MB/s.
    assert!(html.contains("Throughput (MiB/s)"));
    assert!(!html.contains("MB/s"), "no MB/s in a MiB/s report");
}

#[test]
fn si_units_are_used_throughout() {
    let rec = record(Units::Si);
    let html = charts::render_html(&rec);
    assert!(html.contains("Throughput (MB/s)"));
    let text = analysis::render::render_text(&rec);
    assert!(!text.contains("MiB/s"), "{text}");
    assert!(text.contains("Throughput (MB/s)"));
}
