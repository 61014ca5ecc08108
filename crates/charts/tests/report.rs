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
            // A record's figures agree with its counts (`report` checks).
            p.bytes = (bw * 1_048_576.0) as u64;
            p.ops = (bw * 16.0) as u64;
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
    rs.summarise();
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
        probes: Vec::new(),
        reps_auto: None,
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
        stop_reason: None,
        points: vec![
            point(0, 1, &[100.0, 0.0, 104.0, 0.0]),
            point(1, 2, &[200.0, 196.0, 204.0, 199.0]),
            point(2, 4, &[390.0, 402.0, 398.0, 395.0]),
        ],
        analysis: Default::default(),
        search: None,
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

/// A sweep that stopped early opens with a banner saying how much was
/// measured and why, before the answer and the charts; the text says it
/// too. A complete one has none.
#[test]
fn an_unfinished_sweep_says_so_before_the_charts() {
    let mut rec = record(Units::Iec);
    assert!(!charts::render_html(&rec).contains("unfinished"));
    rec.points_total = 5;
    for (interrupted, reason, want) in [
        (
            true,
            Some("interrupted by SIGTERM"),
            "interrupted by SIGTERM",
        ),
        (
            false,
            Some("refused: point threads=8: TARGET /x: No such file or directory"),
            "refused: point threads=8",
        ),
        (false, None, "still running, or was killed"),
    ] {
        rec.interrupted = interrupted;
        rec.stop_reason = reason.map(String::from);
        let html = charts::render_html(&rec);
        let banner = html.find("id=\"unfinished\"").expect("banner");
        assert!(banner < html.find("id=\"headline\"").unwrap());
        assert!(banner < html.find("<svg").unwrap());
        let b = &html[banner..banner + html[banner..].find("</div>").unwrap()];
        assert!(b.contains("unfinished: 3 of 5 points measured"), "{b}");
        assert!(b.contains(want), "{b}");
        assert!(b.contains("--resume"), "{b}");
        let text = analysis::render::render_text(&rec);
        assert!(
            text.contains("unfinished: 3 of 5 points measured") && text.contains(want),
            "{text}"
        );
    }
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

#[test]
fn latency_chart_has_p50_and_p99_by_workers_in_one_unit() {
    let rec = record(Units::Iec);
    let charts = charts::charts_for(&rec);
    let c = charts
        .iter()
        .find(|c| c.name == "latency-write")
        .expect("a latency chart per operation");
    let (unit, scale, log) = charts::latency_axis(&raw_latency(&rec));
    assert!(
        !log,
        "p50 and p99 within {}× of each other",
        charts::svg::LOG_SPAN
    );
    assert_eq!(c.chart.y_label, format!("Latency ({unit})"));
    assert!(c.chart.x_label.starts_with("Workers"));
    let labels: Vec<&str> = c.chart.series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["write p50", "write p99"]);
    // One line, one colour; the p99 dashed.
    assert_eq!(c.chart.series[0].colour, c.chart.series[1].colour);
    assert_eq!(
        (c.chart.series[0].dashed, c.chart.series[1].dashed),
        (false, true)
    );
    // Each point is the measured percentile at that worker count.
    for (s, pick) in c.chart.series.iter().zip([0, 1]) {
        let xs: Vec<f64> = s.points.iter().map(|p| p.x).collect();
        assert_eq!(xs, [1.0, 2.0, 4.0]);
        for (p, pt) in s.points.iter().zip(&rec.points) {
            let o = &pt.ops[0];
            let want = if pick == 0 {
                o.lat_p50_us
            } else {
                o.lat_p99_us
            }
            .unwrap()
                * scale;
            assert!((p.y - want).abs() < 1e-9, "{} vs {want}", p.y);
            assert!(p.lo <= p.y && p.y <= p.hi);
        }
    }
    let svg = charts::svg::render(&c.chart);
    assert!(svg.contains("Latency ("), "axis title with its unit");
}

/// The record of [`record`] as if its last point ran on 2 ranks of 2
/// threads on two hosts, rank 1 moving half of rank 0's bytes, with the
/// per-worker rows (as every record before the per-rank rows, and a run
/// with `--per-worker`).
fn mpi_record() -> SweepRecord {
    let mut rec = record(Units::Iec);
    let p = rec.points.last_mut().unwrap();
    p.threads = 2;
    p.result.host.cluster = Some(report::ClusterInfo {
        launcher: "mpi".into(),
        ranks: 2,
        threads_per_rank: 2,
        nodes: 2,
        tasks_per_node: 1,
        hosts: vec!["n1".into(), "n2".into()],
        node_phases: Vec::new(),
        ..Default::default()
    });
    let n = p.result.phases.len();
    for (i, ph) in p.result.phases.iter_mut().enumerate() {
        ph.workers = (0..4u32)
            .map(|w| report::WorkerRecord {
                worker: w,
                host: if w < 2 { "n1" } else { "n2" }.into(),
                bytes: if w < 2 { 2 << 20 } else { 1 << 20 },
                ops: 16,
                start_s: 0.0,
                end_s: 1.0,
                ..Default::default()
            })
            .collect();
        let c = p.result.host.cluster.as_mut().unwrap();
        for (h, mib) in [("n1", 4.0), ("n2", 2.0)] {
            c.node_phases.push(report::NodePhase {
                phase: i,
                op: ph.op.clone(),
                rep: ph.rep,
                host: h.into(),
                ranks: 1,
                workers: 2,
                bytes: (mib as u64) << 20,
                ops: 32,
                elapsed_s: 1.0,
                bw_mib_s: mib,
            });
        }
    }
    assert_eq!(n, 4);
    rec
}

/// [`mpi_record`] as node summaries leave it: no per-worker rows, one
/// per-rank row per phase (rank 1's span twice as long as the rows', so
/// the bars show which of the two they were drawn from).
fn summary_record() -> SweepRecord {
    let mut rec = mpi_record();
    let p = rec.points.last_mut().unwrap();
    let c = p.result.host.cluster.as_mut().unwrap();
    for (i, ph) in p.result.phases.iter_mut().enumerate() {
        ph.workers.clear();
        for r in 0..2u32 {
            c.rank_phases.push(report::RankPhase {
                phase: i,
                rank: r,
                workers: 2,
                bytes: if r == 0 { 4 << 20 } else { 2 << 20 },
                ops: 32,
                start_s: 0.0,
                end_s: (r + 1) as f64,
            });
        }
    }
    rec
}

#[test]
fn per_rank_bars_come_from_the_per_rank_rows() {
    let rec = summary_record();
    let bars = charts::bars_for(&rec);
    let names: Vec<&str> = bars.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["per-rank-write", "per-node-write"], "{names:?}");
    let got: Vec<(&str, f64)> = bars[0]
        .bars
        .bars
        .iter()
        .map(|b| (b.label.as_str(), b.value))
        .collect();
    // Rank 1: 2 MiB over its own 2 s.
    assert_eq!(got, [("rank 0 (n1)", 4.0), ("rank 1 (n2)", 1.0)]);
    let html = charts::render_html(&rec);
    assert!(html.contains("id=\"per-rank-write\""));
    assert!(html.contains("rank 1 (n2)"));
}

#[test]
fn per_rank_and_per_node_bars_under_mpi() {
    // A record saved before the per-rank rows existed, read back from
    // its JSON as `ioscale report` does: the bars come from its rows.
    let saved = analysis::render::render_json(&mpi_record()).unwrap();
    assert!(!String::from_utf8_lossy(&saved).contains("rank_phases"));
    let analysis::Loaded::Sweep(rec) = analysis::render::load(&saved).unwrap() else {
        panic!("a sweep record");
    };
    let bars = charts::bars_for(&rec);
    let names: Vec<&str> = bars.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["per-rank-write", "per-node-write"], "{names:?}");
    let ranks = &bars[0].bars;
    assert!(ranks.title.contains("at 4 workers"), "{}", ranks.title);
    let got: Vec<(&str, f64)> = ranks
        .bars
        .iter()
        .map(|b| (b.label.as_str(), b.value))
        .collect();
    // Rank 0 moved 4 MiB in 1 s, rank 1 2 MiB (good repetitions only).
    assert_eq!(got, [("rank 0 (n1)", 4.0), ("rank 1 (n2)", 2.0)]);
    let nodes: Vec<(&str, f64)> = bars[1]
        .bars
        .bars
        .iter()
        .map(|b| (b.label.as_str(), b.value))
        .collect();
    assert_eq!(nodes, [("n1", 4.0), ("n2", 2.0)]);
    let svg = charts::svg::render_bars(&bars[0].bars);
    assert!(svg.contains("Throughput (MiB/s)") && svg.contains("rank 1 (n2)"));
    assert!(svg.contains("<title>rank 0 (n1): 4"), "hover value");
    let html = charts::render_html(&rec);
    assert!(html.contains("id=\"per-rank-write\""));
    // A run on one rank has no such bars.
    assert!(charts::bars_for(&record(Units::Iec)).is_empty());
}

/// A comparison of two lines (two targets) names the numbers it rests on,
/// both lines at every common worker count, each linked to its table row.
#[test]
fn comparisons_link_to_the_rows_of_both_lines() {
    let mut rec = record(Units::Iec);
    let at = |index: usize, target: &str, workers: u32, reps: &[f64]| {
        let mut p = point(index, workers, reps);
        p.target = target.into();
        p.series = target.into();
        p
    };
    rec.points = vec![
        at(0, "/a", 1, &[100.0, 101.0, 99.0, 100.0]),
        at(1, "/a", 2, &[200.0, 196.0, 204.0, 199.0]),
        at(2, "/b", 1, &[150.0, 151.0, 149.0, 150.0]),
        at(3, "/b", 2, &[201.0, 197.0, 203.0, 198.0]),
    ];
    rec.config.targets = vec!["/a".into(), "/b".into()];
    rec.analysis = analyse_with(&rec, Units::Iec);
    let c = &rec.analysis.comparisons;
    assert_eq!(c.len(), 1, "{:#?}", rec.analysis);
    let at: Vec<(u32, Option<&str>)> = c[0]
        .at
        .iter()
        .map(|x| (x.workers, x.faster.as_deref()))
        .collect();
    assert_eq!(at, [(1, Some("/b")), (2, None)], "{:#?}", c[0]);
    let html = charts::render_html(&rec);
    let compared = html.split("<h3>Compared</h3>").nth(1).unwrap();
    let compared = compared.split("</ul>").next().unwrap();
    assert!(compared.contains("Based on: 1 worker: "), "{compared}");
    assert!(compared.contains("(/b clearly faster)"), "{compared}");
    assert!(compared.contains("(within noise)"), "{compared}");
    let links: Vec<&str> = compared
        .split("href=\"#")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect();
    assert_eq!(links.len(), 4, "both lines at 1 and 2 workers: {compared}");
    for l in links {
        assert!(
            html.contains(&format!("<tr id=\"{l}\"")),
            "link #{l} has a row"
        );
    }
}

/// The record's latency lines in µs, as the chart has them before its
/// axis is chosen: p50 and p99 of every good point.
fn raw_latency(rec: &SweepRecord) -> Vec<charts::Series> {
    ["p50", "p99"]
        .iter()
        .map(|n| charts::Series {
            label: n.to_string(),
            points: rec
                .points
                .iter()
                .filter_map(|p| {
                    let o = &p.ops[0];
                    let y = if *n == "p50" {
                        o.lat_p50_us
                    } else {
                        o.lat_p99_us
                    }?;
                    Some(charts::Point {
                        x: p.workers() as f64,
                        y,
                        lo: y,
                        hi: y,
                    })
                })
                .collect(),
            failed: Vec::new(),
            colour: 0,
            dashed: false,
        })
        .collect()
}

/// A saved real sweep (crates/analysis/tests/records/), analysed.
fn saved(name: &str) -> SweepRecord {
    let path = format!(
        "{}/../analysis/tests/records/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    match analysis::load(&std::fs::read(&path).unwrap()).unwrap() {
        analysis::Loaded::Sweep(r) => {
            let mut r = *r;
            r.analysis = analyse_with(&r, Units::Iec);
            r
        }
        analysis::Loaded::Run(_) => panic!("{path}: not a sweep"),
    }
}

/// Each series group of an SVG chart: its `data-` attributes and the y
/// of its markers.
struct Drawn {
    label: String,
    colour: String,
    legend: String,
    ys: Vec<f64>,
}

fn attr(tag: &str, name: &str) -> String {
    tag.split(&format!("{name}=\""))
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string()
}

fn drawn(svg: &str) -> Vec<Drawn> {
    svg.split("<g class=\"series\"")
        .skip(1)
        .map(|g| {
            let g = g.split("</g>").next().unwrap();
            let head = g.split('>').next().unwrap();
            Drawn {
                label: attr(head, "data-label"),
                colour: attr(head, "data-colour"),
                legend: attr(head, "data-legend"),
                ys: g
                    .split("<circle cx=")
                    .skip(1)
                    .filter(|c| c.contains("<title>"))
                    .map(|c| attr(c, "cy").parse().unwrap())
                    .collect(),
            }
        })
        .collect()
}

/// tmpfs writes: a p50 of about 30 µs under a p99 of several ms. On a
/// linear axis in the p99's unit the p50 lay flat on 0; the axis is now
/// logarithmic where the values span more than LOG_SPAN, with its unit
/// from the data, and every p50 marker stands clear of the bottom.
#[test]
fn latency_lines_far_apart_get_a_log_axis_and_neither_lies_on_zero() {
    let rec = saved("tmpfs");
    let c = charts::charts_for(&rec)
        .into_iter()
        .find(|c| c.name == "latency-write")
        .unwrap();
    assert!(c.chart.y_log, "{}", c.chart.y_label);
    assert!(
        c.chart.y_label.ends_with(", log scale)"),
        "{}",
        c.chart.y_label
    );
    let svg = charts::svg::render(&c.chart);
    assert!(svg.contains("data-y-scale=\"log\""));
    // The plot's bottom edge: TOP + the plot height (svg.rs).
    let bottom = 48.0 + (charts::svg::HEIGHT - 48.0 - 58.0);
    let d = drawn(&svg);
    let p50 = d.iter().find(|s| s.label == "write p50").unwrap();
    assert_eq!(p50.ys.len(), 3);
    for y in &p50.ys {
        assert!(
            *y < bottom - 20.0,
            "a p50 marker at y {y}, the axis at {bottom}"
        );
    }
    // The ticks are decades of the unit, with a label each.
    assert!(svg.matches("class=\"y-tick\"").count() >= 3);
}

/// Two targets: each keeps one colour on every chart, the two never
/// share one, and the legends tell them apart (both lines once read
/// "/tmp/meaning-fmnt-l…", and a colour changed meaning between charts).
#[test]
fn one_colour_per_line_on_every_chart_and_legends_that_tell_lines_apart() {
    let rec = saved("twotargets");
    let mut colour_of: std::collections::BTreeMap<String, String> = Default::default();
    for c in charts::charts_for(&rec) {
        let d = drawn(&charts::svg::render(&c.chart));
        let legends: Vec<&str> = d.iter().map(|s| s.legend.as_str()).collect();
        let mut unique = legends.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), legends.len(), "{}: {legends:?}", c.name);
        for s in &d {
            assert!(s.legend.chars().count() <= 20, "{}", s.legend);
            // The line's series label: the target, without " p50"/" p99".
            let line = s
                .label
                .trim_end_matches(" p50")
                .trim_end_matches(" p99")
                .to_string();
            let was = colour_of
                .entry(line.clone())
                .or_insert_with(|| s.colour.clone());
            assert_eq!(*was, s.colour, "{}: {line} changed colour", c.name);
        }
    }
    assert_eq!(colour_of.len(), 2, "{colour_of:?}");
    let colours: Vec<&String> = colour_of.values().collect();
    assert_ne!(colours[0], colours[1]);
}

#[test]
fn legend_labels_keep_the_end_that_differs() {
    let l = charts::svg::legend_labels(
        &["/tmp/meaning-fmnt-lat/a p50", "/tmp/meaning-fmnt-lat/b p50"],
        20,
    );
    assert_eq!(l, ["…a p50", "…b p50"]);
    let l = charts::svg::legend_labels(&["write"], 20);
    assert_eq!(l, ["write"]);
    let l = charts::svg::legend_labels(&["/a/very/long/path/to/one/target/x", "/b"], 20);
    assert!(l.iter().all(|x| x.chars().count() <= 20), "{l:?}");
    assert_ne!(l[0], l[1]);
}

/// Table headers wrap between words, never inside one ("Operatio n"), and
/// a sweep without series has no empty Series column.
#[test]
fn headers_wrap_between_words_and_no_empty_series_column() {
    let rec = saved("latency");
    let html = charts::render_html(&rec);
    let th = html.split("th{").nth(1).unwrap().split('}').next().unwrap();
    assert!(
        th.contains("overflow-wrap:normal") && th.contains("word-break:normal"),
        "{th}"
    );
    let geo = html
        .split("Geometric mean across operations")
        .nth(1)
        .unwrap();
    let head = geo.split("</thead>").next().unwrap();
    assert!(!head.contains("<th>Series</th>"), "{head}");
    assert!(head.contains("<th>Workers</th>"), "{head}");
    let stats = html.split("Statistics per point").nth(1).unwrap();
    assert!(!stats
        .split("</thead>")
        .next()
        .unwrap()
        .contains("<th>Series</th>"));
    // With series, the column names them.
    let two = charts::render_html(&saved("twotargets"));
    let stats = two.split("Statistics per point").nth(1).unwrap();
    assert!(stats
        .split("</thead>")
        .next()
        .unwrap()
        .contains("<th>Series</th>"));
    assert!(stats.contains("<td>/tmp/meaning-fmnt-lat/a</td>"));
}

/// `ioscale compare --html`: one chart per operation with a line per
/// record (the record's colour on each), the matched rows, each record's
/// verdicts.
#[test]
fn the_comparison_page_has_its_charts_rows_and_records() {
    let recs = vec![
        ("latency".to_string(), saved("latency")),
        ("onerep".to_string(), saved("onerep")),
    ];
    let c = analysis::compare::compare_with(&recs, Units::Iec);
    let html = charts::render_compare_html(&c, &recs);
    assert!(html.contains("<h1>ioscale comparison</h1>"));
    for op in ["write", "read"] {
        let fig = html
            .split(&format!("<figure id=\"compare-{op}\">"))
            .nth(1)
            .unwrap_or_else(|| panic!("no {op} chart"))
            .split("</figure>")
            .next()
            .unwrap();
        let d = drawn(fig);
        let names: Vec<&str> = d.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(names, ["latency", "onerep"]);
        assert_ne!(d[0].colour, d[1].colour);
    }
    assert!(html.contains("<th>×2</th>") && html.contains("<th>verdict 2</th>"));
    assert!(html.contains("onerep ÷ latency: geometric mean"));
    assert!(
        html.contains("ran different workloads"),
        "the workload warning"
    );
    assert!(html.contains("<h3>onerep</h3>"));
}
