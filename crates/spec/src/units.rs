//! Sizes, durations and value lists as users type them.
//!
//! Storage people arrive with IOR and dd habits, where `1m` means a mebibyte,
//! so the short suffixes are binary. The explicit SI spellings (`MB`) are
//! decimal because that is what they say. Every parser here returns an error
//! that names the offending text instead of guessing.

use std::time::Duration;

use thiserror::Error;

/// Why a size, duration or list could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UnitError {
    /// The text was empty.
    #[error("empty value")]
    Empty,
    /// A negative number was given where only counts and sizes make sense.
    #[error("'{0}' is negative; sizes and counts must be positive")]
    Negative(String),
    /// The number part could not be read.
    #[error("'{0}' is not a number")]
    NotANumber(String),
    /// The suffix is not one ioscale knows.
    #[error("'{text}' has an unknown unit '{unit}' (use k, m, g, t, KiB, MiB, GiB, KB, MB, GB)")]
    UnknownUnit {
        /// The whole value as typed.
        text: String,
        /// The suffix that was not understood.
        unit: String,
    },
    /// The duration suffix is not one ioscale knows.
    #[error("'{text}' has an unknown time unit '{unit}' (use ms, s, m, h)")]
    UnknownTimeUnit {
        /// The whole value as typed.
        text: String,
        /// The suffix that was not understood.
        unit: String,
    },
    /// The value does not fit in 64 bits.
    #[error("'{0}' is too large")]
    Overflow(String),
    /// A fractional size did not come out as a whole number of bytes.
    #[error("'{0}' is not a whole number of bytes")]
    Fractional(String),
    /// A range such as `1..64x2` was malformed.
    #[error(
        "'{0}' is not a valid range (write it as START..END or START..ENDxFACTOR, e.g. 1..64x2)"
    )]
    BadRange(String),
    /// A list or range gives more values than a list takes.
    #[error("'{0}' gives more than {MAX_LIST} values")]
    TooMany(String),
}

/// The most values [`parse_list`] gives: a range that would give more is
/// refused as it is expanded, before it takes memory.
pub const MAX_LIST: usize = 1_000_000;

/// `text` trimmed, split into its number (digits and dots) and the unit
/// after it; empty and negative values are refused.
fn number_and_unit(text: &str) -> Result<(&str, &str, &str), UnitError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(UnitError::Empty);
    }
    if t.starts_with('-') {
        return Err(UnitError::Negative(t.to_string()));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    Ok((t, num, unit))
}

/// Parses a byte size: `4096`, `4k`, `1m`, `2g`, `1MiB`, `1MB`, `1.5g`.
///
/// `k`, `m`, `g`, `t` (and `KiB`…`TiB`) are powers of 1024, as in IOR and
/// dd; `KB`, `MB`, `GB`, `TB` are powers of 1000. A trailing `b`/`B` on its
/// own means bytes.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let (t, num, unit) = number_and_unit(text)?;
    if num.is_empty() || num == "." {
        return Err(UnitError::NotANumber(t.to_string()));
    }
    let mult: u64 = match unit {
        "" | "b" | "B" => 1,
        "k" | "K" | "KiB" | "kiB" | "kib" | "KIB" => 1 << 10,
        "m" | "M" | "MiB" | "mib" | "MIB" => 1 << 20,
        "g" | "G" | "GiB" | "gib" | "GIB" => 1 << 30,
        "t" | "T" | "TiB" | "tib" | "TIB" => 1 << 40,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => {
            return Err(UnitError::UnknownUnit {
                text: t.to_string(),
                unit: unit.to_string(),
            })
        }
    };
    if let Some((int, frac)) = num.split_once('.') {
        // Fractions are computed exactly in integers so `1.5g` is exact.
        if frac.contains('.') {
            return Err(UnitError::NotANumber(t.to_string()));
        }
        let int_v: u64 = if int.is_empty() {
            0
        } else {
            int.parse()
                .map_err(|_| UnitError::Overflow(t.to_string()))?
        };
        let digits = frac.len() as u32;
        if digits > 12 {
            return Err(UnitError::NotANumber(t.to_string()));
        }
        let frac_v: u128 = if frac.is_empty() {
            0
        } else {
            frac.parse()
                .map_err(|_| UnitError::NotANumber(t.to_string()))?
        };
        let scale = 10u128.pow(digits);
        let whole = (int_v as u128)
            .checked_mul(mult as u128)
            .ok_or_else(|| UnitError::Overflow(t.to_string()))?;
        let part = frac_v * mult as u128;
        if !part.is_multiple_of(scale) {
            return Err(UnitError::Fractional(t.to_string()));
        }
        let total = whole + part / scale;
        u64::try_from(total).map_err(|_| UnitError::Overflow(t.to_string()))
    } else {
        let v: u64 = num
            .parse()
            .map_err(|_| UnitError::Overflow(t.to_string()))?;
        v.checked_mul(mult)
            .ok_or_else(|| UnitError::Overflow(t.to_string()))
    }
}

/// Parses a duration: `30` or `30s`, `500ms`, `2m`, `1h`, `1.5s`.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let (t, num, unit) = number_and_unit(text)?;
    let v: f64 = num
        .parse()
        .map_err(|_| UnitError::NotANumber(t.to_string()))?;
    let secs = match unit {
        "" | "s" | "sec" => v,
        "ms" => v / 1e3,
        "us" => v / 1e6,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => {
            return Err(UnitError::UnknownTimeUnit {
                text: t.to_string(),
                unit: unit.to_string(),
            })
        }
    };
    if !secs.is_finite() || secs > 1e9 {
        return Err(UnitError::Overflow(t.to_string()));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a list of values: `1,2,4`, a doubling range `1..64x2`, or a
/// stepped range `1..13` (step 1) / `4..16+4` (step 4); parts may be mixed:
/// `1,2,4..16x2`.
///
/// `item` parses one value (a count or a size), so `4k..1mx2` works too.
pub fn parse_list<F>(text: &str, item: F) -> Result<Vec<u64>, UnitError>
where
    F: Fn(&str) -> Result<u64, UnitError>,
{
    let t = text.trim();
    if t.is_empty() {
        return Err(UnitError::Empty);
    }
    let mut out = Vec::new();
    for part in t.split(',') {
        let part = part.trim();
        if let Some((start, rest)) = part.split_once("..") {
            let start = item(start)?;
            let (end, step) = if let Some((end, f)) = rest.rsplit_once('x') {
                (end, Step::Mul(f))
            } else if let Some((end, s)) = rest.rsplit_once('+') {
                (end, Step::Add(s))
            } else {
                (rest, Step::Add("1"))
            };
            let end = item(end)?;
            if end < start {
                return Err(UnitError::BadRange(part.to_string()));
            }
            // The step from one value to the next: a factor or an addend.
            let (by, mul) = match step {
                Step::Mul(f) => {
                    let f: u64 = f
                        .parse()
                        .map_err(|_| UnitError::BadRange(part.to_string()))?;
                    if f < 2 || start == 0 {
                        return Err(UnitError::BadRange(part.to_string()));
                    }
                    (f, true)
                }
                Step::Add(s) => {
                    let s = item(s).map_err(|_| UnitError::BadRange(part.to_string()))?;
                    if s == 0 {
                        return Err(UnitError::BadRange(part.to_string()));
                    }
                    (s, false)
                }
            };
            let mut v = start;
            while v <= end {
                push(&mut out, v, t)?;
                let next = if mul {
                    v.checked_mul(by)
                } else {
                    v.checked_add(by)
                };
                v = match next {
                    Some(n) => n,
                    None => break,
                };
            }
        } else {
            push(&mut out, item(part)?, t)?;
        }
    }
    Ok(out)
}

/// Adds `v` to the list `text` gives, refusing the value past [`MAX_LIST`].
fn push(out: &mut Vec<u64>, v: u64, text: &str) -> Result<(), UnitError> {
    if out.len() >= MAX_LIST {
        return Err(UnitError::TooMany(text.to_string()));
    }
    out.push(v);
    Ok(())
}

enum Step<'a> {
    Mul(&'a str),
    Add(&'a str),
}

/// Parses a plain count (`8`, `1k` is not a count), rejecting negatives
/// with a message that says so.
pub fn parse_count(text: &str) -> Result<u64, UnitError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(UnitError::Empty);
    }
    if t.starts_with('-') {
        return Err(UnitError::Negative(t.to_string()));
    }
    if !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(UnitError::NotANumber(t.to_string()));
    }
    t.parse().map_err(|_| UnitError::Overflow(t.to_string()))
}

/// Formats bytes the way the tables print them: `4 KiB`, `1 MiB`, `2.5 GiB`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if (v - v.round()).abs() < 1e-9 {
        format!("{} {}", v.round() as u64, UNITS[i])
    } else {
        format!("{:.2} {}", v, UNITS[i])
    }
}

/// Serde for an optional duration as seconds (`30.5` or `null`), the form
/// the JSON records use for time limits and delays.
pub(crate) mod opt_secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(v: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let v: Option<f64> = Option::deserialize(d)?;
        // A limit past what a Duration holds (2^64-1 s rounds up as a
        // float) is as good as none: the longest Duration.
        Ok(v.filter(|x| x.is_finite() && *x >= 0.0)
            .map(|x| Duration::try_from_secs_f64(x).unwrap_or(Duration::MAX)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_binary_and_decimal() {
        assert_eq!(parse_size("512").unwrap(), 512);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("1MB").unwrap(), 1_000_000);
        assert_eq!(parse_size("1.5g").unwrap(), 3 << 29);
        assert_eq!(parse_size("64M").unwrap(), 64 << 20);
        assert_eq!(parse_size("256m").unwrap(), 256 << 20);
    }

    #[test]
    fn sizes_rejected() {
        assert!(matches!(parse_size(""), Err(UnitError::Empty)));
        assert!(matches!(parse_size("-4k"), Err(UnitError::Negative(_))));
        assert!(matches!(
            parse_size("4q"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(parse_size("k"), Err(UnitError::NotANumber(_))));
        assert!(matches!(
            parse_size("99999999999t"),
            Err(UnitError::Overflow(_))
        ));
        assert!(matches!(
            parse_size("18446744073709551616"),
            Err(UnitError::Overflow(_))
        ));
        assert!(matches!(parse_size("0.3"), Err(UnitError::Fractional(_))));
        assert!(parse_size("1..2").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("3 parsecs").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("1e400").is_err());
    }

    #[test]
    fn lists_and_ranges() {
        assert_eq!(parse_list("1,2,4", parse_count).unwrap(), vec![1, 2, 4]);
        assert_eq!(
            parse_list("1..64x2", parse_count).unwrap(),
            vec![1, 2, 4, 8, 16, 32, 64]
        );
        assert_eq!(parse_list("1..4", parse_count).unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(
            parse_list("4..16+4", parse_count).unwrap(),
            vec![4, 8, 12, 16]
        );
        assert_eq!(
            parse_list("4k..16kx2", parse_size).unwrap(),
            vec![4096, 8192, 16384]
        );
        assert!(parse_list("8..1", parse_count).is_err());
        assert!(parse_list("1..8x1", parse_count).is_err());
        assert!(parse_list("0..8x2", parse_count).is_err());
        // A range past the limit is refused as it grows, not once built.
        let e = parse_list(&format!("1..{}", u64::MAX), parse_count).unwrap_err();
        assert!(matches!(e, UnitError::TooMany(_)), "{e}");
        assert_eq!(
            parse_list("1..1000000", parse_count).unwrap().len(),
            MAX_LIST
        );
        let e = parse_list("1..1000000,7", parse_count).unwrap_err();
        assert_eq!(
            e.to_string(),
            "'1..1000000,7' gives more than 1000000 values"
        );
    }

    #[test]
    fn format() {
        assert_eq!(format_size(4096), "4 KiB");
        assert_eq!(format_size(3 << 29), "1.50 GiB");
    }

    proptest::proptest! {
        #[test]
        fn size_parser_never_panics(s in "\\PC{0,24}") {
            let _ = parse_size(&s);
            let _ = parse_duration(&s);
            let _ = parse_list(&s, parse_size);
        }

        #[test]
        fn size_roundtrip(v in 0u64..(1u64 << 40)) {
            proptest::prop_assert_eq!(parse_size(&v.to_string()).unwrap(), v);
            proptest::prop_assert_eq!(parse_size(&format!("{v}k")).unwrap(), v * 1024);
        }
    }
}
