//! Building the example guests (`examples/`, a cargo workspace of its own)
//! and the scenario plugins (`plugins/`, another one) for wasm32-wasip2
//! into `target/guests/`. One file shared by the build
//! script (the bundled demo test), the end-to-end tests, the engine's
//! tests and the benchmarks (each includes it with `#[path]`), so all
//! build the same way into the same directory and compile each guest
//! once. Not every includer uses every function.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// The repository root. Every includer is a crate at `crates/<name>/`,
/// whose manifest directory this is read from when it compiles.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the crate is at crates/<name>/ in the repository")
        .to_owned()
}

/// `examples/rust/<name>` built (cargo does nothing when it is up to
/// date): the path of its `.wasm`.
pub fn built_guest(name: &str) -> PathBuf {
    let root = repo_root();
    let status =
        build_guests(&root, Some(name)).expect("cannot run cargo to build the example guests");
    assert!(
        status.success(),
        "building examples/rust/{name} for wasm32-wasip2 failed; if the target is missing, \
         run `rustup target add wasm32-wasip2` (README.md's commands do)"
    );
    guest_dir(&root).join(format!("{name}.wasm"))
}

/// Where the guests land: `target/guests/wasm32-wasip2/release/<name>.wasm`.
pub fn guest_dir(root: &Path) -> PathBuf {
    root.join("target/guests/wasm32-wasip2/release")
}

/// `cargo build --release --target wasm32-wasip2` of the examples
/// workspace under the repository `root`: one package, or all of them.
pub fn build_guests(root: &Path, package: Option<&str>) -> std::io::Result<ExitStatus> {
    build_workspace(root, "examples/Cargo.toml", package)
}

/// The same for the plugins workspace (`plugins/`), into the same
/// directory: the two share their dependencies' builds.
pub fn build_plugins(root: &Path, package: Option<&str>) -> std::io::Result<ExitStatus> {
    build_workspace(root, "plugins/Cargo.toml", package)
}

fn build_workspace(
    root: &Path,
    manifest: &str,
    package: Option<&str>,
) -> std::io::Result<ExitStatus> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--release", "--target", "wasm32-wasip2"]);
    if let Some(package) = package {
        cmd.args(["-p", package]);
    }
    cmd.arg("--manifest-path")
        .arg(root.join(manifest))
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
    // Nor is a profile override (`CARGO_PROFILE_RELEASE_LTO=fat` for an
    // optimised wload): the guests keep examples/Cargo.toml's profile, so
    // the tests and benchmarks run the same guest whatever built the host.
    for (var, _) in std::env::vars_os() {
        if var.to_string_lossy().starts_with("CARGO_PROFILE_") {
            cmd.env_remove(var);
        }
    }
    cmd.status()
}
