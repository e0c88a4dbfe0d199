//! `wload run script.ts`: k6 runs TypeScript as it is, so wload does too.
//! QuickJS compiles JavaScript only, so the types are stripped first, by
//! esbuild from npm (the one step that needs Node.js and npm, installed
//! into the cache once, like componentize-py for Python): the script and
//! the files it imports by relative path are bundled into one JavaScript
//! file, every other import (k6's modules, a plugin's interface) left to
//! the JavaScript build (build_js.rs), which makes the component.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// What sdk/js pinned when it bundled with esbuild itself.
pub const ESBUILD: &str = "esbuild@0.28.2";

const NODE_MISSING: &str = "a TypeScript test is turned into JavaScript with esbuild, which \
     wload installs with npm: install Node.js and npm (e.g. `apt-get install nodejs npm`), or \
     strip the types yourself and run the .js";

/// Build the TypeScript `script` into the component `out` (plugins `with`,
/// as for JavaScript); the files read. `sdk` is the cache's folder for
/// installed tools.
pub fn build(sdk: &Path, script: &Path, out: &Path, with: &[PathBuf]) -> Result<Vec<String>> {
    let esbuild = install(sdk)?;
    let js = PathBuf::from(format!("{}.js", out.display()));
    let meta = PathBuf::from(format!("{}.meta.json", out.display()));
    let mut cmd = Command::new(&esbuild);
    cmd.arg(script)
        .args([
            "--bundle",
            // k6/http, wload:session/login@0.1.0, ...: the JS build's.
            "--packages=external",
            "--format=esm",
            "--platform=neutral",
            "--target=es2023",
            "--log-level=error",
        ])
        .arg(format!("--outfile={}", js.display()))
        .arg(format!("--metafile={}", meta.display()));
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {}", esbuild.display()))?;
    if !status.success() {
        bail!(
            "esbuild could not turn {} into JavaScript ({status}); its output is above",
            script.display()
        );
    }
    let inputs = bundled_inputs(&meta, script);
    let built = super::build_js::build(&js, out, with);
    let _ = std::fs::remove_file(&js);
    let _ = std::fs::remove_file(&meta);
    let mut read = built?;
    // The bundle is no input of the user's; what esbuild read is.
    read.retain(|p| Path::new(p) != js);
    read.extend(inputs);
    read.sort();
    read.dedup();
    Ok(read)
}

/// The files esbuild read for the bundle (its metafile), absolute; the
/// script alone when the metafile cannot be read.
fn bundled_inputs(meta: &Path, script: &Path) -> Vec<String> {
    let parsed = std::fs::read(meta)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    let cwd = std::env::current_dir().unwrap_or_default();
    match parsed.as_ref().and_then(|m| m["inputs"].as_object()) {
        Some(inputs) => inputs
            .keys()
            .map(|p| cwd.join(p).display().to_string())
            .collect(),
        None => vec![script.display().to_string()],
    }
}

/// esbuild in `<sdk>/esbuild-<version>`, installed with npm once; made in
/// a scratch folder renamed into place, so a failed or concurrent install
/// leaves none half made.
fn install(sdk: &Path) -> Result<PathBuf> {
    let dir = sdk.join(ESBUILD.replace('@', "-"));
    let bin = dir.join("node_modules/.bin/esbuild");
    if bin.is_file() {
        return Ok(bin);
    }
    eprintln!(
        "wload: installing {ESBUILD} with npm into {} (once, for TypeScript)",
        dir.display()
    );
    let work = sdk.join(format!(
        "{}.{}",
        ESBUILD.replace('@', "-"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;
    let mut npm = Command::new("npm");
    npm.args([
        "install",
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--prefix",
    ])
    .arg(&work)
    .arg(ESBUILD);
    let status = match npm.status() {
        Ok(status) => status,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let _ = std::fs::remove_dir_all(&work);
            bail!("cannot run npm: it is not installed or not on PATH. {NODE_MISSING}")
        }
        Err(e) => bail!("cannot run npm: {e}"),
    };
    if !status.success() {
        let _ = std::fs::remove_dir_all(&work);
        bail!("npm install {ESBUILD} failed ({status}); its output is above. {NODE_MISSING}");
    }
    if std::fs::rename(&work, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&work);
    }
    if !bin.is_file() {
        bail!("npm installed {ESBUILD} but {} is not there", bin.display());
    }
    Ok(bin)
}
