//! Property tests of the threshold parsers, the suite's counterpart of
//! the `threshold` fuzz target (fuzz/, docs/fuzzing.md): arbitrary text
//! never panics them, and expressions and keys generated from the grammar
//! parse back to what generated them, however they are spaced.

use proptest::prelude::*;
use serde_json::json;
use wload_metrics::threshold::{Op, Stat, parse_all, parse_expr};

const OPS: [(&str, Op); 7] = [
    ("<", Op::Lt),
    ("<=", Op::Le),
    (">", Op::Gt),
    (">=", Op::Ge),
    ("==", Op::Eq),
    ("===", Op::Eq),
    ("!=", Op::Ne),
];

/// A statistic as written, and what it parses to.
fn stat() -> impl Strategy<Value = (String, Stat)> {
    let named = prop::sample::select(vec![
        ("avg", Stat::Avg),
        ("min", Stat::Min),
        ("max", Stat::Max),
        ("med", Stat::Med),
        ("count", Stat::Count),
        ("rate", Stat::Rate),
        ("value", Stat::Value),
    ])
    .prop_map(|(s, st)| (s.to_owned(), st));
    let percentile = prop_oneof![(0u32..=100).prop_map(f64::from), (0.0..=100.0f64),]
        .prop_map(|q| (format!("p({q})"), Stat::Percentile(q)));
    prop_oneof![named, percentile]
}

/// Spaces where the grammar allows them.
fn space() -> impl Strategy<Value = String> {
    "[ \t]{0,2}"
}

/// A finite number, as a test writes it.
fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        (-1_000_000i64..1_000_000).prop_map(|n| n as f64),
        any::<f64>().prop_filter("finite", |v| v.is_finite()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        let _ = parse_expr(&text);
        let mut errors = Vec::new();
        let _ = parse_all(&json!({ text.clone(): [text.clone()] }), &mut errors);
    }

    #[test]
    fn grammar_like_text_never_panics(text in "[a-z(){}:,.0-9<>=! \t-]{0,30}") {
        let _ = parse_expr(&text);
        let mut errors = Vec::new();
        let _ = parse_all(&json!({ text.clone(): text.clone() }), &mut errors);
    }

    #[test]
    fn generated_expressions_parse_back(
        (written, stat) in stat(),
        op in prop::sample::select(OPS.to_vec()),
        value in number(),
        s in prop::collection::vec(space(), 4),
    ) {
        let expr = format!("{}{written}{}{}{}{value}{}", s[0], s[1], op.0, s[2], s[3]);
        let parsed = parse_expr(&expr);
        prop_assert_eq!(parsed, Ok((stat, op.1, value)), "{:?}", expr);
    }

    #[test]
    fn generated_keys_and_long_forms_parse_back(
        metric in "[a-z_]{1,12}",
        tags in prop::collection::vec(("[a-z_]{1,8}", "[a-zA-Z0-9 _./]{0,10}"), 0..3),
        (written, stat) in stat(),
        abort in any::<bool>(),
    ) {
        let key = if tags.is_empty() {
            metric.clone()
        } else {
            let pairs: Vec<String> = tags.iter().map(|(k, v)| format!("{k}:{v}")).collect();
            format!("{metric}{{{}}}", pairs.join(","))
        };
        let expr = format!("{written}<1");
        let mut errors = Vec::new();
        let parsed = parse_all(
            &json!({ key.clone(): [expr.clone(), { "threshold": expr, "abortOnFail": abort, "delayAbortEval": "1s" }] }),
            &mut errors,
        );
        prop_assert!(errors.is_empty(), "{:?}", errors);
        prop_assert_eq!(parsed.len(), 2);
        let want: Vec<(String, String)> = tags
            .iter()
            .map(|(k, v)| (k.clone(), v.trim().to_owned()))
            .collect();
        for (t, long) in parsed.iter().zip([false, true]) {
            prop_assert_eq!(&t.metric, &metric);
            prop_assert_eq!(&t.filter, &want);
            prop_assert_eq!(t.stat, stat);
            prop_assert_eq!(t.abort_on_fail, long && abort);
        }
    }
}
