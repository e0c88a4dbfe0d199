//! Which version of the test world a component targets, and one instance
//! type over both, so that the run and the executors drive a 0.1 test and
//! a 0.2 test alike.
//!
//! The version is read from the component's imports (`wload:test/http@0.2.0`
//! and the like); a component importing none of wload's interfaces is held
//! to whichever world its exports match. A test linked with a library
//! plugin built against 0.1 imports both versions: its exports are its
//! own, so any 0.2 import makes it a 0.2 test.
//!
//! 0.2's `iteration` takes the index of an entry point in `functions()`
//! rather than its name. The run asks `functions()` once, of its probe
//! instance; the list is kept in the [`CompiledTest`](super::CompiledTest)
//! both engines' instances come from, so a VU turns its scenario's `exec`
//! into the index without asking its own instance.

use std::sync::{Arc, OnceLock};

use anyhow::Result;
use wasmtime::component::{Component, InstancePre};
use wasmtime::{Engine, Store};

use crate::WasmtimeResult;
use crate::host::{self, VuState, v0_2};

/// A version of the world `wload:test/test`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum World {
    V0_1,
    V0_2,
}

impl World {
    /// The world's full name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            World::V0_1 => super::WORLD,
            World::V0_2 => v0_2::WORLD,
        }
    }

    /// The version the component's imports of `wload:test` name, if it
    /// imports any.
    pub fn of_imports(engine: &Engine, component: &Component) -> Option<World> {
        let mut found = None;
        for (name, _) in component.component_type().imports(engine) {
            let Some(version) = name
                .strip_prefix("wload:test/")
                .and_then(|rest| rest.split_once('@'))
                .map(|(_, version)| version)
            else {
                continue;
            };
            if version.starts_with("0.2.") {
                return Some(World::V0_2);
            }
            found = Some(World::V0_1);
        }
        found
    }
}

/// The entry points a test's `functions()` answered, once the run asked.
pub type Entries = Arc<OnceLock<Vec<String>>>;

/// Pre-linked instance factory of a test of either version.
#[derive(Clone)]
pub enum VersionedPre {
    V0_1(host::TestPre<VuState>),
    V0_2 {
        pre: v0_2::TestPre<VuState>,
        entries: Entries,
    },
}

impl VersionedPre {
    /// `pre` checked against the exports of `world`.
    pub fn new(pre: InstancePre<VuState>, world: World, entries: Entries) -> Result<Self> {
        Ok(match world {
            World::V0_1 => VersionedPre::V0_1(host::TestPre::new(pre).anyhow()?),
            World::V0_2 => VersionedPre::V0_2 {
                pre: v0_2::TestPre::new(pre).anyhow()?,
                entries,
            },
        })
    }

    pub async fn instantiate_async(&self, store: &mut Store<VuState>) -> Result<VersionedTest> {
        Ok(match self {
            VersionedPre::V0_1(pre) => {
                VersionedTest::V0_1(pre.instantiate_async(store).await.anyhow()?)
            }
            VersionedPre::V0_2 { pre, entries } => {
                let instance = pre
                    .instance_pre()
                    .instantiate_async(&mut *store)
                    .await
                    .anyhow()?;
                let test = v0_2::Test::new(&mut *store, &instance).anyhow()?;
                // Kept for the calls the host makes into the instance
                // (a JavaScript test's plugins, host/js_plugins.rs).
                store.data_mut().instance = Some(instance);
                VersionedTest::V0_2 {
                    test,
                    entries: entries.clone(),
                }
            }
        })
    }
}

/// One instance of a test of either version.
pub enum VersionedTest {
    V0_1(host::Test),
    V0_2 { test: v0_2::Test, entries: Entries },
}

impl VersionedTest {
    pub async fn call_options(&self, store: &mut Store<VuState>) -> wasmtime::Result<String> {
        match self {
            VersionedTest::V0_1(t) => t.call_options(store).await,
            VersionedTest::V0_2 { test, .. } => test.call_options(store).await,
        }
    }

    /// The entry points; a 0.2 test's are kept for [`Self::call_iteration`].
    pub async fn call_functions(
        &self,
        store: &mut Store<VuState>,
    ) -> wasmtime::Result<Vec<String>> {
        match self {
            VersionedTest::V0_1(t) => t.call_functions(store).await,
            VersionedTest::V0_2 { test, entries } => {
                let functions = test.call_functions(store).await?;
                let _ = entries.set(functions.clone());
                Ok(functions)
            }
        }
    }

    pub async fn call_setup(
        &self,
        store: &mut Store<VuState>,
    ) -> wasmtime::Result<Result<Option<String>, String>> {
        match self {
            VersionedTest::V0_1(t) => t.call_setup(store).await,
            VersionedTest::V0_2 { test, .. } => test.call_setup(store).await,
        }
    }

    /// One iteration of the entry point named `exec`.
    pub async fn call_iteration(
        &self,
        store: &mut Store<VuState>,
        exec: &str,
    ) -> wasmtime::Result<Result<(), String>> {
        match self {
            VersionedTest::V0_1(t) => t.call_iteration(store, exec).await,
            VersionedTest::V0_2 { test, entries } => {
                // Runs ask the probe first; an embedder that did not gets
                // the list from this instance, once.
                let functions = match entries.get() {
                    Some(functions) => functions,
                    None => {
                        let functions = test.call_functions(&mut *store).await?;
                        entries.get_or_init(|| functions)
                    }
                };
                let Some(index) = functions.iter().position(|f| f == exec) else {
                    return Ok(Err(format!(
                        "the test has no entry point {exec:?}; it exports {}",
                        functions.join(", ")
                    )));
                };
                let index = u32::try_from(index).unwrap_or(u32::MAX);
                test.call_iteration(store, index).await
            }
        }
    }

    pub async fn call_teardown(
        &self,
        store: &mut Store<VuState>,
    ) -> wasmtime::Result<Result<(), String>> {
        match self {
            VersionedTest::V0_1(t) => t.call_teardown(store).await,
            VersionedTest::V0_2 { test, .. } => test.call_teardown(store).await,
        }
    }
}
