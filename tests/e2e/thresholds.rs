//! Thresholds: k6's pass/fail criteria, their exit code 99, sub-metrics,
//! abortOnFail, and refusal of thresholds that cannot work.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::*;

fn thresholds_config(name: &str, thresholds: serde_json::Value) -> String {
    options_file(name, &json!({ "thresholds": thresholds }))
}

#[test]
fn passing_thresholds_exit_0_and_failing_ones_99() {
    let pass = thresholds_config(
        "th_pass",
        json!({"http_req_duration": ["p(95)<5000", "avg<5000"], "checks": ["rate==1"], "http_reqs": ["count==20"]}),
    );
    let (_server, run) = run_ok("th_pass", "hello", &format!("--iterations 20 {pass}"));
    let stdout = run.stdout();
    assert!(stdout.contains("█ THRESHOLDS"), "{stdout}");
    assert!(stdout.contains("✓ 'p(95)<5000'"), "{stdout}");
    assert!(stdout.contains("✓ 'count==20' count=20"), "{stdout}");
    assert_eq!(
        run.summary["metrics"]["checks"]["thresholds"]["rate==1"]["ok"],
        true
    );

    let fail = thresholds_config(
        "th_fail",
        json!({"http_req_failed": ["rate>0.5"], "checks": ["rate==1"]}),
    );
    let server = server();
    let run = run_test(
        "th_fail",
        "hello",
        &server.base_url(),
        &format!("--iterations 20 {fail}"),
        Duration::from_secs(60),
    );
    assert_eq!(run.code(), Some(99), "{}", run.stderr());
    assert!(
        run.stdout().contains("✗ 'rate>0.5' rate=0.00%"),
        "{}",
        run.stdout()
    );
    assert!(
        run.stdout().contains("✓ 'rate==1' rate=100.00%"),
        "{}",
        run.stdout()
    );
    assert_eq!(
        run.summary["metrics"]["http_req_failed"]["thresholds"]["rate>0.5"]["ok"],
        false
    );
}

#[test]
fn sub_metric_thresholds_filter_by_tag() {
    let config = thresholds_config(
        "th_sub",
        json!({
            "checks{check:status is 200}": ["rate==1"],
            "checks{check:status is 404}": ["rate==0"],
            "http_req_duration{status:200}": ["max<60000"],
            "checks": ["rate>0.9"]
        }),
    );
    let server = server();
    let run = run_test(
        "th_sub",
        "faults",
        &server.base_url(),
        &format!("--iterations 10 -e FAULT=checks {config}"),
        Duration::from_secs(60),
    );
    // The sub-metrics pass; all checks together (2 of 3 pass) fail.
    assert_eq!(run.code(), Some(99), "{}", run.stderr());
    let stdout = run.stdout();
    assert!(
        stdout.contains("checks{check:status is 200}\n    ✓ 'rate==1'"),
        "{stdout}"
    );
    assert!(
        stdout.contains("checks{check:status is 404}\n    ✓ 'rate==0'"),
        "{stdout}"
    );
    assert!(stdout.contains("✗ 'rate>0.9' rate=66.67%"), "{stdout}");
    let m = &run.summary["metrics"];
    assert_eq!(
        m["http_req_duration{status:200}"]["thresholds"]["max<60000"]["ok"],
        true
    );
}

#[test]
fn abort_on_fail_stops_the_run_early() {
    // Nothing listens there: every request fails from the start.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let config = thresholds_config(
        "th_abort",
        json!({"http_req_failed": [{"threshold": "rate<0.5", "abortOnFail": true, "delayAbortEval": "1s"}]}),
    );
    let started = Instant::now();
    let run = run_test(
        "th_abort",
        "browse",
        &url,
        &format!("--vus 2 --duration 60s {config}"),
        Duration::from_secs(60),
    );
    let took = started.elapsed();
    assert_eq!(run.code(), Some(99), "{}", run.stderr());
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert!(
        run.stderr().contains("crossed with abortOnFail"),
        "{}",
        run.stderr()
    );
}

#[test]
fn thresholds_that_cannot_work_are_refused() {
    for (name, thresholds, message) in [
        (
            "th_bad_expr",
            json!({"http_req_duration": ["p95<200"]}),
            "invalid threshold \"p95<200\": unknown statistic",
        ),
        (
            "th_bad_kind",
            json!({"http_reqs": ["p(95)<200"]}),
            "\"p(95)<200\" does not apply to http_reqs, a counter; use count, rate",
        ),
        (
            "th_bad_long",
            json!({"checks": [{"threshold": "rate>0.9", "abortOnFail": "yes"}]}),
            "abortOnFail must be true or false",
        ),
    ] {
        let config = thresholds_config(name, thresholds);
        let server = server();
        let run = run_test(
            name,
            "hello",
            &server.base_url(),
            &format!("--iterations 1 {config}"),
            Duration::from_secs(60),
        );
        assert_eq!(run.code(), Some(104), "{name}: {}", run.stderr());
        assert!(run.stderr().contains(message), "{name}: {}", run.stderr());
        assert_eq!(server.stats.requests(), 0);
    }
}
