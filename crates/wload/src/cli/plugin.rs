//! `wload plugin …`: what a scenario plugin (a component of the world
//! `wload:scenario/plugin`, see wit/test-0.2/scenario.wit) says about
//! itself, so that its parameters can be found without reading its
//! source; and
//! shipping plugins through OCI registries (`push`, `pull`; the client
//! and the lock file are the wload-oci crate).

use std::io::Write as _;
use std::path::{Path, PathBuf};

mod ship;

use anyhow::{Context, Result};
use clap::Subcommand;

use wload_engine::component::{Cache, CompiledTest};
use wload_engine::plugin::{self, GuestKind, caps, params};
use wload_engine::run::{ExitError, exit};
use wload_engine::sandbox::{Sandbox, SandboxLimits};

#[derive(Debug, Subcommand)]
pub(super) enum PluginCommand {
    /// Print a plugin's name, version, docs and parameters (kinds,
    /// defaults, choices), as `-p NAME=VALUE` takes them.
    Info {
        /// The plugin (a .wasm component, or a .cwasm from `wload compile`).
        plugin: PathBuf,
        /// Print the description as JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Push a plugin to an OCI registry as a wasm artifact (one
    /// application/wasm layer) and print its digest. Credentials come from
    /// WLOAD_REGISTRY_USERNAME/WLOAD_REGISTRY_PASSWORD or Docker's
    /// config.json.
    Push {
        /// The plugin (a .wasm component).
        plugin: PathBuf,
        /// Where to: oci://HOST[:PORT]/NAME[:TAG] (TAG defaults to latest).
        target: String,
        /// Talk plain HTTP to the registry (a registry without TLS, such
        /// as one on 127.0.0.1).
        #[arg(long)]
        insecure: bool,
    },
    /// Pull a plugin from an OCI registry into a .wasm file, pinning its
    /// digest in the lock file (a later pull of a moved tag is refused).
    /// Without a reference, pull every plugin of the lock file at its
    /// pinned digest. Run the result with `wload run FILE.wasm -p …`.
    Pull {
        /// oci://HOST[:PORT]/NAME[:TAG] or oci://HOST[:PORT]/NAME@sha256:DIGEST.
        source: Option<String>,
        /// Where to write the component: a file, or a folder to write
        /// NAME.wasm into (default: NAME.wasm next to the lock file).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// The lock file to read and update.
        #[arg(long, default_value = wload_oci::lock::FILE_NAME)]
        lock: PathBuf,
        /// Take what the tag names now and pin that, instead of refusing
        /// a tag that moved from its pinned digest.
        #[arg(long)]
        update: bool,
        /// Talk plain HTTP to the registry (a registry without TLS, such
        /// as one on 127.0.0.1).
        #[arg(long)]
        insecure: bool,
    },
}

impl PluginCommand {
    pub(super) async fn run(self) -> Result<u8> {
        match self {
            PluginCommand::Info { plugin, json } => info(&plugin, json).await,
            PluginCommand::Push {
                plugin,
                target,
                insecure,
            } => ship::push(&plugin, &target, insecure).await,
            PluginCommand::Pull {
                source,
                output,
                lock,
                update,
                insecure,
            } => {
                ship::pull(
                    source.as_deref(),
                    output.as_deref(),
                    &lock,
                    update,
                    insecure,
                )
                .await
            }
        }
    }
}

/// What `wload plugin info` says of a scenario plugin.
struct Described {
    description: plugin::Description,
    /// `None`: a plugin of the plain world `plugin`.
    declared: Option<caps::Capabilities>,
    /// The world it targets, with its version: which `wload:test` it
    /// binds is what a user moving a plugin to 0.2 wants to see.
    world: String,
}

/// The description of the plugin at `path`, the capabilities it declares
/// and its world; a test is refused.
async fn describe_file(path: &Path) -> Result<Described> {
    let probe = Sandbox::probe(SandboxLimits::default())?;
    // Epochs tick for the guest timeout: a describe() that loops is cut.
    let _ticker = probe.start_ticker();
    let compiled = CompiledTest::load(&probe.engine, path, &Cache::new(Cache::default_dir()))?;
    if compiled.kind != GuestKind::Plugin {
        return Err(ExitError {
            code: exit::INVALID_CONFIG,
            message: format!(
                "{} is a test, not a plugin (a component of the world {}): run it with `wload run`",
                path.display(),
                plugin::WORLDS
            ),
        }
        .into());
    }
    let description = plugin::describe(&compiled, &probe)
        .await
        .with_context(|| format!("{} cannot describe itself", path.display()))?;
    let declared = caps::declared(&compiled, &probe)
        .await
        .with_context(|| format!("{} cannot declare its capabilities", path.display()))?;
    let world = plugin::world_name(compiled.world);
    let world = if declared.is_some() {
        world.replace("/plugin@", "/confined-plugin@")
    } else {
        world.to_owned()
    };
    Ok(Described {
        description,
        declared,
        world,
    })
}

async fn info(path: &Path, json: bool) -> Result<u8> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let text = if let Some(notes) = ship::library(path, &bytes)? {
        // A library plugin has no description to ask for: what it exports
        // is what a test imports from it.
        if json {
            let info = serde_json::json!({
                "library": true,
                "name": notes.title,
                "version": notes.version,
                "summary": notes.description,
            });
            let mut text =
                serde_json::to_string_pretty(&info).context("cannot encode the description")?;
            text.push('\n');
            text
        } else {
            format!("{} {}\n{}\n", notes.title, notes.version, notes.description)
        }
    } else {
        scenario_info(path, json).await?
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    Ok(0)
}

/// `wload plugin info` of a scenario plugin: its description and the
/// capabilities it declares.
async fn scenario_info(path: &Path, json: bool) -> Result<String> {
    let Described {
        description,
        declared,
        world,
    } = describe_file(path).await?;
    Ok(if json {
        let mut info = params::info_json(&description);
        info["capabilities"] = caps::info_json(declared.as_ref());
        info["world"] = world.into();
        let mut text =
            serde_json::to_string_pretty(&info).context("cannot encode the description")?;
        text.push('\n');
        text
    } else {
        format!(
            "{}{}\nworld: {world}\n",
            params::info_text(&description),
            caps::info_text(declared.as_ref())
        )
    })
}
