//! Property tests of the options parser, the suite's counterpart of the
//! `options` fuzz target (fuzz/, docs/fuzzing.md): arbitrary JSON never
//! panics it, whether as a whole options object or under the keys that
//! reach the executors' parsing; and what resolves can be planned, as a
//! run does before it starts, without panicking either.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use wload_engine::config::{Options, env_layer, merge, resolve, stage_arg, test_layer};
use wload_engine::executor::EXECUTORS;
use wload_engine::executor::segment::Segment;

/// Arbitrary JSON, small, with numbers of every kind and the strings an
/// option tends to hold (durations, names).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        prop::sample::select(vec![0u64, 1, 2, 10, u64::from(u32::MAX), u64::MAX])
            .prop_map(Value::from),
        "[0-9]{1,20}(ms|s|m|h|d)?".prop_map(Value::from),
        // Past what a Duration holds (durations once panicked there).
        prop::sample::select(vec![1e20, 1e300, f64::MAX]).prop_map(|f| json!(f)),
        "[1-9][0-9]{19,24}(ms|s|h)?".prop_map(Value::from),
        ".{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Keys that mean something to the parser, and some that do not.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "executor",
            "vus",
            "duration",
            "iterations",
            "stages",
            "target",
            "startVUs",
            "maxVUs",
            "preAllocatedVUs",
            "rate",
            "timeUnit",
            "startRate",
            "startTime",
            "gracefulStop",
            "gracefulRampDown",
            "maxDuration",
            "exec",
            "env",
            "tags",
            "thresholds",
            "scenarios",
            "setupTimeout",
            "summaryTrendStats",
            "batch",
        ])
        .prop_map(str::to_owned),
        "[a-z]{1,6}",
    ]
}

/// Every executor wload runs, and one name k6 once had and wload does not
/// (`constant-looping-vus`, now `constant-vus`).
fn executor() -> impl Strategy<Value = &'static str> {
    let mut kinds = EXECUTORS.to_vec();
    kinds.push("constant-looping-vus");
    prop::sample::select(kinds)
}

/// What a run reads off resolved options before it starts.
fn plan_all(options: &Options) {
    let third = Segment::parse("1/3:2/3").expect("a valid segment");
    for s in &options.scenarios {
        for seg in [Segment::FULL, third] {
            let _ = s.plan(&seg);
        }
        let _ = s.end();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_json_never_panics(value in json_value()) {
        let text = value.to_string();
        if let Ok(map) = test_layer(&text)
            && let Ok(options) = resolve(&map)
        {
            plan_all(&options);
        }
    }

    #[test]
    fn arbitrary_scenarios_never_panic(
        name in "[a-z-]{0,6}",
        kind in executor(),
        fields in prop::collection::btree_map(key(), json_value(), 0..6),
        shortcuts in prop::collection::btree_map(key(), json_value(), 0..3),
    ) {
        let mut scenario: Map<String, Value> = fields.into_iter().collect();
        scenario.insert("executor".into(), json!(kind));
        let test = json!({ "scenarios": { name: scenario } });
        let cli: Map<String, Value> = shortcuts.into_iter().collect();
        let merged = merge(&[test.as_object().expect("an object"), &cli]);
        if let Ok(options) = resolve(&merged) {
            plan_all(&options);
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        let _ = test_layer(&text);
        let _ = stage_arg(&text);
        let _ = Segment::parse(&text);
        for var in ["WLOAD_VUS", "WLOAD_DURATION", "WLOAD_ITERATIONS", "WLOAD_STAGES"] {
            if let Ok(map) = env_layer([(var.to_owned(), text.clone())]) {
                let _ = resolve(&map).map(|o| plan_all(&o));
            }
        }
    }
}
