//! Building the example guests (`examples/`, a cargo workspace of its own)
//! for wasm32-wasip2 into `target/guests/`. One file shared by the build
//! script (the bundled demo test), the end-to-end tests and the
//! benchmarks (each includes it with `#[path]`), so all three build the
//! same way into the same directory and compile each guest once.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// Where the guests land: `target/guests/wasm32-wasip2/release/<name>.wasm`.
pub fn guest_dir(root: &Path) -> PathBuf {
    root.join("target/guests/wasm32-wasip2/release")
}

/// `cargo build --release --target wasm32-wasip2` of the examples
/// workspace under the repository `root`: one package, or all of them.
pub fn build_guests(root: &Path, package: Option<&str>) -> std::io::Result<ExitStatus> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--release", "--target", "wasm32-wasip2"]);
    if let Some(package) = package {
        cmd.args(["-p", package]);
    }
    cmd.arg("--manifest-path")
        .arg(root.join("examples/Cargo.toml"))
        .arg("--target-dir")
        .arg(root.join("target/guests"));
    // The outer build's settings are for the host, not the guest.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_RUSTFLAGS",
    ] {
        cmd.env_remove(var);
    }
    cmd.status()
}
