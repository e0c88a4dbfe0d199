//! Points in wall-clock time, read and shown: `--start-at` takes one (so
//! that the shards of a distributed run begin together), and `wload
//! merge` shows when each shard began. RFC 3339 (`2026-12-01T14:30:00Z`,
//! with an optional fraction and a `Z` or `±hh:mm` offset) or unix
//! seconds (`1796135400`, `1796135400.25`): what `date -u +%FT%TZ` and
//! `date +%s` print, with no calendar library for this one format.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Parse an instant given as RFC 3339 or as unix seconds.
pub fn parse_instant(text: &str) -> Result<SystemTime, String> {
    let s = text.trim();
    let bad = |why: &str| {
        format!(
            "invalid time {text:?}: {why}; expected RFC 3339 (2026-12-01T14:30:00Z, \
             2026-12-01T15:30:00.250+01:00) or unix seconds (1796135400)"
        )
    };
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = s.parse().map_err(|_| bad("not a number"))?;
        return Duration::try_from_secs_f64(secs)
            .ok()
            .and_then(|d| UNIX_EPOCH.checked_add(d))
            .ok_or_else(|| bad("out of range"));
    }
    let b = s.as_bytes();
    let digits = |from: usize, n: usize| -> Result<i64, String> {
        let part = s.get(from..from + n).ok_or_else(|| bad("too short"))?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad(&format!("{part:?} is not a number")));
        }
        part.parse().map_err(|_| bad("not a number"))
    };
    let sep = |at: usize, allowed: &[u8]| -> Result<(), String> {
        match b.get(at) {
            Some(c) if allowed.contains(c) => Ok(()),
            _ => Err(bad("not of the form YYYY-MM-DDTHH:MM:SS")),
        }
    };
    let year = digits(0, 4)?;
    sep(4, b"-")?;
    let month = digits(5, 2)?;
    sep(7, b"-")?;
    let day = digits(8, 2)?;
    sep(10, b"Tt ")?;
    let hour = digits(11, 2)?;
    sep(13, b":")?;
    let minute = digits(14, 2)?;
    sep(16, b":")?;
    let second = digits(17, 2)?;
    let mut at = 19;
    let mut nanos = 0u32;
    if b.get(at) == Some(&b'.') {
        let end = s[at + 1..]
            .find(|c: char| !c.is_ascii_digit())
            .map_or(s.len(), |i| at + 1 + i);
        let frac = &s[at + 1..end];
        if frac.is_empty() {
            return Err(bad("a '.' without digits"));
        }
        // Nanoseconds: the first nine digits, the rest dropped.
        let nine: String = frac.chars().chain(std::iter::repeat('0')).take(9).collect();
        nanos = nine.parse().map_err(|_| bad("not a number"))?;
        at = end;
    }
    let offset_secs = match s.get(at..) {
        Some("Z" | "z") => 0,
        Some(off) if off.len() == 6 && (off.starts_with('+') || off.starts_with('-')) => {
            sep(at + 3, b":")?;
            let (h, m) = (digits(at + 1, 2)?, digits(at + 4, 2)?);
            if h > 23 || m > 59 {
                return Err(bad("offset out of range"));
            }
            let sign = if off.starts_with('-') { -1 } else { 1 };
            sign * (h * 3600 + m * 60)
        }
        _ => return Err(bad("needs a time zone: Z or ±hh:mm")),
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&month)
        || day < 1
        || day > month_days[(month - 1) as usize]
        || hour > 23
        || minute > 59
        || second > 60
    {
        return Err(bad("a field is out of range"));
    }
    // A leap second reads as the next second's start.
    let local = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    let unix = local - offset_secs;
    let secs = u64::try_from(unix).map_err(|_| bad("before 1970"))?;
    UNIX_EPOCH
        .checked_add(Duration::new(secs, nanos))
        .ok_or_else(|| bad("out of range"))
}

/// `2026-12-01T14:30:00.250Z`: UTC, to the millisecond.
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, day) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm, exact for every year).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unix(t: SystemTime) -> f64 {
        t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
    }

    #[test]
    fn rfc3339_and_unix_seconds_name_the_same_instants() {
        // `date -u -d @1796135400 +%FT%TZ` prints 2026-12-01T14:30:00Z.
        let t = parse_instant("2026-12-01T14:30:00Z").unwrap();
        assert_eq!(unix(t), 1_796_135_400.0);
        assert_eq!(parse_instant("1796135400").unwrap(), t);
        assert_eq!(parse_instant("2026-12-01T15:30:00+01:00").unwrap(), t);
        assert_eq!(parse_instant("2026-12-01 09:30:00-05:00").unwrap(), t);
        let frac = parse_instant("2026-12-01T14:30:00.25Z").unwrap();
        assert_eq!(frac.duration_since(t).unwrap(), Duration::from_millis(250));
        assert_eq!(parse_instant("1796135400.25").unwrap(), frac);
        assert_eq!(
            parse_instant("2024-02-29T00:00:00Z").map(unix),
            Ok(1_709_164_800.0)
        );
        assert_eq!(parse_instant("1970-01-01T00:00:00Z").map(unix), Ok(0.0));
        assert_eq!(rfc3339(frac), "2026-12-01T14:30:00.250Z");
        assert_eq!(
            rfc3339(parse_instant("2000-03-01T00:00:00Z").unwrap()),
            "2000-03-01T00:00:00.000Z"
        );
    }

    #[test]
    fn malformed_times_are_refused_with_the_reason() {
        for (text, why) in [
            ("", "too short"),
            ("2026-12-01T14:30:00", "needs a time zone"),
            ("2026-13-01T14:30:00Z", "out of range"),
            ("2023-02-29T00:00:00Z", "out of range"),
            ("2026-12-01T24:00:00Z", "out of range"),
            ("2026-12-01T14:30Z", "not of the form"),
            ("2026-12-01T14:30:00.Z", "without digits"),
            ("2026-12-01T14:30:00+1:00", "needs a time zone"),
            ("1969-12-31T23:59:59Z", "before 1970"),
            ("1e9", "too short"),
            ("tomorrow", "not a number"),
            ("1.2.3", "not a number"),
        ] {
            let err = parse_instant(text).unwrap_err();
            assert!(err.contains(why), "{text:?}: {err}");
        }
    }
}
