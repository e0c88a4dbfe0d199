//! Builds the bundled example test (`examples/rust/hello`) for
//! wasm32-wasip2, so that `wload demo` needs nothing else. The guest
//! workspace builds into `target/guests/`, which the end-to-end tests
//! share, so the guest is compiled once for both.

use std::path::PathBuf;

#[path = "guests.rs"]
mod guests;

fn main() {
    let root = guests::repo_root();
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

    let wasm = guests::built_guest("hello");
    std::fs::copy(&wasm, out_dir.join("hello.wasm"))
        .unwrap_or_else(|e| panic!("cannot copy {}: {e}", wasm.display()));
}
