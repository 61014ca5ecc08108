//! The HTML report in a real browser: headless Chromium (Debian's
//! `chromium` package) loads the file with no network, takes a screenshot
//! and dumps the DOM; the test checks that the charts are there and were
//! painted. Chromium is a test dependency that scripts/test installs, so a
//! missing browser fails the test (CI must not pass by skipping it) unless
//! IOSCALE_SKIP_BROWSER=1 says on purpose that this machine has none.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let p = Path::new(dir).join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Runs Chromium headless on `page` with `extra` flags; returns stdout.
fn browse(bin: &Path, page: &Path, extra: &[String]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1200,1600",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("starting chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Pixels of the charts' first line colour (#0072B2), which nothing but a
/// chart uses.
fn chart_blue_pixels(png_path: &Path) -> (usize, u32, u32) {
    let decoder = png::Decoder::new(std::fs::File::open(png_path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let chans = info.color_type.samples();
    let px = &buf[..info.buffer_size()];
    let blue = px
        .chunks(chans)
        .filter(|p| p[0] < 60 && (80..160).contains(&p[1]) && p[2] > 140)
        .count();
    (blue, info.width, info.height)
}

#[test]
fn html_report_renders_charts_in_chromium() {
    let Some(bin) = chromium() else {
        if std::env::var_os("IOSCALE_SKIP_BROWSER").is_some_and(|v| v == "1") {
            eprintln!("note: IOSCALE_SKIP_BROWSER=1: skipping the browser test");
            return;
        }
        panic!(
            "chromium is not installed: run scripts/test (it installs Debian's chromium package), \
             or set IOSCALE_SKIP_BROWSER=1 to skip this test on purpose"
        );
    };
    let dir = scratch();
    let out = scratch();
    let html = out.path().join("r.html");
    let charts = out.path().join("charts");
    let r = run(&[
        "sweep",
        "--threads",
        "1,2,4",
        "--layout",
        "shared,per-thread",
        "--reps",
        "2",
        "--html",
        s(&html),
        "--png",
        s(&charts),
        "-q",
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "1m",
        "--xfer",
        "64k",
        s(dir.path()),
    ]);
    assert_code(&r, 0);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        !page.contains("src=\"http") && !page.contains("href=\"http"),
        "the report must not load anything from the network"
    );
    for f in ["throughput-write", "duration-write", "latency-write"] {
        let png = charts.join(format!("{f}.png"));
        let svg = charts.join(format!("{f}.svg"));
        assert!(svg.is_file(), "{}", svg.display());
        let (blue, w, h) = chart_blue_pixels(&png);
        assert_eq!((w, h), (760, 440));
        // The latency chart's first (blue) line is the p50 one, drawn
        // against an axis sized for the p99: shorter than the others.
        let least = if f.starts_with("latency") { 50 } else { 200 };
        assert!(blue > least, "{f}.png: only {blue} line pixels");
    }

    let dom = browse(&bin, &html, &["--dump-dom".to_string()]);
    assert!(dom.contains("<h1>ioscale sweep report</h1>"), "{dom}");
    // Three scaling charts for one op (the figures with an id), then the
    // phases' throughput and p99 over time.
    assert_eq!(
        dom.matches("<figure id=").count(),
        3,
        "three charts for one op"
    );
    assert!(dom.contains("throughput over time"), "over-time charts");
    assert!(dom.contains("id=\"throughput-write\"") && dom.contains("id=\"duration-write\""));
    assert!(dom.contains("id=\"latency-write\""), "latency chart");
    assert!(dom.contains("Latency (µs") || dom.contains("Latency (ms"));
    assert!(dom.contains("<polyline"), "lines drawn");
    assert!(dom.contains("Peak"), "analysis present");
    assert!(dom.contains("Throughput (MiB/s)"), "table present");

    let shot = out.path().join("shot.png");
    browse(&bin, &html, &[format!("--screenshot={}", shot.display())]);
    let (blue, w, h) = chart_blue_pixels(&shot);
    assert_eq!((w, h), (1200, 1600));
    assert!(
        blue > 300,
        "the screenshot shows only {blue} chart-line pixels: charts did not render"
    );
}

/// A quick sweep's record at `json`: `--threads 1,2`, write and read.
fn quick_sweep(dir: &Path, json: &Path) {
    let r = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--reps",
        "2",
        "--json",
        s(json),
        "-q",
        "--",
        "run",
        "--op",
        "write,read",
        "--size",
        "256k",
        "--xfer",
        "64k",
        s(dir),
    ]);
    assert_code(&r, 0);
}

/// `ioscale compare --html` writes one page from the records compared (a
/// chart per operation, the matched rows, each record's verdicts), and
/// never over a record it reads.
#[test]
fn compare_writes_an_html_page_and_never_over_a_record() {
    let dir = scratch();
    let out = scratch();
    let (a, b) = (out.path().join("a.json"), out.path().join("b.json"));
    quick_sweep(dir.path(), &a);
    quick_sweep(dir.path(), &b);
    let page = out.path().join("c.html");
    let r = run(&["compare", s(&a), s(&b), "--html", s(&page)]);
    assert_code(&r, 0);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<h1>ioscale comparison</h1>"), "{html}");
    assert!(
        html.contains("<figure id=\"compare-write\">")
            && html.contains("<figure id=\"compare-read\">")
    );
    assert!(html.contains("<th>×2</th>") && html.contains("<h3>b</h3>"));
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
    // The text is printed as without --html.
    assert!(
        stdout(&r).contains("b ÷ a: geometric mean"),
        "{}",
        stdout(&r)
    );
    let before = std::fs::read(&a).unwrap();
    let r = run(&["compare", s(&a), s(&b), "--html", s(&a)]);
    assert_code(&r, 2);
    assert_eq!(
        std::fs::read(&a).unwrap(),
        before,
        "the record was replaced"
    );
    assert_empty(dir.path());
}

/// Two targets on tmpfs: each warning names its target, and the report
/// shows both ("the target is on tmpfs" did not say which).
#[test]
fn each_tmpfs_warning_names_its_target() {
    let Some(m) = tmpfs("size=64m") else {
        return;
    };
    let (ta, tb) = (m.path().join("a"), m.path().join("b"));
    std::fs::create_dir(&ta).unwrap();
    std::fs::create_dir(&tb).unwrap();
    let out = scratch();
    let html = out.path().join("r.html");
    let targets = format!("{},{}", s(&ta), s(&tb));
    let r = run(&[
        "sweep",
        "--threads",
        "1",
        "--target",
        &targets,
        "--html",
        s(&html),
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "256k",
        "--xfer",
        "64k",
    ]);
    assert_code(&r, 0);
    let page = std::fs::read_to_string(&html).unwrap();
    let text = stdout(&r);
    for t in [&ta, &tb] {
        let w = format!(
            "the target {} is on tmpfs: memory, not storage",
            t.display()
        );
        assert!(page.contains(&w), "{w}");
        assert!(text.contains(&w), "{text}");
    }
}
