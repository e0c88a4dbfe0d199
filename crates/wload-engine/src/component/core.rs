//! Core modules that carry the world's metadata become components here.
//!
//! Toolchains without component-model support (AssemblyScript, Go) emit a
//! core module that follows the canonical ABI of `wload:test` and embeds
//! the world's type information in a `component-type` custom section, as
//! wit-bindgen does. Wrapping such a module is what `wasm-tools component
//! new` does; doing it at load time with the same library means users never
//! run an extra tool. Modules that import WASI preview 1 (Go's `wasip1`)
//! get the preview 1 adapter linked in front of them ([`super::wasip1`]).

use anyhow::{Context, Result};
use wit_component::ComponentEncoder;

use super::wasip1;

/// Whether a core module has a `component-type*` custom section.
pub fn has_component_metadata(module: &[u8]) -> bool {
    wasmparser::Parser::new(0)
        .parse_all(module)
        .filter_map(|payload| payload.ok())
        .any(|payload| {
            matches!(payload, wasmparser::Payload::CustomSection(s)
                if s.name().starts_with("component-type"))
        })
}

/// Wrap `module` into a component using its embedded world metadata.
pub fn to_component(module: &[u8]) -> Result<Vec<u8>> {
    let preview1 = wasip1::imports_preview1(module);
    let with_arena;
    let module = match preview1 {
        true => match wasip1::find_arena(module).context("its adapter arena is unusable")? {
            Some(arena) => {
                with_arena = wasip1::add_arena_allocator(module, arena)
                    .context("its adapter arena cannot be wired up")?;
                &with_arena[..]
            }
            None => module,
        },
        false => module,
    };
    let mut encoder = ComponentEncoder::default();
    encoder
        .validate(true)
        .module(module)
        .context("its component-type metadata cannot be read")?;
    if preview1 {
        encoder
            .adapter(wasip1::PREVIEW1, wasip1::ADAPTER)
            .context("the WASI preview 1 adapter cannot be used")?;
    }
    encoder
        .encode()
        .map_err(|e| anyhow::anyhow!("{e:#}"))
        .context(
            "it does not follow the canonical ABI of its embedded world \
         (rebuild it with a wload SDK: `npx wload-as build` for AssemblyScript, \
         `go run wload/sdk/cmd/wload-go build` for Go)",
        )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use wit_component::{StringEncoding, metadata};
    use wit_parser::Resolve;

    /// The world's metadata as the AssemblyScript and Go SDKs embed it:
    /// the payload of a `component-type:wload:test` custom section, for
    /// the world `wload:test/test@0.2.0` (`wit/test-0.2`), which both bind.
    fn world_metadata() -> Vec<u8> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut resolve = Resolve::default();
        let (pkg, _) = resolve
            .push_dir(root.join("wit/test-0.2"))
            .expect("wit/test-0.2 parses");
        let world = resolve
            .select_world(&[pkg], Some("test"))
            .expect("world test");
        metadata::encode(&resolve, world, StringEncoding::UTF8, None).expect("encode metadata")
    }

    /// The AssemblyScript and Go SDKs ship the metadata as a file (they
    /// have no WIT tooling of their own); it must match `wit/test-0.2`. Run with
    /// `WLOAD_BLESS=1` after changing the WIT to rewrite them.
    fn shipped_metadata_matches_the_wit(file: &str) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(file);
        let fresh = world_metadata();
        if std::env::var_os("WLOAD_BLESS").is_some() {
            std::fs::write(&path, &fresh).expect("write the metadata");
        }
        let shipped = std::fs::read(&path).expect("the shipped metadata");
        assert!(
            shipped == fresh,
            "{file} is stale: rerun this test with WLOAD_BLESS=1"
        );
    }

    #[test]
    fn assemblyscript_metadata_matches_the_wit() {
        shipped_metadata_matches_the_wit("sdk/assemblyscript/component-type.wasm");
    }

    #[test]
    fn go_metadata_matches_the_wit() {
        shipped_metadata_matches_the_wit("sdk/go/cmd/wload-go/component-type.wasm");
    }

    /// The cases of 0.2's `error-kind` in order, each with the k6 code its
    /// doc comment starts with (`/// 1212: connection refused.`).
    fn wit_error_kinds() -> Vec<(String, u32)> {
        let wit = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit/test-0.2/test.wit"),
        )
        .expect("read wit/test-0.2/test.wit");
        let body = wit
            .split_once("enum error-kind {")
            .and_then(|(_, rest)| rest.split_once('}'))
            .map(|(body, _)| body)
            .expect("wit/test-0.2 has enum error-kind");
        let mut kinds = Vec::new();
        let mut code = None;
        for line in body.lines().map(str::trim) {
            if let Some(doc) = line.strip_prefix("///") {
                let digits: String = doc
                    .trim()
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                if code.is_none() && !digits.is_empty() {
                    code = digits.parse().ok();
                }
            } else if let Some(name) = line.strip_suffix(',') {
                let code = code
                    .take()
                    .unwrap_or_else(|| panic!("{name} has no k6 code"));
                kinds.push((name.to_owned(), code));
            }
        }
        assert!(kinds.len() > 20, "parsed only {kinds:?}");
        kinds
    }

    fn sdk_file(path: &str) -> String {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../..")
                .join(path),
        )
        .unwrap_or_else(|e| panic!("read {path}: {e}"))
    }

    /// The Go SDK's table of kinds (`{"connection-refused", 1212},` in
    /// errors.go) is the WIT's, case for case: the canonical ABI passes
    /// an enum as its case's index.
    #[test]
    fn go_error_kinds_match_the_wit() {
        let go = sdk_file("sdk/go/wload/errors.go");
        let table: Vec<(String, u32)> = go
            .lines()
            .filter_map(|l| {
                let (name, code) = l.trim().strip_prefix("{\"")?.split_once("\", ")?;
                Some((name.to_owned(), code.strip_suffix("},")?.parse().ok()?))
            })
            .collect();
        assert_eq!(table, wit_error_kinds(), "sdk/go/wload/errors.go");
    }

    /// The AssemblyScript SDK's `ErrorKind` enum and `ERROR_CODES` (in
    /// http.ts) are the WIT's, in its order.
    #[test]
    fn assemblyscript_error_kinds_match_the_wit() {
        let ts = sdk_file("sdk/assemblyscript/assembly/http.ts");
        let between = |start: &str, end: char| -> String {
            let (_, rest) = ts
                .split_once(start)
                .unwrap_or_else(|| panic!("http.ts has {start}"));
            rest.split_once(end)
                .map(|(b, _)| b.to_owned())
                .expect("closed")
        };
        let codes: Vec<u32> = between("const ERROR_CODES: StaticArray<u32> = [", ']')
            .split(',')
            .filter_map(|c| c.trim().parse().ok())
            .collect();
        let names: Vec<String> = between("export enum ErrorKind {", '}')
            .split(',')
            .map(|n| n.split('=').next().unwrap_or("").trim().to_lowercase())
            .filter(|n| !n.is_empty())
            .collect();
        let wit = wit_error_kinds();
        let wit_names: Vec<String> = wit.iter().map(|(n, _)| n.replace('-', "")).collect();
        let wit_codes: Vec<u32> = wit.iter().map(|(_, c)| *c).collect();
        assert_eq!(names, wit_names, "http.ts: ErrorKind");
        assert_eq!(codes, wit_codes, "http.ts: ERROR_CODES");
    }

    #[test]
    fn modules_without_metadata_are_told_apart() {
        assert!(!super::has_component_metadata(b"\0asm\x01\0\0\0"));
        let mut module = b"\0asm\x01\0\0\0".to_vec();
        let payload = world_metadata();
        let name = b"component-type:wload:test";
        let mut section = vec![name.len() as u8];
        section.extend_from_slice(name);
        section.extend_from_slice(&payload);
        module.push(0);
        super::super::wasip1::leb(&mut module, section.len() as u32);
        module.extend_from_slice(&section);
        assert!(super::has_component_metadata(&module));
        // Metadata but no exports: refused with a reason, not a panic.
        let err = super::to_component(&module).unwrap_err();
        assert!(format!("{err:#}").contains("canonical ABI"), "{err:#}");
    }
}
