//! Builds the bundled example test (`examples/rust/hello`) for
//! wasm32-wasip2, so that `wload demo` needs nothing else. The guest
//! workspace builds into `target/guests/`, which the end-to-end tests
//! share, so the guest is compiled once for both.

use std::path::PathBuf;

#[path = "guests.rs"]
mod guests;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir
        .ancestors()
        .nth(2)
        .expect("crates/wload/ is inside the repository")
        .to_owned();
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));

    for watched in [
        "wit",
        "sdk/rust/src",
        "sdk/rust/Cargo.toml",
        "examples/rust/hello",
        "examples/Cargo.toml",
        "crates/wload/guests.rs",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }

    let status = guests::build_guests(&root, Some("hello"))
        .expect("cannot run cargo to build the bundled example test");
    if !status.success() {
        panic!(
            "building examples/rust/hello for wasm32-wasip2 failed; if the target is missing, \
             run `rustup target add wasm32-wasip2` (README.md's commands do)"
        );
    }
    let wasm = guests::guest_dir(&root).join("hello.wasm");
    std::fs::copy(&wasm, out_dir.join("hello.wasm"))
        .unwrap_or_else(|e| panic!("cannot copy {}: {e}", wasm.display()));
}
