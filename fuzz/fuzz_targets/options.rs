//! The options parser: a test's `options()` JSON, a `--config` TOML file
//! and the `WLOAD_*` variables, merged and resolved into scenarios (every
//! executor's option parsing and validation, thresholds included), and
//! then what a run reads off the scenarios before it starts (the plan,
//! the end time, the segment's share of VUs).
//!
//! Input: UTF-8 text, tried as JSON, as TOML, as an execution segment and
//! as the values of the environment variables.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};
use wload_engine::config::{env_layer, merge, resolve, stage_arg, test_layer};
use wload_engine::executor::scenario_env;
use wload_engine::executor::segment::Segment;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut layers: Vec<Map<String, Value>> = Vec::new();
    if let Ok(map) = test_layer(text) {
        layers.push(map);
    }
    // As `--config FILE.toml` reads it.
    if let Ok(t) = toml::from_str::<toml::Value>(text)
        && let Ok(Value::Object(map)) = serde_json::to_value(t)
    {
        layers.push(map);
    }
    let _ = stage_arg(text);
    let vars = [
        "WLOAD_VUS",
        "WLOAD_DURATION",
        "WLOAD_ITERATIONS",
        "WLOAD_STAGES",
    ]
    .map(|k| (k.to_owned(), text.to_owned()));
    for var in vars {
        if let Ok(map) = env_layer([var]) {
            layers.push(map);
        }
    }
    let segment = Segment::parse(text).unwrap_or(Segment::FULL);
    let third = Segment::parse("1/3:2/3").expect("a valid segment");
    for layer in &layers {
        // Alone, and over a test's own shortcuts, as the CLI merges them.
        let base: Map<String, Value> =
            serde_json::from_str(r#"{"vus": 2, "duration": "1s"}"#).expect("valid JSON");
        for merged in [layer.clone(), merge(&[&base, layer])] {
            if let Ok(options) = resolve(&merged) {
                // As the run sizes its pool and its header.
                let _: u32 = options
                    .scenarios
                    .iter()
                    .map(|s| s.executor.max_vus(&segment))
                    .sum();
                for s in &options.scenarios {
                    let _ = s.start_time + s.executor.max_duration();
                    let _ = s.plan(&segment);
                    let _ = s.plan(&third);
                    let _ = s.end();
                    let _ = scenario_env(s);
                }
            }
        }
    }
});
