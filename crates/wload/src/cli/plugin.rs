//! `wload plugin …`: what a scenario plugin (a component of the world
//! `wload:scenario/plugin`, see wit/scenario.wit) says about itself, so
//! that its parameters can be found without reading its source.

use std::io::Write as _;
use std::path::{Path, PathBuf};

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
}

impl PluginCommand {
    pub(super) async fn run(self) -> Result<u8> {
        match self {
            PluginCommand::Info { plugin, json } => info(&plugin, json).await,
        }
    }
}

async fn info(path: &Path, json: bool) -> Result<u8> {
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
                plugin::WORLD
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
    let text = if json {
        let mut info = params::info_json(&description);
        info["capabilities"] = caps::info_json(declared.as_ref());
        let mut text =
            serde_json::to_string_pretty(&info).context("cannot encode the description")?;
        text.push('\n');
        text
    } else {
        params::info_text(&description) + &caps::info_text(declared.as_ref())
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    Ok(0)
}
