//! Module names and sources: k6's modules (`k6`, `k6/http`, ...) are the
//! SDK's files built in (sdk/js/runtime/js), `wload:host` is the engine
//! ([`crate::host`]), relative or absolute imports are the script's
//! files, and a library plugin's interface (`wload:session/login@0.1.0`)
//! is a module the builder writes from the plugin's exports, whose
//! functions call the plugin through `wload:host`'s `pluginCall`. The
//! builder gives the files and those modules during pre-initialisation
//! only. Every
//! module is compiled then and stays in the snapshot; a VU evaluates the
//! compiled script, which finds its imports already loaded.

use std::cell::RefCell;

use rquickjs::loader::{Loader as QjsLoader, Resolver as QjsResolver};
use rquickjs::module::Declared;
use rquickjs::{Ctx, Error, Module, Result, qjs};

/// The SDK's modules: canonical name and source.
const BUILTIN: &[(&str, &str)] = &[
    ("wload", include_str!("../js/index.js")),
    ("wload/http", include_str!("../js/http.js")),
    ("wload/metrics", include_str!("../js/metrics.js")),
    ("wload/execution", include_str!("../js/execution.js")),
    ("wload-internal:host", include_str!("../js/host.js")),
    ("wload-internal:exports", include_str!("../js/exports.js")),
];

/// The SDK's files by the names they import each other with.
const BUILTIN_FILES: &[(&str, &str)] = &[
    ("./index.js", "wload"),
    ("./http.js", "wload/http"),
    ("./metrics.js", "wload/metrics"),
    ("./execution.js", "wload/execution"),
    ("./host.js", "wload-internal:host"),
    ("./exports.js", "wload-internal:exports"),
];

/// Evaluated in the snapshot: the SDK's globals, and the world's exports
/// over a loader that evaluates the script on first use.
const BOOT: &str = "\
import 'wload';
import { makeExports } from 'wload-internal:exports';
import { loadMain } from 'wload:host';
globalThis.__wloadExports = makeExports(loadMain);
";

thread_local! {
    /// The script's files, given by the builder for pre-initialisation.
    static FILES: RefCell<Vec<(String, Vec<u8>)>> = const { RefCell::new(Vec::new()) };
    /// A file imported but not given: the builder reads it and retries.
    static NEEDED: RefCell<Option<String>> = const { RefCell::new(None) };
    static MAIN: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Read the builder's files (`wload_js_init`'s format); the script's path.
pub fn set_files(mut input: &[u8]) -> std::result::Result<String, &'static str> {
    fn take<'a>(input: &mut &'a [u8], n: usize) -> std::result::Result<&'a [u8], &'static str> {
        if input.len() < n {
            return Err("the builder's file list is cut short");
        }
        let (head, rest) = input.split_at(n);
        *input = rest;
        Ok(head)
    }
    fn int(input: &mut &[u8]) -> std::result::Result<usize, &'static str> {
        let b = take(input, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
    let count = int(&mut input)?;
    let mut files = Vec::with_capacity(count);
    for _ in 0..count {
        let n = int(&mut input)?;
        let name = std::str::from_utf8(take(&mut input, n)?)
            .map_err(|_| "a file path is not UTF-8")?
            .to_owned();
        let n = int(&mut input)?;
        let name = if is_interface(&name) {
            name
        } else {
            normalize(&name)
        };
        files.push((name, take(&mut input, n)?.to_vec()));
    }
    let main = files
        .first()
        .map(|f| f.0.clone())
        .ok_or("the builder gave no script")?;
    FILES.with(|f| *f.borrow_mut() = files);
    Ok(main)
}

/// The sources are compiled: they need not be in the snapshot.
pub fn drop_files() {
    FILES.with(|f| *f.borrow_mut() = Vec::new());
}

pub fn needed() -> Option<String> {
    NEEDED.with(|n| n.borrow_mut().take())
}

fn file(name: &str) -> Option<Vec<u8>> {
    FILES.with(|f| {
        f.borrow()
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s.clone())
    })
}

pub fn main_name() -> String {
    MAIN.with(|m| m.borrow().clone())
}

fn is_sdk(name: &str) -> bool {
    name == "wload" || name.starts_with("wload/") || name.starts_with("wload-internal:")
}

/// A WIT interface's name (`ns:pkg/iface`, with or without `@version`):
/// a library plugin's, for the builder to write a module of. URLs
/// (`https://...`) are told apart before this is asked.
pub fn is_interface(name: &str) -> bool {
    match name.split_once('/') {
        Some((package, iface)) => {
            package.contains(':') && !iface.is_empty() && !iface.starts_with('/')
        }
        None => false,
    }
}

pub struct Resolver;

impl QjsResolver for Resolver {
    fn resolve<'js>(&mut self, ctx: &Ctx<'js>, base: &str, name: &str) -> Result<String> {
        if is_sdk(base)
            && let Some((_, canonical)) = BUILTIN_FILES.iter().find(|(f, _)| *f == name)
        {
            return Ok((*canonical).to_owned());
        }
        if let Some(sub) = name
            .strip_prefix("k6")
            .or_else(|| name.strip_prefix("wload"))
            && (sub.is_empty() || sub.starts_with('/'))
        {
            let canonical = format!("wload{sub}");
            if BUILTIN.iter().any(|(n, _)| *n == canonical) {
                return Ok(canonical);
            }
            return Err(message(
                ctx,
                &format!(
                    "wload has no module {name} (it has k6, k6/http, k6/metrics, \
                     k6/execution; also as wload, wload/http, ...)"
                ),
            ));
        }
        if name == "wload:host" || name == "wload-internal:exports" {
            return Ok(name.to_owned());
        }
        if name.starts_with("http://") || name.starts_with("https://") {
            return Err(message(
                ctx,
                &format!(
                    "{name}: remote modules are not fetched; save the file beside the \
                     script and import it by a relative path"
                ),
            ));
        }
        if is_interface(name) {
            return Ok(name.to_owned());
        }
        if name.starts_with('/') {
            return Ok(normalize(name));
        }
        if name.starts_with("./") || name.starts_with("../") {
            let dir = match base.rfind('/') {
                Some(i) => &base[..i],
                None => "",
            };
            return Ok(normalize(&format!("{dir}/{name}")));
        }
        Err(message(
            ctx,
            &format!(
                "cannot import {name:?} from {base}: import k6's modules, files by a relative \
                 path, or a plugin's interface (ns:pkg/iface@version, the plugin given with --with)"
            ),
        ))
    }
}

/// `/a/./b/../c` → `/a/c`.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

fn message(ctx: &Ctx<'_>, text: &str) -> Error {
    rquickjs::Exception::throw_message(ctx, text)
}

pub struct Loader;

impl QjsLoader for Loader {
    fn load<'js>(&mut self, ctx: &Ctx<'js>, name: &str) -> Result<Module<'js, Declared>> {
        if name == "wload:host" {
            return Module::declare_def::<crate::host::Host, _>(ctx.clone(), name);
        }
        if let Some((_, source)) = BUILTIN.iter().find(|(n, _)| *n == name) {
            return Module::declare(ctx.clone(), name, *source);
        }
        // A file of the script's, or a plugin interface's module: only
        // ever loaded before the snapshot (a VU finds every module
        // compiled).
        match file(name) {
            Some(source) => Module::declare(ctx.clone(), name, source),
            None => {
                NEEDED.with(|n| *n.borrow_mut() = Some(name.to_owned()));
                Err(message(
                    ctx,
                    &format!("{name} is imported but was not read"),
                ))
            }
        }
    }
}

/// Evaluate the SDK (its top level makes no host call).
pub fn boot(ctx: &Ctx<'_>) -> Result<()> {
    Module::evaluate(ctx.clone(), "wload-internal:boot", BOOT)?.finish::<()>()
}

/// Compile the script `path` and every module it imports, without running
/// any of it.
pub fn compile_main(ctx: &Ctx<'_>, path: &str) -> Result<()> {
    let name = normalize(path);
    let source = file(&name).ok_or_else(|| message(ctx, &format!("{name} was not given")))?;
    MAIN.with(|m| *m.borrow_mut() = name.clone());
    // Compiled as `Module::declare` does, but kept as a value to resolve:
    // resolving loads (compiles) the imports, recursively; evaluation,
    // which would run them, is the VU's.
    let source = std::ffi::CString::new(source)
        .map_err(|_| message(ctx, &format!("{name} contains a NUL byte")))?;
    let file = std::ffi::CString::new(name.as_str())
        .map_err(|_| message(ctx, &format!("{name:?} contains a NUL byte")))?;
    let raw = ctx.as_raw().as_ptr();
    let flags =
        qjs::JS_EVAL_TYPE_MODULE | qjs::JS_EVAL_FLAG_STRICT | qjs::JS_EVAL_FLAG_COMPILE_ONLY;
    // SAFETY: `raw` is the live context of `ctx`; the source is
    // NUL-terminated as JS_Eval requires. The module value is not freed:
    // the runtime's list of loaded modules keeps the module for the VUs.
    let resolved = unsafe {
        let module = qjs::JS_Eval(
            raw,
            source.as_ptr(),
            source.as_bytes().len() as _,
            file.as_ptr(),
            flags as i32,
        );
        if qjs::JS_VALUE_GET_TAG(module) == qjs::JS_TAG_EXCEPTION {
            return Err(Error::Exception);
        }
        qjs::JS_ResolveModule(raw, module)
    };
    if resolved < 0 {
        return Err(Error::Exception);
    }
    Ok(())
}
