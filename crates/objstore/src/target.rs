//! A target given as `s3://BUCKET/PREFIX`: the bucket and the key prefix
//! under which a run works, checked once so that every key ioscale makes
//! from it is one the store and a file-backed server agree on.

use std::fmt;

/// The longest key S3 accepts, in bytes.
pub const MAX_KEY_LEN: usize = 1024;

/// A bucket and a key prefix, from an `s3://` URL.
///
/// The prefix is kept without leading or trailing `/`; an empty prefix is
/// the bucket's root. Segments are never empty, `.` or `..` and hold no
/// control character: a file-backed server maps keys to paths, and a key
/// that names a parent there would name something ioscale did not make.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    bucket: String,
    prefix: String,
}

/// Why a string is not an `s3://BUCKET/PREFIX` target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetError {
    /// The string as given.
    pub given: String,
    /// What is wrong with it, in words.
    pub reason: String,
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.given, self.reason)
    }
}

impl std::error::Error for TargetError {}

impl Target {
    /// Whether `s` is meant as an object-store target (it starts with
    /// `s3://`), whether or not it is a valid one.
    pub fn is_s3(s: &str) -> bool {
        s.starts_with("s3://")
    }

    /// Parses `s3://BUCKET` or `s3://BUCKET/PREFIX` (a trailing `/` is
    /// allowed).
    pub fn parse(s: &str) -> Result<Target, TargetError> {
        let fail = |reason: &str| TargetError {
            given: s.to_string(),
            reason: reason.to_string(),
        };
        let rest = s
            .strip_prefix("s3://")
            .ok_or_else(|| fail("not an s3://BUCKET/PREFIX URL"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        check_bucket(bucket).map_err(|r| fail(&r))?;
        let prefix = prefix.trim_end_matches('/');
        if !prefix.is_empty() {
            check_prefix(prefix).map_err(|r| fail(&r))?;
        }
        Ok(Target {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        })
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The key prefix, without leading or trailing `/` (empty: the
    /// bucket's root).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The key of `name` under the prefix (`PREFIX/name`, or `name` at
    /// the bucket's root).
    pub fn key(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_string()
        } else {
            let mut k = String::with_capacity(self.prefix.len() + 1 + name.len());
            k.push_str(&self.prefix);
            k.push('/');
            k.push_str(name);
            k
        }
    }

    /// The target one level down: `PREFIX/name`. `name` is checked as a
    /// prefix segment path is.
    pub fn child(&self, name: &str) -> Result<Target, TargetError> {
        let prefix = self.key(name.trim_end_matches('/'));
        check_prefix(&prefix).map_err(|reason| TargetError {
            given: format!("s3://{}/{}", self.bucket, prefix),
            reason,
        })?;
        Ok(Target {
            bucket: self.bucket.clone(),
            prefix,
        })
    }

    /// The URL of `key` in this target's bucket (for messages).
    pub fn url_of(&self, key: &str) -> String {
        format!("s3://{}/{}", self.bucket, key)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.prefix.is_empty() {
            write!(f, "s3://{}", self.bucket)
        } else {
            write!(f, "s3://{}/{}", self.bucket, self.prefix)
        }
    }
}

/// A bucket name S3 can hold: 3 to 63 letters, digits, `.`, `-` (and `_`
/// or capitals, which old buckets and other stores allow), starting and
/// ending with a letter or digit.
fn check_bucket(b: &str) -> Result<(), String> {
    if b.is_empty() {
        return Err("no bucket: write s3://BUCKET/PREFIX".into());
    }
    if b.len() < 3 || b.len() > 63 {
        return Err(format!("bucket name {b:?} is not 3 to 63 characters"));
    }
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
    if let Some(c) = b.chars().find(|&c| !ok(c)) {
        return Err(format!("bucket name {b:?} holds {c:?}"));
    }
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !edge(b.chars().next()) || !edge(b.chars().last()) || b.contains("..") {
        return Err(format!(
            "bucket name {b:?} must start and end with a letter or digit, without \"..\""
        ));
    }
    Ok(())
}

/// A key prefix: segments that are not empty, `.` or `..`, with no
/// control character, short enough to leave room for ioscale's names.
fn check_prefix(p: &str) -> Result<(), String> {
    if p.starts_with('/') {
        return Err("the prefix starts with '/' (an empty segment)".into());
    }
    if p.len() > MAX_KEY_LEN / 2 {
        return Err(format!(
            "the prefix is {} bytes; at most {} leave room for ioscale's keys",
            p.len(),
            MAX_KEY_LEN / 2
        ));
    }
    if p.chars().any(|c| c.is_control()) {
        return Err("the prefix holds a control character".into());
    }
    for seg in p.split('/') {
        if seg.is_empty() || seg == "." || seg == ".." {
            return Err(format!("the prefix has a segment {seg:?}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bucket_and_prefix() {
        let t = Target::parse("s3://bench-1/runs/a/").unwrap();
        assert_eq!(t.bucket(), "bench-1");
        assert_eq!(t.prefix(), "runs/a");
        assert_eq!(t.key("ioscale.d"), "runs/a/ioscale.d");
        assert_eq!(t.to_string(), "s3://bench-1/runs/a");
        let root = Target::parse("s3://bench-1").unwrap();
        assert_eq!(root.prefix(), "");
        assert_eq!(root.key("x"), "x");
        assert_eq!(root.to_string(), "s3://bench-1");
        assert_eq!(Target::parse("s3://bench-1/").unwrap(), root);
        let c = root.child("ioscale.d/").unwrap();
        assert_eq!(c.prefix(), "ioscale.d");
    }

    #[test]
    fn refuses_what_could_escape_or_confuse() {
        for bad in [
            "/tmp/x",
            "s3://",
            "s3:///p",
            "s3://ab/p",
            "s3://-abc/p",
            "s3://abc-/p",
            "s3://a..b/p",
            "s3://a/b/p",
            "s3://abc//p",
            "s3://abc/p//q",
            "s3://abc/p/../q",
            "s3://abc/./q",
            "s3://abc/..",
            "s3://abc/p\nq",
            "s3://ab c/p",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad} accepted");
        }
        let long = format!("s3://abc/{}", "x".repeat(MAX_KEY_LEN));
        assert!(Target::parse(&long).is_err());
        let root = Target::parse("s3://abc").unwrap();
        assert!(root.child("..").is_err());
        assert!(root.child("").is_err());
        assert!(Target::is_s3("s3://x") && !Target::is_s3("/s3://x"));
    }
}
