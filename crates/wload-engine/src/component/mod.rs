//! Loading a test: recognising the file, compiling it once (cached on disk
//! by content hash), checking that it is a test of the `wload:test` world
//! (0.1 or 0.2, told apart in [`world`]) or a plugin of the
//! `wload:scenario` one, and reading what the pool must provide for one
//! instance.
//!
//! Core modules carrying the world's metadata (what the AssemblyScript and
//! Go SDKs build) are turned into components first, in [`core`], WASI
//! preview 1 ones (Go) with the preview 1 adapter, in [`wasip1`].
//!
//! Nothing here knows about HTTP; the world check uses the host linker
//! only to ask whether every import is provided and every export exists.

mod cache;
mod core;
mod wasip1;
mod world;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use wasmtime::component::Component;
use wasmtime::{Engine, Precompiled};

pub use cache::Cache;
pub use core::{has_component_metadata, to_component};
pub use world::{Entries, VersionedPre, VersionedTest, World};

use crate::WasmtimeResult;
use crate::host::{self, v0_2};
use crate::plugin::compose::{self, Library};
use crate::plugin::{self, GuestKind, GuestPre, Param, VersionedPluginPre};
use crate::sandbox::InstanceNeeds;

/// The first world of tests, which the engine keeps running.
pub const WORLD: &str = "wload:test/test@0.1.0";

/// The worlds a test may target, for messages.
pub const WORLDS: &str = "wload:test/test@0.2.0 (or wload:test/test@0.1.0)";

/// What a file turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A WebAssembly component (what tests are).
    Component,
    /// A core WebAssembly module (not a component).
    CoreModule,
    /// A `.cwasm` from `wload compile`.
    Precompiled,
    /// Anything else.
    NotWasm,
}

/// Recognise a file by its first bytes.
pub fn detect(bytes: &[u8]) -> FileKind {
    match bytes {
        [0, b'a', b's', b'm', 1, 0, 0, 0, ..] => FileKind::CoreModule,
        [0, b'a', b's', b'm', _, _, 1, 0, ..] => FileKind::Component,
        _ if matches!(
            Engine::detect_precompiled(bytes),
            Some(Precompiled::Component)
        ) =>
        {
            FileKind::Precompiled
        }
        _ => FileKind::NotWasm,
    }
}

/// A compiled, checked test, ready to load into any engine configured
/// like the one that compiled it.
#[derive(Clone)]
pub struct CompiledTest {
    pub path: PathBuf,
    /// Serialized compiled code.
    pub cwasm: std::sync::Arc<Vec<u8>>,
    pub needs: InstanceNeeds,
    /// A test or a plugin.
    pub kind: GuestKind,
    /// The test world's version a test targets, or whose interfaces a
    /// plugin imports (0.2 for `wload:scenario/plugin@0.2.0`, 0.1 for
    /// `@0.1.0`).
    pub world: World,
    /// A 0.2 test's entry points, once the run asked them.
    entries: Entries,
}

impl CompiledTest {
    /// Read `path`, compile it with `engine` (or take the cached result)
    /// and check it against the world.
    pub fn load(engine: &Engine, path: &Path, cache: &Cache) -> Result<CompiledTest> {
        Self::load_with(engine, path, &[], cache)
    }

    /// [`CompiledTest::load`] of the test linked with the library plugins
    /// `with` (`wload run --with`), see [`compose`].
    pub fn load_with(
        engine: &Engine,
        path: &Path,
        with: &[Library],
        cache: &Cache,
    ) -> Result<CompiledTest> {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        Self::from_bytes_with(engine, path, &bytes, with, cache)
    }

    pub fn from_bytes(
        engine: &Engine,
        path: &Path,
        bytes: &[u8],
        cache: &Cache,
    ) -> Result<CompiledTest> {
        Self::from_bytes_with(engine, path, bytes, &[], cache)
    }

    /// [`CompiledTest::from_bytes`] with library plugins: the test is
    /// composed with them first, and the compiled composition cached
    /// under the test's and the plugins' bytes.
    pub fn from_bytes_with(
        engine: &Engine,
        path: &Path,
        bytes: &[u8],
        with: &[Library],
        cache: &Cache,
    ) -> Result<CompiledTest> {
        let name = path.display();
        let compile = |component: &[u8]| -> Result<Vec<u8>> {
            if with.is_empty() {
                return cache.get_or_compile(engine, component);
            }
            let inputs: Vec<&[u8]> = std::iter::once(bytes)
                .chain(with.iter().map(|l| l.bytes.as_slice()))
                .collect();
            cache.get_or_compose(engine, &inputs, || {
                compose::compose(&name.to_string(), component, with)
            })
        };
        let cwasm = match detect(bytes) {
            FileKind::Component => compile(bytes)?,
            FileKind::Precompiled if !with.is_empty() => bail!(
                "{name} is precompiled (a .cwasm), which cannot be linked with plugins: run the test's .wasm with --with \
                 (wload caches the compiled composition)"
            ),
            FileKind::Precompiled => bytes.to_vec(),
            FileKind::CoreModule if core::has_component_metadata(bytes) => {
                let component = core::to_component(bytes).with_context(|| {
                    format!("{name} is a core module that cannot become a component")
                })?;
                compile(&component)?
            }
            FileKind::CoreModule => bail!(
                "{name} is a core WebAssembly module, not a component, and carries no component metadata; expected a component of the world \
                 {WORLDS}: build Rust tests with `cargo build --target wasm32-wasip2` (not wasm32-unknown-unknown or wasm32-wasip1), \
                 AssemblyScript tests with `npx wload-as build`, Go tests with `go run wload/sdk/cmd/wload-go build`"
            ),
            FileKind::NotWasm => bail!(
                "{name} is not a WebAssembly file; expected a component of the world {WORLDS} \
                 (a `.wasm` built for wasm32-wasip2) or a `.cwasm` from `wload compile`"
            ),
        };
        let component = deserialize(engine, &cwasm).with_context(|| {
            format!(
                "{name} cannot be loaded (a .cwasm must come from this version of `wload compile`)"
            )
        })?;
        let (kind, world) = check_world(engine, &component)
            .with_context(|| format!("{name} is not a wload test or plugin"))?;
        let nested_calls = !with.is_empty()
            && component
                .component_type()
                .imports(engine)
                .any(|(name, _)| name == host::js_plugins::INTERFACE);
        let needs = match component.resources_required() {
            Some(r) => InstanceNeeds {
                memories: r.num_memories,
                tables: r.num_tables,
                table_elements: usize::try_from(r.max_initial_table_size.unwrap_or(0))
                    .unwrap_or(usize::MAX),
                nested_calls,
            },
            None => InstanceNeeds {
                memories: 4,
                tables: 4,
                table_elements: 10_000,
                nested_calls,
            },
        };
        Ok(CompiledTest {
            path: path.to_owned(),
            cwasm: std::sync::Arc::new(cwasm),
            needs,
            kind,
            world,
            entries: Entries::default(),
        })
    }

    /// The component, for `engine` (which must share the compiling
    /// engine's code settings, as the sandbox's engines do).
    pub fn component(&self, engine: &Engine) -> Result<Component> {
        deserialize(engine, &self.cwasm)
    }

    /// Pre-linked instance factory of a test for `engine`.
    pub fn instance_pre(&self, engine: &Engine) -> Result<VersionedPre> {
        if self.kind == GuestKind::Plugin {
            bail!(
                "{} is a plugin (a component of {}), not a test: only tests are taken here; \
                 run a plugin with `wload run PLUGIN.wasm -p NAME=VALUE`",
                self.path.display(),
                plugin::WORLDS
            );
        }
        let component = self.component(engine)?;
        let linker = host::linker(engine)?;
        let pre = linker.instantiate_pre(&component).anyhow()?;
        VersionedPre::new(pre, self.world, self.entries.clone())
    }

    /// Pre-linked instance factory of the test or the plugin for
    /// `engine`; a plugin's instances are configured with `params`.
    pub fn guest_pre(&self, engine: &Engine, params: Vec<Param>) -> Result<GuestPre> {
        let component = self.component(engine)?;
        let pre = host::linker(engine)?.instantiate_pre(&component).anyhow()?;
        match self.kind {
            GuestKind::Test => Ok(GuestPre::Test(VersionedPre::new(
                pre,
                self.world,
                self.entries.clone(),
            )?)),
            GuestKind::Plugin => GuestPre::plugin(pre, self.world, params),
        }
    }

    /// Pre-linked instance factory of the plugin, for `describe`.
    pub fn plugin_pre(&self, engine: &Engine) -> Result<VersionedPluginPre> {
        if self.kind != GuestKind::Plugin {
            bail!(
                "{} is a test, not a plugin (a plugin is a component of the world {})",
                self.path.display(),
                plugin::WORLDS
            );
        }
        let component = self.component(engine)?;
        let pre = host::linker(engine)?.instantiate_pre(&component).anyhow()?;
        VersionedPluginPre::new(pre, self.world)
    }
}

fn deserialize(engine: &Engine, cwasm: &[u8]) -> Result<Component> {
    // SAFETY: the bytes are either our own compiler's output (fresh or
    // from our cache, both written by this version) or a `.cwasm` the user
    // passed, which wasmtime checks for version and configuration before
    // loading. A `.cwasm` is trusted code, as documented for `wload compile`.
    unsafe { Component::deserialize(engine, cwasm) }.anyhow()
}

/// Check imports and exports against the worlds, with one-line errors:
/// a component exporting `describe` is held to the plugin world, any
/// other to the test world, each of the version of `wload:test` it
/// imports.
fn check_world(engine: &Engine, component: &Component) -> Result<(GuestKind, World)> {
    let is_plugin = component
        .component_type()
        .exports(engine)
        .any(|(name, _)| name == "describe");
    let worlds = if is_plugin {
        format!("the world {}", plugin::WORLDS)
    } else {
        format!("the world {WORLDS} (or, for a plugin, {})", plugin::WORLDS)
    };
    let linker = host::linker(engine)?;
    let pre = linker.instantiate_pre(component).map_err(|e| {
        let foreign = component
            .component_type()
            .imports(engine)
            .map(|(name, _)| name.to_owned())
            .find(|name| !compose::host_provides(name));
        if let Some(name) = foreign {
            return anyhow::anyhow!(
                "it imports {name}, which wload does not provide: a library plugin must export it; \
                 give that plugin with --with PLUGIN.wasm"
            );
        }
        anyhow::anyhow!(
            "it imports something wload does not provide ({}); expected a component of {worlds} \
             (imports: wload:test/types, http, checks, metrics, vu and WASI 0.2)",
            one_line(&e.to_string())
        )
    })?;
    let imported = World::of_imports(engine, component);
    if is_plugin {
        // The two plugin worlds export the same; one importing none of
        // wload's interfaces is taken as 0.2.
        let world = imported.unwrap_or(World::V0_2);
        VersionedPluginPre::new(pre, world).map_err(|e| {
            anyhow::anyhow!(
                "its exports do not match the world {} ({}); a plugin exports describe, configure, \
                 setup, iteration and teardown",
                plugin::world_name(world),
                one_line(&format!("{e:#}"))
            )
        })?;
        return Ok((GuestKind::Plugin, world));
    }
    // A test importing none of wload's interfaces is held to whichever
    // world its exports match, 0.2 first.
    let world = match imported {
        Some(world) => world,
        None if v0_2::TestPre::new(pre.clone()).is_ok() => World::V0_2,
        None => World::V0_1,
    };
    VersionedPre::new(pre, world, Entries::default()).map_err(|e| {
        // A library plugin exports interfaces and no entry point.
        let interfaces: Vec<String> = component
            .component_type()
            .exports(engine)
            .map(|(name, _)| name.to_owned())
            .filter(|name| name.contains('/'))
            .collect();
        let is_library = !interfaces.is_empty()
            && !component
                .component_type()
                .exports(engine)
                .any(|(name, _)| name == "iteration");
        if is_library {
            return anyhow::anyhow!(
                "it is a library plugin (it exports {}): a test imports it; run that test with \
                 --with PLUGIN.wasm",
                interfaces.join(", ")
            );
        }
        // Named by its imports, or else either world will do.
        let expected = match imported {
            Some(world) => world.name(),
            None => WORLDS,
        };
        anyhow::anyhow!(
            "its exports do not match the world {expected} ({}); a test exports options, setup, functions, \
             iteration and teardown (the SDKs' export macros do this)",
            one_line(&format!("{e:#}"))
        )
    })?;
    Ok((GuestKind::Test, world))
}

/// `s` with its whitespace runs (line breaks too) as single spaces.
pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_recognised_by_their_header() {
        assert_eq!(detect(b"\0asm\x01\0\0\0rest"), FileKind::CoreModule);
        assert_eq!(detect(b"\0asm\x0d\0\x01\0rest"), FileKind::Component);
        assert_eq!(detect(b"#!/bin/sh\n"), FileKind::NotWasm);
        assert_eq!(detect(b""), FileKind::NotWasm);
        assert_eq!(detect(b"\x7fELF\x02\x01\x01\0"), FileKind::NotWasm);
    }
}
