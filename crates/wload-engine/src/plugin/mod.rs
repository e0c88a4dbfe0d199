//! Scenario plugins: components of the world `wload:scenario/plugin`,
//! run directly with parameters. Two versions run side by side, as tests
//! of both `wload:test` versions do: `@0.2.0` (`wit/test-0.2/scenario.wit`),
//! which imports `wload:test@0.2.0`'s interfaces, and `@0.1.0`
//! (`wit/scenario.wit`), which imports 0.1.0's. Their exports and
//! parameter types are the same; [`VersionedPluginPre`] picks the bindings
//! by the version of `wload:test` the plugin imports
//! ([`World::of_imports`](crate::component::World::of_imports)).
//!
//! A plugin imports the same interfaces as a test, so it links against
//! the same host linker and runs in the same VU stores; only its exports
//! differ. [`Guest`] hides that difference from the run and the
//! executors: a plugin answers `options()` with nothing and `functions()`
//! with its one entry point, and every instance of it is configured with
//! the run's parameters ([`params`]) as soon as it is created.
//!
//! Library plugins, which export interfaces for tests to import rather
//! than entry points, are linked into the test before it is compiled
//! ([`compose`]).

pub mod caps;
pub mod compose;
pub mod params;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result};
use wasmtime::Store;
use wasmtime::component::InstancePre;
use wload_http::{BodyPool, Client, ClientConfig, EgressPolicy};
use wload_metrics::{Recorder, Registry, TagSet};

use crate::WasmtimeResult;
use crate::component::{CompiledTest, VersionedPre, VersionedTest, World};
use crate::host::{self, RunShared, VuScenario, VuState};
use crate::sandbox::Sandbox;

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "wload:scenario/plugin@0.1.0",
    exports: { default: async },
    // The imports are the test world's: one implementation serves both.
    with: {
        "wload:test/http": crate::host::wload::test::http,
        "wload:test/checks": crate::host::wload::test::checks,
        "wload:test/metrics": crate::host::wload::test::metrics,
        "wload:test/vu": crate::host::wload::test::vu,
    },
});

// The world's `use` already brings `Description`, `Param` and
// `ParamError` to this module.
pub use wload::scenario::types::{ParamKind, ParamSpec, ParamValue};

/// The bindings of `wload:scenario/plugin@0.2.0`. Its imports are the
/// 0.2 test world's, and its parameter types are 0.1's (the records are
/// the same), so `params` and `describe` serve both versions.
pub mod v0_2 {
    wasmtime::component::bindgen!({
        path: "../../wit/test-0.2",
        world: "wload:scenario/plugin@0.2.0",
        exports: { default: async },
        with: {
            "wload:test/types": crate::host::v0_2::wload::test::types,
            "wload:test/http": crate::host::v0_2::wload::test::http,
            "wload:test/checks": crate::host::v0_2::wload::test::checks,
            "wload:test/metrics": crate::host::v0_2::wload::test::metrics,
            "wload:test/vu": crate::host::v0_2::wload::test::vu,
            "wload:scenario/types": super::wload::scenario::types,
        },
    });

    /// The world plugins are built against now.
    pub const WORLD: &str = "wload:scenario/plugin@0.2.0";
}

/// The world plugins are built against now; [`WORLD_V0_1`]'s run too.
pub const WORLD: &str = v0_2::WORLD;

/// The first plugin world, which the engine keeps running.
pub const WORLD_V0_1: &str = "wload:scenario/plugin@0.1.0";

/// The plugin worlds, for messages.
pub const WORLDS: &str = "wload:scenario/plugin@0.2.0 (or wload:scenario/plugin@0.1.0)";

/// The plugin world whose imports are those of the test world `world`.
pub fn world_name(world: World) -> &'static str {
    match world {
        World::V0_1 => WORLD_V0_1,
        World::V0_2 => WORLD,
    }
}

/// The one entry point a plugin has, as scenarios name it in `exec`.
pub const ENTRY_POINT: &str = "default";

/// What a component is to the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestKind {
    /// A test of `wload:test/test`.
    Test,
    /// A plugin of `wload:scenario/plugin`.
    Plugin,
}

/// Pre-linked instance factory of a plugin of either version.
#[derive(Clone)]
pub enum VersionedPluginPre {
    V0_1(PluginPre<VuState>),
    V0_2(v0_2::PluginPre<VuState>),
}

impl VersionedPluginPre {
    /// `pre` checked against the exports of the plugin world of `world`,
    /// the version of `wload:test` the plugin imports.
    pub fn new(pre: InstancePre<VuState>, world: World) -> Result<Self> {
        Ok(match world {
            World::V0_1 => VersionedPluginPre::V0_1(PluginPre::new(pre).anyhow()?),
            World::V0_2 => VersionedPluginPre::V0_2(v0_2::PluginPre::new(pre).anyhow()?),
        })
    }

    pub fn instance_pre(&self) -> &InstancePre<VuState> {
        match self {
            VersionedPluginPre::V0_1(pre) => pre.instance_pre(),
            VersionedPluginPre::V0_2(pre) => pre.instance_pre(),
        }
    }

    pub async fn instantiate_async(
        &self,
        store: &mut Store<VuState>,
    ) -> wasmtime::Result<VersionedPlugin> {
        Ok(match self {
            VersionedPluginPre::V0_1(pre) => {
                VersionedPlugin::V0_1(pre.instantiate_async(store).await?)
            }
            VersionedPluginPre::V0_2(pre) => {
                VersionedPlugin::V0_2(pre.instantiate_async(store).await?)
            }
        })
    }
}

/// One instance of a plugin of either version: the same exports, the
/// same parameter types.
pub enum VersionedPlugin {
    V0_1(Plugin),
    V0_2(v0_2::Plugin),
}

impl VersionedPlugin {
    pub async fn call_describe(&self, store: &mut Store<VuState>) -> wasmtime::Result<Description> {
        match self {
            VersionedPlugin::V0_1(p) => p.call_describe(store).await,
            VersionedPlugin::V0_2(p) => p.call_describe(store).await,
        }
    }

    pub async fn call_configure(
        &self,
        store: &mut Store<VuState>,
        params: &[Param],
    ) -> wasmtime::Result<Result<(), ParamError>> {
        match self {
            VersionedPlugin::V0_1(p) => p.call_configure(store, params).await,
            VersionedPlugin::V0_2(p) => p.call_configure(store, params).await,
        }
    }

    pub async fn call_setup(
        &self,
        store: &mut Store<VuState>,
    ) -> wasmtime::Result<Result<Option<String>, String>> {
        match self {
            VersionedPlugin::V0_1(p) => p.call_setup(store).await,
            VersionedPlugin::V0_2(p) => p.call_setup(store).await,
        }
    }

    pub async fn call_iteration(
        &self,
        store: &mut Store<VuState>,
    ) -> wasmtime::Result<Result<(), String>> {
        match self {
            VersionedPlugin::V0_1(p) => p.call_iteration(store).await,
            VersionedPlugin::V0_2(p) => p.call_iteration(store).await,
        }
    }

    pub async fn call_teardown(
        &self,
        store: &mut Store<VuState>,
    ) -> wasmtime::Result<Result<(), String>> {
        match self {
            VersionedPlugin::V0_1(p) => p.call_teardown(store).await,
            VersionedPlugin::V0_2(p) => p.call_teardown(store).await,
        }
    }
}

/// Pre-linked instance factory of a test or of a configured plugin.
#[derive(Clone)]
pub enum GuestPre {
    /// Of either version of the test world.
    Test(VersionedPre),
    Plugin {
        /// Of either version of the plugin world.
        pre: VersionedPluginPre,
        /// The run's parameters, checked, given to every instance.
        params: Arc<Vec<Param>>,
    },
}

/// One instance of a test or a plugin in a store.
pub enum Guest {
    Test(VersionedTest),
    Plugin(VersionedPlugin),
}

impl GuestPre {
    /// A plugin's, whose instances get `params` in `configure` (already
    /// checked against its description). A test's is
    /// [`CompiledTest::guest_pre`]'s to make: it knows the test's world.
    pub fn plugin(pre: InstancePre<VuState>, world: World, params: Vec<Param>) -> Result<Self> {
        Ok(GuestPre::Plugin {
            pre: VersionedPluginPre::new(pre, world)?,
            params: Arc::new(params),
        })
    }

    /// A new instance in `store`; a plugin's is configured with the
    /// run's parameters before it is returned.
    pub async fn instantiate_async(&self, store: &mut Store<VuState>) -> Result<Guest> {
        match self {
            GuestPre::Test(pre) => Ok(Guest::Test(pre.instantiate_async(&mut *store).await?)),
            GuestPre::Plugin { pre, params } => {
                let plugin = pre.instantiate_async(&mut *store).await.anyhow()?;
                plugin
                    .call_configure(&mut *store, params)
                    .await
                    .anyhow()
                    .context("the plugin's configure() trapped")?
                    .map_err(Refused)?;
                Ok(Guest::Plugin(plugin))
            }
        }
    }
}

impl Guest {
    /// The test's own options as JSON; a plugin has none.
    pub async fn call_options(&self, store: &mut Store<VuState>) -> wasmtime::Result<String> {
        match self {
            Guest::Test(t) => t.call_options(store).await,
            Guest::Plugin(_) => Ok(String::new()),
        }
    }

    /// The entry points scenarios may name in `exec`.
    pub async fn call_functions(
        &self,
        store: &mut Store<VuState>,
    ) -> wasmtime::Result<Vec<String>> {
        match self {
            Guest::Test(t) => t.call_functions(store).await,
            Guest::Plugin(_) => Ok(vec![ENTRY_POINT.to_owned()]),
        }
    }

    pub async fn call_setup(
        &self,
        store: &mut Store<VuState>,
    ) -> wasmtime::Result<Result<Option<String>, String>> {
        match self {
            Guest::Test(t) => t.call_setup(store).await,
            Guest::Plugin(p) => p.call_setup(store).await,
        }
    }

    /// One iteration of `exec` (a plugin has only [`ENTRY_POINT`], which
    /// the run has checked every scenario names).
    pub async fn call_iteration(
        &self,
        store: &mut Store<VuState>,
        exec: &str,
    ) -> wasmtime::Result<Result<(), String>> {
        match self {
            Guest::Test(t) => t.call_iteration(store, exec).await,
            Guest::Plugin(p) => p.call_iteration(store).await,
        }
    }

    pub async fn call_teardown(
        &self,
        store: &mut Store<VuState>,
    ) -> wasmtime::Result<Result<(), String>> {
        match self {
            Guest::Test(t) => t.call_teardown(store).await,
            Guest::Plugin(p) => p.call_teardown(store).await,
        }
    }
}

/// `configure` refused the run's parameters (the plugin's own check).
#[derive(Debug)]
pub struct Refused(pub ParamError);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the plugin refused parameter {}: {}",
            self.0.name, self.0.message
        )
    }
}

impl std::error::Error for Refused {}

/// The plugin's description, asked of an instance of its own on the
/// `sandbox`'s engine (which must be a probe, not a pool), in a store
/// whose client may contact no address: `describe` is not for sending
/// requests. Checked to be usable: names, kinds and defaults the engine
/// can hold parameters to.
pub async fn describe(compiled: &CompiledTest, sandbox: &Sandbox) -> Result<Description> {
    let pre = compiled.plugin_pre(&sandbox.engine)?;
    let mut store = probe_store(sandbox)?;
    let plugin = pre
        .instantiate_async(&mut store)
        .await
        .anyhow()
        .context("cannot instantiate the plugin")?;
    let description = plugin
        .call_describe(&mut store)
        .await
        .anyhow()
        .context("the plugin's describe() trapped")?;
    params::check_description(&description)?;
    Ok(description)
}

/// A store on the probe `sandbox` for asking a plugin about itself
/// (`describe`, `capabilities`): its client may contact no address.
pub(crate) fn probe_store(sandbox: &Sandbox) -> Result<Store<VuState>> {
    let config = ClientConfig {
        egress: Some(Arc::new(EgressPolicy::tenant(Some(Vec::new())))),
        ..ClientConfig::default()
    };
    let shared = Arc::new(RunShared {
        recorder: Arc::new(Recorder::new(Arc::new(Registry::new()))),
        client: Arc::new(Client::new(config, BodyPool::new(1))?),
        env: HashMap::new(),
        setup_data: OnceLock::new(),
        run_tags: TagSet::empty(),
        rps: None,
    });
    let scenario = VuScenario::new(
        "describe",
        HashMap::new(),
        [],
        &TagSet::empty(),
        Default::default(),
    );
    Ok(host::new_store(
        &sandbox.engine,
        VuState::new(shared, sandbox, 0, scenario),
    ))
}
