//! Builds the bundled example test (`examples/rust/hello`) for
//! wasm32-wasip2, so that `wload demo` needs nothing else. The guest
//! workspace builds into `target/guests/`, which the end-to-end tests
//! share, so the guest is compiled once for both.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir
        .parent()
        .expect("engine/ is inside the repository")
        .to_owned();
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    let target_dir = root.join("target").join("guests");

    for watched in [
        "wit",
        "sdk/rust/src",
        "sdk/rust/Cargo.toml",
        "examples/rust/hello",
        "examples/Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--release",
        "--target",
        "wasm32-wasip2",
        "-p",
        "hello",
        "--manifest-path",
    ])
    .arg(root.join("examples").join("Cargo.toml"))
    .arg("--target-dir")
    .arg(&target_dir);
    // The outer build's flags are for the host, not the guest.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_RUSTFLAGS",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd
        .status()
        .expect("cannot run cargo to build the bundled example test");
    if !status.success() {
        panic!(
            "building examples/rust/hello for wasm32-wasip2 failed; if the target is missing, \
             run `rustup target add wasm32-wasip2` (README.md's commands do)"
        );
    }
    let wasm = target_dir.join("wasm32-wasip2/release/hello.wasm");
    std::fs::copy(&wasm, out_dir.join("hello.wasm"))
        .unwrap_or_else(|e| panic!("cannot copy {}: {e}", wasm.display()));
}
