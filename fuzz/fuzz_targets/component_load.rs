//! The component loader: bytes recognised, compiled and checked against
//! the `wload:test` world as `wload run` does with a file — components,
//! core modules (turned into components when they carry the world's
//! metadata) and anything else.
//!
//! Input: one byte picks the mode. Raw: the rest is the file. Generated:
//! the rest drives wasm-smith into a valid core module, which gets the
//! world's metadata (as the AssemblyScript SDK embeds it), so the
//! wrapping into a component runs on modules that always parse.
//!
//! Precompiled `.cwasm` files are skipped: loading one runs no validation
//! by design (they are trusted code, docs for `wload compile`).

#![no_main]

use std::path::Path;
use std::sync::LazyLock;

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use wload_engine::component::{Cache, CompiledTest, FileKind, detect};
use wload_engine::sandbox::{Sandbox, SandboxLimits};

/// The compiling engine of a run, made once: making one per input would
/// be most of the time spent.
static PROBE: LazyLock<Sandbox> =
    LazyLock::new(|| Sandbox::probe(SandboxLimits::default()).expect("the probe engine"));

/// The world's type information, as the AssemblyScript SDK ships it.
const WORLD_METADATA: &[u8] = include_bytes!("../../sdk/assemblyscript/component-type.wasm");

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        match generated(rest) {
            Some(m) => m,
            None => return,
        }
    };
    if detect(&bytes) == FileKind::Precompiled {
        return;
    }
    let _ = CompiledTest::from_bytes(
        &PROBE.engine,
        Path::new("fuzz.wasm"),
        &bytes,
        &Cache::disabled(),
    );
});

/// A valid core module from wasm-smith, with the world's metadata in a
/// `component-type` custom section.
fn generated(seed: &[u8]) -> Option<Vec<u8>> {
    let mut u = Unstructured::new(seed);
    let mut config: wasm_smith::Config = u.arbitrary().ok()?;
    // Small modules: compiling is the cost of every input.
    config.max_funcs = config.max_funcs.min(8);
    config.max_instructions = config.max_instructions.min(200);
    let mut module = wasm_smith::Module::new(config, &mut u).ok()?.to_bytes();
    let name = b"component-type:wload:test";
    let mut section = Vec::new();
    leb128(&mut section, name.len());
    section.extend_from_slice(name);
    section.extend_from_slice(WORLD_METADATA);
    module.push(0);
    leb128(&mut module, section.len());
    module.extend_from_slice(&section);
    Some(module)
}

fn leb128(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}
