//! `wload run script.js` builds JavaScript here, in-process and without
//! Node.js: the QuickJS runtime of the JS SDK (sdk/js/runtime, a wasm32-
//! wasip1 core module built into this binary) is instantiated, given the
//! script and the files it imports, compiles them (k6's modules are built
//! in), and its memory is snapshotted with wizer; the snapshot becomes a
//! component with the WASI preview 1 adapter, as Go's modules do
//! (preinit.rs, shared with Python's build_py.rs). Each VU then starts
//! from the snapshot and runs the script's top level itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use wload_engine::plugin::compose::{self, Library};

/// The runtime, as built by sdk/js/runtime/build.sh.
pub const RUNTIME: &[u8] = include_bytes!("../../../../sdk/js/runtime/wload-js-runtime.wasm");

/// The hash of the runtime's sources that `RUNTIME` was built from
/// (sdk/js/runtime/build.sh writes it; a test compares).
pub const RUNTIME_SOURCES: &str =
    include_str!("../../../../sdk/js/runtime/wload-js-runtime.sources");

const INIT: &str = "wload-js-init";

/// `WLOAD_JS_RUNTIME`, for who works on the runtime: a runtime .wasm to
/// use in place of the built-in one (sdk/js/runtime/build.sh's output),
/// without rebuilding wload.
pub const RUNTIME_ENV: &str = "WLOAD_JS_RUNTIME";

/// The runtime's bytes: `WLOAD_JS_RUNTIME`'s file, else the built-in one.
pub fn runtime() -> Result<std::borrow::Cow<'static, [u8]>> {
    super::preinit::runtime_bytes(RUNTIME_ENV, RUNTIME)
}

/// Build `script` into the component written to `out`, its imports of
/// plugin interfaces given by the library plugins `with`; the files read.
pub fn build(script: &Path, out: &Path, with: &[PathBuf]) -> Result<Vec<String>> {
    let main = script
        .to_str()
        .with_context(|| format!("{} is not a UTF-8 path", script.display()))?
        .to_owned();
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    files.insert(
        main.clone(),
        std::fs::read(script).with_context(|| format!("cannot read {}", script.display()))?,
    );

    let runtime = runtime()?;
    let runtime = super::preinit::Runtime {
        wasm: &runtime,
        init: INIT,
        language: "JavaScript",
    };
    // A plugin's interface is no file: its module is written from the
    // plugin's exports, and the plugin is what the build read.
    let mut plugins = Plugins {
        paths: with,
        read: Vec::new(),
    };
    let mut read = Vec::new();
    let given = super::preinit::build(&runtime, script, &main, files, out, &mut |path| {
        if is_interface(path) {
            let (module, plugin) = plugins.module(path)?;
            read.push(plugin);
            return Ok(module.into_bytes());
        }
        std::fs::read(path).with_context(|| {
            format!("cannot read {path}, which the script imports (directly or not)")
        })
    })?;
    read.extend(given.into_iter().filter(|name| !is_interface(name)));
    read.sort();
    read.dedup();
    Ok(read)
}

/// A WIT interface's name (`ns:pkg/iface@version`), which the runtime
/// asks for as a module: a library plugin's (sdk/js/runtime/src/
/// modules.rs tells them apart the same way).
fn is_interface(name: &str) -> bool {
    match name.split_once('/') {
        Some((package, iface)) => {
            package.contains(':') && !iface.is_empty() && !iface.starts_with('/')
        }
        None => false,
    }
}

/// The library plugins given to the build (`--with`), read when the
/// script first imports an interface.
struct Plugins<'a> {
    paths: &'a [PathBuf],
    read: Vec<Library>,
}

impl Plugins<'_> {
    /// The module that stands for the interface `import` in the script:
    /// its functions (camelCase) call the plugin's through the host
    /// (wit/js/plugins.wit); with the plugin's path.
    fn module(&mut self, import: &str) -> Result<(String, String)> {
        if self.read.is_empty() {
            for path in self.paths {
                self.read.push(Library::read(path)?);
            }
        }
        for library in &self.read {
            let Some((name, functions)) = compose::interface_functions(library, import)? else {
                continue;
            };
            return Ok((
                interface_module(&name, &functions, library),
                library.path.display().to_string(),
            ));
        }
        let given = match self.paths {
            [] => "no plugin was given".to_owned(),
            paths => format!(
                "none of {} exports it",
                paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        bail!(
            "the script imports {import}, a plugin's interface, and {given}: give the plugin \
             that exports it with --with PLUGIN.wasm"
        )
    }
}

/// JavaScript for the interface `name` of `library` with `functions`.
fn interface_module(name: &str, functions: &[String], library: &Library) -> String {
    use std::fmt::Write;
    let quoted = |s: &str| serde_json::Value::String(s.to_owned()).to_string();
    let mut js = format!(
        "// {name}, exported by the plugin {}: written by wload's build, each\n\
         // function calls the plugin's through the host (wit/js/plugins.wit).\n\
         import {{ pluginCall }} from 'wload:host';\n\
         const call = (f, args) => pluginCall({}, f, JSON.stringify(args));\n",
        library.path.display(),
        quoted(name)
    );
    let mut names = Vec::with_capacity(functions.len());
    for (i, f) in functions.iter().enumerate() {
        let _ = writeln!(js, "const f{i} = (...args) => call({}, args);", quoted(f));
        names.push(format!(
            "f{i} as {}",
            wload_engine::host::js_plugins::camel_case(f)
        ));
    }
    let _ = writeln!(js, "export {{ {} }};", names.join(", "));
    js
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_built_runtime_matches_its_sources() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk/js");
        // The order build.sh hashes them in.
        let hash = super::super::preinit::sources_hash(
            &root,
            &[
                "runtime/Cargo.toml",
                "runtime/Cargo.lock",
                "runtime/.cargo/config.toml",
                "runtime/build.sh",
                // The WIT it is bound to (wit_bindgen::generate! in src/lib.rs).
                "../../wit/test-0.2/test.wit",
                "../../wit/js/plugins.wit",
            ],
            &["runtime/src", "runtime/js"],
        );
        assert_eq!(
            super::RUNTIME_SOURCES.trim(),
            hash,
            "sdk/js/runtime/wload-js-runtime.wasm is stale: its sources changed since it was \
             built; run sdk/js/runtime/build.sh and commit the .wasm and .sources it writes"
        );
    }
}
