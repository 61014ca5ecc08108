//! Parsers for the flag values: sizes and rates (`4k`, `100m`, `1MiB`,
//! `1MB`) and durations (`2ms`, `500us`, `1.5s`).
//!
//! The size rules match ioscale's own (k/m/g are powers of 1024, as IOR and
//! dd use them; a `B` after a decimal prefix means powers of 1000), so a
//! figure typed for one tool means the same to the other. They are kept
//! here rather than borrowed from ioscale's spec crate so the test file
//! system builds and changes on its own.

use std::time::Duration;

/// Parses a byte count: `512`, `4k`, `64K`, `1m`, `2g`, `1t`, `1KiB`,
/// `1MiB`, `1KB` (10^3), `1MB` (10^6), `1GB` (10^9).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(format!(
            "'{s}' is not a size (use a number with an optional unit: 512, 4k, 1m, 2g, 1MiB, 1MB)"
        ));
    }
    let mult: u64 = match unit.trim() {
        "" | "b" | "B" => 1,
        "k" | "K" | "KiB" | "kib" => 1 << 10,
        "m" | "M" | "MiB" | "mib" => 1 << 20,
        "g" | "G" | "GiB" | "gib" => 1 << 30,
        "t" | "T" | "TiB" | "tib" => 1 << 40,
        "KB" | "kB" | "kb" => 1_000,
        "MB" | "mb" => 1_000_000,
        "GB" | "gb" => 1_000_000_000,
        "TB" | "tb" => 1_000_000_000_000,
        other => {
            return Err(format!(
                "'{s}': unknown unit '{other}' (use k, m, g, t, KiB, MiB, GiB, KB, MB, GB)"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (use 512, 4k, 1m, 2g, 1MiB, 1MB)"))?;
    let bytes = v * mult as f64;
    if !bytes.is_finite() || bytes > u64::MAX as f64 {
        return Err(format!("'{s}' is too large"));
    }
    Ok(bytes.round() as u64)
}

/// Parses a rate in bytes per second: a size, optionally followed by `/s`
/// (`100m`, `100m/s`, `20MiB/s`). Zero is refused: it would stop all I/O.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    let v = parse_size(t)?;
    if v == 0 {
        return Err(format!("'{s}': a bandwidth cap must be above 0"));
    }
    Ok(v)
}

/// Parses a duration: `0`, `250us`, `2ms`, `1.5s`, `1m` (a minute) ; a bare
/// number other than 0 is refused, because the unit is not obvious.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "" => {
            return Err(format!(
                "'{s}' has no unit (write 2ms, 500us, 1s; 0 needs none)"
            ))
        }
        other => {
            return Err(format!(
                "'{s}': unknown unit '{other}' (use ns, us, ms, s, m)"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (use 2ms, 500us, 1.5s)"))?;
    let secs = v * scale;
    if !secs.is_finite() || !(0.0..=86_400.0 * 365.0).contains(&secs) {
        return Err(format!("'{s}' is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512").unwrap(), 512);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("1MB").unwrap(), 1_000_000);
        assert_eq!(parse_size("2g").unwrap(), 2 << 30);
        assert_eq!(parse_size("1.5k").unwrap(), 1536);
        assert!(parse_size("").is_err());
        assert!(parse_size("k").is_err());
        assert!(parse_size("4q").is_err());
        assert!(parse_size("-1").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100m").unwrap(), 100 << 20);
        assert_eq!(parse_rate("20MiB/s").unwrap(), 20 << 20);
        assert!(parse_rate("0").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("2ms").unwrap(), Duration::from_millis(2));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5h").is_err());
        assert!(parse_duration("-1ms").is_err());
    }
}
