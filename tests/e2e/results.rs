//! What the run reports: checks, groups, bodies, timings, the summary export.

use std::time::Duration;

use serde_json::json;

use crate::support::*;

#[test]
fn checks_count_passes_and_fails() {
    let (_server, run) = run_ok(
        "checks",
        "faults",
        "--vus 3 --iterations 50 -e FAULT=checks",
    );
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
    let (_server, run) = run_ok(
        "checksum",
        "checksum",
        "--vus 4 --iterations 100 -e SIZE=250000",
    );
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
    let (_server, run) = run_ok("export_layout", "hello", "--vus 2 --iterations 20");
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

#[test]
fn discarded_bodies_are_counted_not_kept() {
    let (_server, run) = run_ok(
        "discard",
        "checksum",
        "--vus 2 --iterations 20 -e SIZE=50000 -e DISCARD=1",
    );
    assert_eq!(run.check("length is right"), (20, 0));
    assert_eq!(run.check("discarded body is empty"), (20, 0));
    let received = run.metric("data_received", "count");
    assert!(received >= 20.0 * 50_000.0, "{received}");
}

#[test]
fn timeouts_come_back_as_status_0_with_code_1050() {
    let (_server, run) = run_ok(
        "timeout",
        "faults",
        "--vus 2 --iterations 4 -e FAULT=timeout",
    );
    assert_eq!(run.check("timed out with status 0"), (4, 0));
    assert_eq!(run.check("timeout has error code 1050"), (4, 0));
    assert_eq!(run.check("timeout has a message"), (4, 0));
    // One failed request per iteration, out of two.
    assert_eq!(run.metric("http_req_failed", "passes"), 4.0);
    assert_eq!(run.metric("http_req_failed", "fails"), 4.0);
}

#[test]
fn setup_data_reaches_the_vus_and_teardown() {
    let (_server, run) = run_ok("teardown", "faults", "--vus 2 --iterations 4");
    assert_eq!(run.check("setup data arrived"), (4, 0));
    assert!(
        run.stderr().contains("teardown saw token t0k3n"),
        "{}",
        run.stderr()
    );
}

#[test]
fn summary_trend_stats_choose_the_columns() {
    let (_server, run) = run_ok(
        "trend_stats",
        "hello",
        "--iterations 10 --summary-trend-stats avg,p(99.9),count",
    );
    let d = &run.summary["metrics"]["http_req_duration"];
    assert!(d["p(99.9)"].is_number(), "{d}");
    assert_eq!(d["count"], 10.0);
    assert!(d["med"].is_null(), "{d}");
    assert!(run.stdout().contains("count=10"), "{}", run.stdout());
}

/// Nested groups tag everything inside with their path: per-group request
/// counts (exact, through thresholds on `group` sub-metrics), the check
/// tree of the export and the summary, and one `group_duration` per group
/// per iteration, all against what the server saw.
#[test]
fn groups_tag_requests_and_checks_with_their_path() {
    let config = options_file(
        "groups",
        &json!({ "thresholds": {
            "http_reqs{group:::home}": ["count==40"],
            "http_reqs{group:::cart::add}": ["count==80"],
            "http_reqs{group:::cart::view}": ["count==40"],
            "checks{group:::cart::view}": ["rate==1"],
            // Off by one: must fail, or the sub-metric filter is not applied.
            "http_reqs{group:::cart::view,method:GET}": ["count==39"],
        }}),
    );
    let server = server();
    let run = run_test(
        "groups",
        "shop",
        &server.base_url(),
        &format!("--vus 4 --iterations 40 --summary-trend-stats count,avg {config}"),
        Duration::from_secs(120),
    );
    assert_eq!(run.code(), Some(99), "stderr: {}", run.stderr());
    assert_eq!(server.stats.requests(), 40 * 4);
    let m = &run.summary["metrics"];
    for (key, expr, ok) in [
        ("http_reqs{group:::home}", "count==40", true),
        ("http_reqs{group:::cart::add}", "count==80", true),
        ("http_reqs{group:::cart::view}", "count==40", true),
        ("checks{group:::cart::view}", "rate==1", true),
        (
            "http_reqs{group:::cart::view,method:GET}",
            "count==39",
            false,
        ),
    ] {
        assert_eq!(m[key]["thresholds"][expr]["ok"], ok, "{key} {expr}");
    }
    // home, cart, cart::add and cart::view once per iteration each.
    assert_eq!(run.metric("group_duration", "count"), 40.0 * 4.0);

    let root = &run.summary["root_group"];
    assert_eq!(root["checks"][0]["name"], "visit complete");
    assert_eq!(root["checks"][0]["passes"], 40);
    let groups = root["groups"].as_array().expect("groups");
    let names: Vec<_> = groups.iter().map(|g| g["path"].as_str().unwrap()).collect();
    assert_eq!(names, ["::cart", "::home"]);
    let cart = &groups[0];
    assert_eq!(cart["checks"], json!([]));
    let add = &cart["groups"][0];
    assert_eq!(add["path"], "::cart::add");
    assert_eq!(add["checks"][0]["path"], "::cart::add::item added");
    assert_eq!(add["checks"][0]["passes"], 80);
    assert_eq!(cart["groups"][1]["checks"][0]["passes"], 40);
    assert_eq!(groups[1]["checks"][0]["name"], "home is 200");

    let stdout = run.stdout();
    let tree = "    █ cart\n\n      █ add\n\n        ✓ item added\n";
    assert!(stdout.contains(tree), "{stdout}");
    assert!(stdout.contains("group_duration"), "{stdout}");
}

/// Values a guest records in custom metrics of each kind come back exactly
/// in the export (counts, sums, last/min/max, passes/fails, trend min/max/
/// avg), tags split them into sub-metrics, and the summary lists them.
#[test]
fn custom_metrics_round_trip_exactly() {
    let config = options_file(
        "custom_metrics",
        &json!({ "thresholds": {
            "items{size:big}": ["count==34"],
            "items{size:small}": ["count==21"],
        }}),
    );
    let (_server, run) = run_ok(
        "custom_metrics",
        "metrics",
        &format!("--vus 1 --iterations 10 --summary-trend-stats avg,min,med,max,count {config}"),
    );
    let m = &run.summary["metrics"];
    // n = 0..9: items += n + 1; queue = n + 1; lucky = n % 3 == 0;
    // score += 0.5 (n + 1); think += 1.5 n ms.
    assert_eq!(run.metric("items", "count"), 55.0);
    assert_eq!(m["items{size:big}"]["thresholds"]["count==34"]["ok"], true);
    assert_eq!(
        m["items{size:small}"]["thresholds"]["count==21"]["ok"],
        true
    );
    assert_eq!(run.metric("queue", "value"), 10.0);
    assert_eq!(run.metric("queue", "min"), 1.0);
    assert_eq!(run.metric("queue", "max"), 10.0);
    assert_eq!(run.metric("lucky", "passes"), 4.0);
    assert_eq!(run.metric("lucky", "fails"), 6.0);
    assert_eq!(run.metric("lucky", "value"), 0.4);
    assert_eq!(run.metric("score", "count"), 10.0);
    assert_eq!(run.metric("score", "min"), 0.5);
    assert_eq!(run.metric("score", "max"), 5.0);
    assert_eq!(run.metric("score", "avg"), 2.75);
    // The median comes from the histogram: exact to 3 significant digits.
    let med = run.metric("score", "med");
    assert!((med - 2.5).abs() <= 0.0025, "score med {med}");
    assert_eq!(run.metric("think", "count"), 10.0);
    assert_eq!(run.metric("think", "min"), 0.0);
    assert_eq!(run.metric("think", "max"), 13.5);
    assert_eq!(run.metric("think", "avg"), 6.75);

    let stdout = run.stdout();
    let custom = stdout.split("CUSTOM").nth(1).expect("a CUSTOM section");
    // k6's order: built-in sections first, the test's own metrics last.
    assert!(stdout.find("EXECUTION") < stdout.find("CUSTOM"), "{stdout}");
    for name in ["items", "queue", "lucky", "score", "think"] {
        assert!(custom.contains(&format!("{name}.")), "{name} in {stdout}");
    }
}
