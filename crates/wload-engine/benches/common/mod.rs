//! Set-up shared by the benchmarks: the example guests (built like the
//! end-to-end tests build them) and one VU's store and instance, wired as
//! a run wires them, on the probe engine.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use wasmtime::Store;
use wload_engine::component::{Cache, CompiledTest, VersionedTest};
use wload_engine::host::{self, RunShared, VuScenario, VuState};
use wload_engine::sandbox::{Sandbox, SandboxLimits};
use wload_http::{BodyPool, Client, ClientConfig};
use wload_metrics::{Recorder, Registry, TagSet};

#[path = "../../../wload/guests.rs"]
mod guests;

pub use guests::built_guest as guest;

/// One VU: its store and instance.
pub struct BenchVu {
    pub store: Store<VuState>,
    pub test: VersionedTest,
}

impl BenchVu {
    /// Instantiate `wasm` as VU 1 with `-e` variables `env`.
    pub async fn new(wasm: &Path, env: &[(&str, &str)]) -> BenchVu {
        let sandbox = Sandbox::probe(SandboxLimits::default()).expect("wasm engine");
        let compiled =
            CompiledTest::load(&sandbox.engine, wasm, &Cache::disabled()).expect("compile guest");
        let pre = compiled.instance_pre(&sandbox.engine).expect("link guest");
        let client = Client::new(ClientConfig::default(), BodyPool::new(64)).expect("client");
        let setup_data = OnceLock::new();
        let _ = setup_data.set(None);
        let shared = Arc::new(RunShared {
            recorder: Arc::new(Recorder::new(Arc::new(Registry::new()))),
            client: Arc::new(client),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            setup_data,
            run_tags: TagSet::empty(),
            rps: None,
        });
        let scenario = VuScenario::new(
            "default",
            HashMap::new(),
            [],
            &TagSet::empty(),
            Default::default(),
        );
        let state = VuState::new(shared, &sandbox, 1, scenario);
        let mut store = host::new_store(&sandbox.engine, state);
        let test = pre
            .instantiate_async(&mut store)
            .await
            .expect("instantiate guest");
        BenchVu { store, test }
    }

    /// Run the entry point `exec` once; panics if it fails.
    pub async fn iterate(&mut self, exec: &str) {
        let result = self
            .test
            .call_iteration(&mut self.store, exec)
            .await
            .expect("the iteration trapped");
        if let Err(message) = result {
            panic!("the iteration failed: {message}");
        }
    }
}
