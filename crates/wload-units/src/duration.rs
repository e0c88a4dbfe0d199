//! Durations as k6 writes them, parsed in one place for every layer that
//! reads them: flags (`--duration 1m30s`), options objects (`"30s"` or a
//! number of milliseconds), thresholds (`delayAbortEval`).
//!
//! Every duration read here is at most [`MAX_DURATION`], so that no later
//! conversion or sum of a few of them can overflow (and panic): one line
//! naming the value refuses anything longer.

use std::time::Duration;

use serde_json::Value;

/// The longest duration wload accepts anywhere: 100 years (876000h).
///
/// Why 100 years: it is far beyond any run, timeout or stop anyone means
/// (a longer value is a typo or "forever", and 100 years is forever), yet
/// within k6's own limit (Go's `time.Duration`, about 292 years), so a k6
/// options object k6 runs means the same here. And it keeps arithmetic on
/// configured durations safe: `startTime + duration + gracefulStop` of
/// three maximal values is 300 years, well inside `Duration` (u64
/// seconds) and even inside u64 nanoseconds (584 years), which the
/// metrics and the progress display count in.
pub const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// How [`MAX_DURATION`] is named in messages.
const MAX_TEXT: &str = "876000h (100 years)";

/// Seconds (finite, at least 0) as a [`Duration`], or the message for a
/// value longer than [`MAX_DURATION`]; `shown` is the value as the user
/// wrote it.
fn checked_secs(secs: f64, shown: &str) -> Result<Duration, String> {
    let too_long = || format!("invalid duration {shown}: longer than the maximum of {MAX_TEXT}");
    if secs > MAX_DURATION.as_secs_f64() {
        return Err(too_long());
    }
    // Cannot fail below the maximum; no panic either way.
    Duration::try_from_secs_f64(secs).map_err(|_| too_long())
}

/// Seconds computed by wload itself (an interval's start, a schedule's
/// offset) as a [`Duration`], saturating instead of panicking: below 0
/// and NaN give 0, beyond `Duration::MAX` gives `Duration::MAX`. For
/// values from the user, use [`parse_duration`] or [`duration_value`],
/// which refuse out-of-range values instead.
pub fn saturating_secs(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        Duration::ZERO
    } else {
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
    }
}

/// Parse a k6 duration: `"30s"`, `"1m30s"`, `"1h"`, `"500ms"`, `"1.5s"`,
/// or a bare number of seconds; at most [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    let shown = format!("{text:?}");
    let err = || {
        format!("invalid duration {text:?}: expected e.g. \"30s\", \"1m30s\", \"500ms\" or \"2h\"")
    };
    if s.is_empty() {
        return Err(err());
    }
    if let Ok(secs) = s.parse::<f64>() {
        // `inf` parses too, and is longer than the maximum.
        return if secs >= 0.0 {
            checked_secs(secs, &shown)
        } else {
            Err(err())
        };
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
        // Digits alone can be 1e308 and more; the sum may reach infinity,
        // which the maximum then refuses (never NaN: all terms are ≥ 0).
        total += value * factor;
        rest = &rest[unit_len..];
    }
    checked_secs(total, &shown)
}

/// A k6 duration value: a string (`"30s"`) or milliseconds; at most
/// [`MAX_DURATION`].
pub fn duration_value(v: &Value) -> Result<Duration, String> {
    match v {
        Value::String(s) => parse_duration(s),
        Value::Number(n) => match n.as_f64() {
            Some(ms) if ms >= 0.0 && ms.is_finite() => {
                checked_secs(ms / 1000.0, &format!("{n} (milliseconds)"))
            }
            _ => Err(format!(
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

    /// Values past the maximum, however written, are refused with one
    /// message naming them; they used to panic in `from_secs_f64`.
    #[test]
    fn durations_beyond_the_maximum_are_refused() {
        let huge = "9".repeat(400);
        for text in [
            "1e20".to_owned(),
            "1e300".to_owned(),
            "inf".to_owned(),
            "99999999999999999999h".to_owned(),
            format!("{huge}h"),
            format!("1h{huge}s"),
            "876001h".to_owned(),
        ] {
            let e = parse_duration(&text).unwrap_err();
            assert_eq!(
                e,
                format!(
                    "invalid duration {text:?}: longer than the maximum of 876000h (100 years)"
                )
            );
        }
        assert_eq!(
            duration_value(&serde_json::json!(1e300)).unwrap_err(),
            "invalid duration 1e+300 (milliseconds): longer than the maximum of 876000h (100 years)"
        );
        assert!(duration_value(&serde_json::json!("1e300")).is_err());
        assert_eq!(parse_duration("876000h"), Ok(MAX_DURATION));
        assert_eq!(
            duration_value(&serde_json::json!(MAX_DURATION.as_millis() as f64)),
            Ok(MAX_DURATION)
        );
        assert_eq!(parse_duration("-0"), Ok(Duration::ZERO));
        assert!(parse_duration("NaN").is_err());
    }

    #[test]
    fn computed_seconds_saturate() {
        assert_eq!(saturating_secs(1.5), Duration::from_millis(1500));
        assert_eq!(saturating_secs(-1.0), Duration::ZERO);
        assert_eq!(saturating_secs(f64::NAN), Duration::ZERO);
        assert_eq!(saturating_secs(1e300), Duration::MAX);
        assert_eq!(saturating_secs(f64::INFINITY), Duration::MAX);
    }
}
