//! The validated description of a parallel find: a walk of a directory
//! tree that examines every entry and counts those that match, as pfind
//! (io500's find phases) and `find -name … -size …c -newer …` do.
//!
//! The walk is shared by the workers (threads × ranks): each lists every
//! directory and examines its share of the entries, every worker-th one.
//! Directories are walked, not examined (pfind counts files); symbolic
//! links are examined as entries and never followed.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::check;
use crate::workload::SpecError;

/// The raw, unchecked values of a find.
#[derive(Debug, Clone, Default)]
pub struct RawFind {
    /// Where the walk starts.
    pub root: Option<PathBuf>,
    /// Workers per process.
    pub threads: Option<u64>,
    /// `-name`: a shell pattern the entry's name must match (`*` and `?`).
    pub name: Option<String>,
    /// `-size Nc`: the entry holds exactly this many bytes.
    pub size: Option<u64>,
    /// `-newer`: modified after this moment (seconds, nanoseconds since
    /// the epoch: the reference file's modification time).
    pub newer_than: Option<(i64, u32)>,
}

/// A complete, consistent find.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindSpec {
    /// Where the walk starts.
    pub root: PathBuf,
    /// Workers per process.
    pub threads: u32,
    /// The shell pattern a match's name fits (`*` any run, `?` one byte).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A match holds exactly this many bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// A match was modified strictly after this (seconds, nanoseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newer_than: Option<(i64, u32)>,
}

impl RawFind {
    /// Checks every value.
    pub fn build(&self) -> Result<FindSpec, SpecError> {
        let root = check::target(&self.root, "name the directory to walk")?;
        let threads = check::threads(self.threads)?;
        if let Some(p) = &self.name {
            if p.contains(['[', ']', '\\', '/', '\0']) {
                return Err(SpecError::range(
                    "-name",
                    p.clone(),
                    "a pattern of literal characters, `*` and `?` (no brackets, backslashes \
                     or '/')",
                ));
            }
        }
        if let Some((_, ns)) = self.newer_than {
            if ns >= 1_000_000_000 {
                return Err(SpecError::range(
                    "-newer",
                    ns.to_string(),
                    "nanoseconds below one second",
                ));
            }
        }
        Ok(FindSpec {
            root,
            threads: threads as u32,
            name: self.name.clone(),
            size: self.size,
            newer_than: self.newer_than,
        })
    }
}

impl FindSpec {
    /// Whether an entry's name fits the pattern (any name without one).
    pub fn name_matches(&self, name: &[u8]) -> bool {
        self.name
            .as_deref()
            .is_none_or(|p| glob(p.as_bytes(), name))
    }

    /// Whether matching needs the entry's size or time (an `lstat`).
    pub fn needs_stat(&self) -> bool {
        self.size.is_some() || self.newer_than.is_some()
    }

    /// Whether an entry of `size` bytes modified at `mtime` (seconds,
    /// nanoseconds) fits the size and time criteria.
    pub fn stat_matches(&self, size: u64, mtime: (i64, u32)) -> bool {
        self.size.is_none_or(|s| s == size) && self.newer_than.is_none_or(|t| mtime > t)
    }

    /// One line that says what the walk does.
    pub fn describe(&self) -> String {
        let mut s = format!("find {} x {} worker(s)", self.root.display(), self.threads);
        if let Some(n) = &self.name {
            s.push_str(&format!(", -name {n}"));
        }
        if let Some(b) = self.size {
            s.push_str(&format!(", -size {b}c"));
        }
        if let Some((sec, ns)) = self.newer_than {
            s.push_str(&format!(", -newer {sec}.{ns:09}"));
        }
        s
    }
}

/// A shell pattern of literal bytes, `*` (any run, the empty one too) and
/// `?` (one byte), matched against all of `name`; iterative, with one
/// point to come back to, so it never recurses or backtracks more than
/// linearly per star.
fn glob(pat: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pat.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == b'?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pat[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_the_shell_does() {
        for (p, n, want) in [
            ("*01*", "file.mdtest.3.101", true),
            ("*01*", "file.mdtest.0.1", false),
            ("*01*", "01", true),
            ("*", "", true),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("*.txt", "x.txt.gz", false),
            ("**x*", "abx", true),
            ("abc", "abcd", false),
        ] {
            assert_eq!(glob(p.as_bytes(), n.as_bytes()), want, "{p} {n}");
        }
    }

    #[test]
    fn criteria_and_refusals() {
        let s = RawFind {
            root: Some("/d".into()),
            name: Some("*01*".into()),
            size: Some(3901),
            newer_than: Some((100, 5)),
            ..Default::default()
        }
        .build()
        .unwrap();
        assert!(s.needs_stat());
        assert!(s.stat_matches(3901, (100, 6)));
        assert!(!s.stat_matches(3901, (100, 5)), "strictly newer");
        assert!(!s.stat_matches(3900, (200, 0)));
        let bad = RawFind {
            root: Some("/d".into()),
            name: Some("[ab]".into()),
            ..Default::default()
        };
        assert_eq!(bad.build().unwrap_err().flags(), ["-name"]);
    }
}
