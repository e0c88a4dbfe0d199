//! Executors and options: each executor's counts and timing as the server
//! saw them, scenarios side by side, the precedence of option sources, a
//! k6 options object taken as it is, coordinated-omission correction, and
//! bad configurations refused before any VU starts.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

/// A `--config` file for the test `name`.
fn config(name: &str, options: Value) -> PathBuf {
    let path = scratch(&format!("{name}-config")).join("options.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&options).unwrap()).unwrap();
    path
}

fn with_config(
    name: &str,
    guest: &str,
    options: Value,
    extra: &str,
) -> (wload_target::TargetServer, Finished) {
    let path = config(name, options);
    run_ok(name, guest, &format!("--config {} {extra}", path.display()))
}

#[test]
fn per_vu_iterations_runs_each_vu_the_same_number_of_times() {
    let (server, run) = with_config(
        "per_vu",
        "hello",
        json!({"scenarios": {"each": {"executor": "per-vu-iterations", "vus": 3, "iterations": 7}}}),
        "",
    );
    assert_eq!(server.stats.requests(), 21);
    assert_eq!(run.metric("iterations", "count"), 21.0);
    assert_eq!(run.metric("vus_max", "value"), 3.0);
}

#[test]
fn constant_arrival_rate_starts_iterations_on_schedule() {
    let (server, run) = with_config(
        "car",
        "hello",
        json!({"scenarios": {"rate": {
            "executor": "constant-arrival-rate", "rate": 100, "timeUnit": "1s",
            "duration": "2s", "preAllocatedVUs": 5, "maxVUs": 20
        }}}),
        "",
    );
    assert_eq!(server.stats.requests(), 200);
    assert!(
        run.summary["metrics"]["dropped_iterations"].is_null(),
        "{:#}",
        run.summary
    );
    // 200 iterations 10 ms apart: the first and the last are 1.99 s apart.
    let span = server.stats.request_span().as_secs_f64();
    assert!((1.9..2.2).contains(&span), "requests spanned {span}s");
    // Corrected durations exist and are never below the actual ones.
    assert!(
        run.metric("http_req_duration_corrected", "min") >= run.metric("http_req_duration", "min")
    );
    assert!(run.metric("http_req_duration_corrected", "max") > 0.0);
}

#[test]
fn ramping_arrival_rate_integrates_its_stages() {
    // 0 → 100/s over 1 s (50 iterations), then 100/s for 1 s (100 more).
    let (server, _run) = with_config(
        "rar",
        "hello",
        json!({"scenarios": {"ramp": {
            "executor": "ramping-arrival-rate", "startRate": 0, "timeUnit": "1s",
            "preAllocatedVUs": 5, "maxVUs": 20,
            "stages": [{"duration": "1s", "target": 100}, {"duration": "1s", "target": 100}]
        }}}),
        "",
    );
    let n = server.stats.requests();
    assert!((149..=150).contains(&n), "{n} iterations");
    let span = server.stats.request_span().as_secs_f64();
    assert!((1.8..2.2).contains(&span), "requests spanned {span}s");
}

#[test]
fn ramping_vus_follows_its_stages() {
    let (server, run) = run_ok(
        "ramping_vus",
        "browse",
        "--vus 0 --stage 1s:6 --stage 1s:6 --stage 1s:0",
    );
    // browse sleeps 1 s per iteration: about one iteration per VU-second
    // of plan (3 + 6 + 3), plus the ones VUs finish while ramping down.
    let iterations = run.metric("iterations", "count");
    assert!((8.0..=30.0).contains(&iterations), "{iterations}");
    assert_eq!(run.metric("vus_max", "value"), 6.0);
    assert_eq!(server.stats.requests() as f64, iterations * 5.0);
    let span = server.stats.request_span().as_secs_f64();
    assert!((1.5..4.5).contains(&span), "requests spanned {span}s");
    assert!(server.stats.max_open_connections() >= 6);
}

#[test]
fn scenarios_run_side_by_side_with_their_own_exec_env_and_tags() {
    let (server, run) = with_config(
        "two_scenarios",
        "scenarios",
        json!({"scenarios": {
            "browse": {"executor": "shared-iterations", "vus": 2, "iterations": 10, "tags": {"team": "web"}},
            "api": {"executor": "per-vu-iterations", "vus": 2, "iterations": 3, "exec": "api",
                    "startTime": "200ms", "env": {"ORIGIN": "scenario"}}
        }}),
        "-e ORIGIN=cli",
    );
    assert_eq!(server.stats.requests(), 16);
    assert_eq!(run.check("browse ran default"), (10, 0));
    assert_eq!(run.check("api ran api"), (6, 0));
    assert_eq!(run.check("api sees ORIGIN=scenario"), (6, 0));
    let stderr = run.stderr();
    assert!(!stderr.contains("WARN"), "{stderr}");
}

#[test]
fn option_sources_take_k6s_precedence() {
    // The test's options() say 4 iterations; the file 6, the environment
    // 8, the flag 10. Each source wins over those below it.
    let file = config("precedence", json!({"iterations": 6}));
    let cases: [(&str, Option<&str>, &str, u64); 4] = [
        ("precedence_cli", Some("8"), "--iterations 10", 10),
        ("precedence_env", Some("8"), "", 8),
        ("precedence_file", None, "", 6),
        ("precedence_test", None, "no-file", 4),
    ];
    for (name, env, flags, want) in cases {
        let server = server();
        let dir = scratch(name);
        let mut cmd = wload();
        cmd.arg("run")
            .arg(guest("scenarios"))
            .arg("-q")
            .arg("-e")
            .arg(format!("BASE_URL={}", server.base_url()))
            .arg("--summary-export")
            .arg(dir.join("s.json"));
        if flags != "no-file" {
            cmd.arg("--config").arg(&file);
            cmd.args(flags.split_whitespace());
        }
        if let Some(v) = env {
            cmd.env("WLOAD_ITERATIONS", v);
        }
        let out = run(cmd, Duration::from_secs(60));
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(server.stats.requests(), want, "{name}");
    }
}

#[test]
fn a_k6_options_object_runs_unchanged() {
    // Shaped like the examples in k6's executor documentation, with
    // durations shortened.
    let options = json!({
        "discardResponseBodies": true,
        "scenarios": {
            "contacts": {
                "executor": "constant-arrival-rate",
                "duration": "2s",
                "rate": 30,
                "timeUnit": "1s",
                "preAllocatedVUs": 2,
                "maxVUs": 50
            },
            "news": {
                "executor": "ramping-vus",
                "startTime": "500ms",
                "startVUs": 0,
                "stages": [
                    { "duration": "1s", "target": 3 },
                    { "duration": "500ms", "target": 0 }
                ],
                "gracefulRampDown": "0s"
            }
        },
        "thresholds": { "http_req_duration": ["p(95)<500"] }
    });
    let (server, run) = with_config("k6_options", "hello", options, "");
    assert!(server.stats.requests() >= 60, "{}", server.stats.requests());
    let stderr = run.stderr();
    assert!(!stderr.contains("discardResponseBodies"), "{stderr}");
    // discardResponseBodies is taken (the http tests check what it does:
    // their --discard-response-bodies travels as this same key); bodies
    // are still counted.
    assert_eq!(
        run.metric("body_bytes", "count"),
        5.0 * run.metric("http_reqs", "count")
    );
    assert!(!stderr.contains("not supported"), "{stderr}");
    assert!(run.stdout().contains("✓ 'p(95)<500'"), "{}", run.stdout());
}

#[test]
fn a_stalling_server_shows_in_the_corrected_percentiles() {
    // The server stalls for 1 s every 3 s; one VU at 20 iterations/s cannot
    // keep up during a stall, so iterations are dropped — and the time
    // they waited for a VU shows in iteration_duration_corrected, while
    // http_req_duration keeps the actual send-to-response times.
    let (_server, run) = with_config(
        "stall",
        "faults",
        json!({"scenarios": {"stall": {
            "executor": "constant-arrival-rate", "rate": 20, "timeUnit": "1s",
            "duration": "6s", "preAllocatedVUs": 1, "maxVUs": 1
        }}}),
        "-e FAULT=checks -e TARGET_PATH=/stall/3000/1000",
    );
    let dropped = run.metric("dropped_iterations", "count");
    assert!(dropped >= 20.0, "{dropped} dropped");
    // No sample can exceed the stall (1 s) by much: the waits of the
    // dropped iterations fill the corrected tail up to it, while the
    // actual durations stay fast for all but the one request that was in
    // flight when the stall began.
    let corrected_p99 = run.metric("iteration_duration_corrected", "p(99)");
    assert!(corrected_p99 >= 900.0, "corrected p99 {corrected_p99} ms");
    let corrected_p90 = run.metric("iteration_duration_corrected", "p(90)");
    assert!(corrected_p90 >= 300.0, "corrected p90 {corrected_p90} ms");
    let actual_p90 = run.metric("http_req_duration", "p(90)");
    assert!(actual_p90 < 50.0, "actual p90 {actual_p90} ms");
}

/// Run `hello` with `options`; it must be refused before any request.
fn refused(name: &str, options: Value) -> String {
    let server = server();
    let path = config(name, options);
    let run = run_test(
        name,
        "scenarios",
        &server.base_url(),
        &format!("--config {}", path.display()),
        Duration::from_secs(60),
    );
    assert_eq!(run.code(), Some(104), "{name}: {}", run.stderr());
    assert_eq!(server.stats.requests(), 0, "{name}");
    run.stderr()
}

#[test]
fn bad_configurations_are_refused_before_any_vu_starts() {
    let cases = [
        (
            "bad_executor",
            json!({"scenarios": {"a": {"executor": "warp"}}}),
            "scenarios.a.executor: \"warp\" is not an executor; accepted: shared-iterations, per-vu-iterations, constant-vus, ramping-vus, constant-arrival-rate, ramping-arrival-rate, externally-controlled",
        ),
        (
            "bad_rate",
            json!({"scenarios": {"a": {"executor": "constant-arrival-rate", "rate": -5, "duration": "1s", "preAllocatedVUs": 1}}}),
            "scenarios.a.rate: must be a number greater than 0, not -5",
        ),
        (
            "zero_rate",
            json!({"scenarios": {"a": {"executor": "constant-arrival-rate", "rate": 0, "duration": "1s", "preAllocatedVUs": 1}}}),
            "scenarios.a.rate: must be a number greater than 0, not 0",
        ),
        (
            "bad_stages",
            json!({"scenarios": {"a": {"executor": "ramping-vus", "stages": [{"duration": "soon", "target": 2}]}}}),
            "scenarios.a.stages[0].duration: invalid duration \"soon\"",
        ),
        (
            "bad_duration",
            json!({"vus": 2, "duration": "10x"}),
            "duration: invalid duration \"10x\"",
        ),
        (
            "bad_exec",
            json!({"scenarios": {"a": {"executor": "shared-iterations", "exec": "checkout"}}}),
            "scenarios.a.exec: the test has no entry point \"checkout\"; it exports default, api",
        ),
    ];
    for (name, options, message) in cases {
        let stderr = refused(name, options);
        assert!(
            stderr.contains(message),
            "{name}: expected {message:?} in:\n{stderr}"
        );
    }
}

#[test]
fn execution_segments_split_a_scenario_exactly() {
    let server = server();
    let path = config(
        "segments",
        json!({"scenarios": {"a": {"executor": "constant-arrival-rate", "rate": 50,
               "duration": "1s", "preAllocatedVUs": 9, "maxVUs": 9}}}),
    );
    let mut dropped = 0.0;
    for seg in ["0:1/3", "1/3:2/3", "2/3:1"] {
        let run = run_test(
            &format!("segment_{}", seg.replace(['/', ':'], "_")),
            "hello",
            &server.base_url(),
            &format!("--config {} --execution-segment {seg}", path.display()),
            Duration::from_secs(60),
        );
        assert_eq!(run.code(), Some(0), "{}", run.stderr());
        assert_eq!(run.metric("vus_max", "value"), 3.0);
        dropped += run.summary["metrics"]["dropped_iterations"]["count"]
            .as_f64()
            .unwrap_or(0.0);
    }
    // The three thirds ran the 50 iterations exactly once between them.
    assert_eq!(server.stats.requests() + dropped as u64, 50);
}
