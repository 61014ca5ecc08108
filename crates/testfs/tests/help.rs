//! `ioscale-testfs --help`: its examples paste into a terminal, every line
//! fits 80 columns, and a command wrapped over several lines ends each but
//! the last with ` \`.

use std::process::Command;

#[test]
fn help_examples_fit_80_columns_and_paste() {
    let out = Command::new(env!("CARGO_BIN_EXE_ioscale-testfs"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let start = text
        .lines()
        .position(|l| l.starts_with("Examples"))
        .expect("an Examples section");
    let lines: Vec<&str> = text.lines().skip(start).collect();
    assert!(lines.len() > 3, "{text}");
    let mut goes_on = false;
    for l in &lines {
        assert!(l.chars().count() <= 80, "over 80 columns: {l}");
        let t = l.trim_start();
        if goes_on {
            assert!(l.starts_with("      "), "a continued line is indented: {l}");
        } else if !t.is_empty() && !t.starts_with('#') && l.starts_with("  ") {
            let first = t.split(' ').next().unwrap();
            assert!(
                ["ioscale-testfs", "fusermount3"].contains(&first),
                "an example line that is not a command: {l}"
            );
        }
        goes_on = l.ends_with(" \\");
    }
    assert!(!goes_on, "the last line ends with a backslash");
}
