//! Durations as k6 writes them, parsed in one place for every layer that
//! reads them: flags (`--duration 1m30s`), options objects (`"30s"` or a
//! number of milliseconds), thresholds (`delayAbortEval`).

use std::time::Duration;

use serde_json::Value;

/// The longest duration accepted: Go's `time.Duration` (k6's) is an i64
/// of nanoseconds, about 292 years. Past it, k6 refuses the option; here
/// `Duration::from_secs_f64` would panic past `u64::MAX` seconds, and the
/// run's sums of durations (start time + duration + graceful stop) could
/// overflow. Bounded so, sums of durations fit a `Duration` (u64
/// seconds) until there are billions of them.
const MAX_DURATION: Duration = Duration::from_nanos(i64::MAX as u64);

/// `secs` as a duration, when it is one a run can hold.
fn bounded(secs: f64) -> Option<Duration> {
    (secs >= 0.0)
        .then(|| Duration::try_from_secs_f64(secs).ok())
        .flatten()
        .filter(|d| *d <= MAX_DURATION)
}

/// Parse a k6 duration: `"30s"`, `"1m30s"`, `"1h"`, `"500ms"`, `"1.5s"`,
/// or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    let err = || {
        format!("invalid duration {text:?}: expected e.g. \"30s\", \"1m30s\", \"500ms\" or \"2h\"")
    };
    if s.is_empty() {
        return Err(err());
    }
    if let Ok(secs) = s.parse::<f64>() {
        return bounded(secs).ok_or_else(err);
    }
    let mut total = 0.0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(err)?;
        if num_len == 0 {
            return Err(err());
        }
        let value: f64 = rest[..num_len].parse().map_err(|_| err())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return Err(err()),
        };
        total += value * factor;
        rest = &rest[unit_len..];
    }
    bounded(total).ok_or_else(err)
}

/// A k6 duration value: a string (`"30s"`) or milliseconds.
pub fn duration_value(v: &Value) -> Result<Duration, String> {
    match v {
        Value::String(s) => parse_duration(s),
        Value::Number(n) => match n.as_f64() {
            Some(ms) => bounded(ms / 1000.0).ok_or_else(|| {
                format!(
                    "invalid duration {n}: milliseconds must be at least 0 and at most 292 years"
                )
            }),
            None => Err(format!(
                "invalid duration {n}: milliseconds must be at least 0"
            )),
        },
        other => Err(format!(
            "invalid duration {other}: expected e.g. \"30s\" or a number of milliseconds"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_k6() {
        let ok = |s: &str| parse_duration(s).unwrap();
        assert_eq!(ok("30s"), Duration::from_secs(30));
        assert_eq!(ok("1m30s"), Duration::from_secs(90));
        assert_eq!(ok("1h"), Duration::from_secs(3600));
        assert_eq!(ok("500ms"), Duration::from_millis(500));
        assert_eq!(ok("1.5s"), Duration::from_millis(1500));
        assert_eq!(ok("10"), Duration::from_secs(10));
        for bad in ["", "10x", "s", "-1s", "1m-2s", "abc"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    /// Seen while writing the `options` fuzz target: past `u64::MAX` seconds,
    /// `Duration::from_secs_f64` panicked (`--duration 1e20`).
    #[test]
    fn durations_longer_than_k6_allows_are_errors_not_panics() {
        for huge in [
            "1e20",
            "99999999999999999999999h",
            "300000000000",
            "2562048h",
        ] {
            assert!(parse_duration(huge).is_err(), "{huge}");
        }
        assert!(duration_value(&serde_json::json!(1e300)).is_err());
        assert!(duration_value(&serde_json::json!(u64::MAX)).is_err());
        // The limit itself (2562047h47m16.854775807s, as Go prints it) holds.
        assert_eq!(
            parse_duration("2562047h"),
            Ok(Duration::from_secs(2_562_047 * 3600))
        );
        assert!(duration_value(&serde_json::json!(9_223_372_036_854u64)).is_ok());
    }
}
