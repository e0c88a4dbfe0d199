//! What the run reports: checks, bodies, timings, the summary export.

use std::time::Duration;

use crate::support::*;

#[test]
fn checks_count_passes_and_fails() {
    let server = server();
    let run = run_test(
        "checks",
        "faults",
        &server.base_url(),
        &["--vus", "3", "--iterations", "50", "-e", "FAULT=checks"],
        Duration::from_secs(120),
    );
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    assert_eq!(run.check("status is 200"), (50, 0));
    assert_eq!(run.check("status is 404"), (0, 50));
    // Setup's JSON reached every VU.
    assert_eq!(run.check("setup data arrived"), (50, 0));
    assert_eq!(run.metric("checks", "passes"), 100.0);
    assert_eq!(run.metric("checks", "fails"), 50.0);
    let rate = run.metric("checks", "value");
    assert!((rate - 100.0 / 150.0).abs() < 1e-9, "{rate}");
    let stdout = run.stdout();
    assert!(stdout.contains("✗ status is 404"), "{stdout}");
    assert!(stdout.contains("✓ status is 200"), "{stdout}");
}

#[test]
fn bodies_arrive_intact_and_phases_add_up() {
    let server = server();
    let run = run_test(
        "checksum",
        "checksum",
        &server.base_url(),
        &["--vus", "4", "--iterations", "100", "-e", "SIZE=250000"],
        Duration::from_secs(120),
    );
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    for check in [
        "status is 200",
        "length is right",
        "body matches its checksum",
        "phases add up to the duration",
        "waiting and duration are measured",
    ] {
        assert_eq!(run.check(check), (100, 0), "{check}");
    }
    // On the wire: 100 bodies of 250,000 bytes plus headers.
    let received = run.metric("data_received", "count");
    assert!(
        (25_000_000.0..25_100_000.0).contains(&received),
        "{received}"
    );
    // Every sample's phases add up exactly, so the averages do too.
    let avg = |m: &str| run.metric(m, "avg");
    let sum = avg("http_req_sending") + avg("http_req_waiting") + avg("http_req_receiving");
    let duration = avg("http_req_duration");
    assert!(
        (sum - duration).abs() <= duration * 1e-6,
        "{sum} vs {duration}"
    );
    assert!(avg("http_req_waiting") > 0.0);
    assert!(avg("http_req_receiving") > 0.0);
    assert!(run.metric("http_req_duration", "p(95)") >= run.metric("http_req_duration", "med"));
}

#[test]
fn the_summary_export_has_k6s_layout() {
    let server = server();
    let run = run_test(
        "export_layout",
        "hello",
        &server.base_url(),
        &["--vus", "2", "--iterations", "20"],
        Duration::from_secs(120),
    );
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    let m = &run.summary["metrics"];
    for key in ["count", "rate"] {
        assert!(m["http_reqs"][key].is_number(), "http_reqs.{key}");
        assert!(m["data_sent"][key].is_number(), "data_sent.{key}");
        assert!(m["data_received"][key].is_number(), "data_received.{key}");
        assert!(m["iterations"][key].is_number(), "iterations.{key}");
    }
    for trend in [
        "http_req_duration",
        "http_req_blocked",
        "http_req_connecting",
        "http_req_tls_handshaking",
        "http_req_sending",
        "http_req_waiting",
        "http_req_receiving",
        "iteration_duration",
    ] {
        for key in ["avg", "min", "med", "max", "p(90)", "p(95)"] {
            assert!(m[trend][key].is_number(), "{trend}.{key}");
        }
    }
    for rate in ["checks", "http_req_failed"] {
        for key in ["passes", "fails", "value"] {
            assert!(m[rate][key].is_number(), "{rate}.{key}");
        }
    }
    for gauge in ["vus", "vus_max"] {
        for key in ["value", "min", "max"] {
            assert!(m[gauge][key].is_number(), "{gauge}.{key}");
        }
    }
    assert_eq!(m["http_req_failed"]["passes"], 0);
    let check = &run.summary["root_group"]["checks"][0];
    assert_eq!(check["path"], "::status is 200");
    assert_eq!(check["id"].as_str().map(str::len), Some(32));
}
