//! A run driven in-process, as a service embedding the engine drives it
//! (many runs in one process): whichever way a run ends, it leaves none
//! of its tasks behind. A leaked Ctrl-C watcher would keep SIGINT from
//! ending the process and stop, or mark aborted, a later run.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Map, json};
use wload_engine::component::Cache;
use wload_engine::executor::Segment;
use wload_engine::run::{RunOptions, TestSource, run};
use wload_engine::sandbox::SandboxLimits;
use wload_http::ClientConfig;

#[path = "../../wload/guests.rs"]
mod guests;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_setup_fails_leaves_no_task_behind() {
    let test = guests::built_guest("faults");
    let runtime = tokio::runtime::Handle::current();
    let before = runtime.metrics().num_alive_tasks();
    let Some(cli_options) = json!({"iterations": 5}).as_object().cloned() else {
        unreachable!("an object")
    };
    let opts = RunOptions {
        test: TestSource::File(test),
        cli_options,
        env_options: Map::new(),
        params: Vec::new(),
        with: Vec::new(),
        grants: Default::default(),
        config_file: None,
        env: HashMap::from([("FAULT".to_owned(), "setup".to_owned())]),
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
    let Err(error) = run(opts).await else {
        panic!("the run should end at its failing setup")
    };
    assert!(
        format!("{error:#}").contains("setup failed: setup refused on purpose"),
        "{error:#}"
    );
    // An aborted task is reaped when the runtime next gets to it.
    let mut alive = runtime.metrics().num_alive_tasks();
    for _ in 0..100 {
        if alive <= before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        alive = runtime.metrics().num_alive_tasks();
    }
    assert_eq!(alive, before, "tasks of the failed run are still alive");
}
