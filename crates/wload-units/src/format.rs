//! Number formatting shared by the summary and progress lines, in k6's
//! style: `1.23ms`, `523.4µs`, `1.2 MB`, `1m30s`.

use std::time::Duration;

/// A duration given in milliseconds, with up to two decimals.
pub fn millis(ms: f64) -> String {
    if ms == 0.0 {
        return "0s".to_owned();
    }
    let abs = ms.abs();
    let (value, unit) = if abs < 1e-3 {
        (ms * 1e6, "ns")
    } else if abs < 1.0 {
        (ms * 1e3, "µs")
    } else if abs < 1000.0 {
        (ms, "ms")
    } else if abs < 60_000.0 {
        (ms / 1000.0, "s")
    } else {
        let total_s = ms / 1000.0;
        let m = (total_s / 60.0).floor();
        return format!("{m}m{}s", trim(total_s - m * 60.0, 1));
    };
    format!("{}{unit}", trim(value, 2))
}

/// `30s`, `1m30s`, `1h0m0s`, `500ms`: for configured durations.
pub fn duration_short(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 && ms > 0 && d.as_secs() == 0 {
        return format!("{ms}ms");
    }
    // Below a millisecond (a timeUnit of 1ns is valid), not "0s".
    if ms == 0 && !d.is_zero() {
        let ns = d.as_nanos();
        return if ns.is_multiple_of(1000) {
            format!("{}µs", ns / 1000)
        } else {
            format!("{ns}ns")
        };
    }
    let s = d.as_secs_f64();
    let h = (s / 3600.0).floor();
    let m = ((s - h * 3600.0) / 60.0).floor();
    let rest = s - h * 3600.0 - m * 60.0;
    match (h > 0.0, m > 0.0) {
        (true, _) => format!("{h}h{m}m{}s", trim(rest, 1)),
        (false, true) => format!("{m}m{}s", trim(rest, 1)),
        _ => format!("{}s", trim(rest, 1)),
    }
}

/// A rate's unit: `s` for one second, else the duration (`1m`, `500ms`).
pub fn per_unit(unit: Duration) -> String {
    match unit.as_secs_f64() {
        1.0 => "s".to_owned(),
        60.0 => "m".to_owned(),
        3600.0 => "h".to_owned(),
        _ => duration_short(unit),
    }
}

/// Bytes in SI units, as k6 prints them.
pub fn bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut v = n;
    let mut unit = 0;
    while v.abs() >= 1000.0 && unit < UNITS.len() - 1 {
        v /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{} {}", v.round(), UNITS[0])
    } else {
        format!("{} {}", trim(v, 1), UNITS[unit])
    }
}

/// A plain number: integers as such, others with up to `decimals`.
pub fn number(v: f64, decimals: usize) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        trim(v, decimals)
    }
}

/// `v` with at most `decimals` decimals, trailing zeros removed.
pub fn trim(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_k6() {
        assert_eq!(millis(0.0), "0s");
        assert_eq!(millis(1.2345), "1.23ms");
        assert_eq!(millis(0.5234), "523.4µs");
        assert_eq!(millis(0.0001), "100ns");
        assert_eq!(millis(1500.0), "1.5s");
        assert_eq!(millis(90_000.0), "1m30s");
        assert_eq!(duration_short(Duration::from_secs(30)), "30s");
        assert_eq!(duration_short(Duration::from_nanos(1)), "1ns");
        assert_eq!(duration_short(Duration::from_micros(250)), "250µs");
        assert_eq!(duration_short(Duration::ZERO), "0s");
        assert_eq!(duration_short(Duration::from_secs(90)), "1m30s");
        assert_eq!(duration_short(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(duration_short(Duration::from_millis(250)), "250ms");
        assert_eq!(bytes(999.0), "999 B");
        assert_eq!(bytes(1234.0), "1.2 kB");
        assert_eq!(bytes(5_600_000.0), "5.6 MB");
        assert_eq!(number(3.0, 2), "3");
        assert_eq!(number(2.345, 2), "2.35");
    }
}
