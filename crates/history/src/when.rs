//! Times in the history: every row's time is RFC 3339 in UTC to the
//! second (`2026-11-22T03:04:05Z`), the form a run record keeps, so rows
//! sort and compare as text. `--since` and `--until` take that form, any
//! RFC 3339 time with an offset, a date (`2026-11-22`, midnight UTC) or a
//! span back from now (`90m`, `24h`, `7d`, `2w`).

use jiff::{civil::Date, Span, Timestamp};

/// RFC 3339 UTC to the second.
pub fn format(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Now, as [`format`] writes it.
pub fn now() -> String {
    format(Timestamp::now())
}

/// A `--since`/`--until` value as a row time, spans counted back from
/// `now`.
pub fn parse(s: &str, now: Timestamp) -> Result<String, String> {
    let bad = || {
        format!(
            "{s:?}: give a time (2026-11-22T10:00:00Z), a date (2026-11-22) or a span back from now (90m, 24h, 7d, 2w)"
        )
    };
    let s = s.trim();
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (n, unit) = s.split_at(digits);
    if let (Ok(n), true) = (n.parse::<i64>(), ["m", "h", "d", "w"].contains(&unit)) {
        let hours = match unit {
            "d" => 24,
            "w" => 24 * 7,
            _ => 1,
        };
        let span = if unit == "m" {
            Span::new().try_minutes(n)
        } else {
            Span::new().try_hours(n.saturating_mul(hours))
        }
        .map_err(|_| bad())?;
        return now.checked_sub(span).map(format).map_err(|_| bad());
    }
    if let Ok(t) = s.parse::<Timestamp>() {
        return Ok(format(t));
    }
    if let Ok(d) = s.parse::<Date>() {
        let t = d
            .to_zoned(jiff::tz::TimeZone::UTC)
            .map_err(|_| bad())?
            .timestamp();
        return Ok(format(t));
    }
    Err(bad())
}

/// [`parse`] with spans counted back from now.
pub fn parse_now(s: &str) -> Result<String, String> {
    parse(s, Timestamp::now())
}

/// Seconds since 1970 of a row time; `None` when it is not one.
pub fn epoch_seconds(t: &str) -> Option<i64> {
    t.parse::<Timestamp>().ok().map(|t| t.as_second())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_dates_and_spans_become_row_times() {
        let now: Timestamp = "2026-11-22T10:00:00Z".parse().unwrap();
        assert_eq!(parse("7d", now).unwrap(), "2026-11-15T10:00:00Z");
        assert_eq!(parse("90m", now).unwrap(), "2026-11-22T08:30:00Z");
        assert_eq!(parse("2w", now).unwrap(), "2026-11-08T10:00:00Z");
        assert_eq!(parse("2026-11-01", now).unwrap(), "2026-11-01T00:00:00Z");
        assert_eq!(
            parse("2026-11-01T12:00:00+02:00", now).unwrap(),
            "2026-11-01T10:00:00Z"
        );
        for bad in ["", "yesterday", "7y", "d", "99999999999999999999d"] {
            assert!(parse(bad, now).is_err(), "{bad}");
        }
        assert_eq!(epoch_seconds("1970-01-01T00:01:00Z"), Some(60));
        assert_eq!(epoch_seconds("soon"), None);
    }
}
