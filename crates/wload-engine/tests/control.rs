//! A run controlled from outside, in-process, as `wload serve` drives one
//! (issue 15): the admission check before anything is sent, a run started
//! paused and resumed, an externally-controlled scenario scaled, paused
//! and resumed, the refusals of k6's `PATCH /v1/status` semantics, stops
//! through the handle, and the `rps` pacing capped by the caller's limit.
//! Against the built-in target server on 127.0.0.1, counting what it saw.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wload_engine::component::Cache;
use wload_engine::executor::Segment;
use wload_engine::rate::RpsCap;
use wload_engine::run::{ExitError, RunHandle, RunOptions, RunOutcome, RunPlan, TestSource, run};
use wload_engine::sandbox::SandboxLimits;
use wload_http::ClientConfig;
use wload_target::TargetServer;

#[path = "../../wload/guests.rs"]
mod guests;

/// The options of a run of `examples/rust/hello` against `server`, one
/// GET per iteration and `sleep_ms` of think time after it.
fn hello(server: &TargetServer, options: Value, sleep_ms: u64) -> RunOptions {
    let Some(cli_options) = options.as_object().cloned() else {
        unreachable!("the tests give objects")
    };
    let mut env = HashMap::from([("BASE_URL".to_owned(), server.base_url())]);
    if sleep_ms > 0 {
        env.insert("SLEEP_MS".to_owned(), sleep_ms.to_string());
    }
    RunOptions {
        test: TestSource::File(hello_wasm()),
        cli_options,
        env_options: serde_json::Map::new(),
        config_file: None,
        env,
        params: Vec::new(),
        with: Vec::new(),
        grants: Default::default(),
        limits: SandboxLimits::default(),
        http: ClientConfig::default(),
        cache: Cache::disabled(),
        segment: Segment::FULL,
        quiet: true,
        progress: None,
        outputs: Vec::new(),
        out_interval: Duration::from_secs(1),
        sinks: Vec::new(),
        admit: None,
        handle: None,
        rps_limit: None,
        start_at: None,
        egress: None,
    }
}

fn hello_wasm() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| guests::built_guest("hello")).clone()
}

async fn target() -> TargetServer {
    TargetServer::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("start the target server")
}

/// Wait until `ready` holds, for at most 20 s.
async fn until(what: &str, ready: impl Fn() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Run `opts` while `control` drives it; the run's outcome.
async fn driven(opts: RunOptions, control: impl Future<Output = ()>) -> RunOutcome {
    let (outcome, ()) = tokio::join!(run(opts), control);
    outcome.expect("the run ends with an outcome")
}

/// Requests the server saw during `window`.
async fn requests_during(server: &TargetServer, window: Duration) -> u64 {
    let before = server.stats.requests();
    tokio::time::sleep(window).await;
    server.stats.requests() - before
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_sees_the_plan_and_a_refusal_sends_nothing() {
    let server = target().await;
    let seen: Arc<Mutex<Option<RunPlan>>> = Arc::default();
    let mut opts = hello(
        &server,
        json!({"scenarios": {
            "a": {"executor": "constant-vus", "vus": 3, "duration": "2s", "startTime": "1s"},
            "b": {"executor": "shared-iterations", "vus": 4, "iterations": 8, "maxDuration": "5s", "gracefulStop": "1s"},
        }}),
        0,
    );
    let keep = seen.clone();
    opts.admit = Some(Box::new(move |plan: &RunPlan| {
        *keep.lock().unwrap() = Some(plan.clone());
        Err(format!("at most 5 VUs per run, not {}", plan.max_vus))
    }));
    let Err(error) = run(opts).await else {
        panic!("the admission refused the run")
    };
    let exit = error.downcast_ref::<ExitError>().expect("an exit code");
    assert_eq!(exit.code, 104);
    assert_eq!(exit.message, "at most 5 VUs per run, not 7");
    let plan = seen.lock().unwrap().clone().expect("admit was called");
    assert_eq!(plan.max_vus, 7);
    // a: 1s + 2s + 30s of gracefulStop; b: 5s + 1s.
    assert_eq!(plan.max_duration, Duration::from_secs(33));
    assert_eq!(plan.scenarios.len(), 2);
    assert_eq!(server.stats.requests(), 0, "a refused run sent requests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_started_paused_sends_nothing_until_resumed() {
    let server = target().await;
    let handle = RunHandle::new();
    let mut opts = hello(
        &server,
        json!({"vus": 2, "duration": "1s", "paused": true}),
        20,
    );
    opts.handle = Some(handle.clone());
    let admitted = Arc::new(Mutex::new(false));
    let seen = admitted.clone();
    opts.admit = Some(Box::new(move |_| {
        *seen.lock().unwrap() = true;
        Ok(())
    }));
    let outcome = driven(opts, async {
        until("the run is paused with its VUs", || {
            let s = handle.status();
            s.paused && s.vus_max == 2
        })
        .await;
        assert!(*admitted.lock().unwrap());
        assert!(!handle.status().running);
        assert_eq!(
            handle.set_paused(true),
            Err("execution is already paused".to_owned())
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(server.stats.requests(), 0, "a paused run sent requests");
        assert_eq!(handle.set_paused(false), Ok(()));
        until("the run runs", || handle.status().running).await;
    })
    .await;
    assert_eq!(outcome.exit_code, 0);
    assert!(
        server.stats.requests() > 10,
        "{} requests",
        server.stats.requests()
    );
    // The run's 1s began at the resume: the time paused is not in it.
    assert!(outcome.report.elapsed >= Duration::from_secs(1));
    assert!(
        outcome.report.elapsed < Duration::from_secs(3),
        "{:?}",
        outcome.report.elapsed
    );
    let end = handle.status();
    assert!(end.stopped && !end.running && !end.paused, "{end:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_externally_controlled_scenario_scales_pauses_and_resumes() {
    let server = target().await;
    let handle = RunHandle::new();
    let mut opts = hello(
        &server,
        json!({"scenarios": {"live": {
            "executor": "externally-controlled", "vus": 1, "maxVUs": 4, "duration": 0,
        }}}),
        20,
    );
    opts.handle = Some(handle.clone());
    let outcome = driven(opts, async {
        until("one VU runs", || {
            let s = handle.status();
            s.running && s.vus == 1
        })
        .await;
        assert_eq!(handle.status().vus_max, 4);
        let one = requests_during(&server, Duration::from_millis(600)).await;
        assert_eq!(handle.scale(Some(4), None), Ok(()));
        until("four VUs run", || handle.status().vus == 4).await;
        let four = requests_during(&server, Duration::from_millis(600)).await;
        // About 30 a second per VU (20 ms of think time after each).
        assert!(four > 2 * one && one > 0, "1 VU: {one}, 4 VUs: {four}");

        // k6's refusals, nothing changed by them.
        let err = handle.scale(Some(5), None).unwrap_err();
        assert!(
            err.contains("should be more than or equal to the number of active VUs (5)"),
            "{err}"
        );
        let err = handle.scale(None, Some(8)).unwrap_err();
        assert!(
            err.contains("cannot be raised above the starting number of max VUs (4)"),
            "{err}"
        );
        assert_eq!(handle.status().vus, 4);

        assert_eq!(handle.set_paused(true), Ok(()));
        assert_eq!(
            handle.set_paused(true),
            Err("test execution was already paused".to_owned())
        );
        until("the VUs are idle", || handle.status().vus == 0).await;
        assert!(handle.status().paused && handle.status().running);
        let paused = requests_during(&server, Duration::from_millis(400)).await;
        assert_eq!(paused, 0, "requests while paused");
        // Scaling while paused is kept for the resume.
        assert_eq!(handle.scale(Some(2), None), Ok(()));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(handle.status().vus, 0);
        assert_eq!(handle.set_paused(false), Ok(()));
        until("two VUs run again", || handle.status().vus == 2).await;
        assert!(requests_during(&server, Duration::from_millis(300)).await > 0);
        handle.stop();
    })
    .await;
    // Stopped through the handle, as by Ctrl-C.
    assert_eq!(outcome.exit_code, 105);
    let end = handle.status();
    assert!(end.stopped && !end.running, "{end:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_executors_refuse_a_mid_run_pause_and_a_scale() {
    let server = target().await;
    let handle = RunHandle::new();
    let mut opts = hello(&server, json!({"vus": 2, "duration": "1s"}), 20);
    opts.handle = Some(handle.clone());
    let outcome = driven(opts, async {
        until("the run runs", || handle.status().running).await;
        assert_eq!(
            handle.set_paused(true),
            Err(
                "constant-vus executor 'default' doesn't support pause and resume operations after its start"
                    .to_owned()
            )
        );
        assert_eq!(
            handle.scale(Some(3), None),
            Err("an externally-controlled executor needs to be configured for live configuration updates".to_owned())
        );
        assert!(!handle.status().paused);
    })
    .await;
    assert_eq!(outcome.exit_code, 0);
    assert!(server.stats.requests() > 10);
}

/// Two stops: the first lets the running iteration finish (it waits on a
/// slow response), the second cuts it at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_stop_cuts_what_the_first_lets_finish() {
    let server = target().await;
    let handle = RunHandle::new();
    let mut opts = hello(&server, json!({"vus": 1, "duration": "1m"}), 0);
    opts.env
        .insert("URL_PATH".to_owned(), "/delay/10000".to_owned());
    opts.handle = Some(handle.clone());
    let started = Instant::now();
    let outcome = driven(opts, async {
        until("the request is in flight", || server.stats.requests() == 1).await;
        handle.stop();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(handle.status().stopped);
        assert_eq!(
            handle.status().vus,
            1,
            "the graceful stop cut the iteration"
        );
        handle.stop();
    })
    .await;
    assert_eq!(outcome.exit_code, 105);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(outcome.report.interrupted, 1);
}

/// A stop before the run has loaded its test is kept: the run then ends
/// without setup or any request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_before_the_start_ends_the_run_before_any_request() {
    let server = target().await;
    let handle = RunHandle::new();
    let mut opts = hello(&server, json!({"vus": 2, "duration": "5s"}), 0);
    opts.handle = Some(handle.clone());
    handle.stop();
    let started = Instant::now();
    let outcome = run(opts).await.expect("an outcome");
    assert_eq!(outcome.exit_code, 105);
    assert_eq!(server.stats.requests(), 0);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

/// The options ask for 1000 requests a second, the caller's limit (a
/// tenant's quota) for 20: 2 s of 4 VUs send about 40 (one at once, then
/// one every 50 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_rps_limit_caps_the_options() {
    let server = target().await;
    let mut opts = hello(&server, json!({"vus": 4, "duration": "2s", "rps": 1000}), 0);
    opts.rps_limit = RpsCap::new(20.0);
    let outcome = run(opts).await.expect("an outcome");
    assert_eq!(outcome.exit_code, 0);
    let sent = server.stats.requests();
    // 41 slots in the 2 s, and the slots the VUs claimed before the end
    // (up to one each), sent within the gracefulStop.
    assert!(
        (36..=46).contains(&sent),
        "{sent} requests in 2 s at 20 a second"
    );
}
