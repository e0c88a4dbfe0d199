//! `wload run script.js` builds JavaScript here, in-process and without
//! Node.js: the QuickJS runtime of the JS SDK (sdk/js/runtime, a wasm32-
//! wasip1 core module built into this binary) is instantiated, given the
//! script and the files it imports, compiles them (k6's modules are built
//! in), and its memory is snapshotted with wizer; the snapshot becomes a
//! component with the WASI preview 1 adapter, as Go's modules do. Each VU
//! then starts from the snapshot and runs the script's top level itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use anyhow::{Context as _, Result, anyhow, bail};
use wasmtime::{Caller, Engine, Extern, Instance, Linker, Module, Store, Val};
use wasmtime_wizer::{InstanceState, SnapshotVal, ValType, Wizer};
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
    match std::env::var_os(RUNTIME_ENV) {
        Some(path) => std::fs::read(&path)
            .map(std::borrow::Cow::Owned)
            .with_context(|| format!("cannot read {RUNTIME_ENV}={}", Path::new(&path).display())),
        None => Ok(std::borrow::Cow::Borrowed(RUNTIME)),
    }
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

    let mut read = vec![main.clone()];
    let mut plugins = Plugins {
        paths: with,
        read: Vec::new(),
    };
    let runtime = runtime()?;
    let mut wizer = Wizer::new();
    wizer.init_func(INIT);
    let (cx, instrumented) = wizer
        .instrument(&runtime)
        .map_err(w)
        .context("the built-in JavaScript runtime cannot be instrumented")?;
    let engine = Engine::default();
    let module = Module::new(&engine, &instrumented)
        .map_err(w)
        .context("the built-in JavaScript runtime does not compile")?;
    // A file the script imports is read and the build starts again in a
    // fresh instance, until every import is there (a few rounds at most:
    // one per level of imports not seen before).
    let (mut store, instance) = loop {
        let (mut store, instance) = instantiate(&engine, &module)?;
        match init(&mut store, &instance, &main, &files)? {
            Answer::Done(stack_top) => {
                // No frame is live once init returned: what it left on the
                // stack is dead. Zeroed, it is no part of the image, so a
                // VU's stack pages are fresh zero pages, not file pages
                // that a read maps 64 KiB at a time (BENCHMARKS.md).
                let memory = instance
                    .get_memory(&mut store, "memory")
                    .context("the JavaScript runtime exports no memory")?;
                let data = memory.data_mut(&mut store);
                let top = stack_top.min(data.len());
                data[..top].fill(0);
                break (store, instance);
            }
            Answer::Need(path) => {
                let source = if is_interface(&path) {
                    let (module, plugin) = plugins.module(&path)?;
                    read.push(plugin);
                    module.into_bytes()
                } else {
                    read.push(path.clone());
                    std::fs::read(&path).with_context(|| {
                        format!("cannot read {path}, which the script imports (directly or not)")
                    })?
                };
                if files.insert(path.clone(), source).is_some() {
                    bail!("the JavaScript runtime asked for {path} twice");
                }
            }
            Answer::Fail(message) => bail!("{}: {message}", script.display()),
        }
    };
    let snapshot = ready(wizer.snapshot(
        &cx,
        &mut Snapshot {
            store: &mut store,
            instance,
        },
    ))?
    .map_err(w)
    .context("the pre-initialised JavaScript runtime cannot be snapshotted")?;
    let component = wload_engine::component::to_component(&snapshot)
        .context("the pre-initialised JavaScript runtime cannot be made a component")?;
    std::fs::write(out, component).with_context(|| format!("cannot write {}", out.display()))?;
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

enum Answer {
    /// Compiled; the top of the stack's region.
    Done(usize),
    Need(String),
    Fail(String),
}

/// An instance whose WASI calls other than the clock and random bytes
/// (which QuickJS's start-up asks for) trap: the runtime reads no files
/// and prints nothing while pre-initialising.
fn instantiate(engine: &Engine, module: &Module) -> Result<(Store<()>, Instance)> {
    let mut linker: Linker<()> = Linker::new(engine);
    linker.func_wrap(
        "wasi_snapshot_preview1",
        "clock_time_get",
        |mut caller: Caller<'_, ()>, _clock: i32, _precision: i64, at: i32| -> i32 {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            match write(&mut caller, at as u32, &now.to_le_bytes()) {
                true => 0,
                false => 21, // EFAULT
            }
        },
    )?;
    linker.func_wrap(
        "wasi_snapshot_preview1",
        "random_get",
        |mut caller: Caller<'_, ()>, at: i32, len: i32| -> i32 {
            let mut bytes = vec![0u8; len.max(0) as usize];
            if getrandom_fill(&mut bytes).is_err() {
                return 29; // EIO
            }
            match write(&mut caller, at as u32, &bytes) {
                true => 0,
                false => 21,
            }
        },
    )?;
    linker.define_unknown_imports_as_traps(module)?;
    let mut store = Store::new(engine, ());
    let instance = linker
        .instantiate(&mut store, module)
        .map_err(w)
        .context("the built-in JavaScript runtime cannot be instantiated")?;
    if let Ok(start) = instance.get_typed_func::<(), ()>(&mut store, "_initialize") {
        start
            .call(&mut store, ())
            .map_err(w)
            .context("the JavaScript runtime's start-up trapped")?;
    }
    Ok((store, instance))
}

fn write(caller: &mut Caller<'_, ()>, at: u32, bytes: &[u8]) -> bool {
    let Some(Extern::Memory(memory)) = caller.get_export("memory") else {
        return false;
    };
    memory.write(caller, at as usize, bytes).is_ok()
}

/// Random bytes for the runtime's hash seeds (std's, so no new crate).
fn getrandom_fill(bytes: &mut [u8]) -> Result<()> {
    use std::hash::{BuildHasher, Hasher};
    for chunk in bytes.chunks_mut(8) {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(chunk.as_ptr() as usize);
        let v = h.finish().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
    Ok(())
}

/// Give the runtime the files and let it compile them.
fn init(
    store: &mut Store<()>,
    instance: &Instance,
    main: &str,
    files: &BTreeMap<String, Vec<u8>>,
) -> Result<Answer> {
    let count = u32::try_from(files.len()).context("too many files")?;
    let mut input = count.to_le_bytes().to_vec();
    let mut ordered = vec![(main, &files[main])];
    ordered.extend(
        files
            .iter()
            .filter(|(k, _)| *k != main)
            .map(|(k, v)| (k.as_str(), v)),
    );
    for (name, source) in ordered {
        for bytes in [name.as_bytes(), &source[..]] {
            let len = u32::try_from(bytes.len()).context("a script file is larger than 4 GiB")?;
            input.extend_from_slice(&len.to_le_bytes());
            input.extend_from_slice(bytes);
        }
    }
    let memory = instance
        .get_memory(&mut *store, "memory")
        .context("the JavaScript runtime exports no memory")?;
    let realloc = instance
        .get_typed_func::<(i32, i32, i32, i32), i32>(&mut *store, "cabi_realloc")
        .map_err(w)
        .context("the JavaScript runtime exports no cabi_realloc")?;
    let len = i32::try_from(input.len()).context("the script's files are larger than 2 GiB")?;
    let at = realloc.call(&mut *store, (0, 0, 1, len))?;
    memory.write(&mut *store, at as usize, &input)?;
    let init = instance
        .get_typed_func::<(i32, i32), i32>(&mut *store, INIT)
        .map_err(w)
        .with_context(|| format!("the JavaScript runtime exports no {INIT}"))?;
    let answer = init
        .call(&mut *store, (at, len))
        .map_err(|e| anyhow!("the JavaScript runtime trapped while compiling the script: {e:#}"))?
        as u32 as usize;
    let data = memory.data(&*store);
    let head = data
        .get(answer..answer + 8)
        .context("the JavaScript runtime answered out of bounds")?;
    let status = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let n = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    let text = data
        .get(answer + 8..answer + 8 + n)
        .context("the JavaScript runtime answered out of bounds")?;
    let text = String::from_utf8_lossy(text).into_owned();
    Ok(match status {
        0 => Answer::Done(
            text.parse()
                .context("the JavaScript runtime gave no stack address")?,
        ),
        1 => Answer::Need(text),
        _ => Answer::Fail(text),
    })
}

/// A wasmtime error as an anyhow one, its chain kept in the text.
fn w(e: wasmtime::Error) -> anyhow::Error {
    anyhow!("{e:#}")
}

/// What wizer reads of the instance: its exported globals and memory.
struct Snapshot<'a> {
    store: &'a mut Store<()>,
    instance: Instance,
}

impl InstanceState for Snapshot<'_> {
    async fn global_get(&mut self, name: &str, _type_hint: ValType) -> SnapshotVal {
        let global = self
            .instance
            .get_global(&mut *self.store, name)
            .expect("wizer asks for the globals it exported");
        match global.get(&mut *self.store) {
            Val::I32(x) => SnapshotVal::I32(x),
            Val::I64(x) => SnapshotVal::I64(x),
            Val::F32(x) => SnapshotVal::F32(x),
            Val::F64(x) => SnapshotVal::F64(x),
            Val::V128(x) => SnapshotVal::V128(x.as_u128()),
            other => panic!("wizer cannot snapshot a global of type {other:?}"),
        }
    }

    async fn memory_contents(&mut self, name: &str, contents: impl FnOnce(&[u8]) + Send) {
        let memory = self
            .instance
            .get_memory(&mut *self.store, name)
            .expect("wizer asks for the memories it exported");
        contents(memory.data(&*self.store))
    }
}

/// The value of a future that never waits (wizer's snapshot over a
/// synchronous instance).
fn ready<F: Future>(future: F) -> Result<F::Output> {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(v) => Ok(v),
        Poll::Pending => bail!("the snapshot waited on something"),
    }
}

/// The runtime's sources, in the order build.sh hashes them.
#[cfg(test)]
fn runtime_sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk/js");
    let mut out = vec![
        root.join("runtime/Cargo.toml"),
        root.join("runtime/Cargo.lock"),
        root.join("runtime/.cargo/config.toml"),
        root.join("runtime/build.sh"),
        // The WIT it is bound to (wit_bindgen::generate! in src/lib.rs).
        root.join("../../wit/test-0.2/test.wit"),
        root.join("../../wit/js/plugins.wit"),
    ];
    for dir in ["runtime/src", "runtime/js"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .expect("the runtime's sources")
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        out.extend(files);
    }
    out
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    #[test]
    fn the_built_runtime_matches_its_sources() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk/js");
        let mut h = Sha256::new();
        for path in super::runtime_sources() {
            let rel = path.strip_prefix(&root).expect("under sdk/js");
            h.update(rel.to_string_lossy().as_bytes());
            h.update([0]);
            h.update(std::fs::read(&path).expect("a source file"));
            h.update([0]);
        }
        let hash: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            super::RUNTIME_SOURCES.trim(),
            hash,
            "sdk/js/runtime/wload-js-runtime.wasm is stale: its sources changed since it was \
             built; run sdk/js/runtime/build.sh and commit the .wasm and .sources it writes"
        );
    }
}
