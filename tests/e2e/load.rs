//! Load shapes: exact iteration counts, connections per VU, many VUs,
//! stopping.

use std::time::Duration;

use crate::support::*;

#[test]
fn iterations_are_exact_at_the_server() {
    let (server, run) = run_ok("iterations_exact", "hello", "--vus 7 --iterations 1234");
    assert_eq!(server.stats.requests(), 1234);
    assert_eq!(run.metric("http_reqs", "count"), 1234.0);
    assert_eq!(run.metric("iterations", "count"), 1234.0);
    assert_eq!(run.check("status is 200"), (1234, 0));
    // hello's custom counter adds each body's length (5 bytes).
    assert_eq!(run.metric("body_bytes", "count"), 1234.0 * 5.0);
}

#[test]
fn each_vu_keeps_its_own_connection() {
    let (server, run) = run_ok("connections_per_vu", "hello", "--vus 20 --duration 2s");
    let conns = server.stats.connections();
    assert!(
        (20..=24).contains(&conns),
        "20 VUs opened {conns} connections"
    );
    let reqs = server.stats.requests();
    assert!(reqs > 1000, "only {reqs} requests in 2s");
    assert_eq!(run.metric("http_reqs", "count") as u64, reqs);
    assert_eq!(run.metric("vus_max", "value"), 20.0);
}

#[test]
fn a_thousand_vus_run_together() {
    let (server, run) = run_ok("thousand_vus", "browse", "--vus 1000 --duration 3s");
    assert_eq!(run.metric("vus_max", "value"), 1000.0);
    // browse sleeps 1 s per iteration: every VU completes about three.
    let iterations = run.metric("iterations", "count");
    assert!(
        iterations >= 2000.0,
        "1000 VUs completed only {iterations} iterations in 3 s"
    );
    // Three requests per iteration, and every one of them counted.
    assert_eq!(
        run.metric("http_reqs", "count") as u64,
        server.stats.requests()
    );
    assert!(
        server.stats.max_open_connections() >= 900,
        "{}",
        server.stats.max_open_connections()
    );
    let (passes, fails) = run.check("home is 200");
    assert_eq!(fails, 0);
    assert!(passes >= 2000);
    assert_eq!(run.check("echo returns the item").1, 0);
}

/// Send `signal` to the child we started.
fn signal(child: &std::process::Child, signal: i32) {
    // SAFETY: a signal to our own child process, by its PID.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
}

/// The first Ctrl-C, SIGTERM (containers, CI, `timeout`) or SIGHUP (a
/// closed terminal) stops the run gracefully: summary, export, exit 105.
fn stops_gracefully_on(sig: i32, name: &str) {
    let server = server();
    let export = scratch(&format!("signal-{name}")).join("summary.json");
    let mut cmd = wload();
    cmd.arg("run")
        .arg(guest("browse"))
        .args(["--vus", "5", "--duration", "60s", "-e"])
        .arg(format!("BASE_URL={}", server.base_url()))
        .arg("--summary-export")
        .arg(&export);
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("start wload");
    std::thread::sleep(Duration::from_millis(2500));
    signal(&child, sig);
    let started = std::time::Instant::now();
    let out = child.wait_with_output().expect("wait for wload");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "graceful stop on {name} took {:?}",
        started.elapsed()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(105),
        "{name}: stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("http_reqs"),
        "no summary after {name}:\n{stdout}"
    );
    assert!(stdout.contains("✓ home is 200"), "{stdout}");
    let exported: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&export).expect("the export was written"))
            .expect("the export is JSON");
    assert!(exported["metrics"]["http_reqs"]["count"].as_f64() > Some(0.0));
}

#[test]
fn ctrl_c_stops_gracefully_and_prints_the_summary() {
    stops_gracefully_on(libc::SIGINT, "SIGINT");
}

#[test]
fn sigterm_stops_gracefully_and_writes_the_export() {
    stops_gracefully_on(libc::SIGTERM, "SIGTERM");
}

#[test]
fn sighup_stops_gracefully_and_writes_the_export() {
    stops_gracefully_on(libc::SIGHUP, "SIGHUP");
}

/// A second signal stops at once, though every VU waits on a server that
/// never answers and gracefulStop is long: the cut requests are recorded.
#[test]
fn a_second_signal_cuts_requests_in_flight() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    // Accepts and holds every connection, answering nothing.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
    let options = serde_json::json!({"scenarios": {"s": {
        "executor": "constant-vus", "vus": 2, "duration": "60s", "gracefulStop": "60s"}}});
    let mut cmd = wload();
    cmd.arg("run")
        .arg(guest("hello"))
        .args(options_file("second-signal", &options).split(' '))
        .arg("-e")
        .arg(format!("BASE_URL=http://{addr}"));
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("start wload");
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGINT);
    let started = std::time::Instant::now();
    let out = child.wait_with_output().expect("wait for wload");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the hard stop took {:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(105));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("http_reqs.....................: 2 "),
        "the two cut requests are recorded:\n{stdout}"
    );
}

#[test]
fn the_demo_runs_a_load_test_on_its_own() {
    let mut cmd = wload();
    cmd.args(["demo", "--vus", "3", "--duration", "1s"]);
    let out = run(cmd, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(stdout.contains("✓ status is 200"), "{stdout}");
    assert!(stdout.contains("http_req_duration"), "{stdout}");
    assert!(stderr.contains("target server saw"), "{stderr}");
}

#[test]
fn a_precompiled_test_runs() {
    let dir = scratch("compile");
    let cwasm = dir.join("hello.cwasm");
    let mut cmd = wload();
    cmd.arg("compile").arg(guest("hello")).arg("-o").arg(&cwasm);
    let out = run(cmd, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let server = server();
    let mut cmd = wload();
    cmd.arg("run")
        .arg(&cwasm)
        .args(["--iterations", "10", "-q", "-e"])
        .arg(format!("BASE_URL={}", server.base_url()));
    let out = run(cmd, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.stats.requests(), 10);
}
