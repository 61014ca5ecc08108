//! The HTML report as a reader sees it, in headless Chromium: three
//! reference reports — a data sweep, a metadata sweep, and a comparison of
//! two targets — screenshotted at 1400 px and 800 px wide, with assertions
//! on the laid-out page: the answer (headline) comes before the first
//! chart, every chart has axis titles (the y title with its unit), and no
//! element reaches outside the window (a wide table scrolls inside its own
//! box; the page never scrolls sideways).
//!
//! The checks run as a script in a copy of the report (the report itself
//! has no scripts); its findings come back through `--dump-dom`. With
//! `IOSCALE_REPORT_PNGS=DIR` the 1400 px screenshots are copied to DIR
//! (scripts/report-pngs uses it to regenerate the PNGs in docs/).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

fn browse(bin: &Path, page: &Path, width: u32, extra: &[String]) -> String {
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
            "--hide-scrollbars",
            "--virtual-time-budget=2000",
        ])
        .arg(format!("--window-size={width},1800"))
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

/// The checks, run in the page after layout; the problems found go into
/// `<pre id="visual-check">` as a JSON list.
const CHECK: &str = r#"<script>
(function () {
  const vw = document.documentElement.clientWidth;
  const found = [];
  const head = document.getElementById('headline');
  const chart = document.querySelector('figure svg');
  if (!head) found.push('no headline');
  if (!chart) found.push('no chart');
  if (head && chart &&
      !(head.compareDocumentPosition(chart) & Node.DOCUMENT_POSITION_FOLLOWING))
    found.push('the headline is not before the first chart');
  document.querySelectorAll('figure').forEach(function (f) {
    const texts = Array.from(f.querySelectorAll('svg text')).map(function (t) {
      return t.textContent.trim();
    });
    if (!texts.some(function (t) { return /^Workers|^Time into/.test(t); }))
      found.push(f.id + ': no x axis title');
    // The y title: a name and its unit ("Throughput (MiB/s)", "Latency
    // (ms)", "Files per second"), not the x title's "(log2 scale)".
    if (!texts.some(function (t) {
      return !/^Workers|^Time into/.test(t) &&
        /^[A-Z][A-Za-z ]* \([^()]+\)$|^[A-Z][a-z ]+ per second$/.test(t);
    }))
      found.push(f.id + ': no y axis title with a unit');
  });
  function inScroller(e) {
    for (let a = e.parentElement; a; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if (o === 'auto' || o === 'scroll') return true;
    }
    return false;
  }
  document.querySelectorAll('body *').forEach(function (e) {
    if (inScroller(e)) return;
    const b = e.getBoundingClientRect();
    if (b.width > 0 && (b.left < -1 || b.right > vw + 1))
      found.push('<' + e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
        '> spans ' + Math.round(b.left) + '..' + Math.round(b.right) +
        ' px of a ' + vw + ' px window');
  });
  if (document.documentElement.scrollWidth > vw + 1)
    found.push('the page scrolls sideways: ' +
      document.documentElement.scrollWidth + ' > ' + vw);
  const p = document.createElement('pre');
  p.id = 'visual-check';
  p.textContent = JSON.stringify(found);
  document.body.appendChild(p);
})();
</script>"#;

/// Runs `ioscale ARGS`, expecting exit 0.
fn ok(args: &[&str]) {
    let out = run(args);
    assert_code(&out, 0);
}

/// Screenshots `html` at both widths and checks its layout; returns the
/// 1400 px screenshot.
fn check_report(bin: &Path, name: &str, html: &Path, out: &Path) -> PathBuf {
    let page = std::fs::read_to_string(html).unwrap();
    assert!(
        !page.contains("<script"),
        "the report itself has no scripts"
    );
    let probe = out.join(format!("{name}-check.html"));
    std::fs::write(&probe, page.replace("</body>", &format!("{CHECK}</body>"))).unwrap();
    let mut wide = PathBuf::new();
    for width in [1400u32, 800] {
        let dom = browse(bin, &probe, width, &["--dump-dom".to_string()]);
        let found = dom
            .split("<pre id=\"visual-check\">")
            .nth(1)
            .and_then(|s| s.split("</pre>").next())
            .unwrap_or_else(|| panic!("{name} at {width} px: the checks did not run"));
        let found = found
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&");
        let problems: Vec<String> = serde_json::from_str(&found)
            .unwrap_or_else(|e| panic!("{name} at {width} px: {e}: {found}"));
        println!("{name} at {width} px: {} problem(s)", problems.len());
        assert!(problems.is_empty(), "{name} at {width} px: {problems:#?}");
        let shot = out.join(format!("{name}-{width}.png"));
        browse(
            bin,
            html,
            width,
            &[format!("--screenshot={}", shot.display())],
        );
        let png = png::Decoder::new(std::fs::File::open(&shot).unwrap());
        let info = png.read_info().unwrap();
        assert_eq!(
            (info.info().width, info.info().height),
            (width, 1800),
            "{}",
            shot.display()
        );
        if width == 1400 {
            wide = shot;
        }
    }
    wide
}

#[test]
fn three_reference_reports_read_well_at_1400_and_800_px() {
    let Some(bin) = chromium() else {
        eprintln!("note: skipping: chromium is not installed");
        return;
    };
    let out = scratch();
    let (a, b) = (scratch(), scratch());
    let o = out.path();
    let data = o.join("data-sweep.html");
    ok(&[
        "sweep",
        "--threads",
        "1,2,4",
        "--reps",
        "3",
        "--layout",
        "shared,per-thread",
        "--quiet",
        "--html",
        s(&data),
        "--",
        "run",
        "--op",
        "write,read",
        "--size",
        "2m",
        "--xfer",
        "64k",
        s(a.path()),
    ]);
    let meta = o.join("meta-sweep.html");
    ok(&[
        "sweep",
        "--threads",
        "1,2,4",
        "--reps",
        "3",
        "--quiet",
        "--html",
        s(&meta),
        "--",
        "meta",
        "--op",
        "create,stat,delete",
        "--files",
        "200",
        "--file-size",
        "4k",
        s(a.path()),
    ]);
    let targets = format!("{},{}", s(a.path()), s(b.path()));
    let compare = o.join("compare-targets.html");
    ok(&[
        "sweep",
        "--threads",
        "1,2,4",
        "--reps",
        "3",
        "--target",
        &targets,
        "--quiet",
        "--html",
        s(&compare),
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "2m",
        "--xfer",
        "64k",
    ]);
    let keep = std::env::var_os("IOSCALE_REPORT_PNGS").map(PathBuf::from);
    for (name, html) in [
        ("data-sweep", &data),
        ("meta-sweep", &meta),
        ("compare-targets", &compare),
    ] {
        let shot = check_report(&bin, name, html, o);
        if let Some(dir) = &keep {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::copy(&shot, dir.join(format!("report-{name}.png"))).unwrap();
        }
    }
    assert_empty(a.path());
    assert_empty(b.path());
}
