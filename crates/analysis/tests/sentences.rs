//! Every sentence the analysis says is plain ([`style_faults`]): no
//! clause said twice in one sentence ("Peak measured: 55.0 MiB/s at 1
//! worker; 55.0 MiB/s at 1 worker."), no parentheses inside parentheses.
//!
//! The records are real sweeps saved in `tests/records/` (made by the
//! commands in `tests/records/README.md`: ioscale-testfs with a delay, one
//! service thread, a bandwidth cap, the page cache kept, failing
//! repetitions; tmpfs; ext4), their analysis left out and recomputed here
//! in both unit systems, with every comparison between them.
//! `tests/known_answers_cli.rs` of the binary checks the records of its
//! live known-answer runs the same way.

use std::path::PathBuf;

use analysis::compare::{compare_with, render_text};
use analysis::render::{load, render_text as sweep_text, warning_kind};
use analysis::verdict::style_faults;
use analysis::{analyse_with, SweepRecord, Units};

fn records() -> Vec<(String, SweepRecord)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/records");
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for f in files {
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        match load(&std::fs::read(&f).unwrap()) {
            Ok(analysis::render::Loaded::Sweep(r)) => out.push((name, *r)),
            Ok(_) => panic!("{name}: not a sweep record"),
            Err(e) => panic!("{name}: {e}"),
        }
    }
    assert!(out.len() >= 10, "only {} records", out.len());
    out
}

/// The faults of every sentence in `texts`, each with where it was said.
fn faults<'a>(at: &str, texts: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut out = Vec::new();
    for t in texts {
        for f in style_faults(t) {
            out.push(format!("{at}: {f}\n    in: {t}"));
        }
    }
    out
}

#[test]
fn every_sentence_of_the_saved_records_is_plain() {
    let mut bad = Vec::new();
    let mut said = 0;
    for (name, rec) in records() {
        for units in [Units::Iec, Units::Si] {
            let a = analyse_with(&rec, units);
            said += a.sentences().len();
            bad.extend(faults(&name, &a.notes));
            for c in &a.curves {
                bad.extend(faults(&format!("{name} {}", c.name()), &c.sentences));
                bad.extend(faults(&name, [&c.verdict.text]));
                if let Some(l) = &c.verdict.limiter {
                    bad.extend(faults(&name, [&l.figure]));
                }
            }
            for c in &a.comparisons {
                bad.extend(faults(&format!("{name} compared"), [&c.sentence]));
            }
            let mut rec = rec.clone();
            rec.analysis = a;
            let text: Vec<String> = sweep_text(&rec)
                .lines()
                .filter(|l| l.trim_start().starts_with("- ") || l.starts_with("warning:"))
                .map(String::from)
                .collect();
            bad.extend(faults(&format!("{name} text"), &text));
        }
    }
    assert!(said > 100, "only {said} sentences");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn comparing_the_saved_records_says_plain_sentences() {
    let recs = records();
    let mut bad = Vec::new();
    for pair in recs.windows(2) {
        let c = compare_with(pair, Units::Iec);
        let text: Vec<String> = render_text(&c).lines().map(String::from).collect();
        bad.extend(faults(&format!("{} vs {}", pair[0].0, pair[1].0), &text));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The warnings of a sweep are shown once per statement: the same
/// statement about another size or thread count is one, about another
/// target two.
#[test]
fn warnings_count_once_per_statement_and_target() {
    assert_eq!(
        warning_kind("16 workers on 2 CPUs took turns: in the read phase 1.95"),
        warning_kind("8 workers on 2 CPUs took turns: in the write phase 1.90")
    );
    assert_ne!(
        warning_kind("the target /mnt/t1 is on tmpfs: memory, not storage"),
        warning_kind("the target /mnt/t2 is on tmpfs: memory, not storage")
    );
}
