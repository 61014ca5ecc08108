//! HTTP dates (`Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110's
//! IMF-fixdate, the only form S3 sends) read as seconds since the epoch,
//! so an object's modification time is the store's, not a placeholder.

/// Seconds since the epoch of an IMF-fixdate, or `None` when `text` is
/// not one (another form, a field out of range).
pub(crate) fn parse(text: &str) -> Option<i64> {
    let mut f = text.split_ascii_whitespace();
    let (_weekday, day, month, year, clock, zone) = (
        f.next()?,
        f.next()?,
        f.next()?,
        f.next()?,
        f.next()?,
        f.next()?,
    );
    if zone != "GMT" || f.next().is_some() || day.len() != 2 || year.len() != 4 {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == month)? as i64 + 1;
    let day: i64 = day.parse().ok()?;
    let year: i64 = year.parse().ok()?;
    let mut hms = clock.split(':');
    let mut part = |max: i64| -> Option<i64> {
        let p = hms.next()?;
        let v: i64 = (p.len() == 2).then(|| p.parse().ok())??;
        (0..=max).contains(&v).then_some(v)
    };
    let (h, m, s) = (part(23)?, part(59)?, part(60)?);
    if hms.next().is_some() || !(1..=days_in(year, month)).contains(&day) {
        return None;
    }
    Some(days_from_epoch(year, month, day) * 86_400 + h * 3600 + m * 60 + s)
}

fn days_in(year: i64, month: i64) -> i64 {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the date (proleptic Gregorian), counted in
/// eras of 400 years from a year that starts in March.
fn days_from_epoch(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn reads_imf_fixdates_and_refuses_the_rest() {
        assert_eq!(parse("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(parse("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
        assert_eq!(parse("Tue, 29 Feb 2000 12:00:00 GMT"), Some(951_825_600));
        assert_eq!(parse("Sat, 28 Nov 2026 10:16:47 GMT"), Some(1_795_861_007));
        assert_eq!(parse("Wed, 31 Dec 1969 23:59:59 GMT"), Some(-1));
        for bad in [
            "",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Mon, 29 Feb 2021 00:00:00 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT extra",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
