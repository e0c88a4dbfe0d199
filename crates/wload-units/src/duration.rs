//! Durations as k6 writes them, parsed in one place for every layer that
//! reads them: flags (`--duration 1m30s`), options objects (`"30s"` or a
//! number of milliseconds), thresholds (`delayAbortEval`).

use std::time::Duration;

use serde_json::Value;

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
        return if secs >= 0.0 && secs.is_finite() {
            Ok(Duration::from_secs_f64(secs))
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
        total += value * factor;
        rest = &rest[unit_len..];
    }
    Ok(Duration::from_secs_f64(total))
}

/// A k6 duration value: a string (`"30s"`) or milliseconds.
pub fn duration_value(v: &Value) -> Result<Duration, String> {
    match v {
        Value::String(s) => parse_duration(s),
        Value::Number(n) => match n.as_f64() {
            Some(ms) if ms >= 0.0 && ms.is_finite() => Ok(Duration::from_secs_f64(ms / 1000.0)),
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
}
