//! The threshold parsers: expressions (`p(95)<200`), metric keys with
//! tag filters (`checks{check:login ok}`) and the long form's object,
//! from arbitrary text and arbitrary JSON.
//!
//! Input: UTF-8 text. Whole, it is an expression and JSON; its first line
//! is also tried as a key and the rest as an expression under it.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use wload_metrics::threshold::{Stat, parse_all, parse_expr};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok((stat, _, _)) = parse_expr(text)
        && let Stat::Percentile(p) = stat
    {
        assert!((0.0..=100.0).contains(&p), "percentile {p} out of range");
    }
    let (key, expr) = text.split_once('\n').unwrap_or((text, "p(95)<200"));
    let mut errors = Vec::new();
    let long = json!({ "threshold": expr, "abortOnFail": true, "delayAbortEval": expr });
    let parsed = parse_all(&json!({ key: [expr, long] }), &mut errors);
    // Each item parses or is reported (or the key is, once); none
    // vanishes.
    let accounted = parsed.len() + errors.len() == 2 || (parsed.is_empty() && errors.len() == 1);
    assert!(accounted, "{parsed:?} {errors:?}");
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        let _ = parse_all(&value, &mut errors);
        let _ = parse_all(&json!({ "m": value }), &mut errors);
    }
});
