//! WASI preview 1 core modules (what Go's `GOOS=wasip1` and TinyGo's
//! `wasip1` target build) become components through the preview 1
//! adapter, which wit-component links in front of the module.
//!
//! The adapter needs memory of its own in the module's linear memory (one
//! page of state and a 64 KiB stack), and asks for it on its first call.
//! Neither way wit-component offers works for Go: the module's
//! `cabi_realloc` is a `go:wasmexport` function, which traps when called
//! before the Go runtime is initialised, and the runtime's own start-up
//! (`_initialize`) is what first calls the adapter (for the clock and
//! random bytes); and pages the adapter adds with `memory.grow` land where
//! the Go heap grows next, since Go's allocator assumes that all memory
//! past its data is its own. So the wload Go SDK reserves the adapter's
//! memory inside its own data: an array that starts with [`MARKER`] and
//! its size. Here that array is found in the module's data segments, and
//! a bump allocator over it is added to the module as
//! `cabi_realloc_adapter`, which wit-component gives the adapter in place
//! of `cabi_realloc`.

use anyhow::{Context, Result, bail};

/// The first 16 bytes of the SDK's arena; a little-endian `u32` with the
/// arena's whole size in bytes (these 20 bytes included) follows.
pub const MARKER: &[u8; 16] = b"wload:adapter:v1";

/// The preview 1 import module name.
pub const PREVIEW1: &str = "wasi_snapshot_preview1";

/// The reactor adapter: the module exports functions and `_initialize`
/// (what `-buildmode=c-shared` builds), it has no `_start` to run.
pub const ADAPTER: &[u8] =
    wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER;

/// Whether `module` imports anything from WASI preview 1.
pub fn imports_preview1(module: &[u8]) -> bool {
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        if let Ok(wasmparser::Payload::ImportSection(imports)) = payload {
            return imports
                .into_imports()
                .filter_map(|import| import.ok())
                .any(|import| import.module == PREVIEW1);
        }
    }
    false
}

/// Where the arena is in linear memory: `start..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arena {
    pub start: u32,
    pub end: u32,
}

/// The SDK's arena in `module`'s data segments, if there is one; an error
/// when the marker is there but unusable.
pub fn find_arena(module: &[u8]) -> Result<Option<Arena>> {
    let mut found = None;
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        let wasmparser::Payload::DataSection(data) = payload? else {
            continue;
        };
        for segment in data {
            let segment = segment?;
            let wasmparser::DataKind::Active {
                memory_index: 0,
                offset_expr,
            } = segment.kind
            else {
                continue;
            };
            let Some(pos) = segment.data.windows(MARKER.len()).position(|w| w == MARKER) else {
                continue;
            };
            let mut ops = offset_expr.get_operators_reader();
            let wasmparser::Operator::I32Const { value } = ops.read()? else {
                bail!("the adapter arena is in a data segment without a constant address");
            };
            // Toolchains leave trailing zero bytes out of data segments
            // (memory starts zeroed): what is missing of the size is 0.
            let mut size = [0u8; 4];
            for (to, from) in size.iter_mut().zip(&segment.data[pos + MARKER.len()..]) {
                *to = *from;
            }
            let size = u32::from_le_bytes(size);
            let start = (value as u32)
                .checked_add(u32::try_from(pos).context("data segment too large")?)
                .context("the adapter arena is past 4 GiB")?;
            let end = start
                .checked_add(size)
                .context("the adapter arena ends past 4 GiB")?;
            if found.is_some() {
                bail!("the adapter arena's marker is there twice");
            }
            found = Some(Arena { start, end });
        }
    }
    Ok(found)
}

/// `module` with an exported `cabi_realloc_adapter` that hands out
/// `arena` (past its 20-byte header) from the bottom up and traps when it
/// is used up or asked to reallocate (the adapter only allocates, twice).
pub fn add_arena_allocator(module: &[u8], arena: Arena) -> Result<Vec<u8>> {
    let mut counts = Counts::default();
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        match payload? {
            wasmparser::Payload::TypeSection(s) => counts.types = s.count(),
            wasmparser::Payload::ImportSection(s) => {
                for import in s.into_imports() {
                    match import?.ty {
                        wasmparser::TypeRef::Func(_) => counts.funcs += 1,
                        wasmparser::TypeRef::Global(_) => counts.globals += 1,
                        _ => {}
                    }
                }
            }
            wasmparser::Payload::FunctionSection(s) => counts.funcs += s.count(),
            wasmparser::Payload::GlobalSection(s) => counts.globals += s.count(),
            _ => {}
        }
    }
    let bottom = arena
        .start
        .checked_add(24)
        .filter(|b| *b <= arena.end)
        .context("the adapter arena is smaller than its header")?;

    let ty = vec![0x60, 4, I32, I32, I32, I32, 1, I32];
    let mut func = Vec::new();
    leb(&mut func, counts.types);
    let mut global = vec![I32, 0x01, 0x41];
    sleb(&mut global, bottom as i32);
    global.push(END);
    let mut export = Vec::new();
    let name = b"cabi_realloc_adapter";
    leb(&mut export, name.len() as u32);
    export.extend_from_slice(name);
    export.push(0x00);
    leb(&mut export, counts.funcs);
    let code = allocator_body(counts.globals, arena.end);

    let mut extra = [
        (TYPE, Some(ty)),
        (FUNCTION, Some(func)),
        (GLOBAL, Some(global)),
        (EXPORT, Some(export)),
        (CODE, Some(code)),
    ];
    let mut out = module[..8].to_vec();
    let mut pos = 8;
    while pos < module.len() {
        let id = module[pos];
        let (size, n) = read_leb(&module[pos + 1..]).context("a section size is cut off")?;
        let body = pos + 1 + n;
        let end = body
            .checked_add(size as usize)
            .filter(|e| *e <= module.len())
            .context("a section runs past the end of the module")?;
        // Sections missing from the module go in before the first section
        // that follows them in the binary format's order.
        for (sid, item) in extra.iter_mut() {
            if item.is_some() && id != 0 && order(*sid) < order(id) {
                let item = item.take().expect("checked");
                section(&mut out, *sid, 1, &[], &item);
            }
        }
        match extra.iter_mut().find(|(sid, _)| *sid == id) {
            Some((_, item)) if item.is_some() => {
                let item = item.take().expect("checked");
                let (count, n) =
                    read_leb(&module[body..end]).context("a section count is cut off")?;
                section(&mut out, id, count + 1, &module[body + n..end], &item);
            }
            _ => out.extend_from_slice(&module[pos..end]),
        }
        pos = end;
    }
    for (sid, item) in extra.iter_mut() {
        if let Some(item) = item.take() {
            section(&mut out, *sid, 1, &[], &item);
        }
    }
    Ok(out)
}

#[derive(Default)]
struct Counts {
    types: u32,
    funcs: u32,
    globals: u32,
}

const TYPE: u8 = 1;
const FUNCTION: u8 = 3;
const GLOBAL: u8 = 6;
const EXPORT: u8 = 7;
const CODE: u8 = 10;
const I32: u8 = 0x7f;
const END: u8 = 0x0b;

/// The position of a section id in the binary format's order (the data
/// count section, 12, comes before code).
fn order(id: u8) -> u8 {
    match id {
        12 => 9,
        10 | 11 => id + 1,
        _ => id,
    }
}

/// `cabi_realloc_adapter(old, old_size, align, size) -> ptr` over the
/// mutable global `bump`, up to `end`.
fn allocator_body(bump: u32, end: u32) -> Vec<u8> {
    let end = end as i32;
    let mut b = vec![1, 1, I32]; // one local: p (index 4)
    let get = |b: &mut Vec<u8>, i: u8| b.extend_from_slice(&[0x20, i]);
    let trap_if = |b: &mut Vec<u8>| b.extend_from_slice(&[0x04, 0x40, 0x00, END]);
    let constant = |b: &mut Vec<u8>, v: i32| {
        b.push(0x41);
        sleb(b, v);
    };
    // old != 0 || old_size != 0: a reallocation, which the adapter never asks for.
    get(&mut b, 0);
    get(&mut b, 1);
    b.push(0x72); // i32.or
    trap_if(&mut b);
    // p = (bump + align - 1) & -align
    b.push(0x23);
    leb(&mut b, bump);
    get(&mut b, 2);
    b.push(0x6a); // i32.add
    constant(&mut b, 1);
    b.push(0x6b); // i32.sub
    constant(&mut b, 0);
    get(&mut b, 2);
    b.push(0x6b); // i32.sub
    b.push(0x71); // i32.and
    b.extend_from_slice(&[0x22, 4]); // local.tee p
    // p > end || size > end - p: the arena is used up.
    constant(&mut b, end);
    b.push(0x4b); // i32.gt_u
    get(&mut b, 3);
    constant(&mut b, end);
    get(&mut b, 4);
    b.push(0x6b); // i32.sub
    b.push(0x4b); // i32.gt_u
    b.push(0x72); // i32.or
    trap_if(&mut b);
    // bump = p + size; p
    get(&mut b, 4);
    get(&mut b, 3);
    b.push(0x6a);
    b.push(0x24);
    leb(&mut b, bump);
    get(&mut b, 4);
    b.push(END);
    let mut out = Vec::new();
    leb(&mut out, b.len() as u32);
    out.extend_from_slice(&b);
    out
}

fn section(out: &mut Vec<u8>, id: u8, count: u32, items: &[u8], extra: &[u8]) {
    let mut body = Vec::new();
    leb(&mut body, count);
    body.extend_from_slice(items);
    body.extend_from_slice(extra);
    out.push(id);
    leb(out, body.len() as u32);
    out.extend_from_slice(&body);
}

/// Append `n` as unsigned LEB128 (the encoding of wasm's sizes and counts).
pub(super) fn leb(out: &mut Vec<u8>, mut n: u32) {
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

fn sleb(out: &mut Vec<u8>, mut n: i32) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        let done = (n == 0 && byte & 0x40 == 0) || (n == -1 && byte & 0x40 != 0);
        if done {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn read_leb(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut n: u32 = 0;
    for (i, byte) in bytes.iter().take(5).enumerate() {
        n |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((n, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module with one memory and an arena at each of `arenas`
    /// (`(address, size)`; header only: the rest is zeros left out, as
    /// Go's linker leaves them out); with `others`, also a global, a
    /// function and an export of its own, so that the added ones must take
    /// the next indices.
    fn module_with(arenas: &[(u32, u32)], others: bool) -> Vec<u8> {
        let mut m = b"\0asm\x01\0\0\0".to_vec();
        if others {
            // type 0: () -> i32
            section(&mut m, TYPE, 1, &[0x60, 0, 1, I32], &[]);
            section(&mut m, FUNCTION, 1, &[0], &[]);
        }
        section(&mut m, 5, 1, &[0x00, 1], &[]); // memory: min 1 page
        if others {
            section(&mut m, GLOBAL, 1, &[I32, 0x00, 0x41, 7, END], &[]);
            section(&mut m, EXPORT, 1, &[1, b'f', 0x00, 0], &[]);
            // f: global.get 0
            section(&mut m, CODE, 1, &[4, 0, 0x23, 0, END], &[]);
        }
        let mut segments = Vec::new();
        for &(at, size) in arenas {
            segments.extend_from_slice(&[0x00, 0x41]);
            sleb(&mut segments, at as i32);
            segments.push(END);
            let mut data = MARKER.to_vec();
            data.extend_from_slice(&size.to_le_bytes());
            while data.last() == Some(&0) {
                data.pop();
            }
            leb(&mut segments, data.len() as u32);
            segments.extend_from_slice(&data);
        }
        section(&mut m, 11, arenas.len() as u32, &segments, &[]);
        m
    }

    fn module(at: u32, size: u32, others: bool) -> Vec<u8> {
        module_with(&[(at, size)], others)
    }

    /// `cabi_realloc_adapter(old, old_size, align, size) -> ptr`.
    type Alloc = wasmtime::TypedFunc<(i32, i32, i32, i32), i32>;

    fn instance(module: &[u8]) -> (wasmtime::Store<()>, Alloc) {
        wasmparser::Validator::new()
            .validate_all(module)
            .expect("the module stays valid");
        let engine = wasmtime::Engine::default();
        let module = wasmtime::Module::new(&engine, module).expect("compile");
        let mut store = wasmtime::Store::new(&engine, ());
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).expect("instantiate");
        let alloc = instance
            .get_typed_func(&mut store, "cabi_realloc_adapter")
            .expect("cabi_realloc_adapter exported");
        (store, alloc)
    }

    #[test]
    fn the_arena_is_found_where_its_marker_is() {
        let m = module(1000, 4096, false);
        assert_eq!(
            find_arena(&m).expect("readable"),
            Some(Arena {
                start: 1000,
                end: 5096
            })
        );
        assert_eq!(find_arena(b"\0asm\x01\0\0\0").expect("readable"), None);
    }

    #[test]
    fn the_allocator_hands_out_the_arena_aligned_and_traps_past_it() {
        for others in [false, true] {
            let m = add_arena_allocator(
                &module(1000, 4096, others),
                Arena {
                    start: 1000,
                    end: 5096,
                },
            )
            .expect("wired up");
            let (mut store, alloc) = instance(&m);
            // Past the 24-byte header, aligned.
            assert_eq!(alloc.call(&mut store, (0, 0, 8, 100)).expect("first"), 1024);
            assert_eq!(alloc.call(&mut store, (0, 0, 1, 3)).expect("second"), 1124);
            assert_eq!(alloc.call(&mut store, (0, 0, 16, 16)).expect("third"), 1136);
            // 5096 - 1152 = 3944 left: one byte more traps, the rest fits.
            assert!(
                alloc.call(&mut store, (0, 0, 1, 3945)).is_err(),
                "others: {others}"
            );
            let (mut store, alloc) = instance(&m);
            assert_eq!(alloc.call(&mut store, (0, 0, 8, 4072)).expect("all"), 1024);
            assert!(alloc.call(&mut store, (0, 0, 1, 1)).is_err(), "used up");
            // A reallocation is refused, and so is a size that wraps.
            let (mut store, alloc) = instance(&m);
            assert!(alloc.call(&mut store, (1024, 8, 8, 16)).is_err(), "realloc");
            assert!(alloc.call(&mut store, (0, 0, 8, -1)).is_err(), "wraps");
        }
    }

    #[test]
    fn the_module_keeps_its_own_functions() {
        let m = add_arena_allocator(
            &module(1000, 4096, true),
            Arena {
                start: 1000,
                end: 5096,
            },
        )
        .expect("wired up");
        wasmparser::Validator::new()
            .validate_all(&m)
            .expect("valid");
        let engine = wasmtime::Engine::default();
        let module = wasmtime::Module::new(&engine, &m).expect("compile");
        let mut store = wasmtime::Store::new(&engine, ());
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).expect("instantiate");
        let f = instance
            .get_typed_func::<(), i32>(&mut store, "f")
            .expect("f still exported");
        assert_eq!(f.call(&mut store, ()).expect("call f"), 7);
    }

    #[test]
    fn a_marker_twice_or_an_arena_past_4_gib_is_refused() {
        let m = module_with(&[(1000, 4096), (9000, 4096)], false);
        assert!(find_arena(&m).is_err(), "twice");
        let m = module(0x7fff_f000, 0x8000_0000 + 0x1000, false);
        assert!(find_arena(&m).is_err(), "past 4 GiB");
    }

    #[test]
    fn preview1_imports_are_seen() {
        let mut m = b"\0asm\x01\0\0\0".to_vec();
        section(&mut m, TYPE, 1, &[0x60, 0, 0], &[]);
        let mut import = Vec::new();
        leb(&mut import, PREVIEW1.len() as u32);
        import.extend_from_slice(PREVIEW1.as_bytes());
        import.extend_from_slice(&[11]);
        import.extend_from_slice(b"sched_yield");
        import.extend_from_slice(&[0x00, 0]);
        section(&mut m, 2, 1, &import, &[]);
        assert!(imports_preview1(&m));
        assert!(!imports_preview1(&module(1000, 4096, true)));
    }
}
