//! `wload run script.js` and `wload run test.py`: a k6 user types one
//! command, so a JavaScript, TypeScript or Python test is built into a component on the
//! way to the run, with the SDK built into this binary, and the component
//! is cached by the content of the script, every file it reads and the
//! SDK, so the second run starts at once. JavaScript and Python are built
//! in-process with the QuickJS and MicroPython runtimes (build_js.rs,
//! build_py.rs: no Node.js, no Python; TypeScript once esbuild stripped
//! its types, build_ts.rs); with `WLOAD_PYTHON_RUNTIME=cpython`
//! Python is built by componentize-py instead, the SDK extracted into the
//! cache directory and componentize-py installed there once.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use wload_engine::component::Cache;

/// The languages a test file may be written in, by its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    JavaScript,
    /// Built as JavaScript once esbuild stripped the types (build_ts.rs).
    TypeScript,
    Python,
}

impl Lang {
    /// `None` for a component (`.wasm`, `.cwasm`) or anything else: the
    /// engine reads those as they are.
    pub fn of(path: &Path) -> Option<Lang> {
        match path.extension()?.to_str()? {
            "js" | "mjs" | "cjs" => Some(Lang::JavaScript),
            "ts" | "mts" | "cts" => Some(Lang::TypeScript),
            "py" => Some(Lang::Python),
            _ => None,
        }
    }
}

/// What builds a test: the language's runtime built in, or componentize-py.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Builder {
    QuickJs,
    /// esbuild, then QuickJS.
    EsbuildQuickJs,
    MicroPython,
    ComponentizePy,
}

/// `WLOAD_PYTHON_RUNTIME`: `micropython` (the default) or `cpython`.
const PYTHON_RUNTIME_ENV: &str = "WLOAD_PYTHON_RUNTIME";

impl Builder {
    fn of(lang: Lang) -> Result<Builder> {
        Ok(match lang {
            Lang::JavaScript => Builder::QuickJs,
            Lang::TypeScript => Builder::EsbuildQuickJs,
            Lang::Python => match std::env::var(PYTHON_RUNTIME_ENV).as_deref() {
                Err(_) | Ok("") | Ok("micropython") => Builder::MicroPython,
                Ok("cpython") => Builder::ComponentizePy,
                Ok(other) => bail!(
                    "{PYTHON_RUNTIME_ENV}={other:?}: say `micropython` (the default: built in, \
                     light VUs) or `cpython` (componentize-py, for a test that needs what \
                     MicroPython leaves out; docs/sdk-python.md)"
                ),
            },
        })
    }

    fn tag(self) -> &'static str {
        match self {
            Builder::QuickJs => "js",
            Builder::EsbuildQuickJs => "ts",
            Builder::MicroPython => "micropython",
            Builder::ComponentizePy => "python",
        }
    }

    /// The SDK's files, as committed in sdk/python for componentize-py;
    /// the built-in runtimes' are named by the hash of their sources.
    fn sdk(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Builder::QuickJs => &[("runtime", super::build_js::RUNTIME_SOURCES)],
            Builder::EsbuildQuickJs => &[
                ("runtime", super::build_js::RUNTIME_SOURCES),
                ("esbuild", super::build_ts::ESBUILD),
            ],
            Builder::MicroPython => &[("runtime", super::build_py::RUNTIME_SOURCES)],
            Builder::ComponentizePy => PYTHON_SDK,
        }
    }
}

macro_rules! sdk_files {
    ($root:literal: $($file:literal),* $(,)?) => {
        &[$(($file, include_str!(concat!("../../../../sdk/", $root, "/", $file)))),*]
    };
}

const PYTHON_SDK: &[(&str, &str)] = sdk_files!("python":
    "wload_build.py",
    "wload/__init__.py",
    "wload/_export.py",
    "wload/_host.py",
    "wload/http.py",
    "wload/metrics.py",
    "wload/wit/scenario.wit",
    "wload/wit/test.wit",
    "wload/wit/test-0.2/test.wit",
);

/// What sdk/python/pyproject.toml pins; installed into the SDK's venv.
const COMPONENTIZE_PY: &str = "componentize-py==0.25.1";

/// The component to run for `script`, built unless the cache has it
/// (`rebuild`: build even so, for `--no-cache`); a JavaScript script's
/// imports of plugin interfaces are given by the library plugins `with`.
pub fn component(script: &Path, lang: Lang, rebuild: bool, with: &[PathBuf]) -> Result<PathBuf> {
    let text =
        std::fs::read(script).with_context(|| format!("cannot read {}", script.display()))?;
    let script = std::fs::canonicalize(script)
        .with_context(|| format!("cannot resolve {}", script.display()))?;
    let root = Cache::default_dir().context(
        "no cache directory for the built component: set WLOAD_CACHE_DIR (or HOME, XDG_CACHE_HOME)",
    )?;
    let builder = Builder::of(lang)?;
    let mut sdk_hash = sdk_hash(builder);
    if matches!(builder, Builder::QuickJs | Builder::EsbuildQuickJs)
        && std::env::var_os(super::build_js::RUNTIME_ENV).is_some()
    {
        sdk_hash = hex(&Sha256::digest(super::build_js::runtime()?));
    }
    if builder == Builder::MicroPython && std::env::var_os(super::build_py::RUNTIME_ENV).is_some() {
        sdk_hash = hex(&Sha256::digest(super::build_py::runtime()?));
    }
    let mut key = Sha256::new();
    key.update(builder.tag());
    key.update(&sdk_hash);
    key.update(script.as_os_str().as_encoded_bytes());
    key.update([0]);
    key.update(&text);
    for plugin in with {
        key.update([0]);
        key.update(plugin.as_os_str().as_encoded_bytes());
    }
    let key = hex(&key.finalize());
    let dir = root.join("scripts");
    let wasm = dir.join(format!("{key}.wasm"));
    let manifest = dir.join(format!("{key}.json"));
    if !rebuild && wasm.is_file() && inputs_unchanged(&manifest) {
        return Ok(wasm);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let sdk = match builder {
        Builder::QuickJs | Builder::MicroPython => PathBuf::new(),
        Builder::EsbuildQuickJs => root.join("sdk"),
        Builder::ComponentizePy => install_sdk(builder, &root.join("sdk"), &sdk_hash)?,
    };
    eprintln!(
        "wload: building {} into a component (cached after this run)",
        script.display()
    );
    let started = Instant::now();
    let tmp = dir.join(format!("{key}.wasm.{}", std::process::id()));
    let built = match builder {
        Builder::QuickJs => super::build_js::build(&script, &tmp, with),
        Builder::EsbuildQuickJs => super::build_ts::build(&sdk, &script, &tmp, with),
        Builder::MicroPython => {
            let mut beside = Vec::new();
            if let Some(folder) = script.parent() {
                python_files(folder, &mut beside);
            }
            beside.sort();
            super::build_py::build(&script, &beside, &tmp)
        }
        Builder::ComponentizePy => build_python(&sdk, &script, &tmp),
    };
    let inputs = match built {
        Ok(inputs) => inputs,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    let recorded: Vec<Value> = inputs
        .iter()
        .map(|p| json!([p, std::fs::read(p).map(|b| hex(&Sha256::digest(b))).ok()]))
        .collect();
    // The component first: a manifest without it is a cache miss, the
    // other way round a stale hit.
    std::fs::rename(&tmp, &wasm).with_context(|| format!("cannot write {}", wasm.display()))?;
    std::fs::write(&manifest, json!({ "inputs": recorded }).to_string())
        .with_context(|| format!("cannot write {}", manifest.display()))?;
    eprintln!(
        "wload: built {} in {:.1}s ({})",
        script.display(),
        started.elapsed().as_secs_f64(),
        wasm.display()
    );
    Ok(wasm)
}

/// Whether every file the last build read still has the content it had.
fn inputs_unchanged(manifest: &Path) -> bool {
    let Some(recorded) = std::fs::read(manifest)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
    else {
        return false;
    };
    let Some(inputs) = recorded["inputs"].as_array() else {
        return false;
    };
    inputs.iter().all(|entry| {
        let (Some(path), Some(hash)) = (entry[0].as_str(), entry[1].as_str()) else {
            return false;
        };
        std::fs::read(path).is_ok_and(|b| hex(&Sha256::digest(b)) == hash)
    })
}

fn sdk_hash(builder: Builder) -> String {
    let mut h = Sha256::new();
    h.update(env!("CARGO_PKG_VERSION"));
    for (name, text) in builder.sdk() {
        h.update(name);
        h.update([0]);
        h.update(text);
        h.update([0]);
    }
    hex(&h.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SDK in `<cache>/sdk/<lang>-<hash>`, with what it needs installed:
/// extracted and installed in a scratch folder renamed into place when
/// complete, so a failed or concurrent install never leaves half of one.
fn install_sdk(lang: Builder, root: &Path, hash: &str) -> Result<PathBuf> {
    let dir = root.join(format!("{}-{}", lang.tag(), &hash[..16]));
    if dir.is_dir() {
        return Ok(dir);
    }
    let work = root.join(format!(
        "{}-{}.{}",
        lang.tag(),
        &hash[..16],
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&work);
    for (name, text) in lang.sdk() {
        let path = work.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    // componentize-py goes in a venv of its own (python_venv), only when
    // WLOAD_PYTHON does not name an interpreter that has it.
    if std::fs::rename(&work, &dir).is_err() {
        // Another wload installed the same SDK meanwhile: use that one.
        let _ = std::fs::remove_dir_all(&work);
        if !dir.is_dir() {
            bail!("cannot move the SDK into {}", dir.display());
        }
    }
    Ok(dir)
}

const PYTHON_MISSING: &str = "with WLOAD_PYTHON_RUNTIME=cpython, `wload run` builds a Python test \
     with componentize-py, which needs Python 3.11 or later and its venv module: install them \
     (e.g. `apt-get install python3 python3-venv`), set WLOAD_PYTHON to an interpreter that has \
     componentize-py, build the component elsewhere with `wload-py build` and run the .wasm, \
     or leave WLOAD_PYTHON_RUNTIME unset to build with the MicroPython runtime built in";

/// The interpreter that builds Python tests: `WLOAD_PYTHON`, else `python3`.
fn python() -> String {
    std::env::var("WLOAD_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// Run `cmd`, its output passed through; `missing` when `program` is not
/// installed, the step named in the error when it fails.
fn run(mut cmd: Command, program: &str, missing: &str, step: &str) -> Result<()> {
    match cmd.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => bail!("{step} failed ({status}); its output is above"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("cannot run {program}: it is not installed or not on PATH. {missing}")
        }
        Err(e) => bail!("cannot run {program}: {e}"),
    }
}

/// `<cache>/sdk/python-venv-<version>`: a virtual environment with
/// componentize-py, made once. Made where it stays (its scripts name their
/// folder), so completeness is a marker written last.
fn python_venv(root: &Path) -> Result<PathBuf> {
    let dir = root.join(format!(
        "python-venv-{}",
        COMPONENTIZE_PY.replace("==", "-")
    ));
    let interpreter = dir.join("bin/python");
    let marker = dir.join(".wload-installed");
    if marker.is_file() {
        return Ok(interpreter);
    }
    eprintln!(
        "wload: installing {COMPONENTIZE_PY} into a virtual environment in {} (once)",
        dir.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
    let mut venv = Command::new(python());
    venv.args(["-m", "venv"]).arg(&dir);
    run(venv, &python(), PYTHON_MISSING, "python3 -m venv")?;
    let mut pip = Command::new(&interpreter);
    pip.args(["-m", "pip", "install", "--quiet", COMPONENTIZE_PY]);
    run(
        pip,
        "pip",
        PYTHON_MISSING,
        &format!("pip install {COMPONENTIZE_PY} (from PyPI)"),
    )?;
    std::fs::write(&marker, COMPONENTIZE_PY)
        .with_context(|| format!("cannot write {}", marker.display()))?;
    Ok(interpreter)
}

/// `wload-py build` with `WLOAD_PYTHON`, else the venv above; the inputs are
/// the Python files beside the test, which it may import (componentize-py
/// does not say which it read).
fn build_python(sdk: &Path, script: &Path, out: &Path) -> Result<Vec<String>> {
    let interpreter = match std::env::var_os("WLOAD_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => python_venv(sdk.parent().unwrap_or(sdk))?,
    };
    let mut cmd = Command::new(&interpreter);
    cmd.arg(sdk.join("wload_build.py"))
        .arg("build")
        .arg(script)
        .arg("-o")
        .arg(out);
    run(
        cmd,
        &interpreter.display().to_string(),
        PYTHON_MISSING,
        &format!("building {}", script.display()),
    )?;
    let mut inputs = Vec::new();
    if let Some(folder) = script.parent() {
        python_files(folder, &mut inputs);
    }
    inputs.sort();
    Ok(inputs)
}

/// The `.py` files under `dir`, leaving out virtual environments, caches
/// and hidden folders (nothing a test imports from its own folder).
fn python_files(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            let skip = name.starts_with('.')
                || name == "__pycache__"
                || name == "node_modules"
                || path.join("pyvenv.cfg").exists();
            if !skip {
                python_files(&path, out);
            }
        } else if name.ends_with(".py") {
            out.push(path.display().to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_language_comes_from_the_extension() {
        assert_eq!(Lang::of(Path::new("a/script.js")), Some(Lang::JavaScript));
        assert_eq!(Lang::of(Path::new("script.mjs")), Some(Lang::JavaScript));
        assert_eq!(Lang::of(Path::new("script.ts")), Some(Lang::TypeScript));
        assert_eq!(Lang::of(Path::new("script.mts")), Some(Lang::TypeScript));
        assert_eq!(Lang::of(Path::new("test.py")), Some(Lang::Python));
        assert_eq!(Lang::of(Path::new("test.wasm")), None);
        assert_eq!(Lang::of(Path::new("test.cwasm")), None);
        assert_eq!(Lang::of(Path::new("js")), None);
    }

    #[test]
    fn a_changed_input_is_a_cache_miss() {
        let dir = std::env::temp_dir().join(format!("wload-build-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lib = dir.join("lib.js");
        std::fs::write(&lib, "export const a = 1;").unwrap();
        let manifest = dir.join("m.json");
        let hash = hex(&Sha256::digest(b"export const a = 1;"));
        std::fs::write(
            &manifest,
            json!({ "inputs": [[lib.display().to_string(), hash]] }).to_string(),
        )
        .unwrap();
        assert!(inputs_unchanged(&manifest));
        std::fs::write(&lib, "export const a = 2;").unwrap();
        assert!(!inputs_unchanged(&manifest));
        std::fs::remove_file(&lib).unwrap();
        assert!(!inputs_unchanged(&manifest));
        assert!(!inputs_unchanged(&dir.join("missing.json")));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_sdks_differ_and_are_stable() {
        assert_eq!(sdk_hash(Builder::QuickJs), sdk_hash(Builder::QuickJs));
        assert_ne!(sdk_hash(Builder::QuickJs), sdk_hash(Builder::MicroPython));
        assert_ne!(
            sdk_hash(Builder::MicroPython),
            sdk_hash(Builder::ComponentizePy)
        );
    }
}
