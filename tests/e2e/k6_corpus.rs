//! k6 scripts run as k6 runs them, with `wload run script.js`: the scripts
//! of tests/e2e/k6-corpus (k6's idioms, HTTP only: `k6/http`, `k6`,
//! `k6/metrics`, `export const options`, init code reading `__ENV` and
//! `__VU` per VU; written in the shapes of k6's own examples and docs, see
//! its README) run unchanged except their target host, against the
//! loopback target server, built on the fly by the binary (which installs
//! its JavaScript SDK into the cache once) and cached, so a second run
//! builds nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::*;

/// A first run builds (about 15 s) and compiles (a minute or more on a
/// busy machine) a 12 MB component.
const LIMIT: Duration = Duration::from_secs(480);

/// The stand-in host the corpus scripts that do not read `BASE_URL`
/// are written against.
const STAND_IN_HOST: &str = "http://test.k6.local";

/// One corpus run at a time: each first run compiles a 12 MB component,
/// which takes both cores of a CI machine (and a build's memory) already.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `k6-corpus/<name>` with its stand-in host pointed at `base_url`, in
/// the scratch folder `label`: the only edit a script gets.
fn pointed_at(label: &str, name: &str, base_url: &str) -> PathBuf {
    let src = repo_root().join("tests/e2e/k6-corpus").join(name);
    let text = std::fs::read_to_string(&src).expect("read the corpus script");
    let dir = scratch(label);
    let script = dir.join(name);
    std::fs::write(&script, text.replace(STAND_IN_HOST, base_url)).expect("write the script");
    script
}

/// `wload run <script> <args>` with a summary export; the run must exit 0.
fn run_script(label: &str, script: &Path, base_url: &str, args: &str) -> Finished {
    let run = run_file(label, script, base_url, args, LIMIT);
    assert_eq!(
        run.code(),
        Some(0),
        "{label}: stdout: {}\nstderr: {}",
        run.stdout(),
        run.stderr()
    );
    run
}

/// A fixed host, substituted; the second run of the script finds its
/// build in the cache and builds nothing.
#[test]
fn k6_get_with_a_fixed_host_built_once() {
    let _serial = serial();
    let server = server();
    let script = pointed_at("k6-corpus-get", "get.js", &server.base_url());
    let run_once = |label: &str| {
        let export = scratch(label).join("summary.json");
        let mut cmd = wload();
        cmd.arg("run")
            .arg(&script)
            .args(["--iterations", "7", "--summary-export"])
            .arg(&export);
        let out = run(cmd, LIMIT);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{label}: {stderr}");
        stderr
    };
    let first = run_once("k6-get-1");
    // The run is shown by the script's name, not the built component's.
    assert!(
        first.contains(&format!("script: {}", script.display())),
        "names the script: {first}"
    );
    let second = run_once("k6-get-2");
    assert!(
        !second.contains("wload: building"),
        "the second run uses the cached build: {second}"
    );
    assert_eq!(server.stats.requests(), 14);
}

/// `(passes, fails)` of the check `name` in the top-level group `group`.
fn group_check(run: &Finished, group: &str, name: &str) -> (u64, u64) {
    let groups = run.summary["root_group"]["groups"]
        .as_array()
        .expect("groups array");
    let g = groups
        .iter()
        .find(|g| g["name"] == group)
        .unwrap_or_else(|| panic!("no group {group:?} in {groups:#?}"));
    let c = g["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no check {name:?} in group {group:?}: {g:#}"));
    (
        c["passes"].as_u64().expect("passes"),
        c["fails"].as_u64().expect("fails"),
    )
}

#[test]
fn k6_thresholds_with_env_at_the_top_level() {
    let _serial = serial();
    let server = server();
    let script = pointed_at("k6-corpus-thresholds", "thresholds.js", &server.base_url());
    let run = run_script("k6_thresholds", &script, &server.base_url(), "");
    // options: 6 iterations of one GET and a batch of two.
    assert_eq!(server.stats.requests(), 18);
    assert_eq!(run.metric("iterations", "count"), 6.0);
    for check in ["status is 200", "body is present"] {
        assert_eq!(run.check(check), (6, 0), "check {check:?}");
    }
    for check in ["assets are 200", "asset sizes"] {
        assert_eq!(
            group_check(&run, "Static Assets", check),
            (6, 0),
            "check {check:?}"
        );
    }
    let metrics = &run.summary["metrics"];
    let rate = &metrics["check_failure_rate"];
    assert_eq!(rate["value"].as_f64(), Some(0.0), "{rate:#}");
    for (metric, threshold) in [
        ("check_failure_rate", "rate<0.01"),
        ("check_failure_rate", "rate<=0.05"),
        ("http_req_duration", "p(95)<5000"),
        ("http_req_duration{staticAsset:yes}", "p(99)<5000"),
    ] {
        assert_eq!(
            metrics[metric]["thresholds"][threshold]["ok"].as_bool(),
            Some(true),
            "{metric}: {threshold}: {:#}",
            metrics[metric]
        );
    }
}

#[test]
fn k6_custom_metrics() {
    let _serial = serial();
    let server = server();
    let script = pointed_at(
        "k6-corpus-custom_metrics",
        "custom_metrics.js",
        &server.base_url(),
    );
    let run = run_script("k6_custom_metrics", &script, &server.base_url(), "");
    assert_eq!(server.stats.requests(), 5);
    assert_eq!(run.metric("calls", "count"), 5.0);
    assert_eq!(run.metric("last_size", "value"), 1000.0);
    assert_eq!(run.metric("ok_rate", "value"), 1.0);
    assert!(run.metric("waiting_time", "max") > 0.0);
    assert_eq!(run.check("is 200"), (5, 0));
}

/// The init code runs in every VU, after the engine is there: `__ENV` and
/// `__VU` at the top level, state kept per VU across iterations.
#[test]
fn k6_init_code_runs_per_vu() {
    let _serial = serial();
    let server = server();
    let script = pointed_at(
        "k6-corpus-init_per_vu",
        "init_per_vu.js",
        &server.base_url(),
    );
    let run = run_script(
        "k6_init_per_vu",
        &script,
        &server.base_url(),
        "-e RUN_TAG=corpus",
    );
    // setup's GET, 3 VUs × 4 iterations, 2 extra iterations.
    assert_eq!(server.stats.requests(), 1 + 12 + 2);
    assert_eq!(run.metric("per_vu_iterations", "count"), 12.0);
    for check in [
        "setup data arrived",
        "echo is 200",
        "init code ran in this VU",
        "state kept across iterations",
        "env read at the top level",
    ] {
        assert_eq!(run.check(check), (12, 0), "check {check:?}");
    }
    assert_eq!(run.check("extra got setup data"), (2, 0));
    assert_eq!(run.check("teardown got setup data"), (1, 0));
}

#[test]
fn k6_post_json_cookies_and_redirects() {
    let _serial = serial();
    let server = server();
    let script = pointed_at(
        "k6-corpus-post_cookies",
        "post_cookies.js",
        &server.base_url(),
    );
    let run = run_script("k6_post_cookies", &script, &server.base_url(), "");
    // Per iteration: POST, the cookie-setting redirect and its target,
    // one unfollowed redirect, one 404.
    assert_eq!(server.stats.requests(), 3 * 5);
    for check in [
        "echoed json",
        "content type kept",
        "redirect followed to the cookies",
        "jar has the cookie",
        "redirect not followed",
        "is 404",
    ] {
        assert_eq!(run.check(check), (3, 0), "check {check:?}");
    }
    assert_eq!(run.metric("http_req_failed", "value"), 0.0);
}

/// TypeScript runs as it is, as in k6: esbuild (installed with npm into
/// the cache once) strips the types, the JavaScript build does the rest.
#[test]
fn k6_typescript_runs_as_it_is() {
    let _serial = serial();
    let server = server();
    let script = pointed_at("k6-corpus-typescript", "typescript.ts", &server.base_url());
    let run = run_script("k6_typescript", &script, &server.base_url(), "");
    assert_eq!(server.stats.requests(), 6);
    assert_eq!(run.check("typed status is 200"), (6, 0));
}

/// JavaScript and Python are built in-process (the QuickJS and MicroPython
/// runtimes are in the binary): with nothing on PATH a k6 script and a
/// Python test still build and run. The CPython build, which needs an
/// interpreter, says what to install and sends nothing.
#[test]
fn javascript_and_python_need_no_toolchain_and_a_missing_cpython_is_named() {
    let cache = scratch("k6-corpus-no-node");
    let server = server();
    let script = pointed_at("k6-corpus-no-node-script", "get.js", &server.base_url());
    let python_test = repo_root().join("examples/python/hello/hello.py");
    for test in [&script, &python_test] {
        let before = server.stats.requests();
        let mut cmd = wload();
        cmd.env("WLOAD_CACHE_DIR", &cache)
            .env("PATH", cache.join("empty"))
            .env_remove("WLOAD_PYTHON")
            .arg("run")
            .arg(test)
            .args(["--vus", "1", "--iterations", "2", "--quiet"])
            .arg("-e")
            .arg(format!("BASE_URL={}", server.base_url()));
        let out = run(cmd, Duration::from_secs(120));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{}: {stderr}", test.display());
        assert!(server.stats.requests() > before, "{stderr}");
    }

    let before = server.stats.requests();
    let mut cmd = wload();
    cmd.env("WLOAD_CACHE_DIR", &cache)
        .env("PATH", cache.join("empty"))
        .env("WLOAD_PYTHON_RUNTIME", "cpython")
        .env_remove("WLOAD_PYTHON")
        .arg("run")
        .arg(&python_test)
        .arg("-e")
        .arg(format!("BASE_URL={}", server.base_url()));
    let out = run(cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    for text in [
        "Python 3.11 or later",
        "apt-get install python3 python3-venv",
        "leave WLOAD_PYTHON_RUNTIME unset",
    ] {
        assert!(
            stderr.contains(text),
            "names what to install ({text}): {stderr}"
        );
    }
    assert_eq!(server.stats.requests(), before);
}

/// `wload run test.py`: examples/python/hello built on the fly, by the
/// MicroPython runtime (the default) and, with
/// `WLOAD_PYTHON_RUNTIME=cpython`, by componentize-py, which the binary
/// installs into a venv in the cache once.
#[test]
fn a_python_test_runs_from_its_source() {
    let _serial = serial();
    let test = repo_root().join("examples/python/hello/hello.py");
    for runtime in ["micropython", "cpython"] {
        let server = server();
        let label = format!("py_from_source_{runtime}");
        let export = scratch(&label).join("summary.json");
        let mut cmd = wload();
        cmd.env("WLOAD_PYTHON_RUNTIME", runtime)
            .arg("run")
            .arg(&test)
            .args(["--vus", "2", "--iterations", "10", "--quiet", "-e"])
            .arg(format!("BASE_URL={}", server.base_url()));
        let run = run_exporting(cmd, &export, LIMIT);
        assert_eq!(run.code(), Some(0), "{label}: stderr: {}", run.stderr());
        assert_eq!(server.stats.requests(), 10, "{label}");
        assert_eq!(run.check("status is 200"), (10, 0), "{label}");
    }
}
