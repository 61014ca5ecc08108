//! The report of a sweep that stopped early says so at the top: a banner
//! "unfinished: k of n points measured" with the reason (the signal that
//! interrupted it, or the refused point), before the first chart; the JSON
//! record carries the same reason as `stop_reason`.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// The banner's text, checked to stand before the first chart.
fn banner(html: &str) -> String {
    let at = html
        .find("id=\"unfinished\"")
        .unwrap_or_else(|| panic!("no unfinished banner in the report:\n{html}"));
    let chart = html.find("<svg").expect("a chart");
    assert!(at < chart, "the banner comes after the first chart");
    let headline = html.find("id=\"headline\"").unwrap_or(usize::MAX);
    assert!(at < headline, "the banner comes before the headline");
    let end = at + html[at..].find("</div>").unwrap();
    html[at..end].to_string()
}

fn points(v: &Value) -> usize {
    v["points"].as_array().map(Vec::len).unwrap_or(0)
}

#[test]
fn sigint_after_the_first_point_is_in_the_html_and_json() {
    let dir = scratch();
    let out = scratch();
    let json = out.path().join("s.json");
    let html = out.path().join("s.html");
    // Three points of O_SYNC 4 KiB writes, each limited to 300 ms.
    let mut child = Command::new(ioscale_path())
        .args([
            "sweep",
            "--threads",
            "1,2,3",
            "--reps",
            "1",
            "--json",
            s(&json),
            "--html",
            s(&html),
            "-q",
            "--progress",
            "none",
            "--",
            "run",
            "--op",
            "write",
            "--xfer",
            "4k",
            "--size",
            "256m",
            "--sync",
            "each",
            "--time",
            "300ms",
            s(dir.path()),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        let n = std::fs::read(&json)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map(|v| points(&v))
            .unwrap_or(0);
        if n >= 1 {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sweep ended before it could be interrupted"
        );
        assert!(t0.elapsed() < Duration::from_secs(120), "no point in 120 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_code(&o, 130);
    let v = common::json(&json);
    let k = points(&v);
    assert!((1..3).contains(&k), "{k} points kept");
    assert_eq!(v["points_total"], 3);
    assert_eq!(v["interrupted"], true);
    assert_eq!(
        v["stop_reason"], "interrupted by SIGINT",
        "{}",
        v["stop_reason"]
    );
    let page = std::fs::read_to_string(&html).unwrap();
    let b = banner(&page);
    assert!(
        b.contains(&format!("unfinished: {k} of 3 points measured")),
        "{b}"
    );
    assert!(b.contains("interrupted by SIGINT"), "{b}");
    assert!(b.contains("--resume"), "{b}");
    assert_empty(dir.path());
}

#[test]
fn a_refused_point_is_in_the_html_and_json() {
    let good = scratch();
    let out = scratch();
    let missing = out.path().join("no-such-dir");
    let json = out.path().join("s.json");
    let html = out.path().join("s.html");
    let targets = format!("{},{}", s(good.path()), s(&missing));
    let r = run(&[
        "sweep",
        "--threads",
        "1",
        "--reps",
        "1",
        "--target",
        &targets,
        "--json",
        s(&json),
        "--html",
        s(&html),
        "-q",
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "64k",
        "--xfer",
        "64k",
        s(good.path()),
    ]);
    assert_code(&r, 2);
    let v = common::json(&json);
    assert_eq!(points(&v), 1, "{v}");
    assert_eq!(v["points_total"], 2);
    assert_eq!(v["interrupted"], false);
    let why = v["stop_reason"].as_str().expect("stop_reason");
    assert!(why.starts_with("refused: point"), "{why}");
    assert!(why.contains("no-such-dir"), "{why}");
    let page = std::fs::read_to_string(&html).unwrap();
    let b = banner(&page);
    assert!(b.contains("unfinished: 1 of 2 points measured"), "{b}");
    assert!(b.contains("refused: point"), "{b}");
    assert!(b.contains("no-such-dir"), "{b}");
    assert_empty(good.path());
    assert!(!Path::new(&missing).exists());
}

#[test]
fn a_finished_sweep_has_no_banner() {
    let dir = scratch();
    let out = scratch();
    let json = out.path().join("s.json");
    let html = out.path().join("s.html");
    let r = run(&[
        "sweep",
        "--threads",
        "1,2",
        "--reps",
        "1",
        "--json",
        s(&json),
        "--html",
        s(&html),
        "-q",
        "--",
        "run",
        "--op",
        "write",
        "--size",
        "64k",
        "--xfer",
        "64k",
        s(dir.path()),
    ]);
    assert_code(&r, 0);
    let v = common::json(&json);
    assert!(v.get("stop_reason").is_none(), "{v}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(!page.contains("unfinished"), "{page}");
}
