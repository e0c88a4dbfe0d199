//! The JavaScript runtime of wload's JS SDK: QuickJS in a wasm32-wasip1
//! core module that exports the world `wload:test@0.2.0`.
//!
//! Why it exists: a VU of a component built by componentize-js
//! (SpiderMonkey) costs ~2.8 MiB of RSS, k6's ~250 KiB; QuickJS's whole
//! heap after the SDK's start-up is a few hundred KiB, so is what a VU
//! writes of it (docs/BENCHMARKS.md, issue 19).
//!
//! How a test is made of it (`wload run script.js`, crates/wload/src/cli/
//! build.rs): the engine's builder instantiates this module with WASI
//! preview 1 (the script's files readable, `WLOAD_JS_MAIN` naming the
//! script), calls [`wload_js_init`], which starts QuickJS, evaluates the
//! SDK (sdk/js/runtime/js, built in) and compiles the script and every module it
//! imports without running them, then snapshots the memory (wizer) and
//! makes the module a component with the preview 1 adapter. Each VU's
//! instance starts from that snapshot and runs the script's top level on
//! the engine's first call, as k6 runs the init code once per VU.

mod host;
mod modules;

use std::cell::RefCell;

use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Function, Object, Runtime, Value};

// The test world, and the door to library plugins (wit/js/plugins.wit).
wit_bindgen::generate!({
    path: ["../../../wit/test-0.2", "../../../wit/js"],
    world: "wload:js/runtime@0.1.0",
    generate_all,
});

use wload::test::vu as wit_vu;

/// The engine and the context the snapshot holds; `None` before
/// [`wload_js_init`] ran.
struct State {
    // Dropped never (the instance ends with the VU); kept for its lifetime.
    _runtime: Runtime,
    context: Context,
}

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
}

/// QuickJS's cycle collector runs when its live heap passes a threshold,
/// and then reads and writes the header of every object, the snapshot's
/// included: one run copies the whole heap into the VU. Its default
/// (256 KiB) is below what the SDK alone takes, so every VU would run it
/// at once. Reference counting frees a VU's acyclic garbage as it goes,
/// so the collector is only needed when cycles pile up: it runs once the
/// live heap is this much larger than the snapshot's.
const GC_HEADROOM: usize = 1024 * 1024;

/// Enough for deep recursion in a test; QuickJS checks it against the
/// shadow stack (linked at 256 KiB, .cargo/config.toml).
const MAX_STACK: usize = 192 * 1024;

/// Pre-initialisation, called by the builder (and removed by wizer from
/// the snapshot). `input` (at `ptr`, `len` bytes) is the script's files:
/// a `u32` count, then per file a `u32` length and the path, a `u32`
/// length and the source, the script first. The answer (its address is
/// returned) is a `u32` status and a `u32` length and text: 0 done, the
/// text the top of the stack's region (decimal); 1 the
/// file the text names is imported but not given (the builder reads it
/// and starts again, in a fresh instance); 2 the script cannot be
/// compiled, the text says why.
///
/// # Safety
/// `ptr` must point at `len` readable bytes (the builder's `cabi_realloc`
/// allocation).
#[unsafe(export_name = "wload-js-init")]
pub unsafe extern "C" fn wload_js_init(ptr: *const u8, len: usize) -> *const u8 {
    // SAFETY: the builder wrote `len` bytes at `ptr`, allocated with
    // `cabi_realloc`.
    let input = unsafe { std::slice::from_raw_parts(ptr, len) };
    let (status, text) = match init(input) {
        // The top of the shadow stack: below it, what pre-initialisation
        // left on the stack is dead, and the builder zeroes it so that it
        // is not in the snapshot's image.
        Ok(()) => (0, (&raw const __stack_high as usize).to_string()),
        Err(Init::Need(path)) => (1, path),
        Err(Init::Fail(message)) => (2, message),
    };
    let mut out = Vec::with_capacity(8 + text.len());
    out.extend_from_slice(&(status as u32).to_le_bytes());
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    // Leaked on purpose: the builder reads it, then the snapshot is taken
    // (a few bytes of it stay in every VU's image, never touched).
    Box::leak(out.into_boxed_slice()).as_ptr()
}

unsafe extern "C" {
    /// Set by the linker: the end of the stack (stack-first layout).
    static __stack_high: u8;
}

enum Init {
    Need(String),
    Fail(String),
}

fn init(input: &[u8]) -> Result<(), Init> {
    let main = modules::set_files(input).map_err(|e| Init::Fail(e.to_owned()))?;
    let runtime = Runtime::new().map_err(|e| Init::Fail(format!("QuickJS did not start: {e}")))?;
    // No collection while the SDK and the script compile: the collector
    // runs once, below, on the finished heap.
    runtime.set_gc_threshold(usize::MAX);
    runtime.set_max_stack_size(MAX_STACK);
    runtime.set_loader(modules::Resolver, modules::Loader);
    let context =
        Context::full(&runtime).map_err(|e| Init::Fail(format!("QuickJS has no context: {e}")))?;
    context.with(|ctx| {
        if let Err(e) = modules::boot(&ctx) {
            return Err(Init::Fail(format!(
                "the SDK did not start: {}",
                error_text(&ctx, e)
            )));
        }
        if let Err(e) = modules::compile_main(&ctx, &main) {
            let text = error_text(&ctx, e);
            return Err(match modules::needed() {
                Some(path) => Init::Need(path),
                None => Init::Fail(text),
            });
        }
        Ok(())
    })?;
    modules::drop_files();
    runtime.run_gc();
    let live = usize::try_from(runtime.memory_usage().malloc_size).unwrap_or(0);
    runtime.set_gc_threshold(live + GC_HEADROOM);
    STATE.with(|s| {
        *s.borrow_mut() = Some(State {
            _runtime: runtime,
            context,
        })
    });
    Ok(())
}

/// An exception (or a Rust-side error) as one line for the user.
pub(crate) fn error_text(ctx: &Ctx<'_>, e: rquickjs::Error) -> String {
    caught_text(Err::<(), _>(e).catch(ctx).err())
}

fn caught_text(caught: Option<CaughtError<'_>>) -> String {
    match caught {
        Some(CaughtError::Exception(ex)) => {
            let message = ex.message().unwrap_or_default();
            let stack = ex.stack().unwrap_or_default();
            let frame = stack.lines().find(|l| !l.trim().is_empty());
            let name: String = ex.get("name").unwrap_or_else(|_| "Error".to_owned());
            match frame {
                Some(frame) => format!("{name}: {message} ({})", frame.trim()),
                None => format!("{name}: {message}"),
            }
        }
        Some(CaughtError::Value(v)) => value_text(&v),
        Some(CaughtError::Error(e)) => e.to_string(),
        None => "unknown error".to_owned(),
    }
}

/// A thrown non-Error value: strings as they are, the rest as JSON.
fn value_text(v: &Value<'_>) -> String {
    if let Some(s) = v.as_string() {
        return s.to_string().unwrap_or_default();
    }
    v.ctx()
        .json_stringify(v.clone())
        .ok()
        .flatten()
        .and_then(|s| s.to_string().ok())
        .unwrap_or_else(|| format!("{v:?}"))
}

/// Call `__wloadExports[name](...args)` (exports.js) in the snapshot's
/// context; its exception as text.
fn call_export<R>(
    name: &str,
    args: impl for<'js> FnOnce(Ctx<'js>) -> rquickjs::Result<Vec<Value<'js>>>,
    ret: impl for<'js> FnOnce(Value<'js>) -> Result<R, String>,
) -> Result<R, String> {
    STATE.with(|s| {
        let state = s.borrow();
        let Some(state) = state.as_ref() else {
            return Err(
                "the JavaScript runtime was not pre-initialised: build the test with \
                        `wload run script.js`"
                    .to_owned(),
            );
        };
        state.context.with(|ctx| {
            let result = (|| {
                let exports: Object = ctx.globals().get("__wloadExports")?;
                let f: Function = exports.get(name)?;
                let mut a = rquickjs::function::Args::new(ctx.clone(), 4);
                for v in args(ctx.clone())? {
                    a.push_arg(v)?;
                }
                f.call_arg::<Value>(a)
            })()
            .catch(&ctx);
            let out = match result {
                Ok(v) => ret(v),
                Err(e) => Err(caught_text(Some(e))),
            };
            // Promise jobs the script queued (an `async` helper awaited
            // nothing real): run them so they do not pile up.
            while ctx.execute_pending_job() {}
            out
        })
    })
}

/// For the exports without a `result`: the reason reaches the engine
/// before the trap.
fn or_panic<T>(r: Result<T, String>) -> T {
    match r {
        Ok(v) => v,
        Err(message) => {
            wit_vu::report_panic(&message);
            panic!("{message}")
        }
    }
}

struct Test;

impl Guest for Test {
    fn options() -> String {
        or_panic(call_export(
            "options",
            |_| Ok(vec![]),
            |v| {
                Ok(v.as_string()
                    .and_then(|s| s.to_string().ok())
                    .unwrap_or_default())
            },
        ))
    }

    fn setup() -> Result<Option<String>, String> {
        call_export(
            "setup",
            |_| Ok(vec![]),
            |v| Ok(v.as_string().and_then(|s| s.to_string().ok())),
        )
    }

    fn functions() -> Vec<String> {
        or_panic(call_export(
            "functions",
            |_| Ok(vec![]),
            |v| {
                let list: Vec<String> = rquickjs::FromJs::from_js(v.ctx(), v.clone())
                    .map_err(|e| format!("functions() returned no list of names: {e}"))?;
                Ok(list)
            },
        ))
    }

    fn iteration(entry: u32) -> Result<(), String> {
        call_export(
            "iteration",
            |ctx| Ok(vec![Value::new_number(ctx, f64::from(entry))]),
            |_| Ok(()),
        )
    }

    fn teardown() -> Result<(), String> {
        call_export("teardown", |_| Ok(vec![]), |_| Ok(()))
    }
}

export!(Test);
