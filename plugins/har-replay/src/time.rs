//! The two kinds of time a recording and the parameters carry: HAR's
//! `startedDateTime` (ISO 8601 / RFC 3339 with a zone) and `think`'s
//! durations (k6's notation, as the engine reads `duration` parameters).
//! Small parsers of their own: a component carries its dependencies, and
//! per-VU cost grows with code size.

use std::time::Duration;

/// Milliseconds since the Unix epoch of `2026-01-01T10:00:00.123Z` or
/// `2026-01-01T11:00:00.123+01:00` (fraction optional, any precision).
pub fn parse_rfc3339_ms(text: &str) -> Result<f64, String> {
    let err = || "expected a date and time such as 2026-01-01T10:00:00.000Z".to_owned();
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return Err(err());
    }
    let num = |from: usize, len: usize| -> Result<i64, String> {
        text.get(from..from + len)
            .filter(|s| s.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|s| s.parse().ok())
            .ok_or_else(err)
    };
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    if b[13] != b':' || b[16] != b':' {
        return Err(err());
    }
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return Err(err());
    }
    let mut i = 19;
    let mut fraction = 0.0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return Err(err());
        }
        fraction = format!("0.{}", &text[start..i])
            .parse::<f64>()
            .map_err(|_| err())?;
    }
    let offset_minutes = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if i + 6 == b.len() && b[i + 3] == b':' => {
            let m = num(i + 1, 2)? * 60 + num(i + 4, 2)?;
            if *sign == b'-' { -m } else { m }
        }
        _ => return Err(err()),
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Ok(secs as f64 * 1000.0 + fraction * 1000.0)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2s`, `500ms`, `1m30s`, `1.5s`, `2h`, or a bare number of seconds: the
/// notation of the engine's `duration` parameters, at most a day.
pub fn parse_duration(text: &str) -> Result<Duration, ()> {
    const MAX_SECS: f64 = 86_400.0;
    let s = text.trim();
    if s.is_empty() {
        return Err(());
    }
    let secs = if let Ok(secs) = s.parse::<f64>() {
        secs
    } else {
        let mut total = 0.0;
        let mut rest = s;
        while !rest.is_empty() {
            let n = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .filter(|&n| n > 0)
                .ok_or(())?;
            let value: f64 = rest[..n].parse().map_err(|_| ())?;
            rest = &rest[n..];
            let u = rest
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .unwrap_or(rest.len());
            total += value
                * match &rest[..u] {
                    "h" => 3600.0,
                    "m" => 60.0,
                    "s" => 1.0,
                    "ms" => 1e-3,
                    "us" | "µs" => 1e-6,
                    "ns" => 1e-9,
                    _ => return Err(()),
                };
            rest = &rest[u..];
        }
        total
    };
    if secs.is_finite() && (0.0..=MAX_SECS).contains(&secs) {
        Ok(Duration::from_nanos((secs * 1e9) as u64))
    } else {
        Err(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn har_times_are_read_with_their_zone() {
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:00Z"), Ok(0.0));
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:01.5Z"), Ok(1500.0));
        assert_eq!(
            parse_rfc3339_ms("2026-01-01T11:00:00.250+01:00"),
            parse_rfc3339_ms("2026-01-01T10:00:00.250Z")
        );
        // 2026-01-01 is day 20454 since the epoch.
        assert_eq!(
            parse_rfc3339_ms("2026-01-01T00:00:00Z"),
            Ok(20_454.0 * 86_400_000.0)
        );
        assert!(parse_rfc3339_ms("2026-01-01").is_err());
        assert!(parse_rfc3339_ms("2026-13-01T00:00:00Z").is_err());
        assert!(parse_rfc3339_ms("2026-01-01T00:00:00").is_err());
    }

    #[test]
    fn durations_use_k6_notation() {
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("2d").is_err());
    }
}
