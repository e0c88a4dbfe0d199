//! The crate graph is the architecture (docs/architecture.md): each crate
//! depends only on the layers below it. Cargo refuses a cycle by itself;
//! these tests also refuse a new edge that points up or sideways (say
//! `wload-http` on `wload-metrics`), and the one module cycle inside a
//! crate that the layout was made to end (HTTP/1.1 and the connection
//! each building on the metered socket, not on each other).

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use crate::support::repo_root;

/// Each crate of the workspace and the wload crates it may depend on.
const ALLOWED: [(&str, &[&str]); 11] = [
    (
        "wload",
        &[
            "wload-server",
            "wload-report",
            "wload-engine",
            "wload-output",
            "wload-http",
            "wload-units",
            "wload-target",
            "wload-k8s",
            "wload-oci",
        ],
    ),
    (
        "wload-server",
        &[
            "wload-engine",
            "wload-output",
            "wload-metrics",
            "wload-http",
            "wload-units",
        ],
    ),
    (
        "wload-engine",
        &["wload-output", "wload-metrics", "wload-http", "wload-units"],
    ),
    (
        "wload-report",
        &["wload-output", "wload-metrics", "wload-units"],
    ),
    (
        "wload-output",
        &["wload-metrics", "wload-http", "wload-units"],
    ),
    ("wload-metrics", &["wload-units"]),
    ("wload-http", &[]),
    ("wload-units", &[]),
    ("wload-target", &[]),
    ("wload-k8s", &[]),
    ("wload-oci", &[]),
];

/// Each workspace crate's normal (not dev or build) dependencies.
fn dependencies() -> BTreeMap<String, Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(repo_root())
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let mut graph = BTreeMap::new();
    for package in meta["packages"].as_array().expect("packages") {
        let deps = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].is_null())
            .map(|d| d["name"].as_str().expect("a name").to_owned())
            .collect();
        graph.insert(package["name"].as_str().expect("a name").to_owned(), deps);
    }
    graph
}

#[test]
fn crates_depend_only_on_the_layers_below() {
    let graph = dependencies();
    for (name, allowed) in ALLOWED {
        let deps = graph
            .get(name)
            .unwrap_or_else(|| panic!("{name} is not in the workspace"));
        for dep in deps.iter().filter(|d| d.starts_with("wload-")) {
            assert!(
                allowed.contains(&dep.as_str()),
                "{name} depends on {dep}, a layer it must not reach (docs/architecture.md)"
            );
        }
    }
    for name in graph
        .keys()
        .filter(|n| n.starts_with("wload") && *n != "wload-sdk")
    {
        assert!(
            ALLOWED.iter().any(|(n, _)| n == name),
            "{name} is a new crate: place it in the graph (here and in docs/architecture.md)"
        );
    }
    // The client knows nothing of wasm or metrics.
    let http = &graph["wload-http"];
    assert!(
        !http
            .iter()
            .any(|d| d.starts_with("wasmtime") || d == "hdrhistogram"),
        "wload-http must not depend on wasmtime or the metrics' histograms: {http:?}"
    );
}

/// The code lines of a source file: comments (docs that name a module
/// are not imports) left out, tests kept (they may not reach up either).
fn code(path: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repo_root().join(path)).expect("read the source");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_metered_socket_knows_neither_http1_nor_the_connection() {
    for line in code("crates/wload-http/src/socket.rs") {
        assert!(
            !line.contains("conn::") && !line.contains("h1::") && !line.contains("H1Conn"),
            "socket.rs reaches the layer above it: {line}"
        );
    }
    for line in code("crates/wload-http/src/h1.rs") {
        assert!(
            !line.contains("conn::"),
            "h1.rs reaches the connection built on it: {line}"
        );
    }
}
