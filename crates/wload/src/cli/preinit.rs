//! What `wload run script.js` and `wload run test.py` share: a language
//! runtime built into this binary (a wasm32-wasip1 core module: QuickJS,
//! sdk/js/runtime; MicroPython, sdk/python/runtime) is instantiated
//! in-process, given the script's files through its init export, which
//! compiles them; its memory is snapshotted with wizer, the dead stack
//! zeroed, and the snapshot made a component with the WASI preview 1
//! adapter. build_js.rs and build_py.rs say what files to give.
//!
//! The init protocol, both runtimes': the builder writes a `u32` count,
//! then per file a `u32` length and the path, a `u32` length and the
//! source (the script first) into memory from `cabi_realloc`, and calls
//! `init(ptr, len)`; the answer (at the address returned) is a `u32`
//! status and a `u32` length and text: 0 done (the text: the top of the
//! stack's region, decimal), 1 the file the text names is needed (read it
//! and start again in a fresh instance), 2 failed (the text says why).

use std::collections::BTreeMap;
use std::path::Path;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use anyhow::{Context as _, Result, anyhow, bail};
use wasmtime::{Caller, Engine, Extern, Instance, Linker, Module, Store, Val};
use wasmtime_wizer::{InstanceState, SnapshotVal, ValType, Wizer};

/// A runtime's bytes: the file the variable `env` names (a runtime being
/// worked on, without rebuilding wload), else the one built in.
pub fn runtime_bytes(
    env: &str,
    built_in: &'static [u8],
) -> Result<std::borrow::Cow<'static, [u8]>> {
    match std::env::var_os(env) {
        Some(path) => std::fs::read(&path)
            .map(std::borrow::Cow::Owned)
            .with_context(|| format!("cannot read {env}={}", Path::new(&path).display())),
        None => Ok(std::borrow::Cow::Borrowed(built_in)),
    }
}

/// A runtime to pre-initialise.
pub struct Runtime<'a> {
    /// The core module.
    pub wasm: &'a [u8],
    /// Its init export.
    pub init: &'a str,
    /// The language, for messages ("JavaScript", "Python").
    pub language: &'a str,
}

/// Build the component of `script` (its path as given to the runtime:
/// `main`) into `out`. `files` holds what to give the runtime (`main`
/// among them); what the runtime asks for besides is `need(name)`'s
/// (reading the file of that name, or writing a module of a plugin's
/// interface, build_js.rs). The names given, in the end.
pub fn build(
    runtime: &Runtime<'_>,
    script: &Path,
    main: &str,
    mut files: BTreeMap<String, Vec<u8>>,
    out: &Path,
    need: &mut dyn FnMut(&str) -> Result<Vec<u8>>,
) -> Result<Vec<String>> {
    let lang = runtime.language;
    let mut wizer = Wizer::new();
    wizer.init_func(runtime.init);
    let (cx, instrumented) = wizer
        .instrument(runtime.wasm)
        .map_err(w)
        .with_context(|| format!("the built-in {lang} runtime cannot be instrumented"))?;
    let engine = Engine::default();
    let module = Module::new(&engine, &instrumented)
        .map_err(w)
        .with_context(|| format!("the built-in {lang} runtime does not compile"))?;
    // A file the script imports is read and the build starts again in a
    // fresh instance, until every import is there (a few rounds at most:
    // one per level of imports not seen before).
    let (mut store, instance) = loop {
        let (mut store, instance) = instantiate(runtime, &engine, &module)?;
        match init(runtime, &mut store, &instance, main, &files)? {
            Answer::Done(stack_top) => {
                // No frame is live once init returned: what it left on the
                // stack is dead. Zeroed, it is no part of the image, so a
                // VU's stack pages are fresh zero pages, not file pages
                // that a read maps 64 KiB at a time (BENCHMARKS.md).
                let memory = instance
                    .get_memory(&mut store, "memory")
                    .with_context(|| format!("the {lang} runtime exports no memory"))?;
                let data = memory.data_mut(&mut store);
                let top = stack_top.min(data.len());
                data[..top].fill(0);
                break (store, instance);
            }
            Answer::Need(path) => {
                let source = need(&path)?;
                if files.insert(path.clone(), source).is_some() {
                    bail!("the {lang} runtime asked for {path} twice");
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
    .with_context(|| format!("the pre-initialised {lang} runtime cannot be snapshotted"))?;
    let component = wload_engine::component::to_component(&snapshot).with_context(|| {
        format!("the pre-initialised {lang} runtime cannot be made a component")
    })?;
    std::fs::write(out, component).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(files.into_keys().collect())
}

enum Answer {
    /// Compiled; the top of the stack's region.
    Done(usize),
    Need(String),
    Fail(String),
}

/// An instance whose WASI calls other than the clock and random bytes
/// (which QuickJS's start-up asks for) trap: a runtime reads no files
/// and prints nothing while pre-initialising.
fn instantiate(
    runtime: &Runtime<'_>,
    engine: &Engine,
    module: &Module,
) -> Result<(Store<()>, Instance)> {
    let lang = runtime.language;
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
        .with_context(|| format!("the built-in {lang} runtime cannot be instantiated"))?;
    if let Ok(start) = instance.get_typed_func::<(), ()>(&mut store, "_initialize") {
        start
            .call(&mut store, ())
            .map_err(w)
            .with_context(|| format!("the {lang} runtime's start-up trapped"))?;
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
    runtime: &Runtime<'_>,
    store: &mut Store<()>,
    instance: &Instance,
    main: &str,
    files: &BTreeMap<String, Vec<u8>>,
) -> Result<Answer> {
    let lang = runtime.language;
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
        .with_context(|| format!("the {lang} runtime exports no memory"))?;
    let realloc = instance
        .get_typed_func::<(i32, i32, i32, i32), i32>(&mut *store, "cabi_realloc")
        .map_err(w)
        .with_context(|| format!("the {lang} runtime exports no cabi_realloc"))?;
    let len = i32::try_from(input.len()).context("the script's files are larger than 2 GiB")?;
    let at = realloc.call(&mut *store, (0, 0, 1, len))?;
    memory.write(&mut *store, at as usize, &input)?;
    let init = instance
        .get_typed_func::<(i32, i32), i32>(&mut *store, runtime.init)
        .map_err(w)
        .with_context(|| format!("the {lang} runtime exports no {}", runtime.init))?;
    let answer = init
        .call(&mut *store, (at, len))
        .map_err(|e| anyhow!("the {lang} runtime trapped while compiling the script: {e:#}"))?
        as u32 as usize;
    let data = memory.data(&*store);
    let head = data
        .get(answer..answer + 8)
        .with_context(|| format!("the {lang} runtime answered out of bounds"))?;
    let status = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let n = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    let text = data
        .get(answer + 8..answer + 8 + n)
        .with_context(|| format!("the {lang} runtime answered out of bounds"))?;
    let text = String::from_utf8_lossy(text).into_owned();
    Ok(match status {
        0 => Answer::Done(
            text.parse()
                .with_context(|| format!("the {lang} runtime gave no stack address"))?,
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

/// What build.sh writes into a runtime's `.sources`: the SHA-256 over
/// each source's path (relative to `root`), a NUL, its content and a NUL;
/// the list is the runtime's own (`dirs` read sorted, after `files`).
#[cfg(test)]
pub fn sources_hash(root: &Path, files: &[&str], dirs: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut paths: Vec<std::path::PathBuf> = files.iter().map(|f| root.join(f)).collect();
    for dir in dirs {
        let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(root.join(dir))
            .expect("the runtime's sources")
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.is_file())
            .collect();
        found.sort();
        paths.extend(found);
    }
    let mut h = Sha256::new();
    for path in paths {
        let rel = path.strip_prefix(root).expect("under the SDK's folder");
        h.update(rel.to_string_lossy().as_bytes());
        h.update([0]);
        h.update(std::fs::read(&path).expect("a source file"));
        h.update([0]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}
