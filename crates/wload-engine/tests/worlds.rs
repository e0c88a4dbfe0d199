//! A test of `wload:test@0.1.0` and one of `@0.2.0`, run side by side in
//! one process: the engine tells their worlds apart, and the two, making
//! the same requests through different imports, record the same series
//! (requests by status and error code, checks, the custom counter) and
//! send the server the same requests. Plugins too: one of
//! `wload:scenario@0.1.0` and one of `@0.2.0` are told apart and describe
//! themselves (tests/e2e/plugin_caps.rs runs the two).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;
use wload_engine::component::{Cache, CompiledTest, World};
use wload_engine::executor::Segment;
use wload_engine::plugin::{self, GuestKind};
use wload_engine::run::{RunOptions, TestSource, run};
use wload_engine::sandbox::{Sandbox, SandboxLimits};
use wload_http::ClientConfig;
use wload_metrics::Sink;
use wload_target::TargetServer;

#[path = "../../wload/guests.rs"]
mod guests;

/// The same test against either world.
const V0_1: &str = "hello_v0_1";
const V0_2: &str = "hello";

/// Every counter and rate series of a run of `guest` (3 iterations on
/// 2 VUs against `base`), by metric name and tags: `(sum, count)` of a
/// counter, `(trues, total)` of a rate.
async fn series(guest: &str, base: String) -> BTreeMap<String, (f64, u64)> {
    let opts = RunOptions {
        test: TestSource::File(guests::built_guest(guest)),
        cli_options: json!({"iterations": 3, "vus": 2})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        env_options: Default::default(),
        params: Vec::new(),
        with: Vec::new(),
        grants: Default::default(),
        config_file: None,
        env: HashMap::from([("BASE_URL".to_owned(), base)]),
        limits: SandboxLimits::default(),
        http: ClientConfig::default(),
        cache: Cache::disabled(),
        segment: Segment::FULL,
        quiet: true,
        progress: None,
        outputs: Vec::new(),
        out_interval: Duration::from_secs(1),
        sinks: Vec::new(),
        egress: None,
        admit: None,
        handle: None,
        rps_limit: None,
        start_at: None,
    };
    let outcome = run(opts).await.expect("the run completes");
    let report = outcome.report;
    let mut found = BTreeMap::new();
    for (id, def) in report.metrics.iter().enumerate() {
        let id = u32::try_from(id).expect("a metric id");
        for (tags, sink) in report.snapshot.series_of(id) {
            let value = match sink {
                Sink::Counter { sum, count } => (*sum, *count),
                Sink::Rate { trues, total } => (*trues as f64, *total),
                _ => continue,
            };
            let tags: Vec<String> = tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
            found.insert(format!("{}{{{}}}", def.name, tags.join(",")), value);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_1_and_a_0_2_test_record_the_same() {
    let sandbox = Sandbox::probe(SandboxLimits::default()).expect("wasm engine");
    for (guest, world) in [(V0_1, World::V0_1), (V0_2, World::V0_2)] {
        let compiled = CompiledTest::load(
            &sandbox.engine,
            &guests::built_guest(guest),
            &Cache::disabled(),
        )
        .expect("a test");
        assert_eq!(compiled.world, world, "{guest}");
    }

    let server = TargetServer::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("a target server");
    let (old, new) = tokio::join!(
        series(V0_1, server.base_url()),
        series(V0_2, server.base_url())
    );
    assert_eq!(old, new, "the two versions recorded different series");
    let reqs = old
        .iter()
        .filter(|(k, _)| k.starts_with("http_reqs{"))
        .map(|(_, (sum, _))| *sum)
        .sum::<f64>();
    assert_eq!(reqs, 3.0, "{old:#?}");
    assert_eq!(server.stats.requests.load(Ordering::Relaxed), 6);
    assert!(
        old.keys()
            .any(|k| k.starts_with("checks{") && k.contains("check=status is 200")),
        "{old:#?}"
    );
    assert!(old.keys().any(|k| k.starts_with("body_bytes{")), "{old:#?}");

    // A refused connection: both record its error code and fail the check.
    let closed: SocketAddr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        listener.local_addr().expect("its address")
    };
    let base = format!("http://{closed}");
    let (old, new) = tokio::join!(series(V0_1, base.clone()), series(V0_2, base));
    assert_eq!(old, new, "the two versions recorded different series");
    assert!(
        old.keys()
            .any(|k| k.starts_with("http_reqs{") && k.contains("error_code=1212")),
        "{old:#?}"
    );
    let checks: Vec<_> = old
        .iter()
        .filter(|(k, _)| k.starts_with("checks{"))
        .collect();
    assert!(
        checks.iter().all(|(_, (trues, _))| *trues == 0.0),
        "{checks:#?}"
    );
}

/// `plugins/<package>` built: the path of its `.wasm`.
fn built_plugin(package: &str) -> std::path::PathBuf {
    let root = guests::repo_root();
    let status =
        guests::build_plugins(&root, Some(package)).expect("cannot run cargo to build the plugins");
    assert!(status.success(), "building plugins/{package} failed");
    guests::guest_dir(&root).join(format!("{}.wasm", package.replace('-', "_")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_1_and_a_0_2_plugin_are_told_apart_and_describe_themselves() {
    let sandbox = Sandbox::probe(SandboxLimits::default()).expect("wasm engine");
    for (package, world) in [
        ("caps-probe-v0-1", World::V0_1),
        ("caps-probe", World::V0_2),
    ] {
        let compiled =
            CompiledTest::load(&sandbox.engine, &built_plugin(package), &Cache::disabled())
                .expect("a plugin");
        assert_eq!(compiled.kind, GuestKind::Plugin, "{package}");
        assert_eq!(compiled.world, world, "{package}");
        let description = plugin::describe(&compiled, &sandbox)
            .await
            .expect("a description");
        assert_eq!(description.name, package);
        assert_eq!(
            description
                .params
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>(),
            ["allowed", "other"],
            "{package}"
        );
    }
}
