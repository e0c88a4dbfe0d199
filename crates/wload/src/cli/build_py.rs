//! `wload run test.py` builds Python here, in-process and without a
//! Python installation: the MicroPython runtime of the Python SDK
//! (sdk/python/runtime, a wasm32-wasip1 core module built into this
//! binary) is given the test and every `.py` file beside it, imports the
//! SDK and compiles the test, and is snapshotted and made a component
//! (preinit.rs, as for JavaScript). Each VU starts from the snapshot and
//! runs the test's top level itself, on the engine's first call.
//!
//! `WLOAD_PYTHON_RUNTIME=cpython` builds with componentize-py instead
//! (build.rs), for a test that needs what MicroPython leaves out
//! (docs/sdk-python.md).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, Result};

/// The runtime, as built by sdk/python/runtime/build.sh.
pub const RUNTIME: &[u8] = include_bytes!("../../../../sdk/python/runtime/wload-py-runtime.wasm");

/// The hash of the runtime's sources that `RUNTIME` was built from
/// (sdk/python/runtime/build.sh writes it; a test compares).
pub const RUNTIME_SOURCES: &str =
    include_str!("../../../../sdk/python/runtime/wload-py-runtime.sources");

const INIT: &str = "wload-py-init";

/// `WLOAD_PY_RUNTIME`, for who works on the runtime: a runtime .wasm to
/// use in place of the built-in one (sdk/python/runtime/build.sh's
/// output), without rebuilding wload.
pub const RUNTIME_ENV: &str = "WLOAD_PY_RUNTIME";

/// The runtime's bytes: `WLOAD_PY_RUNTIME`'s file, else the built-in one.
pub fn runtime() -> Result<std::borrow::Cow<'static, [u8]>> {
    super::preinit::runtime_bytes(RUNTIME_ENV, RUNTIME)
}

/// Build `test` into the component written to `out`; the files read.
/// `beside`: the `.py` files of the test's folder, any of which it may
/// import (an import runs in the VU, so which is not known here).
pub fn build(test: &Path, beside: &[String], out: &Path) -> Result<Vec<String>> {
    let main = test
        .to_str()
        .with_context(|| format!("{} is not a UTF-8 path", test.display()))?
        .to_owned();
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    files.insert(
        main.clone(),
        std::fs::read(test).with_context(|| format!("cannot read {}", test.display()))?,
    );
    for path in beside {
        if *path != main {
            let source = std::fs::read(path)
                .with_context(|| format!("cannot read {path}, beside the test"))?;
            files.insert(path.clone(), source);
        }
    }
    let runtime = runtime()?;
    let runtime = super::preinit::Runtime {
        wasm: &runtime,
        init: INIT,
        language: "Python",
    };
    super::preinit::build(&runtime, test, &main, files, out, &mut |path| {
        std::fs::read(path).with_context(|| {
            format!("cannot read {path}, which the test imports (directly or not)")
        })
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_built_runtime_matches_its_sources() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk/python");
        // The order build.sh hashes them in.
        let hash = super::super::preinit::sources_hash(
            &root,
            &[
                "runtime/Cargo.toml",
                "runtime/Cargo.lock",
                "runtime/.cargo/config.toml",
                "runtime/build.sh",
                "runtime/build.rs",
            ],
            &[
                "runtime/src",
                "runtime/c",
                "runtime/c/mod/wload",
                "runtime/py",
                "runtime/py/wload",
            ],
        );
        assert_eq!(
            super::RUNTIME_SOURCES.trim(),
            hash,
            "sdk/python/runtime/wload-py-runtime.wasm is stale: its sources changed since it \
             was built; run sdk/python/runtime/build.sh and commit the .wasm and .sources it writes"
        );
    }
}
