//! Values out of range, from every source (flags, `WLOAD_*`, a config
//! file): each is refused as invalid options (exit code 104) in one line
//! naming the value and its limit, never with a panic.

use std::time::Duration;

use crate::support::*;

/// `wload run hello.wasm ARGS` with `env`: it must exit 104 and say
/// `expected` on one line of stderr, with no panic.
fn refused(args: &[&str], env: &[(&str, &str)], expected: &str) {
    let mut cmd = wload();
    cmd.arg("run").arg(guest("hello")).args(args).arg("--quiet");
    cmd.env("BASE_URL", "http://127.0.0.1:9");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(104), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains(expected)).collect();
    assert_eq!(
        lines.len(),
        1,
        "{args:?}: {expected:?} not on one line of: {stderr}"
    );
    // The header ("invalid options …") and that one problem: no more.
    assert!(stderr.trim().lines().count() <= 2, "{args:?}: {stderr}");
}

const TOO_LONG: &str = "longer than the maximum of 876000h (100 years)";

#[test]
fn a_duration_flag_too_long_is_refused() {
    refused(
        &["--duration", "1e20"],
        &[],
        &format!("duration: invalid duration \"1e20\": {TOO_LONG}"),
    );
    refused(
        &["--stage", "99999999999999999999h:5"],
        &[],
        &format!("stages[0].duration: invalid duration \"99999999999999999999h\": {TOO_LONG}"),
    );
    refused(
        &["--iterations", "1", "--http-timeout", "1e300"],
        &[],
        &format!("--http-timeout: invalid duration \"1e300\": {TOO_LONG}"),
    );
}

#[test]
fn an_environment_duration_too_long_is_refused() {
    refused(
        &[],
        &[("WLOAD_DURATION", "1e300")],
        &format!("duration: invalid duration \"1e300\": {TOO_LONG}"),
    );
}

#[test]
fn config_durations_too_long_are_refused() {
    let config = options_file(
        "validation-duration",
        &serde_json::json!({"duration": 1e300}),
    );
    refused(
        &config.split_whitespace().collect::<Vec<_>>(),
        &[],
        &format!("duration: invalid duration 1e+300 (milliseconds): {TOO_LONG}"),
    );
    let config = options_file(
        "validation-setup",
        &serde_json::json!({"iterations": 1, "setupTimeout": "1e300"}),
    );
    refused(
        &config.split_whitespace().collect::<Vec<_>>(),
        &[],
        &format!("setupTimeout: invalid duration \"1e300\": {TOO_LONG}"),
    );
}

#[test]
fn zero_timeouts_are_refused() {
    refused(
        &["--iterations", "1", "--http-timeout", "0"],
        &[],
        "--http-timeout \"0\": must be longer than 0s",
    );
    refused(
        &["--iterations", "1", "--guest-timeout", "0"],
        &[],
        "--guest-timeout \"0\": must be at least 10ms",
    );
}

/// Problems from several sources are named together, each on its line.
#[test]
fn every_problem_is_named_at_once() {
    let config = options_file(
        "validation-all",
        &serde_json::json!({"setupTimeout": 1e300, "batch": 0}),
    );
    let mut cmd = wload();
    cmd.arg("run")
        .arg(guest("hello"))
        .args(config.split_whitespace())
        .args(["--duration", "1e20", "--vus", "0", "--quiet"])
        .env("WLOAD_DURATION", "1s");
    let out = run(cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(104), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("(4 problems)"), "{stderr}");
    for needle in [
        "duration: invalid duration \"1e20\"",
        "vus: must be a whole number of at least 1, not 0",
        "setupTimeout: invalid duration 1e+300 (milliseconds)",
        "batch: must be a whole number of at least 1, not 0",
    ] {
        assert!(stderr.contains(needle), "missing {needle:?}: {stderr}");
    }
}
