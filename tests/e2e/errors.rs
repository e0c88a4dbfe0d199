//! Bad input and misbehaving tests: each gets a clear message, the run goes
//! on where it can.

use std::time::Duration;

use crate::support::*;

/// `wload run FILE` on bytes that are not a test: one line naming the
/// problem and what was expected.
fn refuse(name: &str, bytes: &[u8]) -> String {
    let dir = scratch(name);
    let file = dir.join("test.wasm");
    std::fs::write(&file, bytes).unwrap();
    let mut cmd = wload();
    cmd.arg("run").arg(&file);
    let out = run(cmd, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(stderr.trim().lines().count(), 1, "not one line: {stderr}");
    assert!(
        stderr.contains("wload:test/test@0.1.0"),
        "does not say what was expected: {stderr}"
    );
    stderr
}

#[test]
fn files_that_are_not_tests_are_refused_in_one_line() {
    let text = refuse("not_wasm", b"export default function () {}\n");
    assert!(text.contains("is not a WebAssembly file"), "{text}");

    let core = refuse("core_module", b"\0asm\x01\0\0\0");
    assert!(
        core.contains("is a core WebAssembly module, not a component"),
        "{core}"
    );

    // A valid component with no exports: some other world.
    let other = refuse("other_world", b"\0asm\x0d\0\x01\0");
    assert!(other.contains("is not a wload test"), "{other}");
    assert!(other.contains("exports do not match"), "{other}");
}

#[test]
fn a_missing_file_is_named() {
    let mut cmd = wload();
    cmd.args(["run", "/nonexistent/test.wasm"]);
    let out = run(cmd, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot read /nonexistent/test.wasm"),
        "{stderr}"
    );
}

#[test]
fn a_looping_guest_is_stopped() {
    let (_server, run) = run_ok(
        "looping",
        "faults",
        "--vus 1 --iterations 2 -e FAULT=loop --guest-timeout 1s",
    );
    assert_eq!(run.metric("iterations_failed", "count"), 2.0);
    let stderr = run.stderr();
    assert!(
        stderr.contains("without waiting on HTTP or sleep and was stopped"),
        "{stderr}"
    );
    // Logged once, counted twice.
    assert_eq!(stderr.matches("iteration failed").count(), 1, "{stderr}");
    assert!(
        run.stdout().contains("2 × the guest ran for 1s"),
        "{}",
        run.stdout()
    );
}

#[test]
fn panics_fail_the_iteration_and_the_vu_goes_on() {
    let (server, run) = run_ok("panics", "faults", "--vus 1 --iterations 9 -e FAULT=panic");
    // Iterations 2, 5 and 8 of the VU panic; the rest complete on fresh
    // instances.
    assert_eq!(run.metric("iterations", "count"), 9.0);
    assert_eq!(run.metric("iterations_failed", "count"), 3.0);
    assert_eq!(server.stats.requests(), 9);
    assert_eq!(run.check("status is 200"), (6, 0));
    let stderr = run.stderr();
    assert!(stderr.contains("panic: panicked at"), "{stderr}");
    assert!(
        stderr.contains("deliberate panic in iteration 2"),
        "{stderr}"
    );
}

#[test]
fn errors_returned_by_the_test_are_counted() {
    let (_server, run) = run_ok(
        "returned_errors",
        "faults",
        "--vus 1 --iterations 10 -e FAULT=error",
    );
    assert_eq!(run.metric("iterations_failed", "count"), 5.0);
    assert_eq!(run.check("status is 200"), (5, 0));
}

#[test]
fn the_memory_limit_stops_a_hungry_vu() {
    let (_server, run) = run_ok(
        "memory",
        "faults",
        "--vus 1 --iterations 2 -e FAULT=memory --vu-memory 16MiB",
    );
    assert_eq!(run.metric("iterations_failed", "count"), 2.0);
    assert!(
        run.stderr().contains("--vu-memory limit of 16 MiB"),
        "{}",
        run.stderr()
    );
}

#[test]
fn a_failing_setup_stops_the_run_with_its_message() {
    let server = server();
    let run = run_test(
        "setup_fails",
        "faults",
        &server.base_url(),
        "--iterations 5 -e FAULT=setup",
        Duration::from_secs(60),
    );
    assert_eq!(run.code(), Some(107));
    assert!(
        run.stderr()
            .contains("setup failed: setup refused on purpose"),
        "{}",
        run.stderr()
    );
    assert_eq!(server.stats.requests(), 0);
}

#[test]
fn network_errors_do_not_stop_the_run() {
    // A port nobody listens on: every request is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let run = run_test(
        "refused",
        "hello",
        &url,
        "--vus 2 --iterations 20",
        Duration::from_secs(60),
    );
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    assert_eq!(run.metric("http_reqs", "count"), 20.0);
    assert_eq!(run.metric("http_req_failed", "passes"), 20.0);
    assert_eq!(run.check("status is 200"), (0, 20));
    // Network errors are the target's failures, not the test's.
    assert!(
        run.summary["metrics"]["iterations_failed"].is_null(),
        "{:#}",
        run.summary
    );
}

#[test]
fn adding_to_an_undefined_metric_fails_the_iteration() {
    let (server, run) = run_ok(
        "bad_metric",
        "faults",
        "--vus 1 --iterations 6 -e FAULT=bad-metric",
    );
    // Iterations 1, 3 and 5 add to an id nobody defined; the VU's later
    // (valid) metric ids and iterations are unaffected.
    assert_eq!(run.metric("iterations", "count"), 6.0);
    assert_eq!(run.metric("iterations_failed", "count"), 3.0);
    assert_eq!(server.stats.requests(), 6);
    assert_eq!(run.check("status is 200"), (3, 0));
    let stderr = run.stderr();
    assert!(
        stderr.contains("is not a metric id returned by metrics.define"),
        "{stderr}"
    );
}
