//! Run control from the command line: `--rps` paces the whole run
//! (against the target server, counting what it saw), a bad `--rps` is an
//! invalid option named with the others, and `--paused` holds the load
//! until the run is stopped, sending nothing. Pausing, resuming and
//! scaling need a controller, which a local run has not: the engine's
//! own tests drive those (crates/wload-engine/tests/control.rs).

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{guest, run_test, scratch, server, wload};

/// `--rps 20` for 2 s of 4 VUs that would otherwise send thousands: about
/// 40 requests, each as fast as ever (the wait for its turn is in the
/// iteration, not in the request).
#[test]
fn rps_paces_the_whole_run() {
    let server = server();
    let run = run_test(
        "control-rps",
        "hello",
        &server.base_url(),
        "--vus 4 --duration 2s --rps 20",
        Duration::from_secs(60),
    );
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    let sent = server.stats.requests();
    // 41 slots in 2 s, and up to one more per VU claimed before the end.
    assert!((36..=46).contains(&sent), "{sent} requests at 20 a second");
    assert_eq!(run.metric("http_reqs", "count") as u64, sent);
    let request = run.metric("http_req_duration", "avg");
    let iteration = run.metric("iteration_duration", "avg");
    // Four VUs share 20 a second: an iteration waits about 200 ms.
    assert!(iteration > 100.0, "iteration_duration avg {iteration} ms");
    assert!(request < 50.0, "http_req_duration avg {request} ms");
}

#[test]
fn a_bad_rps_is_named_with_the_other_problems() {
    let server = server();
    for (value, shown) in [("-5", "-5"), ("fast", "\"fast\"")] {
        let run = run_test(
            &format!("control-bad-rps-{value}"),
            "hello",
            &server.base_url(),
            // A negative value too, though it looks like a flag.
            &format!("--vus 1 --duration 1x --rps {value}"),
            Duration::from_secs(60),
        );
        assert_eq!(run.code(), Some(104), "stderr: {}", run.stderr());
        let stderr = run.stderr();
        assert!(stderr.contains("invalid options (2 problems)"), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "rps: must be a number of requests per second from 0 (no limit) to 1e9, not {shown}"
            )),
            "{stderr}"
        );
        assert!(
            stderr.contains("duration: invalid duration \"1x\""),
            "{stderr}"
        );
    }
    assert_eq!(server.stats.requests(), 0);
}

/// `--paused`: setup and the VUs are ready, nothing is sent; a local run
/// has no controller to resume it, so it waits until a signal stops it,
/// and then ends as a stopped run does (summary, exit 105).
#[test]
fn a_paused_run_sends_nothing_until_stopped() {
    let server = server();
    let export = scratch("control-paused").join("summary.json");
    let mut cmd = wload();
    cmd.arg("run")
        .arg(guest("hello"))
        .args(["--vus", "2", "--duration", "1s", "--paused", "-e"])
        .arg(format!("BASE_URL={}", server.base_url()))
        .arg("--summary-export")
        .arg(&export)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().expect("start wload");
    // Longer than the whole run would take unpaused.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(server.stats.requests(), 0, "a paused run sent requests");
    // SAFETY: a signal to our own child process, by its PID.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let stopped = Instant::now();
    let out = child.wait_with_output().expect("wait for wload");
    assert!(
        stopped.elapsed() < Duration::from_secs(10),
        "{:?}",
        stopped.elapsed()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(105), "stderr: {stderr}");
    assert!(stderr.contains("paused: waiting to be resumed"), "{stderr}");
    // The summary of a run that sent nothing: its VUs, no request.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("vus_max") && !stdout.contains("http_reqs"),
        "{stdout}"
    );
    assert_eq!(server.stats.requests(), 0);
    let exported: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&export).expect("the export was written"))
            .expect("the export is JSON");
    assert_eq!(exported["metrics"]["vus_max"]["value"].as_f64(), Some(2.0));
}
