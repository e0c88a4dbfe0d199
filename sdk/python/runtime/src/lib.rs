//! The Python runtime of wload's Python SDK: MicroPython in a wasm32-wasip1
//! core module that exports the world `wload:test@0.2.0`.
//!
//! Why it exists: a VU of a component built by componentize-py (CPython)
//! costs 7.5-8 MB of RSS, mostly CPython's heap that each VU reads and
//! writes (reference counts) all over; MicroPython's whole heap after the
//! SDK's start-up is a few dozen KiB and its collector marks in a side
//! table, not in the objects (docs/BENCHMARKS.md, issue 19).
//!
//! How a test is made of it (`wload run test.py`, crates/wload/src/cli/
//! build.rs): the engine's builder instantiates this module, calls
//! [`wload_py_init`] with the test's files, which starts MicroPython,
//! imports the SDK (py/wload, built in) and compiles the test without
//! running it, then snapshots the memory (wizer) and makes the module a
//! component with the preview 1 adapter. Each VU's instance starts from
//! that snapshot and runs the test's top level on the engine's first call,
//! as k6 runs the init code once per VU.
//!
//! The interpreter's C (c/, MicroPython's py/) raises exceptions with
//! setjmp/longjmp, made of Asyncify (c/sjlj.c): build.sh runs
//! `wasm-opt --asyncify` over this crate's output.

mod host;

use std::cell::{Cell, RefCell};

wit_bindgen::generate!({
    path: "../../../wit/test-0.2",
    world: "wload:test/test@0.2.0",
    generate_all,
});

use wload::test::vu as wit_vu;

unsafe extern "C" {
    fn wl_mp_init(path: *const u8, path_len: usize, name: *const u8, name_len: usize) -> i32;
    fn wl_mp_result(out: *mut *const u8, out_len: *mut usize);
    fn wl_mp_export(which: i32, arg: u32, out: *mut *const u8, out_len: *mut usize) -> i32;
    fn wl_mp_gc();
    /// Set by the linker: the end of the stack (stack-first layout).
    static __stack_high: u8;
}

/// The SDK's modules, by the path an import looks for (and a `typing`
/// that takes annotations, which MicroPython has none of).
const SDK: &[(&str, &str)] = &[
    ("wload/__init__.py", include_str!("../py/wload/__init__.py")),
    ("wload/_export.py", include_str!("../py/wload/_export.py")),
    ("wload/_host.py", include_str!("../py/wload/_host.py")),
    ("wload/http.py", include_str!("../py/wload/http.py")),
    ("wload/metrics.py", include_str!("../py/wload/metrics.py")),
    ("typing.py", include_str!("../py/typing.py")),
];

thread_local! {
    /// The test's files (path relative to the test's folder, and the
    /// test itself also by its full path), given at pre-initialisation.
    static FILES: RefCell<Vec<(String, Vec<u8>)>> = const { RefCell::new(Vec::new()) };
    static READY: Cell<bool> = const { Cell::new(false) };
}

/// For c/port.c: 1 and the bytes of a file, 2 for a folder, 0 for none.
///
/// # Safety
/// `path` points at `len` bytes; `data` and `data_len` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wl_file_find(
    path: *const u8,
    len: usize,
    data: *mut *const u8,
    data_len: *mut usize,
) -> i32 {
    // SAFETY: the caller passes `len` bytes at `path`.
    let path = unsafe { std::slice::from_raw_parts(path, len) };
    let Ok(path) = std::str::from_utf8(path) else {
        return 0;
    };
    let path = path.strip_prefix("./").unwrap_or(path);
    let found = |bytes: &[u8]| {
        // SAFETY: the out-pointers are the caller's locals; the bytes live
        // in FILES or SDK for the instance's lifetime.
        unsafe {
            *data = bytes.as_ptr();
            *data_len = bytes.len();
        }
        1
    };
    if let Some((_, text)) = SDK.iter().find(|(p, _)| *p == path) {
        return found(text.as_bytes());
    }
    FILES.with(|f| {
        let files = f.borrow();
        if let Some((_, bytes)) = files.iter().find(|(p, _)| p == path) {
            return found(bytes);
        }
        let dir = format!("{path}/");
        let is_dir = SDK.iter().any(|(p, _)| p.starts_with(&dir))
            || files.iter().any(|(p, _)| p.starts_with(&dir));
        if is_dir { 2 } else { 0 }
    })
}

/// For c/port.c: a line `print` wrote, to the engine's log.
///
/// # Safety
/// `text` points at `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wl_print(text: *const u8, len: usize) {
    // SAFETY: the caller passes `len` bytes at `text`.
    let bytes = unsafe { std::slice::from_raw_parts(text, len) };
    if READY.with(Cell::get) {
        wit_vu::log(wit_vu::LogLevel::Info, &String::from_utf8_lossy(bytes));
    }
}

/// For MicroPython's `random`, seeded on its first import, in a VU (the
/// test's top level runs there): the clock and the VU's id, so VUs differ.
#[unsafe(no_mangle)]
pub extern "C" fn wl_random_seed() -> u32 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let id = if READY.with(Cell::get) {
        wit_vu::id()
    } else {
        0
    };
    (now as u32) ^ ((now >> 32) as u32) ^ id.wrapping_mul(0x9e37_79b1)
}

/// Pre-initialisation, called by the builder (and removed by wizer from
/// the snapshot). `input` (at `ptr`, `len` bytes) is the test's files: a
/// `u32` count, then per file a `u32` length and the path, a `u32` length
/// and the source, the test first. The answer (its address is returned)
/// is a `u32` status and a `u32` length and text: 0 done, the text the top
/// of the stack's region (decimal); 2 the test cannot be compiled or the
/// SDK did not start, the text says why. (The JavaScript runtime's
/// protocol, whose status 1, a file to add, never comes from here: every
/// `.py` file beside the test is given.)
///
/// # Safety
/// `ptr` must point at `len` readable bytes (the builder's `cabi_realloc`
/// allocation).
#[unsafe(export_name = "wload-py-init")]
pub unsafe extern "C" fn wload_py_init(ptr: *const u8, len: usize) -> *const u8 {
    // SAFETY: the builder wrote `len` bytes at `ptr`.
    let input = unsafe { std::slice::from_raw_parts(ptr, len) };
    let (status, text) = match init(input) {
        Ok(()) => (0u32, (&raw const __stack_high as usize).to_string()),
        Err(message) => (2, message),
    };
    let mut out = Vec::with_capacity(8 + text.len());
    out.extend_from_slice(&status.to_le_bytes());
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    Box::leak(out.into_boxed_slice()).as_ptr()
}

fn init(mut input: &[u8]) -> Result<(), String> {
    fn take<'a>(input: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
        if input.len() < n {
            return Err("the builder's file list is cut short".to_owned());
        }
        let (head, rest) = input.split_at(n);
        *input = rest;
        Ok(head)
    }
    fn int(input: &mut &[u8]) -> Result<usize, String> {
        let b = take(input, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
    let count = int(&mut input)?;
    let mut given = Vec::with_capacity(count);
    for _ in 0..count {
        let n = int(&mut input)?;
        let name = std::str::from_utf8(take(&mut input, n)?)
            .map_err(|_| "a file path is not UTF-8".to_owned())?
            .to_owned();
        let n = int(&mut input)?;
        given.push((name, take(&mut input, n)?.to_vec()));
    }
    let Some((main, source)) = given.first().cloned() else {
        return Err("the builder gave no test".to_owned());
    };
    let (dir, file) = main.rsplit_once('/').unwrap_or(("", &main));
    let stem = file.strip_suffix(".py").unwrap_or(file).to_owned();
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let mut files: Vec<(String, Vec<u8>)> = given
        .into_iter()
        .map(|(p, b)| (p.strip_prefix(&prefix).unwrap_or(&p).to_owned(), b))
        .collect();
    files.push((main.clone(), source));
    FILES.with(|f| *f.borrow_mut() = files);
    // SAFETY: both strings outlive the call.
    let status = unsafe { wl_mp_init(main.as_ptr(), main.len(), stem.as_ptr(), stem.len()) };
    if status != 0 {
        return Err(result_text(|out, n| unsafe { wl_mp_result(out, n) })
            .unwrap_or_else(|| "MicroPython did not start (out of memory)".to_owned()));
    }
    Ok(())
}

fn result_text(f: impl FnOnce(*mut *const u8, *mut usize)) -> Option<String> {
    let mut out: *const u8 = std::ptr::null();
    let mut n = 0usize;
    f(&mut out, &mut n);
    // SAFETY: port.c's text lives until the next entry; copied here.
    (!out.is_null()).then(|| {
        String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(out, n) }).into_owned()
    })
}

/// Call an export of the SDK's `wload._export`.
fn call_export(which: i32, arg: u32) -> Result<Option<String>, String> {
    if !READY.with(Cell::get) {
        // The snapshot is taken after init: an instance that answers has
        // been through it, unless it was built some other way.
        READY.with(|r| r.set(true));
    }
    let mut status = 0;
    let text = result_text(|out, n| status = unsafe { wl_mp_export(which, arg, out, n) });
    // SAFETY: the text is copied; a collection may free it now.
    unsafe { wl_mp_gc() };
    match status {
        0 => Ok(text),
        _ => Err(text.unwrap_or_else(|| "the test raised an exception".to_owned())),
    }
}

/// For the exports without a `result`: the reason reaches the engine
/// before the trap (an abort, not a panic, whose hook would print the
/// same text again on the engine's stderr).
fn or_panic<T>(r: Result<T, String>) -> T {
    match r {
        Ok(v) => v,
        Err(message) => {
            wit_vu::report_panic(&message);
            std::process::abort()
        }
    }
}

struct Test;

impl Guest for Test {
    fn options() -> String {
        or_panic(call_export(0, 0)).unwrap_or_default()
    }

    fn setup() -> Result<Option<String>, String> {
        call_export(1, 0)
    }

    fn functions() -> Vec<String> {
        or_panic(call_export(2, 0))
            .unwrap_or_default()
            .split('\n')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    fn iteration(entry: u32) -> Result<(), String> {
        call_export(3, entry).map(|_| ())
    }

    fn teardown() -> Result<(), String> {
        call_export(4, 0).map(|_| ())
    }
}

export!(Test);
