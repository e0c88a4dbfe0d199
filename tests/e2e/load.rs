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

#[test]
fn ctrl_c_stops_gracefully_and_prints_the_summary() {
    let server = server();
    let mut cmd = wload();
    cmd.arg("run")
        .arg(guest("browse"))
        .args(["--vus", "5", "--duration", "60s", "-e"])
        .arg(format!("BASE_URL={}", server.base_url()));
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("start wload");
    std::thread::sleep(Duration::from_millis(2500));
    // SAFETY: sending SIGINT to the child we started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let started = std::time::Instant::now();
    let out = child.wait_with_output().expect("wait for wload");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "graceful stop took {:?}",
        started.elapsed()
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(105),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("http_reqs"),
        "no summary after Ctrl-C:\n{stdout}"
    );
    assert!(stdout.contains("✓ home is 200"), "{stdout}");
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
