//! Byte sizes as users write them (`64MiB`, `10MB`, `512KiB`, `1000`), for
//! limits given by flag, environment or options object, read in one place
//! so that every layer accepts the same spellings.

use serde_json::Value;

/// Parse a size: a whole number of bytes, or a number with a unit: `B`,
/// `kB`/`KB`, `MB`, `GB` (powers of 1000) or `KiB`, `MiB`, `GiB` (powers
/// of 1024). Fractions are allowed with a unit (`1.5MiB`).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let s = text.trim();
    let err = || format!("invalid size {text:?}: expected e.g. \"64MiB\", \"10MB\" or 1048576");
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = (&s[..split], s[split..].trim());
    if number.is_empty() {
        return Err(err());
    }
    let factor: u64 = match unit {
        "" | "B" => 1,
        "kB" | "KB" | "k" | "K" => 1000,
        "MB" | "M" => 1000 * 1000,
        "GB" | "G" => 1000 * 1000 * 1000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return Err(err()),
    };
    if let Ok(n) = number.parse::<u64>() {
        return n
            .checked_mul(factor)
            .ok_or_else(|| format!("invalid size {text:?}: too large"));
    }
    let n: f64 = number.parse().map_err(|_| err())?;
    let bytes = (n * factor as f64).round();
    // 2^64 as f64; anything at or past it does not fit.
    if !bytes.is_finite() || bytes >= 18_446_744_073_709_551_616.0 {
        return Err(format!("invalid size {text:?}: too large"));
    }
    Ok(bytes as u64)
}

/// A size in an options object: a number of bytes or a string for
/// [`parse_size`].
pub fn size_value(v: &Value) -> Result<u64, String> {
    match v {
        Value::String(s) => parse_size(s),
        Value::Number(n) => n
            .as_u64()
            .ok_or_else(|| format!("invalid size {n}: expected a whole number of bytes")),
        other => Err(format!(
            "invalid size {other}: expected e.g. \"64MiB\" or a number of bytes"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_decimal_and_binary_units() {
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("10MB"), Ok(10_000_000));
        assert_eq!(parse_size(" 512 KiB "), Ok(512 << 10));
        assert_eq!(parse_size("1.5MiB"), Ok(3 << 19));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        for bad in [
            "",
            "MiB",
            "12 parsecs",
            "-1",
            "1e3",
            "99999999999999999999GiB",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
        assert_eq!(size_value(&serde_json::json!(4096)), Ok(4096));
        assert_eq!(size_value(&serde_json::json!("4KiB")), Ok(4096));
        assert!(size_value(&serde_json::json!(-1)).is_err());
        assert!(size_value(&serde_json::json!(true)).is_err());
    }
}
